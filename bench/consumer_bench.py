"""What a release costs its consumers beside reading it: ``validate``, ``export`` (each format), the loader and ``download``'s verification.

On one build (``--build OUT``, or the sample generator's 8 languages at ``--docs``
articles, made once in ``--work``), each contender runs as its own process, and the
contenders alternate round by round; each is timed by the CPU (user + system, its
worker processes included) and wall clock its process took. The floor is what none of
them can avoid: every released file gunzipped (isal) and each query line parsed by
``orjson.loads`` (DOCS lines split), one process. Contenders marked "its own CPU" time
their work inside the process, after imports and compiled code are loaded (as on a
release, where start-up is nothing beside hours of reading); the commands are timed
whole, start-up included. ``validate --workers 2`` is a wall-clock figure: its workers
start from a fork server, whose CPU its process does not collect. ``download``'s own floor is md5 of
the same bytes, which is what verifying a present file is.

Figures per judged pair (the floor counts them) are projected to the release's 34 B
judged pairs in core-hours.

Usage: python bench/consumer_bench.py [--build OUT | --docs 20000] [--rounds 3] [--work bench/out/consumer]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RELEASE_PAIRS = 34e9  # judged pairs of the 2020 release (docs/formats.md)
PYTHON = sys.executable
CLI = [PYTHON, "-m", "clirmatrix"]

FLOOR = """
import os, sys, time, orjson
from isal import igzip
started = time.process_time()
pairs = 0
for folder, _, names in os.walk(sys.argv[1]):
    if "/." in folder:
        continue
    for name in sorted(names):
        path = os.path.join(folder, name)
        if name.endswith(".jl.gz"):
            with igzip.open(path, "rb") as lines:
                for line in lines:
                    pairs += len(orjson.loads(line)["tgt_results"])
        elif name.endswith(".tsv.gz"):
            with igzip.open(path, "rb") as lines:
                for line in lines:
                    line.split(b"\\t", 1)
print(pairs, time.process_time() - started)
"""

VALIDATE_WARM = """
import os, shutil, sys, tempfile, time
from clirmatrix import validate
from clirmatrix.pipeline.output.jsonl import walk_release
root = sys.argv[1]
with tempfile.TemporaryDirectory() as warm:  # imports and compiled code loaded on one small file first
    path = min((p for p, item in walk_release(root) if item is not None), key=lambda p: os.path.getsize(os.path.join(root, p)))
    os.makedirs(os.path.dirname(os.path.join(warm, path)))
    shutil.copy(os.path.join(root, path), os.path.join(warm, path))
    validate(warm, workers=1)
started = time.process_time()
report = validate(root, workers=1)
print(0, time.process_time() - started)
"""

EXPORT_WARM = """
import sys, tempfile, time
from clirmatrix.pipeline.tools.export import export_unit, finish_export, plan_export
root, fmt, to = sys.argv[1:4]
plan = plan_export(root, fmt)
with tempfile.TemporaryDirectory() as warm:  # imports and compiled code loaded on the smallest unit first
    smallest = min((task for task in plan.tasks if task.kind == "queries"), key=lambda task: __import__("os").path.getsize(root + "/" + task.source))
    export_unit(root, warm, smallest)
started = time.process_time()
for task in plan.tasks:
    report = export_unit(root, to, task)
    assert not report.error, report.error
