"""``clirmatrix download``: released CLIRMatrix files, verified, resumable, never half-written.

Files are resolved through ``downloads.json.gz`` (fetched once, cached under
``$CLIRMATRIX_HOME``, default ``~/.clirmatrix``) when it has an entry, else by
the release's URL pattern (``layout``). Every body is checked: an HTML page or a
body much smaller than expected is an error (the official server answered with a
199-byte error page for weeks), then size and md5. Downloads go to a hidden
``.part`` file that a retry resumes with an HTTP Range request when the server
allows, and restarts otherwise; the file gets its name only once verified. A
file already present and verified is skipped. The base URL may be a mirror, a
local folder or a ``file://`` URL (a build made by ``clirmatrix build``).
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import posixpath
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import orjson

from clirmatrix.pipeline import layout
from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.languages import BI139_LANGUAGES, MULTI8_LANGUAGES
from clirmatrix.pipeline.localio import atomic_write, md5_of

OFFICIAL_BASE_URL = "http://www.cs.jhu.edu/~shuosun/clirmatrix/data/"
CHUNK = 1 << 20
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class DownloadError(InputError, RuntimeError):
    """A file could not be fetched or did not verify; the message names it and why."""


class UnsafePathError(DownloadError):
    """An index entry that would write outside the target folder."""


@dataclass(frozen=True)
class Wanted:
    """One file to fetch: where it goes (relative to ``--to``), from where, and what it must be."""

    path: str
    url: str
    md5: str | None = None
    size: int | None = None


@dataclass
class DownloadReport:
    fetched: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


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


# --- the index ---------------------------------------------------------------------------------


def load_index(index: str | None, base_url: str, fetcher: Callable[[str], bytes] | None = None) -> dict | None:
    """The ``downloads.json.gz`` mapping, or None when there is none (then URL patterns are used).

    ``index`` may be a local file or a URL; by default it is ``{base_url}downloads.json.gz``.
    A fetched index is cached under ``$CLIRMATRIX_HOME/index/`` by URL. When the default
    index cannot be fetched the caller falls back to URL patterns; a named one must exist.
    """
    source = index or as_url(base_url) + layout.INDEX
    if "://" not in source:
        return _parse_index(Path(source).read_bytes(), source)
    cache = clirmatrix_home() / "index" / (hashlib.sha1(source.encode()).hexdigest() + ".json.gz")
    if cache.exists():
        return _parse_index(cache.read_bytes(), str(cache))
    try:
        data = (fetcher or _get)(source)
    except DownloadError:
        if index:  # asked for by name: its absence is an error, not a reason to guess
            raise
        return None
    parsed = _parse_index(data, source)
    with atomic_write(cache) as handle:
        handle.write(data)
    return parsed


def _parse_index(data: bytes, where: str) -> dict:
    try:
        text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        parsed = orjson.loads(text)
    except (OSError, EOFError, orjson.JSONDecodeError) as error:
        kind = "an HTML page" if _looks_like_html(data) else f"not gzip'd JSON ({error})"
        raise DownloadError(f"the index {where} is {kind}; pass --index FILE or another --base-url") from None
    if not isinstance(parsed, dict):
        raise DownloadError(f"the index {where} is not a mapping of contexts")
    return parsed


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as error:
        raise DownloadError(f"{url}: {error}") from None


# --- what to fetch ------------------------------------------------------------------------------


def indexed_langs(index: dict | None, dataset: str, side: str) -> list[str] | None:
    """The query (``side="src"``) or document (``"tgt"``) languages the index lists for a set; None without an index."""
    if index is None:
        return None
    keys = index.get(layout.CONTEXTS[dataset], {})
    if dataset in layout.DOC_SETS:  # "docs/{lang}": one language per file, on either side
        return sorted(key.split("/", 1)[1] for key in keys)
    found = set()
    for key in keys:  # "queries/{src}_{tgt}/{split}"
        path = _entry_path(keys[key]) or ""
        released = layout.parse_path(path)
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


def expand_langs(value: str | Sequence[str] | None, dataset: str, listed: Sequence[str] | None = None) -> list[str]:
    """Language list of a flag; ``all`` means every language the index lists (``listed``), else every language of the set."""
    every = list(listed) if listed is not None else list(MULTI8_LANGUAGES if dataset == "multi8" else BI139_LANGUAGES)
    if value is None or value == "all" or (not isinstance(value, str) and list(value) == ["all"]):
        return every
    return comma_list(value)


def plan(dataset: str, src: Sequence[str], tgt: Sequence[str], splits: Sequence[str], index: dict | None, base_url: str) -> list[Wanted]:
    """The files of a set for these languages and splits, resolved through the index when it has them."""
    if dataset not in layout.CONTEXTS:
        raise DownloadError(f"unknown set {dataset!r}; choose from {', '.join(layout.CONTEXTS)}")
    base = as_url(base_url)
    layout.refuse_incomplete(base)
    if dataset in layout.DOC_SETS:
        files = [(layout.docs_file(dataset, lang), layout.index_key(dataset, lang)) for lang in tgt]
    else:
        files = [
            (layout.query_file(dataset, s, t, split), layout.index_key(dataset, s, t, split))
            for s in src for t in tgt if s != t for split in splits
        ]
    wanted = []
    for path, (context, key) in files:
        entry = (index or {}).get(context, {}).get(key)
        if entry is None:
            wanted.append(Wanted(path, base + path))
            continue
        where = f"index entry {context}/{key}"
        target = safe_relative(entry["cache_path"], where) if entry.get("cache_path") else path
        url = entry.get("url") or path
        if "://" not in url:
            url = base + safe_relative(url, where)
        elif url.startswith("file://") and not os.path.exists(urllib.request.url2pathname(urlparse(url).path)):
            url = base + path  # a build's own file:// URLs, after the build was moved: found beside its index
        size = entry.get("size", entry.get("verified_size"))
        wanted.append(Wanted(target, url, entry.get("expected_md5"), int(size) if size is not None else None))
    return wanted


# --- fetching one file -------------------------------------------------------------------------


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml"))


def _md5_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return md5_of(handle, CHUNK)


def verified(path: Path, wanted: Wanted) -> bool:
    """Whether a file on disk is the wanted one (by size, then md5, when known)."""
    if not path.is_file() or (wanted.size is not None and path.stat().st_size != wanted.size):
        return False
    return wanted.md5 is None or _md5_of(path) == wanted.md5


def _check(part: Path, wanted: Wanted) -> None:
    size = part.stat().st_size
    with open(part, "rb") as handle:
        head = handle.read(512)
    if _looks_like_html(head):
        raise DownloadError(f"{wanted.url} sent an HTML page ({size:,} bytes), not the file; the server is probably down")
    if wanted.size is not None and size != wanted.size:
        hint = ": probably an error page" if size < wanted.size // 10 else ""
        raise DownloadError(f"{wanted.url} sent {size:,} bytes, expected {wanted.size:,}{hint}")
    if wanted.md5 is not None and (got := _md5_of(part)) != wanted.md5:
        raise DownloadError(f"{wanted.url}: md5 {got} does not match the index's {wanted.md5}")


class _Retry(Exception):
    """A failure worth another attempt (dropped connection, busy or failing server)."""


def _attempt(wanted: Wanted, part: Path, progress: Callable[[int], None], timeout: float) -> None:
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(wanted.url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # our partial file is already whole (or wrong): start over
            part.unlink()
            raise _Retry(f"{wanted.url}: range not satisfiable") from None
        if error.code in RETRY_STATUS:
            raise _Retry(f"{wanted.url}: HTTP {error.code}") from None
        raise DownloadError(f"{wanted.url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = f"{wanted.url}: {getattr(error, 'reason', error)}"
        if wanted.url.startswith("file:"):  # a local file that is not there will not appear on retry
            raise DownloadError(reason) from None
        raise _Retry(reason) from None
    with response:
        status = getattr(response, "status", None) or 200
        resumed = offset and status == 206
        if offset and not resumed:
            progress(-offset)  # the server ignored Range: restart from zero
        try:
            with open(part, "ab" if resumed else "wb") as out:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    progress(len(chunk))
        except (http.client.IncompleteRead, ConnectionError, TimeoutError, OSError) as error:
            raise _Retry(f"{wanted.url}: connection dropped ({error.__class__.__name__})") from None
        expected = response.headers.get("Content-Length")
        if expected is not None and status in (200, 206):
            got = part.stat().st_size - (offset if resumed else 0)
            if got < int(expected):
                raise _Retry(f"{wanted.url}: body ended after {got:,} of {int(expected):,} bytes")


def fetch(wanted: Wanted, to_dir: Path, retries: int = 4, backoff: float = 1.0, timeout: float = 60.0,
          sleep: Callable[[float], None] = time.sleep, progress: Callable[[int], None] = lambda n: None) -> str:
    """Fetch one file into ``to_dir``; returns ``"fetched"`` or ``"skipped"`` (already verified)."""
    target = to_dir / safe_relative(wanted.path, "target")
    if verified(target, wanted):
        return "skipped"
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.parent / f".{target.name}.part"
    for attempt in range(retries + 1):
        try:
            _attempt(wanted, part, progress, timeout)
            break
        except _Retry as reason:
            if attempt == retries:
                raise DownloadError(f"{reason} (gave up after {retries + 1} attempts)") from None
            sleep(backoff * 2**attempt)
    try:
        _check(part, wanted)
    except DownloadError:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, target)
    return "fetched"


def download(files: Sequence[Wanted], to_dir: str | Path, jobs: int = 4, progress: Callable[[int], None] = lambda n: None, **options) -> DownloadReport:
    """Fetch every file, ``jobs`` at a time; failures are collected, not raised."""
    from concurrent.futures import ThreadPoolExecutor

    report = DownloadReport()
    to = Path(to_dir)

    def one(wanted: Wanted) -> tuple[Wanted, str]:
        try:
            return wanted, fetch(wanted, to, progress=progress, **options)
        except DownloadError as error:
            return wanted, f"failed: {error}"

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for wanted, outcome in pool.map(one, files):
            if outcome == "fetched":
                report.fetched.append(wanted.path)
            elif outcome == "skipped":
                report.skipped.append(wanted.path)
            else:
                report.failed.append((wanted.path, outcome.removeprefix("failed: ")))
    return report
