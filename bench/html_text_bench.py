"""HTML -> text for the Enterprise HTML dumps: parser comparison and speed, side by side.

Contenders on the same real pages (tests/fixtures/html by default; ``--corpus`` adds
folders of Parsoid ``.html`` files, Enterprise ``.ndjson`` files and Enterprise dumps
``*.json.tar.gz``, e.g. the realistic ones of bench/realistic_dumps.py):

- ``selectolax``: ours, ``clirmatrix.pipeline.method.html_text.html_to_text`` (lexbor), and
  ``html_to_parts`` (all four CirrusSearch fields);
- ``--old PATH``: another version of ``html_text.py`` (e.g. a checkout of an older
  commit), loaded as its own module, side by side with ours: its speed, and on how
  many pages its output is identical to ours (it must be all of them for a speed-only
  change);
- ``resiliparse``: its C extractor ``extract_plain_text`` with the same excluded and
  auxiliary selectors skipped (lexbor too, its own block and whitespace rules);
- ``mwparserfromhtml``: Wikimedia's Python package (BeautifulSoup), paragraphs of
  ``to_plaintext`` with headings, references, tables, infoboxes, navigation, notes,
  message boxes and media excluded;
- floors: each parser's parse alone (selectolax/lexbor, resiliparse/lexbor,
  BeautifulSoup's html.parser that mwparserfromhtml uses), and our source pre-pass
  (UTF-8 encoding and the block-tag regular expression).

Fidelity is measured against ``html_to_text_reference``, the slow literal port of
MediaWiki's WikiTextStructure (remove the elements from the DOM, serialize, strip the
tags with a space per block-level tag, collapse ASCII whitespace): the share of pages
whose text is identical, the bag-of-tokens F1, and reference marks ("[1]") left in.

Speed: every round runs every contender on every page, page by page, the contenders in
a shuffled order on each page (seeded), so that all of them see the same moments of a
shared machine; on one core; medians with the range over ``--rounds`` rounds, as MB/s
of UTF-8 HTML and pages/s (CPU time, and wall clock beside it), and as a ratio of CPU
time to the selectolax parse floor in the same round (CPU time, because a shared machine
stretches the wall clock). mwparserfromhtml and its parser run on ``--slow-pages`` pages
only.

resiliparse and mwparserfromhtml are not dependencies of clirmatrix; without them their
rows are left out (``.venv/bin/pip install resiliparse mwparserfromhtml``).

Usage: .venv/bin/python bench/html_text_bench.py [--corpus DIR_OR_FILE ...] [--rounds 7]
       [--old path/to/old/html_text.py] [--only-ours]
(an older version: ``git show COMMIT:pipeline/method/html_text.py > /tmp/html_text_old.py``;
``--only-ours`` leaves out the other libraries and the reference, for a quicker run)
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import random
import re
import statistics
import tarfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser

from clirmatrix.pipeline.method.html_text import (
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
    """(name, html) of every Parsoid page under ``paths``: .html files, .ndjson Enterprise records,
    and the records of Enterprise dumps (.tar.gz of NDJSON members)."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*")) if path.is_dir() else [path])
    pages = []
    for file in files:
        if file.suffix == ".html":
            pages.append((file.name, file.read_text(encoding="utf-8", errors="replace")))
        elif file.suffix == ".ndjson":
            pages.extend(_records(file.name, file.read_bytes().splitlines()))
        elif file.name.endswith(".tar.gz"):
            with tarfile.open(file, "r:gz") as archive:
                for member in archive:
                    stream = archive.extractfile(member) if member.name.endswith(".ndjson") else None
                    if stream is not None:
                        pages.extend(_records(f"{file.name}/{member.name}", stream.read().splitlines()))
    return pages


def _records(name: str, lines: list[bytes]) -> list[tuple[str, str]]:
    return [(f"{name}:{number}", json.loads(line)["article_body"]["html"])
            for number, line in enumerate(lines, 1) if line.strip()]