finish_export(plan, to)
print(0, time.process_time() - started)
"""

MD5 = """
import hashlib, os, sys
for folder, _, names in os.walk(sys.argv[1]):
    if "/." in folder:
        continue
    for name in sorted(names):
        if name.endswith(".gz") and name != "downloads.json.gz":
            digest = hashlib.md5()
            with open(os.path.join(folder, name), "rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
"""

LOADER = """
import sys, time
from clirmatrix import QuerySplit
from clirmatrix.pipeline.output.jsonl import walk_release
import pyarrow
started = time.process_time()
for path, item in walk_release(sys.argv[1]):
    if item is not None and item.tgt is not None:
        QuerySplit(sys.argv[1], item.dataset, item.src, item.tgt, item.split).tables()
print(0, time.process_time() - started)
"""

DOWNLOAD = """
import sys
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.tools.download import prepare_download, run_download
root = sys.argv[1]
for dataset in layout.CONTEXTS:  # every file the build's index lists, already in place: each verified, none fetched
    try:
        planned = prepare_download(dataset, "all", "all", list(layout.SPLITS), index=root + "/downloads.json.gz")
    except InvalidInputError:  # a set the build has not (MULTI-8 without its 8 languages)
        continue
    report = run_download(planned, root, jobs=1)
    assert not report.failed, report.failed
"""


def timed(command: list[str]) -> tuple[float, float, str]:
    """(CPU s of the process and its children, wall s, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall, done.stdout


def contenders(build: Path, scratch: Path) -> dict[str, list[str]]:
    out = {
        "floor: gunzip + orjson.loads a line (its own CPU)": [PYTHON, "-c", FLOOR, str(build)],
        "validate --workers 1": [*CLI, "validate", str(build), "--workers", "1"],
        "validate, in process after start-up (its own CPU)": [PYTHON, "-c", VALIDATE_WARM, str(build)],
        "validate --workers 2": [*CLI, "validate", str(build), "--workers", "2"],
        "loader: QuerySplit.tables() of every query file (its own CPU)": [PYTHON, "-c", LOADER, str(build)],
        "download: verify present files (md5, size)": [PYTHON, "-c", DOWNLOAD, str(build)],
        "floor of download: md5 of the same files": [PYTHON, "-c", MD5, str(build)],
    }
    for fmt in ("hf", "beir", "pyserini"):
        out[f"export --format {fmt} --workers 1"] = [*CLI, "export", str(build), "--format", fmt, "--to", str(scratch / fmt), "--workers", "1"]
        out[f"export --format {fmt}, in process after start-up (its own CPU)"] = [PYTHON, "-c", EXPORT_WARM, str(build), fmt, str(scratch / f"{fmt}-in-process")]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=None, help="a build to read [default: made here from --docs]")
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="bench/out/consumer")
    parser.add_argument("--only", default=None, help="comma-separated words: run the contenders whose name holds one (and the floor)")
    args = parser.parse_args(argv)
    if args.build:
        build = Path(args.build)
    else:
        from export_bench import make_build

        build = make_build(Path(args.work), args.docs)
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    pairs = 0
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="consumer-bench-") as scratch:
            chosen = contenders(build, Path(scratch))
            if args.only:
                words = args.only.split(",")
                chosen = {name: command for name, command in chosen.items() if name.startswith("floor") or any(word in name for word in words)}
            for name, command in chosen.items():
                seconds, elapsed, printed = timed(command)
                if "its own CPU" in name or name.startswith("floor: gunzip"):  # the process timed its work, start-up aside
                    seconds = float(printed.split()[1])
                cpu.setdefault(name, []).append(seconds)
                wall.setdefault(name, []).append(elapsed)
                if name.startswith("floor: gunzip"):
                    pairs = int(printed.split()[0])
                for made in Path(scratch).iterdir():
                    shutil.rmtree(made)
    floor = statistics.median(cpu["floor: gunzip + orjson.loads a line (its own CPU)"])
    size = sum(path.stat().st_size for path in build.rglob("*.gz") if ".work" not in path.parts)
    print(f"build {build}: {size / 1e6:,.0f} MB of .gz, {pairs:,} judged pairs; {args.rounds} rounds, contenders alternating")
    print("| what | CPU s, median (range) | wall s, median | x floor (CPU) | ns a judged pair | core-hours at 34 B pairs |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in cpu:
        median = statistics.median(cpu[name])
        print(
            f"| {name} | {median:.2f} ({min(cpu[name]):.2f}-{max(cpu[name]):.2f}) | {statistics.median(wall[name]):.2f} | "
            f"{median / floor:.2f} | {median / pairs * 1e9:.0f} | {median / pairs * RELEASE_PAIRS / 3600:.1f} |"
        )
    print(json.dumps({"pairs": pairs, "cpu": cpu, "wall": wall}))


if __name__ == "__main__":
    main()
