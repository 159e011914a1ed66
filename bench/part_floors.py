"""Each part of the build after extraction beside its floor, on the same data, in one process.

A part's floor is the simplest program that does the same unavoidable work on the
same inputs: analysing the documents (index: every text tokenized, each distinct token
stemmed once), the kernel over analysed titles
(search), the Jenks breaks of each query's normalised scores (label), a gather of the label rows
into their targets (carry), compressing the bytes the release holds with the same
library, level and slices (write). "Ours" is the stage's own unit function, called
as a worker calls it. Both run in this process, alternately, ``rounds`` times; the
figures are CPU seconds (``time.process_time``): medians and ranges, and ours/floor.

``bench/scale_bench.py`` runs this on the work folder of its largest build; run it
alone on a kept one with ``python bench/part_floors.py OUT/.work``. It also takes from
here the warm cost of writing each direction (``direction_costs``), of labelling
(``label_costs``) and of pairing the languages' documents (``links_costs``).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Part:
    """One part of the build: its own unit, its floor, and how much work both do (``amount`` of ``unit``)."""

    name: str
    ours: Callable[[], object]
    floor: Callable[[], object]
    amount: float
    unit: str


def _cpu(run: Callable[[], object]) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def measure(parts: list[Part], rounds: int) -> list[dict]:
    """CPU seconds of ours and of the floor for each part, interleaved round by round (one warm-up call each first)."""
    rows = []
    for part in parts:
        part.ours(), part.floor()  # numba kernels, imports and the page cache: not part of either rate
        ours, floor = [], []
        for _ in range(rounds):
            ours.append(_cpu(part.ours))
            floor.append(_cpu(part.floor))
        ratios = [o / f for o, f in zip(ours, floor)]
        rows.append(
            {
                "part": part.name,
                "unit": part.unit,
                "amount": part.amount,
                "ours_s": ours,
                "floor_s": floor,
                "ours_per_unit_ns": statistics.median(ours) / part.amount * 1e9,
                "floor_per_unit_ns": statistics.median(floor) / part.amount * 1e9,
                "x_floor": statistics.median(ratios),
                "x_floor_range": [min(ratios), max(ratios)],
            }
        )
    return rows


# --- the parts, on a built work folder -----------------------------------------------------------------


def plans(work_root: str) -> dict:
    """Each language's plan (documents, shards, blocks) as the build recorded it."""
    from clirmatrix.pipeline.io.reports import require_complete
    from clirmatrix.pipeline.method.corpus import WorkDirs
    from clirmatrix.schemas.contracts import language_plans

    return {plan.lang: plan for plan in language_plans(require_complete(WorkDirs(work_root).stage("labels"), "labels"))}


def index_part(work_root: str, lang: str, docs: int = 20_000) -> Part:
    """Indexing ``docs`` documents (titles and texts) against analysing them alone."""
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.method.corpus import WorkDirs, iter_docs
    from clirmatrix.pipeline.method.retrieval import RetrievalSettings, make_engine

    work = WorkDirs(work_root)
    batches = [
        (b.column("doc_id").to_pylist(), b.column("title").to_pylist(), b.column("text").to_pylist())
        for b in iter_docs(work, lang, ["doc_id", "title", "text"], 0, docs)
    ]
    analyzer = analyzer_for(lang)
    settings = RetrievalSettings()

    def ours() -> None:
        make_engine(settings, lang).index(iter(batches))

    def floor() -> None:  # the analysis alone: every text tokenized, every distinct token filtered and stemmed once
        stems: dict[str, str | None] = {}
        for _, titles, texts in batches:
            for values in (titles, texts):
                for start in range(0, len(values), 2_000):
                    tokens, _ = analyzer.raw_tokens_many([value or "" for value in values[start : start + 2_000]])
                    missing = list(set(tokens).difference(stems))
                    stems.update(zip(missing, analyzer.normalize_tokens(missing)))

    return Part("retrieve: index", ours, floor, sum(len(b[0]) for b in batches), "document")


