"""``clirmatrix download``: released files fetched and verified (size and md5), resumable."""

from __future__ import annotations

import os

import click
from rich.table import Table

from clirmatrix.cli.common import comma_list_or_none, console
from clirmatrix.pipeline.tools.download import OFFICIAL_BASE_URL


@click.command()
@click.argument("dataset", metavar="SET", type=click.Choice(["bi139-base", "bi139-full", "multi8", "docs", "docs-full"]))
@click.option("--src", default="all", show_default=True, help="Query languages (comma-separated, or all).")
@click.option("--tgt", default="all", show_default=True, help="Document languages (comma-separated, or all); for docs sets, the languages.")
@click.option("--split", "splits", default="train,dev,test1,test2", show_default=True, help="Splits to fetch.")
@click.option("--to", "to_dir", default="clirmatrix-data", show_default=True, type=click.Path(file_okay=False), help="Folder to write into (the release layout).")
@click.option("--base-url", default=None, help=f"Server, mirror, folder or file:// URL (e.g. a build); wins over URLs an index names [default: the folder of --index, else {OFFICIAL_BASE_URL}].")
@click.option("--index", default=None, help="downloads.json.gz to resolve files with (URL or file) [default: BASE_URL/downloads.json.gz].")
@click.option("--no-index", is_flag=True, help="Go without an index: fetch by the release's file names and verify each file by reading it whole (no md5 to check).")
@click.option("--jobs", type=click.IntRange(min=1), default=4, show_default=True, help="Parallel downloads.")
@click.option("--dry-run", is_flag=True, help="List the files and their total size; fetch nothing.")
def download(dataset: str, src: str, tgt: str, splits: str, to_dir: str, base_url: str | None, index: str | None, no_index: bool, jobs: int, dry_run: bool) -> None:
    """Fetch released CLIRMatrix files, verified by size and md5; a rerun skips what is done."""
    import threading

    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from clirmatrix.pipeline.io.localio import check_folder_path
    from clirmatrix.pipeline.tools.download import prepare_download, run_download

    planned = prepare_download(dataset, src, tgt, comma_list_or_none(splits) or [], base_url, index, no_index)
    for note in planned.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    planned.notes.clear()
    files = planned.files
    known = sum(f.size or 0 for f in files)
    unsized = sum(1 for f in files if f.size is None)
    if dry_run:
        for wanted in files:
            click.echo(f"{wanted.path}\t{wanted.size if wanted.size is not None else '?'}\t{wanted.url}")
        console.print(f"{len(files):,} files, {known / 1e6:,.1f} MB" + (f" (+{unsized:,} of unknown size)" if unsized else ""))
        _print_absent(planned.absent)
        return
    check_folder_path(to_dir, "--to")
    os.makedirs(to_dir, exist_ok=True)  # a --to the user may not write is one line (main), before the progress bar starts
    lock = threading.Lock()
    columns = ("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"{len(files):,} files", total=known or None)

        def advance(count: int) -> None:
            with lock:
                bar.advance(task, count)

        report = run_download(planned, to_dir, jobs=jobs, progress=advance)
    table = Table(title=f"download into {to_dir}", title_justify="left")
    table.add_column("outcome")
    table.add_column("files", justify="right")
    rows = (("fetched (size and md5 verified)", report.fetched), ("fetched (no md5: read whole, well-formed)", report.checked),
            ("skipped (already verified)", report.skipped), ("failed", report.failed), ("not in the index", planned.absent))
    for name, items in rows:
        if items or name in ("fetched (size and md5 verified)", "skipped (already verified)", "failed"):
            table.add_row(name, f"{len(items):,}")
    console.print(table)
    for note in planned.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    for path, reason in report.failed[:20]:
        console.print(f"[red]failed[/] {path}: {reason}", highlight=False, soft_wrap=True)
    if len(report.failed) > 20:
        console.print(f"[red]... and {len(report.failed) - 20:,} more failed[/]")
    _print_absent(planned.absent)
    if report.failed or planned.absent:
        click.get_current_context().exit(1)


def _print_absent(absent: list[str]) -> None:
    """Files asked for that the index does not list: not part of that release, so never guessed at."""
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5:,} more" if len(absent) > 5 else "")
        console.print(f"[red]not in the index[/] ({len(absent):,} files, not part of this release): {shown}", highlight=False, soft_wrap=True)
