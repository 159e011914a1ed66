"""Block-range reading of .bz2 dumps (pipeline/io/bz2_ranges.py) against plain ``bz2.BZ2File``.

Writes two generated single-stream files at compresslevel 9 (as Wikimedia's are):
Wikidata-like JSON entity lines of ~10 kB (labels, claims with statement ids, sitelinks)
and MediaWiki XML pages of wikitext, each about ``--mb`` compressed MB. Then, per file,
on one core (CPU seconds of this process: nothing here runs in a thread), in
``--rounds`` interleaved rounds (the order of the contenders alternates):

- plain: ``bz2.BZ2File`` read to the end in 1 MiB reads (the reference);
- blocks: ``iter_blocks`` over the whole file (block-wise decoding alone);
- records: the file planned (untimed) into ``--ranges`` ranges, each read by its own record
  reader (``iter_line_records`` / ``iter_page_records``) from a fresh file object, as
  separate workers would (each range also decodes the block before it);

and planning: ``plan_ranges`` with ``--cuts`` cuts, CPU per cut and bytes read per cut.
Reports medians and ranges, compressed and decompressed MB/s of one core, and the CPU
time of one 1 GB-compressed range extrapolated from the records rate.

Usage: python bench/bz2_ranges_bench.py [--mb 20] [--rounds 3] [--ranges 4] [--cuts 16] [--out bench/out/bz2]
"""

from __future__ import annotations

import argparse
import bz2
import io
import os
import random
import statistics
import time
from pathlib import Path

from clirmatrix.pipeline.io.bz2_ranges import iter_blocks, iter_line_records, iter_page_records, plan_ranges

LANGS = ["en", "de", "fr", "es", "it", "ja", "zh", "ru", "pt", "nl", "sv", "pl", "ar", "fa", "ko"]


def vocabulary(rng: random.Random) -> list[str]:
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    return ["".join(rng.choices(letters, weights=range(26, 0, -1), k=rng.randint(2, 10))) for _ in range(30_000)]


def json_entity(rng: random.Random, words: list[str], number: int) -> str:
    """One line of the Wikidata dump, ~10 kB: labels and descriptions, ~20 claims, sitelinks."""
    qid = f"Q{number}"
    labels = ",".join(f'"{lang}":{{"language":"{lang}","value":"{" ".join(rng.choices(words, k=3))}"}}' for lang in rng.sample(LANGS, 8))
    descriptions = ",".join(f'"{lang}":{{"language":"{lang}","value":"{" ".join(rng.choices(words, k=6))}"}}' for lang in rng.sample(LANGS, 6))
    claims = []
    for _ in range(rng.randint(12, 30)):
        prop = f"P{rng.randint(17, 3000)}"
        target = rng.randint(1, 10**8)
        claims.append(
            f'"{prop}":[{{"mainsnak":{{"snaktype":"value","property":"{prop}","datavalue":{{"value":{{"entity-type":"item",'
            f'"numeric-id":{target},"id":"Q{target}"}},"type":"wikibase-entityid"}},"datatype":"wikibase-item"}},'
            f'"type":"statement","id":"{qid}${rng.getrandbits(128):032x}","rank":"normal","references":[{{"hash":"{rng.getrandbits(160):040x}",'
            f'"snaks":{{"P248":[{{"snaktype":"value","property":"P248","datavalue":{{"value":{{"entity-type":"item","numeric-id":{rng.randint(1, 10**7)}}},'
            f'"type":"wikibase-entityid"}},"datatype":"wikibase-item"}}]}}}}]}}]'
        )
    sitelinks = ",".join(f'"{lang}wiki":{{"site":"{lang}wiki","title":"{" ".join(rng.choices(words, k=2))}","badges":[]}}' for lang in rng.sample(LANGS, 5))
    return (
        f'{{"type":"item","id":"{qid}","labels":{{{labels}}},"descriptions":{{{descriptions}}},"aliases":{{}},'
        f'"claims":{{{",".join(claims)}}},"sitelinks":{{{sitelinks}}},"lastrevid":{rng.randint(10**8, 2 * 10**9)}}},\n'
    )


def xml_page(rng: random.Random, words: list[str], number: int) -> str:
    """One ``<page>`` of wikitext: paragraphs, links, a template, categories."""
    paragraphs = []
    for _ in range(rng.randint(2, 25)):
        sentence = " ".join(rng.choices(words, k=rng.randint(40, 160)))
        paragraphs.append(f"{sentence} [[{' '.join(rng.choices(words, k=2))}]] {{{{cite web|url=https://example.org/{rng.getrandbits(40):x}}}}}.")
    text = "\n\n".join(paragraphs) + "".join(f"\n[[Category:{w}]]" for w in rng.choices(words, k=3))
    return (
        f"  <page>\n    <title>{' '.join(rng.choices(words, k=2))}</title>\n    <ns>0</ns>\n    <id>{number}</id>\n"
        f"    <revision>\n      <id>{rng.randint(10**8, 10**9)}</id>\n      <timestamp>2026-11-01T00:00:00Z</timestamp>\n"
        f'      <model>wikitext</model>\n      <format>text/x-wiki</format>\n      <text bytes="{len(text)}" xml:space="preserve">'
        f"{text.replace('&', '&amp;').replace('<', '&lt;')}</text>\n    </revision>\n  </page>\n"
    )


