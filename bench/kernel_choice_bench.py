"""Which search kernel a query should go to: the merged kernel against the pruned one, by a query's postings and how they are spread.

The embedded engine sends a query to the merged kernel (every posting decoded and
summed) or to the pruned one (block-max MaxScore) by ``merged.choose_merged``; both
give the same hits. This bench times both kernels on the same queries, one index at a
time, the two interleaved round by round (CPU seconds of this process, medians):

- **grid**: the queries cut by their postings (both fields, all terms) and by the share
  of them the longest list holds (a term in a field); per cell, the queries, pruned /
  merged (above 1: merged is faster) and the merged kernel's microseconds a query;
- **rules**: the whole query set under the rule as built and under the rule without its
  balanced part (``MERGE_BALANCED_POSTINGS`` = -1: the density alone), with the hits
  checked identical.

On two kinds of titles: the scale benchmark's generator (``bench/search_bench.py``'s
language: one word in ~2,000 articles, lists of like lengths) at each ``--docs`` size,
and ``bench/engine_bench.py``'s Zipfian corpus at each ``--zipf-docs`` size (titles of
1-4 words from the same law as the text: one common word often holds most postings).

Usage: python bench/kernel_choice_bench.py [--docs 200000 400000] [--zipf-docs 200000 500000] [--queries 20000] [--rounds 3] [--out bench/out/search]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import engine_bench
import numpy as np
import search_bench

from clirmatrix.pipeline.engines import embedded
from clirmatrix.pipeline.engines.analyzers import analyzer_named
from clirmatrix.pipeline.engines.embedded import EmbeddedEngine, search_kernels
from clirmatrix.pipeline.method import retrieval

POSTINGS = (0, 1_000, 2_000, 4_000, 6_000, 8_000, 10_000, 12_000, 16_000)  # the grid's rows
SHARES = (0.0, 0.5, 0.7, 0.9, 1.01)  # its columns: the longest list's share of the postings
K = 100


def spread_of_lists(engine: EmbeddedEngine, titles: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per query: its postings (both fields, all its terms), and the share of them its longest list holds, as the engine's choice counts them."""
    q_ptr, q_terms, _ = engine.query_arrays(titles)
    indptr = engine._kernel_index().indptr
    total, longest = np.array([embedded.merged._query_lists(q, q_ptr, q_terms, indptr) for q in range(len(titles))], np.int64).reshape(-1, 2).T
    return total, longest / np.maximum(total, 1)


def kernel_seconds(engine: EmbeddedEngine, queries: tuple[np.ndarray, ...], merged: np.ndarray) -> tuple[float, tuple[np.ndarray, ...]]:
    """CPU seconds of the kernels over analysed ``queries`` (``query_arrays``) with each sent where ``merged`` says, and the result rows."""
    n = len(queries[0]) - 1
    out = (np.empty((n, K), np.int32), np.empty((n, K), np.float32), np.zeros(n, np.int32))
    started = time.process_time()
    search_kernels(*queries, merged, 0, n, K, engine._kernel_index(), *out)
    return time.process_time() - started, out


def grid(engine: EmbeddedEngine, titles: Sequence[str], rounds: int) -> list[str]:
    """The grid's rows as markdown: per cell, queries, pruned / merged and the merged kernel's us a query."""
    total, share = spread_of_lists(engine, titles)
    rows = []
    for low, high in zip(POSTINGS[:-1], POSTINGS[1:]):
        cells = []
        for share_low, share_high in zip(SHARES[:-1], SHARES[1:]):
            chosen = [titles[i] for i in np.flatnonzero((total >= low) & (total < high) & (share >= share_low) & (share < share_high))]
            if len(chosen) < 20:
                cells.append(f"{len(chosen)}")
                continue
            queries = engine.query_arrays(chosen)
            pruned, merged = [], []
            for _ in range(rounds):
                pruned.append(kernel_seconds(engine, queries, np.zeros(len(chosen), np.bool_))[0])
                merged.append(kernel_seconds(engine, queries, np.ones(len(chosen), np.bool_))[0])
            cells.append(f"{len(chosen)}: **{statistics.median(pruned) / statistics.median(merged):.2f}** ({statistics.median(merged) / len(chosen) * 1e6:.0f} us)")
        rows.append(f"| {low:,}-{high:,} | " + " | ".join(cells) + " |")
    return rows


