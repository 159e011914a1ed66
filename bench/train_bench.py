"""Training throughput (examples/s) and peak memory of each model, on CPU or GPU.

    python bench/train_bench.py                       # tiny BERT (hidden 64, 2 layers)
    python bench/train_bench.py --size base --steps 5 # an mBERT-sized BERT (random weights)

Each model runs in its own process (so peak RSS is its own) on a toy release: a
few warm-up steps, then ``--steps`` timed optimizer steps of ``--batch-size``
examples (pairs, triples, parallel pairs or CCP windows). Figures go to stdout
and ``bench/out/train_bench.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

SIZES = {
    "tiny": {"hidden_size": 64, "layers": 2, "heads": 2, "vocab_size": 500},
    "base": {"hidden_size": 768, "layers": 12, "heads": 12, "vocab_size": 30000},
}
MODELS = ("cross-encoder", "bi-encoder", "contrastive", "dap", "ccp")
OUT = Path(__file__).resolve().parent / "out"


def prepare(size: str) -> tuple[Path, Path]:
    from clirmatrix.models.toy import build_tiny_backbone, write_toy_release
    from clirmatrix.pipeline.jsonl import iter_docs

    root = OUT / "train_bench"
    release, model = root / "release", root / f"model-{size}"
    if not (release / "DOCS").is_dir():
        write_toy_release(release, langs=("en", "de"), entities=500, splits={"train": 400, "dev": 50, "test1": 50}, filler=12)
    if not (model / "config.json").is_file():
        texts = [text for lang in ("en", "de") for _, text in iter_docs(release / "DOCS" / f"{lang}.tsv.gz")]
        build_tiny_backbone(model, texts, max_positions=512, **SIZES[size])
    return release, model


def measure(model: str, release: Path, init: Path, steps: int, batch_size: int, max_len: int, device: str) -> dict:
    import torch

    from clirmatrix.models.arguments import TrainArguments
    from clirmatrix.models.distributed import pick_device
    from clirmatrix.models.recipes import recipe_class
    from clirmatrix.models.trainer import Trainer

    args = TrainArguments(model=model, data=str(release), init=str(init), out=str(OUT / "unused"), batch_size=batch_size, max_len=max_len,
                          calibration_docs=50, **({"loss": "in-batch"} if model == "bi-encoder" else {})).resolved()
    recipe = recipe_class(model)(args, init, pick_device(device))
    trainer = Trainer(recipe, args, OUT / "unused", dev_score=lambda: 0.0)
    rng = random.Random(0)
    for _ in range(2):  # warm-up: stores, mined pairs, allocator
        trainer.step(rng)
    if recipe.device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        trainer.step(rng)
    if recipe.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return {
        "model": model,
        "device": str(recipe.device),
        "threads": torch.get_num_threads(),
        "batch_size": batch_size,
        "max_len": max_len,
        "steps": steps,
        "seconds_per_step": round(seconds / steps, 4),
        "examples_per_s": round(steps * batch_size / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_cuda_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if recipe.device.type == "cuda" else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model in this process
    options = parser.parse_args()
    release, init = prepare(options.size)
    if options.one:
        print(json.dumps(measure(options.one, release, init, options.steps, options.batch_size, options.max_len, options.device)))
        return
    results = []
    for model in options.models.split(","):
        command = [sys.executable, __file__, "--one", model, "--size", options.size, "--steps", str(options.steps),
                   "--batch-size", str(options.batch_size), "--max-len", str(options.max_len), "--device", options.device]
        line = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        result = {"size": options.size, **json.loads(line)}
        results.append(result)
        print(
            f"{model:>14}  {result['examples_per_s']:>8.1f} examples/s  {result['seconds_per_step']:.3f} s/step  peak RSS {result['peak_rss_mb']:.0f} MB  "
            f"({result['device']}, {result['threads']} threads, batch {options.batch_size}, length {options.max_len})"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"train_bench_{options.size}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
