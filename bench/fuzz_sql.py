"""Damaged MediaWiki SQL dumps (``wb_items_per_site``, ``page_props``), read as the links stage reads them: row by row, nothing lost.

A clean dump of realistic rows (``sql_bench``'s generator: titles with quotes, commas,
parentheses, ``),(``, backslashes; INSERT lines of a few kB here, so that a file has many)
is damaged one way at a time at a random place of its text, gzip'd again and read by
``read_items_per_site`` or ``read_page_props`` (with the pre-filter, as the stage does, and
without), then judged by the stage's check (``check_bad_fraction``, 5% here):

- ``truncate-line``: an INSERT line cut inside its tuples (the statement never ends; the
  next line starts the next statement);
- ``garbage``: 1-20 bytes of noise (quotes, parentheses, commas, semicolons, backslashes
  among them) inserted in an INSERT line: anywhere, or (a fifth of the cases each) in its
  head ``INSERT INTO `table` VALUES`` or around its closing ``;``;
- ``drop-paren`` / ``drop-quote``: one tuple's closing ``)``, or one of its quotes, removed;
- ``cut``: the text cut at a random byte (as a dump whose end never arrived).

Each tuple of the clean text is located (its byte span), so the damage says which rows it
**touched**: those whose span it falls in or borders, and for a cut line every tuple from
the cut on. Verdicts:

- ``failed``: the check stopped the run naming the file (a cut: ``truncated_stream``);
- ``passed``: ``records == kept + filtered + bad``; every row the damage did not touch was
  read, as it is in the clean file; the touched rows that are gone are no more than the bad
  records counted (a cut line's rows after the cut left the input: nothing can count them);
- ``lost``: an untouched row missing, or touched rows gone uncounted;
- ``crashed``: any other exception.

Usage: python bench/fuzz_bench.py --sql [--cases 400] [--seed 1] [--sql-rows 20000]
"""

from __future__ import annotations

import gzip
import random
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sql_bench import write_items_per_site, write_page_props

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.formats.mediawiki_sql import _INSERT, parse_tuple, read_items_per_site, read_page_props
from clirmatrix.pipeline.formats.wikidata import SitelinkFilter
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.badinput import DamagedInputError, FileReport, TooManyBadRecords, check_bad_fraction
from clirmatrix.pipeline.method.languages import site_key

SQL_MUTATIONS = ("truncate-line", "garbage", "drop-paren", "drop-quote", "cut")
TABLES = ("items", "props")
LANGS = ("en", "de", "fr", "ru", "ar", "zh", "ja", "es", "it", "nl", "sv", "ceb")
MAX_BAD_FRACTION = 0.05
LINE_BYTES = 4_000
NOISE = b"abcXYZ019 ',();\\_%"


@dataclass(frozen=True)
class Tuple:
    start: int  # offset of its "(" in the text
    end: int  # offset just after its ")"
    row: tuple | None  # what the reader gives for it (None: a row it filters)


@dataclass(frozen=True)
class SqlOutcome:
    input: str  # items or props
    mutation: str
    damage: str
    verdict: str
    detail: str


