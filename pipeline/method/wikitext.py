"""Wikitext to plain text, approximating CirrusSearch's ``text`` field (docs/method.md 2).

Kept: running text, the visible text of links, bold and italics, list items, and what
the rendered page shows of the templates whose output is (part of) their arguments
(``INLINE_TEMPLATES``, chosen by measuring real pages: ``{{lang|fr|texte}}`` gives
"texte", ``{{cvt|10-14|cm}}`` "10–14 cm", ``{{s-|XIX|e}}`` "XIXe siècle", quotations
their quoted text). Removed: every other template, references, tables, comments,
headings (CirrusSearch keeps them in a separate field), files and images, categories,
interlanguage links, magic words, math and other extension tags, bare URLs.

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
from collections.abc import Callable

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
        "poem-source", "style", "script",
    }
)
_LINE_BREAK_TAGS = frozenset({"br", "p", "li", "dd", "dt", "div", "tr", "td", "th"})
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_MEDIA_FILE = re.compile(r"\.(?:jpe?g|png|gif|svg|tiff?|webp|ogg|oga|ogv|webm|mp3|wav|flac|midi?|pdf|djvu)\s*$", re.IGNORECASE)
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
_ARGUMENT_TOKEN = re.compile(r"\{\{|\}\}|\[\[|\]\]|\|")
_MAX_INLINE_DEPTH = 20  # inline templates nested deeper are dropped (real pages nest a few; MediaWiki stops at 100)


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
        if prefix in self.media_namespaces or (prefix and _MEDIA_FILE.search(title)):
            return " "  # a file by its namespace, or by its name under an alias (ptwiki's Imagem:)
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


def _strip_templates_and_tables(text: str, inline: bool = True, depth: int = 0) -> str:
    """Remove templates and arguments (keeping ``INLINE_TEMPLATES``' text), then tables."""
    if "{{" in text:
        text = _strip_braces(text, inline and depth < _MAX_INLINE_DEPTH, depth)
    if "{|" in text:
        text = _strip_tables(text)
    if "{{" in text:  # unpaired: text, as MediaWiki shows it, but no template to the parser
        text = text.replace("{{", "&#123;&#123;")
    return text


def _strip_braces(text: str, inline: bool, depth: int) -> str:
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
        parts.append(_visible(text[start + braces:end - braces], depth) if braces == 2 and inline else " ")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _split_arguments(body: str) -> list[str]:
    """Split a template's body at the ``|`` not inside ``[[...]]`` or nested braces."""
    parts: list[str] = []
    depth = start = 0
    for token in _ARGUMENT_TOKEN.finditer(body):
        mark = token.group(0)
        if mark == "|":
            if not depth:
                parts.append(body[start:token.start()])
                start = token.end()
        elif mark in ("{{", "[["):
            depth += 1
        elif depth:
            depth -= 1
    parts.append(body[start:])
    return parts


def template_parameters(arguments: str) -> dict[str, str]:
    """A template call's parameters by name, the unnamed ones as "1", "2"... (MediaWiki's numbering).

    ``arguments`` is what follows the template's name and its first ``|``. Names are
    lower case; values are trimmed; a later duplicate wins, as in MediaWiki. Split here,
    in the pre-pass, rather than by mwparserfromhell, whose time on a parameter holding
    unclosed markup (a long quotation) is the quadratic one the pre-pass exists to avoid.
    """
    parameters: dict[str, str] = {}
    number = 0
    for argument in _split_arguments(arguments):
        key, sep, value = argument.partition("=")
        if sep and key.strip() and not any(mark in key for mark in ("[[", "{{", "<")):
            parameters[key.strip().lower()] = value.strip()
        else:
            number += 1
            parameters[str(number)] = argument.strip()
    return parameters


def _visible(body: str, depth: int = 0) -> str:
    """The text an inline template shows, or a space for every other template."""
    name_end = body.find("|")
    rule = inline_rule(body if name_end < 0 else body[:name_end])
    if rule is None:
        return " "
    shown = rule(template_parameters(body[name_end + 1:]) if name_end >= 0 else {})
    return _strip_templates_and_tables(shown, True, depth + 1) if shown else " "


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


# Inline templates: what the rendered page shows of a template whose output is (part of)
# its arguments, written from its parameters ("1", "2"... for the unnamed ones). Chosen by
# the words each template shows in the HTML path's text of real pages and the XML path
# loses without it (bench/xml_vs_html_bench.py --templates; docs/method.md 2.2). Module
# output we cannot reproduce without the module's data is left out: a conversion's
# converted figure, a language's name ("French:"), IPA from ASCII codes (IPAc-en).
Parameters = dict[str, str]
Rule = Callable[[Parameters], str]


def _arg(parameters: Parameters, *keys: str) -> str:
    """The first non-empty of the named or numbered parameters."""
    return next((parameters[key] for key in keys if parameters.get(key)), "")


def _positional(parameters: Parameters) -> list[str]:
    values: list[str] = []
    while str(len(values) + 1) in parameters:
        values.append(parameters[str(len(values) + 1)])
    return values


def _pick(*keys: str) -> Rule:
    return lambda parameters: _arg(parameters, *keys)


def _fixed(text: str) -> Rule:
    return lambda _parameters: text


def _around(before: str, after: str, *keys: str) -> Rule:
    def rule(parameters: Parameters) -> str:
        value = _arg(parameters, *keys)
        return f"{before}{value}{after}" if value else ""
    return rule


def _prefixed(prefix: str) -> Rule:
    """``{{circa|1900}}``: "c. 1900"; ``{{circa}}`` alone: "c."."""
    return lambda parameters: prefix + parameters.get("1", "")


def _quotation(text_keys: tuple[str, ...], *attribution: tuple[str, ...]) -> Rule:
    """A quotation template: the quoted text (and a translation), then " — " and who said it, where."""
    def rule(parameters: Parameters) -> str:
        quoted = " ".join(value for value in (_arg(parameters, *text_keys), parameters.get("übersetzung", "")) if value)
        by = ", ".join(value for value in (_arg(parameters, *keys).replace("&nbsp;", " ").strip(" —–-")
                                           for keys in attribution) if value)
        return f"{quoted} — {by}" if quoted and by else quoted
    return rule


def _last(parameters: Parameters) -> str:
    values = _positional(parameters)
    return values[-1] if values else ""


def _joined(separator: str, count: int | None = None) -> Rule:
    return lambda parameters: separator.join(value for value in _positional(parameters)[:count] if value)


def _ipa(parameters: Parameters) -> str:
    """``{{IPA|de|text}}`` (a language code first) or ``{{IPA|text}}``."""
    values = _positional(parameters)
    if len(values) > 1 and _LANGUAGE_CODE.fullmatch(values[0]):
        return values[1]
    return values[0] if values else ""


_MOIS = ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
         "novembre", "décembre")


