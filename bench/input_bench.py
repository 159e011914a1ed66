"""Extraction per core from today's inputs at real article sizes, against the floor of reading the same bytes.

Writes realistic English dumps with ``bench/realistic_dumps.py`` (Enterprise HTML tar.gz
and ``pages-articles-multistream.xml.bz2`` whose articles follow published size
distributions: docs/benchmarks.md) and a CirrusSearch content dump of the same articles
(``text`` from the HTML, ``source_text`` the wikitext, as CirrusSearch writes them), then
measures on one core, CPU seconds, the contenders interleaved in every round:

- the floor of each format: decompress every byte (isal for gzip, libbzip2 for bz2) and
  split it into the records the reader sees (lines; for XML, nothing more);
- the docs stage's own readers, unit by unit as the stage cuts them (``--split-mb``;
  the HTML dump's index pass counted apart), minus Parquet writing: every article is
  read, filtered and turned into text;
- the HTML reader with every page parsed by lexbor (``html_text.parsed_text``), as it was
  before the one-pass scan (``pipeline/method/html_scan.py``) read Parsoid's pages;
- the HTML index pass and reader inflating with the system zlib, as they did before
  ``pipeline/io/inflate.py`` drove zlib-ng (``_system_zlib``).

Then one unit of each format runs alone in a fresh process for its peak memory. It
prints MB/s (compressed and decompressed) and articles/s per core, medians and ranges,
and the projection of each format to English and to the 139 languages of BI-139 at the
published input sizes.

Usage: python bench/input_bench.py [--articles 3000] [--rounds 3] [--out /tmp/input_bench] [--reuse] [--split-mb 16]
"""

from __future__ import annotations

import argparse
import bz2
import contextlib
import ctypes
import ctypes.util
import gzip
import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import orjson
from isal import igzip

from clirmatrix.pipeline.extraction import docs as extract_docs
from clirmatrix.pipeline.io import fileio, gzip_index, inflate
from clirmatrix.pipeline.io.badinput import FileReport
from clirmatrix.pipeline.method import dumps, html_scan, html_text
from clirmatrix.pipeline.method.html_text import html_to_text

# Published input sizes (docs/benchmarks.md, 2026-11-26): compressed GB, and articles.
REAL = {
    "html": {"en": 100.0, "all": 600.0},  # projected by bench/realistic_dumps.py (no listing found)
    "xml": {"en": 24.8, "all": 145.0},  # en published; all projected
    "cirrus": {"en": 25.1, "all": 150.0},  # en 2017 published; all assumed like XML (past dates only)
}
ARTICLES = {"en": 7.21e6, "all": 65.7e6}


def write_cirrus(html_dump: Path, out: Path) -> Path:
    """A CirrusSearch content dump of the HTML dump's articles: what CirrusSearch would have indexed for them."""
    report = FileReport(str(html_dump))
    from clirmatrix.pipeline.formats.enterprise_html import tar_lines

    lines = []
    with gzip.open(html_dump, "rb") as stream:
        for _, line in tar_lines(stream, report):
            record = orjson.loads(line)
            text = html_to_text(record["article_body"]["html"])
            lines.append(orjson.dumps({"index": {"_id": str(record["identifier"])}}))
            lines.append(
                orjson.dumps(
                    {
                        "namespace": 0, "title": record["name"], "text": text, "opening_text": text[:300],
                        "source_text": record["article_body"]["wikitext"], "wikibase_item": record.get("main_entity", {}).get("identifier"),
                        "page_id": record["identifier"], "language": "en", "redirect": [],
                    }
                )
            )
    path = out / "enwiki-20240101-cirrussearch-content.json.gz"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as zipped:
        zipped.write(b"\n".join(lines) + b"\n")
    return path


class _ZlibStream(ctypes.Structure):
    """The system zlib's ``z_stream`` (zlib.h, LP64): as zlib-ng's but with ``unsigned long`` adler."""

    _fields_ = [(name, kind) for name, kind in inflate.ZStream._fields_ if name not in ("adler", "reserved")] + [("adler", ctypes.c_ulong), ("reserved", ctypes.c_ulong)]


