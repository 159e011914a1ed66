"""The whole build on a generated 8-language corpus: time per stage, peak memory, queries/s.

Generates sample dumps of the 8 MULTI-8 languages (``--docs`` articles each, in
every dump layout the builder reads: CirrusSearch gzip, the Hive bz2 layout for
ar, MediaWiki XML for fr), runs ``clirmatrix build`` end to end on the
in-process runner, and prints:

- wall clock of each stage (from the build's stage records) and in total;
- peak RSS of the driver and of the largest worker process;
- retrieval: documents, queries/s per language and per core (one search thread
  per worker), and hits;
- the size of what was released.

With ``--against REV`` it instead times this tree and git revision REV side by side
on the same dumps, alternating which goes first, ``--rounds`` times each, and prints
per stage the median and range of both and their ratio (REV runs from a worktree
of its own, imported ahead of the installed tree), and whether both wrote the same
bytes: the md5 of every released file (``manifest.json`` and ``report.html`` aside,
which name versions and stages) after every build.

Usage: python bench/build_bench.py [--docs 58000] [--workers 2] [--out bench/out/build] [--against REV --rounds 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from clirmatrix.beam_jobs.build import STAGES, run_build
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.tools.sample import write_sample_dumps

_ONE_BUILD = """
import json, resource, sys, time
from dataclasses import replace
from clirmatrix.beam_jobs.build import STAGES, run_build
from clirmatrix.pipeline.config import BuildConfig
started = time.perf_counter()
result = run_build(replace(BuildConfig(), dumps=sys.argv[1], out=sys.argv[2], min_docs=1_000, workers=int(sys.argv[3])))
renamed = {"link": "link_entities", "write": "write_release"}  # a revision from before the stages took their modules' names
seconds = {renamed.get(stage, stage): result.stage_seconds[stage] for stage in STAGES}
seconds["total"] = time.perf_counter() - started
print("RESULT " + json.dumps(seconds))
"""


def compare(args: argparse.Namespace, dumps: Path) -> None:
    """This tree and ``args.against`` on the same dumps, alternately, ``args.rounds`` times each."""
    import json
    import statistics
    import subprocess
    import tempfile

    repo = Path(__file__).resolve().parents[1]
    scratch = Path(tempfile.mkdtemp(prefix="build-against-"))
    tree, shim = scratch / "tree", scratch / "shim" / "clirmatrix"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree), args.against], check=True, capture_output=True)
    shim.mkdir(parents=True)
    for package in ("pipeline", "beam_jobs", "schemas", "models"):
        (shim / package).symlink_to(tree / package)
    contenders = {"this tree": None, args.against: str(shim.parent)}
    times: dict[str, list[dict]] = {name: [] for name in contenders}
    digests: dict[str, set[str]] = {}
    try:
        for round_ in range(args.rounds):
            for name in list(contenders)[:: 1 if round_ % 2 == 0 else -1]:
                out = scratch / "out"
                shutil.rmtree(out, ignore_errors=True)
                env = {**os.environ, **({"PYTHONPATH": contenders[name]} if contenders[name] else {})}
                done = subprocess.run([sys.executable, "-c", _ONE_BUILD, str(dumps), str(out), str(args.workers)], env=env, capture_output=True, text=True)
                if done.returncode:
                    sys.exit(f"{name}: the build failed:\n{done.stderr[-3000:]}")
                times[name].append(json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:]))
                digests.setdefault(name, set()).add(released_digest(out))
                print(f"round {round_ + 1}, {name}: {times[name][-1]['total']:.1f} s", flush=True)
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    mine, theirs = times["this tree"], times[args.against]
    print(f"\n| stage | this tree, s (median, range) | {args.against}, s | ratio |\n|---|---:|---:|---:|")
    for stage in (*STAGES, "total"):
        ours, reference = [t[stage] for t in mine], [t[stage] for t in theirs]
        cell = lambda values: f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"  # noqa: E731
        print(f"| {stage} | {cell(ours)} | {cell(reference)} | {statistics.median(ours) / statistics.median(reference):.2f} |")
    same = len(set.union(*digests.values())) == 1
    print(f"\nreleased bytes: {'the same in every build of both trees' if same else 'DIFFERENT: ' + repr(digests)}")
    share = [t["write_release"] / t["total"] for t in mine]
    print(f"\nwrite stage, share of the build (this tree): {100 * statistics.median(share):.1f}% ({100 * min(share):.1f}-{100 * max(share):.1f}%)")


def released_digest(out: Path) -> str:
    """One md5 over every released file's path and md5 (what the two trees must agree on)."""
    import hashlib

    skip = {"manifest.json", "report.html"}
    digest = hashlib.md5()
    for path in sorted(p for p in out.rglob("*") if p.is_file() and ".work" not in p.parts and p.name not in skip):
        digest.update(f"{path.relative_to(out)} {hashlib.md5(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=58_000, help="sample size per language; every language then keeps >= 50,000 articles")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="bench/out/build")
    parser.add_argument("--keep-dumps", action="store_true", help="reuse dumps generated by an earlier run")
    parser.add_argument("--against", default=None, help="a git revision to time side by side with this tree")
    parser.add_argument("--rounds", type=int, default=2, help="with --against: builds of each")
    args = parser.parse_args(argv)

    root = Path(args.out)
    dumps, out = root / "dumps", root / "out"
    if not (args.keep_dumps and dumps.exists()):
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        # In a child process, so the generator's memory does not count as the build's peak RSS.
        child = multiprocessing.Process(target=write_sample_dumps, args=(dumps,), kwargs={"docs_per_lang": args.docs, "langs": MULTI8_LANGUAGES, "seed": 13})
        child.start()
        child.join()
        if child.exitcode:
            sys.exit(f"generating the dumps failed (exit {child.exitcode})")
        print(f"generated dumps: {time.perf_counter() - started:.1f} s, {sum(p.stat().st_size for p in dumps.rglob('*') if p.is_file()) / 1e6:.1f} MB")
    if args.against:
        compare(args, dumps)
        return
    shutil.rmtree(out, ignore_errors=True)

    config = replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, workers=args.workers)
    started = time.perf_counter()
    result = run_build(config)
    total = time.perf_counter() - started

    print(f"\nbuild of {len(MULTI8_LANGUAGES)} languages x ~{args.docs:,} articles, {args.workers} worker processes: {total:.1f} s")
    print("\n| stage | seconds |\n|---|---:|")
    for stage in STAGES:
        print(f"| {stage} | {result.stage_seconds[stage]:.1f} |")
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\npeak RSS: driver {driver:,.0f} MB, largest worker process {workers:,.0f} MB" + ("" if args.keep_dumps else " (the dump generator counts as a worker here; rerun with --keep-dumps)"))

    retrieval = result.summaries["retrieve"].languages
    print("\n| lang | documents | queries/s (one core) | index s | search s |\n|---|---:|---:|---:|---:|")
    for lang, entry in retrieval.items():
        print(f"| {lang} | {entry['docs']:,} | {entry['queries_per_second']:,.0f} | {entry['index_seconds']:.1f} | {entry['search_seconds']:.1f} |")
    queries = sum(entry["queries"] for entry in retrieval.values())
    search_seconds = sum(entry["search_seconds"] for entry in retrieval.values())
    print(f"\nretrieval: {queries:,} queries, {queries / search_seconds:,.0f} queries/s per core (search time only)")
    for name, counts in sorted(result.summaries["write_release"].sets.items()):
        print(f"released {name}: {counts['files']:,} files, {counts['lines']:,} lines, {counts['bytes'] / 1e6:,.1f} MB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
