"""``clirmatrix export``: a build or download as Hugging Face datasets, BEIR, or Anserini/pyserini files."""

from __future__ import annotations

import click
from rich.table import Table

from clirmatrix.cli.common import comma_list_or_none, console
from clirmatrix.pipeline.output.layout import EXPORT_FORMATS


def _list(value: str | None) -> list[str] | None:
    return comma_list_or_none(value, every="all")


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("root", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True, help="hf: Parquet + README configs; beir: corpus/queries/qrels; pyserini: JSON collections, topics, qrels.")
@click.option("--to", "to_dir", required=True, type=click.Path(file_okay=False), help="Folder to write into (an unfinished one is resumed).")
@click.option("--sets", default="all", show_default=True, help="bi139-base, bi139-full, multi8 (comma-separated, or all that ROOT has).")
@click.option("--src", default="all", show_default=True, help="Query languages (comma-separated, or all).")
@click.option("--tgt", default="all", show_default=True, help="Document languages (comma-separated, or all).")
@click.option("--split", "splits", default="all", show_default=True, help="train, dev, test1, test2 (comma-separated, or all).")
@click.option("--full-docs", is_flag=True, help="Make the corpora of DOCS-FULL (whole texts) instead of DOCS (truncated, as the release).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Local worker processes [default: one per core, at most one per file].")
@click.pass_context
def export(ctx: click.Context, root: str, fmt: str, to_dir: str, sets: str, src: str, tgt: str, splits: str, full_docs: bool, workers: int | None) -> None:
    """Export ROOT (a build or download) for datasets.load_dataset, BEIR/MTEB or Anserini; one unit per file, resumable.

    Any further --flags go to Apache Beam (--runner dask --dask_client_address HOST:PORT, ...).
    """
    from clirmatrix.beam_jobs.export import run_export
    from clirmatrix.pipeline.errors import add_note
    from clirmatrix.pipeline.tools.export import interrupted_note, plan_export

    plan = plan_export(root, fmt, _list(sets), _list(src), _list(tgt), _list(splits), full_docs)
    try:
        with console.status(f"exporting {len(plan.tasks):,} files as {fmt} into {to_dir}"):
            result = run_export(plan, to_dir, ctx.args, workers)
    except KeyboardInterrupt as interrupt:  # Ctrl-C: one line, what was kept and how to go on (the command line prints the note)
        add_note(interrupt, interrupted_note(to_dir))
        raise
    table = Table(title=f"export {fmt} into {to_dir}", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, value in (("files exported now", result.units - result.skipped), ("files done by an earlier run (skipped)", result.skipped),
                        ("queries and documents", result.rows), ("qrels", result.qrels)):
        table.add_row(name, f"{value:,}")
    console.print(table)
    if result.cleaned:
        console.print(f"[yellow]note[/] {result.cleaned:,} query titles held a tab or line break: written with spaces in the TSV topics", highlight=False)
    hints = {"hf": f'datasets.load_dataset("{to_dir}", "<config>", split="test1"): configs in {to_dir}/README.md',
             "beir": f'GenericDataLoader(data_folder="{to_dir}/<set>/<src>_<tgt>").load(split="test1")',
             "pyserini": f"index {to_dir}/collections/<lang> with Anserini's JsonCollection; topics and qrels under {to_dir}/topics, {to_dir}/qrels"}
    console.print(hints[fmt], highlight=False, soft_wrap=True)
