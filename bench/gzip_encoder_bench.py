"""What the release's gzip encoder costs, and that it writes the same bytes under load (issue 54).

**Cost** (the default): the text of a sample build's released files (``--build OUT``,
default /tmp/demo/out, else a sample build made in a temporary folder; the first
``--mb`` MB of its files in a seeded order), compressed by each contender, interleaved
(the order rotates each round), ``--rounds`` rounds, CPU seconds of this process:

- isal level 2 as the writer wrote before issue 54 (``isal.igzip.GzipFile``, mtime 0,
  1 MiB slices);
- zlib-ng level 2 through ``GzipEncoder``, the writer now (``gzip_encoder.py``);
- zlib-ng levels 1, 3 and 6 through the same ``GzipEncoder`` (its ``LEVEL`` changed);
- the read floor: isal inflating the zlib-ng level 2 files (what a reader pays).

Each file goes to a sink that only counts bytes (the writers also take an md5 on the way,
the same for every contender). It reports medians and ranges, MB/s of text, the size as
a share of the text, and both as ratios to isal level 2; then projects the difference to
the whole release from the build's text bytes per judged pair (``--pairs``, the 2020
release's 34.06 B labelled pairs).

**Stress** (``--stress``): every file is compressed alone first, in this process, for the
reference md5s; then ``--workers`` processes of ``--threads`` threads each compress
every file ``--repeats`` times in a shuffled order, fed in pieces of random sizes (1 B to
3 MB; ``GzipEncoder`` re-cuts them into its 1 MiB slices), each compression after
filling and freeing heap memory with garbage (so the compressor's allocations reuse dirty
memory), while ``--noise`` processes allocate, touch and free up to ``--noise-mb`` MB
each and keep the CPU busy; every output's md5 is compared with its reference.
``--encoders zlib-ng,isal`` runs isal too (fed exactly 1 MiB slices, as its writer was),
for the record. tests/test_gzip_bytes.py runs a small one.

Usage:
    python bench/gzip_encoder_bench.py [--build OUT] [--mb 160] [--rounds 5] [--pairs 34.06e9]
    python bench/gzip_encoder_bench.py --stress [--build OUT] [--workers 4] [--threads 2] [--repeats 5] [--noise 2] [--noise-mb 1024] [--encoders zlib-ng,isal]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import platform
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cross_cpu_bench import sample_build, write_inputs

from clirmatrix.pipeline.output import gzip_encoder
from clirmatrix.pipeline.output.gzip_encoder import CHUNK, GzipEncoder

RELEASE_PAIRS = 34.06e9  # labelled (query, document) pairs of the 2020 release (docs/scale.md)


class _Count:
    """A sink that counts what it is given (and keeps it, when asked)."""

    def __init__(self, keep: bool = False) -> None:
        self.size = 0
        self.parts: list[bytes] | None = [] if keep else None

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.parts is not None:
            self.parts.append(bytes(data))

    def value(self) -> bytes:
        assert self.parts is not None
        return b"".join(self.parts)


def zlib_ng_into(sink, text: bytes | memoryview, level: int = gzip_encoder.LEVEL, pieces: list[int] | None = None) -> None:
    """``text`` through ``GzipEncoder`` at ``level`` (the module's ``LEVEL`` for the call), in ``pieces`` of those sizes if given."""
    saved, gzip_encoder.LEVEL = gzip_encoder.LEVEL, level
    try:
        encoder = GzipEncoder(sink)
    finally:
        gzip_encoder.LEVEL = saved
    if pieces is None:
        encoder.write(text)
    else:
        view, at = memoryview(text), 0
        for size in pieces:
            encoder.write(view[at : at + size])
            at += size
        encoder.write(view[at:])
    encoder.close()


def isal_into(sink, text: bytes | memoryview, level: int = 2) -> None:
    """``text`` as the writer before issue 54 wrote it: isal's GzipFile, mtime 0, fed exactly 1 MiB slices."""
    import isal.igzip

    view = memoryview(text)
    with isal.igzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0, compresslevel=level) as stream:
        for start in range(0, len(view), CHUNK):
            stream.write(view[start : start + CHUNK])


def compress(encoder: str, text: bytes | memoryview) -> bytes:
    """The bytes of ``encoder`` (``zlib-ng`` at the release's level, or ``isal`` as it was written at level 2) for ``text``."""
    sink = _Count(keep=True)
    (zlib_ng_into if encoder == "zlib-ng" else isal_into)(sink, text)
    return sink.value()


# --- text ---------------------------------------------------------------------------------------


