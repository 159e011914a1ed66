"""Inflating a huge .tar.gz dump: sequential decoders, seek indexes, and the cost of one index pass.

Writes a generated Wikimedia Enterprise-like dump (``--mb`` MB of NDJSON, one HTML
article a line, in ``--members`` tar members, gzip level 6 as ``gzip`` writes it), then
measures, in one process, the contenders interleaved round by round (``--rounds``):

- ``zlib``: the standard library's ``decompressobj`` over 1 MiB reads (the reference);
- ``isal``: ``isal_zlib.decompressobj``, the same loop; ``zlib_ng`` likewise when installed;
- ``indexed_gzip``: ``IndexedGzipFile.build_full_index`` (one pass that inflates and
  records seek points) and a plain ``read`` through it;
- ``rapidgzip`` with ``parallelization=1`` and ``2``: a plain read;
- ``gzip_index.build_index``: this project's index pass (checkpoints, tar members, CRC);
- ``gzip_ranges.read_range``: a unit's read from a checkpoint in the middle.

Every figure is MB of *uncompressed* output a second of wall clock and a CPU-second
(process CPU time, so a threaded decoder's extra cores show), the median and range over
the rounds. The machine is shared and noisy: compare within one run only.

Usage: python bench/gzip_ranges_bench.py [--mb 1500] [--members 6] [--rounds 5] [--reuse] [--out /tmp/gzr]
"""

from __future__ import annotations

import argparse
import io
import itertools
import multiprocessing
import os
import random
import statistics
import tarfile
import time
import zlib
from pathlib import Path

import orjson

MEMBER_NAME = "enwiki_namespace_0_{}.ndjson"


def _vocabulary(rng: random.Random, n: int = 50_000) -> tuple[list[str], list[float]]:
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    words = ["".join(rng.choice(letters[: rng.randint(8, 26)]) for _ in range(rng.randint(1, 12))) for _ in range(n)]
    return words, list(itertools.accumulate(1.0 / (i + 1) ** 1.05 for i in range(n)))


def article(rng: random.Random, words: list[str], cum: list[float], i: int) -> bytes:
    """One NDJSON line shaped like an Enterprise HTML record: Parsoid-like HTML, wikitext, metadata."""
    n = int(rng.lognormvariate(8.0, 0.9)) + 50
    toks = rng.choices(words, cum_weights=cum, k=n)
    title = toks[0].capitalize()
    parts = [
        '<!DOCTYPE html>\n<html prefix="dc: http://purl.org/dc/terms/ mw: http://mediawiki.org/rdf/" '
        f'about="https://en.wikipedia.org/wiki/Special:Redirect/revision/{i * 7 + 1000000}"><head><meta charset="utf-8"/>'
        f'<meta property="mw:pageId" content="{i}"/><title>{title}</title></head><body id="mwAA" lang="en" '
        'class="mw-content-ltr sitedir-ltr ltr mw-body-content parsoid-body mediawiki mw-parser-output" dir="ltr">'
        '<section data-mw-section-id="0" id="mwAQ">'
    ]
    wikitext = []
    eid = 2
    pos = 0
    while pos < n:
        para = toks[pos : pos + rng.randint(20, 120)]
        pos += len(para)
        out, wout = [], []
        for j, w in enumerate(para):
            if j % 9 == 4:
                t = w.capitalize()
                out.append(f'<a rel="mw:WikiLink" href="./{t}" title="{t}" id="mw{eid:X}">{w}</a>')
                wout.append(f"[[{t}|{w}]]")
                eid += 1
            else:
                out.append(w)
                wout.append(w)
        if rng.random() < 0.6:
            out.append(
                f'<sup about="#mwt{eid}" class="mw-ref reference" id="cite_ref-{eid}" rel="dc:references" typeof="mw:Extension/ref" '
                f'data-mw=\'{{"name":"ref","attrs":{{}},"body":{{"id":"mw-reference-text-cite_note-{eid}"}}}}\'>'
                f'<a href="./{title}#cite_note-{eid}" style="counter-reset: mw-Ref {eid};"><span class="mw-reflink-text">[{eid}]</span></a></sup>'
            )
            wout.append(f"<ref>{{{{cite web |url=https://www.example.org/{para[0]} |title={' '.join(para[:4])} |access-date=2023-01-{eid % 28 + 1:02d}}}}}</ref>")
        parts.append(f'<p id="mw{eid:X}">{" ".join(out)}.</p>')
        wikitext.append(" ".join(wout) + ".")
        eid += 1
        if rng.random() < 0.15:
            head = para[0].capitalize()
            parts.append(f'</section><section data-mw-section-id="{eid}" id="mw{eid:X}"><h2 id="{head}">{head}</h2>')
            wikitext.append(f"== {head} ==")
            eid += 1
    parts.append("</section></body></html>")
    record = {
        "name": f"{title} {toks[1]}",
        "identifier": i,
        "date_modified": f"2024-03-0{i % 9 + 1}T12:00:{i % 60:02d}Z",
        "version": {"identifier": i * 7 + 1000000, "comment": " ".join(toks[2:8]), "editor": {"identifier": i % 5000, "name": f"User{i % 5000}"}},
        "url": f"https://en.wikipedia.org/wiki/{title}",
        "namespace": {"identifier": 0},
        "in_language": {"identifier": "en"},
        "main_entity": {"identifier": f"Q{i * 3 + 1}", "url": f"http://www.wikidata.org/entity/Q{i * 3 + 1}"},
        "is_part_of": {"identifier": "enwiki"},
        "article_body": {"html": "".join(parts), "wikitext": "\n\n".join(wikitext)},
        "license": [{"name": "Creative Commons Attribution Share Alike 3.0 Unported", "identifier": "CC-BY-SA-3.0"}],
    }
    return orjson.dumps(record) + b"\n"


