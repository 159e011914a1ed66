"""torchrun support without wrapping models: each process trains on its own draws and the
gradients are averaged before every optimizer step.

Averaging gradients by hand (rather than ``DistributedDataParallel``) works for every
recipe, including those that call sub-modules directly or run several forward passes
per step; a single process needs none of it.
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


def average_gradients(parameters: list[torch.nn.Parameter], process: Process) -> None:
    """Mean of every gradient over the processes (no-op when alone)."""
    if process.world == 1:
        return
    for parameter in parameters:
        if parameter.grad is None:
            parameter.grad = torch.zeros_like(parameter)
        torch.distributed.all_reduce(parameter.grad)
        parameter.grad /= process.world


def broadcast_float(value: float, process: Process, device: torch.device) -> float:
    """Rank 0's ``value`` on every process (the dev score decides the best checkpoint for all)."""
    if process.world == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    torch.distributed.broadcast(tensor, src=0)
    return float(tensor.item())


def barrier(process: Process) -> None:
    if process.world > 1:
        torch.distributed.barrier()
