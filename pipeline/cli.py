"""The ``clirmatrix`` command.

Each command parses its flags, calls the library, and turns the library's typed
errors into a one-paragraph message and a non-zero exit; no traceback for bad
input. Unknown ``--flags`` of ``extract`` go to Apache Beam (``--runner=...``).
"""

from __future__ import annotations

import logging
import sys

import click
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

console = Console(stderr=True)
LOG = logging.getLogger("clirmatrix")


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)], force=True)
    LOG.setLevel(logging.DEBUG if verbose else logging.INFO)
    # Beam's own INFO lines (worker start-up, channels) drown the progress.
    logging.getLogger("apache_beam").setLevel(logging.INFO if verbose else logging.ERROR)


def _langs(value: str | None) -> list[str] | None:
    return [code.strip() for code in value.split(",") if code.strip()] if value else None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show debug logs, Beam's included.")
@click.version_option(package_name="clirmatrix")
def cli(verbose: bool) -> None:
    """Build CLIRMatrix-style cross-lingual retrieval datasets from Wikipedia and Wikidata dumps."""
    _setup_logging(verbose)


@cli.command()
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--docs-per-lang", type=click.IntRange(min=50), default=2000, show_default=True, help="About this many articles per language.")
@click.option("--langs", default=",".join(("en", "de", "fr", "ru", "ar", "zh", "ja")), show_default=True, help="Languages to generate.")
@click.option("--seed", type=int, default=13, show_default=True)
@click.option("--clean/--broken", default=False, show_default=True, help="--broken (default) puts one bad record in each dump, as real dumps have.")
def sample(out_dir: str, docs_per_lang: int, langs: str, seed: int, clean: bool) -> None:
    """Write small, realistic sample dumps (CirrusSearch, XML, Wikidata) into OUT_DIR."""
    from clirmatrix.pipeline.sample import SCRIPTS, write_sample_dumps

    chosen = tuple(_langs(langs) or ())
    unknown = [lang for lang in chosen if lang not in SCRIPTS]
    if unknown:
        raise click.BadParameter(f"no sample vocabulary for {', '.join(unknown)}; choose from {', '.join(SCRIPTS)}", param_hint="--langs")
    with console.status(f"writing sample dumps for {len(chosen)} languages"):
        world = write_sample_dumps(out_dir, docs_per_lang, chosen, seed, broken=not clean)
    articles = sum(len(entity.langs) for entity in world.entities)
    console.print(f"[green]wrote[/] {out_dir}: {len(world.entities):,} entities, {articles:,} articles in {', '.join(chosen)}")


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--dumps", "dumps_dir", required=True, help="Folder (or gs://, s3:// prefix) with Wikipedia and Wikidata dumps.")
@click.option("--out", "out_dir", required=True, help="Folder for docs/, sitelinks/, entity_docs/ Parquet.")
@click.option("--langs", default=None, help="Comma-separated languages (default: every language found).")
@click.option("--source", type=click.Choice(["auto", "cirrus", "xml"]), default="auto", show_default=True, help="Which dump kind to read documents from.")
@click.option("--min-docs", type=click.IntRange(min=0), default=10_000, show_default=True, help="Drop languages with fewer documents.")
@click.option("--max-bad-fraction", type=click.FloatRange(0, 1), default=0.001, show_default=True, help="Fail when more input than this is bad.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Local worker processes (default: one per input file, up to the cores).")
@click.pass_context
def extract(ctx: click.Context, dumps_dir: str, out_dir: str, langs: str | None, source: str, min_docs: int, max_bad_fraction: float, workers: int | None) -> None:
    """Extract documents, Wikidata sitelinks and entity links from dumps into Parquet.

    Any further --flags go to Apache Beam, e.g. --runner=FlinkRunner or
    --runner=DataflowRunner --project=P --region=R --temp_location=gs://...
    """
    from clirmatrix.beam_jobs.extract import run_extract
    from clirmatrix.beam_jobs.extract_docs import DocsSettings

    settings = DocsSettings(min_docs=min_docs, max_bad_fraction=max_bad_fraction)
    with console.status("extracting (progress is logged per file)"):
        result = run_extract(dumps_dir, out_dir, _langs(langs), source, settings, ctx.args, workers)
    _print_extract_summary(result, out_dir)


def _print_extract_summary(result, out_dir: str) -> None:
    table = Table(title="extraction", title_justify="left")
    for column in ("lang", "documents", "filtered", "bad input", "sitelinks", "linked (wikidata)", "linked (dump)", "disagree", "unlinked"):
        table.add_column(column, justify="left" if column == "lang" else "right")
    links = result.entity_docs["languages"]
    for lang, docs in result.docs["languages"].items():
        link = links.get(lang, {})
        table.add_row(
            lang,
            f"{docs['docs']:,}",
            f"{sum(docs['filtered'].values()):,}",
            f"{sum(docs['rejected'].values()):,}",
            f"{result.sitelinks['languages'].get(lang, 0):,}",
            f"{link.get('linked_wikidata', 0):,}",
            f"{link.get('linked_dump', 0):,}",
            f"{link.get('disagreements', 0):,}",
            f"{link.get('unlinked', 0):,}",
        )
    console.print(table)
    for lang, entry in result.docs["dropped"].items():
        console.print(f"[yellow]dropped[/] {lang}: {entry['docs']:,} documents < --min-docs")
    for note in result.notes:
        console.print(f"[yellow]note[/] {note}")
    rejected = result.sitelinks["rejected"]
    console.print(
        f"wikidata: {result.sitelinks['entities_read']:,} entity lines, {result.sitelinks['entities_with_sitelinks']:,} with a selected sitelink"
        + (f", bad: {rejected}" if rejected else "")
    )
    console.print(f"[green]done[/]: Parquet in {out_dir}/docs, {out_dir}/sitelinks, {out_dir}/entity_docs")


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run a command, map library errors to messages and exit codes."""
    from clirmatrix.beam_jobs.common import IncompleteStageError
    from clirmatrix.beam_jobs.extract import NoDumpsError
    from clirmatrix.pipeline.badinput import TooManyBadRecords

    try:
        cli.main(args=argv, prog_name="clirmatrix", standalone_mode=False)
    except click.exceptions.Abort:
        console.print("aborted")
        return 130
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except (TooManyBadRecords, NoDumpsError, IncompleteStageError, FileNotFoundError, ValueError) as error:
        console.print(f"[red]error:[/] {error}", highlight=False)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())


def console_main() -> None:
    """The installed ``clirmatrix`` script."""
    sys.exit(main())