def _member(job: tuple[int, int]) -> bytes:
    index, size = job
    rng = random.Random(1000 + index)
    words, cum = _vocabulary(random.Random(7))
    lines, total, i = [], 0, index * 10_000_000
    while total < size:
        lines.append(article(rng, words, cum, i))
        total += len(lines[-1])
        i += 1
    return b"".join(lines)


def write_dump(path: Path, megabytes: int, members: int) -> None:
    """A tar of ``members`` NDJSON files, gzip level 6 (one gzip member), written atomically."""
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    jobs = [(k, megabytes * 1_000_000 // members) for k in range(members)]
    with multiprocessing.Pool(min(members, os.cpu_count() or 1)) as pool, open(temporary, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz, tarfile.open(fileobj=gz, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for k, data in enumerate(pool.imap(_member, jobs)):
                info = tarfile.TarInfo(MEMBER_NAME.format(k))
                info.size = len(data)
                info.mtime = 0
                tar.addfile(info, io.BytesIO(data))
    os.replace(temporary, path)


# --- contenders: each returns the uncompressed bytes it produced -----------------------------


def _loop(module, path: Path) -> int:
    decoder, total = module.decompressobj(31), 0
    with open(path, "rb") as raw:
        while chunk := raw.read(1 << 20):
            total += len(decoder.decompress(chunk))
    if not decoder.eof:
        raise RuntimeError("stream cut short")
    return total


def _zlib(path: Path) -> int:
    return _loop(zlib, path)


def _isal(path: Path) -> int:
    from isal import isal_zlib

    return _loop(isal_zlib, path)


def _zlib_ng(path: Path) -> int:
    from zlib_ng import zlib_ng

    return _loop(zlib_ng, path)


def _indexed_gzip_index(path: Path) -> int:
    import indexed_gzip

    with indexed_gzip.IndexedGzipFile(str(path), spacing=64 << 20) as handle:
        handle.build_full_index()
        return handle.seek(0, 2)


def _indexed_gzip_read(path: Path) -> int:
    import indexed_gzip

    total = 0
    with indexed_gzip.IndexedGzipFile(str(path), spacing=64 << 20) as handle:
        while data := handle.read(4 << 20):
            total += len(data)
    return total


def _rapidgzip(parallelization: int):
    def run(path: Path) -> int:
        import rapidgzip

        total = 0
        with open(path, "rb") as raw, rapidgzip.RapidgzipFile(raw, parallelization=parallelization) as handle:
            while data := handle.read(4 << 20):
                total += len(data)
        return total

    return run


def _ours_index(spacing: int):
    def run(path: Path) -> int:
        from clirmatrix.pipeline.io import gzip_index

        with open(path, "rb") as raw:
            index = gzip_index.build_index(raw, str(path), spacing=spacing)
        _ours_index.last = index
        return index.uncompressed_size

    return run


def _ours_read(path: Path) -> int:
    from clirmatrix.pipeline.io import gzip_ranges

    with open(path, "rb") as raw:
        return sum(len(chunk) for chunk in gzip_ranges.read_range(raw, _ours_index.last, 0, str(path)))


def _ours_units(target: int):
    def run(path: Path) -> int:
        from clirmatrix.pipeline.io import gzip_ranges

        total = 0
        with open(path, "rb") as raw:
            for unit in gzip_ranges.plan_units(_ours_index.last, target):
                total += sum(len(line.data) for line in gzip_ranges.iter_unit_lines(raw, _ours_index.last, unit, str(path)))
        return total

    return run


def _cpu() -> float:
    usage = os.times()
    return usage.user + usage.system


def measure(path: Path, rounds: int, spacing: int, unit_target: int, only: list[str] | None = None) -> dict[str, dict]:
    """Every contender once a round, in a rotated order; MB of output a wall second and a CPU second."""
    contenders = {
        "zlib": _zlib,
        "isal": _isal,
        "zlib_ng": _zlib_ng,
        "indexed_gzip build_full_index": _indexed_gzip_index,
        "indexed_gzip read": _indexed_gzip_read,
        "rapidgzip parallelization=1": _rapidgzip(1),
        "rapidgzip parallelization=2": _rapidgzip(2),
        "gzip_ranges build_index": _ours_index(spacing),
        "gzip_ranges read_range(0)": _ours_read,
        "gzip_ranges units, all lines": _ours_units(unit_target),
    }
    if only:
        contenders = {k: v for k, v in contenders.items() if any(o in k for o in only) or k.startswith("gzip_ranges build")}
    names = list(contenders)
    results: dict[str, dict] = {name: {"wall": [], "cpu": []} for name in names}
    for round_number in range(rounds):
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        order.sort(key=lambda n: not n.startswith("gzip_ranges build"))  # the others need its index
        for name in order:
            wall, cpu = time.perf_counter(), _cpu()
            produced = contenders[name](path)
            wall, cpu = time.perf_counter() - wall, _cpu() - cpu
            results[name]["wall"].append(produced / 1e6 / wall)
            results[name]["cpu"].append(produced / 1e6 / cpu)
            print(f"  round {round_number + 1} {name}: {produced / 1e6 / wall:.0f} MB/s, {produced / 1e6 / cpu:.0f} MB/cpu-s", flush=True)
    return results


def truncation(path: Path, cuts: int = 140) -> dict[str, int]:
    """How many of ``cuts`` prefixes of a gzip file each reader accepts without an error (it must be none)."""
    import indexed_gzip
    import rapidgzip

    from clirmatrix.pipeline.io import gzip_index

    data = path.read_bytes()
    points = sorted(set(list(range(0, 40)) + list(range(100, len(data), max(1, len(data) // (cuts - 80)))) + list(range(len(data) - 40, len(data)))))

    def indexed(blob: bytes) -> None:
        with indexed_gzip.IndexedGzipFile(fileobj=io.BytesIO(blob), spacing=1 << 20) as handle:
            handle.build_full_index()

    def rapid(blob: bytes) -> None:
        with rapidgzip.RapidgzipFile(io.BytesIO(blob), parallelization=1) as handle:
            while handle.read(1 << 20):
                pass

    def ours(blob: bytes) -> None:
        gzip_index.build_index(io.BytesIO(blob), "cut.gz", spacing=1 << 16, tar=False)

    accepted = {"indexed_gzip": 0, "rapidgzip": 0, "gzip_ranges": 0}
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    os.dup2(devnull, 2)  # rapidgzip prints its errors to stderr from C++
    try:
        for cut in points:
            for name, reader in (("indexed_gzip", indexed), ("rapidgzip", rapid), ("gzip_ranges", ours)):
                try:
                    reader(data[:cut])
                    accepted[name] += 1
                except Exception:  # noqa: BLE001 (any error is a refusal: what is counted is silence)
                    pass
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
    accepted["cut points"] = len(points)
    return accepted


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=1500, help="uncompressed MB of NDJSON")
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spacing-mb", type=int, default=16, help="gzip_ranges checkpoint spacing, compressed MB")
    parser.add_argument("--unit-mb", type=int, default=64, help="gzip_ranges unit target, compressed MB")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None, help="comma list of contender name parts")
    parser.add_argument("--truncation", action="store_true", help="also count the cut points each reader accepts silently")
    parser.add_argument("--reuse", action="store_true", help="keep a dump generated earlier with the same size")
    parser.add_argument("--out", type=Path, default=Path("/tmp/gzr"))
    args = parser.parse_args(argv)
    path = args.out / f"dump-{args.mb}.tar.gz"
    if not (args.reuse and path.exists()):
        started = time.perf_counter()
        write_dump(path, args.mb, args.members)
        print(f"wrote {path} in {time.perf_counter() - started:.0f} s")
    compressed = path.stat().st_size
    print(f"{path}: {compressed / 1e6:,.0f} MB compressed, {args.mb:,} MB of NDJSON, load {os.getloadavg()[0]:.1f}")
    results = measure(path, args.rounds, args.spacing_mb << 20, args.unit_mb << 20, args.only)
    index = _ours_index.last
    ratio = index.uncompressed_size / compressed
    print(f"\nratio {ratio:.2f}; index: {len(index.checkpoints)} checkpoints, {len(index.to_bytes()):,} bytes at spacing {args.spacing_mb} MB")
    reference = statistics.median(results["zlib"]["cpu"]) if "zlib" in results else None
    print("\n| contender | MB/s wall | MB/cpu-s | cpu vs zlib | compressed GB/cpu-min |")
    print("|---|---:|---:|---:|---:|")
    for name, values in results.items():
        cpu = statistics.median(values["cpu"])
        versus = f"{cpu / reference:.2f}x" if reference else "-"
        print(f"| {name} | {_summary(values['wall'])} | {_summary(values['cpu'])} | {versus} | {cpu / ratio * 60 / 1000:.1f} |")
    build = statistics.median(results["gzip_ranges build_index"]["cpu"]) / ratio  # compressed MB a CPU-second
    for gigabytes in (100, 130):
        print(f"index pass over {gigabytes} GB compressed at this ratio: {gigabytes * 1000 / build / 60:.0f} core-minutes")
    if args.truncation:
        small = args.out / "truncation.gz"
        import gzip

        small.write_bytes(gzip.compress(_member((0, 20_000_000)), 6, mtime=0))
        print("\ncut points accepted without an error:", truncation(small))


if __name__ == "__main__":
    main()
