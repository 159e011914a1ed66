"""The mBERT cross-encoder ranker (docs/models.md §1): s(q, d) = wᵀ dropout(h_CLS) + b."""

from __future__ import annotations

import torch
from torch import nn

from clirmatrix.models.modeling.encoder import pool


class CrossEncoder(nn.Module):
    """A transformer reading ``[CLS] q [SEP] d [SEP]`` and a linear score on its CLS vector.

    ``pooling="mean"`` scores the mean token vector instead (for models without a trained CLS).
    """

    def __init__(self, transformer: nn.Module, pooling: str = "cls", dropout: float = 0.1) -> None:
        super().__init__()
        self.transformer = transformer
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.score = nn.Linear(transformer.config.hidden_size, 1)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """One score per tokenized pair, shape ``[B]``."""
        states = self.transformer(**batch).last_hidden_state
        pooled = pool(states, batch["attention_mask"], self.pooling)
        with torch.autocast(device_type=pooled.device.type, enabled=False):  # the score in fp32: bf16 rounds it to 8 bits
            return self.score(self.dropout(pooled.float())).squeeze(-1)