def _date_fr(parameters: Parameters) -> str:
    """frwiki's ``{{date|1|6|1996}}``: "1er juin 1996"; a whole date in the first parameter as written."""
    values = _positional(parameters)[:3]
    if values and " " in values[0]:
        return values[0]  # {{date|septembre 1939|guerre mondiale}}: the rest only links
    day, month, year = (values + ["", "", ""])[:3]
    if month.isascii() and month.isdigit() and 1 <= int(month) <= 12:
        month = _MOIS[int(month) - 1]
    return " ".join(value for value in ("1er" if day == "1" else day, month, year) if value)


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def _as_of(parameters: Parameters) -> str:
    """enwiki's ``{{As of|2024|11}}``: "As of November 2024" (without its "[update]" mark)."""
    year, month, day = (parameters.get(key, "") for key in ("1", "2", "3"))
    if parameters.get("alt") or not year:
        return parameters.get("alt", "")
    if month.isascii() and month.isdigit() and 1 <= int(month) <= 12:
        month = _MONTHS[int(month) - 1]
    words = ["since" if parameters.get("since") else "as of", day.lstrip("0"), month, year]
    text = " ".join(word for word in words if word)
    return (text if parameters.get("lc") else text[0].upper() + text[1:]) + parameters.get("post", "")


def _century_fr(parameters: Parameters) -> str:
    """frwiki's ``{{s|XIV}}``, ``{{s-|XIX|e}}``: "XIVe siècle"; before Christ "-V": "Ve siècle av. J.-C."."""
    roman = parameters.get("1", "")
    if not roman:
        return ""
    era = " av. J.-C." if roman.startswith("-") else ""
    roman = roman.lstrip("-")
    return f"{roman}{'er' if roman.upper() == 'I' else 'e'} siècle{era}"


def _centuries_fr(parameters: Parameters) -> str:
    """``{{s2-|XIX|e|XX|e}}``: "XIXe et XXe siècles"."""
    romans = [value for value in _positional(parameters) if value and value not in ("e", "er", "re")][:2]
    if len(romans) < 2:
        return ""
    return " et ".join(f"{roman}{'er' if roman.upper() == 'I' else 'e'}" for roman in romans) + " siècles"


