"""Released query files -> ``OUT/stats/``: the Table 7.1-7.4 numbers as TSV and heat maps (PIPELINE.md section 10).

One unit of work per query file (counted in parallel); the driver then writes
the tables and the PNG heat maps. Works on any build.

Example::

    python -m clirmatrix.beam_jobs.stats --out out/ --work out/.work
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator, Sequence
from dataclasses import asdict

import apache_beam as beam

from clirmatrix.beam_jobs import common, stages
from clirmatrix.pipeline import fileio, layout
from clirmatrix.pipeline.stats import DirectionStats, direction_stats, write_stats

LOG = logging.getLogger("clirmatrix")


class CountFile(beam.DoFn):
    """One released query file -> its direction statistics, as a report."""

    def __init__(self, out_root: str, report_dir: str) -> None:
        self.out_root = out_root
        self.report_dir = report_dir

    def process(self, relative: str) -> Iterator[str]:
        row = direction_stats(fileio.join(self.out_root, relative))
        name = relative.replace("/", "__")
        common.write_report(self.report_dir, name, {"path": relative, "stats": asdict(row)})
        yield relative


def run_stats(out_root: str, work_root: str, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Count every released query file and write ``stats/``."""
    report_dir = fileio.join(work_root, "stats")
    common.start_stage(report_dir)
    released = common.require_complete(fileio.join(work_root, "release"), "release")
    files = [entry["path"] for entry in released["files"] if layout.parse_path(entry["path"]).dataset in layout.QUERY_SETS]
    stages.run_units("CountFile", files, CountFile(out_root, report_dir), beam_args, workers)
    rows = [DirectionStats(**report["stats"]) for report in sorted(common.read_reports(report_dir), key=lambda r: r["path"])]
    written = write_stats(out_root, rows, fileio.join(out_root, layout.STATS_DIR))
    summary = {"stage": "stats", "files": len(rows), "written": [str(path) for path in written] if written else []}
    common.finish_stage(report_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    args, beam_args = parser.parse_known_args(argv)
    return run_stats(args.out, args.work, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
