"""How selective article titles are against article text: real Wikipedia beside the generators, measured the way search pays for it.

A language's queries are its own titles, searched in ``title^2`` + ``text`` of its
documents (text truncated by the docs stage's rule: ~200 tokens), and the search
kernels' work is the postings a query's lists hold: every analysed term of the title,
in both fields. What a title costs therefore rests on the document frequency of its
terms, a fraction of the corpus for the common ones. For each corpus this bench
indexes the documents with the build's own engine and analyzer (English: Lucene's stop
words and Snowball) and measures, over its titles:

- terms a title (analysed, distinct, in the index);
- each title term's document frequency in the text field as a fraction of the
  documents (quantiles over all title terms), and the share of titles holding a term
  in at least 1 %, 5 % and 20 % of the texts;
- postings a query (both fields, all terms, as ``merged.choose_merged`` counts them) as
  a fraction of the documents: mean, median, p90, p99, and what that is at a shard of
  ``--shard-docs`` documents (the fraction times the shard; measured directly for a
  generator corpus of that size);
- the longest list's share of a query's postings (the kernel choice reads it: one
  common word holding most postings is what pruning skips).

Corpora (any number of each):

- ``--real wikiextractor:PATH``: WikiExtractor output (``<doc id= url= title=>`` blocks,
  the title repeated on the first line); empty documents (redirects) are left out;
- ``--real xml:PATH``: a MediaWiki XML dump (``.xml`` or ``.bz2``), read with the build's
  own reader (``mediawiki_xml.read_articles``: redirects and other namespaces left out);
- ``--real enterprise:PATH``: Enterprise NDJSON records (or one pretty-printed record a
  file), read with the build's own reader (``enterprise_html``);
- ``--scale N``: the scale benchmark's generator at N documents (``pipeline/tools/sample.py``'s
  ``_scale_entity``: ``bench/search_bench.py``'s language, cached under ``--out``);
- ``--realistic N``: ``bench/realistic_dumps.py``'s English articles (Parsoid HTML through
  the build's ``html_to_text``), N of them;
- ``--zipf N``: ``bench/engine_bench.py``'s Zipfian corpus (titles of 1-4 words from the
  text's own law), the ``Zipfian titles`` of ``bench/kernel_choice_bench.py``.

``--cost-rounds R`` then times the search kernels on every index (real, pooled, realistic,
scale, Zipfian), interleaved round by round: the search cost a query and shard each kind of
title gives (compare corpora of like sizes: a query's postings grow with the documents).

Usage: python bench/title_selectivity.py --real wikiextractor:/tmp/realwiki/enwiki_p56564557_extracted.txt
           --real xml:/tmp/realwiki/enwiki-gensim.xml.bz2 --scale 400000 --realistic 30000 --zipf 200000 [--queries 20000] [--json OUT]
           [--scale-from before=bench/out/selectivity/before] [--cost-rounds 5]
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import multiprocessing
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from clirmatrix.pipeline.engines.analyzers import analyzer_for
from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
from clirmatrix.pipeline.method.truncate import rule_for, truncate

LANG = "en"
SHARD_DOCS = 500_000
BATCH = 5_000
_DOC = re.compile(r'<doc id="(\d+)"[^>]*? title="([^"]*)">\n(.*?)</doc>', re.S)


# ---- real corpora -------------------------------------------------------------------------------


def _open_bytes(path: str):
    return bz2.open(path, "rb") if path.endswith(".bz2") else gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def wikiextractor_docs(path: str) -> Iterator[tuple[str, str]]:
    """(title, text) of each non-empty document of a WikiExtractor output file (the title line dropped from the text)."""
    with _open_bytes(path) as stream:
        content = stream.read().decode("utf-8")
    for _, title, body in _DOC.findall(content):
        title = title.replace("&amp;", "&").replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
        lines = body.split("\n", 1)
        text = lines[1].strip() if len(lines) > 1 else ""
        if text:
            yield title, text


def xml_docs(path: str) -> Iterator[tuple[str, str]]:
    from clirmatrix.pipeline.formats import mediawiki_xml
    from clirmatrix.pipeline.io.badinput import FileReport

    with _open_bytes(path) as stream:
        for article in mediawiki_xml.read_articles(stream, FileReport(path)):
            yield article.title, article.text


def enterprise_docs(path: str) -> Iterator[tuple[str, str]]:
    from clirmatrix.pipeline.formats import enterprise_html
    from clirmatrix.pipeline.io.badinput import FileReport

    with _open_bytes(path) as stream:
        content = stream.read()
    try:  # one pretty-printed record a file, or NDJSON
        lines = [(1, json.dumps(json.loads(content)).encode())]
    except json.JSONDecodeError:
        lines = list(enumerate(content.splitlines(), 1))
    for article in enterprise_html.read_articles(lines, FileReport(path)):
        yield article.title, article.text


READERS = {"wikiextractor": wikiextractor_docs, "xml": xml_docs, "enterprise": enterprise_docs}


def real_corpus(spec: str) -> tuple[str, list[str], list[str]]:
    kind, _, path = spec.partition(":")
    if kind not in READERS:
        sys.exit(f"--real {spec}: the kind is one of {', '.join(READERS)}")
    rule = rule_for(False)
    titles, texts = [], []
    for title, text in READERS[kind](path):
        titles.append(title)
        texts.append(truncate(text, rule))
    return f"real: {Path(path).name}", titles, texts


# ---- generated corpora --------------------------------------------------------------------------

_WORLD = None


def _realistic_texts(job: tuple[int, int]) -> list[str]:
    import realistic_dumps as rd

    from clirmatrix.pipeline.method.html_text import html_to_text

    rule = rule_for(False)
    texts = []
    for i in range(*job):
        article = rd._Article(_WORLD, i)
        article.build()
        texts.append(truncate(html_to_text(article.parsoid_html(1_000_000_000 + i)), rule))
    return texts


def realistic_corpus(n_docs: int, seed: int = 1, processes: int = 2) -> tuple[str, list[str], list[str]]:
    """``realistic_dumps``'s first ``n_docs`` English articles: titles, and texts as the build extracts and truncates them."""
    global _WORLD
    import realistic_dumps as rd

    _WORLD = rd.make_world(LANG, n_docs, seed)
    jobs = [(first, min(first + 1_000, n_docs)) for first in range(0, n_docs, 1_000)]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        texts = [text for part in pool.imap(_realistic_texts, jobs) for text in part]
    return f"realistic_dumps, {n_docs:,} articles", list(_WORLD.titles), texts


