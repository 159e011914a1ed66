"""``clirmatrix plan``: a build projected before it runs (work, wall clock, memory, disk)."""

from __future__ import annotations

from dataclasses import fields

import click
from rich.table import Table

from clirmatrix.cli.common import comma_list_or_none, config_options, console
from clirmatrix.pipeline.tools.plan import PlanSettings

PLAN_SETTINGS = tuple(setting.name for setting in fields(PlanSettings))  # the build's settings a projection depends on, offered as its flags


@click.command("plan")
@click.option("--dumps", "dumps_dir", default=None, help="A folder of fetched dumps (documents counted when small, else estimated from their bytes).")
@click.option("--listing", default=None, type=click.Path(dir_okay=False), help="A listing written by `clirmatrix dumps list --json FILE` (documents estimated from sizes).")
@click.option("--langs", default=None, help="Comma-separated languages [default: every language found].")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="As the build's --workers: worker processes, one core each [default: a stage's units, up to this machine's cores].")
@click.option("--runner", type=click.Choice(["local", "dask"]), default="local", show_default=True, help="Whose start-up costs and memory to project.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False), help="The build's TOML or YAML settings file: the plan reads the settings below from it; flags win.")
@config_options(PLAN_SETTINGS, config_file=False)
@click.option("--cost-model", default=None, type=click.Path(dir_okay=False), help="The measured rates [default: the package's cost_model.json].")
def plan_command(dumps_dir: str | None, listing: str | None, langs: str | None, workers: int | None, runner: str, config_file: str | None, cost_model: str | None, **flags) -> None:
    """Project a build before running it: documents, queries, directions, core-hours and wall clock per stage, memory, disk.

    The build's settings that change its work (--min-docs, --shard-docs, --split-mb, ...)
    are taken as the build takes them, flags over --config over the build's defaults.
    """
    from clirmatrix.pipeline.config import resolve
    from clirmatrix.pipeline.tools import plan

    if (dumps_dir is None) == (listing is None):
        raise click.UsageError("give one of --dumps DIR and --listing FILE")
    settings = plan.PlanSettings.of(resolve(config_file, flags, needs=()))
    chosen = comma_list_or_none(langs)
    model = plan.CostModel.read(cost_model or plan.COST_MODEL)
    with console.status("reading the dumps" if dumps_dir else "reading the listing"):
        inputs = plan.inputs_from_dumps(dumps_dir, chosen) if dumps_dir else plan.inputs_from_listing(listing, chosen)
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
