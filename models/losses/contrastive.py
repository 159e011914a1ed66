"""Semantic (semaCL) and language (langCL) contrastive losses of Hu et al. (docs/models.md §3, [H] eqs. 2–3).

Input: passage-encoder embeddings of N parallel pairs (z_a[i], z_b[i]), and for langCL
optionally Q non-parallel sentences. Both losses use cosine similarity.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ._common import cosine_matrix, in_fp32, paired_info_nce


@in_fp32
def semantic_contrastive(z_a: Tensor, z_b: Tensor, temperature: float = 0.05) -> Tensor:
    """semaCL, [H] eq. 2 (docs/models.md §3).

    L = −(1/2N) Σ_(i,j) [log(e^{cos(z_i,z_j)/τ} / Σ_{k≠i} e^{cos(z_i,z_k)/τ}) + (same with i, j swapped)],
    k running over all 2N items but the anchor, so the positive is in the denominator.

    Args:
        z_a: [N, H] one side of the pairs.
        z_b: [N, H] the other side; (z_a[i], z_b[i]) is a pair.
        temperature: τ (unreported in [H]; 0.05 is our choice, docs/models.md §8.6).

    Returns:
        Scalar loss.
    """
    return paired_info_nce(z_a, z_b, temperature)


@in_fp32
def language_contrastive(z_a: Tensor, z_b: Tensor, z_extra: Tensor | None = None) -> Tensor:
    """langCL, [H] eq. 3 with docs/models.md §3's normalisation.

    For each pair (i, j) and each other item k of B = {z_a, z_b, z_extra} \\ {i, j},
    with a = exp(cos(z_i,z_k)), b = exp(cos(z_j,z_k)), the term is
    −[log(a/(a+b)) + log(b/(a+b))]. The sum is divided by 2C, C being the number of
    (pair, k) terms, so the minimum (all cosines tied) is exactly ln 2. No temperature.

    Args:
        z_a: [N, H] one side of the parallel pairs.
        z_b: [N, H] the other side.
        z_extra: optional [Q, H] non-parallel sentences (only ever a k).

    Returns:
        Scalar loss ≥ ln 2.

    Raises:
        ValueError: the sides differ in shape, or there is no k (one pair and no z_extra).
    """
    if z_a.shape != z_b.shape:
        raise ValueError(f"pair sides differ in shape: {tuple(z_a.shape)} vs {tuple(z_b.shape)}")
    n = z_a.shape[0]
    parts = [z_a, z_b] if z_extra is None else [z_a, z_b, z_extra]
    z_all = torch.cat(parts, dim=0)
    n_terms = n * (z_all.shape[0] - 2)
    if n_terms <= 0:
        raise ValueError("langCL needs at least one item k besides each pair (2 pairs, or z_extra)")
    # [N, 2N+Q]: differences cos(z_i,z_k) − cos(z_j,z_k) for pair (i, j) and item k.
    diff = cosine_matrix(z_a, z_all) - cosine_matrix(z_b, z_all)
    # −log(a/(a+b)) = softplus(cos_j − cos_i), −log(b/(a+b)) = softplus(cos_i − cos_j).
    terms = F.softplus(diff) + F.softplus(-diff)
    rows = torch.arange(n, device=z_all.device)
    keep = torch.ones_like(terms, dtype=torch.bool)
    keep[rows, rows] = False
    keep[rows, rows + n] = False
    return (terms * keep).sum() / (2 * n_terms)
