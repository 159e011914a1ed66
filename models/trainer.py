"""The training loop, and only the loop: steps, accumulation, checkpoints, dev selection.

Reproducible and resumable by construction: the examples and the dropout of step
``n`` are drawn from generators seeded by ``(seed, rank, n)`` (``batches``), so a run
resumed from any checkpoint takes exactly the steps an uninterrupted run would have
taken, with any number of DataLoader workers.

The loop never waits on the GPU between steps: losses stay on the device, summed,
and reach the host (with the check that they are finite) every ``SYNC_STEPS`` steps,
at the end of an epoch and before a checkpoint, so no checkpoint holds weights a
non-finite loss has touched.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from clirmatrix.models import distributed
from clirmatrix.models.arguments import TrainArguments
from clirmatrix.models.batches import dropout_seed, micro_batches, to_device
from clirmatrix.models.recipes.base import Batch, Recipe
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.localio import atomic_write

CHECKPOINTS = "checkpoints"
BEST = "best"
SYNC_STEPS = 10  # optimizer steps between the loss sums' trips to the host


@dataclass
class TrainState:
    """Progress saved in every checkpoint and as ``state.json`` when training ends."""

    step: int = 0
    best_score: float = -math.inf
    best_step: int = 0
    history: list[dict] = field(default_factory=list)  # one entry per epoch: mean losses, dev score
    done: bool = False
    stopped_early: bool = False  # --patience evaluations passed without a better dev score


def decay_groups(groups: list[dict], weight_decay: float) -> list[dict]:
    """Each optimizer group split in two: weight decay on matrices, none on biases and LayerNorm weights.

    As BERT's, sentence-transformers' and the DPR code's optimizers do: decaying a bias
    or a norm's scale only pulls it towards zero, with nothing to regularise.
    """
    split = []
    for group in groups:
        matrices = [p for p in group["params"] if p.ndim > 1]
        vectors = [p for p in group["params"] if p.ndim <= 1]
        split += [{**group, "params": params, "weight_decay": decay} for params, decay in ((matrices, weight_decay), (vectors, 0.0)) if params]
    return split


def save_torch(obj: object, path: Path) -> None:
    """``torch.save`` through ``atomic_write``: a killed run leaves no truncated file."""
    with atomic_write(path) as handle:
        torch.save(obj, handle)


class Trainer:
    """Runs a recipe's steps: ``epochs`` x ``steps_per_epoch`` optimizer steps of ``batch_size`` examples."""

    def __init__(
        self,
        recipe: Recipe,
        args: TrainArguments,
        run_dir: Path,
        dev_score: Callable[[], float],
        process: distributed.Process = distributed.Process(),
    ) -> None:
        if args.batch_size % args.grad_accum:
            raise ValueError(f"--batch-size {args.batch_size} is not a multiple of --grad-accum {args.grad_accum}")
        if args.keep_checkpoints < 1:
            raise InvalidInputError(f"--keep-checkpoints must be at least 1, got {args.keep_checkpoints}")
        self.recipe = recipe
        self.args = args
        self.run_dir = run_dir
        self.dev_score = dev_score
        self.process = process
        groups = recipe.param_groups()
        self.parameters = [p for group in groups for p in group["params"]]
        # fused on a GPU: one kernel for the whole update, none of foreach's per-step host work (docs/benchmarks.md)
        self.optimizer = torch.optim.AdamW(decay_groups(groups, args.weight_decay), eps=1e-8, fused=recipe.device.type == "cuda")
        self.total_steps = args.epochs * args.steps_per_epoch
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._rate)
        self.state = TrainState()
        self.use_bf16 = args.bf16 and recipe.device.type == "cuda"
        self._last_checkpoint = time.monotonic()

    def _rate(self, step: int) -> float:
        """Linear warm-up then linear decay to 0; constant when there is no warm-up."""
        warmup = self.args.warmup_steps
        if warmup <= 0:
            return 1.0
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (self.total_steps - step) / max(1, self.total_steps - warmup))

    # -- checkpoints -------------------------------------------------------------------

    def latest_checkpoint(self) -> Path | None:
        found = sorted((self.run_dir / CHECKPOINTS).glob("step-*/state.pt"))
        return found[-1] if found else None

    def resume(self) -> bool:
        """Load the newest checkpoint of this run, if there is one."""
        path = self.latest_checkpoint()
        if path is None:
            return False
        saved = torch.load(path, map_location=self.recipe.device, weights_only=False)
        self.recipe.module.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.recipe.load_extra_state(saved["extra"])
        self.state = TrainState(**saved["state"])
        return True

    def checkpoint(self) -> None:
        if not self.process.main:
            return
        saved = {
            "model": self.recipe.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "extra": self.recipe.extra_state(),
            "state": asdict(self.state),
        }
        save_torch(saved, self.run_dir / CHECKPOINTS / f"step-{self.state.step:08d}" / "state.pt")
        for old in sorted((self.run_dir / CHECKPOINTS).glob("step-*"))[: -self.args.keep_checkpoints]:
            shutil.rmtree(old)

    def checkpoint_due(self, syncing: bool) -> bool:
        """Every ``--save-steps`` steps, or once ``--save-minutes`` have passed: a full mBERT checkpoint is ~2 GB.

        Under torchrun rank 0's clock decides for every rank, so all of them reach the
        barrier together; it is read only at steps that sync anyway (``syncing``), since
        asking every step would add a collective to every step.
        """
        args = self.args
        due = bool(args.save_steps) and self.state.step % args.save_steps == 0
        if args.save_minutes and (syncing or self.process.world == 1):
            late = time.monotonic() - self._last_checkpoint >= 60 * args.save_minutes
            if self.process.world > 1:
                late = distributed.broadcast_float(float(late), self.process, self.recipe.device) > 0.5
            due = due or late
        if due:
            self._last_checkpoint = time.monotonic()
        return due

    def save_best(self) -> None:
        if self.process.main:
            save_torch({"model": self.recipe.module.state_dict(), "extra": self.recipe.extra_state()}, self.run_dir / BEST / "model.pt")

    # -- the loop ------------------------------------------------------------------------

    def step(self, batches: Iterator[Batch]) -> dict[str, torch.Tensor]:
        """One optimizer step over the next ``grad_accum`` micro-batches.

        Returns the step's losses as device tensors: reading them is the caller's sync.
        """
        args = self.args
        self.recipe.module.train()
        micro = [to_device(next(batches), self.recipe.device) for _ in range(args.grad_accum)]
        totals = self.backward(micro)
        distributed.average_gradients(self.parameters, self.process)
        torch.nn.utils.clip_grad_norm_(self.parameters, args.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.step += 1
        return totals

    def backward(self, micro: list[Batch]) -> dict[str, torch.Tensor]:
        """The gradients of one step's micro-batches (on the device), added to the parameters'; the step's mean loss terms.

        With ``--grad-cache`` (the default) and several micro-batches, a recipe with
        in-batch losses has them computed over the whole batch by gradient caching
        (``_cached_backward``); otherwise each micro-batch back-propagates its own loss
        terms as they come (their negatives are the micro-batch's).
        """
        if self.args.grad_cache and len(micro) > 1:
            cached = self._cached_backward(micro)
            if cached is not None:
                return cached
        totals: dict[str, torch.Tensor] = {}
        for index, batch in enumerate(micro):
            torch.manual_seed(self._dropout_seed(index))
            with self._autocast():
                for terms in self.recipe.losses(batch, self.state.step):
                    total = sum(self.recipe.weight(name) * loss for name, loss in terms.items())
                    (total / len(micro)).backward()
                    for name, loss in terms.items():
                        totals[name] = totals.get(name, 0.0) + loss.detach().double() / len(micro)
        return totals

    def _cached_backward(self, micro: list[Batch]) -> dict[str, torch.Tensor] | None:
        """Gradient caching (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup").

        1. Each micro-batch's vectors without autograd (``Recipe.vectors``); 2. the
        in-batch losses over all of them at once, back-propagated to the vectors alone
        (``Recipe.batch_losses``: the whole batch's negatives, gathered over the
        processes as without caching); 3. each micro-batch again with autograd, its
        vectors back-propagated with the gradient step 2 left on them, with its local
        terms. Only one micro-batch's activations are ever held. Each micro-batch's
        forward passes draw the same dropout (one seed), so the gradients are those of
        the whole batch computed at once. None: the recipe's losses are not in-batch.
        """
        step = self.state.step
        parts = []
        with torch.no_grad():
            for index, batch in enumerate(micro):
                torch.manual_seed(self._dropout_seed(index))
                with self._autocast():
                    found = self.recipe.vectors(batch, step)
                if found is None:
                    return None
                parts.append(found[0])
        whole = {name: torch.cat([part[name] for part in parts]).float().requires_grad_() for name in parts[0]}
        with self._autocast():
            terms = self.recipe.batch_losses(whole, micro[0], step)
        sum(self.recipe.weight(name) * loss for name, loss in terms.items()).backward()
        totals = {name: loss.detach().double() for name, loss in terms.items()}
        start = dict.fromkeys(whole, 0)
        for index, (batch, part) in enumerate(zip(micro, parts)):
            torch.manual_seed(self._dropout_seed(index))
            with self._autocast():
                vectors, local = self.recipe.vectors(batch, step, local=True)
                # a vector no loss used has no gradient, and nothing to pass back
                terms = [(vectors[name].float() * whole[name].grad[start[name] : start[name] + len(part[name])]).sum() for name in whole if whole[name].grad is not None]
                for name, loss in local.items():
                    terms.append(self.recipe.weight(name) * loss / len(micro))
                    totals[name] = totals.get(name, 0.0) + loss.detach().double() / len(micro)
            if terms:
                sum(terms).backward()
            for name in whole:
                start[name] += len(part[name])
        return totals

    def _dropout_seed(self, index: int) -> int:
        return dropout_seed(self.args.seed, self.process.rank, self.state.step, index)

    def _autocast(self) -> torch.autocast:
        return torch.autocast(device_type=self.recipe.device.type, dtype=torch.bfloat16, enabled=self.use_bf16)

    def train(self, progress: Callable[[int, int, dict[str, float]], None] | None = None) -> TrainState:
        """Train to the end (or from the last checkpoint to the end); returns the final state."""
        args = self.args
        batches = micro_batches(self.recipe, args, self.process.rank, first=self.state.step * args.grad_accum)
        epoch_sums: dict[str, torch.Tensor] = {}
        synced_at = self.state.step
        started = time.perf_counter()
        while self.state.step < self.total_steps and not self.state.stopped_early:
            for name, value in self.step(batches).items():
                epoch_sums[name] = epoch_sums.get(name, 0.0) + value
            epoch_end = self.state.step % args.steps_per_epoch == 0
            syncing = epoch_end or self.state.step % SYNC_STEPS == 0 or self.state.step == self.total_steps
            checkpoint = self.checkpoint_due(syncing)
            if not (syncing or checkpoint):
                continue
            epoch_losses = self._read(epoch_sums, synced_at)
            synced_at = self.state.step
            if progress:
                progress(self.state.step, self.total_steps, epoch_losses)
            if epoch_end:
                self._end_epoch(epoch_losses, started)
                epoch_sums = {}
            if checkpoint:
                self.checkpoint()
                distributed.barrier(self.process)
        self.state.done = True
        return self.state

    def _read(self, sums: dict[str, torch.Tensor], since: int) -> dict[str, float]:
        """The loss sums on the host (one sync); a non-finite one stops the run before anything is saved."""
        values = dict(zip(sums, torch.stack(list(sums.values())).tolist())) if sums else {}
        bad = [name for name, value in values.items() if not math.isfinite(value)]
        if bad:
            raise FloatingPointError(f"steps {since + 1}-{self.state.step}: loss {', '.join(bad)} is not finite; lower --lr or check the data")
        return values

    def _end_epoch(self, losses: dict[str, float], started: float) -> None:
        """Score dev, keep the best model, and log the epoch."""
        score = self.dev_score()  # every process scores a share of dev and gets the same mean
        if score > self.state.best_score:
            self.state.best_score, self.state.best_step = score, self.state.step
            self.save_best()
        since_best = (self.state.step - self.state.best_step) // self.args.steps_per_epoch
        self.state.stopped_early = bool(self.args.patience) and since_best >= self.args.patience
        entry = {
            "epoch": self.state.step // self.args.steps_per_epoch,
            "step": self.state.step,
            "losses": {name: value / self.args.steps_per_epoch for name, value in sorted(losses.items())},
            "dev_ndcg@10": score,
            "seconds": round(time.perf_counter() - started, 1),
        }
        self.state.history.append(entry)
        if self.process.main:  # rewritten whole, so a resumed run never logs an epoch twice
            with atomic_write(self.run_dir / "log.jsonl") as log:
                log.write("".join(json.dumps(item) + "\n" for item in self.state.history).encode())

    def write_state(self) -> None:
        if self.process.main:
            with atomic_write(self.run_dir / "state.json") as out:
                out.write(json.dumps(asdict(self.state), indent=2).encode() + b"\n")
