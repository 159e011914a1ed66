"""The names of the kinds of input a build reads, and of the sources of entity links.

Kept apart from ``pipeline.method.dumps`` (which finds the files, through Beam's filesystems)
so that the settings (``pipeline.config``) can name their choices without importing
Beam: ``clirmatrix --help`` stays fast and quiet.
"""

from __future__ import annotations

# Dumps of documents (docs/building.md#extraction).
CIRRUS = "cirrus"
HTML = "html"
XML = "xml"
KIND_ORDER = (CIRRUS, HTML, XML)  # preference between kinds of the same date (docs/method.md section 2)
SOURCES = ("auto", *KIND_ORDER)  # the choices of --source

# Where entity links come from (docs/method.md section 3).
ITEMS_PER_SITE = "items-per-site"
WIKIDATA_JSON = "wikidata-json"
PAGE_PROPS = "page-props"
RECORD = "record"
LINKS = ("auto", ITEMS_PER_SITE, WIKIDATA_JSON, PAGE_PROPS, RECORD)  # the choices of --links


def date_key(date: str) -> str:
    """A dump date to compare by: ``latest`` is newer than any YYYYMMDD."""
    return "99999999" if date == "latest" else date


def choose_kind(kinds: dict[str, dict[str, list]], source: str) -> tuple[str, str] | None:
    """``(kind, date)`` to read of the ``{kind: {date: files}}`` found: the newest date of the allowed kinds, ties broken by ``KIND_ORDER``.

    What ``build`` reads of a dumps folder and what ``dumps fetch`` takes of the site, alike.
    """
    allowed = [kind for kind in KIND_ORDER if kind in kinds and source in ("auto", kind)]
    if not allowed:
        return None
    return max(((kind, date) for kind in allowed for date in kinds[kind]), key=lambda pair: (date_key(pair[1]), -KIND_ORDER.index(pair[0])))