def search_part(work_root: str, lang: str, block: int = 0) -> Part:
    """Searching one block's titles in shard 0 as the stage does (catalog -> hits Parquet) against the kernel alone
    over the same titles analysed beforehand (``bench/search_bench.py``'s floor)."""
    from search_bench import kernel_pass, prepare_floor

    from clirmatrix.pipeline.method import retrieval
    from clirmatrix.pipeline.method.corpus import WorkDirs, read_catalog

    work, plan, settings = WorkDirs(work_root), plans(work_root)[lang], retrieval.RetrievalSettings()
    if plan.shards == 1:
        engine = retrieval._index(work, settings, plan, 0)
    else:
        engine = retrieval.load_index(work.shard_index_dir(lang, 0), settings, lang)
        engine.use_statistics(retrieval.language_statistics(work, plan), *retrieval.language_document_frequencies(work, plan, engine.terms()))
    start, end = plan.block(block)
    titles = read_catalog(work, lang, ["title"], start, end).column("title").to_pylist()
    prepared = prepare_floor(engine, titles, settings.k)
    return Part(
        "retrieve: search", lambda: retrieval.search_blocks(work, settings, plan, 0, engine, [block]), lambda: kernel_pass(engine, prepared), len(titles), "query and shard"
    )


def _block_scores(work_root: str, lang: str, block: int) -> tuple[Callable[[], object], np.ndarray, np.ndarray, np.ndarray, int]:
    """What both label floors start from: the stage's unit, the block's hit scores (float64), where each query's rows start and end, and its queries."""
    from clirmatrix.pipeline.io.parquet_io import read_table
    from clirmatrix.pipeline.method.corpus import WorkDirs
    from clirmatrix.pipeline.method.labels import label_block
    from clirmatrix.pipeline.method.propagation import group_bounds
    from clirmatrix.schemas import RETRIEVAL

    plan = plans(work_root)[lang]
    hits = read_table([WorkDirs(work_root).retrieval_file(lang, block)], RETRIEVAL)
    _, starts, ends = group_bounds(hits.column("query").to_numpy())
    start, end = plan.block(block)
    score = hits.column("score").to_numpy().astype(np.float64)
    return functools.partial(label_block, work_root, plan, block), score, starts.astype(np.int64), ends.astype(np.int64), end - start


def label_part(work_root: str, lang: str, block: int = 0) -> Part:
    """Labelling one block's queries against the Jenks breaks alone (the compiled Fisher-Jenks of ``labels``) on its normalised scores.

    Until 2026-11-26 the floor was jenkspy called once per query (``jenkspy_floor``); the
    stage now computes jenkspy's breaks itself, several times faster than that floor.
    """
    from clirmatrix.pipeline.method.labels import N_CLASSES, _normalise, jenks_inner_breaks

    ours, score, starts, ends, queries = _block_scores(work_root, lang, block)
    normalised, distinct = _normalise(score, starts, ends)
    chosen = distinct >= N_CLASSES
    return Part("label", ours, lambda: jenks_inner_breaks(normalised, starts, ends, chosen), queries, "query")


def jenkspy_floor(work_root: str, lang: str, block: int = 0) -> Part:
    """The label part's floor until 2026-11-26: jenkspy's breaks of each query's normalised scores, a call a query (``--parts jenkspy``)."""
    import jenkspy

    ours, score, starts, ends, queries = _block_scores(work_root, lang, block)

    def floor() -> None:
        for start, end in zip(starts.tolist(), ends.tolist()):
            values = score[start:end]
            low, high = values[-1], values[0]  # rank order: the first is the highest
            if high > low:
                normalised = (values - low) / (high - low)
                if len(np.unique(normalised)) >= 5:  # jenkspy needs as many distinct values as classes
                    jenkspy.jenks_breaks(normalised, n_classes=5)

    return Part("label against jenkspy", ours, floor, queries, "query")


