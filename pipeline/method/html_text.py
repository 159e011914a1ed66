"""Article text from rendered Wikipedia HTML, as CirrusSearch builds its ``text`` field.

CLIRMatrix indexed CirrusSearch's ``text`` field (docs/method.md section 1). CirrusSearch
fills it in MediaWiki's ``WikiTextStructure`` from the page's rendered HTML: elements
matching the *excluded* selectors are dropped, those matching the *auxiliary* selectors
go to ``auxiliary_text``, headings go to ``heading``, and what is left is stripped of
tags by ``Sanitizer::stripAllTags``, which puts a space at every start and end tag of a
block-level element (``RemexStripTagHandler``'s list, below) and collapses runs of ASCII
whitespace (space, tab, CR, LF) to one space. ``opening_text`` is the same treatment of
the HTML before the first heading (``None`` when the page has no heading or nothing is
left before it). The selector lists are MediaWiki's (2019 and 2025 versions compared in
docs/method.md, "Text from HTML"); the additions for Parsoid's markup, which the
Wikimedia Enterprise HTML dumps carry, are marked [ours] there and below.

A whole Parsoid page (what the Enterprise dumps carry) is read in one pass over its bytes
by ``html_scan`` (3.7-4.3x as fast, the same text: it refuses any page whose tags the
HTML parser would rearrange); every other page, and pages with language variants, go the
way below. ``parsed_text`` is that way alone.

Hand-written on selectolax (lexbor) because no library reproduces ``WikiTextStructure``
(resiliparse's C extractor gives the same text on real Parsoid pages, but by its own
rules: a space at <center>, <details>, <noscript>, none for form fields; it is about as
fast as this module; mwparserfromhtml is paragraph-based and 30x slower).
Every pass over the page runs in C: the UTF-8 encoding, one regular expression over the
bytes that puts the block-level spaces in, the lexbor parse, one CSS query, lexbor's
text walk, bytes methods for the whitespace. Python loops only over the elements the
query matched. Two walks of the tree (the query, the text) and the pre-pass are what
is left above the bare parse (docs/benchmarks.md, "HTML to text");
bench/html_text_bench.py compares the parsers, and this module against an older one,
and measures the speed against the bare parse.
"""

from __future__ import annotations

import re
import sys
import threading
from html import unescape
from typing import NamedTuple

import orjson
from selectolax.lexbor import LexborCSSSelector, LexborHTMLParser, LexborNode

from clirmatrix.pipeline.method.html_scan import scan_text

# WikiTextStructure's excluded selectors (MediaWiki core, 2019 and 2025 alike), plus [ours]:
# Parsoid's reference back-links ([rel="mw:referencedBy"], legacy .mw-cite-backlink),
# script (RemexStripTagHandler drops its text; Parsoid emits none) and the legacy
# parser's section edit links (CirrusSearch asks for HTML without them).
EXCLUDED_SELECTORS: tuple[str, ...] = (
    "audio",
    "video",
    "style",
    "script",
    "sup.reference",
    ".mw-cite-backlink",
    '[rel="mw:referencedBy"]',
    ".mw-editsection",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    ".autocollapse",
    ".navigation-not-searchable",
    ".wbmi-entityview-emptyCaption",
)

# WikiTextStructure's auxiliary selectors; figcaption is in the 2025 list (Parsoid's and
# the new legacy media markup give thumbnail captions as <figcaption>, the old legacy
# markup as div.thumbcaption).
AUXILIARY_SELECTORS: tuple[str, ...] = (
    ".thumbcaption",
    "figcaption",
    "table",
    ".rellink",
    ".dablink",
    ".searchaux",
)

# RemexStripTagHandler::BLOCK_LEVEL_TAGS: stripAllTags puts a space at each of these tags.
BLOCK_TAGS: tuple[str, ...] = (
    "address", "article", "aside", "blockquote", "br", "canvas", "dd", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hgroup", "hr", "li", "main", "nav", "noscript", "ol", "output", "p", "pre",
    "section", "table", "td", "tfoot", "th", "tr", "ul", "video",
)

