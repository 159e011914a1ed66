"""Finding the dumps in a directory, by the names Wikimedia gives them.

- CirrusSearch, classic: ``{wiki}-{date}-cirrussearch-content.json.gz`` (also ``.bz2``,
  plain, or numbered ``-content-NN`` parts);
- CirrusSearch, Hive layout: ``.../index_name={wiki}_content/{wiki}_content-{date}-{NNNNN}.json.bz2``;
- Wikimedia Enterprise HTML: ``{wiki}-NS0-{date}-ENTERPRISE-HTML.json.tar.gz``;
- MediaWiki XML: ``{wiki}-{date}-pages-articles[N].xml[-pA pB].bz2`` (multistream too);
- Wikidata: ``latest-all.json.gz`` or ``wikidata-{date}-all.json.gz`` (``.bz2``, plain);
- SQL table dumps for links: ``wikidatawiki-{date}-wb_items_per_site.sql.gz`` and
  ``{wiki}-{date}-page_props.sql.gz``.

For each language the newest dump date wins, whatever its kind; between kinds of the
same date CirrusSearch comes first (the paper's own text), then HTML (the same
rendered page, text extracted as CirrusSearch does), then XML (wikitext without
templates): docs/building.md#extraction has the measurements behind the order. ``source``
names one kind instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from clirmatrix.pipeline.errors import InvalidInputError, MissingInputError
from clirmatrix.pipeline.io.fileio import basename, is_remote, join, list_files
from clirmatrix.pipeline.method.input_kinds import CIRRUS, HTML, ITEMS_PER_SITE, KIND_ORDER, LINKS, PAGE_PROPS, RECORD, SOURCES, WIKIDATA_JSON, XML, choose_kind, date_key
from clirmatrix.pipeline.method.languages import WIKIPEDIA_LANGUAGES, UnknownWikiError, lang_from_dbname, nearest_languages

__all__ = [  # the kinds' names are used through this module too
    "CIRRUS", "HTML", "ITEMS_PER_SITE", "KIND_ORDER", "LINKS", "PAGE_PROPS", "RECORD", "SOURCES", "WIKIDATA_JSON", "XML",
    "DumpFile", "DumpSet", "LinkInputs", "MissingLanguageError", "MissingLinksError", "NoDumpsError", "choose_kind", "choose_links", "classify", "discover", "find_dumps", "find_links",
]
LOG = logging.getLogger("clirmatrix")


_COMPRESSED = r"(?:\.gz|\.bz2)?"
_PATTERNS = {
    CIRRUS: [
        re.compile(rf"^(?P<db>[a-z0-9_]+)-(?P<date>\d{{8}}|latest)-cirrussearch-content(?:-\d+)?\.json{_COMPRESSED}$"),
        re.compile(rf"^(?P<db>[a-z0-9_]+)_content-(?P<date>\d{{8}})-\d+\.json{_COMPRESSED}$"),
    ],
    HTML: [re.compile(r"^(?P<db>[a-z0-9_]+)-NS0-(?P<date>\d{8}|latest)-ENTERPRISE-HTML\.json\.tar\.gz$")],
    XML: [
        re.compile(
            rf"^(?P<db>[a-z0-9_]+)-(?P<date>\d{{8}}|latest)-pages-articles(?:-multistream)?\d*\.xml(?:-p\d+p\d+)?{_COMPRESSED}$"
        ),
    ],
}
_WIKIDATA = re.compile(rf"^(?:latest-all|wikidata-\d{{8}}-all)(?:-\d+)?\.json{_COMPRESSED}$")
_ITEMS_PER_SITE = re.compile(rf"^wikidatawiki-(?P<date>\d{{8}}|latest)-wb_items_per_site\.sql{_COMPRESSED}$")
_PAGE_PROPS = re.compile(rf"^(?P<db>[a-z0-9_]+)-(?P<date>\d{{8}}|latest)-page_props\.sql{_COMPRESSED}$")


class MissingLanguageError(InvalidInputError):
    """``--langs`` names a language that is no Wikipedia, or one without a dump in the folder."""


@dataclass(frozen=True)
class DumpFile:
    """One input file of a language's documents."""

    path: str
    lang: str
    kind: str  # CIRRUS, HTML or XML
    date: str


