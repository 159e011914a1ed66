"""MediaWiki XML ``pages-articles`` dumps: namespace-0, non-redirect pages as plain text.

A source of documents for wikis or dates without a CirrusSearch dump (docs/method.md
section 1, [ours]). Parsed with expat, so a dump of any size runs in constant memory.
Two ways in: ``read_articles`` parses a whole stream (every problem reported with its
line); ``read_page_records`` parses the ``<page>`` elements one range of a bz2 dump
owns (``clirmatrix.pipeline.io.bz2_ranges``), each on its own, so a broken page costs
that page only. The ``<siteinfo>`` header supplies the wiki's localised File and
Category names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple
from xml.parsers import expat

from mwparserfromhell.parser import ParserError

from clirmatrix.pipeline.formats.cirrus import EMPTY_TEXT, OTHER_NAMESPACE, REDIRECT, Article, is_page_id
from clirmatrix.pipeline.io.badinput import BAD_FIELD, MALFORMED_PAGE, MALFORMED_XML, MISSING_FIELD, UNPARSEABLE_WIKITEXT, FileReport
from clirmatrix.pipeline.io.fileio import STREAM_ERRORS, stream_error_kind
from clirmatrix.pipeline.method.wikitext import WikitextConverter

NOT_WIKITEXT = "not_wikitext"
_CHUNK = 1 << 20
_MEDIA_NAMESPACE_KEYS = {"6", "14"}  # File, Category


class _PageCollector:
    """expat callbacks that gather the fields of each ``<page>`` element."""

    def __init__(self, parser: expat.XMLParserType) -> None:
        self.parser = parser
        self.path: list[str] = []
        self.buffer: list[str] = []
        self.page: dict | None = None
        self.pages: list[dict] = []
        self.namespace_key: str | None = None
        self.media_namespaces: set[str] = set()

    def start(self, name: str, attributes: dict) -> None:
        name = name.rpartition(" ")[2]  # namespace_separator=" " gives "uri local"
        self.path.append(name)
        self.buffer = []
        if name == "page":
            self.page = {"line": self.parser.CurrentLineNumber, "redirect": False}
        elif name == "redirect" and self.page is not None:
            self.page["redirect"] = True
        elif name == "namespace" and self.page is None:
            self.namespace_key = attributes.get("key")

    def text(self, data: str) -> None:
        self.buffer.append(data)

    def end(self, name: str) -> None:
        name = name.rpartition(" ")[2]
        value = "".join(self.buffer)
        self.buffer = []
        parent = self.path[-2] if len(self.path) > 1 else ""
        page = self.page
        if page is not None:
            if name == "page":
                self.pages.append(page)
                self.page = None
            elif parent == "page" and name in ("title", "ns", "id"):
                page[name] = value
            elif parent == "revision" and name in ("text", "model"):
                page[name] = value
        elif name == "namespace" and self.namespace_key in _MEDIA_NAMESPACE_KEYS and value.strip():
            self.media_namespaces.add(value.strip())
        self.path.pop()


def read_articles(stream: IO[bytes], report: FileReport) -> Iterator[Article]:
    """Articles of an XML dump; pages are counted in ``report`` like CirrusSearch records."""
    parser, collector = _collector()
    converter: WikitextConverter | None = None
    while True:
        try:
            chunk = stream.read(_CHUNK)
        except STREAM_ERRORS as error:
            report.reject(parser.CurrentLineNumber, stream_error_kind(error), f"{type(error).__name__}: {error}")
            return
        try:
            parser.Parse(chunk, not chunk)
        except expat.ExpatError as error:
            report.reject(error.lineno, MALFORMED_XML, str(error))
            return
        if collector.pages and converter is None:
            converter = WikitextConverter(collector.media_namespaces)
        for page in collector.pages:
            article = _article(page, converter, report)
            if article is not None:
                yield article
        collector.pages.clear()
        if not chunk:
            return


class PageRecord(NamedTuple):
    """One ``<page>`` element's bytes and its position (``bz2_ranges.pack_position``)."""

    position: int
    data: bytes


def _collector() -> tuple[expat.XMLParserType, _PageCollector]:
    parser = expat.ParserCreate(namespace_separator=" ")
    collector = _PageCollector(parser)
    parser.StartElementHandler = collector.start
    parser.EndElementHandler = collector.end
    parser.CharacterDataHandler = collector.text
    parser.buffer_text = True
    return parser, collector


def media_namespaces(prologue: bytes) -> set[str]:
    """The localised File and Category names of a dump's ``<siteinfo>`` (the bytes before its first ``<page>``)."""
    parser, collector = _collector()
    try:
        parser.Parse(prologue, False)  # not final: the root element stays open
    except expat.ExpatError:
        pass  # a damaged header costs the localised names only; the canonical ones still apply
    return collector.media_namespaces


def read_page_records(prologue: bytes, records: Iterable[PageRecord], report: FileReport) -> Iterator[Article]:
    """Articles of ``<page>`` elements parsed one by one; a page that is not well-formed XML is one reject."""
    converter = WikitextConverter(media_namespaces(prologue))
    for position, data in records:
        parser, collector = _collector()
        try:
            parser.Parse(data, True)
        except expat.ExpatError as error:
            report.reject(position, MALFORMED_PAGE, f"page is not well-formed XML: {error}")
            continue
        for page in collector.pages:
            page["line"] = position
            article = _article(page, converter, report)
            if article is not None:
                yield article


def _article(page: dict, converter: WikitextConverter, report: FileReport) -> Article | None:
    line = page["line"]
    missing = [name for name in ("title", "ns", "id") if not page.get(name, "").strip()]
    if missing:
        report.reject(line, MISSING_FIELD, f"page missing {', '.join(missing)}")
        return None
    if not is_page_id(page["id"].strip()):
        report.reject(line, BAD_FIELD, f"page id {page['id'].strip()[:40]!r} is not a page id")
        return None
    if page["ns"].strip() != "0":
        report.skip(OTHER_NAMESPACE)
        return None
    if page["redirect"]:
        report.skip(REDIRECT)
        return None
    if page.get("model", "wikitext") != "wikitext":
        report.skip(NOT_WIKITEXT)
        return None
    try:
        text = converter.to_text(page.get("text", ""))
    except ParserError as error:
        report.reject(line, UNPARSEABLE_WIKITEXT, f"page {page['id'].strip()}: {error}")
        return None
    if not text:
        report.skip(EMPTY_TEXT)
        return None
    report.keep()
    return Article(page["id"].strip(), page["title"].strip(), text, None, line)
