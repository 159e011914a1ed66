"""Carrying labels into other languages (the propagate stage's carry units) beside its floor, on release-like data.

Contenders, each carrying one block of a query language X's labels into every other
language Y of the work folder, as ``propagate_block`` does:

- ``new``: ``clirmatrix.pipeline.method.propagation.propagate_block`` of this checkout;
- ``old``: the same function of the checkout at ``--base`` (a folder whose ``clirmatrix``
  is the code before issue 36: ``/work/basepkg`` maps it to 91f059b);
- ``floor``: ``carry_floor``, the simplest program that does the unavoidable work: read
  the block's labels, and for each Y read its links into a dense X -> Y array, gather
  ``x_to_y[doc]``, keep the linked rows and write them as Parquet (uncompressed, the
  cheapest write), with no sort, no dedupe and no counting.

Each contender runs in its own Python process (the old one needs its own
``clirmatrix``), started once and warmed by one call; then the three are called in
turn, the order rotating each round, for ``--rounds`` rounds. Figures are the CPU
seconds of the call in its process (``time.process_time``; the machine is shared, so
wall clock is printed but not compared): medians and ranges, ns a label row and target
language, and each contender over the floor of the same round. After the rounds, new's
and old's files must hold identical rows, and the floor's the same rows (in its order).

Data (``make_work``): a work folder with one block of X's labels and X's links to
every Y, written where the stage reads them (``WorkDirs``: ``labels/{X}/{block}``,
``propagated/_links/{X}/{Y}``). X has ``--docs`` documents; the block has ``--queries``
queries of 100 labels each (the query's own article, label 6, then 99 distinct other
documents in rank order, labels 1-5 from many 1s to few 5s), documents drawn
uniformly. Two scenarios:

- ``mix``: ``--targets`` languages whose sizes fall geometrically from 0.45 x X (German
  beside English) to 0.003 x X (a small Wikipedia), 70% of each linked to a distinct X
  document: most label rows reach no Y article (6% do on average, about the release's
  share: 34 B BI-139 pairs out of 4.9 B label rows x 138 targets);
- ``dense``: ``--dense-targets`` languages as large as X, 40-70% of X linked to each
  (two big languages): most rows are carried.

``--reuse`` keeps a work folder made with the same settings. ``carry_floor`` is also
the floor of ``bench/part_floors.py``'s carry part (``carry_part``), which ``bench/scale_bench.py``
runs on a build's own work folder; this module imports no other bench.

Usage: .venv/bin/python bench/propagate_bench.py [--docs 2000000] [--queries 20000] [--targets 40] [--rounds 5] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

LABELS_PER_QUERY = 100
SRC = "xx"  # the query language's code in the generated work folders
CONTENDERS = ("new", "old", "floor")
OLD_LINKS = "_links_old"  # the same links as the old write_doc_links wrote them (zstd), for the old contender


# --- the floor ------------------------------------------------------------------------------------


def carry_floor(work_root: str, plan, block: int, out_root: str, langs: Sequence[str] | None = None) -> int:
    """The unavoidable work of one carry unit, in numpy and pyarrow: returns the rows written.

    Reads block ``block`` of ``plan.lang``'s labels; for every other language of ``langs``
    (default: every links file of X) reads its links into a dense X -> Y array, gathers
    ``x_to_y[doc]``, keeps the linked rows and writes them (query, Y position, label) as
    uncompressed Parquet to ``out_root/{Y}.parquet``. No order, no dedupe, no counts.
    """
    from clirmatrix.pipeline.method.corpus import WorkDirs

    work = WorkDirs(work_root)
    if langs is None:
        langs = sorted(p.stem for p in Path(work.doc_links_file(plan.lang, "_")).parent.glob("*.parquet"))
    labels = pq.read_table(work.labels_file(plan.lang, block))
    query, doc, label = (labels.column(name).to_numpy() for name in ("query", "doc", "label"))
    os.makedirs(out_root, exist_ok=True)
    rows = 0
    for tgt in langs:
        if tgt == plan.lang:
            continue
        links = pq.read_table(work.doc_links_file(plan.lang, tgt))
        x_to_y = np.full(plan.docs, -1, dtype=np.int32)
        x_to_y[links.column("x").to_numpy()] = links.column("y").to_numpy()
        target = x_to_y[doc]
        linked = target >= 0
        table = pa.table({"query": query[linked], "doc": target[linked], "label": label[linked]})
        pq.write_table(table, os.path.join(out_root, f"{tgt}.parquet"), compression="none", use_dictionary=False, write_statistics=False)
        rows += table.num_rows
    return rows


# --- release-like data ----------------------------------------------------------------------------


def target_sizes(scenario: str, docs: int, targets: int, dense_targets: int) -> list[tuple[int, int]]:
    """(documents of Y, links X -> Y) for each target language of a scenario."""
    if scenario == "mix":
        shares = np.geomspace(0.45, 0.003, targets)
        return [(max(int(docs * s), 10), max(int(docs * s * 0.7), 1)) for s in shares]
    if scenario == "dense":
        return [(docs, int(docs * s)) for s in np.linspace(0.7, 0.4, dense_targets)]
    raise ValueError(f"unknown scenario {scenario!r}")


def make_work(root: Path, scenario: str, docs: int, queries: int, targets: int, dense_targets: int, seed: int = 36):
    """A work folder with one block (0) of X's labels and X's links to every target; returns (plan, langs)."""
    from clirmatrix.pipeline.io.parquet_io import write_table
    from clirmatrix.pipeline.method.corpus import WorkDirs
    from clirmatrix.pipeline.method.propagation import write_links_file
    from clirmatrix.schemas import DOC_LINKS, LABELS
    from clirmatrix.schemas.contracts import LanguagePlan

    rng = np.random.default_rng(seed)
    work = WorkDirs(str(root))
    plan = LanguagePlan(SRC, docs, 1, queries)
    # Each query: its own article (label 6), then 99 distinct other documents in rank order.
    own = np.arange(queries, dtype=np.int64)
    others = rng.integers(0, docs, (queries, LABELS_PER_QUERY - 1))
    while True:  # redraw the rare repeats (and the own article) within a query
        ordered = np.sort(np.column_stack([own, others]), axis=1)
        bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if not len(bad):
            break
        others[bad] = rng.integers(0, docs, (len(bad), LABELS_PER_QUERY - 1))
    ranked = -np.sort(-rng.choice(np.arange(1, 6), (queries, LABELS_PER_QUERY - 1), p=[0.35, 0.27, 0.18, 0.12, 0.08]), axis=1)
    query = np.repeat(own, LABELS_PER_QUERY).astype(np.int32)
    doc = np.column_stack([own, others]).ravel().astype(np.int32)
    label = np.column_stack([np.full(queries, 6), ranked]).ravel().astype(np.int8)
    write_table(work.labels_file(SRC, 0), pa.table([pa.array(query), pa.array(doc), pa.array(label)], schema=LABELS), LABELS)
    langs = [SRC]
    for n, (tgt_docs, links) in enumerate(target_sizes(scenario, docs, targets, dense_targets)):
        tgt = f"y{n:03d}"
        x = np.sort(rng.choice(docs, links, replace=False)).astype(np.int32)
        y = rng.choice(tgt_docs, links, replace=False).astype(np.int32)
        write_links_file(work.doc_links_file(SRC, tgt), x, y)  # as write_doc_links writes them
        write_table(str(root / OLD_LINKS / SRC / f"{tgt}.parquet"), pa.table([pa.array(x), pa.array(y)], schema=DOC_LINKS), DOC_LINKS)  # as the old one did
        langs.append(tgt)
    return plan, langs


def prepared(out: Path, scenario: str, args: argparse.Namespace):
    """The scenario's work folder (reused when ``--reuse`` and made with the same settings); (root, plan, langs)."""
    from clirmatrix.schemas.contracts import LanguagePlan

    root = out / scenario
    settings = {"data": 2, "scenario": scenario, "docs": args.docs, "queries": args.queries, "targets": args.targets, "dense_targets": args.dense_targets}
    marker = root / "bench.json"
    if args.reuse and marker.exists() and json.loads(marker.read_text())["settings"] == settings:
        saved = json.loads(marker.read_text())
        return root, LanguagePlan.from_dict(saved["plan"]), saved["langs"]
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    plan, langs = make_work(root / "work", scenario, args.docs, args.queries, args.targets, args.dense_targets)
    print(f"{scenario}: generated in {time.perf_counter() - started:.0f} s", flush=True)
    marker.write_text(json.dumps({"settings": settings, "plan": plan.to_dict(), "langs": langs}))
    return root, plan, langs


