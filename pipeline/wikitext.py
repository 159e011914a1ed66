"""Wikitext to plain text with mwparserfromhell, approximating CirrusSearch's ``text`` field.

Kept: running text, the visible text of links, bold and italics, list items.
Removed: templates, references, tables, comments, headings (CirrusSearch keeps them
in a separate field), files and images, categories, interlanguage links, magic
words, math and other extension tags, bare URLs.
"""

from __future__ import annotations

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


def _link_prefix(title: str) -> str:
    head, sep, _ = title.strip().lstrip(":").partition(":")
    return head.strip().lower() if sep else ""


class WikitextConverter:
    """Turns one wiki's wikitext into text; knows that wiki's file and category names."""

    def __init__(self, media_namespaces: frozenset[str] | set[str] = frozenset()) -> None:
        self.media_namespaces = CANONICAL_MEDIA_NAMESPACES | {name.lower() for name in media_namespaces}

    def to_text(self, wikitext: str) -> str:
        """Plain text of a page, whitespace collapsed to single spaces."""
        code = mwparserfromhell.parse(wikitext)
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
