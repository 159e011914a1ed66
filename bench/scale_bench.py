"""The build at growing sizes of one language, on a Dask cluster: time and memory per stage, and what they project to.

For each ``--sizes`` entry N it generates a CirrusSearch dump of N English articles
(the sample generator's vocabulary and text, with as many topics as keep ~2,000
articles a topic, so each title, the language's own queries, stays about as
selective) and a small partner language (``--partner-docs``), then runs
``clirmatrix build`` on a ``dask scheduler`` with ``--workers`` ``dask worker``
processes started here with ``--memory-limit`` (a worker above 95% of it is
killed, and the build fails). For every stage it records:

- its wall clock, and the CPU seconds of the driver and the workers;
- the peak RSS of the largest worker process during that stage (Linux ``VmHWM``,
  reset at the start of each stage through ``/proc/PID/clear_refs``), and the
  driver's.

Then it projects, from the measured sizes, the largest unit's memory for English
(5,984,197 documents in the release) and the core-hours of each stage for the full
release (49.28 M queries over 139 languages, 34.06 B labelled pairs in BI-139 full),
with the assumptions printed beside each figure.

Usage: python bench/scale_bench.py [--sizes 250000,1000000] [--workers 2] [--memory-limit 3GB] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

EN_DOCS = 5_984_197  # DOCS/en.tsv.gz of the release (FORMATS.md 1.4)
RELEASE_QUERIES = 49_280_000  # every title of the 139 languages (issue 14; the dissertation's Table 7.1 totals)
RELEASE_FULL_PAIRS = 34_060_000_000  # labelled (query, document) pairs of BI-139 full
RELEASE_DIRECTIONS = 139 * 138
OTHER_LANGUAGES = 138  # every query's labels are carried into 138 other languages
STAGES = ("extract_docs", "extract_sitelinks", "link", "retrieve", "label", "propagate", "write", "stats")


def _proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text()


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory since the last reset (``VmHWM``), in MB."""
    for line in _proc(pid, "status").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as handle:  # "5": reset the peak resident set size
        handle.write("5")


