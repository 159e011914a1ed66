"""The bulk reader of released files (``release_columns``) gives what the line-by-line readers give.

``export`` and the loader's tables read query and DOCS files through it: compiled code for
lines in the release's byte form, ``parse_query``/``parse_doc`` a line for any block that
holds another line. Either way the columns, the judged-pair lines and the errors must be
the ones reading each line with the old readers gives.
"""

from __future__ import annotations

import gzip
import json
import random

import orjson
import pytest

from clirmatrix.pipeline.output.jsonl import MalformedRecordError, iter_docs, iter_queries
from clirmatrix.pipeline.tools import export
from clirmatrix.pipeline.tools.release_columns import docs_columns, docs_json_lines, query_columns


def _text(rng: random.Random) -> str:
    pool = ['"', "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "/", "é", "中", "\u2028", "\U0001f600", "\ufeff", "a", " ", "'"]
    return "".join(rng.choice(pool) if rng.random() < 0.4 else chr(rng.randrange(32, 127)) for _ in range(rng.randrange(0, 14)))


def _record(rng: random.Random, src_id: str | None = None) -> dict:
    ids = rng.sample(range(0, 10**12), rng.randrange(0, 9))
    labels = [rng.choice([6, 5, 3, 1, 0, -2, 42]) for _ in ids]  # any integer a record may hold, in any order
    return {"src_id": src_id or str(rng.randrange(0, 10**15)), "src_query": _text(rng), "tgt_results": [[str(d), label] for d, label in zip(ids, labels)]}


def _write(path, lines: list[bytes]) -> str:
    with gzip.open(path, "wb") as out:
        out.write(b"\n".join(lines) + b"\n")
    return str(path)


def _columns(path: str) -> tuple[list, list, list, list]:
    """(src_ids, src_queries, each record's doc ids, each record's labels) from the bulk reader."""
    src_ids, queries, docs, labels = [], [], [], []
    for block in query_columns(path):
        src_ids += block.src_ids.to_pylist()
        queries += block.src_queries.to_pylist()
        flat_docs, flat_labels = block.doc_ids.to_pylist(), block.labels.tolist()
        for first, last in zip(block.offsets[:-1].tolist(), block.offsets[1:].tolist()):
            docs.append(flat_docs[first:last])
            labels.append(flat_labels[first:last])
    return src_ids, queries, docs, labels


def _expected(path: str) -> tuple[list, list, list, list]:
    records = list(iter_queries(path))
    return ([r.src_id for r in records], [r.src_query for r in records],
            [[d for d, _ in r.tgt_results] for r in records], [[label for _, label in r.tgt_results] for r in records])


@pytest.mark.parametrize("form", ["json.dumps (the scanner)", "with one line of another form (parse_query)"])
def test_query_columns_are_the_records_parse_query_reads(tmp_path, form):
    rng = random.Random(11)
    lines = [json.dumps(_record(rng)).encode() for _ in range(1_500)]
    lines[10:10] = [b"", b"   "]  # blank lines are skipped by every reader
    if form.startswith("with"):
        lines[700] = orjson.dumps(_record(rng, src_id="Q-7"))  # compact form and an id that is no plain number
    path = _write(tmp_path / "en.de.train.jl.gz", lines)
    assert _columns(path) == _expected(path)


def test_pair_lines_are_the_f_strings_of_every_pair(tmp_path):
    rng = random.Random(3)
    records = [_record(rng) for _ in range(400)]
    scanned = _write(tmp_path / "a.jl.gz", [json.dumps(r).encode() for r in records])
    parsed = _write(tmp_path / "b.jl.gz", [orjson.dumps(r) for r in records])  # another form: the line-by-line path
    expected = "".join(f"{r['src_id']} 0 {d} {label}\n" for r in records for d, label in r["tgt_results"]).encode()
    for path in (scanned, parsed):
        assert b"".join(block.pair_lines(b" 0 ", b" ") for block in query_columns(path)) == expected


def test_a_bad_query_line_is_named_as_parse_query_names_it(tmp_path):
    rng = random.Random(4)
    lines = [json.dumps(_record(rng)).encode() for _ in range(50)]
    lines[30] = b'{"src_id": "1", "src_query": "x", "tgt_results": [["2"]]}'
    path = _write(tmp_path / "en.de.dev.jl.gz", lines)
    with pytest.raises(MalformedRecordError) as caught:
        list(query_columns(path))
    assert (caught.value.path, caught.value.line) == (path, 31) and "tgt_results[0]" in caught.value.reason


def test_a_label_past_int8_is_named_by_its_line(tmp_path):
    lines = [json.dumps({"src_id": "1", "src_query": "a", "tgt_results": [["2", 6]]}).encode(),
             json.dumps({"src_id": "3", "src_query": "b", "tgt_results": [["4", 6], ["5", 300]]}).encode()]
    path = _write(tmp_path / "en.de.dev.jl.gz", lines)
    [block] = list(query_columns(path))
    with pytest.raises(MalformedRecordError, match=r":2: label 300 does not fit int8"):
        block.labels_int8()


def test_a_cut_query_stream_is_fatal_after_its_whole_lines(tmp_path):
    rng = random.Random(5)
    path = _write(tmp_path / "en.de.train.jl.gz", [json.dumps(_record(rng)).encode() for _ in range(3_000)])
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(MalformedRecordError, match="damaged gzip stream"):
        list(query_columns(path))


def test_docs_columns_are_the_lines_parse_doc_reads(tmp_path):
    rng = random.Random(6)
    lines = [f"{rng.randrange(1, 10**9)}\t{_text(rng).replace(chr(10), ' ').replace(chr(9), ' ').replace(chr(13), ' ')}x".encode() for _ in range(2_000)]
    lines[5:5] = [b"", b" "]
    path = _write(tmp_path / "de.tsv.gz", lines)
    read = [(doc_id, text) for ids, texts in docs_columns(path) for doc_id, text in zip(ids.to_pylist(), texts.to_pylist())]
    assert read == list(iter_docs(path))
    lines[900] = b"12\ttext with a \r inside"  # not the scanner's form: the block is read line by line, and passes as before
    path = _write(tmp_path / "fr.tsv.gz", lines)
    assert [pair for ids, texts in docs_columns(path) for pair in zip(ids.to_pylist(), texts.to_pylist())] == list(iter_docs(path))
    lines[1200] = b"13\ttwo\ttabs"
    path = _write(tmp_path / "es.tsv.gz", lines)
    with pytest.raises(MalformedRecordError, match=r"es.tsv.gz:1201: expected exactly one tab, found 2"):
        list(docs_columns(path))


@pytest.mark.parametrize("layout", ["beir", "pyserini"])
def test_docs_json_lines_are_orjsons_bytes(tmp_path, layout):
    """Every byte orjson escapes or keeps (quotes, backslashes, each control character, DEL, non-ASCII) comes out as orjson writes it."""
    record = export.beir_doc if layout == "beir" else export.pyserini_doc
    rng = random.Random(8)
    specials = [chr(c) for c in range(1, 32) if c not in (9, 10, 13)] + ['"', "\\", "\x7f", "é", "\u2028", "\U0001f600", "/"]
    texts = ["".join(rng.choice(specials) if rng.random() < 0.3 else chr(rng.randrange(32, 127)) for _ in range(rng.randrange(1, 30))) + "x" for _ in range(3_000)]
    lines = [f"{10 + 3 * n}\t{text}".encode() for n, text in enumerate(texts)]
    path = _write(tmp_path / "de.tsv.gz", lines)
    written = list(docs_json_lines(path, record))
    assert b"".join(lines for lines, _ in written) == b"".join(orjson.dumps(record(doc_id, text)) + b"\n" for doc_id, text in iter_docs(path))
    assert sum(count for _, count in written) == len(lines)
