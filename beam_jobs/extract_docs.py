"""Wikipedia dumps (CirrusSearch or MediaWiki XML) -> ``docs`` Parquet, one folder per language.

Reads each dump file whole inside one DoFn (gzip and bz2 cannot be split, and the
action/document pairing must stay intact), truncates every article (docs/method.md
section 2) and streams it into ``{out}/{lang}/{NNNNN}-{dump name}.parquet``, one
output per input in dump order, so the result does not depend on the runner.
Per language, repeated ids are then removed (first occurrence wins) and a
language below ``--min-docs`` is dropped.

Example::

    python -m clirmatrix.beam_jobs.extract_docs --dumps dumps/ --out work/docs --langs en,de
    python -m clirmatrix.beam_jobs.extract_docs --dumps gs://b/dumps --out gs://b/work/docs \\
        --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp
"""

from __future__ import annotations

import argparse
import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import BinaryIO

import apache_beam as beam
from apache_beam.metrics import Metrics

from clirmatrix.beam_jobs import common
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.badinput import DEFAULT_MAX_BAD_FRACTION, FileReport, check_bad_fraction
from clirmatrix.pipeline.config import DEFAULT_MIN_DOCS, comma_list
from clirmatrix.pipeline.dedup import drop_duplicate_ids
from clirmatrix.pipeline.dumps import CIRRUS, DumpFile, discover
from clirmatrix.pipeline.formats import cirrus, mediawiki_xml
from clirmatrix.pipeline.languages import is_unspaced
from clirmatrix.pipeline.parquet_io import ParquetSink, row_counts
from clirmatrix.pipeline.progress import ProgressLog
from clirmatrix.pipeline.truncate import DEFAULT_MAX_CHARS, DEFAULT_MAX_TOKENS, rule_for
from clirmatrix.pipeline.truncate_arrow import truncate_array
from clirmatrix.schemas import DOCS

LOG = logging.getLogger("clirmatrix")
DUPLICATE_ID = "duplicate_id"
# Rows carry two texts (~6 KB in the benchmark): 2,000 of them keep the batch in memory the
# allocators reuse; 10,000 (the default) made every flush fault in fresh pages (twice the
# page faults, 5-10% more CPU, 1.8x the peak memory of a worker).
ROWS_PER_GROUP = 2_000


@dataclass(frozen=True)
class DocsSettings:
    """Settings of the docs stage (recorded in its ``_SUCCESS.json``)."""

    min_docs: int = DEFAULT_MIN_DOCS
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_chars: int = DEFAULT_MAX_CHARS
    extra_unspaced: tuple[str, ...] = ()


def output_path(out_dir: str, dump: DumpFile, rank: int) -> str:
    """``{out}/{lang}/{rank}-{dump name without extensions}.parquet``: sorts in dump order."""
    stem = fileio.basename(dump.path).split(".")[0]
    return fileio.join(out_dir, dump.lang, f"{rank:05d}-{stem}.parquet")


def read_dump(raw: BinaryIO, dump: DumpFile, report: FileReport, background_inflate: bool = False) -> Iterator[cirrus.Article]:
    """The articles of one opened dump file, in dump order; every record lands in ``report``."""
    stream = fileio.open_dump(raw, dump.path, background_inflate)
    if dump.kind == CIRRUS:
        return cirrus.read_articles(fileio.iter_lines(stream, report), report)
    return mediawiki_xml.read_articles(stream, report)


