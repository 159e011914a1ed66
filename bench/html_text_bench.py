"""HTML -> text for the Enterprise HTML dumps: parser comparison and speed, side by side.

Contenders on the same real pages (tests/fixtures/html by default; ``--corpus`` adds
folders of Parsoid ``.html`` files and Enterprise ``.ndjson`` files):

- ``selectolax``: ours, ``clirmatrix.pipeline.html_text.html_to_text`` (lexbor), and
  ``html_to_parts`` (all four CirrusSearch fields);
- ``resiliparse``: its C extractor ``extract_plain_text`` with the same excluded and
  auxiliary selectors skipped (lexbor too, its own block and whitespace rules);
- ``mwparserfromhtml``: Wikimedia's Python package (BeautifulSoup), paragraphs of
  ``to_plaintext`` with headings, references, tables, infoboxes, navigation, notes,
  message boxes and media excluded;
- floors: each parser's parse alone (selectolax/lexbor, resiliparse/lexbor,
  BeautifulSoup's html.parser that mwparserfromhtml uses), and our source pre-pass.

Fidelity is measured against ``html_to_text_reference``, the slow literal port of
MediaWiki's WikiTextStructure (remove the elements from the DOM, serialize, strip the
tags with a space per block-level tag, collapse ASCII whitespace): the share of pages
whose text is identical, the bag-of-tokens F1, and reference marks ("[1]") left in.

Speed: one pass over all pages per contender per round, contenders interleaved
(the order rotates each round), on one core; medians with the range over ``--rounds``
rounds, as MB/s of UTF-8 HTML and pages/s (wall clock and CPU time), and as a ratio of
CPU time to the selectolax parse floor measured in the same round (CPU time, because a
shared machine stretches the wall clock). mwparserfromhtml runs on ``--slow-pages``
pages only.

resiliparse and mwparserfromhtml are not dependencies of clirmatrix; without them their
rows are left out (``.venv/bin/pip install resiliparse mwparserfromhtml``).

Usage: .venv/bin/python bench/html_text_bench.py [--corpus DIR_OR_FILE ...] [--rounds 7]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from clirmatrix.pipeline.html_text import (
    _BLOCK_TAG_START,
    AUXILIARY_SELECTORS,
    EXCLUDED_SELECTORS,
    html_to_parts,
    html_to_text,
    html_to_text_reference,
)

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "html"
_REF_MARK = re.compile(r"\[\d+\]")


def load_pages(paths: list[Path]) -> list[tuple[str, str]]:
    """(name, html) of every Parsoid page under ``paths``: .html files, .ndjson Enterprise records."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*")) if path.is_dir() else [path])
    pages = []
    for file in files:
        if file.suffix == ".html":
            pages.append((file.name, file.read_text(encoding="utf-8", errors="replace")))
        elif file.suffix == ".ndjson":
            for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    record = json.loads(line)
                    pages.append((f"{file.name}:{number}", record["article_body"]["html"]))
    return pages


def resiliparse_text(html: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    return extract_plain_text(
        tree, preserve_formatting=False, main_content=False, list_bullets=False, alt_texts=False,
        links=False, form_fields=False, noscript=True, comments=True,
        skip_elements=list(EXCLUDED_SELECTORS + AUXILIARY_SELECTORS),
    )


_MWPFH_EXCLUDED = {
    "Heading", "Citation", "Infobox", "Table", "Wikitable", "Navigation", "Note", "Messagebox",
    "Category", "Comment", "Media-img", "Media-audio", "Media-video",
}


def mwparserfromhtml_text(html: str) -> str:
    from mwparserfromhtml import Article

    try:
        article = Article(html)
    except Exception:  # it refuses pages without <base href>; counted as empty output
        return ""
    return " ".join(" ".join(article.wikistew.to_plaintext(exclude_elements=_MWPFH_EXCLUDED)).split())


def parse_selectolax(html: str) -> object:
    return LexborHTMLParser(html).body


def parse_resiliparse(html: str) -> object:
    from resiliparse.parse.html import HTMLTree

    return HTMLTree.parse(html).body


def parse_bs4(html: str) -> object:
    from bs4 import BeautifulSoup

    return BeautifulSoup(html, "html.parser")


def prepass(html: str) -> str:
    return _BLOCK_TAG_START.sub(" <", html)


def fidelity(name: str, extract: Callable[[str], str], pages: list[tuple[str, str]], reference: dict[str, str]) -> dict:
    """Identical pages, token F1 against the literal port, reference marks left."""
    identical = 0
    overlap = produced = expected = marks = 0
    for page, html in pages:
        text = extract(html)
        want = reference[page]
        identical += text == want
        got_tokens, want_tokens = Counter(text.split()), Counter(want.split())
        overlap += sum((got_tokens & want_tokens).values())
        produced += sum(got_tokens.values())
        expected += sum(want_tokens.values())
        marks += len(_REF_MARK.findall(text)) - len(_REF_MARK.findall(want))
    precision = overlap / produced if produced else 0.0
    recall = overlap / expected if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"name": name, "pages": len(pages), "identical": identical, "precision": precision, "recall": recall,
            "f1": f1, "extra_ref_marks": marks}


