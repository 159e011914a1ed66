"""``bench/scale_bench.py --realistic``: one language of realistic HTML dumps built on Dask beside its plan, and what both benches measure a build on Dask with.

Run through ``python bench/scale_bench.py --realistic ...`` (its usage); this module holds that
part of the bench and the measuring it shares with the scale builds (``StageWatch``,
``DaskCluster``, ``build_on_dask``: ``scale_bench.py`` imports them from here, and this module
imports nothing of it).

``--realistic`` builds each ``--sizes`` entry as realistic Enterprise HTML dumps
(``bench/realistic_dumps.py``: English and a ``--partner`` of ``--partner-docs`` articles of
its items, linked by ``wb_items_per_site``): ``clirmatrix plan`` first on the same dumps and
flags (its table in ``OUT/realistic-N/plan.txt``), then the build on the Dask cluster, each
stage measured as the scale builds are and every unit too (a ``dask worker --preload`` of this
file wraps each stage's DoFns: a unit's wall and CPU seconds and its worker's peak memory),
printed as plan against measured, per stage and per unit, into ``OUT/realistic.json``; the cost
model untouched. ``--drop-dumps`` removes the HTML dumps once they are extracted (their md5
taken first), ``--resume`` continues a killed build, ``--report`` prints the tables again from
``OUT/realistic.json``, and ``--refit R.json ...`` refits the cost model's rates that rest on
what an article is (HTML extraction, indexing, writing DOCS, search as ``a + b * shard
documents``) from such builds.
"""

from __future__ import annotations

import argparse
import functools
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

from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
from clirmatrix.pipeline.tools import plan as planning

UNIT_LOG_ENV = "CLIRMATRIX_BENCH_UNIT_LOG"  # where the workers log each unit (``dask_setup``)


# ---- measuring a build on Dask (the scale builds' and the realistic ones') --------------------------


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
    """Follows the build's stage log lines and measures each stage on the driver and on every worker process.

    Workers are restarted when a stage starts, so what a stage's peak counts is that
    stage's own memory, not what a worker kept from the stage before.
    """

    def __init__(self, cluster: DaskCluster, after: dict | None = None) -> None:
        super().__init__(level=logging.INFO)
        self.cluster = cluster
        self.pids: list[int] = []  # the driver first, then the workers
        self.stages: dict[str, dict] = {}
        self._started: dict[int, float] = {}
        self.after = after or {}  # stage -> what to do once it is done (in the driver, before the next stage)

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "%s: running":
            self.pids = [os.getpid(), *self.cluster.restart_workers()]
            for pid in self.pids:
                reset_peak(pid)
                self._started[pid] = cpu_seconds(pid)
            self._began = time.time()
        elif record.msg == "%s: done in %.1f s":
            stage = record.args[0]
            peaks = [peak_rss_mb(pid) for pid in self.pids]
            self.stages[stage] = {
                "driver_peak_mb": round(peaks[0], 1),
                "worker_peak_mb": round(max(peaks[1:]), 1),
                "cpu_seconds": round(sum(cpu_seconds(pid) - self._started.get(pid, 0.0) for pid in self.pids), 2),
                "window": [round(self._began, 3), round(time.time(), 3)],
            }
            if stage in self.after:
                self.after[stage]()


