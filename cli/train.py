"""``clirmatrix train``, ``clirmatrix evaluate`` and ``clirmatrix reproduce`` (with ``reproduce multi8`` and ``reproduce bi139``): the trainer's commands.

The train flags are the fields of :class:`~clirmatrix.models.arguments.TrainArguments`
(one ``--flag`` per field, its help from the field), so the dataclass, the CLI and
``args.json`` never disagree. torch is imported only when a command runs.

    clirmatrix train --model cross-encoder --data OUT --src en --tgt de \\
        --init ~/models/bert-base-multilingual-cased --out runs/en-de
    clirmatrix evaluate --run runs/en-de --data OUT --split test1
    clirmatrix reproduce multi8 --data OUT --init ~/models/bert-base-multilingual-cased --runs runs/
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

import click

from clirmatrix.models.arguments import MODELS, TrainArguments, check_lang_flags

if typing.TYPE_CHECKING:
    from clirmatrix.models.reproduce import Summary

INSTALL_HINT = (
    "this command needs the train extra; on a CPU machine: pip install torch==2.13.0 && pip install 'clirmatrix[train]' "
    "(GPU users install their own torch first)"
)


def _require_torch() -> None:
    import importlib.util

    missing = [name for name in ("torch", "transformers", "ir_measures") if importlib.util.find_spec(name) is None]
    if missing:
        raise click.ClickException(f"{INSTALL_HINT} (missing: {', '.join(missing)})")


def _option_type(field: dataclasses.Field, hint: object) -> dict:
    """Click settings of one dataclass field."""
    base = [arg for arg in typing.get_args(hint) if arg is not type(None)] or [hint]
    kind = base[0]
    settings: dict = {"default": field.default, "help": field.metadata.get("help", ""), "show_default": field.default not in (None, "")}
    if field.name == "model":
        settings["type"] = click.Choice(MODELS)
    elif kind is bool:
        settings["is_flag"] = True
    else:
        settings["type"] = kind
    return settings


def _field_options(names: tuple[str, ...] = (), aliases: dict[str, str] | None = None):
    """A decorator adding one flag per ``TrainArguments`` field (those in ``names``, or all), plus ``aliases``' extra flag names."""

    def decorate(function):
        hints = typing.get_type_hints(TrainArguments)
        for field in reversed([f for f in dataclasses.fields(TrainArguments) if not names or f.name in names]):
            settings = _option_type(field, hints[field.name])
            flags = ["--" + field.name.replace("_", "-")]
            if settings.pop("is_flag", False):
                flags = [f"{flags[0]}/--no-{field.name.replace('_', '-')}"]
            if aliases and field.name in aliases:
                flags.insert(0, aliases[field.name])
            function = click.option(*flags, field.name, **settings)(function)
        return function

    return decorate


_train_options = _field_options(aliases={"steps_per_epoch": "--steps"})  # as reproduce spells it


@click.command()
@_train_options
def train(**values) -> None:
    """Train a baseline of docs/models.md on a build or download (resumes a run in --out)."""
    _require_torch()
    from clirmatrix.models.train import run_training

    for name in ("data", "init", "out"):
        if not values[name]:
            raise click.UsageError(f"--{name} is required")
    args = TrainArguments(**values)
    state = run_training(args)
    if os.environ.get("RANK", "0") == "0":  # under torchrun, one summary
        click.echo(f"{state.step} steps; best dev nDCG@10 {state.best_score:.4f} at step {state.best_step}; run in {args.out}")