def index_corpus(titles: Sequence[str], texts: Sequence[str]) -> EmbeddedEngine:
    engine = EmbeddedEngine(analyzer_for(LANG))
    engine.index((list(map(str, range(start, min(start + BATCH, len(titles))))), list(titles[start : start + BATCH]), list(texts[start : start + BATCH]))
                 for start in range(0, len(titles), BATCH))  # fmt: skip
    return engine


def scale_engine(out: Path, n_docs: int, queries: int) -> tuple[str, EmbeddedEngine, list[str]]:
    import kernel_choice_bench

    engine, titles = kernel_choice_bench.generator_engine(out / "scale", n_docs, queries)
    return f"scale generator (sample.py), {n_docs:,} docs", engine, titles


def zipf_engine(out: Path, n_docs: int, queries: int) -> tuple[str, EmbeddedEngine, list[str]]:
    import kernel_choice_bench

    engine, titles = kernel_choice_bench.zipf_engine(out / "zipf", n_docs, queries)
    return f"Zipfian titles (engine_bench), {n_docs:,} docs", engine, titles


# ---- the measure --------------------------------------------------------------------------------


def _quantiles(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    return [float(np.quantile(values, q)) if values.size else 0.0 for q in qs]


def selectivity(engine: EmbeddedEngine, titles: Sequence[str], shard_docs: int) -> dict:
    """The title measures above, on ``engine``'s index (``engine.size`` documents)."""
    n = engine.size
    q_ptr, q_terms, _ = engine.query_arrays(list(titles))
    indptr = engine._kernel_index().indptr
    lengths = (indptr[:, q_terms + 1] - indptr[:, q_terms]).astype(np.int64)  # (title, text) postings of each query term
    per_term = lengths.sum(axis=0)
    owner = np.repeat(np.arange(len(titles)), np.diff(q_ptr))
    total = np.bincount(owner, weights=per_term, minlength=len(titles))
    longest = np.zeros(len(titles))
    np.maximum.at(longest, owner, lengths.max(axis=0))
    most_common = np.zeros(len(titles))
    np.maximum.at(most_common, owner, lengths[1] / n)
    terms = np.diff(q_ptr)
    share = np.divide(longest, total, out=np.zeros_like(total), where=total > 0)
    fraction = total / n
    scale = shard_docs / n
    return {
        "docs": int(n),
        "titles": len(titles),
        "terms_mean": float(terms.mean()),
        "terms_share": {str(k): float(np.mean(terms == k)) for k in range(0, 5)} | {"5+": float(np.mean(terms >= 5))},
        "term_df_text": dict(zip(("p10", "p50", "p90", "p99"), _quantiles(lengths[1] / n, (0.1, 0.5, 0.9, 0.99)))),
        "titles_with_term_over": {f"{t:g}": float(np.mean(most_common >= t)) for t in (0.001, 0.01, 0.05, 0.2)},
        "postings_fraction": {"mean": float(fraction.mean()), **dict(zip(("p50", "p90", "p99"), _quantiles(fraction, (0.5, 0.9, 0.99))))},
        "postings_at_shard": {"mean": float(fraction.mean() * shard_docs), **dict(zip(("p50", "p90", "p99"), (v * shard_docs for v in _quantiles(fraction, (0.5, 0.9, 0.99)))))},
        "shard_docs": shard_docs,
        "scaled": scale != 1.0,
        "longest_share": {"mean": float(share[total > 0].mean()) if (total > 0).any() else 0.0, "over_0.5": float(np.mean(share > 0.5)), "over_0.9": float(np.mean(share > 0.9))},
        # The queries that cost: over 2 % of the documents in postings (their kernel and how much pruning skips rest on it).
        "heavy": {"share": float(np.mean(fraction > 0.02)), "longest_mean": float(share[fraction > 0.02].mean()) if (fraction > 0.02).any() else 0.0,
                  "over_0.9": float(np.mean(share[fraction > 0.02] > 0.9)) if (fraction > 0.02).any() else 0.0},
    }


ROWS = (
    ("documents", lambda s: f"{s['docs']:,}"),
    ("titles measured", lambda s: f"{s['titles']:,}"),
    ("terms a title (mean)", lambda s: f"{s['terms_mean']:.2f}"),
    ("titles of 1 / 2 / 3 / 4 / 5+ terms", lambda s: " / ".join(f"{100 * s['terms_share'][k]:.0f}" for k in ("1", "2", "3", "4", "5+")) + " %"),
    ("a title term's text df, median", lambda s: f"{100 * s['term_df_text']['p50']:.3f} %"),
    ("... p90 / p99", lambda s: f"{100 * s['term_df_text']['p90']:.2f} / {100 * s['term_df_text']['p99']:.1f} %"),
    ("titles with a term in >= 1 % of texts", lambda s: f"{100 * s['titles_with_term_over']['0.01']:.1f} %"),
    ("... >= 5 %", lambda s: f"{100 * s['titles_with_term_over']['0.05']:.1f} %"),
    ("... >= 20 %", lambda s: f"{100 * s['titles_with_term_over']['0.2']:.1f} %"),
    ("postings a query / documents: mean", lambda s: f"{100 * s['postings_fraction']['mean']:.2f} %"),
    ("... median / p90 / p99", lambda s: " / ".join(f"{100 * s['postings_fraction'][k]:.2f}" for k in ("p50", "p90", "p99")) + " %"),
    ("postings a query at a shard: mean", lambda s: f"{s['postings_at_shard']['mean']:,.0f}" + (" (scaled)" if s["scaled"] else "")),
    ("... median / p90 / p99", lambda s: " / ".join(f"{s['postings_at_shard'][k]:,.0f}" for k in ("p50", "p90", "p99"))),
    ("longest list's share: mean", lambda s: f"{100 * s['longest_share']['mean']:.0f} %"),
    ("queries whose longest list holds > 50 % / > 90 %", lambda s: f"{100 * s['longest_share']['over_0.5']:.0f} / {100 * s['longest_share']['over_0.9']:.0f} %"),
    ("queries over 2 % of the documents in postings", lambda s: f"{100 * s['heavy']['share']:.0f} %"),
    ("... their longest list's share: mean / > 90 %", lambda s: f"{100 * s['heavy']['longest_mean']:.0f} / {100 * s['heavy']['over_0.9']:.0f} %"),
)


def print_table(results: list[tuple[str, dict]], shard_docs: int) -> None:
    print(f"\npostings at a shard of {shard_docs:,} documents: real corpora scaled from their fractions, generators measured at their size\n")
    print("| | " + " | ".join(name for name, _ in results) + " |")
    print("|---|" + "---:|" * len(results))
    for label, cell in ROWS:
        print(f"| {label} | " + " | ".join(cell(stats) for _, stats in results) + " |")


def search_cost(engines: list[tuple[str, EmbeddedEngine, list[str]]], rounds: int) -> dict[str, dict]:
    """The search kernels' CPU microseconds a query on each index, every query sent where the engine sends it
    (``embedded.choose_merged``), k = 100; the indexes interleaved round by round (``kernel_choice_bench.kernel_seconds``)."""
    import statistics

    import kernel_choice_bench

    from clirmatrix.pipeline.engines import embedded

    prepared = []
    for name, engine, titles in engines:
        queries = engine.query_arrays(list(titles))
        merged = embedded.choose_merged(queries[0], queries[1], engine._kernel_index(), engine.size)
        kernel_choice_bench.kernel_seconds(engine, queries, merged)  # warm: numba's kernels compiled, the index paged in
        prepared.append((name, engine, queries, merged))
    times: dict[str, list[float]] = {name: [] for name, *_ in prepared}
    for _ in range(rounds):
        for name, engine, queries, merged in prepared:
            times[name].append(kernel_choice_bench.kernel_seconds(engine, queries, merged)[0] / len(merged) * 1e6)
    return {name: {"us": statistics.median(values), "low": min(values), "high": max(values), "merged": float(merged.mean()), "docs": engine.size}
            for (name, engine, _, merged), values in zip(prepared, times.values(), strict=True)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="append", default=[], help="KIND:PATH, KIND one of wikiextractor, xml, enterprise (repeat)")
    parser.add_argument("--pool", action="store_true", help="also measure the real corpora pooled into one")
    parser.add_argument("--scale", type=int, action="append", default=[], help="the scale generator at N documents (repeat)")
    parser.add_argument("--realistic", type=int, action="append", default=[], help="realistic_dumps' first N English articles (repeat)")
    parser.add_argument("--zipf", type=int, action="append", default=[], help="engine_bench's Zipfian corpus of N documents (repeat)")
    parser.add_argument("--scale-from", action="append", default=[], metavar="LABEL=DIR",
                        help="also the scale generator's corpora cached in DIR by an earlier run (its --out), at every --scale size: e.g. before a change")
    parser.add_argument("--cost-rounds", type=int, default=0, help="then time the search kernels on every corpus, interleaved, this many rounds")
    parser.add_argument("--queries", type=int, default=20_000, help="titles measured at most (generators: the first; real: all)")
    parser.add_argument("--shard-docs", type=int, default=SHARD_DOCS)
    parser.add_argument("--out", default="bench/out/selectivity", help="cache of the generated corpora and indexes")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    out = Path(args.out)
    results: list[tuple[str, dict]] = []
    pooled: tuple[list[str], list[str]] = ([], [])
    engines = []  # (name, engine, titles) of every corpus, for --cost-rounds
    for spec in args.real:
        name, titles, texts = real_corpus(spec)
        pooled[0].extend(titles)
        pooled[1].extend(texts)
        engine = index_corpus(titles, texts)
        results.append((name, selectivity(engine, titles, args.shard_docs)))
        engines.append((name, engine, titles[: args.queries]))
        print(f"{name}: {len(titles):,} documents", flush=True)
    if args.pool and len(args.real) > 1:
        engine = index_corpus(*pooled)
        results.append(("real, pooled", selectivity(engine, pooled[0], args.shard_docs)))
        engines.append(("real, pooled", engine, pooled[0][: args.queries]))
    for n_docs in args.realistic:
        name, titles, texts = realistic_corpus(n_docs)
        engine = index_corpus(titles, texts)
        results.append((name, selectivity(engine, titles[: args.queries], args.shard_docs)))
        engines.append((name, engine, titles[: args.queries]))
        print(f"{name}: done", flush=True)
    makers = [(scale_engine, out, "", args.scale)] + [(scale_engine, Path(folder), f" [{label}]", args.scale) for label, _, folder in (spec.partition("=") for spec in args.scale_from)]
    for make, folder, label, sizes in makers + [(zipf_engine, out, "", args.zipf)]:
        for n_docs in sizes:
            name, engine, titles = make(folder, n_docs, args.queries)
            name += label
            results.append((name, selectivity(engine, titles, args.shard_docs)))
            engines.append((name, engine, titles))
            print(f"{name}: done", flush=True)
    print_table(results, args.shard_docs)
    costs = search_cost(engines, args.cost_rounds) if args.cost_rounds else {}
    if costs:
        print(f"\nsearch kernels, us a query (median and range of {args.cost_rounds} interleaved rounds; k = 100; the engine's kernel choice):\n")
        print("| corpus | documents | us a query | range | merged kernel |\n|---|---:|---:|---|---:|")
        for name, cost in costs.items():
            print(f"| {name} | {cost['docs']:,} | **{cost['us']:.1f}** | {cost['low']:.1f}-{cost['high']:.1f} | {100 * cost['merged']:.0f} % |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"shard_docs": args.shard_docs, "results": dict(results), "search_us": costs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