_HEADINGS = "h1, h2, h3, h4, h5, h6"
_EXCLUDED_NOT_HEADINGS = ", ".join(s for s in EXCLUDED_SELECTORS if s not in _HEADINGS.split(", "))
_REMOVED = ", ".join(EXCLUDED_SELECTORS + AUXILIARY_SELECTORS)
_AUXILIARY = ", ".join(AUXILIARY_SELECTORS)
_LANGUAGE_VARIANT_MARK = "mw:LanguageVariant"
_LANGUAGE_VARIANT = f'[typeof~="{_LANGUAGE_VARIANT_MARK}"]'
_LANGUAGE_VARIANT_MARK_BYTES = _LANGUAGE_VARIANT_MARK.encode()


def _trie_pattern(words: tuple[str, ...]) -> str:
    """A regular expression alternation of ``words`` factored as a trie (``d(?:[dlt]|iv)``).

    Python's regex engine tries an alternation's branches one by one; factored by common
    prefixes it decides after a letter or two, which makes the pre-pass 4x faster.
    """
    groups: dict[str, list[str]] = {}
    for word in sorted(set(words)):
        groups.setdefault(word[0], []).append(word[1:])
    branches = []
    for first, rests in groups.items():
        if len(rests) == 1:
            branches.append(re.escape(first + rests[0]))
            continue
        tail = _trie_pattern(tuple(rest for rest in rests if rest))
        branches.append(re.escape(first) + "(?:" + tail + ")" + ("?" if "" in rests else ""))
    return "|".join(branches)


# A space before every block-level start or end tag of the source (what stripAllTags does
# at each such tag). Only the "<" is matched, so the replacement is a literal and the
# substitution stays in C. Case-sensitive: Parsoid and the legacy parser write lower-case
# tags (an upper-case one only loses its extra space; the parse is the same). It runs on
# the UTF-8 bytes that lexbor parses (the encoding is needed anyway, and a byte is
# scanned faster than a UCS-2 or UCS-4 character); _BLOCK_TAG_START_TEXT is the same
# pattern for text, where a tag name ends at [\s/>] with \s as str.isspace(): the bytes
# pattern ends it at the UTF-8 form of each of those characters, so both put the spaces
# in the same places.
_TAG_NAME_ENDS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u2028\u2029\u202f\u205f\u3000/>"
)
# A possessive "/?+" (Python 3.11 on) spares sre a backtracking frame at each "<": a tenth
# of the pre-pass. The same match, as a tag name never starts with "/".
_SLASH = "/?+" if sys.version_info >= (3, 11) else "/?"
_BLOCK_TAG_START_TEXT = re.compile(r"<(?=" + _SLASH + "(?:" + _trie_pattern(BLOCK_TAGS) + r")[\s/>])")
_BLOCK_TAG_START = re.compile(
    b"<(?=" + _SLASH.encode() + b"(?:" + _trie_pattern(BLOCK_TAGS).encode() + rb")(?:["
    + re.escape("".join(c for c in _TAG_NAME_ENDS if c.isascii()).encode())
    + rb"]|" + b"|".join(re.escape(c.encode()) for c in _TAG_NAME_ENDS if not c.isascii()) + rb"))"
)
# PHP's trim() set.
_TRIM = " \t\n\r\x00\x0b"
# Marks the first heading's place in the text; a noncharacter that pages do not carry
# (checked per page, with fallbacks).
_MARKS = ("\ufdd0", "\ufdd1", "\ufdd2", "\ufdef")
# Languages whose text a LanguageConverter rule shows when the page is read unconverted
# (the base variant and its fallbacks), in MediaWiki's order for zh, then others.
_VARIANT_ORDER = ("zh", "zh-hans", "zh-hant", "zh-cn", "zh-tw", "zh-hk", "zh-sg", "zh-mo", "zh-my")


