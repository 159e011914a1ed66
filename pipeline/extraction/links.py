"""Link sources -> ``sitelinks`` Parquet (entity, lang, title) and page entities (doc_id, entity): the sitelinks stage's units.

The Wikidata-wide source (``--links``, docs/method.md section 3) is either the
``wb_items_per_site`` SQL dump (a few GB) or the JSON dump (well over 100 GB, a bz2 one
read in ranges of bz2 blocks); its rows or entity lines become sitelinks of the selected
languages in ``sitelinks/{lang}/{NNNNN}-{dump name}.parquet``. For the JSON dump, a line
without the quoted site key of any selected language is skipped unparsed
(``clirmatrix.pipeline.formats.wikidata``). Each wiki's ``page_props`` dump becomes
``sitelinks/_page_props/{lang}/{NNNNN}-{dump name}.parquet``: which item each page id is.
``link_units`` plans them, ``extract_links`` runs one, ``summarise`` checks the ranges
(``check_ranges``) and the bad input and sums them up.

This module sits on the ``extraction`` floor (docs/architecture.md): it reads through
``formats/`` (mediawiki_sql, wikidata), which sit above ``method/``, and needs nothing of
``output/``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO, BinaryIO

from clirmatrix.pipeline.formats.mediawiki_sql import read_items_per_site, read_page_props
from clirmatrix.pipeline.formats.wikidata import Framing, Sitelink, SitelinkFilter, read_sitelinks
from clirmatrix.pipeline.io import bz2_ranges, fileio
from clirmatrix.pipeline.io.badinput import DamagedInputError, FileReport, check_bad_fraction
from clirmatrix.pipeline.io.bz2_ranges import BlockRange
from clirmatrix.pipeline.io.parquet_io import ParquetSink
from clirmatrix.pipeline.io.progress import ProgressLog
from clirmatrix.pipeline.method.corpus import PAGE_PROPS_FOLDER
from clirmatrix.pipeline.method.dumps import ITEMS_PER_SITE, PAGE_PROPS, WIKIDATA_JSON, LinkInputs
from clirmatrix.pipeline.settings import DEFAULT_SPLIT_BYTES
from clirmatrix.schemas import PAGE_ENTITIES, SITELINKS
from clirmatrix.schemas.contracts import LinksFileReport, SitelinksSummary

READ = "read"  # the stage's one step: each links file or range read


@dataclass(frozen=True)
class LinkUnit:
    """One links input file, and its task: a Wikidata-wide source (every selected language) or one wiki's page_props."""

    rank: int
    kind: str  # dumps.WIKIDATA_JSON, dumps.ITEMS_PER_SITE or dumps.PAGE_PROPS
    path: str
    lang: str = ""  # page_props: the wiki's language
    part: BlockRange | None = None  # a range of a bz2 JSON dump; None: the whole file
    langs: tuple[str, ...] = ()  # a Wikidata-wide source: the languages whose sitelinks it keeps, sorted

    @property
    def name(self) -> str:
        return f"{self.rank:05d}-{fileio.basename(self.path).split('.')[0]}"

    def describe(self) -> str:
        name = fileio.basename(self.path)
        return f"{name} {self.part.describe()}" if self.part is not None else name


