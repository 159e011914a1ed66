"""``clirmatrix download``: released CLIRMatrix files, verified, resumable, never half-written.

Files are resolved through the release's ``downloads.json.gz``, which gives each
file's path, size and md5. A remote index is cached under ``$CLIRMATRIX_HOME``
(default ``~/.clirmatrix``) and revalidated on every run with a conditional
request (ETag / Last-Modified), so a release rebuilt at the same URL is seen at
once; a file that does not match a cached index makes it be fetched again. The
index used is saved into ``--to``, where ``clirmatrix validate`` checks md5s
against it. Without an index a download is refused unless ``--no-index`` says to
go by the release's file names; then every file is read whole (gzip trailer and
every record's format), since no md5 can vouch for it.

Every body is checked: an HTML page or a body much smaller than expected is an
error (the official server answered with a 199-byte error page for weeks), then
size and md5. Downloads go to a hidden ``.part`` file that a retry resumes with an
HTTP Range request when the server allows, and restarts otherwise; the file gets
its name only once verified. A file already present and verified is skipped. Ctrl-C
stops every transfer within a chunk (``stopping.Stop``), keeps the ``.part`` files for the
next run to resume, and raises ``stopping.Interrupted`` saying so. The
base URL may be a mirror, a local folder or a ``file://`` URL (a build made by
``clirmatrix build``); a ``--base-url`` given by the user wins over the URLs an
index names, and a build's ``file://`` URLs are always read beside its index.
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import http.client
import os
import posixpath
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import orjson

from clirmatrix.pipeline.errors import InputError, InvalidInputError
from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.method.languages import BI139_LANGUAGES, MULTI8_LANGUAGES, check_langs
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, iter_lines, parse_doc, parse_query
from clirmatrix.pipeline.settings import comma_list
from clirmatrix.pipeline.tools.stopping import Interrupted, Stop, Stopped, run_stoppable

OFFICIAL_BASE_URL = "http://www.cs.jhu.edu/~shuosun/clirmatrix/data/"
CHUNK = 1 << 20
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
NO_INDEX_HINT = "pass --index FILE|URL, or --no-index to fetch by the release's file names and check each file's gzip stream and records instead of its md5"


class DownloadError(InputError, RuntimeError):
    """A file could not be fetched or did not verify; the message names it and why."""


class MismatchError(DownloadError):
    """A whole body that is not the file the index describes (size or md5)."""


class UnsafePathError(DownloadError):
    """An index entry that would write outside the target folder."""


@dataclass(frozen=True)
class Wanted:
    """One file to fetch: where it goes (relative to ``--to``), from where, and what it must be.

    Without a checksum the file is verified by reading it whole: as the released format
    (``check_content``), or, for a dump the site publishes no checksum of (``content="stream"``),
    as a compressed stream that must end with its trailer (``check_stream``).
    """

    path: str
    url: str
    md5: str | None = None
    size: int | None = None
    sha1: str | None = None
    content: str = "release"  # what reading it whole checks when no checksum is known: "release" or "stream"

    @property
    def checksum(self) -> str | None:
        """The checksum that vouches for the file, named: ``md5 ...`` or ``sha1 ...``; None without one."""
        return f"sha1 {self.sha1}" if self.sha1 else f"md5 {self.md5}" if self.md5 else None


@dataclass(frozen=True)
class Index:
    """A ``downloads.json.gz`` as used: its contexts, where it came from, its bytes, and how it was had."""

    contexts: dict
    source: str
    data: bytes
    cached: bool = False  # read from the cache (unchanged on the server, or the server unreachable)
    note: str | None = None  # what the user should know about this copy


@dataclass
class DownloadReport:
    fetched: list[str] = field(default_factory=list)  # verified by md5 (and size) against the index
    checked: list[str] = field(default_factory=list)  # no md5 known: read whole, gzip and records well-formed
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # failed because size or md5 differ from the index


def clirmatrix_home() -> Path:
    return Path(os.environ.get("CLIRMATRIX_HOME", "~/.clirmatrix")).expanduser()


def as_url(base: str) -> str:
    """A base URL with a trailing slash; a local folder becomes a ``file://`` URL."""
    if "://" not in base:
        base = Path(base).resolve().as_uri()
    return base if base.endswith("/") else base + "/"


