"""The BI-139 write stage against its floor: one direction X -> Y, ours (``release.write_direction``) beside the least work that writes the same files.

The floor is the one thing the stage cannot avoid: compressing exactly the text it
writes, with the same library, level and 1 MiB slicing as ``writers.GzipLines``, into
files whose md5 is taken on the way (``compress_floor``). Everything else the stage
does (read the propagated labels, order each query's results, render the lines, sort
them by src_id, pick and fill base candidates) is measured as a multiple of it.

Data (``make_direction``): a WORK folder holding exactly what ``write_direction``
reads, at the size of a large BI-139 direction: ``--queries`` articles in X (page ids
shuffled against positions, so every block's lines interleave by src_id), of which
``--coverage`` have labels in Y, 1-100 each (~50 a query, as BI-139 full: 51),
``--block-size`` queries a block (more than one block: the runs of lines are merged;
``--spill`` adds a contender that spills every run to disk, as a direction past
``writers.SORT_MEMORY`` does), titles drawn from the sample generator's words in several scripts, with quotes,
backslashes, control characters and characters beyond the BMP, so JSON escaping is
exercised. ``--reuse`` keeps a folder made by an earlier run with the same settings.

Contenders run in persistent worker processes (imports and compiled code loaded once,
one warm-up call), interleaved round by round; each reports the CPU seconds of its
process (all threads) for one call. ``--old`` adds the code frozen at 91f059b
(``PYTHONPATH=/work/basepkg``), and every round checks that both write the same md5s.

Usage: python bench/write_bench.py [--queries 200000] [--rounds 5] [--old /work/basepkg] [--reuse] [--profile new|old]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SRC_SCRIPTS = ("en", "ru", "ar", "zh", "ja", "de")  # the sample generator's Latin, Cyrillic, Arabic, Han and kana words


# --- data -----------------------------------------------------------------------------------------


def _titles(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct titles of 1-3 sample words in a random script each; ~1% with characters JSON escapes."""
    from clirmatrix.pipeline.tools.sample import _title

    specials = ['"', "\\", "\t", "\x7f", "\u2028", "\U0001f600", "é", "/"]
    titles, seen = [], set()
    scripts = rng.integers(0, len(SRC_SCRIPTS), n)
    sizes = rng.integers(1, 4, n)
    concepts = rng.integers(0, 4000, (n, 3))
    odd = rng.random(n) < 0.01
    for i in range(n):
        title = _title(SRC_SCRIPTS[scripts[i]], concepts[i, : sizes[i]].tolist())
        if odd[i]:
            title += " " + specials[i % len(specials)] + title[:3]
        while title in seen:
            title += " II"
        seen.add(title)
        titles.append(title)
    return titles