def carry_part(work_root: str, lang: str, block: int = 0) -> Part:
    """Carrying one block's labels into every other language as the stage does (``propagate_block``) against
    ``carry_floor`` (``bench/propagate_bench.py``'s floor) on the same block.

    Ours rewrites the block's ``propagated`` files (with the same rows); the floor writes
    to a temporary folder.
    """
    import pyarrow.parquet as pq
    from propagate_bench import carry_floor

    from clirmatrix.pipeline.method.corpus import WorkDirs
    from clirmatrix.pipeline.method.propagation import propagate_block

    plan = plans(work_root)[lang]
    langs = sorted(plans(work_root))
    rows = pq.ParquetFile(WorkDirs(work_root).labels_file(lang, block)).metadata.num_rows
    out_root = tempfile.mkdtemp(prefix="carry-floor-")
    return Part(
        "propagate: carry",
        lambda: propagate_block(work_root, plan, block, langs),
        lambda: carry_floor(work_root, plan, block, out_root, langs),
        rows * (len(langs) - 1),
        "label row and target",
    )


def docs_part(work_root: str, out_root: str, lang: str) -> Part:
    """Writing a language's DOCS files against compressing the same bytes with the same calls (``write_bench``'s floor)."""
    from write_bench import compress_texts

    from clirmatrix.pipeline.output import layout
    from clirmatrix.pipeline.output.release import write_docs

    report = write_docs(work_root, out_root, lang)
    texts = {path: _text_of(f"{out_root}/{path}") for path in (layout.docs_file(name, lang) for name in ("docs", "docs-full"))}
    floor_root = tempfile.mkdtemp(prefix="floor-docs-")
    _same_bytes(compress_texts(texts, floor_root), report.files)
    docs = texts[layout.docs_file("docs", lang)].count(b"\n")
    return Part("write: DOCS", lambda: write_docs(work_root, out_root, lang), lambda: compress_texts(texts, floor_root), docs, "document")


def write_part(work_root: str, lang: str) -> Part:
    """Writing the BI-139 files of ``lang`` -> the build's other language against compressing their bytes (``write_bench``'s floor)."""
    from write_bench import compress_texts, direction_texts

    from clirmatrix.pipeline.output.release import ReleaseSettings, write_direction

    languages = plans(work_root)
    src, tgt = languages[lang], languages[min(other for other in languages if other != lang)]
    out_root, floor_root, settings = tempfile.mkdtemp(prefix="ours-bi139-"), tempfile.mkdtemp(prefix="floor-bi139-"), ReleaseSettings()
    report = write_direction(work_root, out_root, src, tgt, settings)
    texts = direction_texts(out_root, src.lang, tgt.lang)
    _same_bytes(compress_texts(texts, floor_root), report.files)
    pairs = sum(f["pairs"] for f in report.files)
    return Part("write: BI-139", lambda: write_direction(work_root, out_root, src, tgt, settings), lambda: compress_texts(texts, floor_root), pairs, "pair")


def direction_amounts(files: Sequence[dict]) -> tuple[int, int]:
    """(lines, pairs) a BI-139 direction wrote, from its unit's file records: full counts its labelled pairs, base 100 a line."""
    return sum(f["lines"] for f in files), sum(f["docs_ge1"] if "/full/" in f["path"] else 100 * f["lines"] for f in files)


def direction_costs(work_root: str, rounds: int) -> list[tuple[float, int, int]]:
    """(CPU seconds, lines, pairs) of writing each BI-139 direction of a built work folder, warm: medians of ``rounds``, directions interleaved.

    A build's own unit reports hold the worker's first call too (imports and numba's
    cached kernels, ~1-1.5 s a process), which a two-direction build pays in a large share
    of its write time and a release of 19,182 directions on long-lived workers does not.
    """
    from clirmatrix.pipeline.output.release import ReleaseSettings, write_direction

    languages, settings = plans(work_root), ReleaseSettings()
    pairs = [(languages[a], languages[b]) for a in sorted(languages) for b in sorted(languages) if a != b]
    out_root = tempfile.mkdtemp(prefix="directions-")
    reports = [write_direction(work_root, out_root, src, tgt, settings) for src, tgt in pairs]  # warm-up
    seconds: list[list[float]] = [[] for _ in pairs]
    for _ in range(rounds):
        for i, (src, tgt) in enumerate(pairs):
            seconds[i].append(_cpu(functools.partial(write_direction, work_root, out_root, src, tgt, settings)))
    return [(statistics.median(cpu), *direction_amounts(report.files)) for cpu, report in zip(seconds, reports)]


