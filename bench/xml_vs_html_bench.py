"""How much of the HTML path's text the XML path keeps, on real pages that carry both.

Wikimedia Enterprise article records hold a page's Parsoid HTML and its wikitext of the
same revision (``article_body.html``, ``article_body.wikitext``). For each record this
takes the text each path of the build writes for the page, with the build's own readers:

- HTML: ``enterprise_html.read_articles`` on the record, as an Enterprise dump line;
- XML: ``mediawiki_xml.read_articles`` on the wikitext written as a one-page XML dump
  whose ``<siteinfo>`` names the wiki's File and Category namespaces (``MEDIA_NAMESPACES``);

then word tokens (``\\w+``, case-folded) of each, and prints per page the share of the HTML
text's tokens that the XML text has (multiset overlap: |xml & html| / |html|), on the
whole text (``DOCS-FULL``) and on the truncated one (``DOCS``, section 2 of docs/method.md),
the reverse share (XML tokens found in the HTML text: what the XML path adds that the page
does not show), and the share with the HTML page's reference list left out (CirrusSearch
keeps it; the XML path drops ``<ref>``).

``--before REV`` adds the same measure with ``pipeline/method/wikitext.py`` as it was at
git revision REV (loaded from ``git show``). ``--templates N`` lists, over every template
call Parsoid marked in the HTML (records and plain ``.html`` pages) outside removed
elements, the words the call shows on the page and how many the XML path's rendering of
the same call keeps: the N templates that lose most. ``--lost N``: each page's N most
frequent words only in the HTML text. ``--speed N``: MB/s of the converter on the records'
wikitext over N interleaved rounds (and at REV with ``--before``).

Usage: python bench/xml_vs_html_bench.py [SOURCE ...] [--before REV] [--templates N] [--lost N] [--speed N]
SOURCE: records (.ndjson, one a line, or .json, one a file) or Parsoid pages (.html), each
maybe .xz/.gz/.bz2, or folders of them; default: tests/fixtures/wikitext/enterprise and
tests/fixtures/html.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import gzip
import importlib.util
import json
import lzma
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock
from xml.sax.saxutils import escape

import orjson
from selectolax.lexbor import LexborHTMLParser

from clirmatrix.pipeline.formats import enterprise_html, mediawiki_xml
from clirmatrix.pipeline.io.badinput import FileReport
from clirmatrix.pipeline.method import html_text
from clirmatrix.pipeline.method.languages import is_unspaced
from clirmatrix.pipeline.method.truncate import rule_for, truncate
from clirmatrix.pipeline.method.wikitext import WikitextConverter, inline_rule

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCES = [REPO / "tests" / "fixtures" / "wikitext" / "enterprise", REPO / "tests" / "fixtures" / "html"]
_OPENERS = {".xz": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}
# The File and Category namespace names each wiki's XML dump gives in <siteinfo> (the
# canonical English ones always apply); a wiki not listed gets only the canonical ones.
MEDIA_NAMESPACES: dict[str, tuple[str, ...]] = {
    "de": ("Datei", "Kategorie"), "fr": ("Fichier", "Catégorie"), "ru": ("Файл", "Категория"),
    "pt": ("Ficheiro", "Categoria"), "es": ("Archivo", "Categoría"), "it": ("File", "Categoria"),
}
_WORD = re.compile(r"\w+")
_REFERENCE_LIST = ".mw-references-wrap, ol.references"
_SUFFIXES = re.compile(r"(?:\.(?:ndjson|json|html))?(?:\.(?:xz|gz|bz2))?$")


class Record:
    """One page with both texts' sources: its name, wiki, language, HTML and wikitext."""

    def __init__(self, name: str, raw: bytes) -> None:
        self.name = name
        self.raw = raw
        record = orjson.loads(raw)
        self.wiki = (record.get("is_part_of") or {}).get("identifier", "")
        self.lang = self.wiki.removesuffix("wiki").replace("_", "-")
        body = record.get("article_body") or {}
        self.html: str = body.get("html") or ""
        self.wikitext: str | None = body.get("wikitext")
        self.title: str = record.get("name", "")
        if self.wiki and self.title:
            self.name = f"{self.wiki} {self.title}"


def _read(path: Path) -> bytes:
    with _OPENERS.get(path.suffix, open)(path, "rb") as stream:
        return stream.read()


def _files(sources: list[Path]) -> list[Path]:
    found: list[Path] = []
    for source in sources:
        found.extend(sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source])
    return [p for p in found if any(kind in p.name for kind in (".ndjson", ".json", ".html"))]


def load(sources: list[Path]) -> tuple[list[Record], list[tuple[str, str]]]:
    """Records with both HTML and wikitext, and (name, HTML) of every page; a page found again is skipped."""
    records: list[Record] = []
    pages: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path in _files(sources):
        raw = _read(path)
        stem = _SUFFIXES.sub("", path.name)
        if ".html" in path.name:
            pages.append((stem, raw.decode("utf-8", "replace")))
            continue
        lines = raw.splitlines() if ".ndjson" in path.name else [raw]
        for line in (line for line in lines if line.strip()):
            record = Record(stem, line)
            if record.name in seen:
                continue
            seen.add(record.name)
            pages.append((record.name, record.html))
            if record.wikitext is not None and record.html:
                records.append(record)
    return records, pages