def safe_relative(path: str, what: str) -> str:
    """``path`` if it stays inside the target folder, else UnsafePathError."""
    normal = posixpath.normpath(path.replace("\\", "/"))
    if posixpath.isabs(normal) or normal == ".." or normal.startswith("../") or "/../" in f"/{path}/" or ":" in normal.split("/")[0]:
        raise UnsafePathError(f"{what}: refusing {path!r}, which would write outside the target folder")
    return normal


def resolve_base(base_url: str | None, index: str | None) -> str:
    """Where files are fetched from: ``--base-url``, else the folder of ``--index``, else the official server."""
    if base_url:
        return as_url(base_url)
    if index:
        where = index if "://" in index else as_url(str(Path(index).resolve().parent))
        return where if where.endswith("/") else where.rsplit("/", 1)[0] + "/"
    return OFFICIAL_BASE_URL


# --- the index ---------------------------------------------------------------------------------


def load_index(index: str | None, base_url: str, timeout: float = 60.0) -> Index:
    """The ``downloads.json.gz`` to resolve files with; DownloadError (naming it, and how to go on) when there is none.

    ``index`` may be a local file or a URL; by default it is ``{base_url}downloads.json.gz``.
    Local and ``file://`` indexes are read as they are now; a remote one goes through the
    cache (``_fetch_cached``).
    """
    source = index or as_url(base_url) + layout.INDEX
    path = _local_path(source)
    if path is not None:
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise DownloadError(f"no index at {source} ({error.strerror or error}); {NO_INDEX_HINT}") from None
        return Index(_parse_index(data, source), source, data)
    return _fetch_cached(source, timeout)


def _local_path(source: str) -> str | None:
    """The file a local path or ``file://`` URL names; None for a remote URL."""
    if "://" not in source:
        return source
    return urllib.request.url2pathname(urlparse(source).path) if source.startswith("file://") else None


def _cache_paths(url: str) -> tuple[Path, Path]:
    name = hashlib.sha1(url.encode()).hexdigest()
    folder = clirmatrix_home() / "index"
    return folder / f"{name}.json.gz", folder / f"{name}.meta.json"