def timed_pass(function: Callable[[str], object], htmls: list[str]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for html in htmls:
        function(html)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, nargs="*", default=[], help="folders or files of pages (.html, .ndjson)")
    parser.add_argument("--no-fixtures", action="store_true", help="leave tests/fixtures/html out of the corpus")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; medians and ranges over them")
    parser.add_argument("--slow-pages", type=int, default=6, help="pages given to mwparserfromhtml (it is ~100x slower)")
    args = parser.parse_args(argv)

    missing = [package for package in ("resiliparse", "mwparserfromhtml") if importlib.util.find_spec(package) is None]
    if missing:
        print(f"left out, not installed: {', '.join(missing)} (.venv/bin/pip install {' '.join(missing)})")
    pages = load_pages(([] if args.no_fixtures else [FIXTURES]) + args.corpus)
    htmls = [html for _, html in pages]
    megabytes = sum(len(html.encode("utf-8")) for html in htmls) / 1e6
    slow = pages[: args.slow_pages]
    print(f"{datetime.date.today()}  {len(pages)} pages, {megabytes:.2f} MB of HTML; CPU {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; one process, one core")

    reference = {page: html_to_text_reference(html).text for page, html in pages}
    print("\nfidelity against the literal port of WikiTextStructure (text field)")
    print(f"{'contender':<22}{'pages':>6}{'identical':>10}{'precision':>10}{'recall':>8}{'F1':>8}{'extra [n]':>10}")
    rows = [
        fidelity("selectolax (ours)", html_to_text, pages, reference),
        fidelity("selectolax parts", lambda h: html_to_parts(h).text, pages, reference),
    ]
    if "resiliparse" not in missing:
        rows.append(fidelity("resiliparse", resiliparse_text, pages, reference))
    if "mwparserfromhtml" not in missing:
        rows.append(fidelity("mwparserfromhtml", mwparserfromhtml_text, slow, reference))
    for row in rows:
        print(f"{row['name']:<22}{row['pages']:>6}{row['identical']:>10}{row['precision']:>10.4f}"
              f"{row['recall']:>8.4f}{row['f1']:>8.4f}{row['extra_ref_marks']:>10}")

    contenders: list[tuple[str, Callable[[str], object], list[str]]] = [
        ("parse selectolax", parse_selectolax, htmls),
        ("parse resiliparse", parse_resiliparse, htmls),
        ("pre-pass regex", prepass, htmls),
        ("html_to_text (ours)", html_to_text, htmls),
        ("html_to_parts (ours)", html_to_parts, htmls),
        ("resiliparse extract", resiliparse_text, htmls),
        ("reference (literal)", html_to_text_reference, htmls),
        ("parse bs4 html.parser", parse_bs4, [h for _, h in slow]),
        ("mwparserfromhtml", mwparserfromhtml_text, [h for _, h in slow]),
    ]
    needs = {"parse resiliparse": "resiliparse", "resiliparse extract": "resiliparse", "parse bs4 html.parser": "mwparserfromhtml",
             "mwparserfromhtml": "mwparserfromhtml"}
    contenders = [c for c in contenders if needs.get(c[0]) not in missing]
    sizes = {name: sum(len(h.encode("utf-8")) for h in hs) / 1e6 for name, _, hs in contenders}
    walls: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    ratios: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    for function in (f for _, f, _ in contenders):  # warm-up: imports, caches
        function(htmls[0])
    for round_number in range(args.rounds):
        shift = round_number % len(contenders)
        order = contenders[shift:] + contenders[:shift]
        this_round = {}
        for name, function, batch in order:
            wall, cpu = timed_pass(function, batch)
            walls[name].append(wall)
            cpus[name].append(cpu)
            this_round[name] = max(cpu, 1e-9) / sizes[name]
        for name in this_round:
            ratios[name].append(this_round[name] / this_round["parse selectolax"])

    print(f"\nspeed, one core, median [min-max] of {args.rounds} interleaved rounds (wall clock; CPU beside)")
    print(f"{'contender':<24}{'pages':>6}{'MB/s':>8}{'range':>16}{'pages/s':>9}{'CPU MB/s':>10}{'range':>16}"
          f"{'CPU pages/s':>12}{'x parse floor':>15}")
    for name, _, batch in contenders:
        mbps = [sizes[name] / w for w in walls[name]]
        pps = [len(batch) / w for w in walls[name]]
        cpu_mbps = [sizes[name] / max(c, 1e-9) for c in cpus[name]]
        cpu_pps = [len(batch) / max(c, 1e-9) for c in cpus[name]]
        print(f"{name:<24}{len(batch):>6}{statistics.median(mbps):>8.1f}"
              f"{f'[{min(mbps):.1f}-{max(mbps):.1f}]':>16}{statistics.median(pps):>9.1f}{statistics.median(cpu_mbps):>10.1f}"
              f"{f'[{min(cpu_mbps):.1f}-{max(cpu_mbps):.1f}]':>16}{statistics.median(cpu_pps):>12.1f}"
              f"{statistics.median(ratios[name]):>15.2f}")
    print("\nx parse floor: CPU seconds per MB over the selectolax parse's CPU seconds per MB in the same round"
          f" (median of rounds); CPU time, as this machine is shared (load {os.getloadavg()[0]:.2f} at the end).")


if __name__ == "__main__":
    main()
