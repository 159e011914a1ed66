"""The loader's forms beside the read floor, on a build's largest query files.

Each round reads the same files (by default the two largest ``BI-139/full`` train
files of ``--build``) in every form, in an order that turns by one each round, and
counts user + system CPU of this process:

- floor: isal gunzip of the file and ``orjson.loads`` of every line, nothing kept;
- ``queries()`` + ``qrels()``: today's two iterators, each reading the file once;
- ``records()``: queries and their pairs from one read;
- ``iter_batches()``: Arrow ``SplitBatch``\\es of 65,536 qrels (``--batch``), and with ``int_ids=True``;
- ``tables()``: both whole tables from one read;
- ``iter_query_blocks()``: the pyarrow-free block parser under the batch forms.

Medians and ranges over ``--rounds``, as a ratio to the floor's median and as
microseconds per judged pair. pyarrow's own JSON reader is tried once and said why
it cannot stand in: a ``tgt_results`` pair mixes a string and a number, and its
reader wants one type per list. Last, what each form holds in memory for one file.

Usage: nice -n 10 python bench/loader_bench.py --build OUT [--files 2] [--rounds 5] [--batch 65536]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import orjson
from isal import igzip

from clirmatrix.pipeline.output.jsonl import iter_query_blocks
from clirmatrix.pipeline.output.layout import parse_path
from clirmatrix.pipeline.tools.loader import QuerySplit


def floor(path: Path) -> int:
    """Gunzip with isal and ``orjson.loads`` every line; the pairs seen."""
    pairs, rest = 0, b""
    with igzip.open(path, "rb") as stream:
        while data := stream.read(1 << 20):
            lines = (rest + data).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.strip():
                    pairs += len(orjson.loads(line)["tgt_results"])
    if rest.strip():
        pairs += len(orjson.loads(rest)["tgt_results"])
    return pairs


def consume(items: object) -> None:
    deque(items, maxlen=0)


def two_reads(split: QuerySplit) -> None:
    consume(split.queries())
    consume(split.qrels())


def batches(batch: int, int_ids: bool) -> Callable[[QuerySplit], None]:
    return lambda split: consume(split.iter_batches(batch, int_ids))


FORMS: dict[str, Callable[[QuerySplit], None]] = {
    "queries() + qrels() (two reads)": two_reads,
    "records() (one read)": lambda split: consume(split.records()),
    "iter_query_blocks() (flat lists)": lambda split: consume(iter_query_blocks(split.path)),
    "tables() (one read)": lambda split: split.tables(),
}


def pyarrow_json_note(path: Path) -> str:
    import pyarrow as pa
    import pyarrow.json as pj

    with igzip.open(path, "rb") as stream:
        head = b"".join(stream.readline() for _ in range(100))
    try:
        pj.read_json(io.BytesIO(head), parse_options=pj.ParseOptions(explicit_schema=pa.schema(
            [("src_id", pa.string()), ("src_query", pa.string()), ("tgt_results", pa.list_(pa.list_(pa.string())))])))
    except pa.ArrowInvalid as error:
        return f"pyarrow.json.read_json cannot read a query line: {error}"
    return "pyarrow.json.read_json read the lines (unexpected: compare it)"


def memory_note(split: QuerySplit, batch: int) -> str:
    """What each form holds for one file: Python's heap by tracemalloc (peak), Arrow's by its own allocator."""
    import tracemalloc

    import pyarrow as pa

    tracemalloc.start()
    qrels = list(split.qrels())
    held = tracemalloc.get_traced_memory()[0]
    del qrels
    tracemalloc.reset_peak()
    arrow_peak = 0
    for piece in split.iter_batches(batch):
        arrow_peak = max(arrow_peak, pa.total_allocated_bytes())
        del piece
    python_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    table = split.qrels_table()
    mib = 2**20
    return (f"{split.path.name}: list(qrels()) holds {held / mib:.0f} MiB; qrels_table() {table.nbytes / mib:.0f} MiB of Arrow; "
            f"iter_batches({batch:,}) peaks at {python_peak / mib:.0f} MiB of Python heap and {arrow_peak / mib:.0f} MiB of Arrow")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, help="a build or download (clirmatrix build ... --out OUT)")
    parser.add_argument("--files", type=int, default=2, help="how many of the largest BI-139/full train files")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=65536, help="qrels per batch of iter_batches")
    args = parser.parse_args(argv)
    root = Path(args.build)
    paths = sorted(root.glob("BI-139/full/*/*.train.jl.gz"), key=lambda p: p.stat().st_size, reverse=True)[: args.files]
    if not paths:
        raise SystemExit(f"{root}: no BI-139/full/*/*.train.jl.gz files")
    splits = []
    for path in paths:
        released = parse_path(path.relative_to(root).as_posix())
        splits.append(QuerySplit(root, released.dataset, released.src, released.tgt, released.split))
    forms = {"floor: isal gunzip + orjson.loads a line": None, **FORMS,
             f"iter_batches({args.batch:,})": batches(args.batch, False), f"iter_batches({args.batch:,}, int_ids=True)": batches(args.batch, True)}
    pairs = sum(floor(path) for path in paths)  # also warms the page cache
    for form in forms.values():  # and every import
        if form is not None:
            form(splits[-1])
    seconds: dict[str, list[float]] = {name: [] for name in forms}
    names = list(forms)
    for round_number in range(args.rounds):
        order = names[round_number % len(names):] + names[: round_number % len(names)]
        for name in order:
            started = time.process_time()
            for path, split in zip(paths, splits):
                floor(path) if forms[name] is None else forms[name](split)
            seconds[name].append(time.process_time() - started)
    base = statistics.median(seconds[names[0]])
    mib = sum(path.stat().st_size for path in paths) / 2**20
    print(f"{len(paths)} files ({', '.join(p.name for p in paths)}; {mib:.1f} MiB gzip), {pairs:,} qrels, {args.rounds} rounds, CPU (user + system) of one process\n")
    print("| form | CPU s, median (range) | x floor | us per qrel |")
    print("|---|---:|---:|---:|")
    for name in names:
        values = seconds[name]
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} ({min(values):.2f}-{max(values):.2f}) | {median / base:.2f} | {median / pairs * 1e6:.3f} |")
    print(f"\n{memory_note(splits[0], args.batch)}")
    print(pyarrow_json_note(paths[0]))


if __name__ == "__main__":
    main()