class DaskCluster:
    """A scheduler and ``workers`` single-threaded worker processes on 127.0.0.1, each in its own folder."""

    def __init__(self, root: Path, workers: int, memory_limit: str, unit_log: Path | None = None) -> None:
        root = root.resolve()  # each process runs in a folder of its own
        self.root = root
        self.processes: list[subprocess.Popen] = []
        bin_dir = Path(sys.executable).parent
        scheduler_file = root / "scheduler.json"
        scheduler_file.unlink(missing_ok=True)
        env = {**os.environ, "DASK_DISTRIBUTED__WORKER__MEMORY__TARGET": "False", "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL": "False", "DASK_DISTRIBUTED__WORKER__MEMORY__PAUSE": "False"}
        preload = []
        if unit_log is not None:  # every unit's time and peak memory, from the workers (``dask_setup`` below)
            env[UNIT_LOG_ENV] = str(unit_log.resolve())
            preload = ["--preload", str(Path(__file__).resolve())]
        (root / "scheduler").mkdir(parents=True, exist_ok=True)
        self._start([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)], root / "scheduler", env)
        while not (scheduler_file.exists() and scheduler_file.stat().st_size):
            if self.processes[0].poll() is not None:
                sys.exit(f"the dask scheduler did not start; see {root / 'scheduler' / 'log.txt'}")
            time.sleep(0.1)
        for n in range(workers):
            folder = root / f"worker{n}"
            folder.mkdir(exist_ok=True)
            command = [str(bin_dir / "dask"), "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1", "--nthreads", "1"]
            self._start(command + ["--memory-limit", memory_limit, "--no-dashboard", "--local-directory", str(folder), *preload], folder, env)
        from distributed import Client

        self.workers = workers
        self.address = json.loads(scheduler_file.read_text())["address"]
        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)

    def restart_workers(self) -> list[int]:
        """Fresh worker processes (their nannies restart them); their process ids."""
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.restart(wait_for_workers=True, timeout=120)
            client.wait_for_workers(self.workers, timeout=120)
            return sorted(client.run(os.getpid).values())

    def _start(self, command: list[str], cwd: Path, env: dict) -> None:
        log = open(cwd / "log.txt", "w")
        self.processes.append(subprocess.Popen(command, cwd=cwd, stdout=log, stderr=log, env=env, start_new_session=True))

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)


def folder_bytes(root: Path, skip: Path | None = None) -> int:
    """Bytes of every file under ``root`` (less those under ``skip``)."""
    skip = skip.resolve() if skip else None
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not (skip and p.resolve().is_relative_to(skip)))


def build_on_dask(config, cluster: DaskCluster, watch: StageWatch) -> tuple[object, float]:
    """``config``'s build on ``cluster``, each stage measured by ``watch``: the build's result and its wall seconds. The
    cluster is stopped after, whatever happens."""
    from clirmatrix.beam_jobs.build import run_build

    log = logging.getLogger("clirmatrix")
    log.addHandler(watch)
    log.setLevel(logging.INFO)
    try:
        started = time.perf_counter()
        result = run_build(config, ["--runner", "dask", "--dask_client_address", cluster.address])
        return result, time.perf_counter() - started
    finally:
        log.removeHandler(watch)
        cluster.stop()


# ---- one language of realistic HTML dumps, beside its plan (--realistic) ----------------------------


def dask_setup(worker=None) -> None:
    """Dask's preload hook (``dask worker --preload THIS_FILE``): every unit a worker runs logs its time and peak memory."""
    folder = os.environ.get(UNIT_LOG_ENV)
    if folder:
        watch_units(folder)


def watch_units(folder: str) -> None:
    """Wrap the ``process`` of every DoFn of the build's stages: per call, its wall and CPU seconds and the process's peak
    resident memory (``VmHWM``, reset as the call starts: a worker runs one unit at a time), one JSON line a call in
    ``folder/PID.jsonl``. The build's own unit reports are untouched."""
    import importlib
    import inspect
    import pkgutil

    import apache_beam as beam

    import clirmatrix.beam_jobs as jobs

    for info in pkgutil.iter_modules(jobs.__path__):
        module = importlib.import_module(f"clirmatrix.beam_jobs.{info.name}")
        for cls in list(vars(module).values()):
            if (isinstance(cls, type) and issubclass(cls, beam.DoFn) and cls.__module__ == module.__name__ and "process" in vars(cls)
                    and inspect.isgeneratorfunction(cls.process) and not hasattr(cls.process, "__watched__")):
                cls.process = _watched(cls, cls.process, folder)