def build_texts(out: Path, limit_bytes: float = float("inf")) -> list[tuple[str, bytes]]:
    """The released files' text of a build (BI-139, MULTI-8, DOCS, DOCS-FULL), in a seeded order, up to ``limit_bytes`` in all."""
    import isal.igzip

    texts, total = [], 0
    paths = sorted(p for p in out.rglob("*.gz") if p.name != "downloads.json.gz" and not p.name.startswith("."))
    random.Random(54).shuffle(paths)  # every kind of file, not the first in path order
    for path in paths:
        if total >= limit_bytes:
            break
        text = isal.igzip.decompress(path.read_bytes())
        texts.append((str(path.relative_to(out)), text))
        total += len(text)
    return texts


def find_build(build: Path | None, scratch: Path) -> Path:
    if build is not None:
        return build
    if Path("/tmp/demo/out/manifest.json").exists():
        return Path("/tmp/demo/out")
    print("making a sample build (about a minute) ...", flush=True)
    return sample_build(scratch)


# --- stress -------------------------------------------------------------------------------------


@dataclass
class Mismatch:
    """An output that is not the reference: where it came from, and whether it is still a gzip file of the text."""

    file: str
    worker: int
    thread: int
    nth: int  # the thread's nth compression
    size: int
    reference_size: int
    first: int  # the first byte that differs
    valid: bool  # decompresses to the text


@dataclass
class StressResult:
    """Every compression's outcome against the reference computed alone."""

    encoder: str
    files: int
    text_bytes: int
    compressions: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    wall: float = 0.0
    noise_mb_touched: int = 0


def _dirty_heap(rng: random.Random, garbage: bytes) -> None:
    """Allocate buffers of garbage of the sizes a compressor's state takes (64 kB to ``len(garbage)``) and free them: its next allocations reuse that memory."""
    held = [bytearray(garbage[: rng.randint(1 << 16, len(garbage))]) for _ in range(rng.randint(1, 6))]
    for buffer in held:
        buffer[::4096] = b"\xa5" * len(range(0, len(buffer), 4096))
    del held


