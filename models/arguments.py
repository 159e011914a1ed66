"""Settings of a training run: one dataclass, its fields are the ``clirmatrix train`` flags.

A field left at ``None`` takes its model's default from :data:`MODEL_DEFAULTS`,
which cites the docs/models.md section each value comes from. The resolved settings
are saved as ``args.json`` in the run directory, so ``evaluate`` and a resumed
run see exactly what training saw.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.method.languages import WIKIPEDIA_LANGUAGES, check_langs

MODELS: tuple[str, ...] = ("cross-encoder", "bi-encoder", "contrastive", "dap", "ccp")

# Per-model defaults (docs/models.md section in the comment); everything else is shared.
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    # §1 (CEDR code): Adam, 2e-5 BERT / 1e-3 head, constant rate, 16 pairs per step, 64 steps x 20 epochs, query <= 20 pieces.
    "cross-encoder": {"pooling": "cls", "loss": "hinge", "lr": 2e-5, "head_lr": 1e-3, "batch_size": 16, "steps_per_epoch": 64, "epochs": 20, "max_len": 512},
    # §2a: sentence-transformers fit(): AdamW 2e-5, decay 0.01, linear warm-up and decay; batch 8, 20 epochs; early stopping (§8.11).
    "bi-encoder": {"pooling": "mean", "loss": "cosine", "lr": 2e-5, "weight_decay": 0.01, "batch_size": 8, "steps_per_epoch": 64, "epochs": 20, "max_len": 512, "patience": 20},
    # §2b + §3: DPR dual encoder, batch 48, lr 1e-5, grad clip 2.0, max length 256, linear warm-up and decay; w_s 0.01, w_l 0.001.
    "contrastive": {"pooling": "cls", "loss": "in-batch", "lr": 1e-5, "batch_size": 48, "steps_per_epoch": 64, "epochs": 20, "max_len": 256, "max_grad_norm": 2.0},
    # §4: AdamW 5e-5, batch 1,024 (micro-batches of 128), max length 32, RTL weight 1.0 (paper; the code uses 0.1), 2 RTL layers.
    "dap": {"pooling": "cls", "loss": "tr+rtl", "lr": 5e-5, "batch_size": 1024, "steps_per_epoch": 64, "epochs": 20, "max_len": 32},
    # §5: Adam 3e-5 with warm-up, batch 2,048 in micro-batches of 32 windows, tau 0.1, bank 32,768 per language.
    "ccp": {"pooling": "cls", "loss": "ccp+mlm", "lr": 3e-5, "batch_size": 2048, "steps_per_epoch": 64, "epochs": 20, "max_len": 128},
}

SHARED_DEFAULTS: dict[str, Any] = {"weight_decay": 0.0, "max_grad_norm": 1.0, "patience": 0}

# Linear warm-up over this share of the run's steps, then linear decay to 0 (docs/models.md §8.13):
# the papers' schedule where they give one, ours where they do not; CEDR's rate is constant.
WARMUP_SHARE: dict[str, float] = {"cross-encoder": 0.0, "bi-encoder": 0.1, "contrastive": 0.1, "dap": 0.1, "ccp": 0.1}

# Examples per micro-batch when --grad-accum is not given: the papers' batches of DAP and CCP
# are reached by accumulating micro-batches of the size their code runs at once.
MICRO_BATCH: dict[str, int] = {"dap": 128, "ccp": 32}


def check_lang_flags(data: str | Path, flags: dict[str, str | None]) -> None:
    """Check language flags (``{"--src": "en,de", "--tgt": "all"}``; None and ``all`` pass) before any work.

    A code must be a Wikipedia's or have documents in ``data`` (``DOCS/{lang}.tsv.gz``: a
    build may hold a wiki newer than our list); anything else is an ``UnknownLanguageError``
    naming the flag and the nearest codes (``--src EN: ...; did you mean en?``).
    """
    present = {path.name.split(".")[0] for path in (Path(data) / "DOCS").glob("*.tsv.gz")}
    for flag, value in flags.items():
        if value is not None and value.strip() != "all":
            check_langs(value, WIKIPEDIA_LANGUAGES | present, flag)


def _help(text: str, default: Any = None) -> Any:
    return field(default=default, metadata={"help": text})


@dataclass
class TrainArguments:
    """Everything a training run depends on; see docs/models.md for each model's recipe."""

    model: str = _help(f"which baseline to train: {', '.join(MODELS)}", "cross-encoder")
    data: str = _help("a build or download root (the folder holding BI-139/, MULTI-8/, DOCS/)", "")
    init: str = _help("local HuggingFace model directory to start from (e.g. bert-base-multilingual-cased saved locally)", "")
    cache_dir: str = _help("on-disk indexes of --data's files, named by content (default: $CLIRMATRIX_TRAIN_CACHE, else ~/.cache/clirmatrix/train); --data is never written", "")
    out: str = _help("run directory: args, checkpoints, the best model and evaluations", "")
    dataset: str = _help("query set: bi139-base, bi139-full or multi8", "bi139-base")
    src: str = _help("query language(s): a code, a comma list, or 'all' (the MULTI-8 languages)", "en")
    tgt: str = _help("document language(s): a code, a comma list, or 'all'; 'all'/'all' on multi8 = the 56 directions (MM)", "de")
    loss: str | None = _help("cross-encoder: hinge|softmax_pair; bi-encoder: cosine|in-batch", None)
    pairs: str = _help("cross-encoder pairs: lower (a candidate against one labelled lower, [D] §7.3.1) or top (the best candidate against one of the lowest, DPR's pair; docs/models.md 8.3)", "lower")
    epochs: int | None = _help("epochs; an epoch is --steps-per-epoch optimizer steps, then a dev evaluation", None)
    steps_per_epoch: int | None = _help("optimizer steps per epoch", None)
    batch_size: int | None = _help("examples per optimizer step (pairs, triples, parallel pairs or windows)", None)
    grad_accum: int | None = _help(
        "split each step's batch into this many micro-batches (less memory; with --grad-cache the in-batch losses still see the whole batch); "
        "default: micro-batches of 128 (DAP) or 32 (CCP) when they divide --batch-size, else 1",
        None,
    )
    grad_cache: bool = _help(
        "gradient caching: with --grad-accum above 1, the in-batch losses (DPR, contrastive, DAP's translation ranking, CCP) see the whole batch's negatives; "
        "--no-grad-cache: each micro-batch's own",
        True,
    )
    lr: float | None = _help("learning rate of the encoder", None)
    head_lr: float | None = _help("learning rate of task heads (cross-encoder's linear layer); default = --lr", None)
    weight_decay: float | None = _help("AdamW weight decay (default 0)", None)
    warmup_steps: int | None = _help("linear warm-up steps, then linear decay to 0; 0 = constant rate (default: 10% of the run's steps, 0 for the cross-encoder)", None)
    patience: int | None = _help("stop after this many dev evaluations without a better score (0 = never; bi-encoder 20, §8.11)", None)
    max_grad_norm: float | None = _help("gradient clipping norm (default 1.0)", None)
    max_len: int | None = _help("maximum sequence length in wordpieces", None)
    pooling: str | None = _help("sentence vector of the encoders: cls or mean (bi-encoder: mean, §2a; others: cls)", None)
    max_query_len: int = _help("maximum query length in wordpieces (cross-encoder, §1)", 20)
    temperature: float = _help("semaCL temperature (§3; unreported, ours 0.05)", 0.05)
    semantic_weight: float = _help("weight of semaCL in the contrastive model (§3)", 0.01)
    language_weight: float = _help("weight of langCL in the contrastive model (§3)", 0.001)
    parallel: str = _help("parallel pairs mined from the build: title or lead (first sentences)", "title")
    rtl_weight: float = _help("weight of DAP's RTL loss (§4, §8.8: paper 1.0, code 0.1)", 1.0)
    rtl_layers: int = _help("transformer layers of DAP's RTL head (§4: K=2)", 2)
    ccp_temperature: float = _help("CCP temperature (§5: 0.1)", 0.1)
    ccp_bank: int = _help("CCP memory bank size per language (§5: 32,768)", 32768)
    ccp_window: int = _help("CCP context window in sentences (§5: 5)", 5)
    mlm_probability: float = _help("CCP: chance that a step is an MLM step instead of a CCP step (§5)", 0.5)
    calibration: str = _help("CCP: procrustes (shift, scale, rotate by title pairs; §8.10) or shift-scale (no pairs needed)", "procrustes")
    calibration_docs: int = _help("CCP: documents per language for the calibration's mean and spread (§5, §8.10)", 2000)
    dev_split: str = _help("split evaluated after every epoch to keep the best checkpoint", "dev")
    dev_queries: int = _help("evaluate on the first N dev queries per direction (0 = all)", 200)
    save_steps: int = _help("checkpoint every N optimizer steps (0 = by time only)", 0)
    save_minutes: float = _help("checkpoint when this many minutes have passed since the last checkpoint (0 = by steps only)", 30.0)
    keep_checkpoints: int = _help("full checkpoints (model, optimizer, schedule) kept; best/ holds the best model only", 2)
    eval_batch_size: int = _help("sequences per forward pass when scoring candidates", 64)
    workers: int = _help("DataLoader worker processes drawing micro-batches ahead of the model; -1 = 4 on a GPU, 0 on a CPU", -1)
    prefetch: int = _help("micro-batches each worker prepares ahead", 4)
    seed: int = _help("seed of sampling, dropout and initialisation of heads", 42)
    device: str = _help("auto, cpu, cuda or cuda:N", "auto")
    bf16: bool = _help("bf16 autocast on CUDA (ignored on CPU)", True)
    torch_compile: bool = _help(
        "torch.compile the encoders for training, training batches padded to their full length (one graph for every step); "
        "scoring stays eager. On a GPU a step's ~1,000 kernel launches otherwise bound it (docs/benchmarks.md)",
        False,
    )
    overwrite: bool = _help("start over in a run directory that already holds another run", False)

    def resolved(self) -> TrainArguments:
        """A copy with every ``None`` replaced by the model's default; checks the model name."""
        if self.model not in MODELS:
            raise InvalidInputError(f"unknown model {self.model!r}; expected one of {', '.join(MODELS)}")
        values = dataclasses.asdict(self)
        for name, default in {**SHARED_DEFAULTS, **MODEL_DEFAULTS[self.model]}.items():
            if values[name] is None:
                values[name] = default
        if values["head_lr"] is None:
            values["head_lr"] = values["lr"]
        if values["warmup_steps"] is None:
            values["warmup_steps"] = round(WARMUP_SHARE[self.model] * values["epochs"] * values["steps_per_epoch"])
        if values["grad_accum"] is None:
            micro = MICRO_BATCH.get(self.model, values["batch_size"])
            values["grad_accum"] = values["batch_size"] // micro if values["batch_size"] % micro == 0 else 1
        from clirmatrix.models.sampling import PAIR_PICKERS

        if values["pairs"] not in PAIR_PICKERS:
            raise InvalidInputError(f"unknown --pairs {values['pairs']!r}; expected one of {', '.join(PAIR_PICKERS)}")
        if values["workers"] < -1 or values["prefetch"] < 1:
            raise InvalidInputError(f"--workers must be -1 (auto) or more and --prefetch 1 or more, got {values['workers']} and {values['prefetch']}")
        return TrainArguments(**values)

    def save(self, path: str | Path) -> None:
        from clirmatrix.pipeline.io.localio import atomic_write

        with atomic_write(path) as out:
            out.write(json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True).encode() + b"\n")

    @classmethod
    def load(cls, path: str | Path) -> TrainArguments:
        values = json.loads(Path(path).read_text())
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInputError(f"{path}: unknown settings {', '.join(unknown)}")
        return cls(**values)

    def fingerprint(self) -> dict[str, Any]:
        """The settings that must match for a run to be resumed (not paths or evaluation sizes)."""
        values = dataclasses.asdict(self)
        for name in ("out", "overwrite", "device", "eval_batch_size", "workers", "prefetch", "data", "init", "cache_dir", "torch_compile"):
            values.pop(name)
        return values