def link_units(sources: LinkInputs, langs: Sequence[str], split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[LinkUnit]:
    """The stage's units: the Wikidata-wide files in name order (a bz2 JSON dump in ranges), then each kept language's page_props."""
    units: list[LinkUnit] = []
    selected = tuple(sorted(langs))
    for path in sorted(sources.sitelinks_files):
        parts: list[BlockRange | None] = [None]
        if sources.sitelinks_kind == WIKIDATA_JSON and path.endswith(".bz2"):
            with fileio.open_raw(path) as raw:
                parts = list(bz2_ranges.plan_ranges(raw, fileio.size_of(path), split_bytes, path))
        units += [LinkUnit(len(units) + n, sources.sitelinks_kind, path, part=part, langs=selected) for n, part in enumerate(parts)]
    wanted = set(langs)
    units += [LinkUnit(len(units) + n, PAGE_PROPS, path, lang) for n, (lang, path) in enumerate(p for p in sources.page_props if p[0] in wanted)]
    return units


def extract_links(out_dir: str, unit: LinkUnit, prefilter: bool = True) -> LinksFileReport:
    """One links input file or range -> sitelinks Parquet per selected language, or one language's page entities; its report.

    ``prefilter``: skip, unparsed, a JSON line that names none of the languages' site keys.
    """
    report = FileReport(file=unit.path, lang=unit.lang)
    part: dict = {}
    with fileio.open_raw(unit.path) as raw:
        if unit.part is None:
            stream = fileio.open_dump(raw, unit.path)
            progress = ProgressLog(f"{unit.kind} {unit.describe()}", fileio.size_of(unit.path), raw.tell, unit="links")
        else:
            stream, start = raw, unit.part.start_bit >> 3
            progress = ProgressLog(f"{unit.kind} {unit.describe()}", unit.part.compressed_bytes, lambda: raw.tell() - start, unit="links")
        if unit.kind == PAGE_PROPS:
            counts = _page_entities(out_dir, unit, stream, report, progress)
        else:
            counts = _sitelinks(out_dir, unit, stream, report, progress, part, prefilter)
        seconds = progress.finish()
    return LinksFileReport(rank=unit.rank, kind=unit.kind, lang=unit.lang, seconds=round(seconds, 3), links=counts, part=part or None, report=report.to_dict())


def _sitelinks(out_dir: str, unit: LinkUnit, stream: IO[bytes], report: FileReport, progress: ProgressLog, part: dict, prefilter: bool) -> dict[str, int]:
    selection = SitelinkFilter(unit.langs, prefilter)
    if unit.kind == ITEMS_PER_SITE:
        links = read_items_per_site(stream, selection, report)
    elif unit.part is None:
        links = read_sitelinks(fileio.iter_lines(stream, report), selection, report)
    else:
        links = _range_sitelinks(stream, unit, selection, report, part)
    per_lang = Counter()
    with contextlib.ExitStack() as stack:
        sinks = {lang: stack.enter_context(ParquetSink(fileio.join(out_dir, lang, f"{unit.name}.parquet"), SITELINKS)) for lang in unit.langs}
        for link in links:
            sinks[link.lang].add(link)
            per_lang[link.lang] += 1
            progress.tick()
    return dict(sorted(per_lang.items()))


def _page_entities(out_dir: str, unit: LinkUnit, stream: IO[bytes], report: FileReport, progress: ProgressLog) -> dict[str, int]:
    rows = 0
    with ParquetSink(fileio.join(out_dir, PAGE_PROPS_FOLDER, unit.lang, f"{unit.name}.parquet"), PAGE_ENTITIES) as sink:
        for page_id, entity in read_page_props(stream, report):
            sink.add((page_id, entity))
            rows += 1
            progress.tick()
    return {unit.lang: rows}


def _range_sitelinks(raw: BinaryIO, unit: LinkUnit, selection: SitelinkFilter, report: FileReport, part: dict) -> Iterator[Sitelink]:
    """The sitelinks of the entity lines a range of a bz2 JSON dump owns; fills ``part`` with what the stage checks across ranges."""
    name, size, framing, crc_pieces = unit.path, fileio.size_of(unit.path), Framing(), []
    try:
        yield from read_sitelinks(bz2_ranges.iter_line_records(raw, size, unit.part, name, crc_pieces), selection, report, framing)
    except bz2_ranges.Bz2StreamError as error:
        report.reject(error.position, error.kind, f"{error.detail} ({unit.describe()})")
    part.update(index=unit.part.index, framing=framing.to_dict(), crc_pieces=[list(piece) for piece in crc_pieces])


def _by_file(reports: Sequence[FileReport]) -> dict[str, list[FileReport]]:
    """Reports grouped by input file: the bad-input limit applies to a file, whatever ranges it was read in."""
    groups: dict[str, list[FileReport]] = {}
    for report in reports:
        groups.setdefault(report.file, []).append(report)
    return groups


def check_ranges(units_done: Sequence[LinksFileReport]) -> None:
    """Across the ranges of each bz2 JSON dump: the combined CRC of streams crossing a cut, and the array opened and closed."""
    by_file = bz2_ranges.check_range_reports((unit.report["file"], unit.part) for unit in units_done if unit.part)
    for path, parts in sorted(by_file.items()):
        if parts[0]["framing"]["opens"] and not parts[-1]["framing"]["closes"]:
            raise DamagedInputError(f"{path}: the entity array opened on line 1 is never closed with ']': the file was cut short; download it again")


def summarise(done: Sequence[LinksFileReport], sources: LinkInputs, langs: Sequence[str], max_bad_fraction: float, stage: str) -> SitelinksSummary:
    """The stage's summary from its units' reports (``langs``: those selected); raises ``TooManyBadRecords`` past the limit,
    and ``DamagedInputError`` for a JSON dump cut short."""
    units_done = sorted(done, key=lambda unit: unit.rank)
    wide = [FileReport.from_dict(unit.report) for unit in units_done if unit.kind != PAGE_PROPS]
    props = [FileReport.from_dict(unit.report) for unit in units_done if unit.kind == PAGE_PROPS]
    # A Wikidata record is an entity line (JSON) or a row (wb_items_per_site); a page_props record a row.
    check_bad_fraction(_by_file(wide), max_bad_fraction, unit="entity lines" if sources.sitelinks_kind == WIKIDATA_JSON else "rows")
    check_bad_fraction(_by_file(props), max_bad_fraction, unit="rows")
    check_ranges(units_done)
    totals = Counter()
    for unit in units_done:
        if unit.kind != PAGE_PROPS:
            totals.update(unit.links)
    return SitelinksSummary(
        stage=stage,
        links=sources.mode,
        source=sources.sitelinks_kind,
        languages={lang: totals.get(lang, 0) for lang in langs},
        entities_read=sum(r.records for r in wide),
        entities_with_sitelinks=sum(r.kept for r in wide),
        rejected=dict(sorted(sum((r.rejected for r in wide + props), Counter()).items())),
        page_props={unit.lang: unit.links[unit.lang] for unit in units_done if unit.kind == PAGE_PROPS},
        files=sorted({fileio.basename(r.file) for r in wide + props}),
        max_bad_fraction=max_bad_fraction,
    )