def _fetch_cached(url: str, timeout: float, revalidate: bool = True) -> Index:
    """A remote index, asked for with the cached copy's validators; 304 keeps the cache, 200 replaces it.

    An unreachable server leaves the cached copy in use, with a note saying so; with no
    cached copy, or a server that answers it has no index, it is an error.
    """
    cache, meta_path = _cache_paths(url)
    meta = _read_meta(meta_path) if cache.is_file() else None
    headers = {}
    if meta is not None and revalidate:
        if meta.get("etag"):
            headers["If-None-Match"] = meta["etag"]
        if meta.get("last_modified"):
            headers["If-Modified-Since"] = meta["last_modified"]
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
            data = response.read()
            validators = {"etag": response.headers.get("ETag"), "last_modified": response.headers.get("Last-Modified")}
    except urllib.error.HTTPError as error:
        if error.code == 304 and meta is not None:
            data = cache.read_bytes()
            return Index(_parse_index(data, str(cache)), url, data, cached=True)
        if meta is not None and error.code not in (404, 410):
            return _stale(url, cache, meta, f"HTTP {error.code}")
        raise DownloadError(f"no index at {url} (HTTP {error.code} {error.reason}); {NO_INDEX_HINT}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        reason = getattr(error, "reason", None) or f"{type(error).__name__}: {error}"
        if meta is not None:
            return _stale(url, cache, meta, str(reason))
        raise DownloadError(f"cannot fetch the index {url} ({reason}); {NO_INDEX_HINT}") from None
    parsed = _parse_index(data, url)
    note = None
    if meta is not None and data != cache.read_bytes():
        note = f"the index at {url} changed since it was cached on {meta.get('fetched', '?')}; using the new one"
    with atomic_write(cache) as handle:
        handle.write(data)
    with atomic_write(meta_path) as handle:
        handle.write(orjson.dumps({**validators, "fetched": email.utils.formatdate(usegmt=True), "url": url}))
    return Index(parsed, url, data, note=note)


def refetch_index(stale: Index, timeout: float = 60.0) -> Index | None:
    """The server's index fetched again without validators, when a file did not match a cached copy; None if unchanged."""
    if not stale.cached:  # only a remote index is ever read from the cache
        return None
    fresh = _fetch_cached(stale.source, timeout, revalidate=False)
    return fresh if fresh.data != stale.data else None


def _stale(url: str, cache: Path, meta: dict, reason: str) -> Index:
    data = cache.read_bytes()
    note = f"could not reach {url} ({reason}); using the copy of its index cached on {meta.get('fetched', '?')}"
    return Index(_parse_index(data, str(cache)), url, data, cached=True, note=note)


def _read_meta(path: Path) -> dict | None:
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None  # a cache from before validators were kept: fetched again, as if absent
    return value if isinstance(value, dict) else None


def _parse_index(data: bytes, where: str) -> dict:
    try:
        text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        parsed = orjson.loads(text)
    except (OSError, EOFError, orjson.JSONDecodeError) as error:
        kind = "an HTML page" if _looks_like_html(data) else f"not gzip'd JSON ({error})"
        raise DownloadError(f"the index {where} is {kind}; pass --index FILE or another --base-url") from None
    if not isinstance(parsed, dict):
        raise DownloadError(f"the index {where} is not a mapping of contexts")
    return {context: entries for context, entries in parsed.items() if not context.startswith("_") and isinstance(entries, dict)}


def save_index(index: Index, to_dir: str | Path) -> Path | None:
    """The index a download used, written into its folder (where ``validate`` finds it); None when it is that very file."""
    target = Path(to_dir) / layout.INDEX
    source = _local_path(index.source)
    if source is not None and target.exists() and os.path.samefile(source, target):
        return None
    with atomic_write(target) as handle:
        handle.write(index.data if index.data[:2] == b"\x1f\x8b" else gzip.compress(index.data, mtime=0))
    return target


# --- what to fetch ------------------------------------------------------------------------------


def indexed_langs(index: Index | None, dataset: str, side: str) -> list[str] | None:
    """The query (``side="src"``) or document (``"tgt"``) languages the index lists for a set; None without an index."""
    if index is None:
        return None
    keys = index.contexts.get(layout.CONTEXTS[dataset], {})
    if dataset in layout.DOC_SETS:  # "docs/{lang}": one language per file, on either side
        return sorted(key.split("/", 1)[1] for key in keys if "/" in key)
    found = set()
    for key in keys:  # "queries/{src}_{tgt}/{split}"
        released = layout.parse_path(_entry_path(keys[key]) or "")
        if released is not None:
            found.add(released.src if side == "src" else released.tgt)
    return sorted(found)


def _entry_path(entry: object) -> str | None:
    """The released path an index entry names (its ``cache_path``, else the end of its url)."""
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("cache_path"), str) and layout.parse_path(entry["cache_path"]):
        return entry["cache_path"]
    return layout.path_in_url(str(entry.get("url", "")))


def expand_langs(value: str | Sequence[str] | None, dataset: str, listed: Sequence[str] | None = None, flag: str = "--tgt") -> list[str]:
    """Language list of a flag, each checked: ``all`` means every language the index lists (``listed``), else every language of the set.

    A language the index does not list (or, without an index, that the set does not
    have) is refused before any request, with the nearest known codes.
    """
    every = list(listed) if listed is not None else list(MULTI8_LANGUAGES if dataset == "multi8" else BI139_LANGUAGES)
    if not every:
        raise InvalidInputError(f"the index lists no {dataset} files: that set is not part of this release")
    if value is None or value == "all" or (not isinstance(value, str) and list(value) == ["all"]):
        return every
    if listed is None:
        return check_langs(comma_list(value), every, flag, kind=f"{dataset} language")
    return check_langs(comma_list(value), every, flag, kind=f"{dataset} language in the index", kinds=f"{dataset} languages in the index")