def _page_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` distinct page ids up to ~80 M (English's range), in no particular order."""
    return rng.permutation(np.unique(rng.integers(1, 80_000_000, int(n * 1.1))))[:n].astype(np.int64)


def make_direction(root: str | Path, queries: int = 200_000, tgt_docs: int = 300_000, coverage: float = 0.6, block_size: int = 100_000, seed: int = 13, src: str = "xx", tgt: str = "yy"):
    """A WORK folder with what ``write_direction`` reads for ``src`` -> ``tgt``; returns (work root, src plan, tgt plan).

    Catalogs of both languages, ``src``'s propagated labels (grouped by query, each
    query's rows by Y position, labels 1-5 and at most one 6), its query splits and
    eval sets and the eval keys, written by the stage's own functions.
    """
    import pyarrow as pa

    from clirmatrix.pipeline.io.parquet_io import write_table
    from clirmatrix.pipeline.method.corpus import WorkDirs
    from clirmatrix.pipeline.method.splits import SplitSettings, write_eval_keys, write_eval_picks, write_query_splits
    from clirmatrix.schemas import CATALOG, PROPAGATED
    from clirmatrix.schemas.contracts import LanguagePlan

    root = Path(root)
    work = WorkDirs(str(root))
    rng = np.random.default_rng(seed)
    src_plan, tgt_plan = LanguagePlan(src, queries, 1, block_size), LanguagePlan(tgt, tgt_docs, 1, block_size)
    entities = rng.permutation(queries * 3)[:queries].astype(np.int64)
    linked = rng.random(queries) < 0.9
    write_table(work.catalog_file(src), pa.table([pa.array(_page_ids(rng, queries)), pa.array(entities, mask=~linked), pa.array(_titles(rng, queries))], schema=CATALOG), CATALOG)
    write_table(work.catalog_file(tgt), pa.table([pa.array(_page_ids(rng, tgt_docs)), pa.array(np.zeros(tgt_docs, np.int64)), pa.array([""] * tgt_docs)], schema=CATALOG), CATALOG)
    for block in range(src_plan.blocks):
        first, last = src_plan.block(block)
        chosen = np.flatnonzero(rng.random(last - first) < coverage) + first
        counts = rng.integers(1, 101, len(chosen))
        query = np.repeat(chosen, counts)
        doc = rng.integers(0, tgt_docs, len(query))
        order = np.lexsort((doc, query))
        query, doc = query[order], doc[order]
        keep = np.r_[True, (query[1:] != query[:-1]) | (doc[1:] != doc[:-1])]
        query, doc = query[keep], doc[keep]
        label = rng.choice(np.arange(1, 6, dtype=np.int8), len(query), p=[0.45, 0.25, 0.15, 0.1, 0.05])
        starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
        own = starts[rng.random(len(starts)) < 0.5] + 0  # about half the queries keep their own article, label 6
        label[own] = 6
        table = pa.table([pa.array(query.astype(np.int32)), pa.array(doc.astype(np.int32)), pa.array(label)], schema=PROPAGATED)
        write_table(work.propagated_file(src, tgt, block), table, PROPAGATED)
    settings = SplitSettings()
    write_query_splits(str(root), src, settings)
    write_eval_picks(str(root), src, src_plan.blocks, [tgt], settings)
    write_eval_keys(str(root), [work.eval_picks_file(src)])
    return str(root), src_plan, tgt_plan


# --- the floor ------------------------------------------------------------------------------------


def direction_texts(out_root: str, src: str, tgt: str) -> dict[str, bytes]:
    """The decompressed text of every BI-139 file of a direction, by path below ``out_root``."""
    import gzip

    from clirmatrix.pipeline.output import layout

    paths = [layout.query_file(dataset, src, tgt, split) for split in layout.SPLITS for dataset in ("bi139-full", "bi139-base")]
    return {path: gzip.decompress((Path(out_root) / path).read_bytes()) for path in paths}


class _Md5Sink:
    """A file that takes the md5 of what is written to it, as the release's writer does."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.md5 = hashlib.md5()

    def write(self, data: bytes) -> int:
        self.md5.update(data)
        return self.raw.write(data)

    def flush(self) -> None:
        pass


def compress_texts(texts: dict[str, bytes], out_root: str) -> dict[str, str]:
    """The floor's timed part: each text through the release's gzip encoder (zlib-ng at its level, ``CHUNK`` slices), into a file, md5 on the way."""
    from clirmatrix.pipeline.output.gzip_encoder import GzipEncoder

    md5s = {}
    for path, text in texts.items():
        target = Path(out_root) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as raw:
            sink = _Md5Sink(raw)
            encoder = GzipEncoder(sink)
            encoder.write(text)
            encoder.close()
        md5s[path] = sink.md5.hexdigest()
    return md5s


def compress_floor(work_root: str, src, tgt, settings=None, rounds: int = 1) -> dict:
    """The write floor of one direction of a built WORK folder: CPU seconds to compress the text ``write_direction`` writes.

    ``src`` and ``tgt`` are the direction's ``LanguagePlan``s. The files are written
    once by ``write_direction`` into a temporary folder (not timed) and decompressed;
    then each round compresses them again as ``GzipLines`` does (the same bytes: the
    md5s are checked). Returns ``cpu_seconds`` (the median over ``rounds``), ``lines``,
    ``pairs`` (labelled pairs of full, 100 a line of base), ``text_bytes``, ``gz_bytes``.
    """
    from clirmatrix.pipeline.output.release import ReleaseSettings, write_direction

    settings = settings or ReleaseSettings()
    with tempfile.TemporaryDirectory(prefix="clirmatrix-floor-") as scratch:
        report = write_direction(work_root, str(Path(scratch) / "ours"), src, tgt, settings)
        texts = direction_texts(str(Path(scratch) / "ours"), src.lang, tgt.lang)
        expected = {entry["path"]: entry["md5"] for entry in report.files}
        times = []
        for _ in range(rounds):
            started = time.process_time()
            md5s = compress_texts(texts, str(Path(scratch) / "floor"))
            times.append(time.process_time() - started)
            if md5s != expected:
                raise AssertionError("the floor's gzip files differ from write_direction's: the slicing or level is not the stage's")
    return {"cpu_seconds": statistics.median(times), **direction_counts(report), "text_bytes": sum(map(len, texts.values()))}


def direction_counts(report) -> dict:
    """Lines, pairs (labelled in full, every candidate in base) and gzip bytes of a ``write_direction`` report."""
    files = report.files
    return {"lines": sum(f["lines"] for f in files), "pairs": sum(f["pairs"] for f in files), "gz_bytes": sum(f["size"] for f in files)}


# --- workers --------------------------------------------------------------------------------------


def worker(kind: str, work_root: str, plans: str, out_root: str, profile: bool, spill: bool) -> None:
    """A contender's process: one call per line read from stdin, its CPU seconds and md5s written back as JSON."""
    from clirmatrix.pipeline.output.release import ReleaseSettings, write_direction
    from clirmatrix.schemas.contracts import LanguagePlan

    if spill:  # every block's runs to disk, as a direction larger than the sort memory does
        from clirmatrix.pipeline.output import writers

        writers.SORT_MEMORY = 0

    src, tgt = (LanguagePlan.from_dict(value) for value in json.loads(plans))
    settings = ReleaseSettings()
    texts = None
    if kind == "floor":
        write_direction(work_root, out_root + "-text", src, tgt, settings)
        texts = direction_texts(out_root + "-text", src.lang, tgt.lang)
        shutil.rmtree(out_root + "-text")
    warm = False
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        started, wall = time.process_time(), time.perf_counter()
        if kind == "floor":
            md5s = compress_texts(texts, out_root)
            counts = {}
        elif profile and warm:
            import cProfile
            import pstats

            profiler = cProfile.Profile(time.process_time)
            report = profiler.runcall(write_direction, work_root, out_root, src, tgt, settings)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
            md5s, counts = {f["path"]: f["md5"] for f in report.files}, direction_counts(report)
        else:
            report = write_direction(work_root, out_root, src, tgt, settings)
            md5s, counts = {f["path"]: f["md5"] for f in report.files}, direction_counts(report)
        cpu, wall = time.process_time() - started, time.perf_counter() - wall
        warm = True
        print(json.dumps({"cpu": cpu, "wall": wall, "md5s": md5s, **counts}), flush=True)


class Contender:
    def __init__(self, name: str, kind: str, pythonpath: str | None, args: list[str], scratch: Path) -> None:
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        out = scratch / name
        self.name = name
        self.process = subprocess.Popen([sys.executable, __file__, "--worker", kind, "--out-root", str(out), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def call(self) -> dict:
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} worker died")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200_000, help="articles (queries) in X")
    parser.add_argument("--tgt-docs", type=int, default=300_000)
    parser.add_argument("--coverage", type=float, default=0.6, help="share of X's queries with labels in Y")
    parser.add_argument("--block-size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--old", default=None, help="a PYTHONPATH that maps clirmatrix to the old code, e.g. /work/basepkg")
    parser.add_argument("--out", default="bench/out/write")
    parser.add_argument("--reuse", action="store_true", help="keep the data made by an earlier run with the same settings")
    parser.add_argument("--profile", choices=("new", "old"), default=None, help="cProfile one call of a contender (to stderr) instead of timing")
    parser.add_argument("--spill", action="store_true", help="add a contender that spills every block's runs to disk (SORT_MEMORY 0)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work-root", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--plans", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out-root", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.work_root, args.plans, args.out_root, args.profile is not None, args.spill)
        return
    from clirmatrix.schemas.contracts import LanguagePlan

    shape = {"queries": args.queries, "tgt_docs": args.tgt_docs, "coverage": args.coverage, "block_size": args.block_size}
    root = Path(args.out).resolve()
    work = root / "work"
    stamp = root / "shape.json"
    if args.reuse and stamp.exists() and json.loads(stamp.read_text()) == shape:
        src, tgt = LanguagePlan("xx", args.queries, 1, args.block_size), LanguagePlan("yy", args.tgt_docs, 1, args.block_size)
    else:
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        _, src, tgt = make_direction(work, **shape)
        stamp.write_text(json.dumps(shape))
        print(f"made the direction in {time.perf_counter() - started:.0f} s", flush=True)
    plans = json.dumps([src.to_dict(), tgt.to_dict()])
    common = ["--work-root", str(work), "--plans", plans]
    scratch = Path(tempfile.mkdtemp(prefix="write-bench-", dir=root))
    try:
        if args.profile:
            contender = Contender(args.profile, "ours", args.old if args.profile == "old" else None, common + ["--profile", args.profile], scratch)
            contender.call()  # warm-up
            print({key: value for key, value in contender.call().items() if key != "md5s"})
            contender.close()
            return
        contenders = [Contender("floor", "floor", None, common, scratch), Contender("new", "ours", None, common, scratch)]
        if args.spill:
            contenders.append(Contender("new, spilling", "ours", None, common + ["--spill"], scratch))
        if args.old:
            contenders.append(Contender("old", "ours", args.old, common, scratch))
        results: dict[str, list[dict]] = {c.name: [] for c in contenders}
        for c in contenders:
            c.call()  # warm-up: compiled code loaded, files cached
        for round_ in range(args.rounds):
            for c in contenders if round_ % 2 == 0 else contenders[::-1]:
                results[c.name].append(c.call())
            for name in results:
                if name != "floor" and results[name][-1]["md5s"] != results["new"][-1]["md5s"]:
                    raise SystemExit(f"{name} and new wrote different files")
            if results["floor"][-1]["md5s"] != results["new"][-1]["md5s"]:
                raise SystemExit("the floor compressed other bytes than the stage wrote")
        for c in contenders:
            c.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(results, args)


def report(results: dict[str, list[dict]], args: argparse.Namespace) -> None:
    new = results["new"][0]
    lines, pairs = new["lines"], new["pairs"]
    floor = statistics.median(r["cpu"] for r in results["floor"])
    print(f"\none direction: {lines:,} lines, {pairs:,} pairs (full: labelled; base: 100 a line), {new['gz_bytes'] / 1e6:.1f} MB of gzip; {args.rounds} rounds, CPU seconds, median (range)")
    print("\n| contender | CPU s | wall s | ns a pair | us a line | x floor |\n|---|---:|---:|---:|---:|---:|")
    for name in ("floor", "new", "new, spilling", "old"):
        if name not in results:
            continue
        cpu = [r["cpu"] for r in results[name]]
        median = statistics.median(cpu)
        wall = statistics.median(r["wall"] for r in results[name])
        print(f"| {name} | {median:.2f} ({min(cpu):.2f}-{max(cpu):.2f}) | {wall:.2f} | {median / pairs * 1e9:.0f} | {median / lines * 1e6:.2f} | {median / floor:.2f} |")


if __name__ == "__main__":
    main()
