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
release (49.28 M queries over 139 languages, 34.06 B labelled pairs in BI-139 full) and
for a rebuild from 2026's dumps (65.75 M articles), each language at its 2026 size (search
costs a language its queries times its shards), with the assumptions printed beside each
figure.

Labelling, pairing the languages' documents and writing BI-139 are projected from the
build's blocks labelled, its languages paired and its two directions written again in this
process, warm (``part_floors.label_costs``, ``links_costs`` and ``direction_costs``): their
units are seconds long, and in a build this small each worker's first unit of the stage,
several times a later one, is a large share of them, where a release's long-lived workers
pay it once among hundreds of units.

Then, on the largest build's work folder, every part beside its floor in this process
(``bench/part_floors.py``: the simplest program doing the same unavoidable work on the
same data).

Last, what ``clirmatrix plan`` needs beside the rates (docs/planning.md):

- extraction's CPU a compressed byte of each kind of dump (CirrusSearch gzip and bz2,
  XML bz2, Enterprise HTML), the docs stage's own unit run in this process on sample
  dumps of ``--kinds-docs`` articles (``extraction_rates``);
- small builds of the sample dumps on the local runner (``--small-langs``, ``--small-docs``,
  ``--small-rounds``; ``small_builds``): each stage's start-up (what is left of its wall
  clock once its projected work is spread over the workers, fitted as a fixed cost plus one
  a unit), each stage's worker baseline memory and the driver's, and the sample
  generator's release shape (BI-139 full lines and pairs a query and target language);
- from all builds, WORK and OUT bytes a document and a document and target language, Dask's
  extra memory a worker and each stage's memory a document of its largest unit
  (``fit_cost_model``).

Everything goes to the cost model ``pipeline/cost_model.json`` (dated, with this command).

``--realistic`` instead builds each size as realistic Enterprise HTML dumps
(``bench/realistic_dumps.py``) beside ``clirmatrix plan``, every unit measured, into
``OUT/realistic.json`` (the cost model untouched), and ``--refit`` refits the cost model's
rates that rest on what an article is from such builds: ``bench/scale_realistic.py``, which
also holds the Dask cluster and the stage watch both kinds of build are measured with.

Usage: python bench/scale_bench.py [--sizes 250000,1000000] [--workers 2] [--memory-limit 3GB] [--reuse] [--report] [--floor-rounds 5]
                                   [--small-langs en+de,en+de+es+ru] [--small-docs 1200] [--small-rounds 2] [--kinds-docs 3000]
       python bench/scale_bench.py --realistic --sizes 2000000 --partner-docs 20000 --workers 2 --memory-limit 3GB --out DIR
                                   [--drop-dumps] [--reuse] [--resume] [--report]
       python bench/scale_bench.py --realistic --refit DIR1/realistic.json DIR2/realistic.json
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import scale_realistic
from scale_realistic import DaskCluster, StageWatch, build_on_dask, folder_bytes, peak_rss_mb, reset_peak

from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
from clirmatrix.pipeline.tools import plan as planning
from clirmatrix.pipeline.tools.plan import FULL_PAIRS_PER_QUERY, RELEASE_FULL_PAIRS, RELEASE_LANGUAGES, RELEASE_QUERIES

EN_DOCS = 5_984_197  # DOCS/en.tsv.gz of the release (docs/formats.md 1.4)
RELEASE_DIRECTIONS = RELEASE_LANGUAGES * (RELEASE_LANGUAGES - 1)
OTHER_LANGUAGES = RELEASE_LANGUAGES - 1  # every query's labels are carried into 138 other languages


def run_size(docs: int, args: argparse.Namespace) -> dict:
    from clirmatrix.pipeline.config import BuildConfig
    from clirmatrix.pipeline.tools.sample import write_scale_dumps

    root = Path(args.out).resolve() / f"{docs}"
    dumps, out = root / "dumps", root / "out"
    if not (args.reuse and (dumps / "latest-all.json.gz").exists()):
        shutil.rmtree(dumps, ignore_errors=True)
        started = time.perf_counter()
        counts = write_scale_dumps(dumps, docs, partner_docs=args.partner_docs, parts=args.parts)
        print(f"generated {counts} in {time.perf_counter() - started:.0f} s", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    config = replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, shard_docs=args.shard_docs, block_size=args.block_size)
    cluster = DaskCluster(root / "cluster", args.workers, args.memory_limit)
    watch = StageWatch(cluster)
    result, total = build_on_dask(config, cluster, watch)
    return {
        "docs": docs,
        "work": result.work,
        "seconds": round(total, 1),
        "stages": {name: {"seconds": result.stage_seconds[name], **watch.stages.get(name, {})} for name in STAGE_NAMES},
        "units": unit_costs(result),
        "released_mb": round(sum(entry["bytes"] for entry in result.summaries["write_release"].sets.values()) / 1e6, 1),
        **build_facts(str(dumps), result),
    }


