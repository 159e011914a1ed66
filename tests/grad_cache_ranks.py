"""Run under torchrun by ``tests/test_train.py``: one step's gradients with gradient caching, each process holding half of one batch.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/grad_cache_ranks.py RELEASE MODEL OUT SIZE
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import torch


def micro_batches_of(batch: dict, size: int, parts: int) -> list[dict]:
    """A drawn batch of ``size`` examples cut into ``parts`` micro-batches laid out as drawn ones are (DPR passages: positives, then negatives)."""
    step = size // parts
    cut = []
    for part in range(parts):
        own = torch.arange(part * step, (part + 1) * step)
        rows = {"passages": torch.cat([own, own + size]), "parallel": torch.cat([own, own + size, own + 2 * size])}
        cut.append({key: {name: tensor[rows.get(key, own)] for name, tensor in value.items()} if isinstance(value, dict) else value for key, value in batch.items()})
    return cut


def without_dropout(recipe) -> None:
    """Dropout off, so that a batch computed at once and a micro-batch at a time draw nothing different."""
    for module in recipe.module.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0


def dpr_trainer(release: str, model: str, out: Path, batch_size: int, grad_accum: int, process=None):
    """A bi-encoder trainer with the in-batch (DPR) loss, dropout off, and the whole batch it is tested on (the same in every process)."""
    from clirmatrix.models import distributed
    from clirmatrix.models.arguments import TrainArguments
    from clirmatrix.models.recipes import recipe_class
    from clirmatrix.models.trainer import Trainer

    args = TrainArguments(model="bi-encoder", loss="in-batch", data=release, init=model, out=str(out), batch_size=batch_size, grad_accum=grad_accum,
                          max_len=64, dev_queries=0).resolved()  # fmt: skip
    recipe = recipe_class(args.model)(args, args.init, torch.device("cpu"))
    without_dropout(recipe)
    trainer = Trainer(recipe, args, out, dev_score=lambda: 0.0, process=process or distributed.Process())
    return trainer, recipe.draw(random.Random(1), 8, 0, random.Random(2))


def main(release: str, model: str, out: str) -> None:
    from clirmatrix.models import distributed

    process, _ = distributed.start("cpu")
    trainer, batch = dpr_trainer(release, model, Path(out), 4, 2, process)
    mine = micro_batches_of(batch, 8, process.world)[process.rank]
    trainer.recipe.module.train()
    trainer.backward(micro_batches_of(mine, 8 // process.world, 2))
    distributed.average_gradients(trainer.parameters, process)
    if process.main:
        torch.save([parameter.grad for parameter in trainer.parameters], Path(out) / "grads.pt")
    distributed.barrier(process)  # neither leaves while the other may still need the connections
    # Then out, without Python's shutdown. The barrier, issued right after the all-reduce, holds that all-reduce's
    # work, and so the tensor made here in Python, until a gloo thread drops it after the barrier ends. Dropping
    # a Python tensor takes the GIL, and a thread that asks for it while Python shuts down is ended, which aborts
    # the process ("terminate called without an active exception", SIGABRT): 3 runs in 20 under load (gdb on a
    # core: ProcessGroupGloo::runLoop -> ~AsyncBarrierWork -> ~AsyncAllreduceWork -> decref -> pthread_exit).
    # The trainer's last barrier follows another barrier, with the model's loading between: nothing to drop.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:4])
