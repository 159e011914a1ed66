"""DAP's translation ranking (TR) and representation translation learning (RTL) losses (docs/models.md §4).

Input for TR: sentence vectors of N pairs (x_i non-English, y_i English).
Input for RTL: the RTL head's vocabulary logits over the English target positions.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from ._common import diagonal_targets, in_fp32, similarity_matrix


@in_fp32
def translation_ranking(x: Tensor, y: Tensor, scale: float = 20.0, similarity: str = "cosine") -> Tensor:
    """L_TR = −(1/N) Σ_i log( exp φ(x_i,y_i) / Σ_j exp φ(x_i,y_j) ) ([DAP] eq. 5, docs/models.md §4).

    The softmax runs over the English side only: term i depends on x_i and all y, never on x_j.

    Args:
        x: [N, H] non-English sentence vectors.
        y: [N, H] English sentence vectors; y[i] translates x[i].
        scale: multiplies the cosine when ``similarity`` is "cosine" (20 = the code's cos/0.05).
        similarity: "cosine" (φ = scale·cos, code, docs/models.md §8.8) or "dot" (φ = xᵀy, paper;
            ``scale`` is then unused).

    Returns:
        Scalar mean loss.

    Raises:
        ValueError: unknown ``similarity``.
    """
    phi = similarity_matrix(x, y, similarity)
    if similarity == "cosine":
        phi = phi * scale
    return F.cross_entropy(phi, diagonal_targets(x.shape[0], x.device))


@in_fp32
def rtl_loss(logits: Tensor, targets: Tensor, ignore_index: int = -100) -> Tensor:
    """L_RTL: mean token cross-entropy over the non-ignored target positions ([DAP] eq. 6, docs/models.md §4).

    The mean is over all non-ignored tokens of the batch (not per sentence first); padding
    and the target's leading special token should carry ``ignore_index``.

    Args:
        logits: [B, S, V] RTL-head logits.
        targets: [B, S] English token ids, ``ignore_index`` where not scored.
        ignore_index: target value of skipped positions.

    Returns:
        Scalar loss (NaN, as in torch, if every position is ignored).
    """
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=ignore_index)
