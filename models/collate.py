"""Raw text -> padded tensors: the only place that tokenizes (data.py yields strings)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


class Collator:
    """Tokenize texts or (query, document) pairs into padded tensors on ``device``."""

    def __init__(self, tokenizer, max_len: int, max_query_len: int = 20, device: torch.device | str = "cpu", fixed: bool = False) -> None:
        """``fixed``: pad every batch to its full length (a compiled model then sees one shape), not to its longest text."""
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.max_query_len = max_query_len
        self.device = torch.device(device)
        self.padding = "max_length" if fixed else True

    def texts(self, texts: Sequence[str], max_len: int | None = None) -> dict[str, torch.Tensor]:
        """``[CLS] text [SEP]`` per text, cut to ``max_len`` wordpieces."""
        encoded = self.tokenizer(
            list(texts), truncation=True, max_length=max_len or self.max_len, padding=self.padding, return_tensors="pt"
        )
        return self._to_device(encoded)

    def pairs(self, queries: Sequence[str], docs: Sequence[str]) -> dict[str, torch.Tensor]:
        """``[CLS] q [SEP] d [SEP]`` with token types 0/1 (docs/models.md §1): the query is cut to
        ``max_query_len`` wordpieces first, then the document fills the rest of ``max_len``."""
        short_queries = [self.short_query(query) for query in queries]
        encoded = self.tokenizer(
            short_queries, list(docs), truncation="only_second", max_length=self.max_len, padding=self.padding, return_tensors="pt"
        )
        return self._to_device(encoded)

    def short_query(self, query: str) -> str:
        pieces = self.tokenizer.tokenize(query)
        if len(pieces) <= self.max_query_len:
            return query
        return self.tokenizer.convert_tokens_to_string(pieces[: self.max_query_len])

    def _to_device(self, encoded) -> dict[str, torch.Tensor]:
        return {name: tensor.to(self.device) for name, tensor in encoded.items()}
