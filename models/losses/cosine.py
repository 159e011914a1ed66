"""Sentence-BERT cosine-similarity regression loss of the bi-encoder (docs/models.md §2a, [D] eq. 8.1).

Input: pooled embeddings E(q_b), E(d_b) of B pointwise (q, d, r) triples and their labels r_b.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from ._common import in_fp32


@in_fp32
def cosine_regression(q: Tensor, d: Tensor, labels: Tensor, max_label: int = 6) -> Tensor:
    """(1/B) Σ_b (cos(q_b, d_b) − r_b / r_max)² (docs/models.md §2a).

    Args:
        q: [B, H] query embeddings.
        d: [B, H] document embeddings.
        labels: [B] graded labels r_b (integer or float).
        max_label: r_max, the largest label of the dataset (6 for CLIRMatrix).

    Returns:
        Scalar mean squared error.
    """
    cos = (F.normalize(q, dim=-1) * F.normalize(d, dim=-1)).sum(dim=-1)
    target = labels.to(cos.dtype) / max_label
    return ((cos - target) ** 2).mean()
