"""A real pretrained model fine-tuned on a build: all-MiniLM-L6-v2 as ``--init``, test1 nDCG@10 before and after, against BM25's order.

For each of ``--models`` (``MODEL[:LOSS[:PAIRS]]``: the bi-encoder, the cross-encoder), on
``--data`` (a build or download; default: the toy release of ``bench/train_bench.py``,
made if missing) and one direction: the model's zero-shot score (MiniLM as loaded, the
cross-encoder's new head seeded), then ``--steps`` optimizer steps of fine-tuning at
the given rates, then the fine-tuned score, beside the candidates ordered by BM25
(``evaluate.bm25_order``) and by chance, and the margin of the fine-tuned score over
the better of zero-shot and BM25. ``--cross-init bi-encoder`` starts the
cross-encoder from the bi-encoder this run has just fine-tuned (its encoder; the
score head new), its zero-shot score still MiniLM's own.

MiniLM is English-only (English WordPiece, English training data): on other
languages, and on a sample build's made-up words, its pieces are a byte-pair-like
spelling, so its zero-shot scores there come from the letters a query shares with
its candidates (the sample's names and cognates) and fine-tuning has to learn the
rest from the build (docs/training.md). ``cross-encoder:hinge:top`` draws the
cross-encoder's pairs with ``--pairs top``, the only ones it has learnt from here.

Usage: python bench/minilm_bench.py [--data DIR] [--src en --tgt de] [--models bi-encoder:in-batch,cross-encoder:hinge:top] [--cross-init minilm|bi-encoder] [--steps 200] [--queries N] [--device cpu]
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


def build_name(data: str) -> str:
    """A folder name for a build's runs and results: its path's last two parts (``demo-out``, ``build-out``)."""
    return "-".join(Path(data).resolve().parts[-2:])


def run(spec: str, data: str, minilm: Path, start: str, options: argparse.Namespace) -> dict:
    """Zero-shot (MiniLM), then fine-tuning from ``start`` (MiniLM or an earlier run), then test1; the figures as a dict."""
    import torch

    from clirmatrix.models.arguments import TrainArguments
    from clirmatrix.models.evaluate import evaluate_run, rerank
    from clirmatrix.models.metrics import NDCG10
    from clirmatrix.models.recipes import recipe_class
    from clirmatrix.models.train import run_training

    model, _, rest = spec.partition(":")
    loss, _, pairs = rest.partition(":")
    out = OUT / "minilm" / build_name(data) / model
    lr, head_lr = (options.lr, options.head_lr) if model == "cross-encoder" else (options.lr, options.lr)
    settings = dict(model=model, data=data, out=str(out), overwrite=True, src=options.src, tgt=options.tgt, loss=loss or None, epochs=1, steps_per_epoch=options.steps,
                    batch_size=options.batch_size, max_len=options.max_len, dev_queries=options.dev_queries, lr=lr, head_lr=head_lr, warmup_steps=0, device=options.device)  # fmt: skip
    if pairs:
        settings["pairs"] = pairs
    zero_args = TrainArguments(init=str(minilm), **settings).resolved()
    torch.manual_seed(zero_args.seed)
    started = time.perf_counter()
    zero_shot = rerank(recipe_class(model)(zero_args, minilm, torch.device(options.device)), data, "bi139-base", options.src, options.tgt, "test1", options.queries)
    trained = time.perf_counter()
    args = TrainArguments(init=start, **settings).resolved()
    torch.manual_seed(args.seed)
    run_training(args, show_progress=False)
    seconds = time.perf_counter() - trained
    after = evaluate_run(out, data, "test1", limit=options.queries, device=options.device)[0].measures[NDCG10]
    return {"model": model, "loss": args.loss, "pairs": args.pairs if model == "cross-encoder" else None, "init": "minilm" if start == str(minilm) else "bi-encoder",
            "zero_shot": round(zero_shot.measures[NDCG10], 4),
            "fine_tuned": round(after, 4), "steps": options.steps, "batch_size": args.batch_size, "max_len": args.max_len, "lr": lr, "head_lr": head_lr,
            "training_seconds": round(seconds, 1), "zero_shot_seconds": round(trained - started, 1), "run": str(out)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="", help="a build or download (default: bench/train_bench.py's toy release)")
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="de")
    parser.add_argument("--models", default="bi-encoder:in-batch,cross-encoder:hinge:top", help="MODEL[:LOSS[:PAIRS]], comma-separated, trained in this order")
    parser.add_argument("--cross-init", choices=("minilm", "bi-encoder"), default="minilm", help="what the cross-encoder starts from: MiniLM, or the bi-encoder fine-tuned just before it")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dev-queries", type=int, default=20, help="dev queries scored after training (the run's best-model choice)")
    parser.add_argument("--queries", type=int, default=0, help="score the first N test1 queries (0: all; a sample build's 606 x 100 candidates take a CPU long)")
    options = parser.parse_args()
    specs = options.models.split(",")
    models = [spec.partition(":")[0] for spec in specs]
    from_bi = options.cross_init == "bi-encoder"
    if from_bi and "cross-encoder" in models and "bi-encoder" not in models[: models.index("cross-encoder")]:
        parser.error("--cross-init bi-encoder needs a bi-encoder before the cross-encoder in --models")
    from support.toy import pretrained_minilm

    from clirmatrix.models.evaluate import bm25_order
    from clirmatrix.models.metrics import NDCG10

    data = options.data
    if not data:
        from train_bench import prepare

        data = str(prepare("tiny")[0])
    minilm = pretrained_minilm()
    baselines = {"bm25_order": round(bm25_order(data, "bi139-base", options.src, options.tgt, "test1", options.queries).measures[NDCG10], 4),
                 "chance": round(chance(data, options.src, options.tgt, options.queries), 4), "queries": options.queries or "all", "data": data}  # fmt: skip
    print(f"{data} {options.src}->{options.tgt} test1: BM25 order {baselines['bm25_order']}, chance {baselines['chance']}", flush=True)
    results: list[dict] = []
    for spec, model in zip(specs, models):
        bi_runs = [r["run"] for r in results if r["model"] == "bi-encoder"]
        start = bi_runs[-1] if model == "cross-encoder" and from_bi else str(minilm)
        result = {**run(spec, data, minilm, start, options), **baselines}
        result["margin"] = round(result["fine_tuned"] - max(result["zero_shot"], result["bm25_order"]), 4)
        results.append(result)
        print(json.dumps(result), flush=True)
        print(f"{spec} from {result['init']}: zero-shot {result['zero_shot']}, BM25 order {result['bm25_order']}, fine-tuned {result['fine_tuned']} "
              f"({options.steps} steps, {result['training_seconds']} s): margin {result['margin']:+.4f}", flush=True)  # fmt: skip
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"minilm_bench-{build_name(data)}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
