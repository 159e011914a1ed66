"""The Wikidata JSON dump: one entity per line inside a JSON array.

docs/formats.md section 3: line 1 is ``[``, every entity line ends with ``,`` but the
last, and the final line is ``]``. Only Wikipedia sitelinks of the selected
languages are kept, matched on the exact site key (``enwiki``, never
``enwikiquote`` or ``commonswiki``).

Speed: most of the dump is claims. A line that does not contain the quoted site
key of any selected language cannot hold one of its sitelinks, so it is skipped
without parsing. JSON may escape any character as ``\\uXXXX``; a line with an
escaped ASCII letter, digit or underscore is therefore always parsed. With that
guard the pre-filter gives exactly the results of a full parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import orjson

from clirmatrix.pipeline.io.badinput import BAD_FIELD, INCOMPLETE_LINE, MALFORMED_JSON, MISSING_FIELD, NOT_AN_OBJECT, STREAM_LOSS, TRUNCATED_STREAM, FileReport
from clirmatrix.pipeline.method.languages import site_key

NO_SELECTED_SITELINK = "no_selected_sitelink"

# An escaped character that could spell part of a site key (digits, letters and
# underscore lie in \u0030-\u007f; matching that whole range errs on the safe side).
_ESCAPED_KEY_CHAR = re.compile(rb"\\u00(?:[3][0-9]|[4-7][0-9a-fA-F])")


class Sitelink(NamedTuple):
    entity: str
    lang: str
    title: str


class SitelinkFilter:
    """The selected languages' site keys, and the cheap test before parsing a line."""

    def __init__(self, langs: Iterable[str], prefilter: bool = True) -> None:
        self.site_to_lang = {site_key(lang): lang for lang in sorted(set(langs))}
        if not self.site_to_lang:
            raise ValueError("no languages selected for the Wikidata sitelinks")
        keys = b"|".join(re.escape(key.encode()) for key in self.site_to_lang)
        self._quoted_key = re.compile(b'"(?:' + keys + b')"')
        self.prefilter = prefilter

    def may_match(self, line: bytes) -> bool:
        """False only when the line certainly holds no selected sitelink."""
        if not self.prefilter:
            return True
        return self._quoted_key.search(line) is not None or _ESCAPED_KEY_CHAR.search(line) is not None


class Framing:
    """What a range of the dump saw of the array framing: whether its first line opens it, its last closes it."""

    def __init__(self) -> None:
        self.first: bytes | None = None
        self.last = b""

    def to_dict(self) -> dict:
        return {"opens": self.first == b"[", "closes": self.last == b"]"}


def entity_lines(lines: Iterable[tuple[int, bytes]], report: FileReport, framing: Framing | None = None) -> Iterator[tuple[int, bytes]]:
    """Entity lines without the array framing (``[``, ``]``, one trailing comma).

    A line that does not end as a whole entity (``}`` or ``},``) was cut: it is a bad
    line, counted here, before the pre-filter could skip it unseen. A file that opens
    the array with ``[`` must close it with ``]``; one that does not was cut short.
    A range of a file (``framing`` given) cannot know both ends: it records what it saw
    in ``framing`` and the stage checks the file's first and last ranges together.
    """
    opened = closed = False
    number = 0
    for number, line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if framing is not None:
            if framing.first is None:
                framing.first = stripped
            framing.last = stripped
        if stripped == b"[":
            opened = number == 1 and framing is None
            continue
        if stripped == b"]":
            closed = True
            continue
        closed = False
        if stripped.endswith(b","):
            stripped = stripped[:-1]
        if not stripped.endswith(b"}"):
            report.reject(number, INCOMPLETE_LINE, f"the line ends in {stripped[-20:]!r}, not as a whole entity")
            continue
        yield number, stripped
    if opened and not closed and not any(kind in STREAM_LOSS for kind in report.rejected):
        report.reject(number + 1, TRUNCATED_STREAM, f"the entity array opened on line 1 is never closed with ']' (read to line {number:,}): the file was cut short")


def read_sitelinks(lines: Iterable[tuple[int, bytes]], selection: SitelinkFilter, report: FileReport, framing: Framing | None = None) -> Iterator[Sitelink]:
    """Sitelinks of the selected languages, in dump order; every entity line is counted (``framing``: see ``entity_lines``)."""
    site_to_lang = selection.site_to_lang
    for number, line in entity_lines(lines, report, framing):
        if not selection.may_match(line):
            report.skip(NO_SELECTED_SITELINK)
            continue
        try:
            entity = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            report.reject(number, MALFORMED_JSON, str(error))
            continue
        if not isinstance(entity, dict):
            report.reject(number, NOT_AN_OBJECT, f"expected a JSON object, got {type(entity).__name__}")
            continue
        sitelinks = entity.get("sitelinks") or {}
        if not isinstance(sitelinks, dict):
            report.reject(number, BAD_FIELD, "sitelinks is not an object")
            continue
        found: list[Sitelink] = []
        entity_id = entity.get("id")
        for key, link in sitelinks.items():
            lang = site_to_lang.get(key)
            if lang is None:
                continue
            title = link.get("title") if isinstance(link, dict) else None
            if not isinstance(entity_id, str) or not entity_id:
                report.reject(number, MISSING_FIELD, "entity has sitelinks but no id")
                found = []
                break
            if not isinstance(title, str) or not title:
                report.reject(number, BAD_FIELD, f"{entity_id}: sitelink {key} has no title")
                found = []
                break
            found.append(Sitelink(entity_id, lang, title))
        else:
            if found:
                report.keep()
                yield from found
            else:
                report.skip(NO_SELECTED_SITELINK)
