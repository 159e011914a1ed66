"""torchrun support without wrapping models: each process trains on its own draws and the
gradients are averaged before every optimizer step.

Averaging gradients by hand (rather than ``DistributedDataParallel``) works for every
recipe, including those that call sub-modules directly or run several forward passes
per step; it all-reduces flattened buckets of ``BUCKET_ELEMENTS`` values, as DDP does,
not one parameter at a time. In-batch losses see every process's examples: ``gather``
concatenates a tensor over the processes with gradients flowing back to each one's own
rows, every process computes the same whole-batch loss, and the averaged gradients are
exactly that loss's. A single process needs none of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Process:
    """This process's place in the job: rank 0 of 1 unless started by torchrun."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def start(device: str) -> tuple[Process, torch.device]:
    """Join the torchrun group when ``WORLD_SIZE`` > 1 and pick this process's device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    process = Process(int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0")))
    chosen = pick_device(device, process.local_rank)
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    return process, chosen


def pick_device(device: str, local_rank: int = 0) -> torch.device:
    """``auto`` = this process's CUDA GPU when there is one, else the CPU."""
    if device == "auto":
        return torch.device(f"cuda:{local_rank}") if torch.cuda.is_available() else torch.device("cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: no CUDA GPU is visible to torch {torch.__version__}")
    return chosen


BUCKET_ELEMENTS = 1 << 24  # values all-reduced at once (64 MB of fp32; DDP's default bucket is 25 MB)


def average_gradients(parameters: list[torch.nn.Parameter], process: Process) -> None:
    """Mean of every gradient over the processes, a flattened bucket per collective (no-op when alone)."""
    if process.world == 1:
        return
    bucket: list[torch.Tensor] = []
    filled = 0
    for parameter in parameters:
        if parameter.grad is None:
            parameter.grad = torch.zeros_like(parameter)
        if bucket and (filled + parameter.grad.numel() > BUCKET_ELEMENTS or parameter.grad.dtype != bucket[0].dtype):
            _reduce_bucket(bucket, process)
            bucket, filled = [], 0
        bucket.append(parameter.grad)
        filled += parameter.grad.numel()
    if bucket:
        _reduce_bucket(bucket, process)


def _reduce_bucket(grads: list[torch.Tensor], process: Process) -> None:
    flat = torch.cat([grad.reshape(-1) for grad in grads])
    torch.distributed.all_reduce(flat)
    flat /= process.world
    for grad, part in zip(grads, flat.split([grad.numel() for grad in grads])):
        grad.copy_(part.view_as(grad))


def gather(tensor: torch.Tensor) -> torch.Tensor:
    """Every process's ``tensor`` (same shape everywhere) concatenated in rank order, differentiable; ``tensor`` when alone.

    For in-batch negatives across GPUs: each process computes the loss over the whole
    gathered batch. Autograd's all-gather sums, into each process's own rows, the
    gradients every process computed for them, so after ``average_gradients`` divides by
    the world size the parameters hold exactly the whole-batch loss's gradient.
    """
    if not torch.distributed.is_initialized() or torch.distributed.get_world_size() == 1:
        return tensor
    return _GatherRows.apply(tensor)


def _collective(name: str, before_2_13: str):
    """torch 2.13 renamed the tensor collectives and the old names warn; older torch has only those."""
    return getattr(torch.distributed, name, None) or getattr(torch.distributed, before_2_13)


class _GatherRows(torch.autograd.Function):
    """All-gather along dim 0 forward; backward sums every process's gradient of the rows and keeps this process's own (reduce-scatter)."""

    @staticmethod
    def forward(ctx, tensor: torch.Tensor) -> torch.Tensor:
        world = torch.distributed.get_world_size()
        out = tensor.new_empty((world * tensor.shape[0], *tensor.shape[1:]))
        _collective("all_gather_single", "all_gather_into_tensor")(out, tensor.contiguous())
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        world = torch.distributed.get_world_size()
        mine = grad.new_empty((grad.shape[0] // world, *grad.shape[1:]))
        _collective("reduce_scatter_single", "reduce_scatter_tensor")(mine, grad.contiguous())
        return mine


def gather_objects(value: object, process: Process) -> list[object]:
    """Every process's picklable ``value``, in rank order (this process's own first when alone)."""
    if process.world == 1:
        return [value]
    gathered: list[object] = [None] * process.world
    torch.distributed.all_gather_object(gathered, value)
    return gathered


def broadcast_float(value: float, process: Process, device: torch.device) -> float:
    """Rank 0's ``value`` on every process (the dev score decides the best checkpoint for all)."""
    if process.world == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    torch.distributed.broadcast(tensor, src=0)
    return float(tensor.item())


def barrier(process: Process) -> None:
    """Wait for every process. Not the last thing before exiting right after a collective on a tensor made in Python:
    gloo's barrier holds that work until a gloo thread drops it, which takes the GIL, and a thread asking for the GIL
    while Python shuts down aborts the process (SIGABRT). ``run_training`` ends on two barriers with work between."""
    if process.world > 1:
        torch.distributed.barrier()