def write_file(path: Path, kind: str, compressed_mb: float, seed: int) -> None:
    """A single bz2 stream of about ``compressed_mb`` MB (level 9)."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    compressor = bz2.BZ2Compressor(9)
    with open(path, "wb") as out:
        if kind == "json":
            out.write(compressor.compress(b"[\n"))
        else:
            out.write(compressor.compress(b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n  <siteinfo>\n    <sitename>Wikipedia</sitename>\n  </siteinfo>\n'))
        number = 0
        while out.tell() < compressed_mb * 1e6:
            batch = "".join(json_entity(rng, words, number + i) if kind == "json" else xml_page(rng, words, number + i) for i in range(200))
            number += 200
            out.write(compressor.compress(batch.encode()))
        out.write(compressor.compress(b"]\n" if kind == "json" else b"</mediawiki>\n"))
        out.write(compressor.flush())


class CountingFile(io.RawIOBase):
    """A file that counts the bytes read through it (the planner's reads)."""

    def __init__(self, path: Path) -> None:
        self.handle = open(path, "rb")
        self.read_bytes = 0

    def read(self, n: int = -1) -> bytes:
        data = self.handle.read(n)
        self.read_bytes += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.handle.seek(offset, whence)

    def tell(self) -> int:
        return self.handle.tell()

    def close(self) -> None:
        self.handle.close()


def plain(path: Path) -> int:
    total = 0
    with bz2.BZ2File(open(path, "rb")) as stream:
        while data := stream.read(1 << 20):
            total += len(data)
    return total


def blocks(path: Path) -> int:
    size = path.stat().st_size
    with open(path, "rb") as raw:
        return sum(len(block.data) for block in iter_blocks(raw, size, 0, str(path)))


def records(path: Path, kind: str, plan: list) -> int:
    size = path.stat().st_size
    reader = iter_line_records if kind == "json" else iter_page_records
    total = 0
    for block_range in plan:
        with open(path, "rb") as raw:
            total += sum(len(record.data) for record in reader(raw, size, block_range, str(path)))
    return total


def cpu(fn, *args) -> tuple[float, int]:
    start = time.process_time()
    result = fn(*args)
    return time.process_time() - start, result


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="compressed MB per generated file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranges", type=int, default=4)
    parser.add_argument("--cuts", type=int, default=16)
    parser.add_argument("--out", default="bench/out/bz2")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    for seed, kind in enumerate(("json", "xml")):
        path = out / f"bench-{kind}-{args.mb:g}mb.{kind}.bz2"
        if not path.exists():
            start = time.perf_counter()
            write_file(path, kind, args.mb, seed)
            print(f"wrote {path} in {time.perf_counter() - start:.0f} s")
        size = path.stat().st_size
        text_size = plain(path)
        with open(path, "rb") as raw:
            plan = plan_ranges(raw, size, max(1, size // args.ranges), str(path))  # planning is timed on its own below
        contenders = {"plain BZ2File": lambda p=path: plain(p), "blocks": lambda p=path: blocks(p), "records": lambda p=path, k=kind, r=plan: records(p, k, r)}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for round_number in range(args.rounds):
            names = list(contenders) if round_number % 2 == 0 else list(reversed(contenders))
            for name in names:
                seconds, _ = cpu(contenders[name])
                times[name].append(seconds)
        print(f"\n{kind}: {size / 1e6:.1f} MB compressed, {text_size / 1e6:.1f} MB of text (ratio {text_size / size:.1f}), {args.rounds} rounds")
        print("| reader | CPU s | compressed MB/s | text MB/s | / plain |")
        print("|---|---:|---:|---:|---:|")
        base = times["plain BZ2File"]
        for name, values in times.items():
            ratios = [value / reference for value, reference in zip(values, base)]
            print(
                f"| {name} | {summary(values)} | {summary([size / 1e6 / v for v in values])} | "
                f"{summary([text_size / 1e6 / v for v in values])} | {summary(ratios)} |"
            )
        rate = statistics.median(size / v for v in times["records"])
        print(f"one 1 GB-compressed range, records: {1e9 / rate / 60:.1f} CPU minutes ({1e9 / rate:.0f} s)")
        plan_times, plan_reads = [], []
        for _ in range(args.rounds):
            raw = CountingFile(path)
            seconds, plan = cpu(plan_ranges, raw, size, max(1, size // (args.cuts + 1)), str(path))
            raw.close()
            cuts = len(plan) - 1
            plan_times.append(seconds / cuts * 1000)
            plan_reads.append(raw.read_bytes / cuts / 1e6)
        print(f"planning: {summary(plan_times)} ms CPU per cut, {summary(plan_reads)} MB read per cut ({cuts} cuts)")


if __name__ == "__main__":
    main()
