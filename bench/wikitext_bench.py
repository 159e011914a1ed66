"""Speed and output of the XML path's wikitext-to-text converter on real pages.

Reads namespace-0, non-redirect pages from MediaWiki XML dumps (plain, .bz2, .xz, .gz;
a truncated dump's unfinished last page is left out) and from folders of ``.txt`` /
``.wikitext`` pages, by default ``tests/fixtures/wikitext``. On one core, interleaved
round by round (the order rotates), it times:

- floor, decompress: reading and decompressing the whole dump files (XML sources only;
  its MB/s are of the XML they hold, all pages and markup);
- floor, tokenize: ``mwparserfromhell.parse`` of each whole page;
- before: the converter as it was until 2026-11-26, ``mwparserfromhell.parse`` of the
  whole page then the same rendering (``WikitextConverter._render``);
- after: ``WikitextConverter.to_text`` (linear pre-pass, then parse what is left);
- floor, pre-pass: the pre-pass alone;
- wikitextparser: ``wikitextparser.parse(page).plain_text()``, when installed.

It prints MB/s of wikitext (UTF-8 bytes) and pages/s, median and range over the rounds,
the slowest pages of "after", and how the texts of "before" and "after" differ (pages
identical, words only in one of them). ``--templates`` counts the templates that sit
inside running text and the words ``INLINE_TEMPLATES`` gives back.

Usage: python bench/wikitext_bench.py [SOURCE ...] [--rounds 3] [--pages-per-source 0] [--templates]
"""

from __future__ import annotations

import argparse
import bz2
import collections
import gzip
import lzma
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat

import mwparserfromhell
from mwparserfromhell import parser as mw_parser

from clirmatrix.pipeline.method import wikitext
from clirmatrix.pipeline.method.wikitext import WikitextConverter

DEFAULT_SOURCE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "wikitext"
_OPENERS = {".bz2": bz2.open, ".xz": lzma.open, ".gz": gzip.open}


def _read_bytes(path: Path) -> bytes:
    with _OPENERS.get(path.suffix, open)(path, "rb") as stream:
        return stream.read()


def _xml_pages(raw: bytes) -> tuple[list[tuple[str, str]], set[str]]:
    """(title, wikitext) of namespace-0 non-redirect pages, and the File/Category names."""
    pages: list[tuple[str, str]] = []
    media: set[str] = set()
    page: dict = {}
    buffer: list[str] = []
    namespace_key: list[str | None] = [None]

    def start(name: str, attributes: dict) -> None:
        name = name.rpartition(" ")[2]
        buffer.clear()
        if name == "page":
            page.clear()
            page["redirect"] = False
        elif name == "redirect":
            page["redirect"] = True
        elif name == "namespace":
            namespace_key[0] = attributes.get("key")

    def end(name: str) -> None:
        name = name.rpartition(" ")[2]
        value = "".join(buffer)
        buffer.clear()
        if name in ("title", "ns", "text"):
            page.setdefault(name, value)
        elif name == "namespace" and namespace_key[0] in ("6", "14") and value.strip():
            media.add(value.strip())
        elif name == "page" and page.get("ns") == "0" and not page["redirect"]:
            pages.append((page["title"], page.get("text", "")))

    xml = expat.ParserCreate(namespace_separator=" ")
    xml.buffer_text = True
    xml.StartElementHandler, xml.EndElementHandler, xml.CharacterDataHandler = start, end, buffer.append
    try:
        xml.Parse(raw, True)
    except expat.ExpatError:
        pass  # a truncated sample dump: its pages up to the cut are kept
    return pages, media


def load_sources(sources: list[Path], per_source: int) -> list[dict]:
    """Each source: name, pages, its wiki's media names, and its dump files."""
    loaded = []
    for source in sources:
        if source.is_dir():
            files = sorted(p for p in source.iterdir() if p.suffix in (".txt", ".wikitext"))
            dumps = sorted(p for p in source.iterdir() if ".xml" in p.name)
            if files:
                pages = [(p.stem, p.read_text(encoding="utf-8")) for p in files]
                loaded.append({"name": source.name + "/*.txt", "pages": pages, "media": set(), "files": []})
            for dump in dumps:
                loaded.append(_dump_source(dump))
        else:
            loaded.append(_dump_source(source))
    for entry in loaded:
        if per_source:
            entry["pages"] = entry["pages"][:per_source]
    return loaded


def _dump_source(path: Path) -> dict:
    pages, media = _xml_pages(_read_bytes(path))
    return {"name": path.name, "pages": pages, "media": media, "files": [path]}


def before_to_text(converter: WikitextConverter, page: str) -> str:
    """The converter until 2026-11-26: the whole page through mwparserfromhell."""
    text = wikitext._MAGIC_WORD.sub("", converter._render(mwparserfromhell.parse(page)))
    text = wikitext._WHITESPACE.sub(" ", text).strip()
    return wikitext._SPACE_BEFORE_PUNCT.sub(r"\1", text)


def prepass_only(page: str) -> str:
    held: list[str] = []
    return wikitext._strip_templates_and_tables(wikitext._strip_opaque(page, held))


def _time_pages(function: Callable[[WikitextConverter, str], object], sources: list[dict], slowest: list) -> float:
    total = 0.0
    for source in sources:
        converter = WikitextConverter(source["media"])
        for title, page in source["pages"]:
            start = time.perf_counter()
            try:
                function(converter, page)
            except mw_parser.ParserError:
                pass
            elapsed = time.perf_counter() - start
            total += elapsed
            slowest.append((elapsed, source["name"], title, len(page.encode("utf-8"))))
    return total


