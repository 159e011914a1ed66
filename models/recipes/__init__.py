"""One training recipe per ``--model`` (docs/models.md §1-5), looked up by name in :data:`RECIPES`."""

from __future__ import annotations

import importlib

# --model name -> "module:class" under clirmatrix.models.recipes; imported on use (torch is heavy).
RECIPES: dict[str, str] = {
    "cross-encoder": "cross_encoder:CrossEncoderRecipe",
    "bi-encoder": "bi_encoder:BiEncoderRecipe",
    "contrastive": "contrastive:ContrastiveRecipe",
    "dap": "dap:DapRecipe",
    "ccp": "ccp:CcpRecipe",
}


def recipe_class(model: str) -> type:
    """The recipe class of a ``--model`` name."""
    if model not in RECIPES:
        raise ValueError(f"unknown model {model!r}; expected one of {', '.join(RECIPES)}")
    module, name = RECIPES[model].split(":")
    return getattr(importlib.import_module(f"clirmatrix.models.recipes.{module}"), name)
