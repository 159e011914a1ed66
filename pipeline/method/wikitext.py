"""Wikitext to plain text, approximating CirrusSearch's ``text`` field (docs/method.md 2).

Kept: running text, the visible text of links, bold and italics, list items, and the
visible text of a few inline templates whose output is (part of) their arguments
(``INLINE_TEMPLATES``: ``{{lang|fr|texte}}`` gives "texte", ``{{convert|5|km}}`` "5 km").
Removed: every other template, references, tables, comments, headings (CirrusSearch
keeps them in a separate field), files and images, categories, interlanguage links,
magic words, math and other extension tags, bare URLs.

Two passes. A linear pre-pass, hand-written because no library does it in bounded
time, removes what we drop anyway: comments and extension tags (``<ref>``,
``<math>``...), templates and template arguments (balanced ``{{ }}`` and ``{{{ }}}``,
matched the way MediaWiki's preprocessor pairs brace runs), and tables (``{|`` to
``|}`` lines). mwparserfromhell then parses what is left, links, formatting and HTML
tags, and is given only a fraction of the page, which makes the whole 2-3x faster on
real pages. The pre-pass also bounds the time of a page: mwparserfromhell looks for the
end of every unclosed ``{{``, ``[[``, ``<tag>`` or ``[http://`` to the end of the page
and then starts again after it, quadratic on a run of them (its issue 364; 20,000
unclosed ``<div>`` take 40 s, unclosed ``{{a|`` 5,000 take 23 s), so the pre-pass pairs
them in linear time and makes the unpaired ones inert, as MediaWiki shows them. A
``ParserError`` from mwparserfromhell still reaches the caller, which counts the page
as a reject.
"""

from __future__ import annotations

import bisect
import re

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

# Namespace names that always work, whatever the wiki's language.
CANONICAL_MEDIA_NAMESPACES = frozenset({"file", "image", "media", "category"})

# Extension and HTML tags whose content is not running text.
_DROPPED_TAGS = frozenset(
    {
        "ref", "references", "math", "chem", "ce", "gallery", "table", "timeline", "graph", "score",
        "syntaxhighlight", "source", "pre", "code", "imagemap", "hiero", "mapframe", "maplink",
        "templatedata", "templatestyles", "noinclude", "includeonly", "inputbox", "categorytree",
        "poem-source", "style", "script", "sup", "sub",
    }
)
_LINE_BREAK_TAGS = frozenset({"br", "p", "li", "dd", "dt", "div", "tr", "td", "th"})
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_INTERWIKI_PREFIX = re.compile(r"^:?[a-z][a-z-]{1,12}:")
_WHITESPACE = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r" ([.,;:!?)\]])")

# Extension tags whose content MediaWiki never parses as wikitext: removed (with their
# content) before templates are matched, so a brace in LaTeX or code is not a template.
# nowiki is kept (its content is text) but hidden from the brace matcher.
_OPAQUE_DROPPED = frozenset(
    {
        "ref", "references", "math", "chem", "ce", "gallery", "timeline", "graph", "score",
        "syntaxhighlight", "source", "pre", "imagemap", "hiero", "mapframe", "maplink",
        "templatedata", "templatestyles", "inputbox", "categorytree", "charinsert", "indicator",
    }
)
_OPAQUE_KEPT = frozenset({"nowiki"})
_OPAQUE = _OPAQUE_DROPPED | _OPAQUE_KEPT
_OPAQUE_NAMES = "|".join(sorted(_OPAQUE, key=len, reverse=True))
# One scan finds comments and the opening and closing tags of opaque elements.
_OPAQUE_TOKEN = re.compile(
    rf"<!--|<(/?)({_OPAQUE_NAMES})(?=[\s/>])[^<>]*?(/?)>",
    re.IGNORECASE,
)
_COMMENT_END = "-->"
_BRACE_RUN = re.compile(r"\{\{+|\}\}+")
_TABLE_LINE = re.compile(r"^[ \t]*(\{\||\|\})", re.MULTILINE)
# Placeholders for kept nowiki content: private-use characters no wikitext contains.
_HOLD_OPEN, _HOLD_CLOSE = "\ue000", "\ue001"
_HOLD = re.compile("\ue000(\\d+)\ue001")

# Any HTML-like tag, for pairing; void ones never take a closing tag.
_HTML_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(?=[\s/>])[^<>]*?(/?)>")
_VOID_TAGS = frozenset({"br", "wbr", "hr", "img", "meta", "link", "area", "col", "input", "track", "embed"})
_LINK_BRACKET = re.compile(r"\[\[|\]\]")
_URL_BRACKET = re.compile(r"\[(?=(?:(?:https?|ftp|irc|mailto|news):)?//)|\]|\n")

