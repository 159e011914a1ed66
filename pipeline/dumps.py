"""Finding the dumps in a directory, by the names Wikimedia gives them.

- CirrusSearch, classic: ``{wiki}-{date}-cirrussearch-content.json.gz`` (also ``.bz2``,
  plain, or numbered ``-content-NN`` parts);
- CirrusSearch, Hive layout: ``.../index_name={wiki}_content/{wiki}_content-{date}-{NNNNN}.json.bz2``;
- MediaWiki XML: ``{wiki}-{date}-pages-articles[N].xml[-pA pB].bz2`` (multistream too);
- Wikidata: ``latest-all.json.gz`` or ``wikidata-{date}-all.json.gz`` (``.bz2``, plain).

For each language the newest date wins; CirrusSearch is preferred over XML unless
``source`` says otherwise.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field

from clirmatrix.pipeline.errors import InvalidInputError, MissingInputError
from clirmatrix.pipeline.fileio import basename, is_remote, join, list_files
from clirmatrix.pipeline.languages import WIKIPEDIA_LANGUAGES, UnknownWikiError, lang_from_dbname, nearest_languages

CIRRUS = "cirrus"
XML = "xml"
SOURCES = ("auto", CIRRUS, XML)

_COMPRESSED = r"(?:\.gz|\.bz2)?"
_PATTERNS = {
    CIRRUS: [
        re.compile(rf"^(?P<db>[a-z0-9_]+)-(?P<date>\d{{8}}|latest)-cirrussearch-content(?:-\d+)?\.json{_COMPRESSED}$"),
        re.compile(rf"^(?P<db>[a-z0-9_]+)_content-(?P<date>\d{{8}})-\d+\.json{_COMPRESSED}$"),
    ],
    XML: [
        re.compile(
            rf"^(?P<db>[a-z0-9_]+)-(?P<date>\d{{8}}|latest)-pages-articles(?:-multistream)?\d*\.xml(?:-p\d+p\d+)?{_COMPRESSED}$"
        ),
    ],
}
_WIKIDATA = re.compile(rf"^(?:latest-all|wikidata-\d{{8}}-all)(?:-\d+)?\.json{_COMPRESSED}$")


class MissingLanguageError(InvalidInputError):
    """``--langs`` names a language that is no Wikipedia, or one without a dump in the folder."""


@dataclass(frozen=True)
class DumpFile:
    """One input file of a language's documents."""

    path: str
    lang: str
    kind: str  # CIRRUS or XML
    date: str


@dataclass
class DumpSet:
    """What a dumps directory offers: per-language document files and the Wikidata files."""

    docs: dict[str, list[DumpFile]] = field(default_factory=dict)
    wikidata: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def classify(name: str) -> tuple[str, str, str] | None:
    """``(kind, lang, date)`` of a dump file name, or None when it is no Wikipedia dump."""
    for kind, patterns in _PATTERNS.items():
        for pattern in patterns:
            match = pattern.match(name)
            if match:
                try:
                    return kind, lang_from_dbname(match["db"]), match["date"]
                except UnknownWikiError:
                    return None
    return None


def discover(dumps_dir: str, langs: list[str] | None = None, source: str = "auto", skip_missing: bool = False) -> DumpSet:
    """Group the dump files under ``dumps_dir`` (searched recursively) by language.

    A language named in ``langs`` that has no usable dump (or is no Wikipedia at all)
    is an error, since a build without it is not what was asked for; with
    ``skip_missing`` it becomes a note. Other choices (an older dump date) are notes.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
    if not is_remote(dumps_dir) and not os.path.isdir(dumps_dir):
        raise MissingInputError(f"the dumps folder {dumps_dir} does not exist" if not os.path.exists(dumps_dir) else f"--dumps {dumps_dir} is a file, not a folder")
    found: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    dumps = DumpSet()
    for path in list_files(join(dumps_dir, "**")):
        name = basename(path)
        if _WIKIDATA.match(name):
            dumps.wikidata.append(path)
            continue
        parsed = classify(name)
        if parsed:
            kind, lang, date = parsed
            found[lang][kind][date].append(path)
    wanted = sorted(found) if langs is None else list(dict.fromkeys(langs))
    missing: list[str] = []
    for lang in wanted:
        kinds = found.get(lang)
        if not kinds:
            if lang in WIKIPEDIA_LANGUAGES:
                missing.append(f"{lang}: no CirrusSearch or XML dump found in {dumps_dir}")
            else:
                nearest = nearest_languages(lang)
                missing.append(f"{lang}: not a Wikipedia language code" + (f" (nearest: {', '.join(nearest)})" if nearest else ""))
            continue
        order = [CIRRUS, XML] if source == "auto" else [source]
        kind = next((k for k in order if k in kinds), None)
        if kind is None:
            missing.append(f"{lang}: no {source} dump found (only {', '.join(sorted(kinds))})")
            continue
        dates = sorted(kinds[kind])
        if len(dates) > 1:
            dumps.notes.append(f"{lang}: several {kind} dump dates {dates}; using {dates[-1]}")
        dumps.docs[lang] = [DumpFile(p, lang, kind, dates[-1]) for p in sorted(kinds[kind][dates[-1]])]
    if missing and langs is not None and not skip_missing:
        raise MissingLanguageError(
            "--langs names languages this build cannot read:\n" + "\n".join("    " + line for line in missing)
            + "\nfix --langs, add the dumps, or pass --skip-missing to build without them"
        )
    dumps.notes.extend(f"{line}; skipped" for line in missing)
    return dumps
