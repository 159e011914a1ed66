"""What the Wikimedia dumps site offers, as ``clirmatrix dumps list`` reads it and ``fetch`` and ``plan`` use it.

The listing is the contract between the three: every file it names carries the size
and checksums the site itself publishes, and the name ``build --dumps`` reads it by.
Where each kind lives and how the site says a dump is finished (docs/dumps.md):

- MediaWiki dumps, ``{wiki}/{run}/``: the run's ``dumpstatus.json`` gives each job's
  status and its files' sizes, md5 and sha1 (some entries lack the hashes: then the
  run's ``md5sums.txt`` / ``sha1sums.txt``). Only a job whose status is ``done`` is
  offered; a newer run still in progress, or failed, is named in a note.
- Enterprise HTML, ``other/enterprise_html/runs/{run}/``: a directory listing gives the
  sizes; each tarball's ``…-ENTERPRISE-STATS.json`` its md5.
- CirrusSearch (stopped in 2025), ``other/cirrussearch/{run}/``: the listing's sizes; no
  checksum is published (``fetch`` reads such a file whole to its gzip trailer).
- Wikidata's JSON dump, ``wikidatawiki/entities/{run}/``: listed only once its
  ``md5sums.txt`` names it, which the dump writes after the file is whole.

Folders are read by what their pages mean, not by one server's layout: a page is a
listing when a heading says ``Index of`` the folder asked for (nginx, Apache and
lighttpd all write one), its entries are the links to names inside that folder, and a
size is taken as bytes only where the row gives it exactly; a rounded one (``1.2M``)
is asked of the server with HEAD. Any other page answered in a folder's place (an error
page with status 200, a login page, a captive portal) is refused naming its URL, never
read as an empty folder; a folder with no runs in it is said to be so.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import orjson

from clirmatrix.pipeline.errors import InputError, InvalidInputError
from clirmatrix.pipeline.method.input_kinds import CIRRUS, HTML, ITEMS_PER_SITE, KIND_ORDER, LINKS, PAGE_PROPS, RECORD, SOURCES, WIKIDATA_JSON, XML, choose_kind
from clirmatrix.pipeline.method.languages import site_key
from clirmatrix.pipeline.tools.download import RETRY_STATUS, as_url, retry_after

LISTING_FORMAT = "clirmatrix-dumps-list/1"


@dataclass(frozen=True)
class OfferedFile:
    """One file of a finished dump run: where it is, what it must be, and the name the build reads it by."""

    name: str  # the file name on the site, which ``fetch`` keeps (``build --dumps`` classifies by it)
    url: str
    kind: str  # input_kinds: CIRRUS, HTML, XML (documents), WIKIDATA_JSON, ITEMS_PER_SITE, PAGE_PROPS (links)
    lang: str | None  # the Wikipedia's language; None for Wikidata's files
    date: str  # YYYYMMDD of the dump run
    size: int | None = None  # bytes, as the site publishes them; None where it publishes none
    md5: str | None = None
    sha1: str | None = None


@dataclass
class DumpListing:
    """What ``dumps list`` found: every complete dump of each kind per language, and the files ``fetch`` takes."""

    mirror: str
    date: str  # "latest" or the YYYYMMDD asked for
    offered: list[OfferedFile] = field(default_factory=list)  # the newest complete run of each (language, kind)
    chosen: list[OfferedFile] = field(default_factory=list)  # what fetch downloads: one document kind a language, and the links
    notes: list[str] = field(default_factory=list)  # runs in progress or failed (not offered), languages without a dump

    def to_json(self) -> bytes:
        chosen = {item.url for item in self.chosen}
        files = [{**asdict(item), "chosen": item.url in chosen} for item in self.offered]
        return orjson.dumps({"format": LISTING_FORMAT, "mirror": self.mirror, "date": self.date, "files": files, "notes": self.notes},
                            option=orjson.OPT_INDENT_2) + b"\n"

    @classmethod
    def read(cls, path: str | Path) -> DumpListing:
        """A listing written by ``dumps list --json``; InvalidInputError naming the file when it is not one."""
        try:
            value = orjson.loads(Path(path).read_bytes())
        except (OSError, orjson.JSONDecodeError) as error:
            raise InvalidInputError(f"{path}: not a dumps listing ({error})") from None
        if not isinstance(value, dict) or value.get("format") != LISTING_FORMAT:
            raise InvalidInputError(f"{path}: not a dumps listing (format {LISTING_FORMAT!r}, as `clirmatrix dumps list --json` writes)")
        offered, chosen = [], []
        for number, entry in enumerate(value.get("files", []), 1):
            try:
                item = OfferedFile(**{key: entry[key] for key in OfferedFile.__dataclass_fields__ if key in entry})
            except TypeError as error:
                raise InvalidInputError(f"{path}: file {number}: {error}") from None
            offered.append(item)
            if entry.get("chosen"):
                chosen.append(item)
        return cls(value.get("mirror", ""), value.get("date", "latest"), offered, chosen, list(value.get("notes", [])))


# --- the site ----------------------------------------------------------------------------------

DEFAULT_MIRROR = "https://dumps.wikimedia.org/"
DONE = "done"  # the one job status (of waiting, in-progress, done, failed, skipped) whose files are whole
# The jobs that write pages-articles, the single recombined file first (one file to fetch), then its parts.
XML_JOBS = ("articlesmultistreamdumprecombine", "articlesmultistreamdump", "articlesdumprecombine", "articlesdump")
TABLE_JOBS = {PAGE_PROPS: "pagepropstable", ITEMS_PER_SITE: "wbitemspersitetable"}
RUNS_LOOKED_AT = 6  # runs of a wiki looked at, newest first, before saying it has no finished dump of a kind
_RUN = re.compile(r"^\d{8}$")
_INDEX_OF = re.compile(r"^\s*(?:Index of|Directory listing for)\s+(?P<path>\S.*?)\s*$", re.IGNORECASE)
_TIME = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?$")  # a row's time of day: its size, when exact, is the next field
_XML_FILE = re.compile(r"-pages-articles(?:-multistream)?\d*\.xml(?:-p\d+p\d+)?\.bz2$")


class SiteError(InputError):
    """The dumps site (or mirror) is unreachable, or answered with something that is not what it publishes."""


class Site:
    """A dumps site, a mirror laid out like it, or a local copy (a folder or ``file://`` URL): small files and listings."""

    def __init__(self, mirror: str = DEFAULT_MIRROR, timeout: float = 60.0, retries: int = 3, sleep: Callable[[float], None] = time.sleep) -> None:
        self.base = as_url(mirror)
        self.local = self.base.startswith("file://")
        self.timeout, self.retries, self.sleep = timeout, retries, sleep
        self.requests = 0
        self._seen: dict[str, bytes | None] = {}

    def url(self, path: str) -> str:
        return self.base + path.lstrip("/")

    def get(self, path: str) -> bytes | None:
        """The bytes of a small published file (kept for this listing: asked once); None when the site has no such file (404)."""
        if path not in self._seen:
            self._seen[path] = self._get(path)
        return self._seen[path]

    def _get(self, path: str) -> bytes | None:
        url = self.url(path)
        if self.local:
            local = Path(urllib.request.url2pathname(urlparse(url).path))
            return local.read_bytes() if local.is_file() else None
        body = self._ask(urllib.request.Request(url), lambda response: response.read())
        return body if isinstance(body, bytes) else None

    def _ask(self, request: urllib.request.Request, read: Callable) -> object:
        """``read(response)`` of a request, retried as ``fetch`` retries; None when the site has no such file (404, 410)."""
        url = request.full_url
        for attempt in range(self.retries + 1):
            self.requests += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return read(response)
            except urllib.error.HTTPError as error:
                if error.code in (404, 410):
                    return None
                if error.code not in RETRY_STATUS or attempt == self.retries:
                    raise SiteError(f"{url}: HTTP {error.code} {error.reason}") from None
                self.sleep(max(2.0**attempt, retry_after(error.headers.get("Retry-After")) or 0.0))
            except (urllib.error.URLError, OSError) as error:
                if attempt == self.retries:
                    raise SiteError(f"cannot reach {url} ({getattr(error, 'reason', error)}); check --mirror") from None
                self.sleep(2.0**attempt)
        raise AssertionError("unreachable")

    def listing(self, folder: str) -> dict[str, int | None] | None:
        """A folder's entries: name -> size in bytes (None for a subfolder, ending in ``/``, or a size not given exactly); None if absent.

        SiteError naming the URL when the page in its place is not a listing of it.
        """
        folder = folder.strip("/") + "/" if folder.strip("/") else ""
        if self.local:
            local = Path(urllib.request.url2pathname(urlparse(self.url(folder)).path))
            if not local.is_dir():
                return None
            return {entry.name + "/" if entry.is_dir() else entry.name: None if entry.is_dir() else entry.stat().st_size
                    for entry in sorted(local.iterdir(), key=lambda e: e.name)}
        page = self.get(folder)
        return None if page is None else read_listing(page, self.url(folder), folder)

    def entries(self, folder: str) -> dict[str, int | None]:
        """``listing``, empty where the folder is absent."""
        return self.listing(folder) or {}

    def size(self, path: str) -> int | None:
        """A file's exact size: its Content-Length (HEAD), for a listing that shows it rounded; None if not given."""
        if self.local:
            local = Path(urllib.request.url2pathname(urlparse(self.url(path)).path))
            return local.stat().st_size if local.is_file() else None
        try:
            length = self._ask(urllib.request.Request(self.url(path), method="HEAD"), lambda response: response.headers.get("Content-Length"))
        except SiteError:  # a server that refuses HEAD: the size stays unknown (fetch then goes by the checksum)
            return None
        return int(length) if isinstance(length, str) and length.isdigit() else None

    def json(self, path: str) -> dict | None:
        data = self.get(path)
        if data is None:
            return None
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            kind = "an HTML page" if data.lstrip()[:1] == b"<" else "not JSON"
            raise SiteError(f"{self.url(path)} is {kind}, not the JSON the site publishes there") from None
        if not isinstance(value, dict):
            raise SiteError(f"{self.url(path)}: not a JSON object")
        return value

    def checksums(self, path: str) -> dict[str, str]:
        """A ``md5sums.txt`` / ``sha1sums.txt`` file: name -> hex digest (``<hex>  <name>`` lines); empty if absent."""
        data = self.get(path)
        if data and data.lstrip()[:1] == b"<":  # a page in its place would read as "names nothing": say what it is
            raise SiteError(f"{self.url(path)} is an HTML page, not the checksum list the site publishes there")
        sums = {}
        for line in (data or b"").decode("utf-8", "replace").splitlines():
            digest, _, name = line.partition("  ")
            if name and re.fullmatch(r"[0-9a-f]{32}|[0-9a-f]{40}", digest.strip()):
                sums[name.strip()] = digest.strip()
        return sums


class _Page(HTMLParser):
    """An HTML page as a listing reads it: its headings (title, h1, h2), and each link with the text after it on its row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[str] = []
        self.links: list[tuple[str, str]] = []
        self._heading: list[str] | None = None
        self._link: tuple[str, list[str]] | None = None  # (href, the row's text after the link) while its row lasts
        self._in_link = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("title", "h1", "h2"):
            self._heading = []
        elif tag == "a":
            self._end_row()
            href = dict(attrs).get("href")
            if href:
                self._link, self._in_link = (href, []), True
        elif tag in ("tr", "li", "br", "hr"):
            self._end_row()

    def handle_endtag(self, tag: str) -> None:
        if tag in ("title", "h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        elif tag == "a":
            self._in_link = False
        elif tag in ("tr", "li", "pre", "table", "ul", "body"):
            self._end_row()

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        if self._link is not None and not self._in_link:
            line, newline, _ = data.partition("\n")
            self._link[1].append(line)
            if newline:  # a <pre> listing: one entry a line
                self._end_row()

    def _end_row(self) -> None:
        if self._link is not None:
            self.links.append((self._link[0], "".join(self._link[1])))
        self._link, self._in_link = None, False


def _exact_size(row: str) -> int | None:
    """The size in bytes a listing row gives after its time of day, if it gives it exactly (not ``44K``, ``1.2M``, ``-``)."""
    fields = row.split()
    times = [number for number, value in enumerate(fields) if _TIME.match(value)]
    after = fields[times[-1] + 1 :] if times else []
    return int(after[0]) if after and after[0].isdigit() else None


def read_listing(page: bytes, url: str, folder: str) -> dict[str, int | None]:
    """A folder's entries from the page a server answers for it (nginx, Apache or lighttpd, or any page headed ``Index of`` it).

    The page must be headed ``Index of PATH`` where PATH ends with the folder asked for
    (a mirror may serve the site below a prefix); its entries are the links to names
    directly inside that folder, wherever the server puts them. Anything else is
    SiteError naming the URL.
    """
    parsed = _Page()
    parsed.feed(page.decode("utf-8", "replace"))
    parsed.close()
    paths = [match["path"].rstrip("/") for heading in parsed.headings if (match := _INDEX_OF.match(heading))]
    want = "/" + folder.strip("/") if folder.strip("/") else ""
    if not paths:
        title = next((" ".join(h.split()) for h in parsed.headings if h.strip()), "")
        raise SiteError(f"{url}: not a directory listing (" + (f"a page titled {title!r}" if title else "a page without an 'Index of' heading")
                        + ": an error or login page?); check --mirror, or try again later")
    if not any(unquote(path).endswith(want) for path in paths):
        raise SiteError(f"{url}: the page lists {paths[0]!r}, not {want or '/'}; check --mirror")
    base = urlparse(url)
    found: dict[str, int | None] = {}
    for href, row in parsed.links:
        target = urlparse(urljoin(url, href))
        if target.query or target.fragment or (target.scheme, target.netloc) != (base.scheme, base.netloc):
            continue  # a sort order, an anchor, another site
        rest = unquote(target.path)[len(unquote(base.path)):] if unquote(target.path).startswith(unquote(base.path)) else ""
        if rest and "/" not in rest.rstrip("/"):  # directly inside: not the parent, the folder itself, or deeper
            found[rest] = None if rest.endswith("/") else _exact_size(row)
    return found


def runs_of(entries: dict[str, int | None], date: str) -> list[str]:
    """The run folders of a listing, newest first, on or before ``date`` (``latest``: all)."""
    runs = sorted((name.rstrip("/") for name in entries if name.endswith("/") and _RUN.match(name.rstrip("/"))), reverse=True)
    return [run for run in runs if date == "latest" or run <= date]


def dated_runs(site: Site, folder: str, date: str) -> tuple[list[str], str | None]:
    """The runs of a folder, newest first, on or before ``date``; with none, why not (the folder is absent, lists no runs, ...)."""
    url = site.url(folder.strip("/") + "/")
    entries = site.listing(folder)
    if entries is None:
        return [], f"{url} is not there (404)"
    every = runs_of(entries, "latest")
    if not every:
        return [], f"{url} lists no YYYYMMDD/ run folder"
    runs = runs_of(entries, date)
    return runs, None if runs else f"{url} has no run on or before {date} (the oldest is {every[-1]})"


# --- each kind ---------------------------------------------------------------------------------


def _wiki_job_files(site: Site, db: str, run: str, status: dict, job_names: Sequence[str], keep: Callable[[str], bool], kind: str,
                    lang: str | None) -> tuple[list[OfferedFile] | None, str | None]:
    """(the files of the first finished job of ``job_names`` in a run, or None; the state of an unfinished one, for a note)."""
    jobs = status.get("jobs", {}) if isinstance(status.get("jobs"), dict) else {}
    unfinished = None
    sums: dict[str, dict[str, str]] | None = None
    for job_name in job_names:
        job = jobs.get(job_name)
        if not isinstance(job, dict):
            continue
        if job.get("status") != DONE:
            unfinished = unfinished or f"{job_name} {job.get('status', '?')}"
            continue
        files = [(name, entry) for name, entry in (job.get("files") or {}).items() if keep(name) and isinstance(entry, dict)]
        if not files:
            continue
        offered = []
        for name, entry in sorted(files):
            md5, sha1 = entry.get("md5"), entry.get("sha1")
            if not (md5 or sha1):
                if sums is None:  # some entries lack hashes (the site's own files then carry them, when at all)
                    sums = {"md5": site.checksums(f"{db}/{run}/{db}-{run}-md5sums.txt"), "sha1": site.checksums(f"{db}/{run}/{db}-{run}-sha1sums.txt")}
                md5, sha1 = sums["md5"].get(name), sums["sha1"].get(name)
            url = site.url(entry.get("url") or f"{db}/{run}/{name}")
            offered.append(OfferedFile(name, url, kind, lang, run, entry.get("size"), md5, sha1))
        return offered, None
    return None, unfinished


def wiki_dump(site: Site, db: str, lang: str | None, kind: str, date: str, notes: list[str]) -> tuple[list[OfferedFile], str | None]:
    """The files of the newest finished MediaWiki dump of ``kind`` (XML, page_props, wb_items_per_site) of a wiki; with none, why."""
    job_names, keep = (XML_JOBS, lambda name: bool(_XML_FILE.search(name))) if kind == XML else ((TABLE_JOBS[kind],), lambda name: True)
    runs, reason = dated_runs(site, f"{db}/", date)
    for run in runs[:RUNS_LOOKED_AT]:
        status = site.json(f"{db}/{run}/dumpstatus.json")  # the site's own word on each job: preferred to any listing
        if status is None:
            continue  # a run folder without a status yet: just begun
        files, unfinished = _wiki_job_files(site, db, run, status, job_names, keep, kind, lang)
        if files:
            return files, None
        if unfinished:
            notes.append(f"{db} {run}: {kind} not offered ({unfinished}); looking at older runs")
    return [], reason or f"no finished {kind} job in the {min(len(runs), RUNS_LOOKED_AT)} newest runs of {site.url(db + '/')}"


def listed_runs(site: Site, folder: str, date: str) -> tuple[list[tuple[str, dict[str, int | None]]], str | None]:
    """((run, its entries) of a dated folder of listings, newest first, at most ``RUNS_LOOKED_AT``; why there are none)."""
    runs, reason = dated_runs(site, folder, date)
    return [(run, site.entries(f"{folder}/{run}/")) for run in runs[:RUNS_LOOKED_AT]], reason


def _sized(site: Site, path: str, listed: int | None) -> int | None:
    """The size the listing gives exactly, else the server's Content-Length (Apache and lighttpd round sizes: ``1.2M``)."""
    return listed if listed is not None else site.size(path)


def enterprise_dumps(site: Site, dbs: dict[str, str], date: str) -> tuple[dict[str, OfferedFile], str | None]:
    """Per language the newest Enterprise HTML dump of its articles (namespace 0), md5 from its STATS file; why there are none at all."""
    found: dict[str, OfferedFile] = {}
    runs, reason = listed_runs(site, "other/enterprise_html/runs", date)
    for run, entries in runs:
        for lang, db in dbs.items():
            name = f"{db}-NS0-{run}-ENTERPRISE-HTML.json.tar.gz"
            if lang in found or name not in entries:
                continue
            stats_name = f"{db}-NS0-{run}-ENTERPRISE-STATS.json"
            stats = site.json(f"other/enterprise_html/runs/{run}/{stats_name}") if stats_name in entries else None
            md5 = stats.get("md5sum") if stats else None
            path = f"other/enterprise_html/runs/{run}/{name}"
            found[lang] = OfferedFile(name, site.url(path), HTML, lang, run, _sized(site, path, entries[name]), md5 if isinstance(md5, str) else None)
    return found, reason


def cirrus_dumps(site: Site, dbs: dict[str, str], date: str) -> tuple[dict[str, OfferedFile], str | None]:
    """Per language the newest CirrusSearch content dump (no checksum is published for these); why there are none at all."""
    found: dict[str, OfferedFile] = {}
    runs, reason = listed_runs(site, "other/cirrussearch", date)
    for run, entries in runs:
        for lang, db in dbs.items():
            name = f"{db}-{run}-cirrussearch-content.json.gz"
            if lang not in found and name in entries:
                path = f"other/cirrussearch/{run}/{name}"
                found[lang] = OfferedFile(name, site.url(path), CIRRUS, lang, run, _sized(site, path, entries[name]))
    return found, reason


def wikidata_json_dump(site: Site, date: str, notes: list[str]) -> tuple[OfferedFile | None, str | None]:
    """The newest Wikidata JSON dump whose run's md5sums name it (written once the file is whole); with none, why."""
    runs, reason = listed_runs(site, "wikidatawiki/entities", date)
    for run, entries in runs:
        name = f"wikidata-{run}-all.json.gz"
        if name not in entries:
            continue
        md5 = site.checksums(f"wikidatawiki/entities/{run}/wikidata-{run}-md5sums.txt").get(name)
        if md5 is None:
            notes.append(f"wikidata {run}: {name} not offered (its md5sums do not name it yet: still being written)")
            continue
        sha1 = site.checksums(f"wikidatawiki/entities/{run}/wikidata-{run}-sha1sums.txt").get(name)
        path = f"wikidatawiki/entities/{run}/{name}"
        return OfferedFile(name, site.url(path), WIKIDATA_JSON, None, run, _sized(site, path, entries[name]), md5, sha1), None
    return None, reason or f"no finished all.json.gz in the {len(runs)} newest runs of {site.url('wikidatawiki/entities/')}"


# --- the listing -------------------------------------------------------------------------------

DOCUMENT_KINDS = (CIRRUS, HTML, XML)
_KIND_NAMES = {HTML: "Enterprise HTML", CIRRUS: "CirrusSearch", XML: "XML"}


def list_dumps(langs: Sequence[str], date: str = "latest", mirror: str = DEFAULT_MIRROR, source: str = "auto", links: str = "auto",
               site: Site | None = None, on_step: Callable[[str], None] = lambda what: None) -> DumpListing:
    """Every finished dump of each kind the build reads, for ``langs``, and the files ``fetch`` takes.

    ``chosen``: per language the document dump ``build --source`` would read (the newest,
    ties broken as the build breaks them), and the link files ``--links`` needs
    (``auto``: ``wb_items_per_site``, else the JSON dump, else every language's page_props).
    A language left without one is named in a note saying why; a kind asked for by
    ``source`` whose runs folder is absent or lists no runs is SiteError.
    """
    if date != "latest" and not _RUN.match(date):
        raise InvalidInputError(f"--date {date}: give latest or a date as YYYYMMDD")
    if source not in SOURCES:
        raise InvalidInputError(f"--source {source}: choose from {', '.join(SOURCES)}")
    if links not in LINKS:
        raise InvalidInputError(f"--links {links}: choose from {', '.join(LINKS)}")
    site = site or Site(mirror)
    listing = DumpListing(site.base, date)
    dbs = {lang: site_key(lang) for lang in langs}
    why: dict[str, dict[str, str]] = {lang: {} for lang in dbs}  # per language and kind: why it offers none
    kinds: dict[str, dict[str, OfferedFile]] = {}
    for kind, step, read in ((HTML, "Enterprise HTML runs", enterprise_dumps), (CIRRUS, "CirrusSearch runs", cirrus_dumps)):
        on_step(step)
        kinds[kind], reason = read(site, dbs, date)
        if reason and source == kind:
            raise SiteError(f"{reason}: no {_KIND_NAMES[kind]} dump to choose (--source {source})")
        if reason and source == "auto":
            listing.notes.append(f"{kind}: {reason}; no {_KIND_NAMES[kind]} dump offered")
        for lang, db in dbs.items():
            if not reason and lang not in kinds[kind]:
                why[lang][kind] = f"no {db} dump in its newest runs"
    docs: dict[str, dict[str, list[OfferedFile]]] = {}
    page_props: dict[str, list[OfferedFile]] = {}
    for lang, db in dbs.items():
        on_step(f"{db}: dump runs")
        xml, reason = wiki_dump(site, db, lang, XML, date, listing.notes)
        if reason:
            why[lang][XML] = reason
        page_props[lang] = wiki_dump(site, db, lang, PAGE_PROPS, date, listing.notes)[0]
        docs[lang] = {kind: files for kind, files in ((HTML, [kinds[HTML][lang]] if lang in kinds[HTML] else []),
                                                      (CIRRUS, [kinds[CIRRUS][lang]] if lang in kinds[CIRRUS] else []), (XML, xml)) if files}
        listing.offered.extend(item for kind in KIND_ORDER for item in docs[lang].get(kind, []))
        listing.offered.extend(page_props[lang])
    on_step("wikidatawiki: wb_items_per_site")
    items_per_site, items_why = wiki_dump(site, "wikidatawiki", None, ITEMS_PER_SITE, date, listing.notes)
    on_step("wikidatawiki: entities")
    wikidata, wikidata_why = wikidata_json_dump(site, date, listing.notes)
    links_why = [reason for reason in (items_why, wikidata_why) if reason]
    listing.offered.extend(items_per_site + ([wikidata] if wikidata else []))
    for lang in dbs:
        picked = choose_kind({kind: {files[0].date: files} for kind, files in docs[lang].items()}, source)
        if picked is None:
            what = "CirrusSearch, Enterprise HTML or XML" if source == "auto" else source
            reasons = "; ".join(f"{kind}: {why[lang][kind]}" for kind in (HTML, CIRRUS, XML) if kind in why[lang] and source in ("auto", kind))
            listing.notes.append(f"{lang}: no finished {what} dump at {site.base}" + ("" if date == "latest" else f" on or before {date}")
                                 + (f" ({reasons})" if reasons else ""))
            continue
        listing.chosen.extend(docs[lang][picked[0]])
    listing.chosen.extend(_link_files(links, items_per_site, wikidata, page_props, listing, links_why))
    return listing


def nothing_to_fetch(listing: DumpListing) -> str | None:
    """Why ``fetch`` would take no document dump at all (one line naming the mirror), or None when it takes one."""
    if any(item.kind in DOCUMENT_KINDS for item in listing.chosen):
        return None
    return (f"nothing to fetch: no language has a finished document dump at {listing.mirror}"
            + ("" if listing.date == "latest" else f" on or before {listing.date}") + " (see the notes above)")


def _link_files(links: str, items_per_site: list[OfferedFile], wikidata: OfferedFile | None, page_props: dict[str, list[OfferedFile]],
                listing: DumpListing, why: Sequence[str] = ()) -> list[OfferedFile]:
    if links == RECORD:
        return []
    if links in ("auto", ITEMS_PER_SITE) and items_per_site:
        return items_per_site
    if links in ("auto", WIKIDATA_JSON) and wikidata:
        return [wikidata]
    if links in ("auto", PAGE_PROPS):
        chosen_langs = {item.lang for item in listing.chosen}
        found = [item for lang, files in page_props.items() if lang in chosen_langs for item in files]
        if found:
            return found
    listing.notes.append(f"links: no finished {'link source' if links == 'auto' else links} dump found" + (f" ({'; '.join(why)})" if why else "")
                         + "; the build will need --links record (HTML and CirrusSearch records carry their item)")
    return []