def _century_es(parameters: Parameters) -> str:
    """eswiki's ``{{siglo|VIII||s}}``: "siglo VIII"; ``{{siglo|VII|a}}``: "VII a. C."."""
    roman = parameters.get("1", "")
    if not roman:
        return ""
    era = {"a": " a. C.", "d": " d. C."}.get(parameters.get("2", "").lower(), "")
    return ("siglo " if parameters.get("3", "").lower() == "s" else "") + roman + era


def _grouped(number: str, separator: str, decimal: str) -> str:
    """A plain number with its digits grouped as ``{{formatnum:}}`` does (4 digits and more); others as written."""
    match = _PLAIN_NUMBER.fullmatch(number)
    if match is None:
        return number
    sign, digits, fraction = match.groups()
    head = len(digits) % 3 or 3
    if len(digits) > 3:
        digits = digits[:head] + "".join(separator + digits[i:i + 3] for i in range(head, len(digits), 3))
    return ("−" if sign else "") + digits + (decimal + fraction if fraction is not None else "")


def _number_and_unit(parameters: Parameters) -> str:
    """frwiki's ``{{nombre|5000|habitants}}``, ``{{unité|1.5|km|2}}``, ptwiki's ``{{fmtn}}``: "5 000 habitants", "1,5 km2"."""
    values = [value for value in _positional(parameters) if value]
    if not values:
        return ""
    words = [_NUMBER_IN_TEXT.sub(lambda number: _grouped(number.group(0), " ", ","), values[0])]
    for value in values[1:]:
        if _EXPONENT.fullmatch(value) and len(words) > 1:
            words[-1] += value  # an exponent of the unit before it
        else:
            words.append(value)
    return " ".join(words)


# {{convert}}: the amounts and the input unit as Module:Convert shows them: ranges with
# its separators, digits grouped, the unit by name or symbol as ``abbr`` asks (cvt: symbol).
# The converted figure in parentheses is left out (docs/method.md 2.2). Units: the most
# frequent on real pages (code: symbol, singular, plural); any other is written as coded.
_CONVERT_RANGES = {
    "-": "–", "–": "–", "to": " to ", "to(-)": " to ", "and": " and ", "and(-)": " and ", "or": " or ",
    "by": " by ", "x": " by ", "×": " by ", "+": " + ", "+/-": " ± ", "±": " ± ", ",": ", ",
    ", and": ", and ", ", or": ", or ", "to about": " to about ",
}
_CONVERT_UNITS: dict[str, tuple[str, str, str]] = {
    "m": ("m", "metre", "metres"), "km": ("km", "kilometre", "kilometres"),
    "cm": ("cm", "centimetre", "centimetres"), "mm": ("mm", "millimetre", "millimetres"),
    "mi": ("mi", "mile", "miles"), "ft": ("ft", "foot", "feet"), "foot": ("ft", "foot", "foot"),
    "in": ("in", "inch", "inches"), "yd": ("yd", "yard", "yards"), "nmi": ("nmi", "nautical mile", "nautical miles"),
    "km2": ("km2", "square kilometre", "square kilometres"), "m2": ("m2", "square metre", "square metres"),
    "sqmi": ("sq mi", "square mile", "square miles"), "sqft": ("sq ft", "square foot", "square feet"),
    "ha": ("ha", "hectare", "hectares"), "acre": ("acres", "acre", "acres"),
    "kg": ("kg", "kilogram", "kilograms"), "g": ("g", "gram", "grams"), "t": ("t", "tonne", "tonnes"),
    "lb": ("lb", "pound", "pounds"), "oz": ("oz", "ounce", "ounces"),
    "km/h": ("km/h", "kilometre per hour", "kilometres per hour"), "mph": ("mph", "mile per hour", "miles per hour"),
    "C": ("°C", "degree Celsius", "degrees Celsius"), "F": ("°F", "degree Fahrenheit", "degrees Fahrenheit"),
    "m3": ("m3", "cubic metre", "cubic metres"), "m3/s": ("m3/s", "cubic metre per second", "cubic metres per second"),
    "L": ("L", "litre", "litres"), "USgal": ("US gal", "U.S. gallon", "U.S. gallons"),
    "PD/km2": ("/km2", "inhabitants per square kilometre", "inhabitants per square kilometre"),
    "/km2": ("/km2", "per square kilometre", "per square kilometre"), "hp": ("hp", "horsepower", "horsepower"),
}
_UNIT_ALIASES = {"°C": "C", "°F": "F", "mi2": "sqmi", "ft2": "sqft", "acres": "acre", "mile": "mi",
                 "tonne": "t", "mi/h": "mph", "km²": "km2", "C-change": "C", "F-change": "F"}