@dataclass
class DumpSet:
    """What a dumps directory offers: per-language document files and the sources of links."""

    docs: dict[str, list[DumpFile]] = field(default_factory=dict)
    wikidata: list[str] = field(default_factory=list)  # the Wikidata JSON dump (one file or shards)
    items_per_site: list[str] = field(default_factory=list)  # the newest wb_items_per_site SQL dump
    page_props: dict[str, str] = field(default_factory=dict)  # lang -> its newest page_props SQL dump
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
    items_per_site: dict[str, list[str]] = defaultdict(list)
    page_props: dict[str, dict[str, str]] = defaultdict(dict)
    for path in list_files(join(dumps_dir, "**")):
        name = basename(path)
        if _WIKIDATA.match(name):
            dumps.wikidata.append(path)
            continue
        if match := _ITEMS_PER_SITE.match(name):
            items_per_site[match["date"]].append(path)
            continue
        if (match := _PAGE_PROPS.match(name)) and match["db"] != "wikidatawiki":
            with contextlib.suppress(UnknownWikiError):
                page_props[lang_from_dbname(match["db"])][match["date"]] = path
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
                missing.append(f"{lang}: no CirrusSearch, Enterprise HTML or XML dump found in {dumps_dir}")
            else:
                nearest = nearest_languages(lang)
                missing.append(f"{lang}: not a Wikipedia language code" + (f" (nearest: {', '.join(nearest)})" if nearest else ""))
            continue
        choice = choose_kind(kinds, source)
        if choice is None:
            missing.append(f"{lang}: no {source} dump found (only {', '.join(sorted(kinds))})")
            continue
        kind, date = choice
        others = sorted(f"{k} {d}" for k in kinds for d in kinds[k] if (k, d) != choice)
        if others:
            dumps.notes.append(f"{lang}: using the {kind} dump of {date}; also found {', '.join(others)}")
        dumps.docs[lang] = [DumpFile(p, lang, kind, date) for p in sorted(kinds[kind][date])]
        if lang in page_props:
            dumps.page_props[lang] = page_props[lang][max(page_props[lang], key=date_key)]
    if missing and langs is not None and not skip_missing:
        raise MissingLanguageError(
            "--langs names languages this build cannot read:\n" + "\n".join("    " + line for line in missing)
            + "\nfix --langs, add the dumps, or pass --skip-missing to build without them"
        )
    dumps.notes.extend(f"{line}; skipped" for line in missing)
    if items_per_site:
        dumps.items_per_site = sorted(items_per_site[max(items_per_site, key=date_key)])
    return dumps


# --- where entity links come from (docs/method.md section 3) -------------------------------------

_CARRIES_ENTITY = (CIRRUS, HTML)  # their records name the page's Wikidata item themselves


class MissingLinksError(MissingInputError):
    """``--links`` names a source whose dump is not there, or a language would have no link source at all."""


@dataclass(frozen=True)
class LinkInputs:
    """The link sources a build reads: one title-keyed Wikidata source (or none) and per-language page_props.

    Title-keyed sitelinks (``wb_items_per_site`` or the JSON dump) win; a page's own
    entity (its record's, else its wiki's ``page_props``) links the pages they miss.
    """

    mode: str
    sitelinks_kind: str | None = None  # ITEMS_PER_SITE or WIKIDATA_JSON
    sitelinks_files: tuple[str, ...] = ()
    page_props: tuple[tuple[str, str], ...] = ()  # (lang, path)

    @classmethod
    def wikidata_wide(cls, kind: str, files: Sequence[str]) -> LinkInputs:
        """Only a Wikidata-wide source: the JSON dump's files, or a ``wb_items_per_site`` dump."""
        return cls(kind, kind, tuple(files))

    def describe(self) -> str:
        parts = [f"{self.sitelinks_kind} ({len(self.sitelinks_files)} file{'s' if len(self.sitelinks_files) != 1 else ''})"] if self.sitelinks_kind else []
        parts += ["the records' own Wikidata items"]
        if self.page_props:
            parts.append(f"page_props of {', '.join(lang for lang, _ in self.page_props)}")
        return ", ".join(parts)