def build_facts(dumps: str, result) -> dict:
    """What the cost model fits beside the rates: the languages' documents, the dumps' bytes by file, WORK's and OUT's bytes,
    and BI-139 full's lines and pairs (a build's release shape)."""
    from clirmatrix.pipeline.method.dumps import choose_links, discover

    found = discover(dumps)
    links = choose_links(found, "auto", dumps)
    full = [f for f in result.summaries["write_release"].files if "/full/" in f["path"]]
    return {
        "languages": {lang: entry.docs for lang, entry in result.summaries["extract_docs"].languages.items()},
        "dump_files": {lang: [[d.kind, d.path, os.path.getsize(d.path)] for d in files] for lang, files in found.docs.items()},
        "link_files": [[path, os.path.getsize(path)] for path in (*links.sitelinks_files, *(path for _, path in links.page_props))],
        "link_kind": links.sitelinks_kind,
        "work_bytes": folder_bytes(Path(result.work)),
        "out_bytes": folder_bytes(Path(result.out), skip=Path(result.work)),
        "full_lines": sum(f["lines"] for f in full),
        "full_pairs": sum(f["pairs"] for f in full),
    }


def unit_costs(result) -> dict:
    """CPU seconds of each kind of unit (from the units' own reports) and the amounts they worked on."""
    from part_floors import direction_amounts

    from clirmatrix.pipeline.io.reports import read_named_reports
    from clirmatrix.pipeline.method.corpus import WorkDirs

    work = WorkDirs(result.work)
    languages = result.summaries["retrieve"].languages
    retrieval = read_named_reports(work.stage("retrieval"))
    searched = [r for name, r in retrieval.items() if name.startswith("search.")]
    multi = {lang for lang, entry in languages.items() if entry.shards > 1}
    labels = read_named_reports(work.stage("labels"))
    propagated = read_named_reports(work.stage("propagated"))
    release = read_named_reports(work.stage("release"))
    written = [r for name, r in release.items() if name.startswith("bi139.")]
    return {
        "docs": sum(entry.docs for entry in languages.values()),
        # An index is built once per document: by the count step, or by the search step of a one-shard language.
        "index_cpu": sum(r["unit_cpu_seconds"] for name, r in retrieval.items() if name.startswith("count."))
        + sum(r.get("index_cpu_seconds", r["index_seconds"]) for r in searched if r["lang"] not in multi),
        "search_cpu": sum(r.get("search_cpu_seconds", r["search_seconds"]) for r in searched),
        "query_shards": sum(entry.queries * entry.shards for entry in languages.values()),
        "merge_cpu": sum(r["unit_cpu_seconds"] for name, r in retrieval.items() if name.startswith("merge.")),
        "merged_query_shards": sum(entry.queries * entry.shards for lang, entry in languages.items() if lang in multi),
        "label_cpu": sum(r["unit_cpu_seconds"] for r in labels.values()),
        "label_rows": sum(sum(r["labels"].values()) for r in labels.values()),
        "links_cpu": sum(r["unit_cpu_seconds"] for name, r in propagated.items() if name.startswith("links.")),
        "carry_cpu": sum(r["unit_cpu_seconds"] for name, r in propagated.items() if name.startswith("carry.")),
        # A carry unit groups its block once, then carries it into each target: apart, they scale apart.
        "carry_group_cpu": sum(r.get("group_cpu_seconds", 0.0) for name, r in propagated.items() if name.startswith("carry.")),
        "carry_target_cpu": sum(r.get("carry_cpu_seconds", r["unit_cpu_seconds"]) for name, r in propagated.items() if name.startswith("carry.")),
        "targets": len(languages) - 1,
        # Per direction: CPU, lines and (query, document) pairs written (full: the labelled ones; base: 100 a line).
        "directions": [(r["unit_cpu_seconds"], *direction_amounts(r["files"])) for r in written],
        "docs_cpu": sum(r["unit_cpu_seconds"] for name, r in release.items() if name.startswith("docs.")),
        "splits_cpu": sum(r["unit_cpu_seconds"] for name, r in release.items() if name.startswith("splits.")),
    }


