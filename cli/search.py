"""``clirmatrix search``: the embedded BM25 engine over a corpus and queries, a TREC run file out."""

from __future__ import annotations

import click

from clirmatrix.cli.common import console
from clirmatrix.pipeline.engines.base import Bm25Settings


@click.command()
@click.option("--corpus", required=True, type=click.Path(exists=True, dir_okay=False), help='JSONL, one {"id", "title", "text"} per line (.gz allowed).')
@click.option("--queries", required=True, type=click.Path(exists=True, dir_okay=False), help="TSV: qid<TAB>text per line.")
@click.option("--lang", default=None, help="Language code: picks its analyzer from the table (unknown codes get plain).")
@click.option("--analyzer", default=None, help="An analyzer by name instead: plain = standard tokenization and lowercasing only.")
@click.option("--k", type=click.IntRange(min=1), default=100, show_default=True, help="Hits per query.")
@click.option("--k1", type=float, default=Bm25Settings.k1, show_default=True)
@click.option("--b", type=float, default=Bm25Settings.b, show_default=True)
@click.option("--title-boost", type=float, default=Bm25Settings.title_boost, show_default=True)
@click.option("--combine", type=click.Choice(["best_fields", "most_fields"]), default="best_fields", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--tag", default="clirmatrix", show_default=True, help="Run tag (last column).")
@click.option("--output", required=True, type=click.Path(dir_okay=False), help="TREC run file to write.")
def search(corpus: str, queries: str, lang: str | None, analyzer: str | None, k: int, k1: float, b: float, title_boost: float, combine: str, threads: int, tag: str, output: str) -> None:
    """Search a corpus with the embedded BM25 engine (title^2 + text); write a TREC run file."""
    from clirmatrix.pipeline.engines.analyzers import analyzer_names
    from clirmatrix.pipeline.engines.base import Bm25Settings
    from clirmatrix.pipeline.engines.search import run_search

    if (lang is None) == (analyzer is None):
        raise click.UsageError("give exactly one of --lang CODE or --analyzer NAME")
    if analyzer is not None and analyzer not in analyzer_names():
        raise click.BadParameter(f"{analyzer!r}; choose from {', '.join(analyzer_names())}", param_hint="--analyzer")
    settings = Bm25Settings(k1=k1, b=b, title_boost=title_boost, combine=combine)
    with console.status("indexing and searching"):
        counts = run_search(corpus, queries, output, lang=lang, analyzer=analyzer, k=k, tag=tag, settings=settings, threads=threads)
    console.print(f"[green]wrote[/] {output}: " + ", ".join(f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}" for key, value in counts.items()))