_CONVERT_SCALES = {"e3": "thousand", "e6": "million", "e9": "billion", "e12": "trillion"}
_SYMBOL_UNITS = frozenset({"C", "F", "°C", "°F", "C-change", "F-change"})  # shown by symbol unless abbr=off
_SUBUNITS = frozenset({"in", "oz", "lb", "ft", "yd"})  # {{convert|6|ft|2|in}}: 6 feet 2 inches


def _convert(parameters: Parameters, symbols: bool = False) -> str:
    """``{{convert|10|-|14|cm}}`` or ``{{cvt|10-14|cm}}`` (``symbols``): "10–14 centimetres" or "10–14 cm"."""
    values = [value.strip() for value in _positional(parameters)]
    joined = _AMOUNT_RANGE.fullmatch(values[0]) if values else None
    if joined:
        amounts, separators, index = [joined.group(1), joined.group(3)], [joined.group(2).strip() or "-"], 1
    elif values and _AMOUNT.fullmatch(values[0]):
        amounts, separators, index = [values[0]], [], 1
    else:
        return ""
    while index + 1 < len(values) and values[index].lower() in _CONVERT_RANGES and _AMOUNT.fullmatch(values[index + 1]):
        separators.append(values[index].lower())
        amounts.append(values[index + 1])
        index += 2
    if parameters.get("disp") == "out":
        return ""  # only the converted figure is shown
    abbr = parameters.get("abbr", "").lower()
    symbol = abbr in ("on", "in") or (symbols and abbr != "off")
    units = values[index:index + 1]
    if len(values) > index + 2 and _AMOUNT.fullmatch(values[index + 1]) and values[index + 2] in _SUBUNITS:
        units.append(values[index + 2])  # an input in two units: 6 ft 2 in
    shown = [_unit_name(code, symbol or (code in _SYMBOL_UNITS and abbr != "off"), amounts, parameters)
             if abbr != "values" else "" for code in units]
    figures = [_grouped(amount.replace(",", ""), ",", ".") for amount in amounts]
    if symbol and shown and separators and all(s in ("x", "×") for s in separators):
        return " × ".join(f"{figure} {shown[0]}" for figure in figures)  # 3 ft × 6 ft
    text = figures[0] + "".join(_CONVERT_RANGES[s] + figure for s, figure in zip(separators, figures[1:]))
    if parameters.get("adj") == "on" and shown and not symbol:
        return f"{text}-{shown[0].replace(' ', '-')}"  # a 6-square-kilometre area
    if len(shown) == 2:
        return f"{text} {shown[0]} {_grouped(values[index + 1], ',', '.')} {shown[1]}"
    return f"{text} {shown[0]}" if shown and shown[0] else text


def _unit_name(code: str, symbol: bool, amounts: list[str], parameters: Parameters) -> str:
    scale = ""
    head = _SCALE_PREFIX.match(code)
    if head and code[head.end():]:
        scale, code = _CONVERT_SCALES[head.group(0)] + " ", code[head.end():]
    entry = _CONVERT_UNITS.get(_UNIT_ALIASES.get(code, code))
    if entry is None:
        return scale + code
    if symbol:
        return scale + entry[0]
    one = len(amounts) == 1 and amounts[0] == "1" and not scale
    name = entry[1] if one or parameters.get("adj") == "on" else entry[2]
    if parameters.get("sp") == "us":
        name = name.replace("metre", "meter").replace("litre", "liter")
    return scale + name