def plan(dataset: str, src: Sequence[str], tgt: Sequence[str], splits: Sequence[str], index: Index | None, base_url: str,
         prefer_base: bool = False) -> tuple[list[Wanted], list[str]]:
    """(the files to fetch, the paths asked for that the index does not list) for these languages and splits.

    With an index, a file it does not list is not part of that release: it is returned as
    absent, never guessed. An entry's URL is used as it is unless the user named a base
    URL (``prefer_base``) or it is relative or ``file://`` (a build's own), which are read
    beside the index at ``base_url``.
    """
    if dataset not in layout.CONTEXTS:
        raise InvalidInputError(f"unknown set {dataset!r}; choose from {', '.join(layout.CONTEXTS)}")
    base = as_url(base_url)
    layout.refuse_incomplete(base)
    if dataset in layout.DOC_SETS:
        files = [(layout.docs_file(dataset, lang), layout.index_key(dataset, lang)) for lang in tgt]
    else:
        files = [
            (layout.query_file(dataset, s, t, split), layout.index_key(dataset, s, t, split))
            for s in src for t in tgt if s != t for split in splits
        ]
    wanted, absent = [], []
    for path, (context, key) in files:
        if index is None:
            wanted.append(Wanted(path, base + path))
            continue
        entry = index.contexts.get(context, {}).get(key)
        if not isinstance(entry, dict):
            absent.append(path)
            continue
        where = f"index entry {context}/{key}"
        target = safe_relative(entry["cache_path"], where) if entry.get("cache_path") else path
        url = str(entry.get("url") or path)
        if "://" not in url:
            url = base + safe_relative(url, where)
        elif prefer_base or url.startswith("file://"):
            url = base + path
        size = entry.get("size", entry.get("verified_size"))
        md5 = entry.get("expected_md5")
        wanted.append(Wanted(target, url, md5.lower() if isinstance(md5, str) else None, int(size) if size is not None else None))
    return wanted, absent


# --- fetching one file -------------------------------------------------------------------------


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml"))


def check_content(path: Path, released_path: str, stop: Stop | None = None, shown: str | None = None) -> int:
    """Read a released file whole as its format; returns its records, or DownloadError naming the line.

    What verifies a file when no md5 is known: the gzip stream must end with its trailer
    (CRC and length, so a cut or flipped body fails) and every line must be a record of
    the file's kind (a query JSON line, or a ``doc_id<TAB>text`` line). ``shown``: the
    file the error names (a download's destination, not the ``.part`` that is read).
    """
    released = layout.parse_path(released_path)
    if released is None:
        raise DownloadError(f"{released_path}: not a released file name, so its content cannot be checked")
    parse = parse_doc if released.dataset in layout.DOC_SETS else parse_query
    records = 0
    try:
        for number, line in iter_lines(path, gzipped=released_path.endswith(".gz")):
            parse(line, released_path, number)
            records += 1
            if stop is not None and records % 10_000 == 0:
                stop.check(released_path)
    except MalformedRecordError as error:
        where = f"{shown or error.path}:{error.line}" if error.line else shown or error.path
        raise DownloadError(f"{where}: {error.reason} (no md5 to check it against; the file is damaged or not what the server should send)") from None
    return records


def check_stream(path: Path, name: str, stop: Stop | None = None) -> int:
    """Read a gzip or bz2 file whole to its last trailer; returns its uncompressed bytes, or DownloadError naming it.

    What verifies a dump the site publishes no checksum of (Enterprise HTML, CirrusSearch):
    every member's CRC and length must match, and the stream must not stop short.
    """
    import bz2

    from isal import igzip

    opener = igzip.open if name.endswith(".gz") else bz2.open if name.endswith(".bz2") else None
    if opener is None:
        raise DownloadError(f"{name}: no checksum published and not a compressed stream, so it cannot be verified")
    total = 0
    try:
        with opener(path, "rb") as stream:
            while chunk := stream.read(CHUNK * 8):
                total += len(chunk)
                if stop is not None:
                    stop.check(name)
    except (OSError, EOFError, ValueError) as error:
        raise DownloadError(f"{name}: the compressed stream is damaged or cut short after {total:,} bytes ({error})") from None
    return total


def _checksum_of(path: Path, wanted: Wanted, stop: Stop | None = None) -> str:
    """The file's checksum in the kind ``wanted.checksum`` names (a stop is seen between chunks: files run to hundreds of GB)."""
    digest = hashlib.sha1() if wanted.sha1 else hashlib.md5()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK * 8):
            digest.update(chunk)
            if stop is not None:
                stop.check(wanted.path)
    return f"{'sha1' if wanted.sha1 else 'md5'} {digest.hexdigest()}"


def _read_whole(path: Path, wanted: Wanted, stop: Stop | None = None, shown: str | None = None) -> None:
    if wanted.content == "stream":
        check_stream(path, wanted.path, stop)
    else:
        check_content(path, wanted.path, stop, shown)


