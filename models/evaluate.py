"""``clirmatrix evaluate``: re-rank the candidates of a split with a trained run and score it.

Single-direction results re-rank each query's candidates (docs/models.md §1
"Evaluation"). Mixed-language MULTI-8 results (§1 "MULTI-8") pool a query's
candidates in the seven other languages: one multilingual run scores them
directly, several bilingual runs (one per target) are merged by z-score.
Results go to ``RUN_DIR/eval/{dataset}.{split}.json`` and ``.txt``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path

import torch

from clirmatrix.models import distributed
from clirmatrix.models.arguments import TrainArguments
from clirmatrix.models.data import DocStore
from clirmatrix.models.distributed import pick_device
from clirmatrix.models.metrics import (
    MIXED,
    NDCG10,
    Evaluation,
    ResultRow,
    evaluate_rankings,
    mixed_qrels,
    mixed_ranking,
    write_results,
    zscore_merge,
)
from clirmatrix.models.recipes import recipe_class
from clirmatrix.models.recipes.base import Recipe, resolve_directions
from clirmatrix.pipeline.errors import InvalidInputError, MissingInputError
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import QueryRecord, iter_queries
from clirmatrix.pipeline.tools.loader import QuerySplit

LOG = logging.getLogger("clirmatrix")
QUERIES_PER_BATCH = 8
BACKBONE = "backbone"


def query_records(root: str | Path, dataset: str, src: str, tgt: str, split: str, limit: int = 0) -> Iterator[QueryRecord]:
    """The split's records in file order (the first ``limit`` when > 0), streamed."""
    records = iter_queries(QuerySplit(root, dataset, src, tgt, split).path)  # QuerySplit names a missing file
    return islice(records, limit) if limit > 0 else records


def score_records(recipe: Recipe, src: str, tgt: str, records: Sequence[QueryRecord], docs: DocStore, missing: Counter | None = None) -> list[list[float]]:
    """The recipe's scores of each record's candidates, in candidate order.

    A candidate absent from DOCS (the 2020 release has some) is scored as an empty
    document and counted in ``missing``, so every list keeps all its candidates.
    """
    texts = []
    for record in records:
        found = [docs.get(doc_id) for doc_id, _ in record.tgt_results]
        if missing is not None:
            missing[tgt] += sum(text is None for text in found)
        texts.append([text or "" for text in found])
    return recipe.ranker().score(src, tgt, [record.src_query for record in records], texts)


def rerank(recipe: Recipe, root: str | Path, dataset: str, src: str, tgt: str, split: str, limit: int = 0) -> Evaluation:
    """Re-rank the candidates of one direction and split; the measures of the result."""
    return evaluate_rankings(*rerank_lists(recipe, root, dataset, src, tgt, split, limit))


def rerank_lists(
    recipe: Recipe, root: str | Path, dataset: str, src: str, tgt: str, split: str, limit: int = 0, shard: tuple[int, int] = (0, 1),
) -> tuple[dict[str, dict[str, int]], dict[str, list[tuple[str, float]]]]:
    """The qrels and re-ranked candidates of one direction and split; with ``shard`` (i, n), of every n-th query from the i-th."""
    recipe.module.eval()
    docs = recipe.docs(tgt) if Path(root) == Path(recipe.args.data) else DocStore(root, tgt)
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, list[tuple[str, float]]] = {}
    records = islice(query_records(root, dataset, src, tgt, split, limit), shard[0], None, shard[1])
    missing: Counter = Counter()
    while batch := list(islice(records, QUERIES_PER_BATCH)):
        for record, scores in zip(batch, score_records(recipe, src, tgt, batch, docs, missing)):
            qrels[record.src_id] = dict(record.tgt_results)
            rankings[record.src_id] = [(doc_id, score) for (doc_id, _), score in zip(record.tgt_results, scores)]
    _warn_missing(missing, f"{dataset} {src}->{tgt} {split}")
    return qrels, rankings


