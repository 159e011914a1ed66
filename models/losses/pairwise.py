"""Pairwise ranking losses of the mBERT cross-encoder (docs/models.md §1, ambiguity §8.1).

Input: the scores s+ = s(q_p, d+_p) and s− = s(q_p, d−_p) of P (query, positive, negative)
triples, as two tensors of the same shape (typically [P]).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._common import in_fp32


@in_fp32
def pairwise_hinge(pos: Tensor, neg: Tensor, margin: float = 1.0) -> Tensor:
    """Hinge loss (1/P) Σ_p max(0, margin − s+_p + s−_p) ([D] eq. 5.4, docs/models.md §1).

    Args:
        pos: [P] scores of the positives.
        neg: [P] scores of the negatives.
        margin: the margin (1 in docs/models.md §1).

    Returns:
        Scalar mean loss.
    """
    return torch.clamp(margin - pos + neg, min=0).mean()


@in_fp32
def pairwise_softmax(pos: Tensor, neg: Tensor) -> Tensor:
    """CEDR's pairwise softmax loss (1/P) Σ_p [1 − exp(s+)/(exp(s+) + exp(s−))] (docs/models.md §1).

    Computed stably as sigmoid(s− − s+), which is the same quantity.

    Args:
        pos: [P] scores of the positives.
        neg: [P] scores of the negatives.

    Returns:
        Scalar mean loss in (0, 1); 0.5 when the two scores are equal.
    """
    return torch.sigmoid(neg - pos).mean()
