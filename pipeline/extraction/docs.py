"""Wikipedia dumps (Enterprise HTML, MediaWiki XML or CirrusSearch) -> ``docs`` Parquet, one folder per language: the docs stage's units.

A unit of work is a range of about ``--split-mb`` compressed MB of a big dump, or a
whole small one (docs/scale.md#big-files): a bz2 XML dump is cut at bz2 block
boundaries; an Enterprise HTML tar.gz is first indexed (``index_units``: parts that
only inflate, ``index_dump_part``, then a join a dump, ``join_dump_index``) and cut at
the index's checkpoints; CirrusSearch dumps are read whole (their action/document pairs
must stay together). Each unit (``extract_unit``) truncates every article it owns
(docs/method.md section 2) and streams it into
``{out}/{lang}/{NNNNN}-{dump name}.parquet``, in dump order, so the result depends on
neither the runner nor the split. Per language (``finalize_language``), repeated ids
are then removed (first occurrence wins), and ``summarise`` drops a language below
``--min-docs``.

This module sits on the ``extraction`` floor (docs/architecture.md): it reads dumps
through ``formats/`` (articles, cirrus, enterprise_html, mediawiki_xml), which sit above
``method/``, and needs nothing of ``output/``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import BinaryIO

from clirmatrix.pipeline.formats import articles, cirrus, enterprise_html, mediawiki_xml
from clirmatrix.pipeline.io import bz2_ranges, fileio, gzip_decoder, gzip_index, gzip_parts, gzip_ranges, reports
from clirmatrix.pipeline.io.badinput import DEFAULT_MAX_BAD_FRACTION, DamagedInputError, FileReport, check_bad_fraction
from clirmatrix.pipeline.io.bz2_ranges import BlockRange
from clirmatrix.pipeline.io.gzip_ranges import GzipUnit
from clirmatrix.pipeline.io.parquet_io import ParquetSink, row_counts
from clirmatrix.pipeline.io.progress import ProgressLog
from clirmatrix.pipeline.method.dedup import drop_duplicate_ids
from clirmatrix.pipeline.method.dumps import HTML, XML, DumpFile
from clirmatrix.pipeline.method.languages import is_unspaced
from clirmatrix.pipeline.method.truncate import DEFAULT_MAX_CHARS, DEFAULT_MAX_TOKENS, rule_for
from clirmatrix.pipeline.method.truncate_arrow import truncate_array
from clirmatrix.pipeline.settings import DEFAULT_MIN_DOCS, DEFAULT_SPLIT_BYTES
from clirmatrix.schemas import DOCS
from clirmatrix.schemas.contracts import (
    DocsLanguage,
    DocsLanguageReport,
    DocsSummary,
    DocsUnitReport,
    FinalizeTask,
    IndexJoinReport,
    IndexJoinTask,
    IndexPartReport,
    IndexPartTask,
    Unit,
    read_typed_report,
)

LOG = logging.getLogger("clirmatrix")
DUPLICATE_ID = "duplicate_id"
# Rows carry two texts (~6 KB in the benchmark): 2,000 of them keep the batch in memory the
# allocators reuse; 10,000 (the default) made every flush fault in fresh pages (twice the
# page faults, 5-10% more CPU, 1.8x the peak memory of a worker).
ROWS_PER_GROUP = 2_000
INDEX_FOLDER = "_index"  # the tar.gz dumps' seek indexes, inside the stage folder; their units' reports in its _reports/
PARTS_FOLDER = "parts"  # inside it: each part's index, until the join
# An index part reads as many compressed bytes as this many ranges: 512 MB at the default
# --split-mb, ~12 s of one core (the join then decodes its first 50-80 MB of output again).
INDEX_PART_SPLITS = 4
# The steps: the tar.gz dumps' index parts, then their joins (before the stage plans its
# units); then the stage's own: the dumps read in units, then each language finalised.
INDEX_PART, INDEX_JOIN, EXTRACT, FINALIZE = "index_part", "index_join", "extract", "finalize"


@dataclass(frozen=True)
class DocsSettings:
    """Settings of the docs stage (recorded in its ``_SUCCESS.json``)."""

    min_docs: int = DEFAULT_MIN_DOCS
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_chars: int = DEFAULT_MAX_CHARS
    extra_unspaced: tuple[str, ...] = ()
    split_bytes: int = DEFAULT_SPLIT_BYTES  # compressed bytes per range of a dump read in ranges; output does not depend on it


@dataclass(frozen=True)
class DocsUnit:
    """One unit of the docs stage, and its task: a whole dump file, or one range of it (docs/scale.md#big-files)."""

    rank: int  # the unit's place in its language: outputs sort in dump order
    dump: DumpFile
    part: BlockRange | GzipUnit | None = None  # a bz2 range, a range of a tar.gz member, or None: the whole file
    index_path: str = ""  # a tar.gz range: its dump's seek index
    first_line: int = 0  # a tar.gz range: the NDJSON lines of the archive's members before its member

    @property
    def name(self) -> str:
        """``{lang}.{rank}-{dump name without extensions}``: its report's name, as its output's."""
        return f"{self.dump.lang}.{self.rank:05d}-{_stem(self.dump.path)}"

    def describe(self) -> str:
        name = fileio.basename(self.dump.path)
        if isinstance(self.part, GzipUnit):
            return f"{name} {self.part.name} (bytes {self.part.start:,} to {self.part.end:,} of the tar)"
        return f"{name} {self.part.describe()}" if self.part is not None else name


def _stem(path: str) -> str:
    return fileio.basename(path).split(".")[0]


def reads_in_ranges(dump: DumpFile) -> bool:
    """Whether a dump is cut into ranges of bz2 blocks: MediaWiki XML in bz2 (its pages are found in any block).

    CirrusSearch dumps are read whole: their gzip has no index, and a range of their bz2
    parts could split an action line from its document line.
    """
    return dump.kind == XML and dump.path.endswith(".bz2")


def index_path(out_dir: str, path: str, spacing: int) -> str:
    """Where a tar.gz dump's seek index is kept during the stage."""
    return fileio.join(out_dir, INDEX_FOLDER, f"{fileio.basename(path)}.{spacing}.gzi")


def index_spacing(split_bytes: int) -> int:
    """Checkpoints at least as close as the units: half a unit, within zlib's and the index's sensible bounds."""
    return max(gzip_index.MIN_SPACING, min(gzip_index.DEFAULT_SPACING, split_bytes // 2))


def index_part_bytes(split_bytes: int) -> int:
    """Compressed bytes a part of an index reads: ``INDEX_PART_SPLITS`` ranges."""
    return INDEX_PART_SPLITS * split_bytes


def part_path(out_dir: str, path: str, spacing: int, part_bytes: int, number: int) -> str:
    """Where one part's index waits for the join."""
    return fileio.join(out_dir, INDEX_FOLDER, PARTS_FOLDER, f"{fileio.basename(path)}.{spacing}.{part_bytes}.{number:05d}.gzp")


def index_units(dumps: dict[str, list[DumpFile]], split_bytes: int) -> list[Unit]:
    """The units that index every Enterprise HTML dump, run before the stage plans its own: its parts (``INDEX_PART``), then a join (``INDEX_JOIN``).

    Reported under the stage's ``_index/_reports/``: a part as ``{dump name}.{number}``, a join as ``{dump name}``.
    """
    html = [dump.path for lang in sorted(dumps) for dump in dumps[lang] if dump.kind == HTML]
    part_bytes = index_part_bytes(split_bytes)
    units = [
        Unit(INDEX_PART, f"{fileio.basename(path)}.{number:05d}", IndexPartTask(path, number))
        for path in html
        for number in range(gzip_parts.plan_parts(fileio.size_of(path), part_bytes))
    ]
    return units + [Unit(INDEX_JOIN, fileio.basename(path), IndexJoinTask(path)) for path in html]


def index_dump_part(out_dir: str, task: IndexPartTask, split_bytes: int) -> IndexPartReport:
    """Index one part of a dump into ``part_path``; its report says ``error`` for a damaged file instead of raising."""
    started = time.perf_counter()
    spacing, part_bytes = index_spacing(split_bytes), index_part_bytes(split_bytes)
    try:
        part = gzip_parts.index_part(lambda: fileio.open_raw(task.path), task.path, task.number, part_bytes, spacing)
        fileio.write_bytes(part_path(out_dir, task.path, spacing, part_bytes, task.number), part.to_bytes())
        found = {"empty": part.empty, "decoded": part.length, "head": part.head}
    except gzip_decoder.GzipStreamError as error:
        found = {"error": str(error)}
    return IndexPartReport(file=task.path, part=task.number, seconds=_since(started), **found)


def join_dump_index(out_dir: str, task: IndexJoinTask, split_bytes: int) -> IndexJoinReport:
    """Join one dump's parts into ``index_path``; its report says ``error`` for a damaged file instead of raising.

    A part that found its range damaged wrote no index and reported the damage itself:
    the join then only names the parts it misses. Parts that do not join (a false block
    start: never seen, but not impossible) are reported, and the dump is indexed in one
    pass instead (``gzip_index.build_index``).
    """
    path, started = task.path, time.perf_counter()
    spacing, part_bytes = index_spacing(split_bytes), index_part_bytes(split_bytes)
    paths = [part_path(out_dir, path, spacing, part_bytes, n) for n in range(gzip_parts.plan_parts(fileio.size_of(path), part_bytes))]
    missing = [n for n, part in enumerate(paths) if not fileio.exists(part)]
    if missing:
        return IndexJoinReport(file=path, seconds=_since(started), missing_parts=missing)
    found: dict = {}
    try:
        with fileio.open_raw(path) as raw:
            parts = [gzip_parts.IndexPart.from_bytes(fileio.read_bytes(part), path) for part in paths]
            try:
                index, found["joined"] = gzip_parts.join_parts(raw, path, parts, spacing, tar=True)
            except gzip_parts.PartsMismatchError as error:
                LOG.warning("%s: its index parts do not join (%s); indexing it in one pass", path, error)
                found["one_pass"] = str(error)
                index = gzip_index.build_index(raw, path, spacing, tar=True)
        fileio.write_bytes(index_path(out_dir, path, spacing), index.to_bytes())
        found.update(checkpoints=len(index.checkpoints), members=len(index.members), uncompressed=index.uncompressed_size)
    except (gzip_decoder.GzipStreamError, gzip_index.NotATarError) as error:
        found["error"] = str(error)
    return IndexJoinReport(file=path, seconds=_since(started), **found)


def check_indexes(done: Iterable[IndexPartReport | IndexJoinReport]) -> None:
    """Raises ``DamagedInputError`` listing every damaged dump the index units found: nothing is built from them."""
    failed = sorted({report.error for report in done if report.error})
    if failed:
        raise DamagedInputError("input that cannot be read to its end; nothing was built from it. Download it again:\n" + "\n".join("    " + line for line in failed))


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


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
                path = index_path(out_dir, dump.path, index_spacing(split_bytes))
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


def stage_units(dumps: dict[str, list[DumpFile]], split_bytes: int, out_dir: str) -> list[Unit]:
    """The stage's units (its dumps' indexes built): every ``DocsUnit`` (``EXTRACT``), then each language's ``FinalizeTask`` (``FINALIZE``), named by its language."""
    extract = plan_units(dumps, split_bytes, out_dir)
    units = [Unit(EXTRACT, unit.name, unit) for unit in extract]
    for lang in sorted({unit.dump.lang for unit in extract}):
        units.append(Unit(FINALIZE, lang, FinalizeTask(lang, tuple(unit.name for unit in extract if unit.dump.lang == lang))))
    return units


def output_path(out_dir: str, unit: DocsUnit) -> str:
    """``{out}/{lang}/{rank}-{dump name without extensions}.parquet``: sorts in dump order."""
    return fileio.join(out_dir, unit.dump.lang, f"{unit.rank:05d}-{_stem(unit.dump.path)}.parquet")


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


def extract_unit(out_dir: str, unit: DocsUnit, settings: DocsSettings, background_inflate: bool = False) -> DocsUnitReport:
    """One dump file or range -> one docs Parquet file (``output_path``); its report holds the unit's bad-input ``FileReport``.

    ``background_inflate``: a whole gzip file is inflated in a second thread (worth it only where a core is spare).
    """
    dump = unit.dump
    report = FileReport(file=dump.path, lang=dump.lang)
    rule = rule_for(is_unspaced(dump.lang, set(settings.extra_unspaced)), settings.max_tokens, settings.max_chars)
    out_path = output_path(out_dir, unit)
    dump_name = fileio.basename(dump.path)
    crc_pieces: list = []
    # The truncated text is cut from each batch of full texts in compiled code.
    derived = {"text": lambda columns: truncate_array(columns["text_full"], rule)}
    with fileio.open_raw(dump.path) as raw, ParquetSink(out_path, DOCS, ROWS_PER_GROUP, derived) as sink:
        if unit.part is None:
            progress = ProgressLog(f"{dump.lang} {dump_name}", fileio.size_of(dump.path), raw.tell)
            found = read_dump(raw, dump, report, background_inflate)
        else:
            start, span = _span(unit)
            progress = ProgressLog(f"{dump.lang} {unit.describe()}", span, lambda: raw.tell() - start)
            found = read_range(raw, unit, report, crc_pieces)
        for article in found:
            sink.add((dump.lang, article.doc_id, article.title, article.text, article.entity, dump_name, article.line))
            progress.tick()
        seconds = progress.finish()
    part = {"index": unit.part.index, "crc_pieces": [list(piece) for piece in crc_pieces]} if isinstance(unit.part, BlockRange) else None
    return DocsUnitReport(rank=unit.rank, output=out_path, part=part, seconds=round(seconds, 3), report=report.to_dict())


def _span(unit: DocsUnit) -> tuple[int, int]:
    """Where a range's reading starts in the file and how many bytes it reads there (about), for progress."""
    if isinstance(unit.part, BlockRange):
        return unit.part.start_bit >> 3, unit.part.compressed_bytes
    return 0, fileio.size_of(unit.dump.path)  # a tar.gz range: its progress is the file's


def finalize_language(out_dir: str, task: FinalizeTask, min_docs: int) -> DocsLanguageReport:
    """All units of a language done (their reports under ``out_dir``'s ``_reports/``): drop repeated ids, count, apply ``min_docs``.

    Counted from the files, not from what this call removed: a retried unit finds the
    duplicates already gone and reports the same numbers. A language below ``min_docs``
    is only marked ``dropped``; ``summarise`` removes its files, once.
    """
    units = sorted((read_typed_report(reports.read_report(out_dir, name)) for name in task.units), key=lambda unit: unit.rank)
    paths = [unit.output for unit in units]
    drop_duplicate_ids(paths)
    docs = sum(row_counts(paths))
    duplicates = sum(unit.report["kept"] for unit in units) - docs
    return DocsLanguageReport(lang=task.lang, docs=docs, duplicates=duplicates, dropped=docs < min_docs, units=units)


def summarise(out_dir: str, languages: Iterable[DocsLanguageReport], settings: DocsSettings, stage: str) -> DocsSummary:
    """The stage's summary from its languages' reports; raises ``TooManyBadRecords`` past the limit and ``DamagedInputError``
    for a bz2 stream whose CRC fails across ranges; removes the dropped languages' files."""
    summaries = sorted(languages, key=lambda summary: summary.lang)
    by_lang = {s.lang: [FileReport.from_dict(unit.report) for unit in s.units] for s in summaries}
    check_bad_fraction(by_lang, settings.max_bad_fraction)
    bz2_ranges.check_range_reports((unit.report["file"], unit.part) for s in summaries for unit in s.units if unit.part)
    summary = _summary(summaries, settings, stage)
    for lang, entry in summary.dropped.items():
        fileio.remove_tree(fileio.join(out_dir, lang))
        LOG.warning("%s dropped: %s documents, fewer than --min-docs %s", lang, f"{entry.docs:,}", f"{settings.min_docs:,}")
    return summary


def _summary(summaries: list[DocsLanguageReport], settings: DocsSettings, stage: str) -> DocsSummary:
    languages, dropped = {}, {}
    for s in summaries:
        filtered, rejected = Counter(), Counter()
        for unit in s.units:
            filtered.update(unit.report["filtered"])
            rejected.update(unit.report["rejected"])
        if s.duplicates:
            filtered[DUPLICATE_ID] += s.duplicates
        entry = DocsLanguage(
            docs=s.docs,
            records=sum(unit.report["records"] for unit in s.units),
            filtered=dict(sorted(filtered.items())),
            rejected=dict(sorted(rejected.items())),
            files=[fileio.basename(unit.report["file"]) for unit in s.units],
        )
        if s.dropped:
            dropped[s.lang] = entry
        else:
            languages[s.lang] = entry
    return DocsSummary(stage=stage, settings=asdict(settings), languages=languages, dropped=dropped)
