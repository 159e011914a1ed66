"""Embedded BM25 engine against Lucene 9.9.1 itself: queries per CPU-second, index size and build time.

For each ``--docs`` size, a synthetic corpus (written once as JSONL by a child
process): text of ~150 tokens (uniform 100-200) drawn from a Zipfian vocabulary
(exponent 1.07, 500,000 words, the 33 English stop words at the top ranks), titles of
1-4 words from the same law. The embedded engine indexes it with ``--analyzer``
(``plain``: the twin of Lucene's pattern tokenizer + lowercase), then the titles of
``--queries`` random documents (drawn from the documents all sizes share, so every
size searches the same queries) are searched, k = 100, ``title^2`` + ``text``,
best_fields, k1 1.2, b 0.3, on one thread: pruned (block-max MaxScore) and, once,
exhaustive (every posting scored: the oracle). Pruned results must equal the
exhaustive ones, query by query, hit for hit.

``--lucene`` runs Lucene side by side (``bench/lucene_side.py``: the Anserini jar, one
pinned core, no Python in the loop) on the same corpus and queries, rounds of the two
interleaved, and compares every top 100 with ours (positions and float32 scores).
Without a JDK 21+ or the jar it says why and prints our figures alone.

Figures are CPU seconds of the searching thread (both sides), medians over
``--rounds`` with their ranges; query analysis is outside both (Lucene builds its
queries before timing; ours analyses them in ``search``, timed separately below).
Every size's engines stay loaded and each round runs every size and both engines in
turn, so between sizes the bench prints the exponent of query cost growth (cost ~
N^e) per round, as a median with its range: measured size after size, the machine's
drift between them moved the exponent by ±0.04 from run to run.

``--per-query R`` then times every query alone, R rounds (sizes and engines
interleaved), and keeps each query's least CPU time (ours minus that of a call with no
indexed token; Lucene's taken inside the JVM). The sum of those minima gives a second
growth exponent, and the bench splits it between the 10% of queries slowest for us at
the largest size and the rest, for both engines: in the bench corpus the slowest are
titles of common words, whose cost grows almost linearly with N, and their share
decides the aggregate exponent.

Usage: python bench/engine_bench.py [--docs 200000 800000] [--queries 5000] [--rounds 5] [--per-query 3] [--lucene] [--out bench/out]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import multiprocessing
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import orjson
from lucene_side import LuceneSide
from support import lucene_jar

from clirmatrix.pipeline.engines.analyzers import analyzer_named
from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
from clirmatrix.pipeline.engines.search import read_corpus
from clirmatrix.pipeline.engines.stopwords import STOPWORDS


def write_corpus(path: Path, n_docs: int, vocabulary: int = 500_000, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    stop = list(STOPWORDS["en"])
    words = stop + ["".join(rng.choice(letters, rng.integers(3, 11))) for _ in range(vocabulary - len(stop))]
    weights = 1.0 / np.arange(1, vocabulary + 1) ** 1.07
    cumulative = np.cumsum(weights / weights.sum())
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as out:
        for start in range(0, n_docs, 10_000):
            n = min(10_000, n_docs - start)
            text_lengths = rng.integers(100, 201, n)
            title_lengths = rng.integers(1, 5, n)
            draws = np.searchsorted(cumulative, rng.random(int(text_lengths.sum() + title_lengths.sum())))
            draws = np.minimum(draws, vocabulary - 1)
            at = 0
            for i in range(n):
                title = " ".join(words[j] for j in draws[at : at + title_lengths[i]])
                at += title_lengths[i]
                text = " ".join(words[j] for j in draws[at : at + text_lengths[i]])
                at += text_lengths[i]
                out.write(orjson.dumps({"id": f"d{start + i}", "title": title.capitalize(), "text": text}) + b"\n")
    partial.replace(path)  # an interrupted run leaves no corpus that looks finished


def corpus_for(out: Path, n_docs: int) -> Path:
    corpus = out / f"engine_corpus_{n_docs}.jsonl"
    if not corpus.exists():
        t0 = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=write_corpus, args=(corpus, n_docs))
        child.start()
        child.join()
        if child.exitcode:
            sys.exit(f"corpus generation failed with exit code {child.exitcode}")
        print(f"generated {n_docs:,} documents ({corpus.stat().st_size / 1e6:.0f} MB JSONL) in {time.perf_counter() - t0:.0f} s")
    return corpus


def pick_queries(corpus: Path, pool: int, n_queries: int) -> list[str]:
    """The titles of ``n_queries`` random documents among the corpus's first ``pool``.

    Every corpus of a run is a prefix of the largest (one generator, one seed), so with
    ``pool`` the smallest size every size searches the very same queries: the growth
    exponent then measures the index, not the luck of the sample (a few common-word
    titles take a large share of the time, and two samples differ in how many they hold).
    """
    picks = set(np.random.default_rng(7).choice(pool, min(n_queries, pool), replace=False).tolist())
    titles: list[str] = []
    for _, batch_titles, _ in read_corpus(str(corpus)):
        titles.extend(batch_titles)
        if len(titles) >= pool:
            break
    return [titles[i] for i in sorted(picks)]


def differing_queries(ours: list, theirs: list) -> int:
    """Queries whose top k differ (positions or float32 scores) between two result lists."""
    return sum(
        1 for a, (positions, scores) in zip(ours, theirs)
        if not (np.array_equal(a.positions, positions) and np.array_equal(a.scores.view(np.uint32), np.asarray(scores, np.float32).view(np.uint32)))
    )  # fmt: skip


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


class Size:
    """One corpus size: our engine over it, its static figures, and Lucene beside it when asked."""

    def __init__(self, args: argparse.Namespace, n_docs: int, query_pool: int, lucene_reason: str | None, stack: contextlib.ExitStack) -> None:
        corpus = corpus_for(Path(args.out), n_docs)
        self.engine = engine = EmbeddedEngine(analyzer_named(args.analyzer), threads=1)
        rss_start = peak_rss_mb()
        t0, c0 = time.perf_counter(), time.process_time()
        engine.index(read_corpus(str(corpus)))
        build_s, build_cpu = time.perf_counter() - t0, time.process_time() - c0
        memory = engine.memory()
        self.queries, self.k = pick_queries(corpus, query_pool, args.queries), args.k
        t0 = time.thread_time()
        for query in self.queries:
            engine.query_terms(query)
        self.analysis_cpu = time.thread_time() - t0
        engine.search(self.queries[:200], args.k)  # block maxima under the statistics, warm caches
        self.result = {
            "docs": n_docs, "terms": len(engine.vocab), "postings": memory["postings"], "queries": len(self.queries),
            "index_mb": memory["index_bytes"] / 1e6, "index_bytes_per_posting": memory["index_bytes"] / memory["postings"],
            "posting_bytes_per_posting": memory["posting_bytes"] / memory["postings"],
            "build_s": build_s, "build_cpu_s": build_cpu, "build_docs_per_cpu_s": n_docs / build_cpu,
            "peak_rss_mb": peak_rss_mb(), "rss_before_build_mb": rss_start, "query_analysis_per_cpu_s": len(self.queries) / self.analysis_cpu,
        }  # fmt: skip
        self.hits = engine.search(self.queries, args.k)
        t0 = time.thread_time()
        oracle = engine.search(self.queries, args.k, exhaustive=True)
        self.result["exhaustive_queries_per_cpu_s"] = len(self.queries) / max(time.thread_time() - t0 - self.analysis_cpu, 1e-9)
        self.result["pruned_differs_from_exhaustive"] = differing_queries(self.hits, [(h.positions, h.scores) for h in oracle])
        self.result["mean_hits"] = float(np.mean([len(h.positions) for h in self.hits]))
        self.lucene = None
        if args.lucene and lucene_reason is None:
            self.lucene = stack.enter_context(LuceneSide(corpus, self.queries, k=args.k, combine="best_fields", workdir=Path(args.out) / "lucene"))
        self.ours_cpu: list[float] = []
        self.lucene_cpu: list[float] = []
        self.per_query_ns = np.full(len(self.queries), np.inf)
        self.lucene_per_query_ns = np.full(len(self.queries), np.inf)
        self.call_ns = math.inf

    def run_round(self) -> None:
        """One timed round of our kernel and, right after it, of Lucene."""
        t0 = time.thread_time()
        self.engine.search(self.queries, self.k)
        self.ours_cpu.append(time.thread_time() - t0 - self.analysis_cpu)  # the kernel's share; analysis is timed apart
        if self.lucene is not None:
            self.lucene_cpu.append(self.lucene.run_round())

    def time_each_query(self) -> None:
        """One round of every query searched alone; each query keeps its least CPU time, and the empty call its own."""
        for _ in range(50):
            t0 = time.thread_time_ns()
            self.engine.search([""], self.k)
            self.call_ns = min(self.call_ns, time.thread_time_ns() - t0)
        for i, query in enumerate(self.queries):
            t0 = time.thread_time_ns()
            self.engine.search([query], self.k)
            self.per_query_ns[i] = min(self.per_query_ns[i], time.thread_time_ns() - t0)
        if self.lucene is not None:
            np.minimum(self.lucene_per_query_ns, self.lucene.time_each_query(), out=self.lucene_per_query_ns)

    def query_costs(self, engine: str = "ours") -> np.ndarray:
        """Each query's least CPU time in ns: ours less the cost of a call with no indexed token, or Lucene's."""
        if engine == "lucene":
            return np.maximum(self.lucene_per_query_ns, 1.0)
        return np.maximum(self.per_query_ns - self.call_ns, 1.0)

    def finish(self) -> dict:
        result, n = self.result, len(self.queries)
        result["queries_per_cpu_s"] = spread([n / c for c in self.ours_cpu])
        if self.lucene is not None:
            result["lucene_differs"] = differing_queries(self.hits, self.lucene.top_k())
            result["lucene_index_mb"] = self.lucene.index_bytes / 1e6
            result["lucene_index_cpu_s"] = self.lucene.index_cpu_seconds
            result["lucene_queries_per_cpu_s"] = spread([n / c for c in self.lucene_cpu])
            result["embedded_over_lucene"] = spread([lc / oc for oc, lc in zip(self.ours_cpu, self.lucene_cpu)])
        result["load_average_1min"] = os.getloadavg()[0]
        return result


def growth(small: Size, large: Size, cpu: str) -> dict[str, float]:
    """The exponent e of cost ~ N^e between two sizes, per round (the rounds of both sizes ran side by side)."""
    scale = math.log(large.result["docs"] / small.result["docs"])
    return spread([math.log(b / a) / scale for a, b in zip(getattr(small, cpu), getattr(large, cpu))])


def per_query_growth(small: Size, large: Size, slowest: np.ndarray, engine: str = "ours") -> dict[str, float]:
    """Growth exponents from summed per-query minima: all queries, the ``slowest`` (indices) and the rest."""
    scale = math.log(large.result["docs"] / small.result["docs"])
    a, b = small.query_costs(engine), large.query_costs(engine)
    rest = np.setdiff1d(np.arange(len(a)), slowest)
    return {name: math.log(b[part].sum() / a[part].sum()) / scale for name, part in (("all", slice(None)), ("slowest", slowest), ("rest", rest))}


def add_per_query_results(sizes: list[Size], results: list[dict], rounds: int) -> None:
    """Per size, the summed per-query costs, in all and of the 10% of queries slowest for us at the largest size; between sizes, their growth."""
    slowest = np.argsort(-sizes[-1].query_costs())[: max(1, len(sizes[-1].queries) // 10)]
    for size, result in zip(sizes, results):
        costs = size.query_costs()
        result["per_query"] = {
            "rounds": rounds, "call_us": size.call_ns / 1e3, "total_ms": float(costs.sum()) / 1e6,
            "slowest_ms": float(costs[slowest].sum()) / 1e6, "slowest_queries": [size.queries[i] for i in slowest[:10]],
        }  # fmt: skip
        if size.lucene is not None:
            theirs = size.query_costs("lucene")
            result["per_query"].update(lucene_total_ms=float(theirs.sum()) / 1e6, lucene_slowest_ms=float(theirs[slowest].sum()) / 1e6)
    for small, large, result in zip(sizes, sizes[1:], results[1:]):
        result["per_query_growth"] = per_query_growth(small, large, slowest)
        if large.lucene is not None:
            result["lucene_per_query_growth"] = per_query_growth(small, large, slowest, "lucene")


def report(results: list[dict]) -> None:
    lucene = "lucene_queries_per_cpu_s" in results[0]
    print(f"\n{'documents':>10} {'embedded q/cpu-s':>22} {'Lucene q/cpu-s':>22} {'ratio':>18} {'index MB (B/posting)':>22} {'Lucene MB':>10} {'build docs/cpu-s':>17}")
    for r in results:
        q = r["queries_per_cpu_s"]
        row = f"{r['docs']:>10,} {q['median']:>8,.0f} ({q['min']:,.0f}-{q['max']:,.0f})".ljust(34)
        if lucene:
            lq, ratio = r["lucene_queries_per_cpu_s"], r["embedded_over_lucene"]
            row += f" {lq['median']:>8,.0f} ({lq['min']:,.0f}-{lq['max']:,.0f})".ljust(23)
            row += f" {ratio['median']:5.2f} ({ratio['min']:.2f}-{ratio['max']:.2f})".ljust(19)
        else:
            row += " " * 42
        row += f" {r['index_mb']:8,.0f} ({r['index_bytes_per_posting']:.2f})".ljust(23)
        row += f" {r.get('lucene_index_mb', float('nan')):>9,.0f} {r['build_docs_per_cpu_s']:>17,.0f}"
        print(row)
    for r in results:
        agree = f", Lucene's differ on {r['lucene_differs']}" if lucene else ""
        print(f"{r['docs']:,}: pruned top {r['mean_hits']:.0f} differ from exhaustive on {r['pruned_differs_from_exhaustive']} of {r['queries']:,} queries{agree}; "
              f"exhaustive {r['exhaustive_queries_per_cpu_s']:,.0f} q/cpu-s; peak RSS {r['peak_rss_mb']:,.0f} MB")
    for r in results:
        if "per_query" in r:
            pq = r["per_query"]
            theirs = f"; Lucene {pq['lucene_total_ms']:,.1f} ms, {pq['lucene_slowest_ms']:,.1f} ms" if "lucene_total_ms" in pq else ""
            print(f"{r['docs']:,}: queries timed alone (best of {pq['rounds']}, the {pq['call_us']:.0f} us of our empty call taken off): "
                  f"{pq['total_ms']:,.1f} ms in all, our slowest 10% at the largest size {pq['slowest_ms']:,.1f} ms{theirs}")
    for a, b in zip(results, results[1:]):
        for key, name in (("per_query_growth", "embedded"), ("lucene_per_query_growth", "Lucene")):
            if key in b:
                g = b[key]
                print(f"query cost {a['docs']:,} -> {b['docs']:,}, queries timed alone: N^{g['all']:.2f} ({name}), "
                      f"our slowest 10% N^{g['slowest']:.2f}, the rest N^{g['rest']:.2f}")
    for a, b in zip(results, results[1:]):
        ours = b["growth"]
        line = f"query cost {a['docs']:,} -> {b['docs']:,}: N^{ours['median']:.2f} ({ours['min']:.2f}-{ours['max']:.2f}) (embedded)"
        if lucene:
            theirs = b["lucene_growth"]
            line += f", N^{theirs['median']:.2f} ({theirs['min']:.2f}-{theirs['max']:.2f}) (Lucene)"
        print(line + ", medians over rounds in which every size ran")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[200_000])
    parser.add_argument("--queries", type=int, default=5_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per contender, interleaved; medians count")
    parser.add_argument("--per-query", type=int, default=0, metavar="R", help="then time every query alone, R rounds (both engines); 0: not")
    parser.add_argument("--analyzer", default="plain", help="the embedded engine's analyzer (Lucene's side is always plain)")
    parser.add_argument("--lucene", action="store_true", help="run Lucene 9.9.1 side by side (needs a JDK 21+; fetches the Anserini jar)")
    parser.add_argument("--out", default="bench/out")
    args = parser.parse_args()

    lucene_reason = lucene_jar.available() if args.lucene else "not asked (--lucene)"
    if args.lucene and lucene_reason is not None:
        print(f"Lucene side by side unavailable: {lucene_reason}; our figures alone")
    if args.lucene and args.analyzer != "plain":
        sys.exit("--lucene compares the plain analyzer only (Lucene's side is the pattern tokenizer + lowercase)")
    warm = EmbeddedEngine(analyzer_named(args.analyzer))  # load numba's compiled kernels first
    warm.index([(["a", "b"], ["One title", "Two"], ["some text", "more text"])])
    warm.search(["title text"], 10)
    warm.search(["title text"], 10, exhaustive=True)
    del warm

    with contextlib.ExitStack() as stack:
        sizes = [Size(args, n_docs, min(args.docs), lucene_reason, stack) for n_docs in sorted(args.docs)]
        for _ in range(args.rounds):  # interleaved across sizes and engines: the machine's drift hits all alike
            for size in sizes:
                size.run_round()
        for _ in range(args.per_query):
            for size in sizes:
                size.time_each_query()
        results = [size.finish() for size in sizes]
        if args.per_query:
            add_per_query_results(sizes, results, args.per_query)
        for small, large, result in zip(sizes, sizes[1:], results[1:]):
            result["growth"] = growth(small, large, "ours_cpu")
            if large.lucene is not None:
                result["lucene_growth"] = growth(small, large, "lucene_cpu")
    for result in results:
        print(json.dumps(result))
    report(results)
    record = {"date": datetime.date.today().isoformat(), "cpus": os.cpu_count(), "python": sys.version.split()[0], "results": results}
    (Path(args.out) / "engine_results.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
