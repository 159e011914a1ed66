"""CCP contrastive context prediction loss (docs/models.md §5, [CCP] Algorithm 1).

Input: projection-head outputs z = g(h) of N windows of one language (each window's centre
sentence and one other sentence of the window) and that language's memory bank.
"""

from __future__ import annotations

from torch import Tensor

from ._common import in_fp32, paired_info_nce


@in_fp32
def ccp_contrastive(
    z_center: Tensor, z_context: Tensor, bank: Tensor | None = None, temperature: float = 0.1
) -> Tensor:
    """Mean over the 2N anchors a of −log( e^{cos(z_a,z_p)/τ} / Σ_{k ∈ batch ∪ M_L, k≠a} e^{cos(z_a,z_k)/τ} ).

    The z's are L2-normalised here (so cos = dot); an anchor's positive p is its window
    partner, and its negatives are the other 2N−2 batch items and the bank rows. The bank
    is used detached: no gradient flows into it (docs/models.md §5, averaged per §8.9).

    Args:
        z_center: [N, H] head outputs of the window centres.
        z_context: [N, H] head outputs of the partners; z_context[i] shares a window with z_center[i].
        bank: optional [K, H] L2-normalised same-language memory bank.
        temperature: τ (0.1, the best in [CCP] Table 5).

    Returns:
        Scalar loss.
    """
    return paired_info_nce(z_center, z_context, temperature, bank=bank)
