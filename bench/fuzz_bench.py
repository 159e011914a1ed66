"""Damaged dumps, read as the extraction jobs read them: each one fails naming its file, or every record is accounted for.

A clean sample (``clirmatrix sample --clean``: en CirrusSearch .gz, ar CirrusSearch
.bz2 parts, fr MediaWiki XML .bz2, the Wikidata .json.gz, plus uncompressed copies of
three of them; and of ``--inputs fresh``, the de Enterprise HTML .tar.gz) is damaged one
way at a time, at a random place:

- ``truncate``: the file cut at any byte;
- ``flip``: 1-3 bytes flipped anywhere in the stored (compressed) bytes;
- ``delete``, ``duplicate``, ``garble``: one line removed, doubled, or overwritten
  with noise, inside the decompressed text (then compressed again).

Each damaged file is read as the docs stage reads it (``extraction.docs.plan_units``: a
bz2 XML dump in ranges of bz2 blocks, the HTML dump through its seek index in ranges of
its members, the rest whole; ranges of 16 kB so that every file is several) or as the
Wikidata reader does, and judged by the jobs' own checks (``check_bad_fraction``, and
the cross-range CRC check) with a
``--max-bad-fraction`` of 5%, so a few bad lines pass and their accounting is checked:

- ``failed``: the check stopped the run with a message naming the file (exit 2 in the CLI);
- ``passed``: the run went on, ``records == kept + filtered + rejected``, and every
  record fewer than the clean file's is explained by a bad or filtered one (or left
  the input itself: a deleted Wikidata line, a line break flipped away; see ``mutate``);
- ``lost``: the run went on with fewer records kept than the counts explain;
- ``crashed``: any other exception (a traceback in the CLI).

Usage: python bench/fuzz_bench.py [--cases 400] [--seed 1] [--docs-per-lang 300] [--out bench/out/fuzz]

``--consumer`` fuzzes the other side instead, the commands run on a release
(``download``, ``validate``, ``irds``; ``fuzz_consumer.py`` says how), on ``--release DIR``
or on a build of a small sample made first. ``--sql`` damages SQL table dumps and checks
every row that the damage did not touch is read (``fuzz_sql.py``). ``--commands`` runs the
real commands: ``build`` over a ``.bz2`` dump cut at a random byte, and a Ctrl-C at a random
moment of ``build``, ``export`` and ``dumps fetch``, each then rerun (``fuzz_commands.py``).
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import random
import shutil
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.extraction import docs as extract_docs
from clirmatrix.pipeline.formats.wikidata import SitelinkFilter, read_sitelinks
from clirmatrix.pipeline.io import bz2_ranges, fileio
from clirmatrix.pipeline.io.badinput import DamagedInputError, FileReport, TooManyBadRecords, check_bad_fraction
from clirmatrix.pipeline.method.dumps import CIRRUS, HTML, XML, DumpFile
from clirmatrix.pipeline.tools.sample import write_sample_dumps

MUTATIONS = ("truncate", "flip", "delete", "duplicate", "garble")
MAX_BAD_FRACTION = 0.05
LANGS = ("en", "ar", "fr")
SPLIT_BYTES = 16_000  # several ranges per sample file (the HTML index's checkpoints are at least 64 kB apart)


@dataclass(frozen=True)
class Input:
    """One clean dump file to damage: its format name, path, language and reader kind."""

    name: str  # e.g. "cirrus.gz"
    path: Path
    lang: str
    kind: str  # CIRRUS, HTML, XML or "wikidata"


@dataclass(frozen=True)
class Outcome:
    input: str  # the Input's name
    mutation: str
    damage: str  # where and how
    verdict: str  # passed, failed, lost, crashed
    detail: str


def prepare_inputs(folder: Path, docs_per_lang: int = 300, seed: int = 13) -> list[Input]:
    """A clean sample and uncompressed copies of three of its files, under ``folder``."""
    dumps = folder / "clean"
    if dumps.exists():
        shutil.rmtree(dumps)
    write_sample_dumps(dumps, docs_per_lang, LANGS, seed, broken=False, inputs="classic")
    write_sample_dumps(folder / "fresh", docs_per_lang, ("de",), seed, broken=False, inputs="fresh")
    html = next((folder / "fresh").glob("dewiki-NS0-*-ENTERPRISE-HTML.json.tar.gz"))
    en = next(dumps.glob("enwiki-*.json.gz"))
    ar = sorted(dumps.glob("**/arwiki_content-*.json.bz2"))[0]
    fr = next(dumps.glob("frwiki-*.xml.bz2"))
    wikidata = dumps / "latest-all.json.gz"
    plain = folder / "plain"
    plain.mkdir(exist_ok=True)
    copies = []
    for source, opener in ((en, gzip.open), (fr, bz2.open), (wikidata, gzip.open)):
        target = plain / source.name.rsplit(".", 1)[0]
        with opener(source, "rb") as handle:
            target.write_bytes(handle.read())
        copies.append(target)
    return [
        Input("cirrus.gz", en, "en", CIRRUS), Input("cirrus.bz2", ar, "ar", CIRRUS), Input("cirrus.json", copies[0], "en", CIRRUS),
        Input("xml.bz2", fr, "fr", XML), Input("xml", copies[1], "fr", XML), Input("html.tar.gz", html, "de", HTML),
        Input("wikidata.json.gz", wikidata, "", "wikidata"), Input("wikidata.json", copies[2], "", "wikidata"),
    ]  # fmt: skip


def _codec(path: Path):
    if path.name.endswith(".gz"):
        return gzip.decompress, lambda data: gzip.compress(data, mtime=0)
    if path.name.endswith(".bz2"):
        return bz2.decompress, bz2.compress
    return (lambda data: data), (lambda data: data)


def mutate(data: bytes, path: Path, mutation: str, rng: random.Random) -> tuple[bytes, str, int]:
    """The damaged bytes, a description of the damage, and how many records it takes out of the input.

    Records leave the input itself when a line is deleted (a Wikidata entity line is a
    whole record) or when a flipped bit destroys a line break of an uncompressed file
    (two records become one bad line). No reader can see those; they are allowed for.
    """
    if mutation == "truncate":
        cut = rng.randrange(1, len(data))
        return data[:cut], f"cut at byte {cut:,} of {len(data):,}", 0
    if mutation == "flip":
        damaged = bytearray(data)
        places = sorted(rng.randrange(len(data)) for _ in range(rng.randint(1, 3)))
        for place in places:
            damaged[place] ^= 1 << rng.randrange(8)
        plain = not path.name.endswith((".gz", ".bz2"))
        merged = sum(1 for place in places if data[place] == 0x0A) if plain else 0
        return bytes(damaged), f"bits flipped at bytes {places}", merged
    decompress, compress = _codec(path)
    lines = decompress(data).split(b"\n")
    at = rng.randrange(len(lines) - 1)  # the last element is what follows the final newline
    if mutation == "delete":
        del lines[at]
    elif mutation == "duplicate":
        lines.insert(at, lines[at])
    elif mutation == "garble":
        noise = bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 40)))
        start = rng.randrange(len(lines[at]) + 1)
        lines[at] = lines[at][:start] + noise + lines[at][start + len(noise) :]
    else:
        raise ValueError(f"unknown mutation {mutation!r}")
    return compress(b"\n".join(lines)), f"line {at + 1:,} {mutation}d", int(mutation == "delete")


def read_counts(item: Input, path: Path) -> FileReport:
    """Read a dump file as its job does and apply the job's check; raises as the job would."""
    report = FileReport(file=str(path), lang=item.lang)
    if item.kind == "wikidata":
        with fileio.open_raw(str(path)) as raw:
            for _ in read_sitelinks(fileio.iter_lines(fileio.open_dump(raw, str(path), False), report), SitelinkFilter(LANGS), report):
                pass
        check_bad_fraction({"wikidata": [report]}, MAX_BAD_FRACTION)
        return report
    dump = DumpFile(str(path), item.lang, item.kind, "20240301")
    work = str(path.parent / "_work")
    fileio.remove_tree(work)
    if item.kind == HTML:
        for unit in extract_docs.index_units({item.lang: [dump]}, SPLIT_BYTES):  # the stage's units, in this process
            run = extract_docs.index_dump_part if unit.step == extract_docs.INDEX_PART else extract_docs.join_dump_index
            extract_docs.check_indexes([run(work, unit.task, SPLIT_BYTES)])
    reports, parts = [], []
    for unit in extract_docs.plan_units({item.lang: [dump]}, SPLIT_BYTES, work):
        unit_report, pieces = FileReport(file=str(path), lang=item.lang), []
        with fileio.open_raw(str(path)) as raw:
            articles = extract_docs.read_dump(raw, dump, unit_report) if unit.part is None else extract_docs.read_range(raw, unit, unit_report, pieces)
            for _ in articles:
                pass
        reports.append(unit_report)
        if unit.part is not None and item.kind == XML:
            parts.append({"index": unit.part.index, "crc_pieces": [list(piece) for piece in pieces]})
    check_bad_fraction({item.lang: reports}, MAX_BAD_FRACTION)
    bz2_ranges.check_range_reports((str(path), part) for part in parts)
    for unit_report in reports:  # one report for the file, as a whole-file read gives
        report.records, report.kept = report.records + unit_report.records, report.kept + unit_report.kept
        report.filtered.update(unit_report.filtered)
        report.rejected.update(unit_report.rejected)
    return report