def write_clean(folder: Path, table: str, rows: int, seed: int) -> bytes:
    """A clean dump's text (written as ``.sql.gz`` under ``folder`` too)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("wikidatawiki-20261101-wb_items_per_site.sql.gz" if table == "items" else "enwiki-20261101-page_props.sql.gz")
    (write_items_per_site if table == "items" else write_page_props)(path, rows, seed, line_bytes=LINE_BYTES)
    return gzip.decompress(path.read_bytes())


def _row(table: str, values: list, sites: dict[bytes, str]) -> tuple | None:
    if table == "items":
        site = values[2]
        return ("Q" + values[1].decode(), sites[site], values[3].decode()) if site in sites else None
    return (values[0].decode(), values[2].decode()) if values[1] == b"wikibase_item" else None


def locate(text: bytes, table: str) -> list[Tuple]:
    """Every tuple of the clean text: its span and the row the reader gives for it."""
    sites = {site_key(lang).encode(): lang for lang in LANGS}
    found, at = [], 0
    for line in text.split(b"\n"):
        insert = _INSERT.match(line)
        if insert:
            position = insert.end()
            while line[position : position + 1] == b"(":
                values, end = parse_tuple(line, position)
                found.append(Tuple(at + position, at + end, _row(table, values, sites)))
                position = end + 1  # the "," (or the ";" that ends the line)
        at += len(line) + 1
    return found


def read(text: bytes, table: str, name: str, prefilter: bool) -> tuple[list, FileReport]:
    """The rows a dump's text gives, read from its ``.sql.gz`` as the links stage does, and the stage's check applied."""
    path = Path(name)
    path.write_bytes(gzip.compress(text, compresslevel=1, mtime=0))
    report = FileReport(file=str(path))
    with fileio.open_raw(str(path)) as raw:
        stream = fileio.open_dump(raw, str(path), False)
        if table == "items":
            rows = [tuple(link) for link in read_items_per_site(stream, SitelinkFilter(LANGS, prefilter), report)]
        else:
            rows = list(read_page_props(stream, report, prefilter))
    check_bad_fraction({"links": [report]}, MAX_BAD_FRACTION)
    return rows, report


def damage(text: bytes, tuples: list[Tuple], mutation: str, rng: random.Random) -> tuple[bytes, str, set[int], bool]:
    """(damaged text, what was done, the indexes of the tuples it touched, whether rows left the input)."""
    if mutation == "cut":
        cut = rng.randrange(1, len(text))
        return text[:cut], f"text cut at byte {cut:,} of {len(text):,}", set(range(len(tuples))), True
    if mutation == "truncate-line":
        victim = rng.randrange(len(tuples))
        line_end = text.index(b"\n", tuples[victim].start)
        cut = rng.randrange(tuples[victim].start + 1, tuples[victim].end)
        touched = {i for i in range(victim, len(tuples)) if tuples[i].start < line_end}
        return text[:cut] + text[line_end:], f"the line of tuple {victim} cut at byte {cut:,}", touched, True
    if mutation == "garbage":
        first = rng.randrange(len(tuples))
        line_start = text.rindex(b"\n", 0, tuples[first].start) + 1
        line_end = text.index(b"\n", tuples[first].start)
        where = rng.random()  # a fifth in the statement's head, a fifth around its closing ';', the rest anywhere
        head = text.index(b"(", line_start)
        at = rng.randrange(line_start, head + 1) if where < 0.2 else rng.randrange(line_end - 2, line_end + 1) if where < 0.4 else rng.randrange(line_start, line_end + 1)
        noise = bytes(rng.choice(NOISE) for _ in range(rng.randint(1, 20)))
        touched = {i for i, t in enumerate(tuples) if t.start <= at <= t.end}
        return text[:at] + noise + text[at:], f"{noise!r} inserted at byte {at:,}", touched, False
    victim = rng.randrange(len(tuples))
    span = tuples[victim]
    if mutation == "drop-paren":
        at = span.end - 1
    elif mutation == "drop-quote":
        quotes = [span.start + i for i, byte in enumerate(text[span.start : span.end]) if byte == ord("'")]
        at = rng.choice(quotes) if quotes else span.end - 1
    else:
        raise ValueError(f"unknown mutation {mutation!r}")
    return text[:at] + text[at + 1 :], f"{text[at:at + 1]!r} of tuple {victim} removed at byte {at:,}", {victim}, False


def judge(clean: list[Tuple], touched: set[int], removed: bool, rows: list, report: FileReport) -> tuple[str, str]:
    """The verdict on what a damaged dump gave (module docstring). A touched row may also come back changed (noise inside
    its title: another row) or filtered (noise in its site key or property name): those explain it as a bad record does."""
    filtered = sum(report.filtered.values())
    if report.records != report.kept + filtered + report.bad:
        return "lost", f"{report.records:,} records != {report.kept:,} kept + {filtered:,} filtered + {report.bad:,} bad"
    got = Counter(rows)
    untouched = Counter(t.row for i, t in enumerate(clean) if i not in touched and t.row is not None)
    missing = untouched - got
    if missing:
        return "lost", f"{sum(missing.values())} untouched row(s) not read, e.g. {next(iter(missing))!r}"
    gone = sum((Counter(clean[i].row for i in touched if clean[i].row is not None) - got).values())
    changed = sum((got - Counter(t.row for t in clean if t.row is not None)).values())
    more_filtered = max(0, filtered - sum(1 for t in clean if t.row is None))
    if not removed and gone > report.bad + changed + more_filtered:
        return "lost", f"{gone} touched row(s) gone, only {report.bad} bad counted ({changed} changed, {more_filtered} more filtered)"
    return "passed", f"{report.bad} bad ({dict(report.rejected)})"


def run_sql_case(table: str, text: bytes, clean: list[Tuple], mutation: str, rng: random.Random, work: Path) -> SqlOutcome:
    damaged, what, touched, removed = damage(text, clean, mutation, rng)
    name = str(work / ("wikidatawiki-20261101-wb_items_per_site.sql.gz" if table == "items" else "enwiki-20261101-page_props.sql.gz"))
    verdicts = []
    for prefilter in (True, False):
        try:
            rows, report = read(damaged, table, name, prefilter)
        except (DamagedInputError, TooManyBadRecords, InputError) as error:
            named = name in str(error)
            verdicts.append(("failed", str(error).splitlines()[-1]) if named else ("crashed", f"message does not name the file: {error}"))
            continue
        except Exception:  # noqa: BLE001 - a traceback in the CLI
            verdicts.append(("crashed", traceback.format_exc(limit=3)))
            continue
        verdicts.append(judge(clean, touched, removed, rows, report))
    if verdicts[0][0] != verdicts[1][0]:
        return SqlOutcome(table, mutation, what, "crashed", f"the pre-filter and the full parse disagree: {verdicts}")
    return SqlOutcome(table, mutation, what, *verdicts[0])


def run_sql_cases(cases: int, seed: int, rows: int, work: Path) -> list[SqlOutcome]:
    """``cases`` damaged dumps, cycling through both tables and every mutation."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    clean = {}
    for table in TABLES:
        text = write_clean(work / "clean", table, rows, seed)
        tuples = locate(text, table)
        rows_read, report = read(text, table, str(work / "clean-read.sql.gz"), True)
        assert rows_read == [t.row for t in tuples if t.row is not None] and not report.bad, "the clean dump is not read as located"
        clean[table] = (text, tuples)
    combos = [(table, mutation) for table in TABLES for mutation in SQL_MUTATIONS]
    return [run_sql_case(table, *clean[table], mutation, rng, work) for table, mutation in (combos[i % len(combos)] for i in range(cases))]

