"""The retrieve stage's search step against its floor: the kernel alone over pre-analysed queries, on the same index and titles.

For each ``--docs`` size N, one English language of N articles written as the scale
benchmark's generator writes them (``pipeline/tools/sample.py``: ~2,000 articles a topic, so
a title's terms stay about as rare whatever N; text truncated by the docs stage's
rule) is put straight into a work folder (``docs`` and ``catalog`` Parquet, no dump
and no extraction) and indexed once; the index is stored as the count step stores a
shard's. Then, on that index and the first ``--queries`` titles of the catalog, with
k = 100 and the default BM25 settings, interleaved round by round:

- **floor**: the search kernels alone (``search_kernels``: merged or pruned) over the queries already
  analysed into term ids and counts (flat arrays), ``_QUERIES_PER_CALL`` a call;
- **ours**: the stage's search path exactly as ``retrieval.search`` runs it after its
  index is loaded (``retrieval.search_blocks``): titles read from the catalog in
  batches, analysed, searched, the hits written as the block's Parquet file;
- **old**: the same path in the code of 91f059b (``--old PATH``, a folder whose
  ``clirmatrix`` is that checkout; default /work/basepkg), in a child process that
  loads the same stored index: its Parquet file must be byte-identical to ours.

Figures are CPU seconds of the process that searches (``time.process_time``: Arrow
and Parquet may use helper threads), medians over ``--rounds`` with their ranges, as
microseconds a query. ``--split R`` then times the parts of ours and of the old code
apart, R interleaved rounds (reading the titles, analysing them, the kernel, its
output made flat or into one ``Hits`` a query, the Arrow tables, the Parquet file),
and checks that each part-by-part run wrote the same bytes.

``kernel_floor`` and ``floor_for_shard`` below are for other benchmarks
(``bench/scale_bench.py``): the floor on an engine, or on a built shard of a work
folder as the search step loads it.

Usage: python bench/search_bench.py [--docs 200000 400000] [--queries 50000] [--rounds 5] [--split] [--out bench/out/search]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.config import DEFAULT_SEED
from clirmatrix.pipeline.io.parquet_io import ParquetSink, row_counts, write_table
from clirmatrix.pipeline.method import retrieval
from clirmatrix.pipeline.method.corpus import WorkDirs, iter_catalog, iter_docs
from clirmatrix.schemas import CATALOG, DOCS, RETRIEVAL
from clirmatrix.schemas.contracts import LanguagePlan

LANG = "en"
CHUNK = 20_000  # documents a generated docs file holds


# ---- the language ------------------------------------------------------------------------


def _write_chunk(job: tuple[str, int, int, int]) -> None:
    from clirmatrix.pipeline.method.truncate import rule_for
    from clirmatrix.pipeline.method.truncate_arrow import truncate_array
    from clirmatrix.pipeline.tools.sample import _cirrus_document, _scale_entity

    path, first, last, n_docs = job
    titles, texts, ids = [], [], []
    for index in range(first, last):
        entity = _scale_entity(index, n_docs, "de", 0)
        document = _cirrus_document(random.Random(f"{DEFAULT_SEED}:{LANG}:{index}"), LANG, entity, with_page_id=True)
        titles.append(document["title"])
        texts.append(document["text"])
        ids.append(entity.doc_ids[LANG])
    full = pa.array(texts, pa.string())
    n = len(ids)
    columns = {
        "lang": pa.array([LANG] * n), "doc_id": pa.array(ids), "title": pa.array(titles), "text": truncate_array(full, rule_for(False)),
        "text_full": full, "entity": pa.array([None] * n, pa.string()), "dump_file": pa.array(["generated"] * n),
        "dump_line": pa.array(np.arange(first, last, dtype=np.int64)),
    }  # fmt: skip
    partial = path + ".partial"
    with ParquetSink(partial, DOCS) as sink:
        sink.add_table(pa.table(columns, schema=DOCS))
    os.replace(partial, path)


def make_language(root: Path, n_docs: int) -> WorkDirs:
    """A work folder holding one language of ``n_docs`` generated articles (docs and catalog), written once."""
    work = WorkDirs(str(root / "work"))
    catalog = Path(work.catalog_file(LANG))
    if catalog.exists():
        return work
    docs_dir = Path(work.stage("docs")) / LANG
    docs_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    jobs = [(str(docs_dir / f"{first // CHUNK:05d}.parquet"), first, min(n_docs, first + CHUNK), n_docs) for first in range(0, n_docs, CHUNK)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_write_chunk, [job for job in jobs if not Path(job[0]).exists()])
    titles, ids = [], []
    for batch in iter_docs(work, LANG, ["doc_id", "title"]):
        ids.extend(batch.column("doc_id").to_pylist())
        titles.extend(batch.column("title").to_pylist())
    table = pa.table({"page_id": pa.array(np.array(ids, dtype=np.int64)), "entity": pa.array([None] * len(ids), pa.int64()), "title": pa.array(titles)}, schema=CATALOG)
    catalog.parent.mkdir(parents=True, exist_ok=True)
    write_table(str(catalog), table, CATALOG)
    print(f"generated {n_docs:,} documents in {time.perf_counter() - started:.0f} s", flush=True)
    return work


def index_dir(root: Path) -> str:
    return str(root / "index")


def build_index(root: Path, work: WorkDirs, settings: retrieval.RetrievalSettings, n_docs: int) -> None:
    """Index the language once (as one shard) and store it as the count step stores a shard's index."""
    folder = Path(index_dir(root))
    if (folder / "terms.parquet").exists():
        return
    started = time.process_time()
    engine = retrieval._index(work, settings, LanguagePlan(LANG, n_docs, 1, settings.block_size), 0)
    retrieval.save_index(engine, str(folder))
    print(f"indexed {n_docs:,} documents in {time.process_time() - started:.0f} cpu-s", flush=True)


