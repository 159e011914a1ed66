"""``clirmatrix validate``: a build or a download checked against the release's rules, locally or on Beam."""

from __future__ import annotations

import click

from clirmatrix.cli.common import console
from clirmatrix.pipeline.config import DEFAULT_EVAL_SIZE, DEFAULT_TRAIN_SIZE


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
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