def rules(engine: EmbeddedEngine, titles: Sequence[str], rounds: int) -> dict[str, float]:
    """Microseconds a query with the rule as built and with the density alone (medians), and their ratio; hits checked identical."""
    queries = engine.query_arrays(titles)
    q_ptr, q_terms, _ = queries
    index = engine._kernel_index()
    built = embedded.choose_merged(q_ptr, q_terms, index, engine.size)
    density = embedded.merged._choose_merged(q_ptr, q_terms, index.indptr, embedded.merged.MERGE_DENSITY * engine.size, -1, 0.0)
    _, (pos_a, score_a, len_a) = kernel_seconds(engine, queries, built)
    _, (pos_b, score_b, len_b) = kernel_seconds(engine, queries, density)
    valid = np.arange(K) < len_a[:, None]
    if not (np.array_equal(len_a, len_b) and np.array_equal(pos_a[valid], pos_b[valid]) and np.array_equal(score_a[valid], score_b[valid])):
        sys.exit("the two rules gave different hits")
    seconds: dict[str, list[float]] = {"built": [], "density": []}
    for _ in range(rounds):
        seconds["built"].append(kernel_seconds(engine, queries, built)[0])
        seconds["density"].append(kernel_seconds(engine, queries, density)[0])
    n = len(titles)
    return {
        "merged_built": float(built.mean()), "merged_density": float(density.mean()),
        "us_built": statistics.median(seconds["built"]) / n * 1e6, "us_density": statistics.median(seconds["density"]) / n * 1e6,
        "density_over_built": statistics.median([d / b for d, b in zip(seconds["density"], seconds["built"])]),
    }  # fmt: skip


def generator_engine(out: Path, n_docs: int, queries: int) -> tuple[EmbeddedEngine, list[str]]:
    """``search_bench``'s language of ``n_docs`` generated articles, indexed once, and its first titles."""
    root = out / str(n_docs)
    work = search_bench.make_language(root, n_docs)
    settings = search_bench.settings_for(queries)
    search_bench.build_index(root, work, settings, n_docs)
    engine = retrieval.load_index(search_bench.index_dir(root), settings, search_bench.LANG)
    return engine, search_bench.catalog_titles(work, search_bench.plan_for(n_docs, settings))


def zipf_engine(out: Path, n_docs: int, queries: int) -> tuple[EmbeddedEngine, list[str]]:
    """``engine_bench``'s Zipfian corpus of ``n_docs`` documents, indexed, and the titles of ``queries`` random documents."""
    corpus = engine_bench.corpus_for(out, n_docs)
    engine = EmbeddedEngine(analyzer_named("plain"))
    engine.index(engine_bench.read_corpus(str(corpus)))
    return engine, engine_bench.pick_queries(corpus, n_docs, queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="*", default=[200_000, 400_000], help="generator languages' sizes")
    parser.add_argument("--zipf-docs", type=int, nargs="*", default=[200_000, 500_000], help="Zipfian corpora's sizes")
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="bench/out/search")
    args = parser.parse_args()
    out = Path(args.out)
    header = "| postings a query | " + " | ".join(f"longest {a:.0%}-{min(b, 1):.0%}" for a, b in zip(SHARES[:-1], SHARES[1:])) + " |"
    for kind, sizes, make in (("generator titles", args.docs, generator_engine), ("Zipfian titles", args.zipf_docs, zipf_engine)):
        for n_docs in sizes:
            engine, titles = make(out, n_docs, args.queries)
            found = rules(engine, titles, args.rounds)
            print(f"\n{kind}, {engine.size:,} documents, {len(titles):,} queries: as built {found['us_built']:.1f} us a query ({found['merged_built']:.1%} merged), "
                  f"the density alone {found['us_density']:.1f} ({found['merged_density']:.1%} merged): **{found['density_over_built']:.2f}x**")  # fmt: skip
            print("cells: queries: pruned / merged (merged us a query)\n" + header + "\n|---|" + "---|" * (len(SHARES) - 1))
            print("\n".join(grid(engine, titles, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