def contender_root(root: Path, name: str) -> Path:
    """A work folder of the contender's own whose labels and links are the scenario's (its outputs apart)."""
    mine = root / name
    if not mine.exists():
        (mine / "propagated").mkdir(parents=True)
        (mine / "labels").symlink_to(root / "work" / "labels")
        links = root / "work" / (OLD_LINKS if name == "old" else "propagated/_links")
        (mine / "propagated" / "_links").symlink_to(links)
    return mine


# --- contenders, each in a process of its own -----------------------------------------------------


def serve(name: str, work_root: str, plan_json: str, langs: list[str]) -> None:
    """A contender's process: one call per line read, its CPU and wall seconds printed as JSON."""
    from clirmatrix.schemas.contracts import LanguagePlan

    plan = LanguagePlan.from_dict(json.loads(plan_json))
    if name == "floor":
        out_root = os.path.join(work_root, "propagated", SRC, "_floor")

        def call() -> None:
            carry_floor(work_root, plan, 0, out_root, langs)
    else:
        from clirmatrix.pipeline.method.propagation import propagate_block

        def call() -> None:
            propagate_block(work_root, plan, 0, langs)

    for _ in sys.stdin:
        cpu, wall = time.process_time(), time.perf_counter()
        call()
        print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}), flush=True)