@contextlib.contextmanager
def _system_zlib():
    """``pipeline/io/inflate.py`` on the system zlib (the calls the readers used before zlib-ng) while inside."""
    lib = ctypes.CDLL(ctypes.util.find_library("z"))
    stream = ctypes.POINTER(_ZlibStream)
    lib.zlibVersion.restype = ctypes.c_char_p
    for name, argtypes in {"inflateInit2_": [stream, ctypes.c_int, ctypes.c_char_p, ctypes.c_int], "inflateReset2": [stream, ctypes.c_int], "inflate": [stream, ctypes.c_int],
                           "inflateEnd": [stream], "inflatePrime": [stream, ctypes.c_int, ctypes.c_int], "inflateSetDictionary": [stream, ctypes.c_char_p, ctypes.c_uint]}.items():
        getattr(lib, name).argtypes = argtypes
    system = types.SimpleNamespace(
        init2=lambda ref, bits: lib.inflateInit2_(ref, bits, lib.zlibVersion(), ctypes.sizeof(_ZlibStream)), reset2=lib.inflateReset2, inflate=lib.inflate,
        end=lib.inflateEnd, prime=lib.inflatePrime, set_dictionary=lib.inflateSetDictionary, crc32_combine=inflate.library().crc32_combine,
    )
    saved = inflate.library(), inflate.ZStream
    inflate._LIB, inflate.ZStream = system, _ZlibStream
    try:
        yield
    finally:
        inflate._LIB, inflate.ZStream = saved


def _no_scan(source: bytes) -> None:
    """html_scan.scan_text refusing every page: html_to_text parses each with lexbor."""
    return None


def floor(kind: str, path: Path) -> tuple[int, int]:
    """Decompress and split into records: (decompressed bytes, records)."""
    total = records = 0
    opener = bz2.open if kind == "xml" else igzip.open
    with opener(path, "rb") as stream:
        if kind == "xml":
            while chunk := stream.read(1 << 20):
                total += len(chunk)
                records += chunk.count(b"<page>")
        else:
            for line in stream:
                total += len(line)
                records += 1
    return total, records


def units_of(kind: str, dump: dumps.DumpFile, split_bytes: int, work: Path) -> list[extract_docs.DocsUnit]:
    if kind == "html":
        index_dir = work / "_index"
        index_dir.mkdir(parents=True, exist_ok=True)
        spacing = extract_docs.index_spacing(split_bytes)
        path = extract_docs.index_path(str(work), dump.path, spacing)
        if not Path(path).exists():
            with fileio.open_raw(dump.path) as raw:
                fileio.write_bytes(path, gzip_index.build_index(raw, dump.path, spacing, tar=True).to_bytes())
    return extract_docs.plan_units({"en": [dump]}, split_bytes, str(work))


def index_pass(dump: dumps.DumpFile, split_bytes: int) -> int:
    with fileio.open_raw(dump.path) as raw:
        return len(gzip_index.build_index(raw, dump.path, extract_docs.index_spacing(split_bytes), tar=True).checkpoints)


def read_unit(unit: extract_docs.DocsUnit) -> tuple[int, int]:
    """(articles, text characters) of one unit, read as the docs stage reads it."""
    report = FileReport(unit.dump.path, "en")
    articles = chars = 0
    with fileio.open_raw(unit.dump.path) as raw:
        found = extract_docs.read_dump(raw, unit.dump, report) if unit.part is None else extract_docs.read_range(raw, unit, report, [])
        for article in found:
            articles += 1
            chars += len(article.text)
    return articles, chars


def cpu(job, *job_args) -> tuple[float, object]:
    started = time.process_time()
    result = job(*job_args)
    return time.process_time() - started, result


def _compressed(unit: extract_docs.DocsUnit) -> int:
    part = unit.part
    return 0 if part is None else getattr(part, "compressed", 0) or getattr(part, "compressed_bytes", 0)