def language_sizes(total: int) -> list[int]:
    """Articles (queries) of each BI-139 language when the 139 hold ``total``: each at its share of 2026.

    Meta's List of Wikipedias (2026-07) gives every wiki over ~140,000 articles
    (``realistic_dumps.WIKI_SIZES``) and the 139 languages' sum; the BI-139 languages
    not in that list hold the rest, evenly (each far below a shard). Searching costs a
    language its queries times its shards, so its size matters, not only the total.
    """
    from realistic_dumps import PUBLISHED, WIKI_SIZES

    from clirmatrix.pipeline.method.languages import BI139_LANGUAGES

    articles_2026 = PUBLISHED["bi139_articles"][0]
    large = [thousands * 1000 for code, thousands in WIKI_SIZES if code in BI139_LANGUAGES]
    small = len(BI139_LANGUAGES) - len(large)
    sizes = large + [(articles_2026 - sum(large)) // small] * small
    return [round(n * total / articles_2026) for n in sizes]


# What the projection is made for: the 2020 release's total, and a rebuild from the dumps of 2026.
SCENARIOS = {"the release (49.28 M queries)": RELEASE_QUERIES, "a 2026 rebuild (65.75 M)": 65_747_190}


def query_shards(shard_docs: int, total: int, sharded_only: bool = False, per_document: float = 0.0) -> float:
    """Queries times shards over the 139 languages holding ``total`` articles (``language_sizes``); only those of several shards (which merge) if ``sharded_only``.

    With ``per_document``, each query and shard also counts ``per_document`` times the shard's documents (a query's
    postings grow with its shard: a search rate of ``a + b * shard documents`` is ``a * query_shards(...) + query_shards(..., per_document=b)``
    less the first term: see ``search_rates``)."""
    shards = [(n, max(1, -(-n // shard_docs))) for n in language_sizes(total)]
    if per_document:
        return sum(n * count * per_document * n / count for n, count in shards if count > 1 or not sharded_only)
    return sum(n * count for n, count in shards if count > 1 or not sharded_only)


def search_rates(runs: list[dict]) -> tuple[float, float]:
    """CPU seconds a query and shard: ``(a, b)`` of ``a + b * shard documents``, from the two largest runs' search units.

    Real titles hold terms in a share of the texts (docs/benchmarks.md 2026-11-29), so a query's postings, and what
    searching a shard costs, grow with the shard; the two sizes give the line (``b`` at least 0). One run: ``b`` 0."""
    measured = [(run["units"]["search_cpu"] / run["units"]["query_shards"], run["docs"] / max(1, run["units"]["query_shards"] // run["docs"])) for run in runs]
    if len(measured) < 2 or measured[-1][1] == measured[-2][1]:
        return measured[-1][0], 0.0
    (low, small), (high, large) = measured[-2:]
    slope = max((high - low) / (large - small), 0.0)
    return high - slope * large, slope


def project(runs: list[dict], shard_docs: int) -> dict:
    """English's largest unit and the full release's core-hours per stage, from the measured sizes and units."""
    runs = sorted(runs, key=lambda run: run["docs"])
    big, bigger = runs[-2:] if len(runs) > 1 else runs * 2
    memory = {}
    for stage in STAGE_NAMES:
        low, high = big["stages"][stage]["worker_peak_mb"], bigger["stages"][stage]["worker_peak_mb"]
        slope = (high - low) / (bigger["docs"] - big["docs"]) if bigger["docs"] != big["docs"] else 0.0
        # Retrieval's largest unit is one shard of at most shard_docs documents, whatever the language's size.
        english_docs = min(EN_DOCS, shard_docs) if stage == "retrieve" else EN_DOCS
        memory[stage] = {
            "measured_mb": [run["stages"][stage]["worker_peak_mb"] for run in runs],
            "growth_percent": round(100 * (high - low) / low, 1),
            # Linear in documents; a stage that did not grow (noise can make the slope negative) stays at its largest.
            "english_mb": round(max(high, low) + max(slope, 0.0) * max(english_docs - bigger["docs"], 0)),
        }
    u = bigger["units"]
    label_cpu, links_cpu = u.get("warm_label_cpu", u["label_cpu"]), u.get("warm_links_cpu", u["links_cpu"])
    labels_per_query = u["label_rows"] / u["docs"]
    carry_once = u.get("carry_group_cpu", 0.0) / u["label_rows"]  # a label row, once per block
    carry_per_target = u.get("carry_target_cpu", u["carry_cpu"]) / (u["label_rows"] * u["targets"])  # a label row and target language
    # Per-shard search cost depends on how long the title terms' postings are: the generator's, not Wikipedia's.
    # Each part's hours for each scenario: the search and merge by queries times shards, the others by queries.
    totals = list(SCENARIOS.values())
    grow = [total / RELEASE_QUERIES for total in totals]
    search_a, search_b = search_rates(runs)
    search = tuple(search_a * query_shards(shard_docs, total) + query_shards(shard_docs, total, per_document=search_b) for total in totals)
    merge = tuple(u["merge_cpu"] / max(u["merged_query_shards"], 1) * query_shards(shard_docs, total, sharded_only=True) for total in totals)
    # A direction's cost: per line (its query's id and title, the line) and per pair. Two directions of
    # very different pairs per line (en -> de: a few; de -> en: ~100) separate the two.
    cpu, lines, pairs = (np.array(column, dtype=float) for column in zip(*u.get("warm_directions", u["directions"])))
    (per_line, per_pair), *_ = np.linalg.lstsq(np.column_stack([lines, pairs]), cpu, rcond=None)
    base_lines = RELEASE_DIRECTIONS * 13_000
    release_lines, release_pairs = RELEASE_FULL_PAIRS / FULL_PAIRS_PER_QUERY + base_lines, RELEASE_FULL_PAIRS + base_lines * 100
    linear = {
        "retrieve: index": u["index_cpu"] / u["docs"] * RELEASE_QUERIES,
        "label": label_cpu / u["docs"] * RELEASE_QUERIES,
        "propagate: pair languages": links_cpu / (2 * u["docs"]) * 2 * OTHER_LANGUAGES * RELEASE_QUERIES,
        "propagate: carry labels": (carry_once + carry_per_target * OTHER_LANGUAGES) * labels_per_query * RELEASE_QUERIES,
        "write: BI-139": per_line * release_lines + per_pair * release_pairs,
        "write: DOCS": u["docs_cpu"] / u["docs"] * RELEASE_QUERIES,
        "write: splits": u["splits_cpu"] / u["docs"] * RELEASE_QUERIES,
    }
    for stage in ("extract_docs", "extract_sitelinks", "link_entities"):  # per document (sitelinks: per Wikidata line, one per document here)
        linear[stage] = bigger["stages"][stage]["cpu_seconds"] / u["docs"] * RELEASE_QUERIES
    hours = {name: tuple(seconds * g for g in grow) for name, seconds in linear.items()}
    hours["retrieve: search"], hours["retrieve: merge"] = search, merge
    rates = {
        "index": f"{u['index_cpu'] / u['docs'] * 1e6:.0f} us a document",
        "search": f"{u['search_cpu'] / u['query_shards'] * 1e6:.0f} us a query and shard ({search_a * 1e6:.0f} + {search_b * 1e9:.2f} a 1,000 documents of the shard)",
        "merge": f"{u['merge_cpu'] / max(u['merged_query_shards'], 1) * 1e6:.1f} us a query and shard",
        "label": f"{label_cpu / u['docs'] * 1e6:.0f} us a query",
        "carry": f"{carry_once * 1e9:.0f} ns a label row once and {carry_per_target * 1e9:.0f} ns a label row and target language ({labels_per_query:.0f} labels a query)",
        "BI-139": f"{per_line * 1e6:.1f} us a line and {per_pair * 1e9:.0f} ns a pair ({release_lines / 1e6:,.0f} M lines, {release_pairs / 1e9:.1f} B pairs in the release)",
        "DOCS": f"{u['docs_cpu'] / u['docs'] * 1e6:.0f} us a document",
    }
    unit_rates = {
        "index_per_document": u["index_cpu"] / u["docs"],
        "search_per_query_and_shard": search_a,
        "search_per_query_shard_and_document": search_b,
        "merge_per_query_and_shard": u["merge_cpu"] / max(u["merged_query_shards"], 1),
        "label_per_query": label_cpu / u["docs"],
        "pair_languages_per_document_and_language": links_cpu / (2 * u["docs"]),
        "carry_per_label_row": carry_once,
        "carry_per_label_row_and_target": carry_per_target,
        "labels_per_query": labels_per_query,
        "write_per_line": per_line,
        "write_per_pair": per_pair,
        "docs_per_document": u["docs_cpu"] / u["docs"],
        "splits_per_document": u["splits_cpu"] / u["docs"],
        **{f"{stage}_per_document": bigger["stages"][stage]["cpu_seconds"] / u["docs"] for stage in ("extract_docs", "extract_sitelinks", "link_entities")},
    }
    return {
        "memory": memory,
        "core_hours": {k: [round(v / 3600, 1) for v in pair] for k, pair in hours.items()},
        "rates": rates,
        "unit_rates": {k: float(f"{v:.4g}") for k, v in unit_rates.items()},
    }


class LocalWatch(logging.Handler):
    """Per stage of a build on the local runner: the driver's peak RSS and its worker processes' largest, polled.

    The local runner starts fresh worker processes for every stage's pipeline, so a
    stage's worker peak is its own; a worker's ``VmHWM`` is read every ``interval``
    seconds while it lives (a peak reached in its last moments can be missed).
    """

    def __init__(self, interval: float = 0.05) -> None:
        super().__init__(level=logging.INFO)
        self.stages: dict[str, dict] = {}
        self.current: str | None = None
        self.interval = interval
        self._stop = False
        import threading

        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        from clirmatrix.beam_jobs.local_worker import local_workers

        while not self._stop:
            stage = self.current
            if stage is not None:
                for pid in local_workers(os.getpid()):
                    try:
                        peak = peak_rss_mb(pid)
                    except OSError:
                        continue
                    entry = self.stages[stage]
                    entry["worker_peak_mb"] = round(max(entry["worker_peak_mb"], peak), 1)
            time.sleep(self.interval)

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "%s: running":
            reset_peak(os.getpid())
            self.stages[record.args[0]] = {"worker_peak_mb": 0.0}
            self.current = record.args[0]
        elif record.msg == "%s: done in %.1f s":
            self.stages[record.args[0]]["driver_peak_mb"] = round(peak_rss_mb(os.getpid()), 1)
            self.current = None

    def close(self) -> None:
        self._stop = True
        super().close()


def small_builds(args: argparse.Namespace) -> list[dict]:
    """Sample builds of a few languages on the local runner: each stage's start-up, its workers' baseline memory, disk, the release shape.

    Each language set (``--small-langs``) is built ``--small-rounds`` times, the sets
    alternating; a stage's seconds are the median of its rounds. What a stage pays
    whatever its size is what is left of its wall clock once its work (the plan's CPU
    at the rates measured above) is spread over the workers.
    """
    import multiprocessing
    import statistics

    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    builds: dict[str, list[dict]] = {}
    sets = [(tuple(group.split("+")), int(size)) for size in str(args.small_docs).split(",") for group in args.small_langs.split(",")]
    for round_ in range(args.small_rounds):
        for langs, size in sets:
            name = "+".join(langs) + f"@{size}"
            root = Path(args.out).resolve() / f"small-{'-'.join(langs)}-{size}"
            dumps, out = root / "dumps", root / "out"
            if not (dumps / "sample-truth.json").exists():
                write_sample_dumps(dumps, size, langs, broken=False, inputs="classic")
            # In a fresh process: the driver's memory is the build's own, not what this one holds from the runs before.
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                stages, facts = pool.apply(_one_local_build, (str(dumps), str(out), args.workers))
            builds.setdefault(name, []).append({"stages": stages, **facts})
            print(f"small build {name}, round {round_ + 1}: {sum(e['seconds'] for e in stages.values()):.1f} s", flush=True)
    merged = []
    for name, rounds in builds.items():
        first = rounds[0]
        stages = {
            stage: {key: statistics.median(r["stages"][stage].get(key, 0.0) for r in rounds) for key in ("seconds", "worker_peak_mb", "driver_peak_mb")}
            for stage in STAGE_NAMES
        }
        merged.append({**first, "name": name, "stages": stages, "rounds": [r["stages"] for r in rounds], "workers": args.workers})
    return merged


def _one_local_build(dumps: str, out: str, workers: int) -> tuple[dict, dict]:
    """One build on the local runner, each stage watched (``LocalWatch``): its stages' measurements and ``build_facts``."""
    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.config import BuildConfig

    shutil.rmtree(out, ignore_errors=True)
    watch = LocalWatch()
    logging.getLogger("clirmatrix").addHandler(watch)
    logging.getLogger("clirmatrix").setLevel(logging.INFO)
    try:
        result = run_build(replace(BuildConfig(), dumps=dumps, out=out, min_docs=1_000, workers=workers))
    finally:
        logging.getLogger("clirmatrix").removeHandler(watch)
        watch.close()
    return {name: {"seconds": result.stage_seconds[name], **watch.stages.get(name, {})} for name in STAGE_NAMES}, build_facts(dumps, result)


def extraction_rates(args: argparse.Namespace) -> dict[str, float]:
    """CPU seconds a compressed byte of each kind and compression of dump, by the docs stage's own unit in this process.

    On the sample generator's dumps of ``--kinds-docs`` articles a language, in both
    layouts (classic: CirrusSearch gzip, CirrusSearch bz2 parts, XML bz2; fresh: Enterprise
    HTML, multistream XML), each file read whole once to warm up, then ``--kinds-rounds``
    times (the median). An HTML dump read in ranges also pays its index (~5-10%).
    """
    import statistics

    from clirmatrix.pipeline.extraction.docs import DocsSettings, DocsUnit, extract_unit
    from clirmatrix.pipeline.method.dumps import discover
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    root = Path(args.out).resolve() / "kinds"
    cpu: dict[str, float] = {}
    size: dict[str, int] = {}
    for inputs in ("classic", "fresh"):
        dumps = root / inputs
        if not (dumps / "sample-truth.json").exists():
            write_sample_dumps(dumps, args.kinds_docs, ("en", "ar", "fr"), broken=False, inputs=inputs)
        for files in discover(str(dumps)).docs.values():
            for dump in files:
                key = planning.extract_key(dump.kind, dump.path)
                run = functools.partial(extract_unit, str(root / "docs"), DocsUnit(0, dump), DocsSettings())
                run()
                cpu[key] = cpu.get(key, 0.0) + statistics.median(_process_cpu(run) for _ in range(args.kinds_rounds))
                size[key] = size.get(key, 0) + os.path.getsize(dump.path)
    rates = {key: cpu[key] / size[key] for key in cpu}
    print("extraction, CPU a compressed MB: " + ", ".join(f"{key} {rate * 1e6:.2f} s" for key, rate in sorted(rates.items())), flush=True)
    return rates


def _process_cpu(run) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def plan_inputs(build: dict) -> planning.PlanInputs:
    """A measured build's inputs as ``plan`` takes them, its documents as the build counted them."""
    languages = tuple(
        planning.LanguageInput(lang, files[0][0], tuple((path, size) for _, path, size in files), build["languages"].get(lang, 0), True)
        for lang, files in sorted(build["dump_files"].items())
    )
    return planning.PlanInputs("", languages, tuple((path, size) for path, size in build["link_files"]), build["link_kind"], True)


def local_growth(docs_per_worker: list[float], peaks: list[float]) -> dict | None:
    """``peak = base + a * docs ** p`` over the small local builds: ``p`` on a grid (0.1-1), ``base`` and ``a`` (>= 0) by least squares.

    A local worker keeps what it allocated from unit to unit, so its peak grows with the
    documents it ran through, less than linearly (the allocator reuses freed memory).
    None when the builds do not spread in documents (nothing to fit).
    """
    x, y = np.array(docs_per_worker, dtype=float), np.array(peaks, dtype=float)
    if len(x) < 3 or np.ptp(x) <= 0 or not y.any():
        return None
    best = None
    for p in np.arange(0.1, 1.0001, 0.05):
        columns = np.column_stack([np.ones_like(x), x**p])
        (base, a), *_ = np.linalg.lstsq(columns, y, rcond=None)
        if a < 0:
            base, a = float(y.mean()), 0.0
        error = float(np.sum((base + a * x**p - y) ** 2))
        if best is None or error < best[0]:
            best = (error, float(base), float(a), float(p))
    error, base, a, p = best
    return {"base": round(base, 1), "a": float(f"{a:.4g}"), "p": round(p, 2), "most": float(x.max()), "error": round(error, 1)}


def fit_cost_model(runs: list[dict], small: list[dict], base: dict, workers: int) -> dict:
    """The start-up, memory, disk and release shape parts of the cost model, fitted on the measured builds.

    ``base`` holds the rates already measured (``rates_cpu_seconds``, ``extract_docs_per_byte``,
    ``extract_sitelinks_per_byte``); the plan's own CPU model turns them into each
    stage's work, and what a stage took beyond its work over the workers is its start-up:
    ``fixed + per_unit * units / workers`` fitted over the small local builds, a fixed
    cost alone on Dask (its runs differ in size, hardly in units).
    """
    settings = planning.PlanSettings.of(min_docs=1_000)
    empty = {"fixed": 0.0, "per_unit": 0.0}
    skeleton = {**base, "measured": "", "command": "", "overhead_seconds": {"local": {}, "dask": {}},
                "memory_mb": {"base_mb": {}, "per_amount_mb": {}, "driver_mb": {}}, "disk_bytes": {}}
    model = planning.CostModel.from_dict(skeleton)

    def residuals(build: dict) -> dict[str, tuple[float, float, int]]:
        inputs = plan_inputs(build)
        docs = {lang.lang: lang.documents for lang in inputs.languages if lang.documents >= settings.min_docs}
        n = len(docs)
        shape = planning.Shape(build["full_lines"] / max(sum(docs.values()) * (n - 1), 1), build["full_pairs"] / max(sum(docs.values()) * (n - 1), 1), "")
        units = planning.stage_units(docs, inputs, settings)
        cpu = planning.stage_cpu(inputs, docs, model, settings, shape)
        found = {}
        for stage in STAGE_NAMES:
            parallel = planning.stage_workers(stage, units[stage], workers, workers)
            work, unit_seconds = cpu[stage]
            found[stage] = (build["stages"][stage]["seconds"] - max(work / parallel, unit_seconds), units[stage] / parallel, units[stage])
        return found

    overhead: dict[str, dict[str, dict[str, float]]] = {"local": {}, "dask": {}}
    local = [residuals(build) for build in small]
    for stage in STAGE_NAMES:
        left = np.array([r[stage][0] for r in local])
        spread = np.array([r[stage][1] for r in local])
        if len(local) > 1 and np.ptp(spread) > 0:
            per_unit, fixed = np.polyfit(spread, left, 1)
            if per_unit < 0 or fixed < 0:
                per_unit, fixed = (0.0, float(left.mean())) if per_unit < 0 else (float(np.dot(spread, left) / np.dot(spread, spread)), 0.0)
        else:
            per_unit, fixed = 0.0, float(left.mean()) if len(left) else 0.0
        overhead["local"][stage] = {"fixed": round(max(float(fixed), 0.0), 3), "per_unit": round(max(float(per_unit), 0.0), 4)}
    dask = [residuals(run) for run in runs]
    for stage in STAGE_NAMES:
        overhead["dask"][stage] = {**empty, "fixed": round(max(float(np.median([r[stage][0] for r in dask])), 0.0), 3)} if dask else empty

    # Memory: each stage's worker baseline and its growth with the units a worker runs (allocations kept between units),
    # fitted over the small local builds; Dask's extra from the stage that streams (extract_docs); what grows with the
    # largest unit's documents from the Dask runs.
    base_mb, per_unit_mb, most_units = {}, {}, {}
    for stage in STAGE_NAMES:
        peaks = np.array([build["stages"][stage]["worker_peak_mb"] for build in small])
        spread = np.array([r[stage][1] for r in local])
        slope, intercept = np.polyfit(spread, peaks, 1) if len(small) > 1 and np.ptp(spread) > 0 else (0.0, float(peaks.min()))
        slope = max(float(slope), 0.0)
        base_mb[stage] = round(float(peaks.min()) if slope == 0 else float(intercept), 1)
        per_unit_mb[stage], most_units[stage] = round(slope, 2), float(spread.max())
    offset = float(np.median([run["stages"]["extract_docs"]["worker_peak_mb"] - base_mb["extract_docs"] - per_unit_mb["extract_docs"] for run in runs])) if runs else 0.0
    # Local workers: the peak grows with the documents a worker ran through (the build's over the stage's workers), or
    # with its largest unit's (a language's index, a block): per stage, whichever explains the small builds better.
    growth = {}
    for stage in STAGE_NAMES:
        peaks = [b["stages"][stage]["worker_peak_mb"] for b in small]
        through = local_growth([sum(b["languages"].values()) * r[stage][1] / max(r[stage][2], 1) for b, r in zip(small, local, strict=True)], peaks)
        unit = local_growth([planning.largest_unit_docs(stage, max(b["languages"].values()), settings) for b in small], peaks)
        fits = [(fit["error"], {**fit, "by": by}) for by, fit in (("worker", through), ("unit", unit)) if fit]
        growth[stage] = min(fits, key=lambda pair: pair[0])[1] if fits else None
    per_amount = {}
    for stage in STAGE_NAMES:
        slopes = []
        for run in runs:
            amount = planning.unit_amounts(stage, max(run["languages"].values()), settings)
            if amount > 0:
                slopes.append((run["stages"][stage]["worker_peak_mb"] - base_mb[stage] - per_unit_mb[stage] - offset) / amount)
        per_amount[stage] = float(f"{max(float(np.median(slopes)), 0.0):.4g}") if slopes else 0.0
    driver = {
        "local": max(max(stage["driver_peak_mb"] for stage in build["stages"].values()) for build in small),
        "dask": max((max(stage["driver_peak_mb"] for stage in run["stages"].values()) for run in runs), default=0.0),
    }

    # Disk: WORK and OUT in bytes a document and a document and target language, least squares over every build.
    builds = small + runs
    docs = np.array([sum(b["languages"].values()) for b in builds], dtype=float)
    targets = np.array([sum(b["languages"].values()) * (len(b["languages"]) - 1) for b in builds], dtype=float)
    columns = np.column_stack([docs, targets])
    disk = {}
    for name in ("work", "out"):
        (per_doc, per_target), *_ = np.linalg.lstsq(columns, np.array([b[f"{name}_bytes"] for b in builds], dtype=float), rcond=None)
        disk[f"{name}_per_document"], disk[f"{name}_per_document_and_target"] = round(max(float(per_doc), 0.0), 1), round(max(float(per_target), 0.0), 1)
    queries = sum(sum(b["languages"].values()) * (len(b["languages"]) - 1) for b in small)
    shape = {"lines_per_query_and_target": sum(b["full_lines"] for b in small) / queries, "pairs_per_query_and_target": sum(b["full_pairs"] for b in small) / queries}
    return {
        "overhead_seconds": overhead,
        "memory_mb": {
            "base_mb": base_mb, "per_unit_mb": per_unit_mb, "most_units": most_units, "dask_offset_mb": round(offset, 1), "per_amount_mb": per_amount, "driver_mb": driver,
            "local_growth": {stage: fit for stage, fit in growth.items() if fit},
        },
        "disk_bytes": disk,
        "sample_shape": {key: round(value, 4) for key, value in shape.items()},
    }


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
    parser.add_argument("--report", action="store_true", help="print the tables again from OUT/results.json, without building")
    parser.add_argument("--floor-rounds", type=int, default=5, help="rounds of each part beside its floor (0: none)")
    parser.add_argument("--cost-model", default=str(planning.COST_MODEL), help="where the measured rates are written")
    parser.add_argument("--small-langs", default="en+de,en+de+es+ru", help="the small local builds' language sets (sample dumps), comma-separated")
    parser.add_argument("--small-docs", default="1200,6000", help="articles a language in the small builds, comma-separated (each set at each size)")
    parser.add_argument("--small-rounds", type=int, default=2)
    parser.add_argument("--kinds-docs", type=int, default=3_000, help="articles a language in the dumps extraction is timed on")
    parser.add_argument("--kinds-rounds", type=int, default=3)
    parser.add_argument("--small-only", action="store_true", help="with --report: run the small builds again, the rest from OUT/results.json")
    scale_realistic.add_arguments(parser)
    args = parser.parse_args(argv)
    from clirmatrix.pipeline.method.units import DEFAULT_BLOCK_SIZE, DEFAULT_SHARD_DOCS

    args.shard_docs = args.shard_docs or DEFAULT_SHARD_DOCS
    args.block_size = args.block_size or DEFAULT_BLOCK_SIZE
    this = "python bench/scale_bench.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.realistic:
        scale_realistic.main(args, this)
        return
    results = Path(args.out) / "results.json"
    if args.report:
        saved = renamed_stages(json.loads(results.read_text()))
        runs, settings = saved["runs"], argparse.Namespace(**saved["settings"])
    else:
        runs, settings = [], args
        for size in (int(value) for value in args.sizes.split(",")):
            print(f"\n== {size:,} English articles ==", flush=True)
            runs.append(run_size(size, args))
            print(json.dumps(runs[-1], indent=1), flush=True)
    floors = saved.get("floors", []) if args.report else []
    if not args.report and args.floor_rounds:
        import part_floors

        # Labelling, pairing and writing are projected warm: in a build this small each worker's first unit is much of them.
        runs[-1]["units"]["warm_directions"] = part_floors.direction_costs(runs[-1]["work"], args.floor_rounds)
        runs[-1]["units"]["warm_label_cpu"] = part_floors.label_costs(runs[-1]["work"], args.floor_rounds)
        runs[-1]["units"]["warm_links_cpu"] = part_floors.links_costs(runs[-1]["work"], args.floor_rounds)
        floors = part_floors.measure(part_floors.default_parts(runs[-1]["work"]), args.floor_rounds)
    projection = project(runs, settings.shard_docs)
    if args.report:
        small, extraction = saved.get("small", []), saved.get("extraction", {})
        if args.small_only:
            small = small_builds(args)
    else:
        extraction = extraction_rates(args)
        small = small_builds(args)
    results.parent.mkdir(parents=True, exist_ok=True)
    command = (saved.get("command", "").split(" && ")[0] + (f" && {this}" if args.small_only else "")) if args.report else this
    results.write_text(json.dumps({"runs": runs, "projection": projection, "floors": floors, "small": small, "extraction": extraction, "settings": vars(settings), "command": command}, indent=1))
    print_report(runs, projection, settings)
    if floors:
        import part_floors

        part_floors.print_table(floors)
    write_cost_model(Path(args.cost_model), command, runs, projection, floors, small, extraction, settings.workers)  # --report: the same measurements, projected anew


_RENAMED = {"link": "link_entities", "write": "write_release"}  # the stages' names before 2026-11-26's ninth session


def renamed_stages(saved: dict) -> dict:
    """Results saved before the stages took their modules' names, under the names of today."""
    for run in saved.get("runs", ()):
        run["stages"] = {_RENAMED.get(name, name): value for name, value in run["stages"].items()}
    return saved


def write_cost_model(path: Path, command: str, runs: list[dict], projection: dict, floors: list[dict], small: list[dict], extraction: dict[str, float], workers: int) -> None:
    """The measured rates of every part, dated, for planning a build (``clirmatrix plan``; refreshed by each run of this bench)."""
    import datetime
    import platform

    sitelinks = [run["stages"]["extract_sitelinks"]["cpu_seconds"] / sum(size for _, size in run["link_files"]) for run in runs if run.get("link_files")]
    base = {
        "rates_cpu_seconds": projection["unit_rates"],
        "extract_docs_per_byte": {key: float(f"{rate:.4g}") for key, rate in extraction.items()},
        "extract_sitelinks_per_byte": float(f"{float(np.median(sitelinks)):.4g}") if sitelinks else 0.0,
    }
    model = {
        **base,
        **(fit_cost_model(runs, small, base, workers) if small and extraction else {}),
        "measured": datetime.date.today().isoformat(),
        "command": command,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_implementation()} {platform.python_version()}",
        "sizes": [run["docs"] for run in runs],
        "largest_unit_mb_english": {stage: entry["english_mb"] for stage, entry in projection["memory"].items()},
        "x_floor": {row["part"]: round(row["x_floor"], 2) for row in floors},
    }
    path.write_text(json.dumps(model, indent=1, sort_keys=True) + "\n")
    print(f"\ncost model written to {path}")


def print_report(runs: list[dict], projection: dict, settings: argparse.Namespace) -> None:
    """The per-stage table, the core-hours of the full release and the unit rates, as Markdown."""
    print(f"\n{settings.workers} dask workers ({settings.memory_limit} each), shard_docs {settings.shard_docs:,}, block_size {settings.block_size:,}")
    header = "| stage | " + " | ".join(f"{run['docs'] // 1000:,}k: s / worker MB" for run in runs) + " | growth, last two | English MB (projected) |"
    print(header + "\n|---|" + "---:|" * (len(runs) + 2))
    for stage in STAGE_NAMES:
        cells = [f"{run['stages'][stage]['seconds']:.0f} / {run['stages'][stage]['worker_peak_mb']:,.0f}" for run in runs]
        entry = projection["memory"][stage]
        print(f"| {stage} | " + " | ".join(cells) + f" | {entry['growth_percent']:+.1f}% | {entry['english_mb']:,} |")
    print("driver peak MB: " + ", ".join(f"{max(s['driver_peak_mb'] for s in run['stages'].values()):,.0f}" for run in runs))
    print("\n| part | core-hours: " + " | ".join(SCENARIOS) + " |\n|---|" + "---:|" * len(SCENARIOS))
    for part, values in projection["core_hours"].items():
        print(f"| {part} | " + " | ".join(f"{value:,.1f}" for value in values) + " |")
    after = [values for part, values in projection["core_hours"].items() if not part.startswith("extract_")]
    print("| **after extraction** | " + " | ".join(f"**{sum(column):,.1f}**" for column in zip(*after)) + " |")
    columns = zip(*projection["core_hours"].values())
    print("| **total** (extraction from the generator's CirrusSearch dumps) | " + " | ".join(f"**{sum(column):,.0f}**" for column in columns) + " |")
    print("\nrates at the largest size: " + "; ".join(f"{k} {v}" for k, v in projection["rates"].items()))


if __name__ == "__main__":
    main()