def load_module(path: Path) -> ModuleType:
    """Another version of html_text.py, as a module of its own (its imports are the installed ones)."""
    spec = importlib.util.spec_from_file_location("html_text_other", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def prepass(html: str) -> bytes:
    return _BLOCK_TAG_START.sub(b" <", html.encode())


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


def timed_rounds(contenders: list[tuple[str, Callable[[str], object], int]], htmls: list[str],
                 rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per contender per round; page by page, contenders shuffled on each page.

    A contender's int is how many of the first pages it runs on.
    """
    walls = {name: [] for name, _, _ in contenders}
    cpus = {name: [] for name, _, _ in contenders}
    shuffle = random.Random(1).shuffle
    for _ in range(rounds):
        wall = dict.fromkeys(walls, 0.0)
        cpu = dict.fromkeys(walls, 0.0)
        for index, html in enumerate(htmls):
            order = [c for c in contenders if index < c[2]]
            shuffle(order)
            for name, function, _ in order:
                started_wall, started_cpu = time.perf_counter(), time.process_time()
                function(html)
                cpu[name] += time.process_time() - started_cpu
                wall[name] += time.perf_counter() - started_wall
        for name in walls:
            walls[name].append(wall[name])
            cpus[name].append(cpu[name])
    return walls, cpus


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, nargs="*", default=[],
                        help="folders or files of pages (.html, .ndjson, Enterprise .json.tar.gz)")
    parser.add_argument("--no-fixtures", action="store_true", help="leave tests/fixtures/html out of the corpus")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; medians and ranges over them")
    parser.add_argument("--slow-pages", type=int, default=6, help="pages given to mwparserfromhtml (it is ~100x slower)")
    parser.add_argument("--old", type=Path, help="another html_text.py to run beside ours (e.g. an older commit's)")
    parser.add_argument("--only-ours", action="store_true",
                        help="only the parse floor, the pre-pass, ours and --old: no other libraries, no reference")
    args = parser.parse_args(argv)

    missing = [package for package in ("resiliparse", "mwparserfromhtml") if importlib.util.find_spec(package) is None]
    if args.only_ours:
        missing = ["resiliparse", "mwparserfromhtml"]
    elif missing:
        print(f"left out, not installed: {', '.join(missing)} (.venv/bin/pip install {' '.join(missing)})")
    old = load_module(args.old) if args.old else None
    pages = load_pages(([] if args.no_fixtures else [FIXTURES]) + args.corpus)
    htmls = [html for _, html in pages]
    megabytes = sum(len(html.encode("utf-8")) for html in htmls) / 1e6
    slow = pages[: args.slow_pages]
    print(f"{datetime.date.today()}  {len(pages)} pages, {megabytes:.2f} MB of HTML; CPU {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; one process, one core")

    if old is not None:
        same_text = sum(old.html_to_text(html) == html_to_text(html) for html in htmls)
        same_parts = sum(tuple(old.html_to_parts(html)) == tuple(html_to_parts(html)) for html in htmls)
        print(f"\n--old {args.old}: html_to_text identical to ours on {same_text} of {len(pages)} pages, "
              f"html_to_parts on {same_parts}")
    if not args.only_ours:
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

    every, few = len(htmls), len(slow)
    contenders: list[tuple[str, Callable[[str], object], int]] = [
        ("parse selectolax", parse_selectolax, every),
        ("parse resiliparse", parse_resiliparse, every),
        ("pre-pass (encode+regex)", prepass, every),
        ("html_to_text (ours)", html_to_text, every),
        ("html_to_text (--old)", old.html_to_text if old else html_to_text, every),
        ("html_to_parts (ours)", html_to_parts, every),
        ("resiliparse extract", resiliparse_text, every),
        ("reference (literal)", html_to_text_reference, every),
        ("parse bs4 html.parser", parse_bs4, few),
        ("mwparserfromhtml", mwparserfromhtml_text, few),
    ]
    needs = {"parse resiliparse": "resiliparse", "resiliparse extract": "resiliparse", "parse bs4 html.parser": "mwparserfromhtml",
             "mwparserfromhtml": "mwparserfromhtml"}
    contenders = [c for c in contenders if needs.get(c[0]) not in missing and (old or c[0] != "html_to_text (--old)")
                  and not (args.only_ours and c[0] in ("html_to_parts (ours)", "reference (literal)"))]
    sizes = {name: sum(len(h.encode("utf-8")) for h in htmls[:count]) / 1e6 for name, _, count in contenders}
    for _, function, _ in contenders:  # warm-up: imports, caches
        function(htmls[0])
    walls, cpus = timed_rounds(contenders, htmls, args.rounds)
    floor = [cpu / sizes["parse selectolax"] for cpu in cpus["parse selectolax"]]
    ratios = {name: [max(cpu, 1e-9) / sizes[name] / f for cpu, f in zip(cpus[name], floor)] for name, _, _ in contenders}

    print(f"\nspeed, one core, median [min-max] of {args.rounds} rounds, interleaved page by page (CPU time; wall clock beside)")
    print(f"{'contender':<26}{'pages':>6}{'CPU MB/s':>10}{'range':>16}{'CPU pages/s':>12}{'wall MB/s':>10}{'range':>16}"
          f"{'x parse':>9}{'range':>14}")
    for name, _, count in contenders:
        cpu_mbps = [sizes[name] / max(c, 1e-9) for c in cpus[name]]
        cpu_pps = [count / max(c, 1e-9) for c in cpus[name]]
        mbps = [sizes[name] / max(w, 1e-9) for w in walls[name]]
        ratio = ratios[name]
        print(f"{name:<26}{count:>6}{statistics.median(cpu_mbps):>10.1f}"
              f"{f'[{min(cpu_mbps):.1f}-{max(cpu_mbps):.1f}]':>16}{statistics.median(cpu_pps):>12.1f}"
              f"{statistics.median(mbps):>10.1f}{f'[{min(mbps):.1f}-{max(mbps):.1f}]':>16}"
              f"{statistics.median(ratio):>9.2f}{f'[{min(ratio):.2f}-{max(ratio):.2f}]':>14}")
    if old is not None:
        speedup = [o / n for o, n in zip(cpus["html_to_text (--old)"], cpus["html_to_text (ours)"])]
        print(f"\nours against --old: {statistics.median(speedup):.3f}x as fast "
              f"[{min(speedup):.3f}-{max(speedup):.3f}] (CPU seconds of --old over ours, per round)")
    print("\nx parse: CPU seconds per MB over the selectolax parse's CPU seconds per MB in the same round"
          f" (median of rounds); CPU time, as this machine is shared (load {os.getloadavg()[0]:.2f} at the end).")


if __name__ == "__main__":
    main()