def one_copy_each(paths: Sequence[str]) -> tuple[str, ...]:
    """One file per dump when it is there in several compressions: bz2 first (read in ranges), then gz, then plain."""
    rank = {".bz2": 0, ".gz": 1}
    chosen: dict[str, str] = {}
    for path in sorted(paths, key=lambda p: rank.get(p[p.rfind("."):], 2)):
        stem = basename(path).removesuffix(".bz2").removesuffix(".gz")
        chosen.setdefault(stem, path)
    return tuple(sorted(chosen.values()))


def choose_links(dumps: DumpSet, mode: str, dumps_dir: str, langs: Sequence[str] | None = None) -> LinkInputs:
    """The link sources for ``--links mode``; a source named but absent, or a language left without any, is an error."""
    if mode not in LINKS:
        raise ValueError(f"links must be one of {LINKS}, not {mode!r}")
    langs = sorted(dumps.docs) if langs is None else sorted(langs)
    page_props = tuple((lang, dumps.page_props[lang]) for lang in langs if lang in dumps.page_props)
    names = {ITEMS_PER_SITE: "wikidatawiki-YYYYMMDD-wb_items_per_site.sql.gz", WIKIDATA_JSON: "latest-all.json.gz (or wikidata-YYYYMMDD-all.json.gz/.bz2)"}
    files = {ITEMS_PER_SITE: tuple(dumps.items_per_site), WIKIDATA_JSON: one_copy_each(dumps.wikidata)}
    if mode in (ITEMS_PER_SITE, WIKIDATA_JSON) and not files[mode]:
        raise MissingLinksError(f"--links {mode}: no {names[mode]} in {dumps_dir}")
    if mode in files:
        kind = mode
    elif mode == "auto":  # the smaller dump first: the same links (docs/building.md#links)
        kind = next((k for k in (ITEMS_PER_SITE, WIKIDATA_JSON) if files[k]), None)
    else:
        kind = None
    chosen = LinkInputs(mode, kind, files[kind] if kind else (), page_props)
    if kind is None:
        unlinked = [lang for lang in langs if dumps.docs[lang][0].kind not in _CARRIES_ENTITY and lang not in dumps.page_props]
        if mode == PAGE_PROPS and not page_props:
            raise MissingLinksError(f"--links page-props: no {{wiki}}-YYYYMMDD-page_props.sql.gz in {dumps_dir}")
        if unlinked:
            raise MissingLinksError(
                f"{', '.join(unlinked)}: {'its' if len(unlinked) == 1 else 'their'} XML dump names no Wikidata items and no link source was found for "
                f"{'it' if len(unlinked) == 1 else 'them'} in {dumps_dir}; add {names[ITEMS_PER_SITE]} (one file for every wiki), "
                f"{{wiki}}-YYYYMMDD-page_props.sql.gz, or {names[WIKIDATA_JSON]}"
            )
    return chosen


class NoDumpsError(MissingInputError):
    """The dumps folder holds nothing a build can read."""


def find_dumps(dumps_dir: str, langs: Sequence[str] | None, source: str, skip_missing: bool = False, links: str | None = "auto") -> tuple[DumpSet, LinkInputs | None]:
    """The dumps to read and the link sources (none when ``links`` is None); notes (e.g. a skipped language) are logged, nothing usable is an error."""
    found = discover(dumps_dir, list(langs) if langs else None, source, skip_missing)
    for note in found.notes:
        LOG.warning(note)
    if not found.docs:
        raise NoDumpsError(
            f"no Wikipedia dumps found in {dumps_dir} (expected names like enwiki-20261101-pages-articles-multistream.xml.bz2, "
            "enwiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz or enwiki-20240101-cirrussearch-content.json.gz)"
        )
    if links is None:
        return found, None
    return found, find_links(found, links, dumps_dir)


def find_links(found: DumpSet, links: str, dumps_dir: str) -> LinkInputs:
    """The link sources for ``--links`` among the dumps already found (``choose_links``), said in the log."""
    sources = choose_links(found, links, dumps_dir)
    LOG.info("entity links from %s", sources.describe())
    return sources