def bm25_order(root: str | Path, dataset: str, src: str, tgt: str, split: str, limit: int = 0) -> Evaluation:
    """The lexical baseline a trained model must beat: each query's candidates ordered by BM25.

    The query (a ``src`` title) is scored against the candidates' texts with the build's
    own engine and BM25 settings and ``tgt``'s analysis, over the pool of the split's
    candidates (its statistics: the pool's, not the whole language's). A candidate
    sharing no term with the query scores 0; ties are broken by doc id, never by the
    file's order (which is the labels').
    """
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.base import Bm25Settings
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine

    records = list(query_records(root, dataset, src, tgt, split, limit))
    pool = sorted({doc_id for record in records for doc_id, _ in record.tgt_results})
    texts = DocStore(root, tgt)
    engine = EmbeddedEngine(analyzer_for(tgt), Bm25Settings())
    engine.index([(pool, [""] * len(pool), [texts.get(doc_id) or "" for doc_id in pool])])
    hits = engine.search_flat([record.src_query for record in records], k=len(pool))
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, list[tuple[str, float]]] = {}
    start = 0
    for record, length in zip(records, hits.lengths.tolist()):
        scores = {pool[position]: float(score) for position, score in zip(hits.positions[start : start + length].tolist(), hits.scores[start : start + length].tolist())}
        start += length
        qrels[record.src_id] = dict(record.tgt_results)
        rankings[record.src_id] = sorted(((doc_id, scores.get(doc_id, 0.0)) for doc_id, _ in record.tgt_results), key=lambda hit: (-hit[1], hit[0]))
    return evaluate_rankings(qrels, rankings)


def _warn_missing(missing: Counter, what: str) -> None:
    if sum(missing.values()):
        LOG.warning("%s: %s candidates have no text in DOCS and were scored as empty documents", what, ", ".join(f"{n:,} of {lang}" for lang, n in missing.items() if n))


def dev_score(recipe: Recipe, process: distributed.Process = distributed.Process()) -> float:
    """Mean dev nDCG@10 over the run's directions: what selects the best checkpoint.

    Under torchrun every process scores its share of the dev queries (every n-th) and
    the shares are gathered, so all processes get the same score at once and none waits
    long in a collective.
    """
    args = recipe.args
    scores = []
    for s, t in recipe.directions:
        share = rerank_lists(recipe, args.data, args.dataset, s, t, args.dev_split, args.dev_queries, shard=(process.rank, process.world))
        shares = distributed.gather_objects(share, process)  # in rank order: every process merges alike
        qrels = {query: labels for their_qrels, _ in shares for query, labels in their_qrels.items()}
        rankings = {query: ranking for _, their_rankings in shares for query, ranking in their_rankings.items()}
        scores.append(evaluate_rankings(qrels, rankings).measures[NDCG10])
    return sum(scores) / len(scores)


def load_run(run_dir: str | Path, device: str = "auto", data: str | None = None) -> Recipe:
    """The best model of a finished (or interrupted) run, rebuilt from the run directory alone."""
    run_dir = Path(run_dir)
    args_path = run_dir / "args.json"
    best = run_dir / "best" / "model.pt"
    if not args_path.is_file():
        raise MissingInputError(f"{run_dir} is not a training run (no args.json); train one with clirmatrix train")
    if not best.is_file():
        raise MissingInputError(f"{best} is missing: the run has not finished an epoch yet")
    args = TrainArguments.load(args_path).resolved()
    if data is not None:
        args.data = data
    recipe = recipe_class(args.model)(args, run_dir / BACKBONE, pick_device(device), pretrained=False)
    saved = torch.load(best, map_location=recipe.device, weights_only=False)
    recipe.module.load_state_dict(saved["model"])
    recipe.load_extra_state(saved["extra"])
    recipe.load_finished(run_dir)
    recipe.module.eval()
    return recipe


def training_kind(directions: Sequence[tuple[str, str]]) -> str:
    """``mm`` for a run over several directions (the multilingual model), else ``bm``."""
    return "mm" if len(directions) > 1 else "bm"


def direction_row(recipe: Recipe, run_name: str, data: str | Path, dataset: str, src: str, tgt: str, split: str, limit: int = 0) -> ResultRow:
    """The result of a loaded run on one direction, labelled with the run's name, training and model kind."""
    evaluation = rerank(recipe, data, dataset, src, tgt, split, limit)
    return ResultRow.from_evaluation(evaluation, model=run_name, dataset=dataset, src=src, tgt=tgt, split=split, training=training_kind(recipe.directions), model_kind=recipe.args.model)