def _stress_worker(inputs: str, encoder: str, worker: int, threads: int, repeats: int, seed: int, reference: list[str], dirty_bytes: int) -> list[tuple[int, int, int, bytes | None]]:
    """Compress every input ``repeats`` times in ``threads`` threads: (input, thread, nth, the output when it is not the reference) of each compression."""
    with open(inputs, "rb") as handle:
        lengths = json.loads(handle.readline())
        payload = handle.read()
    texts, at = [], 0
    for length in lengths:
        texts.append(memoryview(payload)[at : at + length])
        at += length
    garbage = random.Random(seed).randbytes(dirty_bytes)
    results: list[tuple[int, int, int, bytes | None]] = []
    lock = threading.Lock()

    def run(thread: int) -> None:
        rng = random.Random(seed * 1000 + worker * 10 + thread)
        order = [i for _ in range(repeats) for i in range(len(texts))]
        rng.shuffle(order)
        mine = order[thread::threads]
        for nth, number in enumerate(mine):
            _dirty_heap(rng, garbage)
            text = texts[number]
            sink = _Count(keep=True)
            if encoder == "zlib-ng":
                pieces, left = [], len(text)
                while left > 0:
                    size = min(left, int(rng.choice((1, 100, 4096, 65536, CHUNK - 1, CHUNK + 7, 3 << 20)) * rng.random()) + 1)
                    pieces.append(size)
                    left -= size
                zlib_ng_into(sink, text, pieces=pieces)
            else:
                isal_into(sink, text)
            data = sink.value()
            with lock:
                results.append((number, thread, nth, None if hashlib.md5(data).hexdigest() == reference[number] else data))

    workers = [threading.Thread(target=run, args=(thread,)) for thread in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return results


def _inflates_to(data: bytes, text: bytes) -> bool:
    import gzip

    try:
        return gzip.decompress(data) == text
    except (OSError, EOFError, ValueError):
        return False


def _noise(stop, megabytes: int, seed: int, touched) -> None:
    """Allocate, touch and free memory (buffers of 1-256 MB, up to ``megabytes`` held) and burn CPU until ``stop``."""
    rng, held, total = random.Random(seed), [], 0
    while not stop.is_set():
        size = min(megabytes, rng.choice((1, 4, 16, 64, 256))) << 20
        while held and total + size > megabytes << 20:
            total -= len(held.pop(rng.randrange(len(held))))
        buffer = bytearray(size)
        buffer[::4096] = bytes([rng.randrange(256)]) * len(range(0, size, 4096))  # every page touched
        held.append(buffer)
        total += size
        with touched.get_lock():
            touched.value += size >> 20
        hashlib.sha256(buffer[: 1 << 20]).digest()  # and some CPU


def stress(texts: list[bytes], encoder: str = "zlib-ng", workers: int = 2, threads: int = 2, repeats: int = 2, noise: int = 1, noise_mb: int = 256, seed: int = 54,
           names: list[str] | None = None, dirty_bytes: int = 4 << 20) -> StressResult:  # fmt: skip
    """Compress every text alone (the reference), then all of them concurrently under load; see the module's docstring."""
    names = names or [f"input {number}" for number in range(len(texts))]
    alone = [compress(encoder, text) for text in texts]
    reference = [hashlib.md5(data).hexdigest() for data in alone]
    result = StressResult(encoder, len(texts), sum(map(len, texts)))
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")  # fork: no start-up imports
    with tempfile.TemporaryDirectory(prefix="gzip-stress-") as scratch:
        inputs = Path(scratch) / "inputs.bin"
        write_inputs(texts, inputs)
        stop, touched = context.Event(), context.Value("q", 0)
        noisy = [context.Process(target=_noise, args=(stop, noise_mb, seed + number, touched), daemon=True) for number in range(noise)]
        began = time.perf_counter()
        for process in noisy:
            process.start()
        while noise and touched.value == 0 and time.perf_counter() - began < 30:  # the load is on before the first compression
            time.sleep(0.01)
        try:
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                futures = [pool.submit(_stress_worker, str(inputs), encoder, worker, threads, repeats, seed, reference, dirty_bytes) for worker in range(workers)]
                for worker, future in enumerate(futures):
                    for number, thread, nth, data in future.result():
                        result.compressions += 1
                        if data is not None:
                            first = next((i for i, (a, b) in enumerate(zip(data, alone[number])) if a != b), min(len(data), len(alone[number])))
                            valid = _inflates_to(data, texts[number])
                            result.mismatches.append(Mismatch(names[number], worker, thread, nth, len(data), len(alone[number]), first, valid))
        finally:
            stop.set()
            for process in noisy:
                process.join(timeout=30)
                if process.is_alive():
                    process.terminate()
        result.wall = time.perf_counter() - began
        result.noise_mb_touched = touched.value
    return result


# --- cost ---------------------------------------------------------------------------------------


def _contenders(levels: tuple[int, ...]) -> dict[str, object]:
    contenders = {"isal 2 (the writer before)": lambda text: isal_into(_Count(), text)}
    for level in levels:
        label = f"zlib-ng {level}" + (" (the writer now)" if level == gzip_encoder.LEVEL else "")
        contenders[label] = lambda text, level=level: zlib_ng_into(_Count(), text, level)
    return contenders


def cost(texts: list[bytes], rounds: int, levels: tuple[int, ...] = (2, 1, 3, 6)) -> dict[str, dict]:
    """CPU seconds per contender per round (interleaved, the order rotating), and each one's output size."""
    import isal.igzip

    contenders = _contenders(levels)
    sizes = {}
    for name in contenders:  # sizes, once (and a warm-up)
        total = 0
        for text in texts:
            sink = _Count()
            (isal_into(sink, text) if name.startswith("isal") else zlib_ng_into(sink, text, int(name.split()[1])))
            total += sink.size
        sizes[name] = total
    new_files = [compress("zlib-ng", text) for text in texts]
    floor = "read floor: isal inflating the zlib-ng 2 files"
    contenders[floor] = None
    sizes[floor] = sum(map(len, new_files))
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for number in range(rounds):
        for name in names[number % len(names) :] + names[: number % len(names)]:
            started = time.process_time()
            if name == floor:
                for data in new_files:
                    isal.igzip.decompress(data)
            else:
                run = contenders[name]
                for text in texts:
                    run(text)
            seconds[name].append(time.process_time() - started)
        print(f"  round {number + 1}: " + ", ".join(f"{name.split(' (')[0]} {seconds[name][-1]:.2f}" for name in names), flush=True)
    return {name: {"seconds": seconds[name], "size": sizes[name]} for name in names}


def per_pair(out: Path) -> dict[str, float]:
    """Text bytes per labelled (BI-139 full) pair of a build: of BI-139 full's files alone, and of every released file."""
    import isal.igzip

    manifest = json.loads((out / "manifest.json").read_text())
    full_pairs = sum(entry.get("qrels", 0) for path, entry in manifest["files"].items() if path.startswith("BI-139/full/"))
    full_text = sum(len(isal.igzip.decompress((out / path).read_bytes())) for path in manifest["files"] if path.startswith("BI-139/full/"))
    all_text = sum(len(isal.igzip.decompress((out / path).read_bytes())) for path in manifest["files"])
    return {"full pairs": full_pairs, "full text": full_text, "all text": all_text, "full": full_text / full_pairs, "all": all_text / full_pairs}


def _median_range(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def report_cost(results: dict[str, dict], text_bytes: int, pairs: dict[str, float], release_pairs: float) -> None:
    base = next(name for name in results if name.startswith("isal"))
    new = next(name for name in results if "(the writer now)" in name)
    base_s, base_size = statistics.median(results[base]["seconds"]), results[base]["size"]
    print("\n| contender | CPU s | MB/s of text | size / text | CPU / isal 2 | size / isal 2 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, result in results.items():
        median = statistics.median(result["seconds"])
        rates = sorted(text_bytes / 1e6 / s for s in result["seconds"])
        print(f"| {name} | {_median_range(result['seconds'])} | {text_bytes / 1e6 / median:.0f} ({rates[0]:.0f}-{rates[-1]:.0f}) | {result['size'] / text_bytes:.3f} |"
              f" {median / base_s:.2f} | {result['size'] / base_size:.3f} |")  # fmt: skip
    new_rate, old_rate = text_bytes / statistics.median(results[new]["seconds"]), text_bytes / base_s
    print(f"\ntext bytes per labelled pair in {pairs['full pairs']:,.0f} BI-139 full pairs: {pairs['full']:.1f} (BI-139 full's files), {pairs['all']:.1f} (every released file)")
    for label, bytes_per_pair in (("BI-139 full alone", pairs["full"]), ("every file, this build's shape", pairs["all"])):
        text = release_pairs * bytes_per_pair
        extra = text * (1 / new_rate - 1 / old_rate) / 3600
        print(f"release text at {release_pairs / 1e9:.2f} B pairs, {label}: {text / 1e9:,.0f} GB; compressing it: zlib-ng 2 {text / new_rate / 3600:.2f} core-hours,"
              f" isal 2 {text / old_rate / 3600:.2f}: +{extra:.2f} core-hours")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=None, help="a sample build's OUT [default: /tmp/demo/out, else one made in a temporary folder]")
    parser.add_argument("--mb", type=float, default=160, help="cost: MB of text to compress each round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pairs", type=float, default=RELEASE_PAIRS, help="the release's labelled pairs, for the projection")
    parser.add_argument("--stress", action="store_true", help="the stress test instead of the cost")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--noise", type=int, default=2)
    parser.add_argument("--noise-mb", type=int, default=1024)
    parser.add_argument("--encoders", default="zlib-ng")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gzip-bench-") as scratch:
        build = find_build(args.build, Path(scratch))
        print(f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.node()} ({platform.machine()}, {len(os.sched_getaffinity(0))} cores), load {os.getloadavg()[0]:.1f};"
              f" zlib-ng {gzip_encoder.PACKAGE_VERSION} (library {gzip_encoder.LIBRARY_VERSION}); build {build}", flush=True)  # fmt: skip
        if args.stress:
            named = build_texts(build)
            texts, names = [text for _, text in named], [name for name, _ in named]
            print(f"{len(texts)} files, {sum(map(len, texts)) / 1e6:.0f} MB of text; {args.workers} processes x {args.threads} threads x {args.repeats} passes,"
                  f" {args.noise} noise processes of up to {args.noise_mb} MB", flush=True)  # fmt: skip
            print("\n| encoder | files | compressions | MB compressed | differing from the reference | wall s | MB the noise allocated and touched |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            failed = False
            for encoder in args.encoders.split(","):
                result = stress(texts, encoder, args.workers, args.threads, args.repeats, args.noise, args.noise_mb, names=names)
                print(f"| {encoder} | {result.files:,} | {result.compressions:,} | {result.text_bytes * args.workers * args.repeats / 1e6:,.0f} | {len(result.mismatches)} |"
                      f" {result.wall:.0f} | {result.noise_mb_touched:,} |", flush=True)  # fmt: skip
                for m in result.mismatches[:10]:
                    print(f"DIFFERS {encoder}: {m.file}: worker {m.worker}, thread {m.thread}, its compression {m.nth + 1}: {m.size:,} B against {m.reference_size:,},"
                          f" from byte {m.first:,}; {'a valid gzip file of the text' if m.valid else 'NOT the text'}")  # fmt: skip
                if result.mismatches:
                    by_worker = {w: sum(m.worker == w for m in result.mismatches) for w in range(args.workers)}
                    print(f"DIFFERS {encoder}: {len(result.mismatches)} in all; by worker {by_worker}; valid {sum(m.valid for m in result.mismatches)}")
                failed |= encoder == "zlib-ng" and bool(result.mismatches)
            if failed:
                raise SystemExit("zlib-ng wrote other bytes under load")
            return
        named = build_texts(build, args.mb * 1e6)
        texts = [text for _, text in named]
        text_bytes = sum(map(len, texts))
        print(f"{len(texts)} files, {text_bytes / 1e6:.1f} MB of text, {args.rounds} rounds", flush=True)
        results = cost(texts, args.rounds)
        report_cost(results, text_bytes, per_pair(build), args.pairs)


if __name__ == "__main__":
    main()