def run_case(item: Input, mutation: str, rng: random.Random, work: Path, baseline: FileReport) -> Outcome:
    """Damage one file one way and judge what the readers made of it."""
    data, damage, removed = mutate(item.path.read_bytes(), item.path, mutation, rng)
    target = work / item.path.name
    target.write_bytes(data)

    def outcome(verdict: str, detail: str) -> Outcome:
        return Outcome(item.name, mutation, damage, verdict, detail)

    try:
        report = read_counts(item, target)
    except (DamagedInputError, TooManyBadRecords, InputError) as error:  # InputError: what the CLI prints as one line
        named = str(target) in str(error)
        return outcome("failed" if named else "crashed", str(error).splitlines()[-1] if named else f"message does not name the file: {error}")
    except Exception:  # anything else would be a traceback in the CLI
        return outcome("crashed", traceback.format_exc(limit=3))
    filtered = sum(report.filtered.values())
    if report.records != report.kept + filtered + report.bad:
        return outcome("lost", f"{report.records:,} records != {report.kept:,} kept + {filtered:,} filtered + {report.bad:,} bad")
    fewer = baseline.kept - report.kept
    explained = report.bad + max(0, filtered - sum(baseline.filtered.values())) + removed
    if fewer > explained:
        return outcome("lost", f"{fewer:,} fewer kept than the clean file, only {explained:,} bad or filtered")
    return outcome("passed", f"{report.bad:,} bad ({dict(report.rejected)})")


