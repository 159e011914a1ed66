"""``clirmatrix compose``: a docker compose file of one Elasticsearch node per language."""

from __future__ import annotations

import click

from clirmatrix.cli.common import console


@click.command()
@click.option("--langs", default=None, help="Comma-separated languages [default: the 8 MULTI-8 languages].")
@click.option("--heap", default="1g", show_default=True, help="Java heap of each node (-Xms/-Xmx).")
@click.option("--base-port", type=click.IntRange(1, 65_000), default=9200, show_default=True, help="Host port of the first language; the next ones count up.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="Write here instead of standard output.")
def compose(langs: str | None, heap: str, base_port: int, output: str | None) -> None:
    """Write a docker compose file: one single-node Elasticsearch per language."""
    from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES, WIKIPEDIA_LANGUAGES, check_langs
    from clirmatrix.pipeline.tools.compose import compose_yaml

    text = compose_yaml(tuple(check_langs(langs or "", WIKIPEDIA_LANGUAGES, "--langs") or MULTI8_LANGUAGES), heap=heap, base_port=base_port)
    if output is None:
        click.echo(text, nl=False)
        return
    from clirmatrix.pipeline.io.fileio import atomic_create

    with atomic_create(output) as handle:
        handle.write(text.encode())
    console.print(f"[green]wrote[/] {output}")
