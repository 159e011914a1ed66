"""The seek index of a huge .tar.gz in one pass, or in parts joined: CPU in all, the largest unit, and what the join decodes again.

For a dump (a realistic one: ``bench/realistic_dumps.py --formats html --gzip-level 6``)
it measures, interleaved round by round in one process (``--rounds``; medians and
ranges of CPU seconds):

- ``one pass``: ``gzip_index.build_index``, the whole file in one unit (the floor of
  the work: inflating every byte once, CRC and newlines);
- ``parts`` at each ``--part-mb``: every ``gzip_parts.index_part`` (their sum, and the
  largest, which is what bounds a unit) and ``join_parts`` (the one unit a dump that
  runs after them), with the head bytes decoded twice in a part and again in the join.

It checks that both indexes give the same members and line counts. Projection: the
largest part's CPU at a 1 GB part (the stage's default is 512 MB) from its MB/s.

Usage: python bench/gzip_parts_bench.py DUMP.tar.gz [--part-mb 16,64] [--rounds 3] [--spacing-mb 64]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.io import gzip_index, gzip_parts


def _cpu(function):
    started = time.process_time()
    result = function()
    return time.process_time() - started, result


def one_pass(path: Path, spacing: int) -> tuple[float, gzip_index.GzipIndex]:
    with path.open("rb") as raw:
        return _cpu(lambda: gzip_index.build_index(raw, str(path), spacing, tar=True))


def in_parts(path: Path, part_bytes: int, spacing: int) -> dict:
    size = path.stat().st_size
    times, parts = [], []
    for number in range(gzip_parts.plan_parts(size, part_bytes)):
        seconds, part = _cpu(lambda number=number: gzip_parts.index_part(lambda: path.open("rb"), str(path), number, part_bytes, spacing))
        times.append(seconds)
        parts.append(part)
    with path.open("rb") as raw:
        join_seconds, (index, report) = _cpu(lambda: gzip_parts.join_parts(raw, str(path), parts, spacing, tar=True))
    return {"parts": times, "join": join_seconds, "index": index, "report": report, "heads": [p.head for p in parts[1:] if not p.empty]}


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", type=Path)
    parser.add_argument("--part-mb", type=comma_list, default=["16", "64"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spacing-mb", type=int, default=64)
    args = parser.parse_args()
    spacing = args.spacing_mb << 20
    size = args.dump.stat().st_size
    sizes = [int(float(mb) * (1 << 20)) for mb in args.part_mb]
    results: dict[str, list] = {"one pass": []}
    truth = None
    for _ in range(args.rounds):
        seconds, index = one_pass(args.dump, spacing)
        results["one pass"].append(seconds)
        truth = index
        for part_bytes in sizes:
            found = in_parts(args.dump, part_bytes, spacing)
            if found["index"].members != truth.members or found["index"].uncompressed_size != truth.uncompressed_size:
                raise SystemExit(f"parts of {part_bytes:,} bytes gave other members than one pass")
            results.setdefault(part_bytes, []).append(found)
    base = statistics.median(results["one pass"])
    print(f"{args.dump.name}: {size / 1e6:,.1f} MB compressed, {truth.uncompressed_size / 1e6:,.1f} MB decoded, {len(truth.members)} tar members")
    print(f"one pass: {_summary(results['one pass'])} CPU s, {size / 1e6 / base:.1f} MB/s compressed")
    for part_bytes in sizes:
        runs = results[part_bytes]
        total = [sum(r["parts"]) + r["join"] for r in runs]
        largest = [max(r["parts"]) for r in runs]
        joins = [r["join"] for r in runs]
        heads = runs[0]["heads"]
        print(
            f"parts of {part_bytes / (1 << 20):g} MiB ({len(runs[0]['parts'])}): all {_summary(total)} CPU s = {statistics.median(total) / base:.2f}x one pass; "
            f"largest part {_summary(largest)}; join {_summary(joins)}; heads median {statistics.median(heads) / 1e3:,.0f} kB, "
            f"largest {max(heads) / 1e3:,.0f} kB ({sum(heads) / truth.uncompressed_size:.1%} of the stream); fetched {runs[0]['report']['fetched_bytes']:,} bytes"
        )
        rate = part_bytes / 1e6 / statistics.median(largest)
        print(f"    a 1 GB part at {rate:.0f} MB/s compressed: {1000 / rate:.0f} s of one core")


if __name__ == "__main__":
    main()
