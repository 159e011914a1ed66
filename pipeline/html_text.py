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

Hand-written on selectolax (lexbor) because no library reproduces ``WikiTextStructure``
(resiliparse's C extractor gives the same text on real Parsoid pages and is ~15% faster,
but by its own rules: a space at <center>, <details>, <noscript>, none for form fields;
mwparserfromhtml is paragraph-based and 30x slower). Every pass over the page runs in C:
one regular expression over the source that puts the block-level spaces in, the lexbor
parse, one CSS query, lexbor's text walk, str methods for the whitespace. Python loops
only over the elements the query matched. bench/html_text_bench.py compares the
parsers and measures the speed against the bare parse.
"""

from __future__ import annotations

import re
from html import unescape
from typing import NamedTuple

import orjson
from selectolax.lexbor import LexborHTMLParser, LexborNode

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
_LANGUAGE_VARIANT = '[typeof~="mw:LanguageVariant"]'


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
# tags (an upper-case one only loses its extra space; the parse is the same).
_BLOCK_TAG_START = re.compile(r"<(?=/?(?:" + _trie_pattern(BLOCK_TAGS) + r")[\s/>])")
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


def _collapse(text: str) -> str:
    """Sanitizer::normalizeWhitespace and trim(): ASCII whitespace runs to one space.

    Done with str methods (C loops); the equivalent regular expression ``[ \t\r\n]+``
    takes 2.5x longer, as it matches at every single space of the text.
    """
    spaced = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
    return " ".join(filter(None, spaced.split(" "))).strip(_TRIM)


def _parse(html: str) -> LexborNode | None:
    """The <body> of the page with a space before each block-level tag, or None."""
    # selectolax encodes with errors="ignore": a lone surrogate (a JSON "\ud800") is dropped.
    return LexborHTMLParser(_BLOCK_TAG_START.sub(" <", html)).body


def _fill_language_variants(body: LexborNode) -> None:
    """Put the text of Parsoid's LanguageConverter markup into its (empty) element [ours].

    Parsoid leaves ``-{...}-`` spans empty and keeps their text in ``data-mw-variant``;
    the legacy parser, which CirrusSearch read, rendered the text. Shown: the
    ``disabled``/``filter``/``name`` text, a two-way rule's text for the base variant
    (else its first), a one-way rule's source text.
    """
    for node in body.css(_LANGUAGE_VARIANT):
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
            node.insert_child(LexborHTMLParser(shown, is_fragment=True).text())


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
    """
    if not html or html.isspace():
        return ""
    body = _parse(html)
    if body is None:
        return ""
    if "mw:LanguageVariant" in html:
        _fill_language_variants(body)
    for node in body.css(_REMOVED):
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
    if "mw:LanguageVariant" in html:
        _fill_language_variants(body)
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