_QUOTE = _quotation(("text", "quote", "1"), ("author", "sign", "cite", "2"), ("title", "3"), ("source", "4"))
INLINE_TEMPLATES: dict[str, Rule] = {
    "lang": _pick("text", "texte", "2"),  # {{lang|fr|texte}}: the text; enwiki, frwiki, jawiki, zhwiki, ...
    "langx": _pick("text", "2"), "script": _pick("2"),
    "nowrap": _pick("1"), "nobr": _pick("1"), "nobold": _pick("1"), "noitalic": _pick("1"),
    "small": _pick("1"), "smaller": _pick("1"), "big": _pick("1"), "larger": _pick("1"), "resize": _last,
    "vanchor": _pick("1"), "abbr": _pick("1"), "math": _pick("1"), "mvar": _pick("1"), "var": _pick("1"),
    "transl": _last, "transliteration": _last, "unicode": _pick("1"), "iast": _pick("1"), "angbr": _pick("1"),
    "ipa": _ipa, "respell": _joined("-"), "circa": _prefixed("c. "), "usd": _prefixed("US$"), "serif": _pick("1"),
    "chem": _joined(""),  # {{chem|H|2|O}}: H2O
    "nihongo": _joined(" ", 3),  # {{nihongo|Tokyo|東京|Tōkyō}}: Tokyo 東京 Tōkyō
    "convert": _convert, "cvt": lambda parameters: _convert(parameters, symbols=True),
    "রূপান্তর": _convert,
    "ill": _pick("lt", "label", "1"), "interlanguage link": _pick("lt", "label", "1"),  # interlanguage links
    "仮リンク": _pick("1"), "lien": _pick("texte", "fr", "1"),
    "link-en": _pick("3", "1"), "le": _pick("3", "1"),  # zhwiki: {{link-en|中文|English|shown}}
    # Quotations, inline and block: the quoted text, then who said it where the template shows it.
    "qi": _pick("1"), "quote inline": _pick("1"),
    "quote": _QUOTE, "blockquote": _QUOTE, "quotation": _QUOTE,
    "quote box": _quotation(("quote", "text", "1"), ("author",), ("title",), ("source",)),
    "zitat": _quotation(("text", "1"), ("autor", "2"), ("quelle", "3")),  # dewiki, with its Übersetzung
    "citation": _pick("1"),  # frwiki's inline quotation; enwiki's Citation (named parameters only) gives nothing
    "citation bloc": _quotation(("1",), ("2",)), "incise": _around("— ", " —", "1"),
    "refnec": _pick("1"), "référence nécessaire": _pick("1"),  # the text marked, not the mark
    # Numbers, dates and centuries written by templates.
    "as of": _as_of, "isbn": lambda parameters: "ISBN " + ", ".join(_positional(parameters)),
    "date": _date_fr, "date-": _date_fr,  # frwiki: {{date|7|avril|1732}}
    "nombre": _number_and_unit, "nb": _number_and_unit, "unité": _number_and_unit, "fmtn": _number_and_unit,
    "s": _century_fr, "s-": _century_fr, "siècle": _century_fr, "s2-": _centuries_fr,
    "séc": _around("século ", "", "1"), "siglo": _century_es,
    # Layout around running text: lists set in columns.
    "colonnes": _pick("1"), "div col": _pick("content"), "mehrspaltige liste": _pick("liste"),
    # Punctuation, for the sentence to read through.
    "'": _fixed("'"), "snd": _fixed(" – "), "spnd": _fixed(" – "), "ndash": _fixed("–"), "endash": _fixed("–"),
    "en dash": _fixed("–"), "mdash": _fixed("—"), "em dash": _fixed("—"), "nbsp": _fixed(" "), "nbs": _fixed(" "),
}
_LANG_PREFIX = "lang-"  # {{lang-fr|texte}}: the text (without the "French:" it renders)
_IPA_PREFIX = "ipa-"  # {{IPA-de|ˈaldiː}}
_ORDINAL_FR = re.compile(r"\d+(?:er|re|e|ère|ème|nd|nde)")  # frwiki's {{1er|semestre}}: "1er semestre"
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]+)*")
_TEMPLATE_NAME_SPACES = re.compile(r"[\s_]+")
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?![\w.,])")
_PLAIN_NUMBER = re.compile(r"([-−]?)(\d+)(?:[.,](\d+))?")
_EXPONENT = re.compile(r"-?\d")
_AMOUNT = re.compile(r"[-+−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
_AMOUNT_RANGE = re.compile(r"([-+−]?\d[\d,]*(?:\.\d+)?)(\s*[-–]\s*| (?:to|and|or) )(\d[\d,]*(?:\.\d+)?)")
_SCALE_PREFIX = re.compile(r"e(?:3|6|9|12)(?!\d)")


def inline_rule(name: str) -> Rule | None:
    """The rule that writes a template's visible text, None for a template we drop (most)."""
    key = _TEMPLATE_NAME_SPACES.sub(" ", name).strip().lower()
    rule = INLINE_TEMPLATES.get(key)
    if rule is not None:
        return rule
    if key.startswith((_LANG_PREFIX, _IPA_PREFIX)):
        return _pick("1")
    if _ORDINAL_FR.fullmatch(key):
        return lambda parameters: f"{key} {parameters['1']}" if parameters.get("1") else key
    return None
