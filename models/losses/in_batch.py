"""DPR in-batch negative log-likelihood L_IR (docs/models.md §2b, [H] eq. 1).

Input: N query vectors and M ≥ N passage vectors; passage i is query i's positive and
every one of the M passages (the other positives and the hard negatives) is a candidate.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from ._common import diagonal_targets, in_fp32, similarity_matrix


@in_fp32
def in_batch_nll(q: Tensor, p: Tensor, similarity: str = "dot", temperature: float = 1.0) -> Tensor:
    """−(1/N) Σ_i log( exp(sim(q_i,p_i)/T) / Σ_{m=1..M} exp(sim(q_i,p_m)/T) ) (docs/models.md §2b).

    Args:
        q: [N, H] query vectors.
        p: [M, H] passage vectors, M ≥ N; p[i] is the positive of q[i] (e.g. the N
            positives followed by the N hard negatives).
        similarity: "dot" (DPR code, docs/models.md §8.6 default) or "cosine" ([H] eq. 1).
        temperature: T dividing the similarities (1 = none).

    Returns:
        Scalar mean negative log-likelihood.

    Raises:
        ValueError: unknown ``similarity``, or fewer passages than queries.
    """
    if p.shape[0] < q.shape[0]:
        raise ValueError(f"need at least as many passages as queries, got {p.shape[0]} < {q.shape[0]}")
    scores = similarity_matrix(q, p, similarity) / temperature
    return F.cross_entropy(scores, diagonal_targets(q.shape[0], q.device))