def settings_for(queries: int) -> retrieval.RetrievalSettings:
    """The stage's default settings, with one block of ``queries`` titles (the first of the catalog)."""
    return retrieval.RetrievalSettings(block_size=queries)


def plan_for(n_docs: int, settings: retrieval.RetrievalSettings) -> LanguagePlan:
    return LanguagePlan(LANG, n_docs, 1, settings.block_size)


def catalog_titles(work: WorkDirs, plan: LanguagePlan) -> list[str]:
    return [title for _, titles in retrieval._query_batches(work, plan, 0) for title in titles]


# ---- the floor -------------------------------------------------------------------------------


def kernel_floor(engine, titles: Sequence[str], k: int = 100, rounds: int = 3) -> dict:
    """The search kernel alone over ``titles`` analysed beforehand (term ids and counts as flat arrays), on ``engine``.

    ``engine`` is an ``EmbeddedEngine`` ready to search (a shard's, with the
    language's statistics when the stage would use them). Queries go to the kernel
    ``_QUERIES_PER_CALL`` a call into buffers allocated beforehand; nothing else is
    timed. Returns the queries, the CPU seconds of each round, their median and the
    median microseconds a query.
    """
    seconds = [kernel_pass(engine, prepared) for prepared in [prepare_floor(engine, titles, k)] for _ in range(rounds)]
    median = statistics.median(seconds)
    return {"queries": len(titles), "cpu_seconds": seconds, "median_cpu_seconds": median, "us_per_query": median / max(len(titles), 1) * 1e6}


def prepare_floor(engine, titles: Sequence[str], k: int) -> tuple:
    """What ``kernel_pass`` takes: the calls (analysed queries, output buffers and batch number of each), the kernel's index and ``k``.

    Titles are cut as the search step cuts them: ``QUERY_BATCH`` a batch, each batch
    ``_QUERIES_PER_CALL`` a kernel call. The kernels are loaded before it returns.
    """
    from clirmatrix.pipeline.engines.embedded import _QUERIES_PER_CALL

    k = min(k, engine.size)
    calls = []
    for batch, low in enumerate(range(0, len(titles), retrieval.QUERY_BATCH)):
        titles_of_batch = titles[low : low + retrieval.QUERY_BATCH]
        for start in range(0, len(titles_of_batch), _QUERIES_PER_CALL):
            q_ptr, q_terms, q_counts = engine.query_arrays(titles_of_batch[start : start + _QUERIES_PER_CALL])
            n = len(q_ptr) - 1
            calls.append((q_ptr, q_terms, q_counts, n, np.empty((n, k), np.int32), np.empty((n, k), np.float32), np.zeros(n, np.int32), batch))
    engine.search_flat(["warm up"], k)
    return calls, engine._kernel_index(), k