def html_path_text(record: Record) -> str:
    """The HTML path's text of the page: the Enterprise dump reader's, on the record as a dump line."""
    articles = list(enterprise_html.read_articles([(1, record.raw)], FileReport(record.name)))
    return articles[0].text if articles else ""


def xml_path_text(record: Record) -> str:
    """The XML path's text of the page: the XML dump reader's, on a one-page dump of its wikitext."""
    names = "".join(f'<namespace key="{key}">{escape(name)}</namespace>'
                    for key, name in zip(("6", "14"), MEDIA_NAMESPACES.get(record.lang, ())))
    dump = (f"<mediawiki><siteinfo><namespaces>{names}</namespaces></siteinfo><page><title>{escape(record.title)}"
            f"</title><ns>0</ns><id>1</id><revision><id>1</id><model>wikitext</model><text>"
            f"{escape(record.wikitext or '')}</text></revision></page></mediawiki>")
    with tempfile.TemporaryFile() as stream:
        stream.write(dump.encode("utf-8"))
        stream.seek(0)
        articles = list(mediawiki_xml.read_articles(stream, FileReport(record.name)))
    return articles[0].text if articles else ""


def words(text: str) -> collections.Counter:
    """Word tokens, case-folded, as a multiset."""
    return collections.Counter(_WORD.findall(text.casefold()))


def share(kept: collections.Counter, of: collections.Counter) -> float:
    """The share of ``of``'s tokens that ``kept`` has (multiset overlap)."""
    total = sum(of.values())
    return sum((kept & of).values()) / total if total else 1.0


def docs_text(text: str, lang: str) -> str:
    """The truncated text that goes to DOCS."""
    return truncate(text, rule_for(is_unspaced(lang)))


def without_reference_list(html: str) -> str:
    """The HTML path's text of a page with its reference list taken out."""
    tree = LexborHTMLParser(html)
    for node in tree.css(_REFERENCE_LIST):
        node.decompose()
    return html_text.html_to_text(tree.html or "")


def measure(record: Record) -> dict[str, float]:
    """The word shares of one page (see the module's docstring)."""
    html, xml = html_path_text(record), xml_path_text(record)
    html_words, xml_words = words(html), words(xml)
    html_docs, xml_docs = words(docs_text(html, record.lang)), words(docs_text(xml, record.lang))
    return {
        "html words": sum(html_words.values()),
        "kept": share(xml_words, html_words),
        "kept, DOCS": share(xml_docs, html_docs),
        "xml in html": share(html_words, xml_words),
        "kept, no reference list": share(xml_words, words(without_reference_list(record.html))),
    }


