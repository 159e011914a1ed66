"""Extraction throughput against the cost of just decompressing and parsing the same dump.

Writes a generated CirrusSearch dump (default 1,000,000 documents of ~5 KB in 8 gzip
parts, like a split dump; ``--docs 100000`` for a quicker run) and a Wikidata dump,
then measures, wall clock:

- baselines, in one process: decompress and ``orjson.loads`` every line. The
  reference is the plain baseline, stdlib gzip on one core; beside it, stricter, the
  same with the job's own decompressor (isal) on one core and with isal inflating
  in a second thread;
- the docs job (``run_extract_docs``) on the DirectRunner's in-process FnApiRunner
  with 1 worker and with 2 worker processes;
- the sitelinks job with and without the pre-filter.

Every figure is the median of ``--runs`` runs (wall clock, start-up included); the
CPU per document (driver and worker processes) is reported beside it, with the load
average, since a busy machine slows the wall clock far more than the CPU. Two views
leave the start-up out, each labelled: the wall clock minus that of the same job on
a tiny dump with as many parts (10 documents each: Beam's start-up, worker
processes and the stages around the files), and the steady state inside the DoFn.
``--reuse`` keeps a corpus generated earlier with the same size; ``--modes`` picks
how the 2 workers run (multi_processing, multi_threading, or both).

Usage: python bench/extract_bench.py [--docs 1000000] [--parts 8] [--runs 3] [--reuse] [--out bench/out]
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import json
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

import orjson
from isal import igzip, igzip_threaded

from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.method.dumps import WIKIDATA_JSON, LinkInputs


def _sentences(seed: int) -> list[str]:
    """The corpus's 20,000 sentences of random words, the same in every part."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 11))) for _ in range(30000)]
    return [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(6, 24))).capitalize() + "." for _ in range(20000)]


def _write_part(job: tuple[Path, int, int, int]) -> Path:
    path, first, last, seed = job
    sentences = _sentences(seed)
    rng = random.Random(seed * 1_000_003 + first)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
        for i in range(first, last):
            text = " ".join(rng.choice(sentences) for _ in range(rng.randint(20, 60)))
            document = {
                "version": i, "wiki": "enwiki", "namespace": 0, "namespace_text": "", "title": f"Title {i}",
                "timestamp": "2024-03-01T00:00:00Z", "text": text, "opening_text": text[:200], "language": "en",
                "redirect": [], "incoming_links": i % 97, "wikibase_item": f"Q{i + 1}", "page_id": i + 1,
            }
            gz.write(orjson.dumps({"index": {"_id": str(i + 1)}}) + b"\n" + orjson.dumps(document) + b"\n")
    return path


