"""validate's compiled scanner accepts exactly the release's byte form, and its verdicts match Python's own rules (issue 53).

A line the scanner calls in the release's bytes must be ``json.dumps`` of its record
(the earlier check, run here as the oracle) with the ids and labels it read; a line in
any other form must go to the Python rules. DOCS lines: strict UTF-8 as Python decodes
it, whitespace as ``str.strip`` sees it.
"""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import orjson
import pytest

from clirmatrix.pipeline.tools import validate_scan as scan


def _scan_lines(lines: list[bytes], lowest: int = 0, candidates: int = -1) -> tuple[list[int], list[int], list[list[int]], list[list[int]]]:
    text = np.frombuffer(b"\n".join(lines) + b"\n", dtype=np.uint8)
    n = len(lines) + 1
    bound = int(np.count_nonzero(text == 91)) + 1
    starts, verdicts, ids = np.empty(n, np.int64), np.empty(n, np.int8), np.empty(n, np.int64)
    offsets, docs, labels = np.empty(n + 1, np.int64), np.empty(bound, np.int64), np.empty(bound, np.int64)
    seen = np.full((512, 2), -1, np.int64)
    count = scan.scan_queries(text, scan.HEAD, scan.MIDDLE, scan.RESULTS, True, lowest, candidates, True, starts, verdicts, ids, offsets, docs, labels, seen, np.empty((len(starts), 2), np.int64))
    assert count == len(lines)
    pairs = [(offsets[i], offsets[i + 1]) for i in range(count)]
    return verdicts[:count].tolist(), ids[:count].tolist(), [docs[a:b].tolist() for a, b in pairs], [labels[a:b].tolist() for a, b in pairs]