def cpu_seconds(pid: int) -> float:
    fields = _proc(pid, "stat").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class StageWatch(logging.Handler):
    """Follows the build's stage log lines and measures each stage on the driver and on every worker process."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(level=logging.INFO)
        self.pids = pids  # the driver first, then the workers
        self.stages: dict[str, dict] = {}
        self._started: dict[int, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "%s: running":
            for pid in self.pids:
                reset_peak(pid)
                self._started[pid] = cpu_seconds(pid)
        elif record.msg == "%s: done in %.1f s":
            stage = record.args[0]
            peaks = [peak_rss_mb(pid) for pid in self.pids]
            self.stages[stage] = {
                "driver_peak_mb": round(peaks[0], 1),
                "worker_peak_mb": round(max(peaks[1:]), 1),
                "cpu_seconds": round(sum(cpu_seconds(pid) - self._started.get(pid, 0.0) for pid in self.pids), 2),
            }


class DaskCluster:
    """A scheduler and ``workers`` single-threaded worker processes on 127.0.0.1, each in its own folder."""

    def __init__(self, root: Path, workers: int, memory_limit: str) -> None:
        self.root = root
        self.processes: list[subprocess.Popen] = []
        bin_dir = Path(sys.executable).parent
        scheduler_file = root / "scheduler.json"
        scheduler_file.unlink(missing_ok=True)
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__MEMORY__TARGET": "False", "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL": "False", "DASK_DISTRIBUTED__WORKER__MEMORY__PAUSE": "False"}
        (root / "scheduler").mkdir(parents=True, exist_ok=True)
        self._start([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)], root / "scheduler", env)
        while not (scheduler_file.exists() and scheduler_file.stat().st_size):
            time.sleep(0.1)
        for n in range(workers):
            folder = root / f"worker{n}"
            folder.mkdir(exist_ok=True)
            command = [str(bin_dir / "dask"), "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1", "--nthreads", "1"]
            self._start(command + ["--memory-limit", memory_limit, "--no-dashboard", "--local-directory", str(folder)], folder, env)
        from distributed import Client

        self.address = json.loads(scheduler_file.read_text())["address"]
        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
            self.worker_pids = sorted(client.run(os.getpid).values())

    def _start(self, command: list[str], cwd: Path, env: dict) -> None:
        log = open(cwd / "log.txt", "w")
        self.processes.append(subprocess.Popen(command, cwd=cwd, stdout=log, stderr=log, env=env, start_new_session=True))

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)


def run_size(docs: int, args: argparse.Namespace) -> dict:
    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.config import BuildConfig
    from clirmatrix.pipeline.sample import write_scale_dumps

    root = Path(args.out) / f"{docs}"
    dumps, out = root / "dumps", root / "out"
    if not (args.reuse and (dumps / "latest-all.json.gz").exists()):
        shutil.rmtree(dumps, ignore_errors=True)
        started = time.perf_counter()
        counts = write_scale_dumps(dumps, docs, partner_docs=args.partner_docs, parts=args.parts)
        print(f"generated {counts} in {time.perf_counter() - started:.0f} s", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    cluster = DaskCluster(root / "cluster", args.workers, args.memory_limit)
    watch = StageWatch([os.getpid(), *cluster.worker_pids])
    logging.getLogger("clirmatrix").addHandler(watch)
    logging.getLogger("clirmatrix").setLevel(logging.INFO)
    try:
        config = replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, shard_docs=args.shard_docs, block_size=args.block_size)
        started = time.perf_counter()
        result = run_build(config, ["--runner", "dask", "--dask_client_address", cluster.address])
        total = time.perf_counter() - started
    finally:
        logging.getLogger("clirmatrix").removeHandler(watch)
        cluster.stop()
    sets = result.summaries["write"]["sets"]
    files = result.summaries["write"]["files"]
    pairs = sum(f["docs_ge1"] for f in files if "BI-139/full" in f["path"]) + 100 * sum(f["lines"] for f in files if "BI-139/base" in f["path"] or f["path"].startswith("MULTI-8"))
    retrieval = result.summaries["retrieve"]["languages"]["en"]
    labels = sum(sum(entry["labels"].values()) for entry in result.summaries["label"]["languages"].values())
    stages = {name: {"seconds": result.stage_seconds[name], **watch.stages.get(name, {})} for name in STAGES}
    return {
        "docs": docs,
        "seconds": round(total, 1),
        "stages": stages,
        "queries": sum(entry["queries"] for entry in result.summaries["retrieve"]["languages"].values()),
        "en_shards": retrieval["shards"],
        "en_blocks": retrieval["blocks"],
        "labels": labels,
        "written_pairs": pairs,
        "released_mb": round(sum(entry["bytes"] for entry in sets.values()) / 1e6, 1),
    }


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares line through (x, y): (intercept, slope)."""
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var if var else 0.0
    return mean_y - slope * mean_x, slope


