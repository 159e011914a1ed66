"""Training throughput (examples/s), the share of step time spent waiting for data, and peak memory, on CPU or GPU.

    python bench/train_bench.py                       # tiny BERT (hidden 64, 2 layers)
    python bench/train_bench.py --size base --steps 5 # an mBERT-sized BERT (random weights)
    python bench/train_bench.py --workers 0,2         # in-process drawing against 2 DataLoader workers
    python bench/train_bench.py --size base --device cuda --models cross-encoder --workers 4 --max-len 256 --full-length --torch-compile off,on

Each (model, workers) runs in its own process (so peak RSS is its own) on a toy
release: a few warm-up steps, then ``--steps`` timed optimizer steps of
``--batch-size`` examples (pairs, triples, parallel pairs or CCP windows), the
trainer's own data path (``models/batches.py``). "Data wait" is the time the step
spends getting its next micro-batch: all of the drawing with 0 workers, what the
workers have not prepared yet otherwise. With ``--device cuda`` the GPU's utilisation
(NVML, sampled once a step) is reported too. Figures go to stdout and
``bench/out/train_bench_{size}.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
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
    from support.toy import build_tiny_backbone, write_toy_release

    from clirmatrix.pipeline.output.jsonl import iter_docs

    root = OUT / "train_bench"
    release, model = root / "release", root / f"model-{size}"
    if not (release / "DOCS").is_dir():
        write_toy_release(release, langs=("en", "de"), entities=500, splits={"train": 400, "dev": 50, "test1": 50}, filler=12)
    if not (model / "config.json").is_file():
        texts = [text for lang in ("en", "de") for _, text in iter_docs(release / "DOCS" / f"{lang}.tsv.gz")]
        build_tiny_backbone(model, texts, max_positions=512, **SIZES[size])
    return release, model


def measure(
    model: str, release: Path, init: Path, steps: int, batch_size: int, max_len: int, device: str, workers: int, bf16: bool = True,
    torch_compile: bool = False, full_length: bool = False,
) -> dict:  # fmt: skip
    import torch

    from clirmatrix.models.arguments import TrainArguments
    from clirmatrix.models.batches import micro_batches
    from clirmatrix.models.distributed import pick_device
    from clirmatrix.models.recipes import recipe_class
    from clirmatrix.models.trainer import Trainer

    args = TrainArguments(model=model, data=str(release), init=str(init), out=str(OUT / "unused"), batch_size=batch_size, max_len=max_len,
                          calibration_docs=50, workers=workers, epochs=1, steps_per_epoch=steps + 2, bf16=bf16, torch_compile=torch_compile,
                          **({"loss": "in-batch"} if model == "bi-encoder" else {})).resolved()
    recipe = recipe_class(model)(args, init, pick_device(device))
    if full_length:  # the toy's texts are short: pad to --max-len so a step does that length's work (what --torch-compile does anyway)
        recipe.drawing.padding = "max_length"
    trainer = Trainer(recipe, args, OUT / "unused", dev_score=lambda: 0.0)
    batches = micro_batches(recipe, args, rank=0, first=0)
    waited = [0.0]
    tokens = [0, 0]  # wordpieces fed (padding included) and examples

    def timed():
        while True:
            started = time.perf_counter()
            try:
                batch = next(batches)
            except StopIteration:
                return
            waited[0] += time.perf_counter() - started
            tokens[0] += sum(value["input_ids"].numel() for value in batch.values() if isinstance(value, dict) and "input_ids" in value)
            tokens[1] += args.batch_size // args.grad_accum
            yield batch

    feed = timed()
    cuda = recipe.device.type == "cuda"
    warming = time.perf_counter()
    for _ in range(2):  # warm-up: stores, mined pairs, allocator, workers started, --torch-compile's graphs
        trainer.step(feed)
    if cuda:
        torch.cuda.synchronize()
    warm_up = time.perf_counter() - warming
    tokens[:] = [0, 0]
    utilisation = []
    waited[0] = 0.0
    started = time.perf_counter()
    for _ in range(steps):
        trainer.step(feed)
        if cuda:
            utilisation.append(gpu_utilisation(recipe.device))
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    samples = [u for u in utilisation if u is not None]
    return {
        "model": model,
        "device": str(recipe.device),
        "workers": workers,
        "threads": torch.get_num_threads(),
        "batch_size": batch_size,
        "max_len": max_len,
        "bf16": trainer.use_bf16,
        "torch_compile": torch_compile,
        "tokens_per_example": round(tokens[0] / max(tokens[1], 1), 1),
        "warm_up_s": round(warm_up, 1),
        "steps": steps,
        "seconds_per_step": round(seconds / steps, 4),
        "examples_per_s": round(steps * batch_size / seconds, 1),
        "data_wait_share": round(waited[0] / seconds, 3),
        "gpu_utilisation": round(sum(samples) / len(samples), 1) if samples else None,
        "gpu_utilisation_median": round(statistics.median(samples), 1) if samples else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_cuda_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else None,
    }


def gpu_utilisation(device) -> float | None:
    """The GPU's busy percentage over the last sample period (NVML), or None without pynvml."""
    import torch

    try:
        return float(torch.cuda.utilization(device))
    except Exception:  # noqa: BLE001 - NVML missing or unsupported: the figure is optional
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--workers", default="0", help="comma list of DataLoader worker counts to compare, e.g. 0,2")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True, help="bf16 autocast on CUDA, as the trainer's own default (ignored on CPU)")
    parser.add_argument("--torch-compile", default="off", help="comma list of off,on: the trainer's --torch-compile, each a contender")
    parser.add_argument("--full-length", action="store_true", help="pad every training batch to --max-len (the toy's texts are shorter)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model in this process
    options = parser.parse_args()
    release, init = prepare(options.size)
    if options.one:
        print(json.dumps(measure(options.one, release, init, options.steps, options.batch_size, options.max_len, options.device, int(options.workers), options.bf16,
                                 options.torch_compile == "on", options.full_length)))
        return
    results = []
    for model, workers, compiled in [(m, w, c) for m in options.models.split(",") for w in options.workers.split(",") for c in options.torch_compile.split(",")]:
        command = [sys.executable, __file__, "--one", model, "--size", options.size, "--steps", str(options.steps), "--workers", workers,
                   "--batch-size", str(options.batch_size), "--max-len", str(options.max_len), "--device", options.device, "--bf16" if options.bf16 else "--no-bf16",
                   "--torch-compile", compiled, *(["--full-length"] if options.full_length else [])]
        line = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        result = {"size": options.size, **json.loads(line)}
        results.append(result)
        print(
            f"{model:>14}  {workers} workers  compile {compiled:>3}  {result['examples_per_s']:>8.1f} examples/s  {result['seconds_per_step']:.3f} s/step  "
            f"data wait {100 * result['data_wait_share']:.0f}%  GPU {result['gpu_utilisation_median']}%  peak RSS {result['peak_rss_mb']:.0f} MB  "
            f"({result['device']}, {result['threads']} threads, batch {options.batch_size}, {result['tokens_per_example']} tokens an example, warm-up {result['warm_up_s']} s)"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"train_bench_{options.size}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