class HtmlText(NamedTuple):
    """CirrusSearch's text fields of one page (WikiTextStructure's getters)."""

    text: str
    opening_text: str | None
    headings: list[str]
    auxiliary_text: list[str]


def _collapse_text(text: str) -> str:
    """Sanitizer::normalizeWhitespace and trim(): ASCII whitespace runs to one space.

    Done with str methods (C loops); the equivalent regular expression ``[ \t\r\n]+``
    takes 2.5x longer, as it matches at every single space of the text.
    """
    spaced = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
    return " ".join(filter(None, spaced.split(" "))).strip(_TRIM)


def _collapse(text: str) -> str:
    """_collapse_text on the UTF-8 bytes, a third faster: bytes.split() cuts at ASCII whitespace.

    That is space, tab, CR, LF and also VT and FF, which MediaWiki keeps inside the text:
    a text holding either goes the str way. No byte of a multi-byte UTF-8 sequence is ASCII.
    """
    if "\x0b" in text or "\x0c" in text:
        return _collapse_text(text)
    try:
        return b" ".join(text.encode().split()).decode().strip(_TRIM)
    except UnicodeEncodeError:  # a lone surrogate; lexbor's text has none
        return _collapse_text(text)


_LOCAL = threading.local()


def _selector() -> LexborCSSSelector:
    """This thread's CSS selector engine, made once, not once a page (as ``node.css`` does)."""
    selector = getattr(_LOCAL, "selector", None)
    if selector is None:
        selector = _LOCAL.selector = LexborCSSSelector()
    return selector


def _source(html: str, encoded: bytes | None = None) -> tuple[bytes, bool]:
    """The page as lexbor reads it (UTF-8, a space before each block-level tag), and
    whether it holds Parsoid's language-variant markup. ``encoded``: the page's UTF-8, if made."""
    try:
        source = _BLOCK_TAG_START.sub(b" <", encoded if encoded is not None else html.encode())
    except UnicodeEncodeError:
        # A lone surrogate (a JSON "\ud800"): dropped, as selectolax does with text, after
        # the pre-pass on the text, so that the spaces go where they went before.
        return _BLOCK_TAG_START_TEXT.sub(" <", html).encode(errors="ignore"), _LANGUAGE_VARIANT_MARK in html
    # The pre-pass only adds " " before "<": the mark is in the bytes iff in the text.
    return source, _LANGUAGE_VARIANT_MARK_BYTES in source


def _parse(html: str, encoded: bytes | None = None) -> LexborNode | None:
    """The <body> of the page, a space before each block-level tag, variants filled; or None."""
    source, variants = _source(html, encoded)
    body = LexborHTMLParser(source).body
    if body is not None and variants:
        _fill_language_variants(body)
    return body


def _fill_language_variants(body: LexborNode) -> None:
    """Put the text of Parsoid's LanguageConverter markup into its (empty) element [ours].

    Parsoid leaves ``-{...}-`` spans empty and keeps their text in ``data-mw-variant``;
    the legacy parser, which CirrusSearch read, rendered the text. Shown: the
    ``disabled``/``filter``/``name`` text, a two-way rule's text for the base variant
    (else its first), a one-way rule's source text.
    """
    for node in _selector().find(_LANGUAGE_VARIANT, body):
        if node.tag == "meta" or node.child is not None:
            continue
        try:
            rule = orjson.loads(node.attributes.get("data-mw-variant") or "{}")
        except orjson.JSONDecodeError:
            continue
        if not isinstance(rule, dict):
            continue
        shown = _variant_text(rule)
        if shown:
            node.insert_child(_fragment_text(shown))