def kernel_pass(engine, prepared: tuple) -> float:
    """CPU seconds of one pass of the kernel over prepared queries (``prepare_floor``)."""
    from clirmatrix.pipeline.engines.embedded import choose_merged, search_kernels

    calls, index, k = prepared
    started = time.process_time()
    for q_ptr, q_terms, q_counts, n, out_pos, out_scores, out_len, _ in calls:
        search_kernels(q_ptr, q_terms, q_counts, choose_merged(q_ptr, q_terms, index, engine.size), 0, n, k, index, out_pos, out_scores, out_len)
    return time.process_time() - started


def floor_for_shard(work_root: str, settings: retrieval.RetrievalSettings, plan: LanguagePlan, shard: int, queries: int | None = None, rounds: int = 3) -> dict:
    """``kernel_floor`` on one shard of a built work folder, its engine made as the search step makes it, over the language's first ``queries`` titles (all: None).

    A multi-shard language's shard is loaded from the index the count step stored and
    scored with the language's statistics; a one-shard language is indexed again
    (nothing stores its index). Its ``us_per_query`` compares with the search step's
    report (``search_seconds`` over ``queries``, a query and shard).
    """
    work = WorkDirs(work_root)
    if plan.shards == 1:
        engine = retrieval._index(work, settings, plan, shard)
    else:
        engine = retrieval.load_index(work.shard_index_dir(plan.lang, shard), settings, plan.lang)
        engine.use_statistics(retrieval.language_statistics(work, plan), *retrieval.language_document_frequencies(work, plan, engine.terms()))
    end = plan.docs if queries is None else min(plan.docs, queries)
    titles = [title for batch in iter_catalog(work, plan.lang, ["title"], 0, end) for title in batch.column("title").to_pylist()]
    return kernel_floor(engine, titles, settings.k, rounds)


# ---- ours, and the old code in a child process ------------------------------------------------------


def ours_round(work: WorkDirs, settings: retrieval.RetrievalSettings, plan: LanguagePlan, engine) -> float:
    """CPU seconds of the search step's own path over the block (the hits written as the stage writes them)."""
    started = time.process_time()
    retrieval.search_blocks(work, settings, plan, 0, engine, [0])
    return time.process_time() - started


def old_round(work: WorkDirs, settings, plan: LanguagePlan, engine, path: str) -> float:
    """CPU seconds of ``retrieval.search``'s loop as 91f059b runs it (``engine.search`` -> ``Hits`` -> ``hits_table``), into ``path``."""
    started = time.process_time()
    with ParquetSink(path, RETRIEVAL) as sink:
        for first, titles in retrieval._query_batches(work, plan, 0):
            found = engine.search(titles, settings.k)
            sink.add_table(retrieval.hits_table(first, found, 0))
    return time.process_time() - started


def child(root: Path, n_docs: int, queries: int) -> None:
    """The old code's side: load the stored index, then one round a line read from stdin, its CPU seconds a line written back."""
    work, settings = WorkDirs(str(root / "work")), settings_for(queries)
    engine = retrieval.load_index(index_dir(root), settings, LANG)
    engine.search(["warm up"], settings.k)
    print(json.dumps({"ready": str(Path(retrieval.__file__).resolve().parents[1])}), flush=True)
    for line in sys.stdin:
        command, path = line.split()
        plan = plan_for(n_docs, settings)
        if command == "split":
            print(json.dumps({"split": old_split_round(work, settings, plan, engine, path)}), flush=True)
        else:
            print(json.dumps({"cpu": old_round(work, settings, plan, engine, path)}), flush=True)