class Contender:
    def __init__(self, name: str, root: Path, plan, langs: list[str], base: str) -> None:
        env = {**os.environ}
        if name == "old":
            env["PYTHONPATH"] = base + os.pathsep + env.get("PYTHONPATH", "")
        self.name = name
        self.root = contender_root(root, name)
        command = [sys.executable, __file__, "--serve", name, str(self.root), json.dumps(plan.to_dict()), ",".join(langs)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def call(self) -> dict:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            sys.exit(f"the {self.name} contender's process ended; see its error above")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def same_rows(root: Path, plan, langs: list[str], with_old: bool) -> dict:
    """new's and old's files hold identical rows in the same order; the floor's the same rows in its own order."""
    from clirmatrix.pipeline.method.corpus import WorkDirs

    new, old = WorkDirs(str(root / "new")), WorkDirs(str(root / "old"))
    rows = 0
    for tgt in langs:
        if tgt == plan.lang:
            continue
        ours = pq.read_table(new.propagated_file(plan.lang, tgt, 0))
        if with_old and not ours.equals(pq.read_table(old.propagated_file(plan.lang, tgt, 0))):
            sys.exit(f"{tgt}: new and old carried different rows")
        floor = pq.read_table(root / "floor" / "propagated" / SRC / "_floor" / f"{tgt}.parquet")
        if not floor.sort_by([("query", "ascending"), ("doc", "ascending")]).cast(ours.schema).equals(ours):
            sys.exit(f"{tgt}: the floor wrote other rows than new")
        rows += ours.num_rows
    return {"carried_rows": rows, "checked": "new = old, row for row; the floor's rows the same" if with_old else "the floor's rows = new's"}


def run_scenario(out: Path, scenario: str, args: argparse.Namespace) -> dict:
    root, plan, langs = prepared(out, scenario, args)
    label_rows = pq.ParquetFile(root / "work" / "labels" / SRC / "00000.parquet").metadata.num_rows
    names = [name for name in CONTENDERS if name != "old" or args.base]
    contenders = [Contender(name, root, plan, langs, args.base) for name in names]
    try:
        for contender in contenders:  # numba compilation, imports and the page cache
            contender.call()
        times = {name: [] for name in names}
        for round_ in range(args.rounds):
            for contender in contenders[round_ % len(contenders) :] + contenders[: round_ % len(contenders)]:
                times[contender.name].append(contender.call())
    finally:
        for contender in contenders:
            contender.close()
    checked = same_rows(root, plan, langs, "old" in names)
    return {"scenario": scenario, "label_rows": label_rows, "targets": len(langs) - 1, "times": times, **checked}


def summarise(result: dict) -> list[dict]:
    amount = result["label_rows"] * result["targets"]
    floor = [t["cpu"] for t in result["times"]["floor"]]
    rows = []
    for name, times in result["times"].items():
        cpu = [t["cpu"] for t in times]
        ratios = [c / f for c, f in zip(cpu, floor)]
        rows.append(
            {
                "contender": name,
                "cpu_s": statistics.median(cpu),
                "cpu_range": [min(cpu), max(cpu)],
                "wall_s": statistics.median(t["wall"] for t in times),
                "ns": statistics.median(cpu) / amount * 1e9,
                "ns_range": [min(cpu) / amount * 1e9, max(cpu) / amount * 1e9],
                "x_floor": statistics.median(ratios),
                "x_floor_range": [min(ratios), max(ratios)],
            }
        )
    return rows


def print_table(results: list[dict]) -> None:
    print("\n| scenario | contender | CPU s | ns a label row and target | x floor | wall s |\n|---|---|---:|---:|---:|---:|")
    for result in results:
        what = f"{result['scenario']} ({result['label_rows'] / 1e6:.1f} M rows x {result['targets']} targets"
        what += f", {result['carried_rows'] / (result['label_rows'] * result['targets']):.1%} carried)"
        for row in summarise(result):
            print(
                f"| {what} | {row['contender']} | {row['cpu_s']:.2f} ({row['cpu_range'][0]:.2f}-{row['cpu_range'][1]:.2f}) "
                f"| {row['ns']:.1f} ({row['ns_range'][0]:.1f}-{row['ns_range'][1]:.1f}) "
                f"| **{row['x_floor']:.2f}** ({row['x_floor_range'][0]:.2f}-{row['x_floor_range'][1]:.2f}) | {row['wall_s']:.2f} |"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2_000_000, help="documents of the query language X")
    parser.add_argument("--queries", type=int, default=20_000, help="queries in the block (100 labels each)")
    parser.add_argument("--targets", type=int, default=40, help="target languages of the mix scenario")
    parser.add_argument("--dense-targets", type=int, default=8, help="target languages of the dense scenario")
    parser.add_argument("--scenarios", default="mix,dense")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", default="/work/basepkg", help="folder whose clirmatrix is the old code ('' leaves old out)")
    parser.add_argument("--out", default="bench/out/propagate")
    parser.add_argument("--reuse", action="store_true", help="keep work folders made with the same settings")
    parser.add_argument("--serve", nargs=4, metavar=("NAME", "WORK", "PLAN", "LANGS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        name, work_root, plan_json, langs = args.serve
        serve(name, work_root, plan_json, langs.split(","))
        return
    out = Path(args.out).resolve()
    results = [run_scenario(out, scenario, args) for scenario in args.scenarios.split(",")]
    (out / "results.json").write_text(json.dumps({"settings": vars(args), "results": results}, indent=1))
    print(f"\n{args.rounds} rounds, contenders interleaved; CPU seconds of one carry unit (medians, ranges)")
    print_table(results)
    print("\nchecked: " + "; ".join(f"{result['scenario']}: {result['checked']}" for result in results))


if __name__ == "__main__":
    main()