# Inline templates whose rendered output is (part of) their arguments, by the rule that
# picks it (names lower case, "_" as " "; docs/method.md 2). Chosen from counts on real
# pages (bench/wikitext_bench.py --templates): the ones common in running text.
INLINE_TEMPLATES: dict[str, str] = {
    "lang": "second",  # {{lang|fr|texte}}: the text; enwiki, jawiki, zhwiki, ...
    "nowrap": "first", "nobr": "first", "nobold": "first", "noitalic": "first",
    "small": "first", "smaller": "first", "big": "first", "larger": "first",
    "resize": "last", "vanchor": "first", "abbr": "first", "math": "first", "mvar": "first",
    "script": "second", "transl": "last", "transliteration": "last", "unicode": "first",
    "iast": "first", "angbr": "first",
    "chem": "join",  # {{chem|H|2|O}}: H2O
    "nihongo": "nihongo",  # {{nihongo|Tokyo|東京|Tōkyō}}: Tokyo 東京 Tōkyō
    "convert": "convert", "cvt": "convert", "রূপান্তর": "convert",  # {{convert|5|km}}: 5 km
    "ill": "label", "interlanguage link": "label", "仮リンク": "label",  # interlanguage links
    "link-en": "label3", "le": "label3",  # zhwiki: {{link-en|中文|English|shown}}
}
_LANG_PREFIX = "lang-"  # {{lang-fr|texte}}: the text (without the "French:" it renders)
_RANGE_WORDS = frozenset({"to", "and", "or", "-", "–", "&", "x", "×", "by", "+", "+/-", "±"})
_NUMBER = re.compile(r"^[-+−]?[\d.,/ ]+$")


def _link_prefix(title: str) -> str:
    head, sep, _ = title.strip().lstrip(":").partition(":")
    return head.strip().lower() if sep else ""


class WikitextConverter:
    """Turns one wiki's wikitext into text; knows that wiki's file and category names."""

    def __init__(self, media_namespaces: frozenset[str] | set[str] = frozenset(), *, inline_templates: bool = True) -> None:
        """``inline_templates=False`` drops every template (the text before 2026-11-26)."""
        self.media_namespaces = CANONICAL_MEDIA_NAMESPACES | {name.lower() for name in media_namespaces}
        self.inline_templates = inline_templates

    def to_text(self, wikitext: str) -> str:
        """Plain text of a page, whitespace collapsed to single spaces."""
        held: list[str] = []
        stripped = _strip_templates_and_tables(_strip_opaque(wikitext, held), self.inline_templates)
        stripped = _neutralise_unclosed(stripped)
        if held:
            stripped = _HOLD.sub(lambda match: held[int(match.group(1))], stripped)
        code = mwparserfromhell.parse(stripped)
        text = _MAGIC_WORD.sub("", self._render(code))
        text = _WHITESPACE.sub(" ", text).strip()
        return _SPACE_BEFORE_PUNCT.sub(r"\1", text)

    def _render(self, code: Wikicode) -> str:
        parts: list[str] = []
        for node in code.nodes:
            if isinstance(node, Text):
                parts.append(node.value)
            elif isinstance(node, Wikilink):
                parts.append(self._render_link(node))
            elif isinstance(node, ExternalLink):
                parts.append(self._render(node.title) if node.title is not None else "")
            elif isinstance(node, Tag):
                parts.append(self._render_tag(node))
            elif isinstance(node, HTMLEntity):
                parts.append(node.normalize())
            elif isinstance(node, (Template, Comment, Heading, Argument)):
                parts.append(" ")
            # Anything else (unknown node kinds) carries no running text.
        return "".join(parts)

    def _render_link(self, link: Wikilink) -> str:
        title = str(link.title)
        prefix = _link_prefix(title)
        if prefix in self.media_namespaces:
            return " "
        if link.text is not None:
            return self._render(link.text)
        if _INTERWIKI_PREFIX.match(title.strip()):
            return " "  # [[de:Haus]]: an interlanguage link, not text
        return title.split("#", 1)[0] if not title.startswith("#") else title[1:]

    def _render_tag(self, tag: Tag) -> str:
        name = str(tag.tag).strip().lower()
        if name in _DROPPED_TAGS or tag.wiki_markup in ("{|",):
            return " "
        inner = self._render(tag.contents) if tag.contents is not None else ""
        return f" {inner} " if name in _LINE_BREAK_TAGS else inner


