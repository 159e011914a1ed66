"""The ``clirmatrix`` command.

Each command parses its flags, calls the library, and turns the library's typed
input errors (``clirmatrix.pipeline.errors.InputError``) into a one-paragraph
message and exit 2; no traceback for bad input. So does an ``OSError`` the machine
causes about a path (a folder the user may not write, a read-only or full disk:
``environment_error``), in one line naming the path. Every other exception keeps its
traceback (it is a bug). Unknown ``--flags`` of ``extract`` go to Apache Beam (``--runner=...``).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import sys
from dataclasses import fields

import click
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.table import Table

from clirmatrix.pipeline.config import DEFAULT_EVAL_SIZE, DEFAULT_SEED, DEFAULT_TRAIN_SIZE
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.tools.download import OFFICIAL_BASE_URL
from clirmatrix.pipeline.tools.sample import DEFAULT_INPUTS as DEFAULT_SAMPLE_INPUTS
from clirmatrix.pipeline.tools.sample import INPUTS as SAMPLE_INPUTS

# Piped or logged, rich would wrap every table to 80 columns; wide enough for our tables instead.
console = Console(stderr=True, width=None if sys.stderr.isatty() or "COLUMNS" in os.environ else 160)
LOG = logging.getLogger("clirmatrix")
DEFAULT_SAMPLE_LANGS = ("en", "de", "es", "fr", "ru", "ar", "zh", "ja")  # the MULTI-8 languages, 5 scripts


def _setup_logging(verbose: bool) -> None:
    from clirmatrix.beam_jobs.local_worker import beam_is_quiet  # no Beam import: logging is set before Beam loads

    handler = RichHandler(console=console, show_path=False)
    if not verbose:
        handler.addFilter(beam_is_quiet)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[handler], force=True)
    LOG.setLevel(logging.DEBUG if verbose else logging.INFO)
    # Beam's own INFO lines (worker start-up, channels) drown the progress.
    logging.getLogger("apache_beam").setLevel(logging.INFO if verbose else logging.ERROR)


class SampleFolderError(InvalidInputError):
    """``clirmatrix sample`` would write into a folder that holds other files."""


def _langs(value: str | None) -> list[str] | None:
    from clirmatrix.pipeline.config import comma_list

    return comma_list(value) or None if value else None


def _config_options(names: tuple[str, ...] = (), helps: dict[str, str] | None = None, config_file: bool = True):
    """One flag per ``BuildConfig`` field (or per field in ``names``), help and type read from the field: the one source.

    Flags default to None, so a config file's value (or the dataclass default) fills
    what the command line leaves out; ``BuildConfig.check`` judges the result. ``helps``
    rewords a flag for a command that uses it differently (``extract --out``).
    """
    from clirmatrix.pipeline.config import BuildConfig, flag_name

    def decorate(command):
        for setting in reversed([s for s in fields(BuildConfig) if not names or s.name in names]):
            rule, default = setting.metadata, setting.default
            shown = ",".join(default) if isinstance(default, tuple) else default
            required = " [required: as a flag or in the config file]" if config_file else " [required]"
            help_text = (helps or {}).get(setting.name, rule["help"]) + (required if rule.get("required") else "")
            if "[default:" not in help_text and not rule.get("required") and shown not in ("", ()):
                help_text += f" [default: {shown}]"
            kind = click.Choice(rule["choices"]) if "choices" in rule else None if isinstance(default, (str, tuple)) else type(default)
            flag = flag_name(setting.name)
            if isinstance(default, bool):
                command = click.option(flag, setting.name, is_flag=True, default=None, help=help_text)(command)
            else:
                command = click.option(flag, setting.name, type=kind, default=None, help=help_text)(command)
        return command

    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show debug logs, Beam's included.")
@click.version_option(package_name="clirmatrix")
def cli(verbose: bool) -> None:
    """Build CLIRMatrix-style cross-lingual retrieval datasets from Wikipedia and Wikidata dumps."""
    _setup_logging(verbose)


@cli.command()
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--docs-per-lang", type=click.IntRange(min=50), default=2000, show_default=True, help="About this many articles per language.")
@click.option("--langs", default=",".join(DEFAULT_SAMPLE_LANGS), show_default=True, help="Languages to generate.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option("--clean/--broken", default=False, show_default=True, help="--broken (default) puts one bad record in each dump, as real dumps have.")
@click.option("--force", is_flag=True, help="Write into OUT_DIR even when it is not empty (files of the same names are replaced, others stay).")
@click.option(
    "--inputs",
    type=click.Choice(SAMPLE_INPUTS),
    default=DEFAULT_SAMPLE_INPUTS,
    show_default=True,
    help="fresh: what Wikimedia publishes today (Enterprise HTML, multistream XML, wb_items_per_site, page_props); "
    "classic: the 2020 paper's (CirrusSearch dumps, stopped in 2025, and the Wikidata JSON dump), for past dates.",
)
def sample(out_dir: str, docs_per_lang: int, langs: str, seed: int, clean: bool, force: bool, inputs: str) -> None:
    """Write small, realistic sample dumps into OUT_DIR, in the formats of today (or of 2020: --inputs classic).

    OUT_DIR must be new, empty or hold this very sample (a rerun writes nothing),
    or give --force. The last line is the build
    command for these dumps: a default build drops every language of fewer than
    --min-docs 10000 documents, and fails a language whose bad records are over
    --max-bad-fraction 0.001; a --broken dump's one bad record is over that in a
    language of fewer than 1,000 articles (--docs-per-lang below about 1200), so
    such a sample builds with --clean or with the --max-bad-fraction printed.
    """
    from clirmatrix.pipeline.io.localio import check_folder_path
    from clirmatrix.pipeline.method.languages import check_langs
    from clirmatrix.pipeline.tools.sample import SCRIPTS, build_flags, make_world, sample_settings, write_sample_dumps, written_settings

    chosen = tuple(check_langs(langs, SCRIPTS, "--langs", "sample language"))
    if not chosen:
        raise click.BadParameter("name at least one language", param_hint="--langs")
    check_folder_path(out_dir, "OUT_DIR")
    if os.path.isdir(out_dir) and any(os.scandir(out_dir)) and not force:
        if written_settings(out_dir) != sample_settings(docs_per_lang, chosen, seed, not clean, inputs):
            raise SampleFolderError(f"OUT_DIR {out_dir} is not empty; pass --force to write the sample into it anyway, or give a new folder")
        world = make_world(docs_per_lang, chosen, seed)  # a rerun of the same command: those bytes are there already
        console.print(f"{out_dir} already holds this sample (same settings); nothing written (--force writes it again)", highlight=False)
    else:
        with console.status(f"writing sample dumps for {len(chosen)} languages"):
            world = write_sample_dumps(out_dir, docs_per_lang, chosen, seed, broken=not clean, inputs=inputs)
        articles = sum(len(entity.langs) for entity in world.entities)
        console.print(f"[green]wrote[/] {out_dir}: {len(world.entities):,} entities, {articles:,} articles in {', '.join(chosen)}")
    console.print(f"build them with: clirmatrix build --dumps {out_dir} --out OUT {' '.join(build_flags(world, broken=not clean))}", highlight=False, soft_wrap=True)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@_config_options(
    ("dumps", "out", "langs", "skip_missing", "source", "links", "min_docs", "max_bad_fraction", "split_mb", "workers"),
    {"out": "Folder for docs/, sitelinks/, entity_docs/ Parquet."},
    config_file=False,
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
        link = links.get(lang, {})
        table.add_row(
            lang,
            f"{docs['docs']:,}",
            f"{sum(docs['filtered'].values()):,}",
            f"{sum(docs['rejected'].values()):,}",
            f"{result.sitelinks.languages.get(lang, 0):,}",
            f"{link.get('linked_wikidata', 0):,}",
            f"{link.get('linked_dump', 0):,}",
            f"{link.get('disagreements', 0):,}",
            f"{link.get('unlinked', 0):,}",
        )
    console.print(table)
    for lang, entry in result.docs.dropped.items():
        console.print(f"[yellow]dropped[/] {lang}: {entry['docs']:,} documents < --min-docs")
    for note in result.notes:
        console.print(f"[yellow]note[/] {note}")
    console.print(_links_line(result.sitelinks, result.entity_docs.totals), highlight=False, soft_wrap=True)
    console.print(f"[green]done[/]: Parquet in {out_dir}/docs, {out_dir}/sitelinks, {out_dir}/entity_docs")


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@_config_options()
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
            lang, f"{entry['records']:,}", f"{entry['docs']:,}", f"{sum(entry['rejected'].values()):,}",
            f"{link['linked_wikidata'] + link['linked_dump']:,}", f"{found['queries']:,}",
            f"{found['queries_without_hits']:,}", f"{found['queries_per_second'] or 0:,.0f}",
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
        if entry["rejected"]:
            kinds = ", ".join(f"{kind} {count:,}" for kind, count in entry["rejected"].items())
            console.print(f"bad input {lang}: {kinds} (kept {entry['docs']:,} of {entry['records']:,} records; {fileio.join(docs_stage, '_reports', lang + '.json')})", highlight=False, soft_wrap=True)
    sitelinks = result.summaries["extract_sitelinks"]
    if sitelinks.rejected:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in sitelinks.rejected.items())
        console.print(f"bad input wikidata: {kinds} (of {sitelinks.entities_read:,} entity lines; {fileio.join(sitelinks_stage, '_reports')})", highlight=False, soft_wrap=True)


@cli.command()
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


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("root", callback=lambda ctx, param, value: value if "://" in value else click.Path(exists=True, file_okay=False).convert(value, param, ctx))
@click.option("--train-size", type=click.IntRange(min=0), default=None, help=f"Most queries of a base train file [default: the build's own; {DEFAULT_TRAIN_SIZE:,} for a download].")
@click.option("--eval-size", type=click.IntRange(min=0), default=None, help=f"Most queries of a dev/test file [default: the build's own; {DEFAULT_EVAL_SIZE:,} for a download].")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes reading files [default: the cores; one for a tree under 64 MB].")
@click.option("--work", default=None, help="With a ROOT on an object store or --runner: a folder or prefix every worker reaches (s3://bucket/tmp) for the units' scratch, "
              "removed at the end [required with --runner; default: a temporary folder here].")
@click.pass_context
def validate(ctx: click.Context, root: str, train_size: int | None, eval_size: int | None, workers: int | None, work: str | None) -> None:
    """Check a build or a download against every rule of the release; exit 1 when any fails.

    ROOT may be on an object store (s3://bucket/out, gs://...): its units then run on Beam,
    and any further --flags go to Beam (--s3_endpoint_url URL, --runner dask --dask_client_address HOST:PORT, ...).
    """
    import time

    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from clirmatrix.pipeline.tools.validate import print_report, release_sizes
    from clirmatrix.pipeline.tools.validate import validate as check_tree

    on_beam = "://" in root or any(arg == "--runner" or arg.startswith("--runner=") for arg in ctx.args)
    if not on_beam and (ctx.args or work):
        what = f"no such option {ctx.args[0]}" if ctx.args else "--work is for Beam's units"
        raise click.UsageError(f"{what}: Beam's flags and --work go with a ROOT on an object store, or with --runner")
    if on_beam:
        from clirmatrix.beam_jobs.common import use_filesystem_options

        use_filesystem_options(ctx.args)  # the store's flags, for listing ROOT here
    sizes = release_sizes(root)
    started = time.monotonic()
    # Refreshed as files are read, not by a thread: with no other thread running, validate forks its workers (the quickest start).
    columns = ("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, auto_refresh=False) as bar:
        task = bar.add_task("checking", total=sum(sizes.values()) or None)
        done = {"files": 0}

        def read(path: str) -> None:
            done["files"] += 1
            bar.update(task, advance=sizes.get(path, 0), description=f"checking {done['files']:,}/{len(sizes):,} files")
            bar.refresh()

        if on_beam:  # each unit's files once it has finished
            from clirmatrix.beam_jobs.validate import run_validate

            report = run_validate(root, work, ctx.args, train_size=train_size, eval_size=eval_size, on_file=read, workers=workers)
        else:
            report = check_tree(root, train_size=train_size, eval_size=eval_size, on_file=read, workers=workers)
    print_report(report, console)
    console.print(f"read {len(sizes):,} files, {sum(sizes.values()) / 1e6:,.1f} MB in {time.monotonic() - started:,.1f} s", highlight=False)
    if not report.ok:
        click.get_current_context().exit(1)


@cli.command()
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


@cli.group()
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


@cli.command()
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

    planned = prepare_download(dataset, src, tgt, _langs(splits) or [], base_url, index, no_index)
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


@cli.command()
@click.argument("root", type=click.Path(exists=True, file_okay=False))
def report(root: str) -> None:
    """Write ROOT/report.html: one self-contained page about a build or a download."""
    from clirmatrix.pipeline.tools.report import write_report

    with console.status(f"reading {root}"):
        path = write_report(root)
    console.print(f"[green]wrote[/] {path}")


@cli.command("irds")
@click.argument("root", type=click.Path(exists=True, file_okay=False))
@click.option("--prefix", default="clirmatrix-local", show_default=True, help="Namespace of the ids (not clirmatrix, which is the official release's).")
def irds_command(root: str, prefix: str) -> None:
    """List the ir_datasets ids a build or download registers, and how to load them."""
    try:
        from clirmatrix.pipeline.tools import irds
    except ImportError as error:
        raise click.ClickException(str(error)) from None
    ids = irds.registered_ids(root, prefix)
    for dataset_id in ids:
        click.echo(dataset_id)
    lacking = irds.without_docs(ids, prefix)
    for missing in sorted(set(lacking.values())):
        lang = missing.split("/")[-1].split(".")[0]
        count = sum(1 for path in lacking.values() if path == missing)
        note = f"{count:,} ids judge documents in {lang} but {missing} is not there: queries and qrels only (clirmatrix download docs --tgt {lang})"
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    example = next((i for i in ids if "/bi139-base/" in i), ids[0] if ids else f"{prefix}/de")
    console.print(
        f"{len(ids):,} ids. In Python:\n    import ir_datasets\n    from clirmatrix import irds\n"
        f"    irds.register({root!r}, prefix={prefix!r})\n    ir_datasets.load({example!r})",
        highlight=False,
    )


@cli.command("plan")
@click.option("--dumps", "dumps_dir", default=None, help="A folder of fetched dumps (documents counted when small, else estimated from their bytes).")
@click.option("--listing", default=None, type=click.Path(dir_okay=False), help="A listing written by `clirmatrix dumps list --json FILE` (documents estimated from sizes).")
@click.option("--langs", default=None, help="Comma-separated languages [default: every language found].")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="As the build's --workers: worker processes, one core each [default: a stage's units, up to this machine's cores].")
@click.option("--runner", type=click.Choice(["local", "dask"]), default="local", show_default=True, help="Whose start-up costs and memory to project.")
@click.option("--min-docs", type=click.IntRange(min=0), default=None, help="As the build's --min-docs: smaller languages are left out [default: 10000].")
@click.option("--cost-model", default=None, type=click.Path(dir_okay=False), help="The measured rates [default: the package's cost_model.json].")
def plan_command(dumps_dir: str | None, listing: str | None, langs: str | None, workers: int | None, runner: str, min_docs: int | None, cost_model: str | None) -> None:
    """Project a build before running it: documents, queries, directions, core-hours and wall clock per stage, memory, disk."""
    from clirmatrix.pipeline.config import DEFAULT_MIN_DOCS
    from clirmatrix.pipeline.tools import plan

    if (dumps_dir is None) == (listing is None):
        raise click.UsageError("give one of --dumps DIR and --listing FILE")
    chosen = _langs(langs)
    model = plan.CostModel.read(cost_model or plan.COST_MODEL)
    with console.status("reading the dumps" if dumps_dir else "reading the listing"):
        inputs = plan.inputs_from_dumps(dumps_dir, chosen) if dumps_dir else plan.inputs_from_listing(listing, chosen)
    settings = plan.PlanSettings(min_docs=DEFAULT_MIN_DOCS if min_docs is None else min_docs)
    _print_plan(plan.plan_build(inputs, workers, runner, settings, model))


def _print_plan(projected) -> None:
    """The plan's three tables (languages, stages, totals), then where its rates come from."""
    languages = Table(title="languages", title_justify="left")
    for column in ("lang", "dump", "GB", "documents", "queries", "directions"):
        languages.add_column(column, justify="left" if column in ("lang", "dump") else "right")
    for row in projected.languages:
        documents = f"{row.documents:,}" + ("" if row.counted else " (est.)") + (" (left out)" if row.dropped else "")
        languages.add_row(row.lang, row.kind, f"{row.dump_bytes / 1e9:,.3f}", documents, f"{row.queries:,}" if not row.dropped else "-", f"{row.directions:,}")
    console.print(languages)
    multi8 = f", MULTI-8 {projected.multi8_directions}" if projected.multi8_directions else ""
    console.print(f"{projected.documents:,} documents, {projected.queries:,} queries, BI-139 directions {projected.directions:,}{multi8}", highlight=False)
    stages = Table(title=f"stages on {projected.workers} {projected.runner} worker{'s' if projected.workers != 1 else ''}", title_justify="left")
    for column in ("stage", "units", "core-hours", "wall clock", "largest unit MB", "largest unit s"):
        stages.add_column(column, justify="left" if column == "stage" else "right")
    for stage in projected.stages:
        stages.add_row(stage.stage, f"{stage.units:,}", f"{stage.core_hours:,.3f}", _duration(stage.wall_seconds), f"{stage.largest_unit_mb:,.0f}", f"{stage.largest_unit_seconds:,.1f}")
    stages.add_row("total", "", f"{projected.core_hours:,.3f}", _duration(projected.wall_seconds), f"{projected.peak_worker_mb:,.0f}", "", style="bold")
    console.print(stages)
    console.print(
        f"disk: dumps {projected.disk_dumps / 1e9:,.2f} GB, WORK {projected.disk_work / 1e9:,.2f} GB, OUT {projected.disk_out / 1e9:,.2f} GB; "
        f"peak memory: a worker {projected.peak_worker_mb:,.0f} MB, the driver {projected.driver_mb:,.0f} MB; wall clock {_duration(projected.wall_seconds)}",
        highlight=False, soft_wrap=True,
    )
    for note in projected.notes:
        console.print(f"[yellow]note[/] {note}", highlight=False, soft_wrap=True)
    console.print(f"cost model measured {projected.model_date} by `{projected.model_command}`", highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    return f"{seconds:,.1f} s" if seconds < 600 else f"{seconds / 60:,.1f} min" if seconds < 36_000 else f"{seconds / 3600:,.1f} h"


def _add_training_commands() -> None:
    """``train``, ``evaluate`` and ``reproduce`` live with the models; importing them does not import torch."""
    from clirmatrix.models.cli import evaluate, reproduce, train

    cli.add_command(train)
    cli.add_command(evaluate)
    cli.add_command(reproduce)


_add_training_commands()


def _add_dumps_and_export_commands() -> None:
    from clirmatrix.cli.dumps import dumps
    from clirmatrix.cli.export import export

    cli.add_command(dumps)
    cli.add_command(export)


_add_dumps_and_export_commands()


# An OSError of these about a path is the machine's, not a bug: a folder the user may not write, a read-only or full disk.
_ENVIRONMENT_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})
# The hidden names a file is written under before it gets its own (localio.atomic_write, fileio's, download's .part).
_TEMPORARY_NAME = re.compile(r"^\.(?P<name>.+?)(?:\.tmp-[0-9a-f]{12}|\.part)$")