def evaluate_run(
    run_dir: str | Path,
    data: str | Path,
    split: str,
    dataset: str | None = None,
    src: str | None = None,
    tgt: str | None = None,
    limit: int = 0,
    device: str = "auto",
) -> list[ResultRow]:
    """One result per direction: the run's own directions unless ``src``/``tgt`` name others (zero-shot)."""
    recipe = load_run(run_dir, device, str(data))
    dataset = dataset or recipe.args.dataset
    directions = resolve_directions(src or recipe.args.src, tgt or recipe.args.tgt)
    return [direction_row(recipe, Path(run_dir).name, data, dataset, s, t, split, limit) for s, t in directions]


def evaluate_mixed(runs: Sequence[str | Path], data: str | Path, split: str, src: str, limit: int = 0, device: str = "auto", targets: Sequence[str] | None = None) -> ResultRow:
    """MULTI-8 mixed-language retrieval for queries in ``src`` (docs/models.md §1).

    The targets are the other MULTI-8 languages whose files are present (all 7 in a
    full build or download), or those of ``targets`` (a subset of languages, as
    ``clirmatrix reproduce multi8 --langs`` trains). One run: a multilingual model
    scoring all candidates directly. Several runs: bilingual models, each covering
    ``src``->T for some T; their scores are z-normalised per (query, T) and merged.
    The row records the targets: the paper's figure is for all 7 only.
    """
    recipes = [load_run(run, device, str(data)) for run in runs]
    chosen = MULTI8_LANGUAGES if targets is None else targets
    targets = [lang for lang in chosen if lang != src and (Path(data) / layout.query_file("multi8", src, lang, split)).is_file()]
    if not targets:
        raise MissingInputError(f"{data} has no MULTI-8 {split} files for queries in {src}; fetch them with: clirmatrix download multi8 --src {src} --split {split}")
    by_target = {}
    for tgt in targets:
        owners = [recipe for recipe in recipes if (src, tgt) in recipe.directions]
        if not owners:
            raise InvalidInputError(f"no run covers {src}->{tgt}; give a multilingual run or one bilingual run per target")
        by_target[tgt] = owners[0]
    merge = len(recipes) > 1
    records = {tgt: query_records(data, "multi8", src, tgt, split, limit) for tgt in targets}
    qrels: dict[str, dict[str, int]] = {}
    rankings: dict[str, list[tuple[str, float]]] = {}
    missing: Counter = Counter()
    while True:
        batches = {tgt: list(islice(records[tgt], QUERIES_PER_BATCH)) for tgt in targets}
        if not any(batches.values()):
            break
        scored = {tgt: score_records(by_target[tgt], src, tgt, batches[tgt], by_target[tgt].docs(tgt), missing) for tgt in targets}
        for position, record in enumerate(batches[targets[0]]):
            lists, labels = {}, {}
            for tgt in targets:
                aligned = batches[tgt][position]
                if aligned.src_id != record.src_id:
                    raise InvalidInputError(f"MULTI-8 {src}->{tgt} {split}: query {position} is {aligned.src_id}, not {record.src_id} as in {src}->{targets[0]}")
                lists[tgt] = [(doc_id, score) for (doc_id, _), score in zip(aligned.tgt_results, scored[tgt][position])]
                labels[tgt] = dict(aligned.tgt_results)
            if merge:
                merged = zscore_merge(lists)
            else:  # one model's raw scores, in target then candidate order; evaluate_rankings ranks them
                merged = [(t, d, s) for t, pairs in lists.items() for d, s in pairs]
            qrels[record.src_id] = mixed_qrels(labels)
            rankings[record.src_id] = mixed_ranking(merged)
    _warn_missing(missing, f"multi8 {src}->mixed {split}")
    evaluation = evaluate_rankings(qrels, rankings)
    name = Path(runs[0]).name if not merge else "+".join(Path(run).name for run in runs)
    kinds = {recipe.args.model for recipe in recipes}
    return ResultRow.from_evaluation(
        evaluation,
        model=name,
        dataset="multi8",
        src=src,
        tgt=MIXED,
        split=split,
        training="bm" if merge else "mm",
        model_kind=kinds.pop() if len(kinds) == 1 else None,
        mixed_targets=targets,
    )


def save_rows(rows: Sequence[ResultRow], out_dir: Path, name: str) -> tuple[Path, Path]:
    """``{name}.json`` and ``{name}.txt`` under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, table_path = out_dir / f"{name}.json", out_dir / f"{name}.txt"
    write_results(json_path, rows, path_table=table_path)
    return json_path, table_path