def label_costs(work_root: str, rounds: int) -> float:
    """CPU seconds of labelling every block of every language (every query) of a built work folder, warm: the median of ``rounds``.

    For the same reason as ``direction_costs``: in a small build each worker's first label
    unit costs several times a later one (2026-11-26: 8.2 s against ~0.7 for a 20,000-query
    block), a cost a long-lived worker pays once, not once a block.
    """
    from clirmatrix.pipeline.method.labels import label_block

    blocks = [(plan, block) for plan in plans(work_root).values() for block in range(plan.blocks)]
    return _warm_cpu(lambda: [label_block(work_root, plan, block) for plan, block in blocks], rounds)


def links_costs(work_root: str, rounds: int) -> float:
    """CPU seconds of pairing every language with every other (``write_doc_links``, one unit a language), warm: the median of ``rounds``.

    The build's two units took 0.23 s, 0.09 warm (2026-11-26): nearly all of it a worker's first call.
    """
    from clirmatrix.pipeline.method.propagation import write_doc_links

    langs = sorted(plans(work_root))
    return _warm_cpu(lambda: [write_doc_links(work_root, lang, langs) for lang in langs], rounds)


def _warm_cpu(run: Callable[[], object], rounds: int) -> float:
    run()  # warm-up
    return statistics.median(_cpu(run) for _ in range(rounds))


def _same_bytes(md5s: dict[str, str], files: list[dict]) -> None:
    """The floor must write the very bytes the stage wrote, or it measures other work."""
    written = {f["path"]: f["md5"] for f in files}
    assert md5s == written, f"the floor's files differ from the stage's: {sorted(set(md5s.items()) ^ set(written.items()))[:2]}"


def _text_of(path: str) -> bytes:
    import gzip

    with gzip.open(path, "rb") as handle:
        return handle.read()


PART_NAMES = ("index", "search", "label", "carry", "write", "docs")
OTHER_PARTS = ("jenkspy",)  # on request only


def default_parts(work_root: str, lang: str = "en", names: Sequence[str] = PART_NAMES) -> list[Part]:
    """The parts named (every part this module knows by default), on ``lang`` of a built work folder (the stage functions of other benches where they exist)."""
    out_root = tempfile.mkdtemp(prefix="floors-")
    makers = {
        "index": lambda: index_part(work_root, lang),
        "search": lambda: search_part(work_root, lang),
        "label": lambda: label_part(work_root, lang),
        "carry": lambda: carry_part(work_root, lang),
        "write": lambda: write_part(work_root, lang),
        "docs": lambda: docs_part(work_root, out_root, lang),
        "jenkspy": lambda: jenkspy_floor(work_root, lang),
    }
    return [makers[name]() for name in names]


def print_table(rows: list[dict]) -> None:
    print("\n| part | ours (CPU s) | floor (CPU s) | ours / floor | ours a unit | floor a unit |\n|---|---:|---:|---:|---:|---:|")
    for row in rows:
        ours, floor = row["ours_s"], row["floor_s"]
        print(
            f"| {row['part']} | {statistics.median(ours):.3f} ({min(ours):.3f}-{max(ours):.3f}) | {statistics.median(floor):.3f} ({min(floor):.3f}-{max(floor):.3f}) "
            f"| **{row['x_floor']:.2f}** ({row['x_floor_range'][0]:.2f}-{row['x_floor_range'][1]:.2f}) "
            f"| {_per(row['ours_per_unit_ns'])} a {row['unit']} | {_per(row['floor_per_unit_ns'])} |"
        )


def _per(ns: float) -> str:
    return f"{ns / 1000:,.1f} us" if ns >= 10_000 else f"{ns:,.0f} ns"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", help="a built work folder (OUT/.work)")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parts", default=",".join(PART_NAMES), help=f"comma-separated, of {','.join(PART_NAMES + OTHER_PARTS)}")
    args = parser.parse_args(argv)
    names = [name for name in args.parts.split(",") if name]
    if unknown := set(names) - set(PART_NAMES + OTHER_PARTS):
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    print_table(measure(default_parts(args.work, args.lang, names), args.rounds))


if __name__ == "__main__":
    main()
