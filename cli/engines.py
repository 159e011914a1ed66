"""``clirmatrix engines`` and ``engines compare``: the embedded engine against Elasticsearch."""

from __future__ import annotations

import click
from rich.table import Table

from clirmatrix.cli.common import console


@click.group()
def engines() -> None:
    """Check the retrieval engines against each other."""


@engines.command("compare")
@click.option("--lang", required=True, help="Language code: the analyzer both engines use.")
@click.option("--corpus", required=True, type=click.Path(exists=True, dir_okay=False), help='JSONL, one {"id", "title", "text"} per line.')
@click.option("--queries", required=True, type=click.Path(exists=True, dir_okay=False), help="TSV: qid<TAB>text per line.")
@click.option("--es-url", default=None, help="Elasticsearch to compare with [default: $CLIRMATRIX_ES_URL].")
@click.option("--k", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--combine", type=click.Choice(["best_fields", "most_fields"]), default="best_fields", show_default=True)
def engines_compare(lang: str, corpus: str, queries: str, es_url: str | None, k: int, combine: str) -> None:
    """Run the embedded engine and Elasticsearch on the same documents and queries; report agreement."""
    import os

    from clirmatrix.pipeline.engines.base import Bm25Settings
    from clirmatrix.pipeline.engines.compare import run_compare

    url = es_url or os.environ.get("CLIRMATRIX_ES_URL")
    if not url:
        raise click.UsageError("give --es-url or set CLIRMATRIX_ES_URL")
    with console.status("indexing and searching in both engines"):
        report = run_compare(corpus, queries, lang, url, k, Bm25Settings(combine=combine))
    table = Table(title=f"embedded vs Elasticsearch ({lang})", title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in report.items():
        table.add_row(key, f"{value:.6g}" if isinstance(value, float) else f"{value:,}")
    console.print(table)