def _watched(cls: type, process, folder: str):
    @functools.wraps(process)
    def watched(self, element, *args, **kwargs):
        if getattr(self, "step", None) is not None and getattr(element, "step", self.step) != self.step:
            yield from process(self, element, *args, **kwargs)  # a unit of another step, passed on
            return
        pid = os.getpid()
        reset_peak(pid)
        began, wall, cpu = time.time(), time.perf_counter(), time.process_time()
        try:
            yield from process(self, element, *args, **kwargs)
        finally:
            record = {"dofn": cls.__name__, "step": getattr(self, "step", None), "unit": _unit_name(element), "began": round(began, 3),
                      "seconds": round(time.perf_counter() - wall, 3), "cpu_seconds": round(time.process_time() - cpu, 3), "peak_mb": round(peak_rss_mb(pid), 1), "pid": pid}
            with open(os.path.join(folder, f"{pid}.jsonl"), "a") as log:
                log.write(json.dumps(record) + "\n")

    watched.__watched__ = True
    return watched


def _unit_name(element) -> str:
    name = getattr(element, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(element, tuple) and len(element) == 2 and isinstance(element[0], str):
        return f"{element[0]} ({type(element[1]).__name__})"
    return repr(element)[:120]


def read_unit_log(folder: Path, windows: dict[str, list[float]]) -> list[dict]:
    """The workers' unit records, each with the stage whose wall-clock window it started in."""
    units = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            record["stage"] = next((stage for stage, (start, end) in windows.items() if start - 1 <= record["began"] <= end), "")
            units.append(record)
    return sorted(units, key=lambda record: record["began"])


def _plan_dict(plan) -> dict:
    return {
        "documents": plan.documents,
        "estimated": plan.estimated,
        "stages": {stage.stage: {"units": stage.units, "cpu_seconds": round(stage.cpu_seconds, 1), "wall_seconds": round(stage.wall_seconds, 1),
                                 "largest_unit_mb": round(stage.largest_unit_mb, 1), "largest_unit_seconds": round(stage.largest_unit_seconds, 1)} for stage in plan.stages},
        "wall_seconds": round(plan.wall_seconds, 1), "peak_worker_mb": round(plan.peak_worker_mb, 1), "driver_mb": round(plan.driver_mb, 1),
        "disk": {"dumps": plan.disk_dumps, "work": plan.disk_work, "out": plan.disk_out}, "notes": list(plan.notes),
    }


def run_realistic(docs: int, args: argparse.Namespace) -> dict:
    """English of ``docs`` realistic articles (Enterprise HTML, ``wb_items_per_site``) and a partner of ``--partner-docs``:
    ``clirmatrix plan`` first, then the build on Dask, each stage and each unit measured."""
    from realistic_dumps import write_realistic_dumps

    from clirmatrix.beam_jobs.build import _describe, input_checksums
    from clirmatrix.pipeline.config import BuildConfig

    root = Path(args.out).resolve() / f"realistic-{docs}"
    dumps, out, units_dir = root / "dumps", root / "out", root / "units"
    stats_file = dumps / "realistic-stats.json"
    if not (args.reuse and stats_file.exists()):
        shutil.rmtree(dumps, ignore_errors=True)
        started = time.perf_counter()
        write_realistic_dumps(dumps, "en", docs, ("html", "items-per-site"), seed=1, processes=args.workers, text_every=0, partner=(args.partner, args.partner_docs))
        print(f"generated {docs:,} + {args.partner_docs:,} articles in {time.perf_counter() - started:.0f} s", flush=True)
    generated = json.loads(stats_file.read_text())
    placeholders = resume_placeholders(dumps, str(out / ".work")) if args.resume else []
    html = sorted(dumps.glob("*-ENTERPRISE-HTML.json.tar.gz"))
    dump_bytes = {path.name: path.stat().st_size for path in html}
    settings = planning.PlanSettings.of(min_docs=1_000, shard_docs=args.shard_docs, block_size=args.block_size)
    flags = ["--dumps", str(dumps), "--workers", str(args.workers), "--runner", "dask", "--min-docs", "1000"]
    printed = subprocess.run([str(Path(sys.executable).parent / "clirmatrix"), "plan", *flags], capture_output=True, text=True, env={**os.environ, "COLUMNS": "160"})
    root.mkdir(parents=True, exist_ok=True)
    (root / "plan.txt").write_text(printed.stdout + printed.stderr)
    inputs = planning.inputs_from_dumps(str(dumps))
    plan = planning.plan_build(inputs, workers=args.workers, runner="dask", settings=settings)
    print(f"plan: {plan.documents:,} documents{' (estimated)' if plan.estimated else ''}, {plan.wall_seconds / 60:.0f} min on {args.workers} workers, "
          f"a worker's peak {plan.peak_worker_mb:,.0f} MB; `clirmatrix plan {' '.join(flags)}` in {root / 'plan.txt'}", flush=True)

    config = replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, shard_docs=args.shard_docs, block_size=args.block_size)
    if not args.resume:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(units_dir, ignore_errors=True)
    units_dir.mkdir(parents=True, exist_ok=True)

    def drop_dumps() -> None:
        # The manifest takes each input's md5 at the end: taken now (cached in WORK as the build caches it), the HTML dumps go.
        input_checksums(_describe([str(path) for path in html], str(dumps)), str(dumps), config.work_dir)
        for path in html:
            path.unlink()
        print(f"extract_docs done: {sum(dump_bytes.values()) / 1e9:.1f} GB of HTML dumps removed (--drop-dumps)", flush=True)

    cluster = DaskCluster(root / "cluster", args.workers, args.memory_limit, unit_log=units_dir)
    watch = StageWatch(cluster, after={"extract_docs": drop_dumps} if args.drop_dumps else None)
    try:
        result, total = build_on_dask(config, cluster, watch)
    finally:
        for path in placeholders:
            path.unlink(missing_ok=True)
    measured_docs = {lang: entry.docs for lang, entry in result.summaries["extract_docs"].languages.items()}
    counted = replace(inputs, languages=tuple(replace(lang, documents=measured_docs.get(lang.lang, 0), counted=True) for lang in inputs.languages))
    rates = measured_rates(result.work, docs)
    windows = {stage: entry["window"] for stage, entry in watch.stages.items()}
    units = read_unit_log(units_dir, windows)
    stages = {name: {"seconds": result.stage_seconds[name], **watch.stages.get(name, {})} for name in STAGE_NAMES}
    for unit in units:  # run before a resume: the stage by the unit (a stage that the killed run had not finished: "killed")
        if not unit["stage"]:
            unit["stage"] = _stage_of(unit)
    for name in set(STAGE_NAMES) - set(watch.stages):  # done before a resume: its units' records (the driver's CPU and memory not known)
        done = [unit for unit in units if unit["stage"] == name]
        if done:
            stages[name].update({"cpu_seconds": round(sum(unit["cpu_seconds"] for unit in done), 2), "worker_peak_mb": max(unit["peak_mb"] for unit in done),
                                 "from_units": True})
    return {
        "docs": docs, "partner": args.partner, "partner_docs": args.partner_docs, "work": result.work, "seconds": round(total, 1),
        "generated": {key: generated.get(key) for key in ("timings_s", "cpu_s", "projection")} | {"dump_bytes": dump_bytes},
        "plan_command": "clirmatrix plan " + " ".join(flags),
        "plan": _plan_dict(plan),
        "plan_counted": _plan_dict(planning.plan_build(counted, workers=args.workers, runner="dask", settings=settings)),
        "stages": stages,
        "resumed": bool(placeholders) or args.resume,
        "rates": rates,
        "languages": measured_docs,
        "units": units,
        "work_bytes": folder_bytes(Path(result.work)),
        "out_bytes": folder_bytes(Path(result.out), skip=Path(result.work)),
    }