def unit_memory(kind: str, args: argparse.Namespace) -> dict:
    """The largest unit of a format, alone in a fresh process (``--one-unit``): its CPU seconds and the process's peak RSS."""
    command = [sys.executable, __file__, "--out", args.out, "--split-mb", str(args.split_mb), "--one-unit", kind]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _status_mb(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` of this process in MB (Linux): ru_maxrss would carry the parent's peak across fork and exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_unit(kind: str, path: Path, split_bytes: int, work: Path) -> dict:
    dump = dumps.DumpFile(str(path), "en", kind, "20261101")
    largest = max(units_of(kind, dump, split_bytes, work), key=_compressed)
    Path("/proc/self/clear_refs").write_text("5")  # resets the peak (VmHWM) to the present RSS
    before = _status_mb("VmRSS")
    seconds, (articles, _) = cpu(read_unit, largest)
    return {"articles": articles, "compressed_mb": round((_compressed(largest) or path.stat().st_size) / 1e6, 1), "cpu_s": round(seconds, 2),
            "rss_before_mb": round(before), "rss_peak_mb": round(_status_mb("VmHWM"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="/tmp/input_bench")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--split-mb", type=int, default=16, help="range size for the bench's dumps (the build's default is 128)")
    parser.add_argument("--one-unit", choices=("html", "xml", "cirrus"), help=argparse.SUPPRESS)  # the memory probe's own process
    args = parser.parse_args()
    out, split_bytes = Path(args.out), args.split_mb << 20
    stats_file = out / "realistic-stats.json"
    if args.one_unit:
        patterns = {"html": "*ENTERPRISE-HTML.json.tar.gz", "xml": "*pages-articles-multistream.xml.bz2", "cirrus": "*cirrussearch-content.json.gz"}
        print(json.dumps(one_unit(args.one_unit, next(out.glob(patterns[args.one_unit])), split_bytes, out / "work" / args.one_unit)))
        return
    if not (args.reuse and stats_file.exists()):
        from realistic_dumps import write_realistic_dumps

        out.mkdir(parents=True, exist_ok=True)
        write_realistic_dumps(out, "en", args.articles, ("html", "xml"), seed=1, gzip_level=6)
        write_cirrus(next(out.glob("*ENTERPRISE-HTML.json.tar.gz")), out)
    paths = {
        "html": next(out.glob("*ENTERPRISE-HTML.json.tar.gz")),
        "xml": next(out.glob("*pages-articles-multistream.xml.bz2")),
        "cirrus": next(out.glob("*cirrussearch-content.json.gz")),
    }
    work = out / "work"
    found = {kind: dumps.DumpFile(str(path), "en", kind, "20261101") for kind, path in paths.items()}
    units = {kind: units_of(kind, dump, split_bytes, work / kind) for kind, dump in found.items()}
    sizes = {kind: path.stat().st_size for kind, path in paths.items()}
    times: dict[str, list[float]] = {}
    facts: dict[str, dict] = {}
    for round_number in range(args.rounds):
        for kind, dump in found.items():
            seconds, (decompressed, records) = cpu(floor, kind, paths[kind])
            times.setdefault(f"{kind} floor", []).append(seconds)
            facts[kind] = {"decompressed": decompressed}
            if kind == "html":
                for contender in ("index pass", "index pass, system zlib"):
                    with _system_zlib() if contender.endswith("system zlib") else contextlib.nullcontext():
                        seconds, checkpoints = cpu(index_pass, dump, split_bytes)
                    times.setdefault(f"html {contender}", []).append(seconds)
            contenders = ("reader", "reader, system zlib", "reader, lexbor only") if kind == "html" else ("reader",)
            for contender in contenders:
                html_text.scan_text = _no_scan if contender.endswith("lexbor only") else html_scan.scan_text
                started = time.process_time()
                articles = chars = 0
                with _system_zlib() if contender.endswith("system zlib") else contextlib.nullcontext():
                    for unit in units[kind]:
                        n, c = read_unit(unit)
                        articles, chars = articles + n, chars + c
                times.setdefault(f"{kind} {contender}", []).append(time.process_time() - started)
                facts[kind].update(articles=articles, chars=chars, units=len(units[kind]))
            html_text.scan_text = html_scan.scan_text
        print(f"round {round_number + 1}: " + ", ".join(f"{name} {values[-1]:.1f}s" for name, values in times.items()), flush=True)

    print(f"\nEnglish-like dumps of {args.articles:,} articles; CPU seconds on one core, median (range) of {args.rounds} interleaved rounds")
    print("| format | contender | CPU s | compressed MB/s | decompressed MB/s | articles/s | x floor |")
    print("|---|---|---:|---:|---:|---:|---:|")
    projection = []
    for kind in found:
        floor_median = statistics.median(times[f"{kind} floor"])
        names = [f"{kind} floor", f"{kind} reader"]
        if kind == "html":
            names[1:1] = ["html index pass", "html index pass, system zlib"]
            names += ["html reader, system zlib", "html reader, lexbor only"]
        for name in names:
            values = times[name]
            median = statistics.median(values)
            articles = facts[kind]["articles"]
            print(
                f"| {kind} | {name.split(' ', 1)[1]} | {median:.2f} ({min(values):.2f}-{max(values):.2f}) | {sizes[kind] / 1e6 / median:.1f} | "
                f"{facts[kind]['decompressed'] / 1e6 / median:.1f} | {articles / median:,.0f} | {median / floor_median:.2f} |"
            )
        reader = statistics.median(times[f"{kind} reader"]) + (statistics.median(times["html index pass"]) if kind == "html" else 0)
        per_gb = reader / (sizes[kind] / 1e9)
        projection.append((kind, per_gb, {where: REAL[kind][where] * per_gb / 3600 for where in ("en", "all")}))
    counts = ", ".join(f"{kind} {facts[kind]['units']}" for kind in found)
    print(f"\nunits: {counts} at --split-mb {args.split_mb}")
    print("\n| format | core-s per compressed GB | English (core-hours) | 139 languages (core-hours) |")
    print("|---|---:|---:|---:|")
    for kind, per_gb, hours in projection:
        print(f"| {kind} | {per_gb:,.0f} | {hours['en']:.1f} | {hours['all']:.1f} |")
    print("\nlargest unit alone (fresh process):")
    for kind in paths:
        print(f"  {kind}: {unit_memory(kind, args)}")


if __name__ == "__main__":
    main()