def verified(path: Path, wanted: Wanted, stop: Stop | None = None) -> bool:
    """Whether a file on disk is the wanted one: by size, then checksum; without one, by reading it whole."""
    if not path.is_file() or (wanted.size is not None and path.stat().st_size != wanted.size):
        return False
    if wanted.checksum is not None:
        return _checksum_of(path, wanted, stop) == wanted.checksum.lower()
    try:
        _read_whole(path, wanted, stop)
    except Stopped:
        raise
    except DownloadError:
        return False
    return True


def _check(part: Path, wanted: Wanted, stop: Stop | None = None, target: Path | None = None) -> None:
    """A whole body checked before it takes its name: not an HTML page, then size and checksum, or read whole (errors name ``target``)."""
    size = part.stat().st_size
    with open(part, "rb") as handle:
        head = handle.read(512)
    if _looks_like_html(head):
        raise DownloadError(f"{wanted.url} sent an HTML page ({size:,} bytes), not the file; the server is probably down")
    if wanted.size is not None and size != wanted.size:
        hint = ": probably an error page" if size < wanted.size // 10 else ""
        raise MismatchError(f"{wanted.url} sent {size:,} bytes, expected {wanted.size:,}{hint}")
    if wanted.checksum is not None and (got := _checksum_of(part, wanted, stop)) != wanted.checksum.lower():
        raise MismatchError(f"{wanted.url}: {got} does not match the published {wanted.checksum}")
    if wanted.checksum is None:
        _read_whole(part, wanted, stop, str(target or part))


class _Retry(Exception):
    """A failure worth another attempt (dropped connection, busy or failing server); ``after``: the server's Retry-After."""

    def __init__(self, reason: str, after: float | None = None) -> None:
        super().__init__(reason)
        self.after = after


MAX_RETRY_AFTER = 600.0  # seconds: a Retry-After beyond this is waited this long, then asked again


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    if value.strip().isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(when.timestamp() - time.time(), 0.0), MAX_RETRY_AFTER)


def kept_parts(to_dir: Path, paths: Sequence[str]) -> list[Path]:
    """The ``.part`` files of these files (paths relative to ``to_dir``) that are on disk."""
    return [part for path in paths if (part := part_path(to_dir / path)).is_file()]