def write_cirrus_parts(out: Path, n_docs: int, parts: int, seed: int = 1) -> list[Path]:
    """A gzip CirrusSearch dump in ``parts`` files (gzip level 6, as Wikimedia writes them).

    Each part has its own seeded generator, so the parts are written in parallel and
    the corpus is the same whatever the number of processes.
    """
    per_part = -(-n_docs // parts)
    jobs = [
        (out / "bench_content" / f"enwiki_content-20240301-{part:05d}.json.gz", part * per_part, min(n_docs, (part + 1) * per_part), seed)
        for part in range(parts)
    ]
    with multiprocessing.Pool(min(parts, os.cpu_count() or 1)) as pool:
        return pool.map(_write_part, jobs)


def write_wikidata(out: Path, n_entities: int, langs: list[str], seed: int = 2) -> Path:
    rng = random.Random(seed)
    sites = [f"{code}wiki" for code in ("en", "de", "fr", "es", "it", "nl", "pl", "sv", "ja", "zh", "ru", "ar", "ceb", "war", "vi", "uk")]
    path = out / "latest-all.json.gz"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(b"[\n")
        for i in range(n_entities):
            links = {s: {"site": s, "title": f"T{i} {s}", "badges": []} for s in rng.sample(sites, rng.randint(0, 6))}
            claims = {f"P{p}": [{"mainsnak": {"property": f"P{p}", "datavalue": {"value": "x" * rng.randint(5, 80)}}}] for p in rng.sample(range(1, 3000), 25)}
            entity = {"type": "item", "id": f"Q{i + 1}", "labels": {"en": {"language": "en", "value": f"T{i}"}}, "claims": claims, "sitelinks": links}
            gz.write(json.dumps(entity, separators=(",", ":")).encode() + (b",\n" if i < n_entities - 1 else b"\n"))
        gz.write(b"]\n")
    return path


def baseline(paths: list[Path], opener) -> tuple[int, float]:
    start, lines = time.perf_counter(), 0
    for path in paths:
        with opener(path) as stream:
            for line in stream:
                orjson.loads(line)
                lines += 1
    return lines // 2, time.perf_counter() - start


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (Beam's worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def median_run(runs: int, job) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of ``runs`` calls of ``job``."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), cpu_seconds()
        job()
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu_seconds() - cpu)
    return statistics.median(walls), statistics.median(cpus)


BASELINES = {
    # name -> opener. The first is the reference: "decompress + orjson parse only,
    # stdlib gzip, one process", the baseline the extraction target is set against.
    "baseline_stdlib_gzip": lambda p: gzip.open(p, "rb"),
    # Stricter: the job's own decompressor on one core, and inflating in a second thread.
    "baseline_isal_1_thread": lambda p: igzip.open(p, "rb"),
    "baseline_isal_2_threads": lambda p: igzip_threaded.open(p, "rb", threads=1),
}
REFERENCE = "baseline_stdlib_gzip"
STRICT = "baseline_isal_1_thread"
TARGET = 0.5  # the 2-worker job, per core, against the one-core reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="median of this many runs per measure")
    parser.add_argument("--reuse", action="store_true", help="keep the corpus of an earlier run of the same size")
    parser.add_argument("--modes", type=comma_list, default=["multi_processing"], help="how the 2 workers run: multi_processing, multi_threading or both")
    parser.add_argument("--no-wikidata", action="store_true", help="skip the sitelinks job")
    parser.add_argument("--out", default="bench/out")
    args = parser.parse_args()

    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
    from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
    from clirmatrix.pipeline.method.dumps import discover

    out = Path(args.out)
    corpus = out / "dumps" / f"{args.docs}x{args.parts}.json"
    if not (args.reuse and corpus.exists()):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        t0 = time.perf_counter()
        write_cirrus_parts(out / "dumps", args.docs, args.parts)
        corpus.write_text("{}")
        print(f"generated {args.docs:,} documents in {time.perf_counter() - t0:.0f} s")
    tiny = out / f"tiny-{args.parts}"
    if not (tiny / "dumps").exists():  # the fixed cost: as many parts, 10 documents each
        write_cirrus_parts(tiny / "dumps", 10 * args.parts, args.parts)
    paths = sorted((out / "dumps" / "bench_content").glob("*.json.gz"))
    wikidata = out / "dumps" / "latest-all.json.gz"
    if not args.no_wikidata and not wikidata.exists():
        write_wikidata(out / "dumps", args.entities, ["en"])
    size = sum(p.stat().st_size for p in paths)
    print(f"{args.docs:,} documents in {len(paths)} gzip parts ({size / 1e6:.0f} MB); load average {os.getloadavg()[0]:.1f}")

    found = discover(str(out / "dumps"))
    assert [Path(d.path) for d in found.docs["en"]] == paths  # the job reads exactly the baseline's files

    results, cpu, steady, fixed, cores = {}, {}, {}, {}, {}
    for name, opener in BASELINES.items():
        seconds, cpu[name] = median_run(args.runs, lambda opener=opener: baseline(paths, opener))
        results[name], cores[name] = args.docs / seconds, 1

    settings = DocsSettings(min_docs=1)
    tiny_found = discover(str(tiny / "dumps"))
    jobs = [("beam_1_worker", 1, None)] + [(f"beam_2_{'processes' if mode == 'multi_processing' else 'threads'}", 2, mode) for mode in args.modes]
    for name, workers, mode in jobs:
        beam_args = ["--runner=FnApiRunner", f"--direct_num_workers={workers}", f"--direct_running_mode={mode}"] if mode else []

        def job(dumps=found.docs, target=out / name, expected=args.docs, beam_args=beam_args, workers=workers) -> None:
            summary = ExtractDocs(str(target), dumps, settings).run(beam_args, workers)  # into target/docs
            assert summary.languages["en"].docs == expected

        seconds, cpu[name] = median_run(args.runs, job)
        results[name], cores[name] = args.docs / seconds, workers
        fixed[name], _ = median_run(args.runs, lambda: job(tiny_found.docs, out / "tiny-docs", 10 * args.parts))
        # Steady state: time spent inside the DoFn on the files (from the last run's
        # reports), spread over the workers; what the job would reach without start-up.
        units = json.loads((out / name / "docs" / "_reports" / "en.json").read_text())["units"]
        steady[name] = args.docs / (sum(unit["seconds"] for unit in units) / workers)
    outputs = [sorted((out / name / "docs" / "en").glob("*.parquet")) for name, _, _ in jobs]
    for other in outputs[1:]:
        assert len(other) == len(outputs[0]) and all(filecmp.cmp(a, b, shallow=False) for a, b in zip(outputs[0], other)), "1 and 2 workers wrote different files"
    docs_mb = sum(p.stat().st_size for p in outputs[0]) / 1e6

    wikidata_seconds = {}
    wikidata_runs = (
        ("1 language, pre-filter", ["sv"], True), ("1 language, full parse", ["sv"], False),
        ("8 languages, pre-filter", ["ar", "de", "en", "es", "fr", "ja", "ru", "zh"], True),
    )
    for label, langs, prefilter in () if args.no_wikidata else wikidata_runs:
        start = time.perf_counter()
        ExtractSitelinks(str(out), LinkInputs.wikidata_wide(WIKIDATA_JSON, [str(wikidata)]), langs, prefilter=prefilter).run(workers=1)
        wikidata_seconds[label] = time.perf_counter() - start

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    base, strict = results[REFERENCE], results[STRICT]
    print(f"\nstart-up included, median of {args.runs} runs; % of {REFERENCE} (the reference) and of {STRICT} (the job's decompressor)")
    print(f"{'':28} {'docs/s':>9} {'CPU us/doc':>11} {'% of stdlib':>12} {'per core':>9} {'% of isal':>10} {'per core':>9}")
    for name, rate in results.items():
        print(
            f"{name:28} {rate:9,.0f} {cpu[name] / args.docs * 1e6:11.1f} {rate / base:12.0%} {rate / cores[name] / base:9.0%}"
            f" {rate / strict:10.0%} {rate / cores[name] / strict:9.0%}"
        )
    print(f"\nstart-up left out (docs/s, % of {REFERENCE} / of {STRICT}):")
    for name, rate in steady.items():
        left = args.docs / results[name] - fixed[name]
        net = args.docs / left if left > 0.1 else None  # a dump this small is all start-up
        shown = f"{net:9,.0f} ({net / base:.0%} / {net / strict:.0%})" if net else f"{'n/a':>9} (too small a dump)"
        print(f"  {name:26} wall minus the tiny dump's {fixed[name]:.1f} s: {shown};  inside the DoFn: {rate:9,.0f} ({rate / base:.0%} / {rate / strict:.0%})")
    print(f"\ntarget: the job with 2 workers, per core, at least {TARGET:.0%} of the one-process baseline (start-up included)")
    for name in (n for n in results if cores[n] == 2):  # the 2-worker jobs
        per_core = results[name] / 2
        for label, rate in ((REFERENCE, base), (STRICT + " (stricter)", strict)):
            verdict = "met" if per_core >= TARGET * rate else "not met"
            print(f"  {name:18} against {label:34} {per_core / rate:5.0%}  {verdict}")
    print(f"docs Parquet: {docs_mb:.0f} MB; load average now {os.getloadavg()[0]:.1f}")
    if wikidata_seconds:
        print(f"\nWikidata sitelinks job, {args.entities:,} entities (one gzip file):")
        for label, seconds in wikidata_seconds.items():
            print(f"  {label:30} {args.entities / seconds:10,.0f} entities/s")
    print(f"\npeak RSS of the driver process: {peak_mb:,.0f} MB (python {sys.version.split()[0]})")
    record = {
        "docs": args.docs, "parts": args.parts, "docs_per_s": results, "cpu_seconds": cpu, "steady_docs_per_s": steady, "fixed_seconds": fixed,
        "docs_parquet_mb": docs_mb, "wikidata_seconds": wikidata_seconds, "peak_rss_mb": peak_mb,
    }
    (out / "results.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
