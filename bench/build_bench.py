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

With ``--plan`` it builds ``--rounds`` times and prints, per stage and in total,
``clirmatrix plan``'s projection for these dumps (``pipeline/tools/plan.py`` with
``pipeline/cost_model.json``) beside the measured wall clock and the peak RSS of the
stage's largest worker process (polled, ``scale_bench.LocalWatch``) and of the driver:
median and range of the rounds, and measured / projected. ``--sample`` builds the
README's main command instead: ``clirmatrix sample DIR`` (2,000 articles a language,
one broken record a dump) and ``build --min-docs 1000``.

Usage: python bench/build_bench.py [--docs 58000] [--workers 2] [--out bench/out/build] [--against REV --rounds 2]
       python bench/build_bench.py --plan [--sample] [--docs 20000] [--workers 2] [--rounds 3]
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

from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
from clirmatrix.beam_jobs.build import run_build
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.tools.sample import write_sample_dumps

_ONE_BUILD = """
import json, resource, sys, time
from dataclasses import replace
from clirmatrix.beam_jobs.build import run_build
from clirmatrix.pipeline.config import BuildConfig
try:
    from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
except ImportError:  # a revision from before the stages were declared: build.STAGES named them
    from clirmatrix.beam_jobs.build import STAGES as STAGE_NAMES
started = time.perf_counter()
result = run_build(replace(BuildConfig(), dumps=sys.argv[1], out=sys.argv[2], min_docs=1_000, workers=int(sys.argv[3])))
renamed = {"link": "link_entities", "write": "write_release"}  # a revision from before the stages took their modules' names
seconds = {renamed.get(stage, stage): result.stage_seconds[stage] for stage in STAGE_NAMES}
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
    for stage in (*STAGE_NAMES, "total"):
        ours, reference = [t[stage] for t in mine], [t[stage] for t in theirs]
        cell = lambda values: f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"  # noqa: E731
        print(f"| {stage} | {cell(ours)} | {cell(reference)} | {statistics.median(ours) / statistics.median(reference):.2f} |")
    same = len(set.union(*digests.values())) == 1
    print(f"\nreleased bytes: {'the same in every build of both trees' if same else 'DIFFERENT: ' + repr(digests)}")
    share = [t["write_release"] / t["total"] for t in mine]
    print(f"\nwrite stage, share of the build (this tree): {100 * statistics.median(share):.1f}% ({100 * min(share):.1f}-{100 * max(share):.1f}%)")


def against_plan(args: argparse.Namespace, dumps: Path, out: Path) -> None:
    """``args.rounds`` builds of ``dumps``, each stage's wall clock and peak memory beside what ``plan`` projects for it."""
    import logging
    import statistics

    from scale_bench import LocalWatch

    from clirmatrix.pipeline.tools import plan

    workers = None if args.sample else args.workers  # --sample: as the README's command, the build's default workers
    started = time.perf_counter()
    inputs = plan.inputs_from_dumps(str(dumps))
    projected = plan.plan_build(inputs, workers, "local", plan.PlanSettings.of(min_docs=1_000))
    print(f"plan: {time.perf_counter() - started:.1f} s to count {sum(lang.documents for lang in inputs.languages):,} documents; cost model of {projected.model_date}")
    rounds = []
    for round_ in range(args.rounds):
        shutil.rmtree(out, ignore_errors=True)
        watch = LocalWatch()
        logging.getLogger("clirmatrix").addHandler(watch)
        logging.getLogger("clirmatrix").setLevel(logging.INFO)
        try:
            started = time.perf_counter()
            result = run_build(replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, workers=workers or 0))
            total = time.perf_counter() - started
        finally:
            logging.getLogger("clirmatrix").removeHandler(watch)
            watch.close()
        rounds.append({"total": total, **{stage: {"seconds": result.stage_seconds[stage], **watch.stages.get(stage, {})} for stage in STAGE_NAMES}})
        print(f"round {round_ + 1}: {total:.1f} s", flush=True)

    def cell(values: list[float], digits: int = 1) -> str:
        return f"{statistics.median(values):,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"

    print("\n| stage | plan s | measured s | measured / plan | plan worker MB | measured worker MB | measured / plan |\n|---|---:|---:|---:|---:|---:|---:|")
    for stage in projected.stages:
        seconds = [r[stage.stage]["seconds"] for r in rounds]
        memory = [r[stage.stage].get("worker_peak_mb", 0.0) for r in rounds]
        mb_ratio = f"{statistics.median(memory) / stage.largest_unit_mb:.2f}" if stage.largest_unit_mb else "-"
        print(f"| {stage.stage} | {stage.wall_seconds:.1f} | {cell(seconds)} | {statistics.median(seconds) / stage.wall_seconds:.2f} | {stage.largest_unit_mb:,.0f} | {cell(memory, 0)} | {mb_ratio} |")
    totals = [r["total"] for r in rounds]
    stage_sums = [sum(r[stage]["seconds"] for stage in STAGE_NAMES) for r in rounds]
    worker = [max(r[stage].get("worker_peak_mb", 0.0) for stage in STAGE_NAMES) for r in rounds]
    driver = [max(r[stage].get("driver_peak_mb", 0.0) for stage in STAGE_NAMES) for r in rounds]
    time_ratio, worker_ratio = statistics.median(stage_sums) / projected.wall_seconds, statistics.median(worker) / projected.peak_worker_mb
    print(f"| **stages** | **{projected.wall_seconds:.1f}** | {cell(stage_sums)} | **{time_ratio:.2f}** | **{projected.peak_worker_mb:,.0f}** | {cell(worker, 0)} | **{worker_ratio:.2f}** |")
    driver_ratio = statistics.median(driver) / projected.driver_mb
    print(f"\nthe whole build (stages, manifest and report): {cell(totals)} s; driver peak {cell(driver, 0)} MB, plan {projected.driver_mb:,.0f} MB ({driver_ratio:.2f})")


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
    parser.add_argument("--rounds", type=int, default=2, help="with --against: builds of each; with --plan: builds")
    parser.add_argument("--plan", action="store_true", help="print plan's projection beside the measured builds")
    parser.add_argument("--sample", action="store_true", help="the README's sample (clirmatrix sample DIR) instead of --docs articles a language")
    args = parser.parse_args(argv)

    root = Path(args.out)
    dumps, out = root / "dumps", root / "out"
    if not (args.keep_dumps and dumps.exists()):
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        # In a child process, so the generator's memory does not count as the build's peak RSS.
        sample = {} if args.sample else {"docs_per_lang": args.docs, "langs": MULTI8_LANGUAGES, "seed": 13}  # --sample: the command's defaults
        child = multiprocessing.Process(target=write_sample_dumps, args=(dumps,), kwargs=sample)
        child.start()
        child.join()
        if child.exitcode:
            sys.exit(f"generating the dumps failed (exit {child.exitcode})")
        print(f"generated dumps: {time.perf_counter() - started:.1f} s, {sum(p.stat().st_size for p in dumps.rglob('*') if p.is_file()) / 1e6:.1f} MB")
    if args.against:
        compare(args, dumps)
        return
    if args.plan:
        against_plan(args, dumps, out)
        return
    shutil.rmtree(out, ignore_errors=True)

    config = replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, workers=args.workers)
    started = time.perf_counter()
    result = run_build(config)
    total = time.perf_counter() - started

    print(f"\nbuild of {len(MULTI8_LANGUAGES)} languages x ~{args.docs:,} articles, {args.workers} worker processes: {total:.1f} s")
    print("\n| stage | seconds |\n|---|---:|")
    for stage in STAGE_NAMES:
        print(f"| {stage} | {result.stage_seconds[stage]:.1f} |")
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\npeak RSS: driver {driver:,.0f} MB, largest worker process {workers:,.0f} MB" + ("" if args.keep_dumps else " (the dump generator counts as a worker here; rerun with --keep-dumps)"))

    retrieval = result.summaries["retrieve"].languages
    print("\n| lang | documents | queries/s (one core) | index s | search s |\n|---|---:|---:|---:|---:|")
    for lang, entry in retrieval.items():
        print(f"| {lang} | {entry.docs:,} | {entry.queries_per_second:,.0f} | {entry.index_seconds:.1f} | {entry.search_seconds:.1f} |")
    queries = sum(entry.queries for entry in retrieval.values())
    search_seconds = sum(entry.search_seconds for entry in retrieval.values())
    print(f"\nretrieval: {queries:,} queries, {queries / search_seconds:,.0f} queries/s per core (search time only)")
    for name, counts in sorted(result.summaries["write_release"].sets.items()):
        print(f"released {name}: {counts['files']:,} files, {counts['lines']:,} lines, {counts['bytes'] / 1e6:,.1f} MB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
