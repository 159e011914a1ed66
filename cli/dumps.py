"""``clirmatrix dumps list`` and ``dumps fetch``: find today's dumps on the Wikimedia site (or a mirror) and fetch them verified."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import click
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from clirmatrix.cli.common import console
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.method.input_kinds import LINKS, SOURCES
from clirmatrix.pipeline.tools.dumps_fetch import DEFAULT_CONNECTIONS
from clirmatrix.pipeline.tools.dumps_site import DEFAULT_MIRROR, DumpListing, OfferedFile, nothing_to_fetch


def _listing_options(command):
    for option in reversed([
        click.option("--langs", default=None, help="Comma-separated Wikipedia languages [default: the 139 of BI-139]."),
        click.option("--date", default="latest", show_default=True, help="latest, or YYYYMMDD: the newest finished runs on or before it."),
        click.option("--mirror", default=DEFAULT_MIRROR, show_default=True, help="The dumps site, a mirror with its layout, a folder or a file:// URL."),
        click.option("--source", type=click.Choice(SOURCES), default="auto", show_default=True, help="Document dump to choose per language (auto: the newest, as build chooses)."),
        click.option("--links", type=click.Choice(LINKS), default="auto", show_default=True, help="Link source to choose (auto: wb_items_per_site, else the Wikidata JSON dump, else page_props)."),
    ]):
        command = option(command)
    return command


class NotAMirrorError(InvalidInputError):
    """``--mirror`` names a local folder that is missing, or is not laid out as the dumps site is."""


def check_local_mirror(mirror: str) -> None:
    """Refuse a ``--mirror`` folder (a path or ``file://`` URL) that is not there or holds neither ``other/`` nor a ``{wiki}/``
    folder, the dumps site's layout: one line, where listing it would give an empty table and notes of 404s."""
    if "://" in mirror and not mirror.startswith("file://"):
        return  # a server: its pages say what it is
    folder = Path(unquote(urlparse(mirror).path) if mirror.startswith("file://") else mirror)
    if not folder.is_dir():
        raise NotAMirrorError(f"--mirror {mirror}: {'no such folder' if not folder.exists() else 'a file, not a folder'}")
    entries = list(folder.iterdir())
    if any(entry.is_dir() and (entry.name == "other" or entry.name.endswith("wiki")) for entry in entries):
        return
    from clirmatrix.pipeline.method.dumps import classify

    dumps = "; it holds dumps themselves, which build --dumps and plan --dumps read" if any(classify(entry.name) for entry in entries) else ""
    raise NotAMirrorError(
        f"--mirror {mirror} is not a dumps mirror: it holds no other/ and no {{wiki}}/ folder (the site's layout: enwiki/20261101/..., other/enterprise_html/runs/...){dumps}"
    )


def _make_listing(langs: str | None, date: str, mirror: str, source: str, links: str) -> DumpListing:
    from clirmatrix.pipeline.method.languages import BI139_LANGUAGES, WIKIPEDIA_LANGUAGES, check_langs
    from clirmatrix.pipeline.settings import comma_list
    from clirmatrix.pipeline.tools.dumps_site import list_dumps

    chosen = check_langs(comma_list(langs), sorted(WIKIPEDIA_LANGUAGES), "--langs", kind="Wikipedia language") if langs else list(BI139_LANGUAGES)
    check_local_mirror(mirror)
    with console.status("reading the dumps site") as status:
        return list_dumps(chosen, date, mirror, source, links, on_step=lambda what: status.update(f"reading the dumps site: {what}"))


def _size(value: int | None) -> str:
    return "?" if value is None else f"{value / 1e9:,.2f} GB" if value >= 1e8 else f"{value / 1e6:,.1f} MB"


def _checksum(item: OfferedFile) -> str:
    return "md5+sha1" if item.md5 and item.sha1 else "md5" if item.md5 else "sha1" if item.sha1 else "none (read whole)"


def print_listing(listing: DumpListing) -> None:
    """Per language and kind: run, files, size, checksum, and whether fetch takes it; then the total of what it takes."""
    chosen = {item.url for item in listing.chosen}
    table = Table(title=f"finished dumps at {listing.mirror}" + ("" if listing.date == "latest" else f" on or before {listing.date}"), title_justify="left")
    for name, justify in (("language", "left"), ("kind", "left"), ("run", "left"), ("files", "right"), ("size", "right"), ("checksum", "left"), ("fetch", "left")):
        table.add_column(name, justify=justify)
    groups: dict[tuple[str, str, str], list[OfferedFile]] = {}
    for item in listing.offered:
        groups.setdefault((item.lang or "wikidata", item.kind, item.date), []).append(item)
    for (lang, kind, run), items in groups.items():
        sizes = [item.size for item in items]
        size = None if None in sizes else sum(sizes)
        table.add_row(lang, kind, run, f"{len(items):,}", _size(size), _checksum(items[0]), "yes" if items[0].url in chosen else "")
    console.print(table)
    for note in listing.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    known = sum(item.size or 0 for item in listing.chosen)
    unsized = sum(1 for item in listing.chosen if item.size is None)
    console.print(f"fetch takes {len(listing.chosen):,} files, {_size(known)}" + (f" (+{unsized:,} of unknown size)" if unsized else ""), highlight=False)


@click.group()
def dumps() -> None:
    """Find, fetch and verify the Wikimedia dumps a build reads."""


@dumps.command("list")
@_listing_options
@click.option("--json", "json_file", default=None, type=click.Path(dir_okay=False), help="Also write the listing here (for dumps fetch --listing and plan --listing).")
def list_command(langs: str | None, date: str, mirror: str, source: str, links: str, json_file: str | None) -> None:
    """Per language the newest finished dump of each kind the build reads, with sizes and checksums from the site."""
    listing = _make_listing(langs, date, mirror, source, links)
    print_listing(listing)
    if json_file:
        from clirmatrix.pipeline.io.localio import atomic_write

        with atomic_write(json_file) as handle:
            handle.write(listing.to_json())
        console.print(f"[green]wrote[/] {json_file}")
    _refuse_nothing(listing)


def _refuse_nothing(listing: DumpListing) -> None:
    """Exit 1 with one line when fetch would take no document dump: never a listing that quietly takes nothing."""
    if reason := nothing_to_fetch(listing):
        console.print(f"[red]{escape(reason)}[/]", highlight=False, soft_wrap=True)
        click.get_current_context().exit(1)


class _Bars:
    """rich bars: one for everything (bytes, rate, ETA), one per file in flight."""

    def __init__(self, progress: Progress, total: int | None) -> None:
        self.progress, self.lock = progress, threading.Lock()
        self.all = progress.add_task("all files", total=total)
        self.tasks: dict[str, TaskID] = {}

    def started(self, item: OfferedFile, resumed_at: int) -> None:
        with self.lock:
            self.tasks[item.name] = self.progress.add_task(item.name, total=item.size, completed=resumed_at)
            self.progress.advance(self.all, resumed_at)

    def advanced(self, item: OfferedFile, count: int) -> None:
        with self.lock:
            self.progress.advance(self.tasks[item.name], count)
            self.progress.advance(self.all, count)

    def finished(self, item: OfferedFile, outcome: str) -> None:
        with self.lock:
            task = self.tasks.pop(item.name, None)
            if task is not None:
                self.progress.remove_task(task)
            if outcome == "skipped":
                self.progress.advance(self.all, item.size or 0)


@dumps.command("fetch")
@_listing_options
@click.option("--to", "to_dir", required=True, type=click.Path(file_okay=False), help="Folder to fetch into: what build --dumps reads.")
@click.option("--listing", "listing_file", default=None, type=click.Path(exists=True, dir_okay=False), help="Fetch what a saved `dumps list --json` chose, instead of listing again.")
@click.option("--connections", type=click.IntRange(min=1), default=DEFAULT_CONNECTIONS, show_default=True,
              help="Most connections to one host (Wikimedia caps its site at 2 per IP; mirrors do not).")
@click.option("--retries", type=click.IntRange(min=0), default=6, show_default=True, help="Attempts after the first for each file (waits double, or what Retry-After asks).")
@click.option("--dry-run", is_flag=True, help="Print what would be fetched and the total size; fetch nothing.")
def fetch_command(langs: str | None, date: str, mirror: str, source: str, links: str, to_dir: str, listing_file: str | None, connections: int,
                  retries: int, dry_run: bool) -> None:
    """Fetch the chosen dumps into the names build --dumps reads, verified by size and checksum; a rerun skips verified files.

    Ctrl-C stops the transfers within about a second and keeps their parts: the
    KeyboardInterrupt (download.Interrupted) carries what was kept, which the entry
    point prints in one line before it exits with 130, as for any command.
    """
    from clirmatrix.pipeline.tools.dumps_fetch import fetch_dumps

    listing = DumpListing.read(listing_file) if listing_file else _make_listing(langs, date, mirror, source, links)
    if dry_run:
        print_listing(listing)
        for item in listing.chosen:
            click.echo(f"{item.name}\t{item.size if item.size is not None else '?'}\t{item.url}")
        _refuse_nothing(listing)
        return
    for note in listing.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    _refuse_nothing(listing)
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    known = sum(item.size or 0 for item in listing.chosen)
    with Progress(*columns, console=console) as progress:
        report = fetch_dumps(listing.chosen, to_dir, connections=connections, watch=_Bars(progress, known or None), retries=retries)
    table = Table(title=f"dumps fetch into {to_dir}", title_justify="left")
    table.add_column("outcome")
    table.add_column("files", justify="right")
    for name, items in (("fetched (size and checksum verified)", report.fetched), ("fetched (no checksum published: read whole)", report.checked),
                        ("skipped (already verified)", report.skipped), ("failed", report.failed)):
        table.add_row(name, f"{len(items):,}")
    console.print(table)
    for name, reason in report.failed:
        console.print(f"[red]failed[/] {name}: {reason}", highlight=False, soft_wrap=True)
    if report.failed:
        console.print("[red]nothing unverified is under a final name; run the same command again to resume[/]")
        click.get_current_context().exit(1)
