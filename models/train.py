"""``clirmatrix train``: check the inputs, seed, build the recipe, train, keep the best model.

A run directory holds ``args.json`` (the resolved settings), ``backbone/`` (config
and tokenizer of ``--init``, no weights), ``checkpoints/`` (the last two, for
resuming), ``best/model.pt`` (best dev nDCG@10), ``log.jsonl`` (one line per epoch)
and ``state.json`` once training ends. Rerunning the same command resumes; other
settings in a used directory need ``--overwrite``.

``--init`` is a HuggingFace model directory or another run's directory: that run's
best encoder is exported once as a model directory (``RUN_DIR/export``, redone when
``best/model.pt`` changes) and training starts from it, e.g. DPR fine-tuning from a
CCP run as the CCP paper does.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from clirmatrix.models import distributed
from clirmatrix.models.arguments import TrainArguments, check_lang_flags
from clirmatrix.models.evaluate import BACKBONE, dev_score, load_run
from clirmatrix.models.modeling.encoder import check_model_dir, position_limit, save_backbone_files
from clirmatrix.models.recipes import recipe_class
from clirmatrix.models.trainer import BEST, Trainer, TrainState
from clirmatrix.pipeline.errors import InvalidInputError, MissingInputError
from clirmatrix.pipeline.io.localio import check_folder_path, md5_of
from clirmatrix.pipeline.output.layout import refuse_incomplete

LOG = logging.getLogger("clirmatrix")
ARGS = "args.json"
EXPORT = "export"  # a run's best encoder as a model directory, for runs that start from it
EXPORTED_FROM = "exported-from.json"


class RunDirError(InvalidInputError):
    """The run directory holds a different run."""


def prepare_run_dir(args: TrainArguments, process: distributed.Process) -> None:
    """Make ``args.out`` ready on rank 0 (resume when it holds this very run); others wait."""
    if process.main:
        _prepare(args)
    distributed.barrier(process)


def changed_settings(args: TrainArguments, saved: Path) -> list[str]:
    """The settings (of ``fingerprint``) in which ``args`` differ from the run saved as ``saved`` (its ``args.json``)."""
    mine, theirs = args.resolved().fingerprint(), TrainArguments.load(saved).resolved().fingerprint()
    return sorted(name for name, value in mine.items() if theirs.get(name) != value)


def _prepare(args: TrainArguments) -> None:
    run_dir = Path(args.out)
    saved = run_dir / ARGS
    if saved.is_file():
        changed = changed_settings(args, saved)
        if not changed:
            return
        if not args.overwrite:
            raise RunDirError(f"{run_dir} holds a run with other settings ({', '.join(changed)}); pass --overwrite to replace it or choose another --out")
    elif run_dir.is_dir() and any(run_dir.iterdir()) and not args.overwrite:
        raise RunDirError(f"{run_dir} is not empty and holds no run; pass --overwrite or choose another --out")
    if run_dir.is_dir():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    save_backbone_files(args.init, run_dir / BACKBONE)
    args.save(saved)


class MaxLenError(InvalidInputError):
    """``--max-len`` is longer than the model's position embeddings allow."""


def fit_max_len(max_len: int, given: bool, model_dir: str | Path, model: str, note: bool = True) -> int:
    """``max_len`` within the positions of the model in ``model_dir``: a default longer than them is cut to them, with
    a logged note; a ``--max-len`` the user gave that is longer is a ``MaxLenError`` (it would fail at the first long input)."""
    limit = position_limit(model_dir)
    if limit is None or max_len <= limit:
        return max_len
    if given:
        raise MaxLenError(f"--max-len {max_len} is longer than the {limit} positions of the model in {model_dir} (max_position_embeddings); give --max-len {limit} or less")
    if note:
        LOG.warning("note: --max-len %d, not the %s default %d: the model in %s has %d positions (max_position_embeddings)", limit, model, max_len, model_dir, limit)
    return limit


def init_dir(init: str) -> str:
    """The model directory ``--init`` stands for: a run directory's export (``resolve_init`` makes it), else ``init`` itself."""
    return str(Path(init) / EXPORT) if (Path(init) / ARGS).is_file() else init


