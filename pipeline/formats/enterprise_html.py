"""Wikimedia Enterprise HTML dumps: NDJSON articles inside a tar.gz.

``other/enterprise_html/runs/{date}/{wiki}-NS0-{date}-ENTERPRISE-HTML.json.tar.gz``
(docs/formats.md section 4) is a tar archive of NDJSON files (``enwiki_namespace_0_0.ndjson``,
``..._1.ndjson``, ...), one article a line: ``identifier`` (the page id), ``name`` (the
title), ``namespace.identifier``, ``main_entity.identifier`` (the Wikidata item, so no
Wikidata dump is needed for links) and ``article_body.html``, the Parsoid-rendered page,
which ``clirmatrix.pipeline.method.html_text`` turns into text as CirrusSearch builds its
``text`` field. Nothing is unpacked to disk: a whole archive is read as a stream
(``tar_lines``: ``tarfile`` in ``r|`` mode over the inflating stream), a range of one
through its seek index (``range_lines``, ``clirmatrix.pipeline.io.gzip_ranges``); both
number the lines alike, on across the NDJSON members in archive order.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterable, Iterator
from typing import IO, BinaryIO

import orjson

from clirmatrix.pipeline.formats.cirrus import EMPTY_TEXT, OTHER_NAMESPACE, Article, entity_of, is_page_id
from clirmatrix.pipeline.io.badinput import BAD_FIELD, MALFORMED_JSON, MISSING_FIELD, NOT_AN_OBJECT, TRUNCATED_STREAM, FileReport
from clirmatrix.pipeline.io.fileio import STREAM_ERRORS, stream_error_kind
from clirmatrix.pipeline.io.gzip_decoder import GzipStreamError
from clirmatrix.pipeline.io.gzip_index import GzipIndex
from clirmatrix.pipeline.io.gzip_ranges import GzipUnit, iter_unit_lines
from clirmatrix.pipeline.method.html_text import html_to_text

NOT_NDJSON = "not_ndjson"  # a tar member that is no NDJSON file (a README, a folder): skipped whole, counted as a note


def is_ndjson(member_name: str) -> bool:
    """Whether a tar member holds articles (the dumps' members are ``{wiki}_namespace_0_{N}.ndjson``)."""
    return member_name.endswith((".ndjson", ".json", ".jsonl"))


def _dict_field(record: dict, name: str) -> dict:
    value = record.get(name)
    return value if isinstance(value, dict) else {}


def tar_lines(stream: IO[bytes], report: FileReport) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every NDJSON member in archive order; numbers run on across members.

    A damaged or cut stream ends the iteration with one reject naming the member and
    the last line read, as ``fileio.iter_lines`` does for plain files.
    """
    number = 0
    member_name = "(archive start)"
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                member_name = member.name
                if not member.isfile():
                    continue
                if not is_ndjson(member.name):
                    report.skip(NOT_NDJSON)
                    continue
                content = archive.extractfile(member)
                line = b"\n"
                for line in content:
                    number += 1
                    yield number, line
                if not line.endswith(b"\n") and member.size:
                    _cut_inside_line(report, member_name, number)
    except tarfile.ReadError as error:
        kind = TRUNCATED_STREAM if "unexpected end" in str(error) or "empty" in str(error) else stream_error_kind(error)
        report.reject(number + 1, kind, f"tar: {error} (in member {member_name}, after line {number:,})")
    except STREAM_ERRORS as error:
        report.reject(number + 1, stream_error_kind(error), f"{type(error).__name__}: {error} (in member {member_name}, after line {number:,})")


def lines_before(index: GzipIndex) -> list[int]:
    """For each tar member of an indexed archive, the NDJSON lines before it: where ``tar_lines`` numbering stands there."""
    before, lines = [], 0
    for member in index.members:
        before.append(lines)
        lines += member.lines if is_ndjson(member.name) else 0
    return before


def range_lines(raw: BinaryIO, index: GzipIndex, part: GzipUnit, first_line: int, path: str, report: FileReport) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of the lines a range of an indexed archive owns, numbered as ``tar_lines`` numbers them.

    ``first_line``: ``lines_before(index)`` of the range's member. A damaged stream ends
    the iteration with one reject, as in ``tar_lines``.
    """
    number = first_line
    try:
        for line in iter_unit_lines(raw, index, part, path):
            number = first_line + line.number
            yield number, line.data
            if not line.data.endswith(b"\n"):
                _cut_inside_line(report, part.name, number)
    except GzipStreamError as error:
        report.reject(number + 1, error.kind, f"{error} (member {part.name}, bytes {part.start:,} to {part.end:,} of the tar)")


def _cut_inside_line(report: FileReport, member_name: str, number: int) -> None:
    report.reject(number, TRUNCATED_STREAM, f"member {member_name} ends inside line {number:,} (no final newline)")


def read_articles(lines: Iterable[tuple[int, bytes]], report: FileReport) -> Iterator[Article]:
    """Namespace-0 articles with non-empty text; every record is counted in ``report``."""
    for number, line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            if not line.strip():
                continue
            report.reject(number, MALFORMED_JSON, str(error))
            continue
        if not isinstance(record, dict):
            report.reject(number, NOT_AN_OBJECT, f"expected a JSON object, got {type(record).__name__}")
            continue
        article = _article(record, number, report)
        if article is not None:
            yield article


def _article(record: dict, number: int, report: FileReport) -> Article | None:
    page_id, title = record.get("identifier"), record.get("name")
    html = _dict_field(record, "article_body").get("html")
    missing = [name for name, value in (("identifier", page_id), ("name", title), ("article_body.html", html)) if value is None]
    if missing:
        report.reject(number, MISSING_FIELD, f"record missing {', '.join(missing)}")
        return None
    if isinstance(page_id, int) and not isinstance(page_id, bool):
        page_id = str(page_id)
    if not isinstance(page_id, str) or not is_page_id(page_id):
        report.reject(number, BAD_FIELD, f"identifier {str(page_id)[:40]!r} is not a page id")
        return None
    if not isinstance(title, str) or not title or not isinstance(html, str):
        report.reject(number, BAD_FIELD, f"page {page_id}: name and article_body.html must be strings")
        return None
    namespace = _dict_field(record, "namespace").get("identifier", 0)
    if namespace != 0:
        report.skip(OTHER_NAMESPACE)
        return None
    text = html_to_text(html)
    if not text:
        report.skip(EMPTY_TEXT)
        return None
    report.keep()
    return Article(page_id, title, text, entity_of(_dict_field(record, "main_entity").get("identifier")), number)
