"""Wikipedia dumps (Enterprise HTML, MediaWiki XML or CirrusSearch) -> ``docs`` Parquet, one folder per language.

A unit of work is a range of about ``--split-mb`` compressed MB of a big dump, or a
whole small one (docs/scale.md#big-files): a bz2 XML dump is cut at bz2 block
boundaries; an Enterprise HTML tar.gz is first indexed (in parts that only inflate,
``IndexDumpParts``, joined by ``JoinDumpIndexes``) and cut at the index's checkpoints; CirrusSearch dumps are read whole
(their action/document pairs must stay together). Each unit truncates every article
it owns (docs/method.md section 2) and streams it into
``{out}/{lang}/{NNNNN}-{dump name}.parquet``, in dump order, so the result depends on
neither the runner nor the split. Per language, repeated ids are then removed (first
occurrence wins) and a language below ``--min-docs`` is dropped.

Example::

    python -m clirmatrix.beam_jobs.extract_docs --dumps dumps/ --work work/ --langs en,de
    python -m clirmatrix.beam_jobs.extract_docs --dumps gs://b/dumps --work gs://b/work \\
        --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import BinaryIO, NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics

from clirmatrix.beam_jobs import common
from clirmatrix.beam_jobs.stages import Stage, run_job
from clirmatrix.pipeline.config import DEFAULT_MIN_DOCS, DEFAULT_SPLIT_BYTES, BuildConfig
from clirmatrix.pipeline.formats import articles, cirrus, enterprise_html, mediawiki_xml
from clirmatrix.pipeline.io import bz2_ranges, fileio, gzip_decoder, gzip_index, gzip_parts, gzip_ranges
from clirmatrix.pipeline.io.badinput import DEFAULT_MAX_BAD_FRACTION, DamagedInputError, FileReport, check_bad_fraction
from clirmatrix.pipeline.io.bz2_ranges import BlockRange
from clirmatrix.pipeline.io.gzip_ranges import GzipUnit
from clirmatrix.pipeline.io.parquet_io import ParquetSink, row_counts
from clirmatrix.pipeline.io.progress import ProgressLog
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.dedup import drop_duplicate_ids
from clirmatrix.pipeline.method.dumps import HTML, XML, DumpFile, find_dumps
from clirmatrix.pipeline.method.languages import is_unspaced
from clirmatrix.pipeline.method.truncate import DEFAULT_MAX_CHARS, DEFAULT_MAX_TOKENS, rule_for
from clirmatrix.pipeline.method.truncate_arrow import truncate_array
from clirmatrix.schemas import DOCS
from clirmatrix.schemas.contracts import DocsLanguage, DocsLanguageReport, DocsSummary, Summary

LOG = logging.getLogger("clirmatrix")
DUPLICATE_ID = "duplicate_id"
# Rows carry two texts (~6 KB in the benchmark): 2,000 of them keep the batch in memory the
# allocators reuse; 10,000 (the default) made every flush fault in fresh pages (twice the
# page faults, 5-10% more CPU, 1.8x the peak memory of a worker).
ROWS_PER_GROUP = 2_000
INDEX_FOLDER = "_index"  # the tar.gz dumps' seek indexes, inside the stage folder
PARTS_FOLDER = "parts"  # inside it: each part's index, until the join
# An index part reads as many compressed bytes as this many ranges: 512 MB at the default
# --split-mb, ~12 s of one core (the join then decodes its first 50-80 MB of output again).
INDEX_PART_SPLITS = 4


@dataclass(frozen=True)
class DocsSettings:
    """Settings of the docs stage (recorded in its ``_SUCCESS.json``)."""

    min_docs: int = DEFAULT_MIN_DOCS
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_chars: int = DEFAULT_MAX_CHARS
    extra_unspaced: tuple[str, ...] = ()
    split_bytes: int = DEFAULT_SPLIT_BYTES  # compressed bytes per range of a dump read in ranges; output does not depend on it


class DocsUnit(NamedTuple):
    """One unit of the docs stage: a whole dump file, or one range of it (docs/scale.md#big-files)."""

    rank: int  # the unit's place in its language: outputs sort in dump order
    dump: DumpFile
    part: BlockRange | GzipUnit | None = None  # a bz2 range, a range of a tar.gz member, or None: the whole file
    index_path: str = ""  # a tar.gz range: its dump's seek index
    first_line: int = 0  # a tar.gz range: the NDJSON lines of the archive's members before its member

    def describe(self) -> str:
        name = fileio.basename(self.dump.path)
        if isinstance(self.part, GzipUnit):
            return f"{name} {self.part.name} (bytes {self.part.start:,} to {self.part.end:,} of the tar)"
        return f"{name} {self.part.describe()}" if self.part is not None else name


def reads_in_ranges(dump: DumpFile) -> bool:
    """Whether a dump is cut into ranges of bz2 blocks: MediaWiki XML in bz2 (its pages are found in any block).

    CirrusSearch dumps are read whole: their gzip has no index, and a range of their bz2
    parts could split an action line from its document line.
    """
    return dump.kind == XML and dump.path.endswith(".bz2")


def index_path(out_dir: str, dump: DumpFile, spacing: int) -> str:
    """Where a tar.gz dump's seek index is kept during the stage."""
    return fileio.join(out_dir, INDEX_FOLDER, f"{fileio.basename(dump.path)}.{spacing}.gzi")


def index_spacing(split_bytes: int) -> int:
    """Checkpoints at least as close as the units: half a unit, within zlib's and the index's sensible bounds."""
    return max(gzip_index.MIN_SPACING, min(gzip_index.DEFAULT_SPACING, split_bytes // 2))


def index_part_bytes(split_bytes: int) -> int:
    """Compressed bytes a part of an index reads: ``INDEX_PART_SPLITS`` ranges."""
    return INDEX_PART_SPLITS * split_bytes


def plan_units(dumps: dict[str, list[DumpFile]], split_bytes: int, out_dir: str = "") -> list[DocsUnit]:
    """Every language's units in dump order: whole files, bz2 XML dumps in ranges of ~``split_bytes`` compressed bytes,
    and Enterprise HTML dumps in ranges of their tar members cut at the checkpoints of their indexes (built first).

    Planning reads a few MB around each bz2 cut (``bz2_ranges.plan_ranges``), and finds a
    bz2 dump cut short before any work starts.
    """
    units = []
    for lang in sorted(dumps):
        rank = 0
        for dump in dumps[lang]:
            if dump.kind == HTML:
                path = index_path(out_dir, dump, index_spacing(split_bytes))
                index = gzip_index.GzipIndex.from_bytes(fileio.read_bytes(path), path=path)
                before = enterprise_html.lines_before(index)
                for part in gzip_ranges.plan_units(index, split_bytes):
                    if enterprise_html.is_ndjson(part.name):
                        units.append(DocsUnit(rank, dump, part, path, before[part.member]))
                        rank += 1
                continue
            parts: list[BlockRange | None] = [None]
            if reads_in_ranges(dump):
                with fileio.open_raw(dump.path) as raw:
                    parts = list(bz2_ranges.plan_ranges(raw, fileio.size_of(dump.path), split_bytes, dump.path))
            for part in parts:
                units.append(DocsUnit(rank, dump, part))
                rank += 1
    return units


class IndexGzipPart(common.StorageDoFn):
    """One part of a tar.gz dump -> that part's index (``gzip_parts.index_part``); reports a damaged file instead of raising."""

    def __init__(self, out_dir: str, spacing: int, part_bytes: int, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.out_dir, self.spacing, self.part_bytes = out_dir, spacing, part_bytes

    def process(self, unit: tuple[DumpFile, int]) -> Iterator[str]:
        dump, number = unit
        name = f"{fileio.basename(dump.path)}.{number:05d}"
        common.write_report(fileio.join(self.out_dir, INDEX_FOLDER, PARTS_FOLDER), name, index_dump_part(dump, self.out_dir, self.spacing, self.part_bytes, number))
        yield name


class JoinGzipIndex(common.StorageDoFn):
    """A tar.gz dump's parts -> its seek index (``gzip_parts.join_parts``); reports a damaged file instead of raising."""

    def __init__(self, out_dir: str, spacing: int, part_bytes: int, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.out_dir, self.spacing, self.part_bytes = out_dir, spacing, part_bytes

    def process(self, dump: DumpFile) -> Iterator[str]:
        name = fileio.basename(dump.path)
        common.write_report(fileio.join(self.out_dir, INDEX_FOLDER), name, join_dump_index(dump, self.out_dir, self.spacing, self.part_bytes))
        yield name


def part_path(out_dir: str, dump: DumpFile, spacing: int, part_bytes: int, number: int) -> str:
    """Where one part's index waits for the join."""
    return fileio.join(out_dir, INDEX_FOLDER, PARTS_FOLDER, f"{fileio.basename(dump.path)}.{spacing}.{part_bytes}.{number:05d}.gzp")


def index_dump_part(dump: DumpFile, out_dir: str, spacing: int, part_bytes: int, number: int) -> dict:
    """Index one part of a dump into ``part_path``; returns the unit's report, with ``error`` for a damaged file."""
    report: dict = {"file": dump.path, "part": number}
    started = time.perf_counter()
    try:
        part = gzip_parts.index_part(lambda: fileio.open_raw(dump.path), dump.path, number, part_bytes, spacing)
        fileio.write_bytes(part_path(out_dir, dump, spacing, part_bytes, number), part.to_bytes())
        report.update(empty=part.empty, decoded=part.length, head=part.head)
    except gzip_decoder.GzipStreamError as error:
        report.update(error=str(error))
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def join_dump_index(dump: DumpFile, out_dir: str, spacing: int, part_bytes: int) -> dict:
    """Join one dump's parts into ``index_path``; returns the unit's report, with ``error`` for a damaged file.

    Parts that do not join (a false block start: never seen, but not impossible) are
    reported, and the dump is indexed in one pass instead (``gzip_index.build_index``).
    """
    report: dict = {"file": dump.path}
    started = time.perf_counter()
    try:
        with fileio.open_raw(dump.path) as raw:
            count = gzip_parts.plan_parts(fileio.size_of(dump.path), part_bytes)
            parts = [gzip_parts.IndexPart.from_bytes(fileio.read_bytes(part_path(out_dir, dump, spacing, part_bytes, n)), dump.path) for n in range(count)]
            try:
                index, joined = gzip_parts.join_parts(raw, dump.path, parts, spacing, tar=True)
                report.update(joined)
            except gzip_parts.PartsMismatchError as error:
                LOG.warning("%s: its index parts do not join (%s); indexing it in one pass", dump.path, error)
                report["one_pass"] = str(error)
                index = gzip_index.build_index(raw, dump.path, spacing, tar=True)
        fileio.write_bytes(index_path(out_dir, dump, spacing), index.to_bytes())
        report.update(checkpoints=len(index.checkpoints), members=len(index.members), uncompressed=index.uncompressed_size)
    except (gzip_decoder.GzipStreamError, gzip_index.NotATarError) as error:
        report.update(error=str(error))
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def index_dumps(dumps: dict[str, list[DumpFile]], out_dir: str, split_bytes: int, beam_args: Sequence[str], workers: int | None) -> None:
    """Index every Enterprise HTML dump before the stage's other units: its parts in parallel, then a join a dump; a damaged one stops the stage."""
    html = [dump for lang in sorted(dumps) for dump in dumps[lang] if dump.kind == HTML]
    if not html:
        return
    spacing, part_bytes = index_spacing(split_bytes), index_part_bytes(split_bytes)
    parts = [(dump, number) for dump in html for number in range(gzip_parts.plan_parts(fileio.size_of(dump.path), part_bytes))]
    common.run_stage("IndexDumpParts", parts, beam.ParDo(IndexGzipPart(out_dir, spacing, part_bytes, beam_args)), beam_args, workers)
    _raise_damaged(common.read_reports(fileio.join(out_dir, INDEX_FOLDER, PARTS_FOLDER)))
    common.run_stage("JoinDumpIndexes", html, beam.ParDo(JoinGzipIndex(out_dir, spacing, part_bytes, beam_args)), beam_args, workers)
    _raise_damaged(common.read_reports(fileio.join(out_dir, INDEX_FOLDER)))


def _raise_damaged(reports: list[dict]) -> None:
    failed = sorted({report["error"] for report in reports if "error" in report})
    if failed:
        raise DamagedInputError("input that cannot be read to its end; nothing was built from it. Download it again:\n" + "\n".join("    " + line for line in failed))


def output_path(out_dir: str, unit: DocsUnit) -> str:
    """``{out}/{lang}/{rank}-{dump name without extensions}.parquet``: sorts in dump order."""
    stem = fileio.basename(unit.dump.path).split(".")[0]
    return fileio.join(out_dir, unit.dump.lang, f"{unit.rank:05d}-{stem}.parquet")


def read_dump(raw: BinaryIO, dump: DumpFile, report: FileReport, background_inflate: bool = False) -> Iterator[cirrus.Article]:
    """The articles of one opened dump file, read whole, in dump order; every record lands in ``report``."""
    return articles.read_dump(raw, dump.path, dump.kind, report, background_inflate)


def read_range(raw: BinaryIO, unit: DocsUnit, report: FileReport, crc_pieces: list) -> Iterator[cirrus.Article]:
    """The articles whose record starts in the unit's range (a bz2 XML dump's pages, a tar.gz's NDJSON lines);
    a damaged stream ends it with one reject."""
    if isinstance(unit.part, GzipUnit):
        index = gzip_index.GzipIndex.from_bytes(fileio.read_bytes(unit.index_path), raw, unit.index_path)
        lines = enterprise_html.range_lines(raw, index, unit.part, unit.first_line, unit.dump.path, report)
        yield from enterprise_html.read_articles(lines, report)
        return
    name, size = unit.dump.path, fileio.size_of(unit.dump.path)
    try:
        prologue = bz2_ranges.xml_prologue(raw, size, name)
        pages = bz2_ranges.iter_page_records(raw, size, unit.part, name, crc_pieces)
        yield from mediawiki_xml.read_page_records(prologue, pages, report)
    except bz2_ranges.Bz2StreamError as error:
        report.reject(error.position, error.kind, f"{error.detail} ({unit.describe()})")


class ExtractDumpFile(common.StorageDoFn):
    """One dump file -> one docs Parquet file; emits ``(lang, unit report)``."""

    def __init__(self, out_dir: str, settings: DocsSettings, background_inflate: bool = False, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.out_dir = out_dir
        self.settings = settings
        self.background_inflate = background_inflate
        self.kept = Metrics.counter("clirmatrix", "docs_kept")
        self.rejected = Metrics.counter("clirmatrix", "records_rejected")

    def process(self, unit: DocsUnit) -> Iterator[tuple[str, dict]]:
        dump = unit.dump
        report = FileReport(file=dump.path, lang=dump.lang)
        rule = rule_for(is_unspaced(dump.lang, set(self.settings.extra_unspaced)), self.settings.max_tokens, self.settings.max_chars)
        out_path = output_path(self.out_dir, unit)
        dump_name = fileio.basename(dump.path)
        crc_pieces: list = []
        # The truncated text is cut from each batch of full texts in compiled code.
        derived = {"text": lambda columns: truncate_array(columns["text_full"], rule)}
        with fileio.open_raw(dump.path) as raw, ParquetSink(out_path, DOCS, ROWS_PER_GROUP, derived) as sink:
            if unit.part is None:
                progress = ProgressLog(f"{dump.lang} {dump_name}", fileio.size_of(dump.path), raw.tell)
                articles = read_dump(raw, dump, report, self.background_inflate)
            else:
                start, span = _span(unit)
                progress = ProgressLog(f"{dump.lang} {unit.describe()}", span, lambda: raw.tell() - start)
                articles = read_range(raw, unit, report, crc_pieces)
            for article in articles:
                sink.add((dump.lang, article.doc_id, article.title, article.text, article.entity, dump_name, article.line))
                progress.tick()
            seconds = progress.finish()
        self.kept.inc(report.kept)
        self.rejected.inc(report.bad)
        part = {"index": unit.part.index, "crc_pieces": [list(piece) for piece in crc_pieces]} if isinstance(unit.part, BlockRange) else None
        yield dump.lang, {"rank": unit.rank, "output": out_path, "part": part, "seconds": round(seconds, 3), "report": report.to_dict()}


def _span(unit: DocsUnit) -> tuple[int, int]:
    """Where a range's reading starts in the file and how many bytes it reads there (about), for progress."""
    if isinstance(unit.part, BlockRange):
        return unit.part.start_bit >> 3, unit.part.compressed_bytes
    return 0, fileio.size_of(unit.dump.path)  # a tar.gz range: its progress is the file's


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
        common.write_report(self.out_dir, lang, DocsLanguageReport(lang=lang, docs=docs, duplicates=duplicates, dropped=dropped, units=units).to_dict())
        yield lang


class ReadDumpFiles(beam.PTransform):
    """``DocsUnit``s -> per-language docs Parquet; outputs the finished languages."""

    def __init__(self, out_dir: str, settings: DocsSettings, background_inflate: bool = False, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.out_dir = out_dir
        self.settings = settings
        self.background_inflate = background_inflate
        self.beam_args = list(beam_args)

    def expand(self, units):
        return (
            units
            # One element per dump file or range; each is read by one worker.
            | "ReadDumpFile" >> beam.ParDo(ExtractDumpFile(self.out_dir, self.settings, self.background_inflate, self.beam_args))
            # (lang, unit report) for every file of every language.
            | "GroupByLanguage" >> beam.GroupByKey()
            | "FinalizeLanguage" >> beam.ParDo(FinalizeLanguage(self.out_dir, self.settings.min_docs, self.beam_args))
        )


def docs_settings(config: BuildConfig) -> DocsSettings:
    """The docs stage's settings of a build: the one place they derive from its flags."""
    return DocsSettings(min_docs=config.min_docs, max_bad_fraction=config.max_bad_fraction, split_bytes=config.split_bytes)


class ExtractDocs(Stage):
    """Dump files (whole or in ranges) -> each language's docs Parquet, repeated ids removed, small languages dropped."""

    name = "extract_docs"
    folder = Folders.docs
    flags = ("dumps", "langs", "skip_missing", "source", "min_docs", "max_bad_fraction", "split_mb")

    def __init__(self, work_root: str, dumps: dict[str, list[DumpFile]], settings: DocsSettings = DocsSettings()) -> None:
        super().__init__(work_root)
        self.dumps = dumps
        self.settings = settings
        self.background_inflate = False

    @classmethod
    def from_config(cls, work_root: str, config: BuildConfig) -> ExtractDocs:
        found, _ = find_dumps(fileio.absolute(config.dumps), config.langs, config.source, config.skip_missing, links=None)
        return cls(work_root, found.docs, docs_settings(config))

    def prepare(self, beam_args: Sequence[str], workers: int | None) -> None:
        index_dumps(self.dumps, self.stage_dir, self.settings.split_bytes, beam_args, workers)

    def plan(self, upstream: dict[str, Summary]) -> list[DocsUnit]:
        return plan_units(self.dumps, self.settings.split_bytes, self.stage_dir)

    def transform(self, beam_args: Sequence[str] = (), workers: int = 1) -> beam.PTransform:
        # A second inflating thread pays only where a core is spare: one local worker on a
        # multi-core machine. With a worker per core (or on a cluster) it only competes.
        background_inflate = workers == 1 and (os.cpu_count() or 1) > 1 and not common.names_runner(beam_args)
        return ReadDumpFiles(self.stage_dir, self.settings, background_inflate, beam_args)

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, DocsLanguageReport]) -> DocsSummary:
        """Raises ``TooManyBadRecords`` past the limit; removes the dropped languages' files."""
        summaries = sorted(reports.values(), key=lambda summary: summary.lang)
        by_lang = {s.lang: [FileReport.from_dict(unit["report"]) for unit in s.units] for s in summaries}
        check_bad_fraction(by_lang, self.settings.max_bad_fraction)
        bz2_ranges.check_range_reports((unit["report"]["file"], unit["part"]) for s in summaries for unit in s.units if unit.get("part"))
        summary = _summarise(summaries, self.settings, self.name)
        for lang, entry in summary.dropped.items():
            fileio.remove_tree(fileio.join(self.stage_dir, lang))
            LOG.warning("%s dropped: %s documents, fewer than --min-docs %s", lang, f"{entry.docs:,}", f"{self.settings.min_docs:,}")
        return summary


def _summarise(summaries: list[DocsLanguageReport], settings: DocsSettings, stage: str) -> DocsSummary:
    languages, dropped = {}, {}
    for s in summaries:
        filtered, rejected = Counter(), Counter()
        for unit in s.units:
            filtered.update(unit["report"]["filtered"])
            rejected.update(unit["report"]["rejected"])
        if s.duplicates:
            filtered[DUPLICATE_ID] += s.duplicates
        entry = DocsLanguage(
            docs=s.docs,
            records=sum(unit["report"]["records"] for unit in s.units),
            filtered=dict(sorted(filtered.items())),
            rejected=dict(sorted(rejected.items())),
            files=[fileio.basename(unit["report"]["file"]) for unit in s.units],
        )
        if s.dropped:
            dropped[s.lang] = entry
        else:
            languages[s.lang] = entry
    return DocsSummary(stage=stage, settings=asdict(settings), languages=languages, dropped=dropped)


def run(argv: Sequence[str] | None = None) -> dict:
    return run_job(ExtractDocs, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