def measured_rates(work: str, english: int) -> dict[str, float]:
    """English's rates in this build, from its units' reports: CPU seconds a query and shard searched (the search step
    alone, at its shard's documents), a document indexed, a document written to DOCS and DOCS-FULL."""
    from clirmatrix.pipeline.io.reports import read_named_reports
    from clirmatrix.pipeline.method.corpus import WorkDirs

    dirs = WorkDirs(work)
    retrieval = read_named_reports(dirs.stage("retrieval"))
    searched = [r for name, r in retrieval.items() if name.startswith("search.en.")]
    counted = [r for name, r in retrieval.items() if name.startswith("count.en.")]
    index_cpu = sum(r["unit_cpu_seconds"] for r in counted) if counted else sum(r["index_cpu_seconds"] for r in searched)
    release = read_named_reports(dirs.stage("release"))
    return {
        "shard_docs": max(r["docs"] for r in searched),
        "search_per_query_and_shard": sum(r["search_cpu_seconds"] for r in searched) / sum(r["queries"] for r in searched),
        "index_per_document": index_cpu / english,
        "docs_per_document": release["docs.en"]["unit_cpu_seconds"] / english,
    }


def refit_cost_model(paths: list[Path], model_path: Path, command: str) -> None:
    """The cost model's rates that rest on what an article is, refit from realistic builds (``--realistic``): Enterprise
    HTML's extraction a compressed byte, indexing and writing DOCS a document, and search a query and shard as
    ``a + b * shard documents`` (two shard sizes; real titles' terms are each in a share of the texts, so a query's
    postings grow with its shard). The scale builds' rates rest on the sample generator's short texts."""
    import datetime

    runs = sorted((run for path in paths for run in json.loads(path.read_text())["runs"]), key=lambda run: run["rates"]["shard_docs"])
    model = json.loads(model_path.read_text())
    rates = model["rates_cpu_seconds"]
    before = {key: rates.get(key) for key in ("search_per_query_and_shard", "search_per_query_shard_and_document", "index_per_document", "docs_per_document")}
    before["html.gz"] = model["extract_docs_per_byte"].get("html.gz")
    (small, large) = (runs[0]["rates"], runs[-1]["rates"])
    slope = max((large["search_per_query_and_shard"] - small["search_per_query_and_shard"]) / (large["shard_docs"] - small["shard_docs"]), 0.0) if len(runs) > 1 else 0.0
    biggest = runs[-1]
    rates["search_per_query_and_shard"] = float(f"{large['search_per_query_and_shard'] - slope * large['shard_docs']:.4g}")
    rates["search_per_query_shard_and_document"] = float(f"{slope:.4g}")
    rates["index_per_document"] = float(f"{biggest['rates']['index_per_document']:.4g}")
    rates["docs_per_document"] = float(f"{biggest['rates']['docs_per_document']:.4g}")
    extract = sum(unit["cpu_seconds"] for unit in biggest["units"] if unit["stage"] == "extract_docs")
    model["extract_docs_per_byte"]["html.gz"] = float(f"{extract / sum(biggest['generated']['dump_bytes'].values()):.4g}")
    model["refit"] = {
        "measured": datetime.date.today().isoformat(), "command": command,
        "builds": [f"{run['docs']:,} realistic English articles + {run['partner_docs']:,} {run['partner']}" for run in runs],
        "before": before,
        "why": "the scale builds' generator writes short texts and easy titles; real articles (bench/realistic_dumps.py) are longer, and real titles' "
               "terms are each in a share of the texts (bench/title_selectivity.py), docs/benchmarks.md 2026-11-29",
    }
    model_path.write_text(json.dumps(model, indent=1, sort_keys=True) + "\n")
    print(f"cost model refit: {model_path} (" + ", ".join(f"{key} {value} -> {rates.get(key, model['extract_docs_per_byte'].get(key))}" for key, value in before.items()) + ")")


