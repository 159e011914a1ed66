"""Parity of the two engines on the same documents and queries (``clirmatrix engines compare``).

Reports overlap@k (tie-aware: documents scored above the k-th score must agree;
documents tied at the cut may differ), top-1 agreement, and the relative score
difference on documents both engines returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clirmatrix.pipeline.engines.base import Bm25Settings, Hits


def _above_cut(hits: Hits, k: int) -> set[int]:
    """Documents strictly above the k-th score (all of them when fewer than k were returned)."""
    if len(hits.scores) < k:
        return set(hits.positions.tolist())
    return set(hits.positions[hits.scores > hits.scores[k - 1]].tolist())


def compare_hits(ours: Sequence[Hits], theirs: Sequence[Hits], k: int = 100) -> dict:
    """Agreement of two engines' results for the same queries, in the same order."""
    if len(ours) != len(theirs):
        raise ValueError(f"{len(ours)} against {len(theirs)} result lists; the engines must answer the same queries")
    overlaps, top1, tie_aware, differences = [], [], [], []
    for a, b in zip(ours, theirs):
        a_top, b_top = a.positions[:k].tolist(), b.positions[:k].tolist()
        overlaps.append(len(set(a_top) & set(b_top)) / max(1, len(a_top), len(b_top)))
        if a_top or b_top:
            top1.append(bool(a_top and b_top and (a_top[0] == b_top[0] or a.scores[0] == b.scores[0])))
        tie_aware.append(_above_cut(a, k) <= set(b_top) and _above_cut(b, k) <= set(a_top))
        b_scores = dict(zip(b_top, b.scores[:k].tolist()))
        differences += [abs(score - b_scores[p]) / max(abs(score), 1e-9) for p, score in zip(a_top, a.scores[:k].tolist()) if p in b_scores]
    diffs = np.array(differences) if differences else np.zeros(1)
    return {
        "queries": len(ours),
        f"overlap@{k}": round(float(np.mean(overlaps)), 6) if overlaps else 1.0,
        "top1_agreement": round(float(np.mean(top1)), 6) if top1 else 1.0,
        "tie_aware_agreement": round(float(np.mean(tie_aware)), 6) if tie_aware else 1.0,
        "max_relative_score_difference": float(diffs.max()),
        "mean_relative_score_difference": float(diffs.mean()),
    }


def run_compare(corpus_path: str, queries_path: str, lang: str, es_url: str, k: int = 100, settings: Bm25Settings = Bm25Settings()) -> dict:
    """Index the corpus in both engines (Elasticsearch index ``clirmatrix-compare-{lang}``), search, compare."""
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.elastic import ElasticsearchEngine, connect
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
    from clirmatrix.pipeline.engines.search import read_corpus, read_queries

    texts = [text for _, text in read_queries(queries_path)]
    remote = ElasticsearchEngine(connect(es_url), es_url, lang, settings, prefix="clirmatrix-compare")
    remote.index(read_corpus(corpus_path))
    local = EmbeddedEngine(analyzer_for(lang), settings)
    local.index(read_corpus(corpus_path))
    return compare_hits(local.search(texts, k), remote.search(texts, k), k)