def old_split_round(work: WorkDirs, settings, plan: LanguagePlan, engine, path: str) -> dict[str, float]:
    """The parts of ``old_round`` timed apart, each made of 91f059b's own lines (``EmbeddedEngine._search_batch``, ``hits_table``)."""
    from clirmatrix.pipeline.engines.base import Hits
    from clirmatrix.pipeline.engines.embedded import _QUERIES_PER_CALL, choose_merged, search_kernels

    clock = time.process_time
    k = min(settings.k, engine.size)
    index = engine._kernel_index()
    t0 = clock()
    batches = list(retrieval._query_batches(work, plan, 0))
    t1 = clock()
    calls = []
    for _, titles in batches:
        for start in range(0, len(titles), _QUERIES_PER_CALL):
            queries = titles[start : start + _QUERIES_PER_CALL]
            n = len(queries)
            term_lists = [engine.query_terms(q) for q in queries]
            q_ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum([len(t) for t in term_lists], out=q_ptr[1:])
            q_terms = np.fromiter((t for terms in term_lists for t in terms), dtype=np.int64, count=int(q_ptr[-1]))
            q_counts = np.fromiter((c for terms in term_lists for c in terms.values()), dtype=np.float32, count=int(q_ptr[-1]))
            calls.append((q_ptr, q_terms, q_counts, n))
    t2 = clock()
    outputs = []
    for q_ptr, q_terms, q_counts, n in calls:
        out_pos, out_scores, out_len = np.empty((n, k), dtype=np.int32), np.empty((n, k), dtype=np.float32), np.zeros(n, dtype=np.int32)
        search_kernels(q_ptr, q_terms, q_counts, choose_merged(q_ptr, q_terms, index, engine.size), 0, n, k, index, out_pos, out_scores, out_len)
        outputs.append((n, out_pos, out_scores, out_len))
    t3 = clock()
    hits = [Hits(out_pos[i, : out_len[i]].copy(), out_scores[i, : out_len[i]].copy()) for n, out_pos, out_scores, out_len in outputs for i in range(n)]
    t4 = clock()
    tables, at = [], 0
    for first, titles in batches:
        tables.append(retrieval.hits_table(first, hits[at : at + len(titles)], 0))
        at += len(titles)
    t5 = clock()
    with ParquetSink(path, RETRIEVAL) as sink:
        for table in tables:
            sink.add_table(table)
    t6 = clock()
    return {"read": t1 - t0, "analyse": t2 - t1, "kernel": t3 - t2, "hits": t4 - t3, "table": t5 - t4, "write": t6 - t5}


