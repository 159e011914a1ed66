"""Training objectives of docs/models.md, one module per objective; pure functions of tensors."""

from .ccp import ccp_contrastive
from .contrastive import language_contrastive, semantic_contrastive
from .cosine import cosine_regression
from .dap import rtl_loss, translation_ranking
from .in_batch import in_batch_nll
from .pairwise import pairwise_hinge, pairwise_softmax

__all__ = [
    "ccp_contrastive",
    "cosine_regression",
    "in_batch_nll",
    "language_contrastive",
    "pairwise_hinge",
    "pairwise_softmax",
    "rtl_loss",
    "semantic_contrastive",
    "translation_ranking",
]