def _fragment_text(html: str) -> str:
    """The text of an HTML fragment; without markup, the string itself (no parser made).

    Parsing a fragment costs a new lexbor document (tens of microseconds, the parse of a
    few kB of page), once per rule; a page of zh or another variant wiki can have many,
    often plain text (some hold markup: Wiktionary's zh-x). A string with no "<" or "&"
    (markup, character references), CR (made LF), NUL (dropped) or lone surrogate (dropped
    by selectolax's encoding) is its own text (checked against the parse in
    tests/test_html_text.py).
    """
    if "<" in html or "&" in html or "\r" in html or "\x00" in html or not _encodes(html):
        return LexborHTMLParser(html, is_fragment=True).text()
    return html


def _encodes(text: str) -> bool:
    return _encoded(text) is not None


def _encoded(text: str) -> bytes | None:
    """UTF-8 of ``text``; None if it holds a lone surrogate (a JSON "\\ud800")."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return None


def _variant_text(rule: dict) -> str:
    for key in ("disabled", "filter", "name"):
        part = rule.get(key)
        if isinstance(part, dict) and isinstance(part.get("t"), str):
            return part["t"]
    entries = rule.get("twoway") or rule.get("bidir")
    if isinstance(entries, list) and entries:
        by_lang = {e.get("l"): e.get("t") for e in entries if isinstance(e, dict)}
        for lang in _VARIANT_ORDER:
            if isinstance(by_lang.get(lang), str):
                return by_lang[lang]
        first = entries[0]
        return first.get("t", "") if isinstance(first, dict) else ""
    entries = rule.get("oneway") or rule.get("unidir")
    if isinstance(entries, list) and entries and isinstance(entries[0], dict):
        return entries[0].get("f", "") or ""
    return ""


def html_to_text(html: str) -> str:
    """CirrusSearch's ``text`` of a rendered page: no headings, no auxiliary or excluded text.

    Never raises on malformed HTML; empty or whitespace-only input gives "".
    A whole Parsoid page is read in one pass (html_scan), any other with lexbor.
    """
    if not html or html.isspace():
        return ""
    encoded = _encoded(html)
    if encoded is not None and _LANGUAGE_VARIANT_MARK_BYTES not in encoded:
        text = scan_text(encoded)
        if text is not None:
            return text
    return parsed_text(html, encoded)


def parsed_text(html: str, encoded: bytes | None = None) -> str:
    """html_to_text through lexbor's parse, for any page (html_to_text tries a one-pass scan first)."""
    body = _parse(html, encoded)
    if body is None:
        return ""
    for node in _selector().find(_REMOVED, body):
        node.decompose(recursive=False)
    return _collapse(body.text())


def _simple_selectors(selectors: tuple[str, ...]) -> tuple[frozenset, frozenset, frozenset, frozenset]:
    """Split selectors of the forms tag, .class, tag.class and [attr="value"]."""
    tags, classes, tag_classes, attrs = set(), set(), set(), set()
    for selector in selectors:
        if selector.startswith("["):
            name, _, value = selector.strip("[]").partition("=")
            attrs.add((name, value.strip('"')))
        elif selector.startswith("."):
            classes.add(selector[1:])
        elif "." in selector:
            tag_classes.add(tuple(selector.split(".", 1)))
        else:
            tags.add(selector)
    return frozenset(tags), frozenset(classes), frozenset(tag_classes), frozenset(attrs)


_REMOVED_TAGS, _REMOVED_CLASSES, _REMOVED_TAG_CLASSES, _REMOVED_ATTRS = _simple_selectors(
    EXCLUDED_SELECTORS + AUXILIARY_SELECTORS
)


def _is_removed(node: LexborNode) -> bool:
    """Whether the element itself matches an excluded or auxiliary selector."""
    tag = node.tag
    if tag in _REMOVED_TAGS:
        return True
    attributes = node.attributes
    classes = set((attributes.get("class") or "").split())
    if classes & _REMOVED_CLASSES or any(t == tag and c in classes for t, c in _REMOVED_TAG_CLASSES):
        return True
    return any(value in (attributes.get(name) or "").split() for name, value in _REMOVED_ATTRS)