def _time_decompress(sources: list[dict]) -> tuple[float, int]:
    """Seconds to read and decompress every dump file, and the bytes of XML they hold."""
    start, size = time.perf_counter(), 0
    for source in sources:
        for path in source["files"]:
            size += len(_read_bytes(path))
    return time.perf_counter() - start, size


def run(sources: list[dict], rounds: int) -> None:
    contenders: dict[str, Callable[[WikitextConverter, str], object]] = {
        "floor, tokenize (mwparserfromhell.parse)": lambda _c, page: mwparserfromhell.parse(page),
        "before: whole page through mwparserfromhell": before_to_text,
        "after: pre-pass + mwparserfromhell": lambda c, page: c.to_text(page),
        "floor, pre-pass only": lambda _c, page: prepass_only(page),
    }
    try:
        import wikitextparser

        contenders["wikitextparser plain_text()"] = lambda _c, page: wikitextparser.parse(page).plain_text()
    except ImportError:
        print("wikitextparser not installed: left out")
    megabytes = sum(len(page.encode("utf-8")) for source in sources for _, page in source["pages"]) / 1e6
    count = sum(len(source["pages"]) for source in sources)
    xml_megabytes = 0.0
    print(f"{count} pages, {megabytes:.2f} MB of wikitext; mwparserfromhell {mwparserfromhell.__version__}, "
          f"C tokenizer in use: {mw_parser.use_c}")
    names = list(contenders)
    seconds: dict[str, list[float]] = collections.defaultdict(list)
    slowest: dict[str, list] = collections.defaultdict(list)
    for round_index in range(rounds):
        order = names[round_index % len(names):] + names[:round_index % len(names)]
        for name in order:
            slow: list = []
            seconds[name].append(_time_pages(contenders[name], sources, slow))
            slowest[name] = slow
        if any(source["files"] for source in sources):
            elapsed, size = _time_decompress(sources)
            seconds["floor, read + decompress the dump files (MB of XML)"].append(elapsed)
            xml_megabytes = size / 1e6
        print(f"round {round_index + 1}/{rounds} done", file=sys.stderr, flush=True)
    print("\n| contender (one core) | MB/s median [range] | pages/s median | x before |")
    print("|---|---:|---:|---:|")
    reference = statistics.median(seconds[names[1]])
    for name, values in seconds.items():
        size = xml_megabytes if name.startswith("floor, read") else megabytes
        rates = sorted(size / value for value in values)
        median = statistics.median(values)
        decompress = name.startswith("floor, read")
        pages = "-" if decompress else f"{count / median:,.0f}"
        ratio = "-" if decompress else f"{reference / median:.2f}"
        print(f"| {name} | {size / median:.2f} [{rates[0]:.2f}-{rates[-1]:.2f}] | {pages} | {ratio} |")
    for name in (names[1], names[2]):
        worst = sorted(slowest[name], reverse=True)[:5]
        print(f"\nslowest pages, {name}: " + "; ".join(
            f"{title} ({source}, {size / 1e3:.0f} kB) {elapsed:.2f} s" for elapsed, source, title, size in worst))


def compare(sources: list[dict]) -> None:
    """How the text of "after" differs from "before", in words."""
    identical = total = 0
    only_before: collections.Counter = collections.Counter()
    only_after: collections.Counter = collections.Counter()
    markup = re.compile(r"[|={}\[\]<>]|''")
    for source in sources:
        converter = WikitextConverter(source["media"])
        for _, page in source["pages"]:
            before, after = before_to_text(converter, page), converter.to_text(page)
            total += 1
            if before == after:
                identical += 1
                continue
            words_before, words_after = collections.Counter(before.split()), collections.Counter(after.split())
            only_before.update(words_before - words_after)
            only_after.update(words_after - words_before)
    markup_before = sum(n for word, n in only_before.items() if markup.search(word))
    print(f"\ntexts identical on {identical} of {total} pages; words only in before: {sum(only_before.values())} "
          f"({markup_before} of them wiki markup left unparsed), only in after: {sum(only_after.values())}")
    print("most common only in before:", only_before.most_common(15))
    print("most common only in after:", only_after.most_common(15))


def survey_templates(sources: list[dict]) -> None:
    """Templates inside running text, and the words the inline templates give back."""
    inline: collections.Counter = collections.Counter()
    kept_words = total_words = 0
    for source in sources:
        converter = WikitextConverter(source["media"])
        plain = WikitextConverter(source["media"], inline_templates=False)
        for _, page in source["pages"]:
            for line in page.splitlines():
                if line.lstrip().startswith(("{", "|", "!", "}")):
                    continue
                for match in re.finditer(r"(?<=\S)\s*\{\{\s*([^{}|]+?)\s*[|}]", line):
                    inline[match.group(1).replace("_", " ").lower()] += 1
            text, without = converter.to_text(page), plain.to_text(page)
            kept_words += max(0, len(text.split()) - len(without.split()))
            total_words += len(text.split())
    print("\ntemplates inside running text, most common:", inline.most_common(40))
    print(f"words from INLINE_TEMPLATES: {kept_words} of {total_words} ({100 * kept_words / max(1, total_words):.2f}%)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", type=Path, default=[DEFAULT_SOURCE])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages-per-source", type=int, default=0, help="0: all")
    parser.add_argument("--templates", action="store_true", help="survey inline templates too")
    args = parser.parse_args(argv)
    sources = load_sources(args.sources, args.pages_per_source)
    run(sources, args.rounds)
    compare(sources)
    if args.templates:
        survey_templates(sources)
    return 0


if __name__ == "__main__":
    sys.exit(main())
