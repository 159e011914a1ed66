"""Embedded BM25 engine: index build time, memory, and title queries per second on 1 and 2 threads.

Writes a synthetic corpus (default 200,000 documents) as JSONL: text of ~150 tokens
(uniform 100-200) drawn from a Zipfian vocabulary (exponent 1.07, 500,000 words, the
33 English stop words at the top ranks), titles of 1-4 words from the same law. A
child process writes it, so that this process's peak RSS is the engine's: the index
is built by streaming the file in batches of 10,000 with the ``english`` analyzer, as
``run_search`` does. Then the titles of ``--queries`` random documents are searched,
k = 100, on 1 and on 2 threads, best of ``--repeat`` runs (numba's kernels are loaded
before anything is measured).

For reference the same queries also go through bm25s's numba retrieval over one
score matrix (the text field's exact Lucene scores, precomputed per posting): the
approach measured before this engine. It scores one field, not two, and breaks ties
its own way, so only its speed compares.

Usage: python bench/engine_bench.py [--docs 200000] [--queries 20000] [--repeat 3] [--out bench/out]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from clirmatrix.pipeline.engines import lucene_bm25
from clirmatrix.pipeline.engines.analyzers import analyzer_for
from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
from clirmatrix.pipeline.engines.search import read_corpus
from clirmatrix.pipeline.engines.stopwords import STOPWORDS


def write_corpus(path: Path, n_docs: int, vocabulary: int = 500_000, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    stop = list(STOPWORDS["en"])
    words = stop + ["".join(rng.choice(letters, rng.integers(3, 11))) for _ in range(vocabulary - len(stop))]
    weights = 1.0 / np.arange(1, vocabulary + 1) ** 1.07
    cumulative = np.cumsum(weights / weights.sum())
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        for start in range(0, n_docs, 10_000):
            n = min(10_000, n_docs - start)
            text_lengths = rng.integers(100, 201, n)
            title_lengths = rng.integers(1, 5, n)
            draws = np.searchsorted(cumulative, rng.random(int(text_lengths.sum() + title_lengths.sum())))
            draws = np.minimum(draws, vocabulary - 1)
            at = 0
            for i in range(n):
                title = " ".join(words[j] for j in draws[at : at + title_lengths[i]])
                at += title_lengths[i]
                text = " ".join(words[j] for j in draws[at : at + text_lengths[i]])
                at += text_lengths[i]
                out.write(orjson.dumps({"id": f"d{start + i}", "title": title.capitalize(), "text": text}) + b"\n")


def bm25s_rates(engine: EmbeddedEngine, queries: list[str], k: int, repeat: int) -> dict[int, float]:
    """Queries/s of bm25s's numba retrieval on the text field's precomputed Lucene scores."""
    from bm25s.numba.retrieve_utils import _retrieve_numba_functional

    text, settings = engine.text, engine.settings
    df = np.diff(text.indptr)
    idf = np.repeat(lucene_bm25.idf(df, text.doc_count), df)
    avgdl = lucene_bm25.avg_field_length(text.sum_total_term_freq, text.doc_count)
    norm_inverse = lucene_bm25.norm_inverse_cache(settings.k1, settings.b, avgdl)[text.norms[text.docs]]
    scores = {
        "data": lucene_bm25.term_score(1.0, idf, text.tfs, norm_inverse),
        "indices": text.docs,
        "indptr": text.indptr,
        "num_docs": len(engine.doc_ids),
    }
    ids = [np.array([t for t in engine.query_terms(q) if df[t]] or [0], dtype=np.int32) for q in queries]
    rates = {}
    for threads in (1, 2):
        _retrieve_numba_functional(ids[:50], scores, k=k, show_progress=False, n_threads=threads)
        rates[threads] = 0.0
        for _ in range(repeat):
            t0 = time.perf_counter()
            _retrieve_numba_functional(ids, scores, k=k, show_progress=False, n_threads=threads)
            rates[threads] = max(rates[threads], len(queries) / (time.perf_counter() - t0))
    return rates


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure; the best counts")
    parser.add_argument("--out", default="bench/out")
    args = parser.parse_args()

    corpus = Path(args.out) / f"engine_corpus_{args.docs}.jsonl"
    if not corpus.exists():
        t0 = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=write_corpus, args=(corpus, args.docs))
        child.start()
        child.join()
        if child.exitcode:
            sys.exit(f"corpus generation failed with exit code {child.exitcode}")
        print(f"generated {args.docs:,} documents ({corpus.stat().st_size / 1e6:.0f} MB JSONL) in {time.perf_counter() - t0:.0f} s")

    warm = EmbeddedEngine(analyzer_for("en"))  # load numba's compiled kernels first
    warm.index([(["a", "b"], ["One title", "Two"], ["some text", "more text"])])
    warm.search(["title text"], 10)
    del warm
    rss_start = peak_rss_mb()
    engine = EmbeddedEngine(analyzer_for("en"), threads=1)
    t0 = time.perf_counter()
    engine.index(read_corpus(str(corpus)))
    build = time.perf_counter() - t0
    rss_built = peak_rss_mb()
    memory = engine.memory()

    rng = np.random.default_rng(7)
    titles: list[str] = []
    picks = set(rng.choice(len(engine.doc_ids), min(args.queries, len(engine.doc_ids)), replace=False).tolist())
    for _, batch_titles, _ in read_corpus(str(corpus)):
        titles.extend(batch_titles)
    queries = [titles[i] for i in sorted(picks)]
    del titles
    engine.search(queries[:100], args.k)  # warm up the caches

    rates = {}
    for threads in (1, 2):
        engine.threads = threads
        rates[threads] = 0.0
        for _ in range(args.repeat):  # best of: other processes on the machine only ever slow a run down
            t0 = time.perf_counter()
            hits = engine.search(queries, args.k)
            rates[threads] = max(rates[threads], len(queries) / (time.perf_counter() - t0))
    analysis = time.perf_counter()
    for query in queries:
        engine.query_terms(query)
    analysis = len(queries) / (time.perf_counter() - analysis)

    peak_rss = peak_rss_mb()  # before bm25s loads
    reference = bm25s_rates(engine, queries, args.k, args.repeat)

    results = {
        "docs": len(engine.doc_ids),
        "terms": len(engine.vocab),
        "postings": memory["postings"],
        "bytes_per_posting": memory["posting_bytes"] / memory["postings"],
        "index_bytes_per_posting": memory["index_bytes"] / memory["postings"],
        "index_mb": memory["index_bytes"] / 1e6,
        "build_s": build,
        "docs_per_s": len(engine.doc_ids) / build,
        "peak_rss_mb": peak_rss,
        "rss_before_build_mb": rss_start,
        "rss_after_build_mb": rss_built,
        "queries": len(queries),
        "mean_hits": float(np.mean([len(h.positions) for h in hits])),
        "queries_per_s_1_thread": rates[1],
        "queries_per_s_2_threads": rates[2],
        "query_analysis_per_s": analysis,
        "bm25s_text_only_queries_per_s_1_thread": reference[1],
        "bm25s_text_only_queries_per_s_2_threads": reference[2],
        "load_average_1min": os.getloadavg()[0],
    }
    print(f"index: {results['docs']:,} docs, {results['terms']:,} terms, {results['postings']:,} postings (title + text)")
    print(f"  build {build:.1f} s ({results['docs_per_s']:,.0f} docs/s, english analyzer, one thread)")
    print(f"  {results['bytes_per_posting']:.2f} bytes per posting (doc int32 + tf uint16); "
          f"{results['index_bytes_per_posting']:.2f} with term offsets and norms; {results['index_mb']:,.0f} MB in all")
    print(f"  peak RSS {results['peak_rss_mb']:,.0f} MB (before the build {rss_start:,.0f} MB)")
    print(f"search: {len(queries):,} title queries, k={args.k}, {results['mean_hits']:.1f} hits per query on average")
    print(f"  1 thread:  {rates[1]:8,.0f} queries/s")
    print(f"  2 threads: {rates[2]:8,.0f} queries/s")
    print(f"  query analysis alone: {analysis:,.0f} queries/s (python {sys.version.split()[0]})")
    print(f"bm25s numba, text field only: {reference[1]:,.0f} queries/s on 1 thread, {reference[2]:,.0f} on 2")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other work slows every figure)")
    (Path(args.out) / "engine_results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