def _opening_mark(body: LexborNode, html: str) -> str | None:
    """Put a mark where the opening text ends (before the first heading); return it.

    CirrusSearch cuts the HTML at the first ``<h1>``..``<h6>``; when that heading sits
    inside an element that is removed anyway (a table, a collapsed box), the cut still
    falls inside it, so the mark goes before the outermost such element.
    """
    heading = body.css_first(_HEADINGS)
    if heading is None:
        return None
    mark = next((m for m in _MARKS if m not in html), None)
    if mark is None:
        return None
    anchor = heading
    node = heading.parent
    while node is not None and node.tag not in ("body", "html"):
        if _is_removed(node):
            anchor = node
        node = node.parent
    anchor.insert_before(mark)
    return mark


def html_to_parts(html: str) -> HtmlText:
    """All of CirrusSearch's text fields of a rendered page (for tests and inspection).

    ``headings`` are every h1-h6 with reference marks removed (CirrusSearch also drops
    the headings a wiki lists in MediaWiki:Search-ignored-headings; not done here).
    ``auxiliary_text`` holds one entry per auxiliary element, nested ones again on their own.
    """
    if not html or html.isspace():
        return HtmlText("", None, [], [])
    body = _parse(html)
    if body is None:
        return HtmlText("", None, [], [])
    mark = _opening_mark(body, html)
    for node in body.css(_EXCLUDED_NOT_HEADINGS):
        node.decompose(recursive=False)
    headings = []
    for node in body.css(_HEADINGS):
        heading = _collapse(node.text())
        if heading:
            headings.append(heading)
        node.decompose(recursive=False)
    # The mark is never inside an auxiliary element (_opening_mark puts it before them).
    auxiliary_nodes = body.css(_AUXILIARY)
    auxiliary = [_collapse(node.text()) for node in auxiliary_nodes]
    for node in auxiliary_nodes:
        node.decompose(recursive=False)
    text = body.text()
    opening = None
    if mark and mark in text:
        before, _, after = text.partition(mark)
        opening = _collapse(before) or None
        text = before + after
    return HtmlText(_collapse(text), opening, headings, auxiliary)


# stripAllTags as MediaWiki runs it: a tokenizer over serialized HTML that drops tags and
# comments, with a space for each block-level tag. Only for html_to_text_reference.
_SERIALIZED_TAG = re.compile(r"<!--.*?-->|<(/?)([A-Za-z][^\s/>]*)(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.DOTALL)
_BLOCK_TAG_SET = frozenset(BLOCK_TAGS)


def _strip_all_tags(serialized: str) -> str:
    def tag(match: re.Match[str]) -> str:
        name = match.group(2)
        return " " if name and name.lower() in _BLOCK_TAG_SET else ""

    return _collapse(unescape(_SERIALIZED_TAG.sub(tag, serialized)))


def html_to_text_reference(html: str) -> HtmlText:
    """The slow, literal port of WikiTextStructure, to check the fast path against.

    As MediaWiki does it: remove the excluded and auxiliary elements from the DOM,
    serialize what is left and strip its tags (a space per block-level tag); the opening
    text is the same treatment of the source cut at the first ``<h1>``..``<h6>`` tag.
    Headings and auxiliary text are left empty.
    """
    if not html or html.isspace():
        return HtmlText("", None, [], [])

    def text_of(source: str) -> str:
        body = LexborHTMLParser(source).body
        if body is None:
            return ""
        if "mw:LanguageVariant" in source:
            _fill_language_variants(body)
        for node in body.css(_REMOVED):
            node.decompose()
        return _strip_all_tags(body.inner_html or "")

    body_at = re.search(r"<body[\s>]", html, re.IGNORECASE)
    cut = re.search(r"<h[1-6][\s/>]", html[body_at.start() if body_at else 0 :], re.IGNORECASE)
    opening = None
    if cut:
        opening = text_of(html[: (body_at.start() if body_at else 0) + cut.start()]) or None
    return HtmlText(text_of(html), opening, [], [])