def _attempt(wanted: Wanted, part: Path, progress: Callable[[int], None], timeout: float, stop: Stop) -> None:
    stop.check(wanted.url)
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(wanted.url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # our partial file is already whole (or wrong): start over
            part.unlink()
            raise _Retry(f"{wanted.url}: range not satisfiable") from None
        if error.code in RETRY_STATUS:
            raise _Retry(f"{wanted.url}: HTTP {error.code}", retry_after(error.headers.get("Retry-After"))) from None
        raise DownloadError(f"{wanted.url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = f"{wanted.url}: {getattr(error, 'reason', error)}"
        if wanted.url.startswith("file:"):  # a local file that is not there will not appear on retry
            raise DownloadError(reason) from None
        raise _Retry(reason) from None
    with response, stop.watching(response):
        status = getattr(response, "status", None) or 200
        resumed = offset and status == 206
        if resumed and not (response.headers.get("Content-Range") or "").startswith(f"bytes {offset}-"):
            part.unlink()  # a range other than the one asked for: start over rather than splice it in
            raise _Retry(f"{wanted.url}: answered a range other than bytes={offset}-")
        if offset and not resumed:
            progress(-offset)  # the server ignored Range: restart from zero
        try:
            # read1: whatever has arrived, up to CHUNK, so that bytes received before a stall
            # or a drop are on disk for the Range request that resumes (read(CHUNK) waits for all of it).
            # Every chunk written is the next bytes of the file: a stop between two leaves a part to resume.
            read = getattr(response, "read1", response.read)
            with _open_part(part, "ab" if resumed else "wb") as out:
                while not stop.is_set() and (chunk := read(CHUNK)):
                    out.write(chunk)
                    progress(len(chunk))
        except (http.client.IncompleteRead, ConnectionError, TimeoutError, OSError, ValueError) as error:
            stop.check(wanted.url)  # the read Stop hung up on
            raise _Retry(f"{wanted.url}: connection dropped ({error.__class__.__name__})") from None
        stop.check(wanted.url)
        expected = response.headers.get("Content-Length")
        if expected is not None and status in (200, 206):
            got = part.stat().st_size - (offset if resumed else 0)
            if got < int(expected):
                raise _Retry(f"{wanted.url}: body ended after {got:,} of {int(expected):,} bytes")


def part_path(target: Path) -> Path:
    """Where a file is written until verified: hidden, and named so that no reader takes it for the file."""
    return target.parent / f".{target.name}.part"


def fetch(wanted: Wanted, to_dir: Path, retries: int = 4, backoff: float = 1.0, timeout: float = 60.0,
          sleep: Callable[[float], object] | None = None, progress: Callable[[int], None] = lambda n: None,
          keep_partial: bool = False, skip_verified: bool = True, stop: Stop | None = None) -> str:
    """Fetch one file into ``to_dir``: ``"fetched"`` (checksum verified), ``"checked"`` (none: read whole) or ``"skipped"``.

    Waits between attempts double from ``backoff``, or are what the server's Retry-After
    asks when that is longer (``sleep``; by default a wait that ``stop`` cuts short).
    ``keep_partial`` keeps the bytes of a transfer that gave up for a later run to resume
    (a body that fails verification is always removed); a stopped one always keeps them,
    and ``Stopped`` is raised.
    """
    stop = stop or Stop()
    wait = sleep or stop.wait
    target = to_dir / safe_relative(wanted.path, "target")
    if skip_verified and verified(target, wanted, stop):
        return "skipped"
    part = part_path(target)  # its folder is made as the part is opened (_open_part)
    whole = part.exists() and wanted.size is not None and part.stat().st_size == wanted.size  # a run stopped while verifying it
    try:
        for attempt in range(0 if whole else retries + 1):
            try:
                _attempt(wanted, part, progress, timeout, stop)
                break
            except _Retry as reason:
                if attempt == retries:
                    raise _GaveUp(f"{reason} (gave up after {retries + 1} attempts)") from None
                wait(max(backoff * 2**attempt, reason.after or 0.0))
        _check(part, wanted, stop, target)
    except (DownloadError, Stopped) as error:
        if not (isinstance(error, Stopped) or keep_partial and isinstance(error, _GaveUp) and part.exists()):
            part.unlink(missing_ok=True)
            _prune_empty(target.parent, to_dir)
        raise
    os.replace(part, target)
    return "fetched" if wanted.checksum is not None else "checked"


class _GaveUp(DownloadError):
    """Every attempt failed in transfer; what arrived is whole so far and may be resumed."""


# Concurrent transfers into one folder never undo each other's work. A failed file's part is
# removed and then the folders it made are pruned while empty (no empty folder is left for a
# failed file); a sibling transfer may have just made one of them to open its own part in.
# Pruning and (folder, then part) opening hold one lock, so within a process a part is always
# opened in a folder that stays: once it is open, the folder is not empty and ``rmdir`` fails
# (the kernel checks, not us). Another command pruning the same folder between our mkdir and
# open makes the open (or pathlib's mkdir) fail: the folder is made again and the open retried.
_FOLDERS = threading.Lock()
_OPEN_TRIES = 20


def _open_part(part: Path, mode: str):
    """``part`` opened in ``mode`` in its folder, made if needed (again, if a prune removed it in between)."""
    with _FOLDERS:
        for tries in range(_OPEN_TRIES, 0, -1):
            try:
                part.parent.mkdir(parents=True, exist_ok=True)  # FileExistsError: there, then removed before pathlib looked again
                return open(part, mode)
            except (FileNotFoundError, FileExistsError):
                if tries == 1:  # pruned 20 times in a row: not a race any more
                    raise


def _prune_empty(folder: Path, root: Path) -> None:
    """Remove the folders a failed file made, up to (not including) ``root``, while they are empty (see ``_FOLDERS``)."""
    root, folder = root.resolve(), folder.resolve()
    with _FOLDERS:
        while folder != root and root in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent


def download(files: Sequence[Wanted], to_dir: str | Path, jobs: int = 4, progress: Callable[[int], None] = lambda n: None,
             stop: Stop | None = None, **options) -> DownloadReport:
    """Fetch every file, ``jobs`` at a time; failures are collected, not raised. Ctrl-C raises Interrupted (parts kept)."""
    report = DownloadReport()
    to = Path(to_dir)
    stop = stop or Stop()

    def one(wanted: Wanted) -> tuple[Wanted, str | DownloadError | Stopped]:
        try:
            return wanted, fetch(wanted, to, progress=progress, stop=stop, **options)
        except (DownloadError, Stopped) as error:
            return wanted, error

    def interrupted() -> Interrupted:
        return Interrupted(to, kept_parts(to, [wanted.path for wanted in files]))

    [outcomes] = run_stoppable(one, [list(files)], jobs, stop, interrupted)
    for wanted, outcome in outcomes:
        if isinstance(outcome, str):  # fetched, checked or skipped
            getattr(report, outcome).append(wanted.path)
            continue
        report.failed.append((wanted.path, str(outcome)))
        if isinstance(outcome, MismatchError):
            report.mismatched.append(wanted.path)
    return report


# --- a whole download, as the command runs it ---------------------------------------------------


@dataclass
class DownloadPlan:
    """What ``clirmatrix download`` will do: the files, the ones the index lacks, and where they come from."""

    dataset: str
    splits: list[str]
    src: list[str]
    tgt: list[str]
    files: list[Wanted]
    absent: list[str]  # asked for, not listed in the index: not part of that release
    index: Index | None
    base: str
    prefer_base: bool
    notes: list[str] = field(default_factory=list)


def prepare_download(dataset: str, src: str | Sequence[str], tgt: str | Sequence[str], splits: Sequence[str],
                     base_url: str | None = None, index: str | None = None, no_index: bool = False) -> DownloadPlan:
    """Load (or refuse to go without) the index, check every language against it, and list the files; no file request yet."""
    if no_index and index:
        raise InvalidInputError("--index and --no-index exclude each other")
    unknown = sorted(set(splits) - set(layout.SPLITS))
    if unknown:
        raise InvalidInputError(f"--split: unknown split(s) {', '.join(unknown)}; choose from {', '.join(layout.SPLITS)}")
    base = resolve_base(base_url, index)
    layout.refuse_incomplete(base)  # an unfinished build has no index yet: say what it is, not that the index is missing
    listing = None if no_index else load_index(index, base)
    notes = [listing.note] if listing is not None and listing.note else []
    if no_index:
        notes.append("--no-index: no md5 or size to check files against; each file is verified by reading it whole (gzip stream and every record)")
    sources = [] if dataset in layout.DOC_SETS else expand_langs(src, dataset, indexed_langs(listing, dataset, "src"), "--src")
    targets = expand_langs(tgt, dataset, indexed_langs(listing, dataset, "tgt"), "--tgt")
    files, absent = plan(dataset, sources, targets, list(splits), listing, base, prefer_base=bool(base_url))
    return DownloadPlan(dataset, list(splits), sources, targets, files, absent, listing, base, bool(base_url), notes)


def run_download(planned: DownloadPlan, to_dir: str | Path, jobs: int = 4, progress: Callable[[int], None] = lambda n: None, **options) -> DownloadReport:
    """Fetch the planned files; files that mismatch a cached index fetch the index again and, if it changed, are retried under it.

    The index used is then saved into ``to_dir`` (when anything is there), so that
    ``clirmatrix validate`` checks the download's md5s. Notes for the user are added to ``planned.notes``.
    """
    report = download(planned.files, to_dir, jobs=jobs, progress=progress, **options)
    if report.mismatched and planned.index is not None and planned.index.cached:
        fresh = refetch_index(planned.index)
        if fresh is not None:
            planned.notes.append(f"files did not match the cached index of {fresh.source}, which has changed on the server; retried under the new one")
            retry = set(report.mismatched)
            files, absent = plan(planned.dataset, planned.src, planned.tgt, planned.splits, fresh, planned.base, planned.prefer_base)
            planned.index, planned.files, planned.absent = fresh, files, absent
            again = download([w for w in files if w.path in retry], to_dir, jobs=jobs, progress=progress, **options)
            report.failed = [item for item in report.failed if item[0] not in retry] + again.failed
            report.mismatched = again.mismatched
            for name in ("fetched", "checked", "skipped"):
                getattr(report, name).extend(getattr(again, name))
    if planned.index is not None and (report.fetched or report.checked or report.skipped) and (saved := save_index(planned.index, to_dir)):
        planned.notes.append(f"saved the index as {saved}: clirmatrix validate {to_dir} checks every file's md5 against it")
    return report
