"""``clirmatrix dumps fetch``: the files a dumps listing chose, verified, resumable, never under their name unverified.

Each file goes through ``download.fetch``: into a hidden ``.NAME.part`` (no reader of
dumps takes it for a dump), resumed with HTTP Range after a dropped connection (and
restarted when the server ignores Range), retried with doubling waits or what the
server's ``Retry-After`` asks, refused when the body is an HTML page, then checked
against the size and checksum the site published (a CirrusSearch dump, for which none
is published, is read whole to its gzip trailer), and only then renamed. A transfer that
gave up keeps its part for the next run to resume; a body that fails verification is
removed. A verified file gets a stamp (``.NAME.verified``: size, mtime, inode, checksum), so a
rerun skips it without reading hundreds of GB again; a file changed since is verified anew.

Wikimedia caps dumps.wikimedia.org at 2 connections per IP: files are fetched at most
``connections`` at a time per host (mirrors have no cap: raise it there).

Ctrl-C stops every transfer within a chunk (a read waiting on a slow mirror is woken),
keeps the parts, and raises ``stopping.Interrupted``, which names how many were kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

import orjson

from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.tools.download import DownloadError, Wanted, fetch, kept_parts, part_path, verified
from clirmatrix.pipeline.tools.dumps_site import OfferedFile
from clirmatrix.pipeline.tools.stopping import Interrupted, Stop, Stopped, run_stoppable

DEFAULT_CONNECTIONS = 2  # per host: what Wikimedia asks of dump downloaders (mirrors have no cap)


@dataclass
class FetchReport:
    """What a fetch did, per file name: verified by checksum, read whole (no checksum published), skipped, failed."""

    fetched: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


class FetchWatch(Protocol):
    """Where progress goes (the command's rich bars); called from the fetching threads."""

    def started(self, item: OfferedFile, resumed_at: int) -> None: ...
    def advanced(self, item: OfferedFile, count: int) -> None: ...
    def finished(self, item: OfferedFile, outcome: str) -> None: ...


class _Quiet:
    def started(self, item: OfferedFile, resumed_at: int) -> None: ...
    def advanced(self, item: OfferedFile, count: int) -> None: ...
    def finished(self, item: OfferedFile, outcome: str) -> None: ...


def wanted(item: OfferedFile) -> Wanted:
    """What ``download.fetch`` must get for a listed file: its size and checksum, or, with none published, a whole stream."""
    return Wanted(item.name, item.url, item.md5.lower() if item.md5 else None, item.size, item.sha1.lower() if item.sha1 else None, content="stream")


def stamp_path(target: Path) -> Path:
    return target.parent / f".{target.name}.verified"


def _stamp(target: Path, want: Wanted) -> dict:
    stat = target.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino, "checksum": want.checksum, "url": want.url if want.checksum is None else None}


def is_verified(target: Path, want: Wanted, stop: Stop | None = None) -> bool:
    """Whether a file was verified as this one and has not changed since (its stamp), else verified now (and stamped)."""
    if not target.is_file():
        return False
    try:
        if orjson.loads(stamp_path(target).read_bytes()) == _stamp(target, want):
            return True
    except (OSError, orjson.JSONDecodeError):
        pass
    if verified(target, want, stop):  # there but not stamped (a copy made by hand, an older run): read it once
        write_stamp(target, want)
        return True
    return False


def write_stamp(target: Path, want: Wanted) -> None:
    with atomic_write(stamp_path(target)) as handle:
        handle.write(orjson.dumps(_stamp(target, want)))


def fetch_dumps(files: Sequence[OfferedFile], to_dir: str | Path, connections: int = DEFAULT_CONNECTIONS, watch: FetchWatch | None = None,
                stop: Stop | None = None, **options) -> FetchReport:
    """Fetch every file into ``to_dir`` (flat, under its site name), ``connections`` at a time per host; failures are collected.

    Ctrl-C (or ``stop``) raises ``Interrupted`` once the transfers in flight have ended, their parts kept.
    """
    to = Path(to_dir)
    stop = stop or Stop()
    to.mkdir(parents=True, exist_ok=True)
    watch = watch or _Quiet()
    report = FetchReport()
    by_host: dict[str, list[OfferedFile]] = defaultdict(list)
    for item in files:
        by_host[urlparse(item.url).netloc].append(item)

    def one(item: OfferedFile) -> tuple[OfferedFile, str]:
        want = wanted(item)
        target = to / item.name
        try:
            if is_verified(target, want, stop):
                watch.finished(item, "skipped")
                return item, "skipped"
        except (DownloadError, Stopped) as error:  # stopped while reading it
            return item, f"failed: {error}"
        part = part_path(target)
        watch.started(item, part.stat().st_size if part.exists() else 0)
        try:
            outcome = fetch(want, to, progress=lambda count: watch.advanced(item, count), keep_partial=True, skip_verified=False, stop=stop, **options)
        except (DownloadError, Stopped) as error:
            watch.finished(item, "failed")
            return item, f"failed: {error}"
        write_stamp(target, want)
        watch.finished(item, outcome)
        return item, outcome

    def interrupted() -> Interrupted:
        return Interrupted(to, kept_parts(to, [item.name for item in files]))

    for results in run_stoppable(one, list(by_host.values()), connections, stop, interrupted):
        for item, outcome in results:
            if outcome.startswith("failed: "):
                report.failed.append((item.name, outcome.removeprefix("failed: ")))
            else:
                getattr(report, outcome).append(item.name)
    return report