def _random_text(rng: random.Random) -> str:
    pool = ['"', "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "/", "é", "中", "\u2028", "\U0001f600", "\ufeff", "a", "Z", " ", "'"]
    return "".join(rng.choice(pool) if rng.random() < 0.5 else chr(rng.randrange(32, 127)) for _ in range(rng.randrange(0, 12)))


def _record(rng: random.Random) -> dict:
    ids = rng.sample(range(1, 10**9), rng.randrange(1, 8))
    labels = sorted((rng.randrange(1, 6) for _ in ids), reverse=True)
    results = sorted(zip(ids, labels), key=lambda pair: (-pair[1], pair[0]))
    return {"src_id": str(rng.randrange(0, 10**12)), "src_query": _random_text(rng), "tgt_results": [[str(d), label] for d, label in results]}


def test_every_json_dumps_line_is_accepted_with_its_ids_and_labels():
    rng = random.Random(5)
    records = [_record(rng) for _ in range(2_000)]
    verdicts, ids, docs, labels = _scan_lines([json.dumps(r).encode() for r in records], lowest=1)
    assert verdicts == [scan.CLEAN] * len(records)
    assert ids == [int(r["src_id"]) for r in records]
    assert docs == [[int(d) for d, _ in r["tgt_results"]] for r in records]
    assert labels == [[label for _, label in r["tgt_results"]] for r in records]


REWRITES = {
    "orjson's compact form": lambda r: orjson.dumps(r),
    "keys in another order": lambda r: json.dumps(dict(reversed(list(r.items())))).encode(),
    "no ASCII escaping": lambda r: json.dumps(r, ensure_ascii=False).encode(),
    "an escaped slash": lambda r: json.dumps(r).encode().replace(b'"src_query": "', b'"src_query": "\\/'),
    "A written \\u0041": lambda r: json.dumps(r).encode().replace(b'"src_query": "', b'"src_query": "\\u0041'),
    "a newline written \\u000a": lambda r: json.dumps(r).encode().replace(b'"src_query": "', b'"src_query": "\\u000a'),
    "uppercase hex": lambda r: json.dumps({**r, "src_query": "é"}).encode().replace(b"\\u00e9", b"\\u00E9"),
    "a lone surrogate": lambda r: json.dumps(r).encode().replace(b'"src_query": "', b'"src_query": "\\ud800'),
    "a reversed surrogate pair": lambda r: json.dumps(r).encode().replace(b'"src_query": "', b'"src_query": "\\ude00\\ud83d'),
    "a label 07": lambda r: json.dumps(r).encode().replace(b'", 5]', b'", 05]').replace(b'", 4]', b'", 04]'),
    "a label -0": lambda r: json.dumps({**r, "tgt_results": [*r["tgt_results"][:1]]}).encode().replace(b'", ' + str(r["tgt_results"][0][1]).encode() + b"]", b'", -0]'),
    "a label 1.0": lambda r: json.dumps({**r, "tgt_results": [[d, float(label)] for d, label in r["tgt_results"]]}).encode(),
    "a label true": lambda r: json.dumps({**r, "tgt_results": [[d, True] for d, _ in r["tgt_results"]]}).encode(),
    "an id with a leading zero": lambda r: json.dumps({**r, "src_id": "0" + r["src_id"]}).encode(),
    "an id that is text": lambda r: json.dumps({**r, "src_id": "Q" + r["src_id"]}).encode(),
    "a doc id of 19 digits": lambda r: json.dumps({**r, "tgt_results": [["1" * 19, 5]]}).encode(),
    "an extra key": lambda r: json.dumps({**r, "lang": "en"}).encode(),
    "a CRLF": lambda r: json.dumps(r).encode() + b"\r",
    "a space after": lambda r: json.dumps(r).encode() + b" ",
    "an integer id": lambda r: json.dumps({**r, "src_id": int(r["src_id"])}).encode(),
}


@pytest.mark.parametrize("how", REWRITES)
def test_a_line_in_any_other_form_goes_to_the_python_rules(how):
    """Not json.dumps of a well-formed record in the release's key order: the Python rules decide (malformed, other bytes, or, for another key order, the same bytes as the earlier check said)."""
    rng = random.Random(7)
    lines = []
    for _ in range(50):
        record = _record(rng)
        line = REWRITES[how](record)
        if line != json.dumps(record).encode():
            lines.append(line)
    assert lines, "the rewrite changed no line"
    verdicts, *_ = _scan_lines(lines)
    assert verdicts == [scan.OTHER] * len(lines)


@pytest.mark.parametrize(
    ("results", "lowest", "candidates"),
    [
        ([["1", 5], ["2", 7]], 0, -1),  # a label past 6
        ([["1", 0], ["2", 1]], 1, -1),  # 0 in a full file
        ([["1", 3], ["2", 5]], 0, -1),  # labels rising
        ([["2", 5], ["1", 5]], 0, -1),  # equal labels, ids falling
        ([["1", 6], ["2", 6]], 0, -1),  # two label 6
        ([["1", 0], ["2", 0]], 0, -1),  # nothing relevant
        ([["1", 5], ["2", 3], ["1", 1]], 0, -1),  # a document twice
        ([["1", 5], ["2", 3]], 0, 3),  # too few candidates
        ([], 0, -1),  # no results
    ],
)
def test_a_query_that_breaks_a_rule_is_handed_to_the_python_rules(results, lowest, candidates):
    line = json.dumps({"src_id": "9", "src_query": "q", "tgt_results": results}).encode()
    good = json.dumps({"src_id": "9", "src_query": "q", "tgt_results": [["1", 6], ["2", 1], ["3", 1]]}).encode()
    verdicts, *_ = _scan_lines([good, line, good], lowest, candidates if candidates != 3 else 3)
    assert verdicts[1] == scan.BROKEN and verdicts[0] == (scan.CLEAN if candidates in (-1, 3) else scan.BROKEN)


def test_many_results_are_checked_for_repeats_past_the_table():
    """A query of more results than the stamp table holds is checked by sorting."""
    results = [[str(i), 1] for i in range(1, 400)]
    verdicts, *_ = _scan_lines([json.dumps({"src_id": "1", "src_query": "", "tgt_results": r}).encode() for r in (results, [*results, ["7", 1]])])
    assert verdicts == [scan.CLEAN, scan.BROKEN]


def test_docs_lines_utf8_and_whitespace_as_python_sees_them(tmp_path):
    rng = random.Random(3)
    pieces = [b"a", b" ", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\xe3\x80\x80", b"\xc2\xa0", b"\xe2\x80\x8b", b"\x1c", b"\x01", b"\x0b", b"\x85", b"\xc2\x85",
              b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe4\xb8", b"\x80", b"\xff", b"\xf8\x88\x80\x80\x80", b"\r", b"\t"]
    lines = [b"12\t" + b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 5))) for _ in range(3_000)]
    path = tmp_path / "d.tsv.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    reading = scan.Reading()
    [block] = list(scan.docs_blocks(str(path), reading))
    for i, line in enumerate(lines):
        text = line.split(b"\t", 1)[1]
        try:
            decoded = text.decode("utf-8")
            fine = b"\t" not in text and "\r" not in decoded and bool(decoded.strip())
        except UnicodeDecodeError:
            fine = False
        if line.strip():  # blank lines are skipped by every reader
            assert (block.verdicts[i] == scan.CLEAN) == fine, line
    assert reading.md5 and reading.size == path.stat().st_size and not reading.error


def test_python_whitespace_is_read_from_python():
    assert set(scan.SPACES.tolist()) == {c for c in range(0x110000) if chr(c).isspace()}


def test_a_cut_stream_ends_the_blocks_and_names_the_line(tmp_path):
    lines = [json.dumps({"src_id": str(i), "src_query": "x" * 50, "tgt_results": [["1", 6]]}).encode() for i in range(1, 20_001)]
    data = gzip.compress(b"\n".join(lines) + b"\n")
    path = tmp_path / "q.jl.gz"
    path.write_bytes(data[: len(data) // 2])
    reading = scan.Reading()
    read = sum(len(block) for block in scan.query_blocks(str(path), reading, 0, -1, True))
    assert reading.error.startswith("damaged gzip stream") and reading.error_line == read + 1 > 1
    assert reading.size == len(data) // 2