def environment_error(error: OSError) -> str | None:
    """One line for an OSError the machine caused (``_ENVIRONMENT_ERRNOS``, about a path), naming the path: ``cannot write to
    PATH: Permission denied``, as the build's own write check says it; None for any other, a bug, which keeps its traceback.

    A hidden temporary name is shown as the file it was to become; a path that is there and
    may not be read is ``cannot read PATH``.
    """
    if error.errno not in _ENVIRONMENT_ERRNOS or error.filename is None:
        return None
    path = os.fsdecode(error.filename)
    folder, name = os.path.split(path)
    if temporary := _TEMPORARY_NAME.match(name):
        path = os.path.join(folder, temporary["name"])
    unreadable = error.errno in (errno.EACCES, errno.EPERM) and os.path.exists(path) and not os.access(path, os.R_OK)
    return f"cannot {'read' if unreadable else 'write to'} {path}: {error.strerror or os.strerror(error.errno)}"


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run a command, map library errors to messages and exit codes.

    Ctrl-C (a SIGINT to the process group, as a terminal sends it, or to this
    process alone): the first interrupts the command, which ends with exit code 130
    and one line, ``interrupted`` and the notes its KeyboardInterrupt carries (the
    build's: what it kept and how to resume), no traceback; a further one ends the
    process at once, as quietly. Run as the program (no ``argv``), an interrupted
    command ends the process itself (below). The command runs under click's
    ``make_context`` and ``invoke`` rather than ``cli.main``, whose own
    KeyboardInterrupt handling writes a blank line first (for a terminal's ``^C``:
    written here to a terminal only); what else ``cli.main`` did is kept (a closed
    output pipe: exit 1, quietly), but for shell completion, which this command does
    not offer.
    """
    import atexit
    import contextlib
    import signal
    import threading

    args = sys.argv[1:] if argv is None else list(argv)
    _setup_logging("-v" in args or "--verbose" in args)  # before the library imports Beam, which logs on import
    from clirmatrix.pipeline.errors import InputError

    interrupts, told = 0, False

    def on_interrupt(signum: int, frame: object) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            raise KeyboardInterrupt
        if not told:  # a further Ctrl-C: no unwinding left to print a traceback; local workers follow their driver
            os.write(2, b"interrupted\n")
        os._exit(130)

    on_interrupt.raises_keyboard_interrupt = True  # beam_jobs.runners.RAISES_KEYBOARD_INTERRUPT: it ends the local workers, then calls this
    before = signal.getsignal(signal.SIGINT)  # Python's, or clirmatrix.__main__'s while the command loaded: replaced; any other is the caller's
    ours = threading.current_thread() is threading.main_thread() and (before is signal.default_int_handler or getattr(before, "replaceable", False))
    if ours:
        signal.signal(signal.SIGINT, on_interrupt)
    try:
        try:
            with cli.make_context("clirmatrix", args) as ctx:
                code = cli.invoke(ctx)
        except click.exceptions.Exit as done:  # --help, --version
            code = done.exit_code
    except KeyboardInterrupt as interrupt:
        interrupts = max(interrupts, 1)
        if sys.stderr.isatty():
            console.print()  # after the terminal's ^C
        console.print(": ".join(["interrupted", *(["; ".join(interrupt.__notes__)] if getattr(interrupt, "__notes__", None) else [])]), markup=False, highlight=False, soft_wrap=True)
        told = True
        if argv is None:
            # The process itself ends here: its exit functions run (logging's flush, multiprocessing ending its daemon
            # processes), not the rest of Python's shutdown: Beam's gRPC teardown takes a while, and Python drops its
            # SIGINT handler first, so a second Ctrl-C there would kill the process (status -2, not 130).
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(130)
        return 130
    except click.exceptions.Abort:
        console.print("aborted")
        return 130
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except InputError as error:  # our typed input errors only: a bug elsewhere keeps its traceback
        console.print(f"[red]error:[/] {error}", highlight=False, soft_wrap=True)
        return 2
    except OSError as error:
        if error.errno == errno.EPIPE:  # the reader of our output went away (| head): quiet, as click's main is
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        line = environment_error(error)
        if line is None:  # any other OSError is a bug of ours: its traceback
            raise
        console.print(f"[red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
        return 2
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())

