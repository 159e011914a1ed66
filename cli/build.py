"""``clirmatrix extract`` and ``clirmatrix build``: their flags (one per ``BuildConfig`` setting), progress and summaries."""

from __future__ import annotations

import click
from rich.table import Table

from clirmatrix.cli.common import DeclaredOptions, config_options, console


def _extract_settings() -> tuple[str, ...]:
    """What the extraction stages declare (``beam_jobs.all_stages``), and ``--out`` for their Parquet."""
    from clirmatrix.beam_jobs.all_stages import extraction_settings

    return (*extraction_settings(), "out")


@click.command(
    cls=DeclaredOptions,
    settings=_extract_settings,
    helps={"out": "Folder for docs/, sitelinks/, entity_docs/ Parquet."},
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.pass_context
def extract(ctx: click.Context, **flags) -> None:
    """Extract documents, Wikidata sitelinks and entity links from dumps into Parquet.

    Any further --flags go to Apache Beam, e.g. --runner=FlinkRunner or
    --runner=DataflowRunner --project=P --region=R --temp_location=gs://...
    """
    from clirmatrix.beam_jobs.extract import run_extract
    from clirmatrix.beam_jobs.stages import beam_flags
    from clirmatrix.pipeline.config import resolve

    config = resolve(None, flags)
    out_dir = config.out
    with console.status("extracting (progress is logged per file)"):
        result = run_extract(config, out_dir, beam_flags(ctx.args), work_flag="--out")
    _print_extract_summary(result, out_dir)


def _print_extract_summary(result, out_dir: str) -> None:
    table = Table(title="extraction", title_justify="left")
    for column in ("lang", "documents", "filtered", "bad input", "sitelinks", "linked (wikidata)", "linked (dump)", "disagree", "unlinked"):
        table.add_column(column, justify="left" if column == "lang" else "right")
    links = result.entity_docs.languages
    for lang, docs in result.docs.languages.items():
        link = links.get(lang)
        linked = (link.linked_wikidata, link.linked_dump, link.disagreements, link.unlinked) if link else (0, 0, 0, 0)
        table.add_row(
            lang,
            f"{docs.docs:,}",
            f"{sum(docs.filtered.values()):,}",
            f"{sum(docs.rejected.values()):,}",
            f"{result.sitelinks.languages.get(lang, 0):,}",
            *(f"{count:,}" for count in linked),
        )
    console.print(table)
    for lang, entry in result.docs.dropped.items():
        console.print(f"[yellow]dropped[/] {lang}: {entry.docs:,} documents < --min-docs")
    for note in result.notes:
        console.print(f"[yellow]note[/] {note}")
    console.print(_links_line(result.sitelinks, result.entity_docs.totals), highlight=False, soft_wrap=True)
    console.print(f"[green]done[/]: Parquet in {out_dir}/docs, {out_dir}/sitelinks, {out_dir}/entity_docs")


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@config_options()
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False), help="TOML or YAML file with any of these settings; flags win.")
@click.pass_context
def build(ctx: click.Context, config_file: str | None, **flags) -> None:
    """Build BI-139, MULTI-8 and DOCS from dumps, resuming finished stages.

    Any further --flags go to Apache Beam: --runner dask --dask_client_address HOST:PORT,
    --runner flink, --runner dataflow --project P --region R --temp_location gs://...
    """
    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.config import resolve

    config = resolve(config_file, flags)
    with console.status("building (progress is logged per stage)"):
        result = run_build(config, ctx.args)
    _print_build_summary(result)


def _print_build_summary(result) -> None:
    docs, links, retrieval = (result.summaries[name].languages for name in ("extract_docs", "link_entities", "retrieve"))
    table = Table(title="languages", title_justify="left")
    for column in ("lang", "records", "documents", "bad input", "linked", "queries", "no hits", "queries/s"):
        table.add_column(column, justify="left" if column == "lang" else "right")
    for lang, entry in docs.items():
        link, found = links[lang], retrieval[lang]
        table.add_row(
            lang, f"{entry.records:,}", f"{entry.docs:,}", f"{sum(entry.rejected.values()):,}",
            f"{link.linked_wikidata + link.linked_dump:,}", f"{found.queries:,}",
            f"{found.queries_without_hits:,}", f"{found.queries_per_second or 0:,.0f}",
        )
    console.print(table)
    console.print(_links_line(result.summaries["extract_sitelinks"], result.summaries["link_entities"].totals), highlight=False, soft_wrap=True)
    _print_bad_input(result)
    sets = Table(title="released files", title_justify="left")
    for column in ("set", "files", "lines", "MB"):
        sets.add_column(column, justify="left" if column == "set" else "right")
    for name, counts in sorted(result.summaries["write_release"].sets.items()):
        sets.add_row(name, f"{counts['files']:,}", f"{counts['lines']:,}", f"{counts['bytes'] / 1e6:,.1f}")
    console.print(sets)
    timing = ", ".join(
        f"{name} {seconds:.1f}s" + (" (earlier run; up to date)" if name in result.skipped else "")
        for name, seconds in result.stage_seconds.items()
        if seconds is not None
    )
    console.print(f"stages: {timing}")
    for note in result.notes:
        console.print(f"[yellow]note[/] {note}")
    console.print(f"[green]done[/]: {result.out} (stats in {result.out}/stats, manifest.json; intermediate files in {result.work})")


def _links_line(sitelinks, totals: dict) -> str:
    """Where the links came from (a ``SitelinksSummary``), how much was read, and how the sources agreed."""
    source, rejected = sitelinks.source, sitelinks.rejected
    what = "rows" if source == "items-per-site" else "entity lines"
    if source:
        line = f"links: {source} ({sitelinks.entities_read:,} {what}, {sitelinks.entities_with_sitelinks:,} with a selected sitelink"
        line += f"; {totals.get('disagreements', 0):,} pages name another item themselves)"
    else:
        line = "links: the pages' own Wikidata items"
    if sitelinks.page_props:
        line += f"; page_props of {', '.join(sitelinks.page_props)} named {totals.get('page_props', 0):,} pages' items"
        line += f" ({totals.get('page_props_disagreements', 0):,} disagreeing with the page's record)"
    return line + (f"; bad: {rejected}" if rejected else "")


def _print_bad_input(result) -> None:
    """Bad records by kind, per language and for Wikidata, with where the full reports are."""
    from clirmatrix.pipeline.io import fileio

    docs_stage, sitelinks_stage = fileio.join(result.work, "docs"), fileio.join(result.work, "sitelinks")
    for lang, entry in result.summaries["extract_docs"].languages.items():
        if entry.rejected:
            kinds = ", ".join(f"{kind} {count:,}" for kind, count in entry.rejected.items())
            console.print(f"bad input {lang}: {kinds} (kept {entry.docs:,} of {entry.records:,} records; {fileio.join(docs_stage, '_reports', lang + '.json')})", highlight=False, soft_wrap=True)
    sitelinks = result.summaries["extract_sitelinks"]
    if sitelinks.rejected:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in sitelinks.rejected.items())
        console.print(f"bad input wikidata: {kinds} (of {sitelinks.entities_read:,} entity lines; {fileio.join(sitelinks_stage, '_reports')})", highlight=False, soft_wrap=True)
