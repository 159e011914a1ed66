"""Wikidata JSON dump -> ``sitelinks`` Parquet (entity, lang, title) for the selected languages.

Each dump file (``latest-all.json.gz``, or several shards) is read by one DoFn; a
line without the quoted site key of any selected language is skipped unparsed
(see ``clirmatrix.pipeline.formats.wikidata``), the rest are parsed with orjson.
Output: ``{out}/{lang}/{NNNNN}-{dump name}.parquet`` in dump order.

Example::

    python -m clirmatrix.beam_jobs.extract_sitelinks --wikidata dumps/latest-all.json.gz \\
        --out work/sitelinks --langs en,de,zh
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections import Counter
from collections.abc import Iterator, Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.badinput import DEFAULT_MAX_BAD_FRACTION, FileReport, check_bad_fraction
from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.formats.wikidata import SitelinkFilter, read_sitelinks
from clirmatrix.pipeline.parquet_io import ParquetSink
from clirmatrix.pipeline.progress import ProgressLog
from clirmatrix.schemas import SITELINKS

LOG = logging.getLogger("clirmatrix")


class ExtractSitelinksFile(common.StorageDoFn):
    """One Wikidata dump file -> one sitelinks Parquet file per selected language."""

    def __init__(self, out_dir: str, langs: Sequence[str], prefilter: bool = True, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.out_dir = out_dir
        self.langs = sorted(langs)
        self.prefilter = prefilter

    def process(self, unit: tuple[int, str]) -> Iterator[str]:
        rank, path = unit
        selection = SitelinkFilter(self.langs, self.prefilter)
        report = FileReport(file=path)
        stem = fileio.basename(path).split(".")[0]
        per_lang = Counter()
        with contextlib.ExitStack() as stack:
            sinks = {
                lang: stack.enter_context(ParquetSink(fileio.join(self.out_dir, lang, f"{rank:05d}-{stem}.parquet"), SITELINKS))
                for lang in self.langs
            }
            raw = stack.enter_context(fileio.open_raw(path))
            progress = ProgressLog(f"wikidata {fileio.basename(path)}", fileio.size_of(path), raw.tell, unit="sitelinks")  # ticked per sitelink kept
            for line in read_sitelinks(fileio.iter_lines(fileio.open_dump(raw, path), report), selection, report):
                sinks[line.lang].add(line)
                per_lang[line.lang] += 1
                progress.tick()
            seconds = progress.finish()
        name = f"{rank:05d}-{stem}"
        common.write_report(
            self.out_dir, name, {"rank": rank, "seconds": round(seconds, 3), "sitelinks": dict(sorted(per_lang.items())), "report": report.to_dict()}
        )
        yield name


class ExtractSitelinks(beam.PTransform):
    """``(rank, path)`` of Wikidata dump files -> per-language sitelinks Parquet; outputs each file's name."""

    def __init__(self, out_dir: str, langs: Sequence[str], prefilter: bool = True, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.out_dir = out_dir
        self.langs = sorted(langs)
        self.prefilter = prefilter
        self.beam_args = list(beam_args)

    def expand(self, files):
        # One element per dump file; each is read whole by one worker, every line in order.
        return files | "ReadWikidataFile" >> beam.ParDo(ExtractSitelinksFile(self.out_dir, self.langs, self.prefilter, self.beam_args))


def run_extract_sitelinks(
    wikidata_files: Sequence[str],
    langs: Sequence[str],
    out_dir: str,
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION,
    beam_args: Sequence[str] = (),
    workers: int | None = None,
    prefilter: bool = True,
) -> dict:
    """Run the stage and return its summary; raises ``TooManyBadRecords`` past the limit."""
    if not wikidata_files:
        raise FileNotFoundError("no Wikidata dump (latest-all.json.gz or wikidata-YYYYMMDD-all.json.gz) was given")
    units = list(enumerate(sorted(wikidata_files)))
    common.start_stage(out_dir)
    common.run_stage("ExtractSitelinks", units, ExtractSitelinks(out_dir, langs, prefilter, beam_args), beam_args, workers)
    units_done = sorted(common.read_reports(out_dir), key=lambda unit: unit["rank"])
    reports = [FileReport.from_dict(unit["report"]) for unit in units_done]
    check_bad_fraction({report.file: [report] for report in reports}, max_bad_fraction, unit="entity lines")  # a Wikidata record is an entity line
    totals = Counter()
    for unit in units_done:
        totals.update(unit["sitelinks"])
    summary = {
        "stage": "sitelinks",
        "languages": {lang: totals.get(lang, 0) for lang in sorted(langs)},
        "entities_read": sum(r.records for r in reports),
        "entities_with_sitelinks": sum(r.kept for r in reports),
        "rejected": dict(sorted(sum((r.rejected for r in reports), Counter()).items())),
        "files": [fileio.basename(r.file) for r in reports],
        "max_bad_fraction": max_bad_fraction,
    }
    common.finish_stage(out_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wikidata", required=True, nargs="+", help="Wikidata dump file(s)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--langs", required=True, type=comma_list)
    parser.add_argument("--max-bad-fraction", type=float, default=DEFAULT_MAX_BAD_FRACTION)
    parser.add_argument("--no-prefilter", action="store_true", help="parse every line (slower; same result)")
    args, beam_args = parser.parse_known_args(argv)
    return run_extract_sitelinks(args.wikidata, args.langs, args.out, args.max_bad_fraction, beam_args, prefilter=not args.no_prefilter)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