class OldSide:
    """The old code in a child process (``PYTHONPATH`` = ``old``), on the same stored index and catalog."""

    def __init__(self, old: str, root: Path, n_docs: int, queries: int) -> None:
        env = {**os.environ, "PYTHONPATH": old}
        command = [sys.executable, __file__, "--child", str(root), "--docs", str(n_docs), "--queries", str(queries)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.code = json.loads(self._line())["ready"]
        self.path = str(root / "old_hits.parquet")

    def _line(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            sys.exit(f"the old code's process ended (exit code {self.process.wait()})")
        return line

    def run_round(self) -> float:
        self.process.stdin.write(f"round {self.path}\n")
        self.process.stdin.flush()
        return json.loads(self._line())["cpu"]

    def split_round(self) -> dict[str, float]:
        self.process.stdin.write(f"split {self.path}\n")
        self.process.stdin.flush()
        return json.loads(self._line())["split"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def md5(path: str) -> str:
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


# ---- the parts of ours ---------------------------------------------------------------------------


def split_round(work: WorkDirs, settings: retrieval.RetrievalSettings, plan: LanguagePlan, engine, floor: tuple, path: str) -> dict[str, float]:
    """CPU seconds of each part of ours, timed apart: read the titles, analyse them, the kernel, its output made flat, the Arrow tables, the Parquet file."""
    from clirmatrix.pipeline.engines.base import FlatHits
    from clirmatrix.pipeline.engines.embedded import _QUERIES_PER_CALL

    clock = time.process_time
    t0 = clock()
    batches = list(retrieval._query_batches(work, plan, 0))
    t1 = clock()
    for _, titles in batches:
        for s in range(0, len(titles), _QUERIES_PER_CALL):
            engine.query_arrays(titles[s : s + _QUERIES_PER_CALL])
    t2 = clock()
    kernel = kernel_pass(engine, floor)  # leaves each call's hits in its buffers
    calls, _, k = floor
    t3 = clock()
    flat: dict[int, list] = {}
    for *_, out_pos, out_scores, out_len, batch in calls:  # as search_arrays makes them flat
        kept = np.arange(k, dtype=np.int32) < out_len[:, None]
        flat.setdefault(batch, []).append(FlatHits(out_len, out_pos[kept], out_scores[kept]))
    t4 = clock()
    tables = []
    for (first, _), parts in zip(batches, flat.values()):  # as search_flat joins a batch's calls, and the stage makes its table
        hits = parts[0] if len(parts) == 1 else FlatHits(*(np.concatenate(column) for column in zip(*parts)))
        tables.append(retrieval.flat_hits_table(first, hits, 0))
    t5 = clock()
    with ParquetSink(path, RETRIEVAL) as sink:
        for table in tables:
            sink.add_table(table)
    t6 = clock()
    return {"read": t1 - t0, "analyse": t2 - t1, "kernel": kernel, "flatten": t4 - t3, "table": t5 - t4, "write": t6 - t5}


# ---- the run ----------------------------------------------------------------------------------------


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run_size(args: argparse.Namespace, n_docs: int) -> dict:
    root = Path(args.out) / str(n_docs)
    work = make_language(root, n_docs)
    queries = min(args.queries, n_docs)
    settings = settings_for(queries)
    build_index(root, work, settings, n_docs)
    plan = plan_for(n_docs, settings)
    engine = retrieval.load_index(index_dir(root), settings, LANG)
    titles = catalog_titles(work, plan)
    floor = prepare_floor(engine, titles, settings.k)
    old = OldSide(args.old, root, n_docs, queries) if args.old else None
    cpu: dict[str, list[float]] = {"floor": [], "ours": [], "old": []}
    try:
        for _ in range(args.rounds):  # interleaved: the machine's drift hits every contender alike
            cpu["floor"].append(kernel_pass(engine, floor))
            cpu["ours"].append(ours_round(work, settings, plan, engine))
            if old is not None:
                cpu["old"].append(old.run_round())
        splits = []
        for _ in range(args.split):
            splits.append((split_round(work, settings, plan, engine, floor, str(root / "split_hits.parquet")), old.split_round() if old is not None else None))
    finally:
        if old is not None:
            old.close()
    ours_file = work.retrieval_file(LANG, 0)
    result = {"docs": n_docs, "queries": queries, "rounds": args.rounds, "hits": row_counts([ours_file])[0]}
    for name, values in cpu.items():
        if values:
            result[name] = {"us_per_query": spread([v / queries * 1e6 for v in values])}
    result["ours_over_floor"] = spread([o / f for o, f in zip(cpu["ours"], cpu["floor"])])
    if old is not None:
        result["old_over_ours"] = spread([o / n for o, n in zip(cpu["old"], cpu["ours"])])
        result["old_code"] = old.code
        result["identical_to_old"] = md5(old.path) == md5(ours_file)
    if splits:
        result["split_us_per_query"] = {name: spread([p[name] / queries * 1e6 for p, _ in splits]) for name in splits[0][0]}
        result["identical_split"] = md5(str(root / "split_hits.parquet")) == md5(ours_file)
        if old is not None:
            result["old_split_us_per_query"] = {name: spread([p[name] / queries * 1e6 for _, p in splits]) for name in splits[0][1]}
            result["identical_old_split"] = md5(old.path) == md5(ours_file)
    result["load_average_1min"] = os.getloadavg()[0]
    return result


def report(results: list[dict]) -> None:
    def cell(entry: dict) -> str:
        return f"{entry['median']:,.1f} ({entry['min']:,.1f}-{entry['max']:,.1f})"

    def ratio_cell(entry: dict) -> str:
        return f"{entry['median']:.3f} ({entry['min']:.3f}-{entry['max']:.3f})"

    print("\n| documents | queries | floor (us/query) | ours (us/query) | ours / floor | old code (us/query) | old / ours | identical |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        old = (cell(r["old"]["us_per_query"]), ratio_cell(r["old_over_ours"]), str(r["identical_to_old"])) if "old" in r else ("-", "-", "-")
        print(f"| {r['docs']:,} | {r['queries']:,} | {cell(r['floor']['us_per_query'])} | {cell(r['ours']['us_per_query'])} | {ratio_cell(r['ours_over_floor'])} | {old[0]} | {old[1]} | {old[2]} |")
    for r in results:
        for key, name in (("split_us_per_query", "ours"), ("old_split_us_per_query", "old code")):
            if key in r:
                parts = ", ".join(f"{part} {v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f})" for part, v in r[key].items())
                print(f"{r['docs']:,}: {name} in parts, us a query: {parts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[200_000, 400_000])
    parser.add_argument("--queries", type=int, default=50_000, help="titles searched a round (the catalog's first)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--split", type=int, default=0, metavar="R", help="then time the parts of ours apart, R rounds")
    parser.add_argument("--old", default="/work/basepkg", help="a folder whose clirmatrix is the code to compare with ('' : none)")
    parser.add_argument("--out", default="bench/out/search")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child), args.docs[0], args.queries)
        return
    results = [run_size(args, n_docs) for n_docs in args.docs]
    for result in results:
        print(json.dumps(result))
    report(results)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "search_results.json").write_text(json.dumps({"cpus": os.cpu_count(), "python": sys.version.split()[0], "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
