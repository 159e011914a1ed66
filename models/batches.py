"""The data path of training: micro-batches drawn ahead of the model, in DataLoader workers.

Micro-batch ``i`` of a run is micro-batch ``i % grad_accum`` of optimizer step
``i // grad_accum``. ``Recipe.draw`` makes it from generators seeded by ``(seed, rank,
step, index)`` and ``(seed, step, index)`` alone, so the same ``i`` gives the same batch
in the main process or any worker: 0, 1 or 8 workers train the same model, and a resumed run starts its loader at the first
micro-batch of the step it resumes at. Workers read the stores (fork-safe) and tokenise;
the batches come back as CPU tensors, pinned when the model is on a GPU, and move to it
without blocking.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from clirmatrix.models.arguments import TrainArguments
from clirmatrix.models.recipes.base import Batch, Recipe

AUTO_WORKERS_GPU = 4  # --workers -1 on a GPU: enough to keep an H100 fed at mBERT-base sizes (bench/train_bench.py)


def draw_key(seed: int, rank: int, step: int, index: int) -> str:
    """The seed string of a micro-batch's draws (``random.Random`` hashes it with SHA-512)."""
    return f"{seed}:{rank}:{step}:{index}"


def dropout_seed(seed: int, rank: int, step: int, index: int) -> int:
    """The torch seed of a micro-batch's forward pass (dropout), apart from its draws."""
    return random.Random(draw_key(seed, rank, step, index) + ":dropout").getrandbits(63)


class MicroBatches(Dataset):
    """Every micro-batch of a run, by number; drawing one needs nothing but the recipe's stores."""

    def __init__(self, recipe: Recipe, args: TrainArguments, rank: int = 0) -> None:
        self.recipe, self.seed, self.rank = recipe, args.seed, rank
        self.grad_accum = args.grad_accum
        self.micro = args.batch_size // args.grad_accum
        self.total = args.epochs * args.steps_per_epoch * args.grad_accum

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, number: int) -> Batch:
        step, index = divmod(number, self.grad_accum)
        own = random.Random(draw_key(self.seed, self.rank, step, index))
        shared = random.Random(draw_key(self.seed, -1, step, 0))  # the same in every process and micro-batch of the step
        return self.recipe.draw(own, self.micro, step, shared)


def worker_count(args: TrainArguments, device: torch.device) -> int:
    """``--workers``, or for -1 (auto) ``AUTO_WORKERS_GPU`` on a GPU (at most the spare cores) and none on a CPU."""
    if args.workers >= 0:
        return args.workers
    if device.type != "cuda":
        return 0  # the CPU is the model's: workers would only take its cores
    return max(0, min(AUTO_WORKERS_GPU, (os.cpu_count() or 1) - 1))


def micro_batches(recipe: Recipe, args: TrainArguments, rank: int, first: int) -> Iterator[Batch]:
    """Micro-batches ``first``, ``first + 1``, ... of the run, from worker processes when ``--workers`` gives any."""
    dataset = MicroBatches(recipe, args, rank)
    workers = worker_count(args, recipe.device)
    if workers == 0:
        return (dataset[number] for number in range(first, len(dataset)))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # forked workers tokenise one batch each instead
    loader = DataLoader(
        dataset,
        batch_size=None,  # each item is a whole micro-batch
        sampler=range(first, len(dataset)),
        num_workers=workers,
        prefetch_factor=args.prefetch,
        pin_memory=recipe.device.type == "cuda",
        multiprocessing_context="fork",  # workers share the loaded stores and tokenizer; the model stays unused in them
    )
    return iter(loader)


def to_device(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor on ``device`` (copied without blocking when pinned)."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(value, device) for value in batch)
    return batch