def _stage_of(unit: dict) -> str:
    """The stage of a unit recorded before a resume (its stage's window was in the killed driver), by its step and name."""
    from clirmatrix.pipeline.extraction import docs, links

    step = unit.get("step")
    if step in (docs.INDEX_PART, docs.INDEX_JOIN, docs.EXTRACT, docs.FINALIZE):
        return "extract_docs"
    if step == links.READ or "wikidatawiki" in unit["unit"] or "items_per_site" in unit["unit"]:
        return "extract_sitelinks"
    if step == "link":
        return "link_entities"
    return "killed"


def resume_placeholders(dumps: Path, work_dir: str) -> list[Path]:
    """For a build resumed after ``--drop-dumps``: each removed dump as an empty sparse file of its size and modification
    time (from the md5 cache the build keeps in WORK), so the finished stages keep their fingerprints and are skipped,
    and the manifest takes the md5 already taken. Returns the placeholders made (removed after the build)."""
    cache = Path(work_dir) / "_stages" / "checksums.json"
    made = []
    for key in json.loads(cache.read_text()) if cache.exists() else {}:
        name, size, mtime = key.rsplit("|", 2)
        path = dumps / name
        if not path.exists():
            with open(path, "wb") as handle:
                handle.truncate(int(size))
            os.utime(path, (float(mtime), float(mtime)))
            made.append(path)
    return made