@click.command()
@click.option("--run", "runs", multiple=True, required=True, help="Run directory of clirmatrix train; give several bilingual runs with --mixed to merge them.")
@click.option("--data", required=True, type=click.Path(exists=True, file_okay=False), help="Build or download root holding the split.")
@click.option("--split", type=click.Choice(["dev", "test1", "test2"]), default="test1", show_default=True)
@click.option("--dataset", default=None, help="Query set (default: the run's).")
@click.option("--src", default=None, help="Query language(s) (default: the run's); other languages give zero-shot results.")
@click.option("--tgt", default=None, help="Document language(s) (default: the run's).")
@click.option("--mixed", is_flag=True, help="MULTI-8 mixed-language retrieval of --src queries over the other 7 languages.")
@click.option("--limit", type=click.IntRange(min=0), default=0, help="Only the first N queries per direction (0 = all).")
@click.option("--out", "out_dir", default=None, help="Where results go (default: RUN/eval).")
@click.option("--device", default="auto", show_default=True)
def evaluate(runs: tuple[str, ...], data: str, split: str, dataset: str | None, src: str | None, tgt: str | None, mixed: bool, limit: int, out_dir: str | None, device: str) -> None:
    """Re-rank a split's candidates with trained runs; nDCG@10, MRR@100 and R@100 as JSON and a table."""
    _require_torch()
    from clirmatrix.models.evaluate import evaluate_mixed, evaluate_run, save_rows
    from clirmatrix.models.metrics import format_table
    from clirmatrix.pipeline.io.localio import check_folder_path

    check_lang_flags(data, {"--src": src, "--tgt": tgt})
    if out_dir:
        check_folder_path(out_dir, "--out")
    if mixed:
        if not src:
            raise click.UsageError("--mixed needs --src (the query language)")
        rows = [evaluate_mixed(runs, data, split, src, limit, device)]
        name = f"multi8.{src}.mixed.{split}"
    else:
        if len(runs) > 1:
            raise click.UsageError("several --run are only merged with --mixed; evaluate runs one at a time otherwise")
        rows = evaluate_run(runs[0], data, split, dataset, src, tgt, limit, device)
        name = f"{rows[0].dataset}.{split}"
    json_path, _ = save_rows(rows, Path(out_dir or Path(runs[0]) / "eval"), name)
    click.echo(format_table(rows))
    click.echo(f"results: {json_path}")


# The settings a reproduction may change; data, init, out, dataset and directions are the command's.
REPRODUCE_SETTINGS = (
    "model", "loss", "epochs", "steps_per_epoch", "batch_size", "grad_accum", "lr", "head_lr", "warmup_steps", "max_len",
    "dev_queries", "eval_batch_size", "workers", "prefetch", "seed", "device", "bf16", "cache_dir",
)


_REPRODUCE_PATHS = (
    click.option("--data", required=True, type=click.Path(exists=True, file_okay=False), help="Build or download root."),
    click.option("--init", required=True, help="Local HuggingFace model directory every run starts from (the dissertation: bert-base-multilingual-cased)."),
    click.option("--runs", required=True, type=click.Path(file_okay=False), help="Folder of the runs (RUNS/<name>), cached evaluations (RUNS/eval) and tables (RUNS/tables)."),
    click.option("--limit", type=click.IntRange(min=0), default=0, help="Evaluate only the first N test1 queries per direction (0 = all, as the paper)."),
)


def _reproduce_options(function):
    function = _field_options(REPRODUCE_SETTINGS, aliases={"steps_per_epoch": "--steps"})(function)
    for option in reversed(_REPRODUCE_PATHS):
        function = option(function)
    return function


@click.group()
def reproduce() -> None:
    """Train, evaluate and tabulate the dissertation's CLIRMatrix baselines (Tables 7.6, 7.8, 7.9) beside its figures; reruns resume."""


@reproduce.command("multi8")
@click.option("--langs", default=None, help="MULTI-8 languages to use, comma-separated (default: all 8: 56 bilingual runs and 1 multilingual).")
@_reproduce_options
def reproduce_multi8_command(data: str, init: str, runs: str, limit: int, langs: str | None, **settings) -> None:
    """Tables 7.8 and 7.9: a bilingual run per direction and a multilingual run, single- and mixed-language test1 results."""
    _require_torch()
    from clirmatrix.models.reproduce import reproduce_multi8

    summary = reproduce_multi8(data, init, runs, TrainArguments(**settings), langs=langs, limit=limit)
    _show_summary(summary)


@reproduce.command("bi139")
@click.option("--src", default="en", show_default=True, help="Query language (the dissertation's Table 7.6: en).")
@click.option("--tgt", default=None, help="Document languages, comma-separated (default: every BI-139 base target of --src in --data).")
@_reproduce_options
def reproduce_bi139_command(data: str, init: str, runs: str, limit: int, src: str, tgt: str | None, **settings) -> None:
    """Table 7.6: a bilingual run per BI-139 base direction, test1 results beside the dissertation's."""
    _require_torch()
    from clirmatrix.models.reproduce import reproduce_bi139

    summary = reproduce_bi139(data, init, runs, TrainArguments(**settings), src=src, tgt=tgt, limit=limit)
    _show_summary(summary)


def _show_summary(summary: Summary) -> None:
    """Runs trained and reused, evaluations computed and cached, and the files written: what the rerun saved."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="reproduce", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, count in (("runs trained", len(summary.trained)), ("runs reused (finished)", len(summary.reused)),
                        ("evaluations computed", summary.evaluated), ("evaluations from cache", summary.cached), ("files written", len(summary.files))):
        table.add_row(name, f"{count:,}")
    console = Console(width=160)
    console.print(table)
    for path in summary.files:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)
