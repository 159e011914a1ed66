"""The pre-trained backbone: loaded from a local directory, pooled into one vector per text.

There is no model hub at run time: ``--init`` names a directory saved with
``save_pretrained`` (config, weights, tokenizer). A run keeps a copy of the config
and tokenizer in ``RUN_DIR/backbone`` so evaluation rebuilds the network without
the original directory.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from clirmatrix.pipeline.errors import MissingInputError

POOLINGS = ("cls", "mean")


class BackboneError(MissingInputError):
    """The ``--init`` directory is missing or is not a HuggingFace model directory."""


def check_model_dir(path: str | Path) -> Path:
    """The directory, or an error saying how to make one on a machine with hub access."""
    path = Path(path)
    hint = (
        "save one where the hub is reachable with\n"
        "  python -c \"from transformers import AutoModelForMaskedLM, AutoTokenizer as T; "
        "n='bert-base-multilingual-cased'; AutoModelForMaskedLM.from_pretrained(n).save_pretrained('DIR'); "
        "T.from_pretrained(n).save_pretrained('DIR')\"\nand copy DIR here"
    )
    if not path.is_dir():
        raise BackboneError(f"model directory {path} does not exist; {hint}")
    if not (path / "config.json").is_file():
        raise BackboneError(f"{path} has no config.json, so it is not a saved HuggingFace model; {hint}")
    return path


# Models whose position ids start after the padding index (RoBERTa's scheme): pad_token_id + 1 positions are never inputs.
_OFFSET_POSITIONS = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert"})


def position_limit(path: str | Path) -> int | None:
    """The most tokens one input may have in the model saved at ``path`` (its config's ``max_position_embeddings``), or None when unknown."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    limit = config.get("max_position_embeddings") if isinstance(config, dict) else None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return None
    if config.get("model_type") in _OFFSET_POSITIONS:
        limit -= int(config.get("pad_token_id") or 0) + 1
    return limit


def load_tokenizer(path: str | Path):
    """The tokenizer saved in a model (or run backbone) directory."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(check_model_dir(path), local_files_only=True)


def load_masked_lm(path: str | Path, weights: bool = True) -> nn.Module:
    """The backbone with its MLM head (DAP's RTL head and CCP's MLM need it); random weights when ``weights`` is False."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    path = check_model_dir(path)
    if weights:
        return AutoModelForMaskedLM.from_pretrained(path, local_files_only=True)
    return AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(path, local_files_only=True))


def base_model(masked_lm: nn.Module) -> nn.Module:
    """The transformer inside a masked-LM model (``.bert``, ``.roberta``, ...)."""
    return getattr(masked_lm, masked_lm.base_model_prefix)


def save_backbone_files(init: str | Path, run_backbone: str | Path) -> None:
    """Copy the config and tokenizer (not the weights) of ``init`` into the run."""
    from transformers import AutoConfig

    run_backbone = Path(run_backbone)
    run_backbone.mkdir(parents=True, exist_ok=True)
    AutoConfig.from_pretrained(check_model_dir(init), local_files_only=True).save_pretrained(run_backbone)
    load_tokenizer(init).save_pretrained(run_backbone)


def pool(states: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``cls``: the first token's vector; ``mean``: the mean over real (unmasked) tokens."""
    if pooling == "cls":
        return states[:, 0]
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(states.dtype)
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    raise ValueError(f"unknown pooling {pooling!r}; expected one of {', '.join(POOLINGS)}")


class Encoder(nn.Module):
    """A transformer plus pooling: a batch of tokenized texts -> one vector each."""

    def __init__(self, transformer: nn.Module, pooling: str) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; expected one of {', '.join(POOLINGS)}")
        self.transformer = transformer
        self.pooling = pooling

    @property
    def hidden_size(self) -> int:
        return self.transformer.config.hidden_size

    def states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Final-layer token states ``[B, S, H]``."""
        return self.transformer(**batch).last_hidden_state

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return pool(self.states(batch), batch["attention_mask"], self.pooling)