def resolve_init(init: str) -> str:
    """``--init`` as a model directory: a run directory's best encoder is exported first (see the module docstring)."""
    run_dir = Path(init)
    if not (run_dir / ARGS).is_file():
        return init
    best = run_dir / BEST / "model.pt"
    if not best.is_file():
        raise MissingInputError(f"--init {run_dir} is a run without a best model ({best}): it has not finished an epoch")
    with open(best, "rb") as handle:
        source = {"run": str(run_dir.resolve()), "best_md5": md5_of(handle)}
    export = run_dir / EXPORT
    stamp = export / EXPORTED_FROM
    if stamp.is_file() and json.loads(stamp.read_text()) == source:
        return str(export)
    recipe = load_run(run_dir, device="cpu")
    partial = Path(tempfile.mkdtemp(prefix=f".{EXPORT}.", dir=run_dir))
    try:
        recipe.export_masked_lm().save_pretrained(partial)
        recipe.tokenizer.save_pretrained(partial)
        (partial / EXPORTED_FROM).write_text(json.dumps(source) + "\n")
        shutil.rmtree(export, ignore_errors=True)
        os.replace(partial, export)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return str(export)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def run_training(args: TrainArguments, show_progress: bool = True) -> TrainState:
    """Train (or resume) a run; returns its final state."""
    max_len_given = args.max_len is not None
    args = args.resolved()
    if not Path(args.data).is_dir():
        raise MissingInputError(f"--data {args.data} is not a folder; build one with clirmatrix build or fetch one with clirmatrix download")
    refuse_incomplete(args.data)  # before the run folder is made: nothing is left behind
    if not args.out:
        raise InvalidInputError("--out (the run directory) is required")
    check_folder_path(args.out, "--out")
    check_lang_flags(args.data, {"--src": args.src, "--tgt": args.tgt})
    process, device = distributed.start(args.device)
    if process.main:  # one rank exports a run given as --init; the others find it done
        args.init = resolve_init(args.init)
    distributed.barrier(process)
    if not process.main:
        args.init = init_dir(args.init)
    check_model_dir(args.init)
    args.max_len = fit_max_len(args.max_len, max_len_given, args.init, args.model, note=process.main)  # before args.json is written
    prepare_run_dir(args, process)
    run_dir = Path(args.out)
    seed_everything(args.seed)
    recipe = recipe_class(args.model)(args, args.init, device)
    trainer = Trainer(recipe, args, run_dir, dev_score=lambda: dev_score(recipe, process), process=process)
    resumed_at = trainer.state.step if trainer.resume() else None
    with _progress(show_progress and process.main, trainer.total_steps, args.steps_per_epoch, resumed_at) as update:
        state = trainer.train(update)
    distributed.barrier(process)  # rank 0 may still be writing the best model
    best = torch.load(run_dir / BEST / "model.pt", map_location=device, weights_only=False)
    recipe.module.load_state_dict(best["model"])
    recipe.load_extra_state(best["extra"])
    if process.main:
        recipe.finish(run_dir)
    trainer.write_state()
    distributed.barrier(process)
    return state


class _progress:
    """A rich progress bar of optimizer steps with the running mean losses; silent when off."""

    def __init__(self, enabled: bool, total: int, steps_per_epoch: int, resumed_at: int | None) -> None:
        self.enabled, self.total, self.steps_per_epoch, self.resumed_at = enabled, total, steps_per_epoch, resumed_at
        self.bar = None

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("training"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), TextColumn("{task.fields[losses]}"))
        self.bar.start()
        self.task = self.bar.add_task("train", total=self.total, completed=self.resumed_at or 0, losses="")
        return self.update

    def update(self, step: int, total: int, epoch_losses: dict[str, float]) -> None:
        in_epoch = (step - 1) % self.steps_per_epoch + 1
        text = " ".join(f"{name} {value / in_epoch:.4f}" for name, value in epoch_losses.items())
        self.bar.update(self.task, completed=step, losses=text)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