def project(runs: list[dict]) -> dict:
    """Largest unit's memory for English and core-hours per stage for the full release, from the measured sizes."""
    sizes = [run["docs"] for run in runs]
    largest = max(runs, key=lambda run: run["docs"])
    memory, hours = {}, {}
    for stage in STAGES:
        peaks = [run["stages"][stage].get("worker_peak_mb", float("nan")) for run in runs]
        intercept, slope = _fit(sizes, peaks)
        memory[stage] = {"measured_mb": peaks, "mb_per_million_docs": round(slope * 1e6, 1), "english_mb": round(intercept + slope * EN_DOCS, 0)}
        cpu = largest["stages"][stage].get("cpu_seconds", 0.0)
        if stage == "propagate":  # each label row is carried into every other language: 138 in the release, 1 here
            per = cpu / max(largest["labels"], 1)
            total = per * largest["labels"] / largest["queries"] * RELEASE_QUERIES * OTHER_LANGUAGES
            basis = f"{per * 1e9:.0f} ns per label row and target language, x {largest['labels'] / largest['queries']:.0f} labels a query x 49.28 M queries x 138"
        elif stage == "write":  # per released (query, document) pair: full's 34.06 B plus base's 100 per query
            per = cpu / max(largest["written_pairs"], 1)
            release_pairs = RELEASE_FULL_PAIRS + RELEASE_DIRECTIONS * 13_000 * 100
            total = per * release_pairs
            basis = f"{per * 1e9:.0f} ns per written pair x {release_pairs / 1e9:.1f} B pairs (full + base at 13,000 queries a direction)"
        elif stage == "retrieve":  # per query, at English's size (the bench's cost grows with the language)
            per_query = [run["stages"]["retrieve"]["cpu_seconds"] / run["queries"] for run in runs]
            intercept, slope = _fit(sizes, per_query)
            at_en = intercept + slope * EN_DOCS
            total = at_en * RELEASE_QUERIES
            basis = f"{at_en * 1e6:.0f} us a query at English's size (fitted: {per_query[0] * 1e6:.0f}-{per_query[-1] * 1e6:.0f} us measured), every query at that cost (an upper bound)"
        else:  # per document (sitelinks: per Wikidata entity line, one per document here)
            per = cpu / largest["queries"]
            total = per * RELEASE_QUERIES
            basis = f"{per * 1e6:.1f} us a document x 49.28 M" + (" (per Wikidata line; the real dump has ~10^8 lines)" if stage == "extract_sitelinks" else "")
        hours[stage] = {"core_hours": round(total / 3600, 1), "basis": basis}
    return {"memory": memory, "core_hours": hours}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250000,1000000", help="English articles per run, comma-separated")
    parser.add_argument("--partner-docs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="3GB", help="per dask worker; a worker above 95%% of it is killed")
    parser.add_argument("--parts", type=int, default=8, help="gzip parts of the English dump")
    parser.add_argument("--shard-docs", type=int, default=None)
    parser.add_argument("--block-size", type=int, default=None)
    parser.add_argument("--out", default="bench/out/scale")
    parser.add_argument("--reuse", action="store_true", help="keep dumps generated by an earlier run")
    args = parser.parse_args(argv)
    from clirmatrix.pipeline.units import DEFAULT_BLOCK_SIZE, DEFAULT_SHARD_DOCS

    args.shard_docs = args.shard_docs or DEFAULT_SHARD_DOCS
    args.block_size = args.block_size or DEFAULT_BLOCK_SIZE
    runs = []
    for size in (int(value) for value in args.sizes.split(",")):
        print(f"\n== {size:,} English articles ==", flush=True)
        runs.append(run_size(size, args))
        print(json.dumps(runs[-1], indent=1), flush=True)
    projection = project(runs)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "results.json").write_text(json.dumps({"runs": runs, "projection": projection, "settings": vars(args)}, indent=1))

    print(f"\n{args.workers} dask workers ({args.memory_limit} each), shard_docs {args.shard_docs:,}, block_size {args.block_size:,}")
    header = "| stage | " + " | ".join(f"{run['docs'] // 1000:,}k: s / worker MB / driver MB" for run in runs) + " | English MB (projected) |"
    print(header + "\n|---|" + "---:|" * (len(runs) + 1))
    for stage in STAGES:
        cells = [f"{run['stages'][stage]['seconds']:.0f} / {run['stages'][stage].get('worker_peak_mb', 0):,.0f} / {run['stages'][stage].get('driver_peak_mb', 0):,.0f}" for run in runs]
        print(f"| {stage} | " + " | ".join(cells) + f" | {projection['memory'][stage]['english_mb']:,.0f} |")
    print("\n| stage | core-hours, full release | basis |\n|---|---:|---|")
    for stage in STAGES:
        entry = projection["core_hours"][stage]
        print(f"| {stage} | {entry['core_hours']:,.1f} | {entry['basis']} |")
    print(f"| **total** | **{sum(e['core_hours'] for e in projection['core_hours'].values()):,.1f}** | |")


if __name__ == "__main__":
    main()
