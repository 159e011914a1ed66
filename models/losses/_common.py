"""Pieces shared by the loss modules: fp32 computation, similarity matrices and the paired InfoNCE of semaCL/CCP."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor

SIMILARITIES = ("dot", "cosine")
LossFunction = TypeVar("LossFunction", bound=Callable[..., Tensor])


def in_fp32(loss: LossFunction) -> LossFunction:
    """Compute a loss, and the similarity logits inside it, in fp32 whatever autocast is on.

    Under bf16 autocast a cosine or a score difference keeps 8 bits of mantissa: the hinge
    came out as exactly 0.875 and langCL's minimum as 0.6953125 instead of ln 2. Inputs in
    a lower precision are widened; gradients flow back through the cast.
    """

    @functools.wraps(loss)
    def wrapper(*args, **kwargs):
        def widen(value):
            return value.float() if isinstance(value, Tensor) and value.dtype in (torch.float16, torch.bfloat16) else value  # float64 stays

        device = next((value.device.type for value in (*args, *kwargs.values()) if isinstance(value, Tensor)), "cpu")
        with torch.autocast(device_type=device, enabled=False):
            return loss(*map(widen, args), **{name: widen(value) for name, value in kwargs.items()})

    return wrapper  # type: ignore[return-value]


def cosine_matrix(a: Tensor, b: Tensor) -> Tensor:
    """All cosines cos(a_i, b_j) (docs/models.md §0 notation).

    Args:
        a: [N, H] vectors.
        b: [M, H] vectors.

    Returns:
        [N, M] matrix of cosines.
    """
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).transpose(-2, -1)


def similarity_matrix(a: Tensor, b: Tensor, similarity: str = "dot") -> Tensor:
    """All scores sim(a_i, b_j), with ``similarity`` "dot" (aᵀb) or "cosine".

    Args:
        a: [N, H] vectors.
        b: [M, H] vectors.
        similarity: "dot" or "cosine".

    Returns:
        [N, M] score matrix.

    Raises:
        ValueError: ``similarity`` is neither "dot" nor "cosine".
    """
    if similarity == "dot":
        return a @ b.transpose(-2, -1)
    if similarity == "cosine":
        return cosine_matrix(a, b)
    raise ValueError(f"unknown similarity {similarity!r}; expected one of {SIMILARITIES}")


def diagonal_targets(n: int, device: torch.device) -> Tensor:
    """Class targets 0..n-1: row i's positive is column i."""
    return torch.arange(n, device=device)


def paired_info_nce(z_a: Tensor, z_b: Tensor, temperature: float, bank: Tensor | None = None) -> Tensor:
    """Symmetric InfoNCE over the 2N items of N pairs, with cosine/τ logits.

    Each of the 2N items (z_a rows, then z_b rows) is an anchor whose positive is its
    partner; the denominator holds all other 2N−1 items (positive included) plus, if
    given, every ``bank`` row (detached: no gradient reaches it). Mean over the 2N anchors.

    Args:
        z_a: [N, H] first sides of the pairs.
        z_b: [N, H] second sides; (z_a[i], z_b[i]) is a pair.
        temperature: τ dividing the cosines.
        bank: optional [K, H] extra negatives.

    Returns:
        Scalar loss.
    """
    if z_a.shape != z_b.shape:
        raise ValueError(f"pair sides differ in shape: {tuple(z_a.shape)} vs {tuple(z_b.shape)}")
    n = z_a.shape[0]
    z = torch.cat([z_a, z_b], dim=0)
    logits = cosine_matrix(z, z)
    self_mask = torch.eye(2 * n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, float("-inf"))
    if bank is not None:
        logits = torch.cat([logits, cosine_matrix(z, bank.detach().to(z.dtype))], dim=1)
    partners = diagonal_targets(n, z.device)
    targets = torch.cat([partners + n, partners])
    return F.cross_entropy(logits / temperature, targets)