def run_cases(inputs: list[Input], cases: int, seed: int, work: Path) -> list[Outcome]:
    """``cases`` damaged files, cycling through every input and mutation, placed by ``seed``."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    baselines = {item.name: read_counts(item, item.path) for item in inputs}
    combos = [(item, mutation) for item in inputs for mutation in MUTATIONS]
    return [run_case(item, mutation, rng, work, baselines[item.name]) for item, mutation in (combos[i % len(combos)] for i in range(cases))]


def tally(outcomes: list[Outcome]) -> Counter:
    return Counter(outcome.verdict for outcome in outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--docs-per-lang", type=int, default=None, help="articles per language of the sample [default: 300; --commands: 2000, the sample's own]")
    parser.add_argument("--out", default="bench/out/fuzz")
    parser.add_argument("--consumer", action="store_true", help="fuzz download, validate and irds instead of the dump readers")
    parser.add_argument("--release", default=None, help="with --consumer: a build or download to damage [default: build a small sample]")
    parser.add_argument("--sql", action="store_true", help="fuzz the SQL dump readers row by row instead (fuzz_sql.py)")
    parser.add_argument("--sql-rows", type=int, default=20_000, help="with --sql: rows of each clean dump")
    parser.add_argument("--commands", action="store_true", help="run the commands instead: bz2 dumps cut, Ctrl-C in build, export, dumps fetch (fuzz_commands.py)")
    parser.add_argument("--kinds", default="bz2 cut,build,export,dumps fetch", help="with --commands: which kinds of case, comma-separated")
    parser.add_argument("--min-docs", type=int, default=1000, help="with --commands: the build's --min-docs")
    args = parser.parse_args()
    out = Path(args.out)
    if args.commands:
        from fuzz_commands import print_command_tally, run_command_cases

        kinds = tuple(kind.strip() for kind in args.kinds.split(","))
        print_command_tally(run_command_cases(args.cases, args.seed, out / "commands", args.docs_per_lang or 2000, args.min_docs, kinds))
        return
    args.docs_per_lang = args.docs_per_lang or 300
    if args.consumer:
        run_consumer(args, out)
        return
    if args.sql:
        from fuzz_sql import run_sql_cases

        print_tally(run_sql_cases(args.cases, args.seed, args.sql_rows, out / "sql"), "table")
        return
    inputs = prepare_inputs(out, args.docs_per_lang)
    print_tally(run_cases(inputs, args.cases, args.seed, out / "damaged"))


def print_tally(outcomes: list, first: str = "input") -> None:
    """The verdicts per input and damage (``Outcome``s, or anything with their fields), then every lost or crashed case."""
    by_kind: dict[tuple[str, str], Counter] = {}
    for outcome in outcomes:
        by_kind.setdefault((outcome.input, outcome.mutation), Counter())[outcome.verdict] += 1
    print(f"{first:<18} {'damage':<14} {'tried':>6} {'passed':>7} {'failed':>7} {'lost':>5} {'crashed':>8}")
    for (fmt, mutation), counts in sorted(by_kind.items()):
        print(f"{fmt:<18} {mutation:<14} {sum(counts.values()):>6} {counts['passed']:>7} {counts['failed']:>7} {counts['lost']:>5} {counts['crashed']:>8}")
    total = tally(outcomes)
    print(f"{'all':<33} {len(outcomes):>6} {total['passed']:>7} {total['failed']:>7} {total['lost']:>5} {total['crashed']:>8}")
    for outcome in outcomes:
        if outcome.verdict in ("lost", "crashed"):
            print(f"{outcome.verdict}: {outcome.input} {outcome.damage}: {outcome.detail}")


def run_consumer(args: argparse.Namespace, out: Path) -> None:
    """The consumer side: damaged served files and trees (fuzz_consumer.py), on a given release or a fresh small build."""
    import os
    import tempfile

    from fuzz_consumer import print_tally, run_consumer_cases

    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.config import BuildConfig

    release = Path(args.release) if args.release else out / "release"
    if not args.release and not (release / "downloads.json.gz").exists():
        dumps = out / "release-dumps"
        shutil.rmtree(dumps, ignore_errors=True)
        write_sample_dumps(dumps, args.docs_per_lang, ("en", "de", "fr"), 13, broken=False, inputs="classic")
        run_build(BuildConfig(dumps=str(dumps), out=str(release), min_docs=50, train_size=40, eval_size=10, workers=1))
    os.environ.setdefault("CLIRMATRIX_HOME", tempfile.mkdtemp(prefix="clirmatrix-home-"))
    os.environ.setdefault("IR_DATASETS_HOME", tempfile.mkdtemp(prefix="irds-home-"))
    work = out / "consumer"
    shutil.rmtree(work, ignore_errors=True)
    print_tally(run_consumer_cases(release, args.cases, args.seed, work))


if __name__ == "__main__":
    main()