def _strip_opaque(wikitext: str, held: list[str]) -> str:
    """Drop comments and opaque extension tags; hide nowiki content behind placeholders.

    Linear: each opening tag looks up its closing tag among the closing tags found in
    the same scan. Like MediaWiki, an element ends at the first closing tag of its name,
    an unclosed comment runs to the end of the page, and an unclosed tag is text.
    """
    if "<" not in wikitext:
        return wikitext
    tokens = list(_OPAQUE_TOKEN.finditer(wikitext))
    if not tokens:
        return wikitext
    closers: dict[str, list[int]] = {}
    for token in tokens:
        if token.group(1):
            closers.setdefault(token.group(2).lower(), []).append(token.start())
    parts: list[str] = []
    position = 0
    for token in tokens:
        start = token.start()
        if start < position or token.group(1):
            continue  # inside an element already removed, or a stray closing tag (text)
        if token.group(0) == "<!--":
            end = wikitext.find(_COMMENT_END, start + 4)
            parts.append(wikitext[position:start])
            position = len(wikitext) if end < 0 else end + len(_COMMENT_END)
            continue
        name = token.group(2).lower()
        if token.group(3):  # self-closing: <ref name="a" />, or <nowiki/> that only separates
            parts.append(wikitext[position:start])
            parts.append("" if name in _OPAQUE_KEPT else " ")
            position = token.end()
            continue
        ends = closers.get(name, [])
        index = bisect.bisect_left(ends, token.end())
        if index == len(ends):
            continue  # never closed: MediaWiki shows it as text
        close_start = ends[index]
        close_end = wikitext.index(">", close_start) + 1
        parts.append(wikitext[position:start])
        if name in _OPAQUE_KEPT:
            held.append(wikitext[start:close_end])
            parts.append(f"{_HOLD_OPEN}{len(held) - 1}{_HOLD_CLOSE}")
        else:
            parts.append(" ")
        position = close_end
    parts.append(wikitext[position:])
    return "".join(parts)


def _strip_templates_and_tables(text: str, inline: bool = True) -> str:
    """Remove templates and arguments (keeping ``INLINE_TEMPLATES``' text), then tables."""
    if "{{" in text:
        text = _strip_braces(text, inline)
    if "{|" in text:
        text = _strip_tables(text)
    if "{{" in text:  # unpaired: text, as MediaWiki shows it, but no template to the parser
        text = text.replace("{{", "&#123;&#123;")
    return text


def _strip_braces(text: str, inline: bool) -> str:
    """Replace each outermost ``{{...}}``/``{{{...}}}`` by its visible text or a space.

    Brace runs pair as in MediaWiki's preprocessor: a closing run takes three braces
    from the open run it meets when both have three or more, else two, so ``{{{1}}}``
    is an argument and ``{{{{a}}}}`` a template in a template. Linear in the number of
    brace runs (plus sorting the pairs); braces left unpaired are text, written as
    entities by the caller so that the parser does not try each again as a template.
    """
    stack: list[list[int]] = []  # [start of the run, braces still open]
    spans: list[tuple[int, int, int]] = []  # every pair: (start, end, braces)
    for match in _BRACE_RUN.finditer(text):
        run = match.group(0)
        if run[0] == "{":
            stack.append([match.start(), len(run)])
            continue
        closing, cursor = len(run), match.start()
        while closing >= 2 and stack:
            top = stack[-1]
            take = 3 if top[1] >= 3 and closing >= 3 else 2
            top[1] -= take
            spans.append((top[0] + top[1], cursor + take, take))
            closing -= take
            cursor += take
            if top[1] < 2:
                stack.pop()
    if not spans:
        return text
    spans.sort(key=lambda span: (span[0], -span[1]))  # pairs nest: keep the outermost
    parts: list[str] = []
    position = 0
    for start, end, braces in spans:
        if start < position:
            continue
        parts.append(text[position:start])
        parts.append(_visible(text[start + braces:end - braces]) if braces == 2 and inline else " ")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _split_arguments(body: str) -> list[str]:
    """Split a template's body at the ``|`` not inside ``[[...]]`` or nested braces."""
    parts, depth, start = [], 0, 0
    index, length = 0, len(body)
    while index < length:
        pair = body[index:index + 2]
        if pair in ("{{", "[["):
            depth += 1
            index += 2
        elif pair in ("}}", "]]"):
            depth = max(0, depth - 1)
            index += 2
        elif body[index] == "|" and depth == 0:
            parts.append(body[start:index])
            start = index = index + 1
        else:
            index += 1
    parts.append(body[start:])
    return parts


def _visible(body: str) -> str:
    """The text an inline template shows, or a space for every other template."""
    name_end = body.find("|")
    raw_name = body if name_end < 0 else body[:name_end]
    name = raw_name.strip().replace("_", " ").lower()
    rule = INLINE_TEMPLATES.get(name)
    if rule is None and name.startswith(_LANG_PREFIX) and name_end >= 0:
        rule = "first"
    if rule is None or name_end < 0:
        return " "
    arguments = _split_arguments(body[name_end + 1:])
    named = {}
    positional = []
    for argument in arguments:
        key, sep, value = argument.partition("=")
        if sep and "[[" not in key and "{{" not in key and key.strip():
            named[key.strip().lower()] = value.strip()
        else:
            positional.append(argument.strip())
    chosen = _apply_rule(rule, positional, named)
    return _strip_templates_and_tables(chosen) if chosen else " "


