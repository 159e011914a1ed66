"""``clirmatrix export`` per format beside its floor: writing the same bytes with no conversion.

On a build (``--build OUT``, or one made here from the sample generator's 8 languages,
``--docs`` articles each, kept in ``--work`` for the next run), each round exports the
build as ``hf``, ``beir`` and ``pyserini`` into a fresh folder (its units on ``--workers``
local processes), then copies the files that export wrote into another fresh folder (one
process): the same bytes written, read back from the page
cache, with no parsing, no JSON or Parquet encoding and no compression. Formats and the
two sides alternate; medians and ranges over ``--rounds``.

Usage: python bench/export_bench.py [--docs 20000] [--rounds 3] [--workers 2] [--work bench/out/export] [--build OUT]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from dataclasses import replace
from pathlib import Path

from clirmatrix.beam_jobs.export import run_export
from clirmatrix.pipeline.output.layout import EXPORT_FORMATS
from clirmatrix.pipeline.tools.export import plan_export


def make_build(work: Path, docs: int) -> Path:
    """The sample generator's 8 languages at ``docs`` articles each, built once (kept for later runs)."""
    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.config import BuildConfig
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    out = work / f"build-{docs}"
    if (out / "manifest.json").is_file():
        return out
    dumps = work / f"dumps-{docs}"
    shutil.rmtree(dumps, ignore_errors=True)
    write_sample_dumps(dumps, docs_per_lang=docs, inputs="classic")
    run_build(replace(BuildConfig(), dumps=str(dumps), out=str(out), min_docs=1_000, workers=2))
    return out


def copy_tree(source: Path, target: Path) -> int:
    """Every file of an export (its hidden reports aside) written again elsewhere: the floor. Returns the bytes written."""
    written = 0
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
            written += path.stat().st_size
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="bench/out/export")
    parser.add_argument("--build", default=None, help="an existing build to export instead of one made here")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes of the export")
    args = parser.parse_args(argv)
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    build = Path(args.build) if args.build else make_build(work, args.docs)
    plans = {fmt: plan_export(build, fmt) for fmt in EXPORT_FORMATS}
    seconds: dict[str, dict[str, list[float]]] = {fmt: {"export": [], "floor": []} for fmt in EXPORT_FORMATS}
    sizes: dict[str, int] = {}
    for round_number in range(args.rounds):
        order = EXPORT_FORMATS if round_number % 2 == 0 else tuple(reversed(EXPORT_FORMATS))
        for fmt in order:
            target, floor = work / f"{fmt}-export", work / f"{fmt}-floor"
            shutil.rmtree(target, ignore_errors=True)
            shutil.rmtree(floor, ignore_errors=True)
            started = time.perf_counter()
            run_export(plans[fmt], str(target), workers=args.workers)
            seconds[fmt]["export"].append(time.perf_counter() - started)
            started = time.perf_counter()
            sizes[fmt] = copy_tree(target, floor)
            seconds[fmt]["floor"].append(time.perf_counter() - started)
            print(f"round {round_number + 1} {fmt}: export {seconds[fmt]['export'][-1]:.1f} s, floor {seconds[fmt]['floor'][-1]:.2f} s", flush=True)
    print(f"\nbuild {build}: {len(plans['hf'].tasks):,} units a format on {args.workers} workers, {args.rounds} rounds, seconds median (range)\n")
    print("| format | files | MB written | export (s) | floor: the same bytes copied (s) | export / floor |\n|---|---:|---:|---:|---:|---:|")
    for fmt in EXPORT_FORMATS:
        ours, floor = seconds[fmt]["export"], seconds[fmt]["floor"]
        ratios = [a / b for a, b in zip(ours, floor, strict=True)]
        print(f"| {fmt} | {len(plans[fmt].tasks):,} | {sizes[fmt] / 1e6:,.0f} | {statistics.median(ours):.1f} ({min(ours):.1f}-{max(ours):.1f}) "
              f"| {statistics.median(floor):.2f} ({min(floor):.2f}-{max(floor):.2f}) | {statistics.median(ratios):.1f} ({min(ratios):.1f}-{max(ratios):.1f}) |")


if __name__ == "__main__":
    main()
