"""``clirmatrix report``: one self-contained HTML page about a build or a download."""

from __future__ import annotations

import click

from clirmatrix.cli.common import console


@click.command()
@click.argument("root", type=click.Path(exists=True, file_okay=False))
def report(root: str) -> None:
    """Write ROOT/report.html: one self-contained page about a build or a download."""
    from clirmatrix.pipeline.tools.report import write_report

    with console.status(f"reading {root}"):
        path = write_report(root)
    console.print(f"[green]wrote[/] {path}")