def _apply_rule(rule: str, positional: list[str], named: dict[str, str]) -> str:
    if rule == "first":
        return positional[0] if positional else named.get("1", "")
    if rule == "second":
        return named.get("text") or (positional[1] if len(positional) > 1 else named.get("2", ""))
    if rule == "last":
        return positional[-1] if positional else ""
    if rule == "join":
        return "".join(positional)
    if rule == "nihongo":
        return " ".join(value for value in positional[:3] if value)
    if rule == "label":
        return named.get("lt") or named.get("label") or (positional[0] if positional else "")
    if rule == "label3":
        return positional[2] if len(positional) > 2 and positional[2] else (positional[0] if positional else "")
    if rule == "convert":
        words = []
        for value in positional:
            if _NUMBER.match(value) or value.lower() in _RANGE_WORDS:
                words.append(value)
            else:
                if words:
                    words.append(value)  # the unit
                break
        return " ".join(words)
    return ""


def _strip_tables(text: str) -> str:
    """Remove the lines from each ``{|`` to its ``|}`` (or to the end of the page)."""
    parts: list[str] = []
    depth, start, position = 0, 0, 0
    for match in _TABLE_LINE.finditer(text):
        if match.group(1) == "{|":
            if depth == 0:
                start = match.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                end = text.find("\n", match.end())
                end = len(text) if end < 0 else end
                parts.append(text[position:start])
                parts.append("\n")
                position = end
    if depth:  # never closed: MediaWiki closes it at the end of the page
        parts.append(text[position:start])
        return "".join(parts)
    parts.append(text[position:])
    return "".join(parts)


def _neutralise_unclosed(text: str) -> str:
    """Make unclosed tags, ``[[`` and bracketed URLs inert, in one linear pass each.

    mwparserfromhell looks for the end of each of them to the end of the page (or
    line) and then starts again after it, which is quadratic on a run of them (a page
    with 20,000 unclosed ``<div>`` takes 40 s). MediaWiki shows an unclosed ``[[`` or
    ``[http://...`` as text, so those are written as entities; an HTML tag with no
    partner is dropped, as the rendered page's HTML balancing does (mwparserfromhell
    would have put its markup, ``<div>``, into the text).
    """
    if "<" in text:
        text = _balance_tags(text)
    if "[[" in text:
        text = _escape_unpaired(text, _LINK_BRACKET, "[[", "&#91;&#91;")
    if "[" in text:
        text = _escape_open_urls(text)
    return text


def _balance_tags(text: str) -> str:
    stacks: dict[str, list[int]] = {}
    drop: list[tuple[int, int, str]] = []
    tokens = list(_HTML_TAG.finditer(text))
    for index, token in enumerate(tokens):
        name = token.group(2).lower()
        if token.group(3) or name in _VOID_TAGS:
            continue
        stack = stacks.setdefault(name, [])
        if not token.group(1):
            stack.append(index)
        elif stack:
            stack.pop()
        else:
            drop.append((token.start(), token.end(), name))  # a closing tag with no opening
    for name, stack in stacks.items():
        drop.extend((tokens[index].start(), tokens[index].end(), name) for index in stack)
    if not drop:
        return text
    drop.sort()
    parts: list[str] = []
    position = 0
    for start, end, name in drop:
        parts.append(text[position:start])
        parts.append(" " if name in _LINE_BREAK_TAGS else "")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _escape_unpaired(text: str, pattern: re.Pattern, opening: str, escaped: str) -> str:
    unpaired: list[int] = []  # openings still waiting for their closing
    for match in pattern.finditer(text):
        if match.group(0) == opening:
            unpaired.append(match.start())
        elif unpaired:
            unpaired.pop()
    return _replace_at(text, unpaired, len(opening), escaped)


def _replace_at(text: str, starts: list[int], width: int, replacement: str) -> str:
    """``text`` with the ``width`` characters at each of ``starts`` (ascending) replaced."""
    if not starts:
        return text
    parts: list[str] = []
    position = 0
    for start in starts:
        parts.append(text[position:start])
        parts.append(replacement)
        position = start + width
    parts.append(text[position:])
    return "".join(parts)


def _escape_open_urls(text: str) -> str:
    """``[http://...`` with no ``]`` before the next one or the line's end: its ``[`` as text."""
    unclosed: list[int] = []
    pending: int | None = None
    for match in _URL_BRACKET.finditer(text):
        token = match.group(0)
        if token == "]":
            pending = None
            continue
        if pending is not None:
            unclosed.append(pending)
        pending = match.start() if token != "\n" else None
    if pending is not None:
        unclosed.append(pending)
    return _replace_at(text, unclosed, 1, "&#91;")