def module_at(revision: str) -> object:
    """``pipeline/method/wikitext.py`` as it was at a git revision, as a module."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:pipeline/method/wikitext.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(f"wikitext_at_{revision}", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"wikitext.py@{revision}", "exec"), module.__dict__)  # noqa: S102 - our own file, from git
    return module


def page_table(records: list[Record], before: str | None) -> None:
    rows = [(record, measure(record)) for record in records]
    earlier: dict[str, dict[str, float]] = {}
    if before:
        old = module_at(before)
        with mock.patch.object(mediawiki_xml, "WikitextConverter", old.WikitextConverter):
            earlier = {record.name: measure(record) for record in records}
    head = "| page | words in HTML text | kept" + (f" at {before[:7]}" if before else "") + (" | kept now" if before else "")
    head += " | DOCS" + (f" at {before[:7]} | DOCS now" if before else "") + " | XML words in HTML | kept, reference list aside |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for record, now in rows:
        cells = [record.name, f"{now['html words']:,}"]
        if before:
            cells += [f"{100 * earlier[record.name]['kept']:.1f} %", f"{100 * now['kept']:.1f} %",
                      f"{100 * earlier[record.name]['kept, DOCS']:.1f} %"]
        else:
            cells.append(f"{100 * now['kept']:.1f} %")
        cells += [f"{100 * now['kept, DOCS']:.1f} %", f"{100 * now['xml in html']:.1f} %",
                  f"{100 * now['kept, no reference list']:.1f} %"]
        print("| " + " | ".join(cells) + " |")


def lost_words(records: list[Record], count: int) -> None:
    for record in records:
        lost = words(html_path_text(record)) - words(xml_path_text(record))
        print(f"\n{record.name}: {sum(lost.values())} words only in the HTML text; most frequent:",
              ", ".join(f"{word} {n}" for word, n in lost.most_common(count)))


def _template_wikitext(template: dict) -> str:
    """A template call's wikitext from Parsoid's data-mw (parameters in their order)."""
    parts, number = [template["target"]["wt"]], 0
    for key, value in template.get("params", {}).items():
        text = value.get("wt", "")
        if key == str(number + 1) and "=" not in text:
            parts.append(text)
            number += 1
        else:
            parts.append(f"{key}={text}")
    return "{{" + "|".join(parts) + "}}"


def _in_removed(node) -> bool:
    node = node.parent
    while node is not None and node.tag not in ("body", "html"):
        classes = node.attributes.get("class") or ""
        if html_text._is_removed(node) or "mw-references-wrap" in classes or "mw:Extension/ref" in (
                node.attributes.get("typeof") or ""):
            return True
        node = node.parent
    return False


def template_calls(html: str) -> Iterator[tuple[str, str, str]]:
    """(name, wikitext, text shown) of each template call Parsoid marked outside removed elements."""
    body = LexborHTMLParser(html).body
    if body is None:
        return
    groups: dict[str, list] = {}
    for node in body.css("[about]"):
        about = node.attributes.get("about") or ""
        if about.startswith("#mwt"):
            groups.setdefault(about, []).append(node)
    for about, nodes in groups.items():
        if "mw:Transclusion" not in (nodes[0].attributes.get("typeof") or "") or _in_removed(nodes[0]):
            continue
        try:
            parts = json.loads(nodes[0].attributes.get("data-mw") or "{}").get("parts", [])
        except ValueError:
            continue
        if len(parts) != 1 or not isinstance(parts[0], dict) or "template" not in parts[0]:
            continue
        tops = [node for node in nodes if (node.parent is None or node.parent.attributes.get("about") != about)]
        shown = html_text.html_to_text("<body>" + "".join(node.html or "" for node in tops) + "</body>")
        name = re.sub(r"[\s_]+", " ", parts[0]["template"]["target"].get("wt", "")).strip().lower()
        yield name, _template_wikitext(parts[0]["template"]), shown


def template_table(pages: list[tuple[str, str]], count: int, before: str | None) -> None:
    converters = {"now": WikitextConverter()}
    if before:
        converters[before] = module_at(before).WikitextConverter()
    stats: dict[str, list] = collections.defaultdict(lambda: [0, 0, collections.Counter(), set()])
    for page, html in pages:
        for name, wikitext, shown in template_calls(html):
            on_page = words(shown)
            entry = stats[name]
            entry[0] += 1
            entry[1] += sum(on_page.values())
            entry[3].add(page)
            for label, converter in converters.items():
                entry[2][label] += sum((words(converter.to_text(wikitext)) & on_page).values())
    total = sum(entry[1] for entry in stats.values())
    labels = list(converters)
    print(f"\n{len(pages)} pages, {sum(e[0] for e in stats.values()):,} template calls outside removed elements, "
          f"{total:,} words shown by them; kept: " + ", ".join(
              f"{label[:7]} {sum(e[2][label] for e in stats.values()):,}" for label in labels))
    ruled = [entry for name, entry in stats.items() if inline_rule(name) is not None]
    print(f"templates with an inline rule now: {sum(e[0] for e in ruled):,} calls, {sum(e[1] for e in ruled):,} words "
          "shown; kept: " + ", ".join(f"{label[:7]} {sum(e[2][label] for e in ruled):,}" for label in labels))
    print("| template | calls | pages | words shown | " + " | ".join(f"kept {label[:7]}" for label in labels) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(labels))
    ranked = sorted(stats.items(), key=lambda item: item[1][2]["now"] - item[1][1])
    for name, (calls, shown, kept, where) in ranked[:count]:
        print(f"| {name} | {calls} | {len(where)} | {shown:,} | " + " | ".join(f"{kept[label]:,}" for label in labels) + " |")


def speed(records: list[Record], rounds: int, before: str | None) -> None:
    """MB/s of wikitext through ``WikitextConverter.to_text`` on the records, now and at ``before``, interleaved."""
    converters = {"now": WikitextConverter()}
    if before:
        converters[before[:7]] = module_at(before).WikitextConverter()
    pages = [record.wikitext or "" for record in records]
    size = sum(len(page.encode("utf-8")) for page in pages) / 1e6
    rates: dict[str, list[float]] = collections.defaultdict(list)
    for round_index in range(rounds):
        for label in list(converters)[round_index % 2:] + list(converters)[:round_index % 2]:
            start = time.perf_counter()
            for page in pages:
                converters[label].to_text(page)
            rates[label].append(size / (time.perf_counter() - start))
    print(f"\n{len(pages)} pages, {size:.2f} MB of wikitext, {rounds} rounds: " + "; ".join(
        f"{label} {statistics.median(values):.2f} MB/s [{min(values):.2f}-{max(values):.2f}]" for label, values in rates.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", type=Path, default=DEFAULT_SOURCES)
    parser.add_argument("--before", help="git revision whose wikitext.py to compare with")
    parser.add_argument("--templates", type=int, default=0, help="list the N templates that lose most words")
    parser.add_argument("--lost", type=int, default=0, help="each page's N most frequent words only in HTML")
    parser.add_argument("--speed", type=int, default=0, help="time the converter over N rounds")
    args = parser.parse_args(argv)
    records, pages = load(args.sources)
    page_table(records, args.before)
    if args.lost:
        lost_words(records, args.lost)
    if args.templates:
        template_table(pages, args.templates, args.before)
    if args.speed:
        speed(records, args.speed, args.before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
