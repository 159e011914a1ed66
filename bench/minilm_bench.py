"""A real pretrained model fine-tuned on a build: all-MiniLM-L6-v2 as ``--init``, test1 nDCG@10 before and after, against BM25's order.

For each of ``--models`` (bi-encoder, cross-encoder), on ``--data`` (a build or
download; default: the toy release of ``bench/train_bench.py``, made if missing) and
one direction: the model's zero-shot score (MiniLM as loaded, the cross-encoder's new
head seeded), then ``--steps`` optimizer steps of fine-tuning at the given rates, then
the fine-tuned score, beside the candidates ordered by BM25 (``evaluate.bm25_order``)
and by chance. MiniLM is English-only (English WordPiece, English training data): on
other languages its pieces are a byte-pair-like spelling, so its zero-shot scores
there say little and fine-tuning has to learn the language from the build.

Usage: python bench/minilm_bench.py [--data DIR] [--src en --tgt de] [--models bi-encoder,cross-encoder] [--steps 200] [--queries N] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"


def chance(data: str, src: str, tgt: str, limit: int, split: str = "test1", shuffles: int = 20) -> float:
    """Expected nDCG@10 of a random order of the candidates."""
    from clirmatrix.models.evaluate import query_records
    from clirmatrix.models.metrics import NDCG10, evaluate_rankings

    records = list(query_records(data, "bi139-base", src, tgt, split, limit))
    qrels = {r.src_id: dict(r.tgt_results) for r in records}
    rng = random.Random(0)
    values = [evaluate_rankings(qrels, {r.src_id: [(doc, rng.random()) for doc, _ in r.tgt_results] for r in records}).measures[NDCG10] for _ in range(shuffles)]
    return sum(values) / len(values)


def run(model: str, data: str, init: Path, options: argparse.Namespace) -> dict:
    import torch

    from clirmatrix.models.arguments import TrainArguments
    from clirmatrix.models.evaluate import evaluate_run, rerank
    from clirmatrix.models.metrics import NDCG10
    from clirmatrix.models.recipes import recipe_class
    from clirmatrix.models.train import run_training

    out = OUT / "minilm" / model
    lr, head_lr = (options.lr, options.head_lr) if model == "cross-encoder" else (options.lr, options.lr)
    args = TrainArguments(model=model, data=data, init=str(init), out=str(out), overwrite=True, src=options.src, tgt=options.tgt, epochs=1,
                          steps_per_epoch=options.steps, batch_size=options.batch_size, max_len=options.max_len, dev_queries=options.dev_queries, lr=lr, head_lr=head_lr,
                          warmup_steps=0, device=options.device).resolved()  # fmt: skip
    torch.manual_seed(args.seed)
    started = time.perf_counter()
    zero_shot = rerank(recipe_class(model)(args, init, torch.device(options.device)), data, "bi139-base", options.src, options.tgt, "test1", options.queries).measures[NDCG10]
    trained = time.perf_counter()
    run_training(args, show_progress=False)
    seconds = time.perf_counter() - trained
    after = evaluate_run(out, data, "test1", limit=options.queries, device=options.device)[0].measures[NDCG10]
    return {"model": model, "zero_shot": round(zero_shot, 4), "fine_tuned": round(after, 4), "steps": options.steps, "batch_size": options.batch_size,
            "max_len": options.max_len, "lr": lr, "head_lr": head_lr, "training_seconds": round(seconds, 1), "zero_shot_seconds": round(trained - started, 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="", help="a build or download (default: bench/train_bench.py's toy release)")
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="de")
    parser.add_argument("--models", default="bi-encoder,cross-encoder")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dev-queries", type=int, default=20, help="dev queries scored after training (the run's best-model choice)")
    parser.add_argument("--queries", type=int, default=0, help="score the first N test1 queries (0: all; a sample build's 606 x 100 candidates take a CPU long)")
    options = parser.parse_args()
    from clirmatrix.models.evaluate import bm25_order
    from clirmatrix.models.metrics import NDCG10
    from clirmatrix.models.toy import pretrained_minilm

    data = options.data
    if not data:
        from train_bench import prepare

        data = str(prepare("tiny")[0])
    init = pretrained_minilm()
    baselines = {"bm25_order": round(bm25_order(data, "bi139-base", options.src, options.tgt, "test1", options.queries).measures[NDCG10], 4),
                 "chance": round(chance(data, options.src, options.tgt, options.queries), 4), "queries": options.queries or "all"}  # fmt: skip
    print(f"{data} {options.src}->{options.tgt} test1: BM25 order {baselines['bm25_order']}, chance {baselines['chance']}", flush=True)
    results = []
    for model in options.models.split(","):
        result = {**run(model, data, init, options), **baselines}
        results.append(result)
        print(json.dumps(result), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "minilm_bench.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