CORE_MINUTES = 600  # a unit's CPU seconds past which it is flagged (issue 53: no unit over 10 core-minutes)


def print_realistic(run: dict) -> None:
    """Plan against measured per stage, then each stage's units: the largest by CPU and by memory, and any over 10 core-minutes."""
    plan, counted = run["plan"], run["plan_counted"]
    by_stage: dict[str, list[dict]] = {}
    for unit in run["units"]:
        by_stage.setdefault(unit["stage"], []).append(unit)
    print(f"\n{run['docs']:,} English articles + {run['partner_docs']:,} {run['partner']} (realistic Enterprise HTML): {sum(run['languages'].values()):,} documents; "
          f"plan {plan['documents']:,}{' (estimated from bytes)' if plan['estimated'] else ''}; `{run['plan_command']}`")
    print("\n| stage | units | plan CPU s | measured CPU s | measured / plan | plan wall s | measured wall s | measured / plan | plan worker MB | measured worker MB | measured / plan |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = [0.0] * 4
    for stage in STAGE_NAMES:
        p, m = plan["stages"][stage], run["stages"][stage]
        peak = max([m.get("worker_peak_mb", 0.0)] + [u["peak_mb"] for u in by_stage.get(stage, [])])
        ratio = lambda a, b: f"{a / b:.2f}" if b else "-"  # noqa: E731
        planned_mb = max(p["largest_unit_mb"], 0.0) if stage != "stats" else 0.0  # stats runs in the driver
        print(f"| {stage} | {p['units']} | {p['cpu_seconds']:,.0f} | {m.get('cpu_seconds', 0):,.0f} | {ratio(m.get('cpu_seconds', 0), p['cpu_seconds'])} "
              f"| {p['wall_seconds']:,.0f} | {m['seconds']:,.0f} | {ratio(m['seconds'], p['wall_seconds'])} | {planned_mb:,.0f} | {peak:,.0f} | {ratio(peak, planned_mb)} |")
        totals = [totals[0] + p["cpu_seconds"], totals[1] + m.get("cpu_seconds", 0), totals[2] + p["wall_seconds"], totals[3] + m["seconds"]]
    print(f"| **stages** | | **{totals[0]:,.0f}** | **{totals[1]:,.0f}** | **{totals[1] / max(totals[0], 1):.2f}** | **{totals[2]:,.0f}** | **{totals[3]:,.0f}** | "
          f"**{totals[3] / max(totals[2], 1):.2f}** | **{plan['peak_worker_mb']:,.0f}** | | |")
    print(f"the whole build {run['seconds']:,.0f} s; plan with the documents counted ({counted['documents']:,}): stages {counted['wall_seconds']:,.0f} s, "
          + ", ".join(f"{stage} {entry['wall_seconds']:,.0f}" for stage, entry in counted["stages"].items()))
    print(f"disk: dumps {sum(run['generated']['dump_bytes'].values()) / 1e9:.1f} GB, WORK {run['work_bytes'] / 1e9:.1f} GB (plan {plan['disk']['work'] / 1e9:.1f}), "
          f"OUT {run['out_bytes'] / 1e9:.1f} GB (plan {plan['disk']['out'] / 1e9:.1f})")
    print("\n| stage | units measured | largest unit by CPU: CPU s / wall s / peak MB | largest unit by memory: peak MB / CPU s | plan's largest unit s / MB |")
    print("|---|---:|---|---|---:|")
    for stage in STAGE_NAMES:
        found = by_stage.get(stage, [])
        if not found:
            continue
        slow = max(found, key=lambda u: u["cpu_seconds"])
        big = max(found, key=lambda u: u["peak_mb"])
        p = plan["stages"][stage]
        print(f"| {stage} | {len(found)} | {slow['unit']}: {slow['cpu_seconds']:,.1f} / {slow['seconds']:,.1f} / {slow['peak_mb']:,.0f} "
              f"| {big['unit']}: {big['peak_mb']:,.0f} / {big['cpu_seconds']:,.1f} | {p['largest_unit_seconds']:,.0f} / {p['largest_unit_mb']:,.0f} |")
    over = [u for u in run["units"] if u["cpu_seconds"] > CORE_MINUTES]
    print(f"\nunits over {CORE_MINUTES // 60} core-minutes: " + (", ".join(f"{u['unit']} ({u['cpu_seconds'] / 60:.1f})" for u in over) if over else "none")
          + f"; the largest unit's memory: {max(run['units'], key=lambda u: u['peak_mb'])['unit']} {max(u['peak_mb'] for u in run['units']):,.0f} MB")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``scale_bench.py``'s options of the realistic builds (``--sizes``, ``--workers``, ``--out`` and the rest are the scale builds')."""
    parser.add_argument("--realistic", action="store_true",
                        help="instead: each size as realistic Enterprise HTML dumps (bench/realistic_dumps.py) with a --partner, planned, built and measured unit by unit; "
                             "results in OUT/realistic.json, the cost model untouched")
    parser.add_argument("--partner", default="de", help="with --realistic: the partner language")
    parser.add_argument("--drop-dumps", action="store_true", help="with --realistic: remove the HTML dumps once extract_docs is done (their md5 taken first)")
    parser.add_argument("--refit", nargs="+", metavar="REALISTIC_JSON",
                        help="with --realistic: refit the cost model's rates that rest on what an article is from these realistic builds' results (no build)")
    parser.add_argument("--resume", action="store_true", help="with --realistic: resume a killed build (its finished stages kept; dumps removed by --drop-dumps stand in as placeholders)")


def main(args: argparse.Namespace, command: str) -> None:
    """``scale_bench.py --realistic``: refit (``--refit``), print the saved tables (``--report``) or build each size; ``command`` is
    the bench's command line, as recorded."""
    path = Path(args.out) / "realistic.json"
    if args.refit:
        refit_cost_model([Path(p) for p in args.refit], Path(args.cost_model), command)
        return
    if args.report:
        for run in json.loads(path.read_text())["runs"]:
            print_realistic(run)
        return
    runs = []
    for size in (int(value) for value in args.sizes.split(",")):
        print(f"\n== {size:,} realistic English articles ==", flush=True)
        runs.append(run_realistic(size, args))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"runs": runs, "command": command}, indent=1))
        print_realistic(runs[-1])
