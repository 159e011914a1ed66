"""``validate`` against an earlier ``validate`` on the same damaged trees: the same findings, nothing passing that failed.

``validate`` was rewritten for speed (issue 53): a compiled scanner that accepts exactly
the release's byte form, units of work over processes, md5s taken while reading. This
bench damages a clean release one way at a time, at a random place, and runs both the
earlier code (a ``validate.py`` from a commit, loaded as its own module beside today's
package, whose readers it shares) and today's, in one process and over two workers.

Damage: the consumer fuzz bench's (``fuzz_consumer.TREE``: a cut or flipped file, a
line deleted, duplicated or garbled, an HTML page, a file removed or added, the index
damaged) and edits that keep a line well-formed JSON, which only the rules can catch and
which the scanner must hand to the Python rules: a label changed or out of range, two
results swapped, a document judged twice, spacing as ``orjson`` writes it, keys in
another order, an id that is not a plain number or has a leading zero, a CRLF, an
uppercase ``\\u`` escape; in DOCS a second tab, a carriage return, an empty text, bytes
that are not UTF-8, an id repeated.

Verdicts per case: **identical** (the same findings, order aside), **same kinds** (the
same (severity, file, rule) set; lines or wording differ: a damaged gzip stream is
noticed a block later or earlier), **differ** (a kind found by one and not the other),
and **passes now** (the earlier code failed the tree and today's does not: must be 0).

Usage: python bench/validate_equivalence.py --release OUT [--cases 300] [--seed 1] [--old abd491b]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from fuzz_consumer import TREE, damage_tree

from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import walk_release
from clirmatrix.pipeline.tools.validate import validate

QUERY_EDITS = ("relabel", "label-range", "swap", "dup-result", "orjson-spacing", "key-order", "text-id", "leading-zero", "crlf", "escape-case")
DOCS_EDITS = ("docs-tab", "docs-cr", "docs-empty", "docs-bytes", "docs-dup")


def load_old(commit: str, scratch: Path):
    """``pipeline/tools/validate.py`` as it was at ``commit``, loaded as a module of its own."""
    source = subprocess.run(["git", "show", f"{commit}:pipeline/tools/validate.py"], check=True, capture_output=True, cwd=Path(__file__).resolve().parents[1]).stdout
    path = scratch / "validate_old.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("validate_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def edit_line(tree: Path, path: str, edit: str, rng: random.Random) -> None:
    """One line of a released file changed so that it stays JSON (or TSV) a reader parses."""
    file = tree / path
    lines = gzip.decompress(file.read_bytes()).split(b"\n")
    body = [i for i, line in enumerate(lines) if line.strip()]
    if not body:
        return
    at = rng.choice(body)
    line = lines[at]
    if edit.startswith("docs-"):
        doc_id, _, text = line.partition(b"\t")
        line = {
            "docs-tab": doc_id + b"\t" + text[: len(text) // 2] + b"\t" + text[len(text) // 2 :],
            "docs-cr": doc_id + b"\t" + text + b"\r",
            "docs-empty": doc_id + b"\t " + "\u3000".encode(),  # whitespace only, to Python's str.strip
            "docs-bytes": doc_id + b"\t" + text[:5] + b"\xff\xfe" + text[5:],
            "docs-dup": lines[rng.choice(body)].partition(b"\t")[0] + b"\t" + text,
        }[edit]
    else:
        record = json.loads(line)
        results = record["tgt_results"]
        if edit == "relabel" and results:
            pair = rng.choice(results)
            pair[1] = rng.choice([label for label in range(7) if label != pair[1]])
        elif edit == "label-range" and results:
            rng.choice(results)[1] = rng.choice([-1, 7, 10])
        elif edit == "swap" and len(results) > 1:
            i = rng.randrange(len(results) - 1)
            results[i], results[i + 1] = results[i + 1], results[i]
        elif edit == "dup-result" and results:
            results.insert(rng.randrange(len(results) + 1), list(rng.choice(results)))
        elif edit == "text-id":
            record["src_id"] = "Q" + record["src_id"]
        elif edit == "leading-zero" and results:
            rng.choice(results)[0] = "0" + rng.choice(results)[0]
        if edit == "orjson-spacing":
            line = json.dumps(record, separators=(",", ":")).encode()
        elif edit == "key-order":
            line = json.dumps({key: record[key] for key in reversed(list(record))}).encode()
        elif edit == "crlf":
            line = line + b"\r"
        elif edit == "escape-case":
            line = json.dumps({**record, "src_query": record["src_query"] + "\u00e9"}).encode().replace(b"\\u00e9", b"\\u00E9")
        else:
            line = json.dumps(record).encode()
    lines[at] = line
    file.write_bytes(gzip.compress(b"\n".join(lines), mtime=0))


def findings(report) -> set[tuple]:
    return {(True, *astuple(f)) for f in report.failures} | {(False, *astuple(f)) for f in report.warnings}


def astuple(finding) -> tuple:
    return (finding.path, finding.rule, finding.line, finding.message)


def compare(old: set[tuple], new: set[tuple]) -> str:
    if old == new:
        return "identical"
    kinds = lambda found: {item[:3] for item in found}  # noqa: E731
    return "same kinds" if kinds(old) == kinds(new) else "differ"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", required=True, help="a clean build (its manifest names today's gzip encoder)")
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--old", default="abd491b", help="the commit whose validate.py is the reference")
    args = parser.parse_args(argv)
    release = Path(args.release)
    rng = random.Random(args.seed)
    files = [path for path, item in walk_release(release) if item is not None]
    query_files = [path for path in files if layout.parse_path(path).tgt is not None]
    docs_files = [path for path in files if layout.parse_path(path).tgt is None]
    damages = [*TREE, *QUERY_EDITS, *DOCS_EDITS]
    tally: dict[str, Counter] = {}
    shown: list[str] = []
    with tempfile.TemporaryDirectory(prefix="validate-equivalence-") as scratch:
        old_validate = load_old(args.old, Path(scratch))
        for i in range(args.cases):
            damage = damages[i % len(damages)]
            tree = Path(scratch) / f"tree{i}"
            shutil.copytree(release, tree, ignore=shutil.ignore_patterns(".work"))
            if damage in QUERY_EDITS:
                damaged = rng.choice(query_files)
                edit_line(tree, damaged, damage, rng)
            elif damage in DOCS_EDITS:
                damaged = rng.choice(docs_files)
                edit_line(tree, damaged, damage, rng)
            else:
                damaged = damage_tree(tree, rng.choice(files), damage, rng)
            old = old_validate.validate(str(tree))
            outcomes = []
            for workers in (1, 2):
                new = validate(str(tree), workers=workers)
                verdict = compare(findings(old), findings(new))
                if not old.ok and new.ok:
                    verdict = "passes now"
                outcomes.append(verdict)
                if verdict in ("differ", "passes now") and len(shown) < 20:
                    shown.append(f"{damage} {damaged} workers={workers}: only before {sorted(findings(old) - findings(new))[:3]}; only now {sorted(findings(new) - findings(old))[:3]}")
            tally.setdefault(damage, Counter()).update(outcomes)
            shutil.rmtree(tree)
    verdicts = ("identical", "same kinds", "differ", "passes now")
    print(f"{'damage':<16} {'runs':>5} " + " ".join(f"{v:>11}" for v in verdicts))
    for damage, counted in tally.items():
        print(f"{damage:<16} {sum(counted.values()):>5} " + " ".join(f"{counted[v]:>11}" for v in verdicts))
    total = sum(tally.values(), Counter())
    print(f"{'all':<16} {sum(total.values()):>5} " + " ".join(f"{total[v]:>11}" for v in verdicts))
    for line in shown:
        print(line)


if __name__ == "__main__":
    main()