class ExtractDumpFile(common.StorageDoFn):
    """One dump file -> one docs Parquet file; emits ``(lang, unit report)``."""

    def __init__(self, out_dir: str, settings: DocsSettings, background_inflate: bool = False, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.out_dir = out_dir
        self.settings = settings
        self.background_inflate = background_inflate
        self.kept = Metrics.counter("clirmatrix", "docs_kept")
        self.rejected = Metrics.counter("clirmatrix", "records_rejected")

    def process(self, unit: tuple[int, DumpFile]) -> Iterator[tuple[str, dict]]:
        rank, dump = unit
        report = FileReport(file=dump.path, lang=dump.lang)
        rule = rule_for(is_unspaced(dump.lang, set(self.settings.extra_unspaced)), self.settings.max_tokens, self.settings.max_chars)
        out_path = output_path(self.out_dir, dump, rank)
        dump_name = fileio.basename(dump.path)
        # The truncated text is cut from each batch of full texts in compiled code.
        derived = {"text": lambda columns: truncate_array(columns["text_full"], rule)}
        with fileio.open_raw(dump.path) as raw, ParquetSink(out_path, DOCS, ROWS_PER_GROUP, derived) as sink:
            progress = ProgressLog(f"{dump.lang} {dump_name}", fileio.size_of(dump.path), raw.tell)
            for article in read_dump(raw, dump, report, self.background_inflate):
                sink.add((dump.lang, article.doc_id, article.title, article.text, article.entity, dump_name, article.line))
                progress.tick()
            seconds = progress.finish()
        self.kept.inc(report.kept)
        self.rejected.inc(report.bad)
        yield dump.lang, {"rank": rank, "output": out_path, "seconds": round(seconds, 3), "report": report.to_dict()}


class FinalizeLanguage(common.StorageDoFn):
    """All files of a language done: drop repeated ids, apply ``min_docs``, write its report."""

    def __init__(self, out_dir: str, min_docs: int, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.out_dir = out_dir
        self.min_docs = min_docs

    def process(self, element: tuple[str, Sequence[dict]]) -> Iterator[str]:
        lang, units = element
        units = sorted(units, key=lambda unit: unit["rank"])
        paths = [unit["output"] for unit in units]
        drop_duplicate_ids(paths)
        # Counted from the files, not from what this call removed: a retried bundle finds the
        # duplicates already gone and must report the same numbers.
        docs = sum(row_counts(paths))
        duplicates = sum(unit["report"]["kept"] for unit in units) - docs
        dropped = docs < self.min_docs  # its files are removed by the driver, once: a retry finds them still here
        summary = {"lang": lang, "docs": docs, "duplicates": duplicates, "dropped": dropped, "units": units}
        common.write_report(self.out_dir, lang, summary)
        yield lang


class ExtractDocs(beam.PTransform):
    """``(rank, DumpFile)`` units -> per-language docs Parquet; outputs the finished languages."""

    def __init__(self, out_dir: str, settings: DocsSettings, background_inflate: bool = False, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.out_dir = out_dir
        self.settings = settings
        self.background_inflate = background_inflate
        self.beam_args = list(beam_args)

    def expand(self, units):
        return (
            units
            # One element per dump file; each file is read whole by one worker.
            | "ReadDumpFile" >> beam.ParDo(ExtractDumpFile(self.out_dir, self.settings, self.background_inflate, self.beam_args))
            # (lang, unit report) for every file of every language.
            | "GroupByLanguage" >> beam.GroupByKey()
            | "FinalizeLanguage" >> beam.ParDo(FinalizeLanguage(self.out_dir, self.settings.min_docs, self.beam_args))
        )


def run_extract_docs(
    dumps: dict[str, list[DumpFile]],
    out_dir: str,
    settings: DocsSettings = DocsSettings(),
    beam_args: Sequence[str] = (),
    workers: int | None = None,
) -> dict:
    """Run the stage and return its summary; raises ``TooManyBadRecords`` past the limit."""
    units = [(rank, dump) for lang in sorted(dumps) for rank, dump in enumerate(dumps[lang])]
    common.start_stage(out_dir)
    workers = workers or common.default_workers(len(units))
    # A second inflating thread pays only where a core is spare: one local worker on a
    # multi-core machine. With a worker per core (or on a cluster) it only competes.
    background_inflate = workers == 1 and (os.cpu_count() or 1) > 1 and not common.names_runner(beam_args)
    common.run_stage("ExtractDocs", units, ExtractDocs(out_dir, settings, background_inflate, beam_args), beam_args, workers)
    summaries = sorted(common.read_reports(out_dir), key=lambda summary: summary["lang"])
    reports = {s["lang"]: [FileReport.from_dict(unit["report"]) for unit in s["units"]] for s in summaries}
    check_bad_fraction(reports, settings.max_bad_fraction)
    summary = _summarise(summaries, settings)
    for lang, entry in summary["dropped"].items():
        fileio.remove_tree(fileio.join(out_dir, lang))
        LOG.warning("%s dropped: %s documents, fewer than --min-docs %s", lang, f"{entry['docs']:,}", f"{settings.min_docs:,}")
    common.finish_stage(out_dir, summary)
    return summary


def _summarise(summaries: list[dict], settings: DocsSettings) -> dict:
    languages, dropped = {}, {}
    for s in summaries:
        filtered, rejected = Counter(), Counter()
        for unit in s["units"]:
            filtered.update(unit["report"]["filtered"])
            rejected.update(unit["report"]["rejected"])
        if s["duplicates"]:
            filtered[DUPLICATE_ID] += s["duplicates"]
        entry = {
            "docs": s["docs"],
            "records": sum(unit["report"]["records"] for unit in s["units"]),
            "filtered": dict(sorted(filtered.items())),
            "rejected": dict(sorted(rejected.items())),
            "files": [fileio.basename(unit["report"]["file"]) for unit in s["units"]],
        }
        if s["dropped"]:
            dropped[s["lang"]] = entry
        else:
            languages[s["lang"]] = entry
    return {"stage": "docs", "settings": asdict(settings), "languages": languages, "dropped": dropped}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dumps", required=True, help="folder (or bucket prefix) holding the dumps")
    parser.add_argument("--out", required=True, help="folder for the docs Parquet")
    parser.add_argument("--langs", type=comma_list, default=None)
    parser.add_argument("--source", choices=["auto", "cirrus", "xml"], default="auto")
    parser.add_argument("--min-docs", type=int, default=DEFAULT_MIN_DOCS)
    parser.add_argument("--max-bad-fraction", type=float, default=DEFAULT_MAX_BAD_FRACTION)
    parser.add_argument("--workers", type=int, default=None, help="local worker processes (default: one per file, up to the cores)")
    return parser


def run(argv: Sequence[str] | None = None) -> dict:
    """Entry point in the style of Beam's examples: our flags first, the rest go to Beam."""
    args, beam_args = build_parser().parse_known_args(argv)
    found = discover(args.dumps, args.langs, args.source)
    for note in found.notes:
        LOG.warning(note)
    settings = DocsSettings(min_docs=args.min_docs, max_bad_fraction=args.max_bad_fraction)
    return run_extract_docs(found.docs, args.out, settings, beam_args, args.workers)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
