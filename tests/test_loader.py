"""The loader's one-read and Arrow forms: today's iterators' values, bounded batches, every bad line named."""

from __future__ import annotations

import gzip
import json

import pytest

from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, iter_query_blocks
from clirmatrix.pipeline.tools.loader import Qrel, Query, QuerySplit


def todays(split):
    return list(split.queries()), list(split.qrels())


def rows(arrow, kind):
    """A record batch's or table's rows as ``kind`` tuples."""
    return [kind(*row) for row in zip(*arrow.to_pydict().values())]


def from_batches(batches):
    queries, qrels = [], []
    for batch in batches:
        assert batch.qrels.schema.field("label").type == "int8"
        queries += rows(batch.queries, Query)
        qrels += rows(batch.qrels, Qrel)
    return queries, qrels


def from_records(split):
    queries, qrels = [], []
    for query, results in split.records():
        queries.append(query)
        qrels += [Qrel(query.src_id, doc_id, label) for doc_id, label in results]
    return queries, qrels


def release(tmp_path, lines, raw=False):
    """A one-file release of these query lines (records as dicts, or bytes as they are) and its split."""
    path = tmp_path / layout.query_file("bi139-full", "en", "de", "train")
    path.parent.mkdir(parents=True, exist_ok=True)
    body = lines if raw else b"".join(json.dumps(line).encode() + b"\n" if isinstance(line, dict) else line for line in lines)
    path.write_bytes(gzip.compress(body))
    return QuerySplit(tmp_path, "bi139-full", "en", "de", "train")


def test_every_form_gives_todays_values_on_a_real_build(built):
    out = built[0]
    files = [layout.parse_path(p.relative_to(out).as_posix()) for p in sorted(out.glob("**/*.jl.gz"))]
    chosen = {}
    for released in files:  # each query set's largest train file and one eval file
        chosen.setdefault((released.dataset, released.split == "train"), released)
    assert len(chosen) >= 6
    for released in chosen.values():
        split = QuerySplit(out, released.dataset, released.src, released.tgt, released.split)
        expected = todays(split)
        assert expected[1], released
        assert from_records(split) == expected
        for size in (1, 150, 100_000):
            assert from_batches(split.iter_batches(size)) == expected
        queries, qrels = split.tables()
        assert (rows(queries, Query), rows(qrels, Qrel)) == expected
        numeric = split.qrels_table(int_ids=True)
        assert numeric.column("doc_id").to_numpy().tolist() == [int(q.doc_id) for q in expected[1]]
        assert split.queries_table(int_ids=True).column("src_id").to_pylist() == [int(q.src_id) for q in expected[0]]


def test_batches_hold_whole_queries_and_at_most_batch_size_qrels(built):
    out = built[0]
    split = QuerySplit(out, "bi139-base", "en", "de", "train")  # 100 candidates a query
    sizes = [(b.queries.num_rows, b.qrels.num_rows) for b in split.iter_batches(250)]
    assert all(qrels == 200 for _, qrels in sizes[:-1]) and sizes[-1][1] <= 250
    assert [n for n, _ in sizes[:-1]] == [2] * (len(sizes) - 1)
    assert {batch.qrels.num_rows for batch in split.iter_batches(30)} == {100}  # one query alone may pass it
    # Blocks read a few lines at a time and joined across reads give the same records.
    small = list(iter_query_blocks(split.path, 250, read_size=3000))
    assert [len(b.labels) for b in small] == [qrels for _, qrels in sizes]
    assert [d for b in small for d in b.flat_doc_ids()] == [q.doc_id for q in split.qrels()]


def test_odd_but_valid_lines_read_as_today(tmp_path):
    lines = [
        b"\n", b"  \t \n",  # blank lines are skipped
        {"src_id": "1", "src_query": "Caf\u00e9", "tgt_results": [["12", 6], ["\u00e9t\u00e9", 0], ["", 3]]},
        {"src_id": "2", "src_query": "no results", "tgt_results": []},
        {"src_id": "3", "src_query": "a\nnewline", "tgt_results": [["line\nbreak", 5], ["7", -2]], "extra": True},
        b'{"src_query":"r","tgt_results":[["9",1]],"src_id":"4"}\r\n',  # a \r stays inside the line: JSON whitespace
        b'{"src_id": "5", "src_query": "last", "tgt_results": [["10", 127]]}',  # no final newline
    ]
    split = release(tmp_path, lines)
    expected = todays(split)
    assert len(expected[0]) == 5 and len(expected[1]) == 7
    assert from_records(split) == expected
    for size in (1, 2, 1000):
        assert from_batches(split.iter_batches(size)) == expected
    assert split.qrels_table().column("doc_id").to_pylist() == [q.doc_id for q in expected[1]]


@pytest.mark.parametrize("bad, reason", [
    (b'{"src_id": "9", "src_query": "x", "tgt_results": [["1", 2]]', "not JSON"),
    (b'["9", "x", []]', "expected a JSON object"),
    (b'{"src_id": "9", "src_query": "x"}', "missing key"),
    (b'{"src_id": 9, "src_query": "x", "tgt_results": []}', "src_id must be"),
    (b'{"src_id": "9", "src_query": null, "tgt_results": []}', "src_query must be"),
    (b'{"src_id": "9", "src_query": "x", "tgt_results": {"1": 2}}', "tgt_results must be a JSON list"),
    (b'{"src_id": "9", "src_query": "x", "tgt_results": [["1", 2], ["3", 4, 5]]}', r"tgt_results\[1\]"),
    (b'{"src_id": "9", "src_query": "x", "tgt_results": [["1", true]]}', r"tgt_results\[0\]"),
    (b'{"src_id": "9", "src_query": "x", "tgt_results": [[1, 2]]}', r"tgt_results\[0\]"),
    (b'{"src_id": "9", "src_query": "x", "tgt_results": ["ab"]}', r"tgt_results\[0\]"),
    (b'{"src_id": "9", "src_query": "x", "tgt_results": [{"a": 1, "b": 2}]}', r"tgt_results\[0\]"),
])
def test_a_bad_line_raises_todays_error_naming_file_and_line(tmp_path, bad, reason):
    good = [{"src_id": str(i), "src_query": f"q{i}", "tgt_results": [[str(i * 10), 6], ["5", 1]]} for i in range(300)]
    split = release(tmp_path, [*good[:250], b"\n", bad + b"\n", *good[250:]])
    with pytest.raises(MalformedRecordError) as today:
        list(split.qrels())
    assert today.value.line == 252 and today.value.path == str(split.path)
    assert pytest.raises(MalformedRecordError, list, split.records()).value.args == today.value.args
    for size in (1, 10_000):
        with pytest.raises(MalformedRecordError, match=reason) as batched:
            list(split.iter_batches(size))
        assert batched.value.args == today.value.args
    with pytest.raises(MalformedRecordError, match=f"{split.path}:252: "):  # found in a later read too
        list(iter_query_blocks(split.path, 7, read_size=200))


@pytest.mark.parametrize("cut", ["cut", "crc"])
def test_a_damaged_gzip_stream_is_an_error_not_a_short_split(tmp_path, cut):
    good = [{"src_id": str(i), "src_query": f"query {i} " + "x" * (i % 97), "tgt_results": [[str(i * 7 + k), k % 7] for k in range(20)]} for i in range(600)]
    split = release(tmp_path, good)
    data = split.path.read_bytes()
    if cut == "cut":
        data = data[: len(data) * 2 // 3]
    else:  # every line intact, the trailer's CRC-32 wrong
        data = data[:-8] + bytes([data[-8] ^ 1]) + data[-7:]
    split.path.write_bytes(data)
    with pytest.raises(MalformedRecordError, match="damaged gzip stream") as today:
        list(split.qrels())
    for read in (lambda: list(split.iter_batches(1000)), split.tables, lambda: list(iter_query_blocks(split.path, 50, read_size=4096))):
        with pytest.raises(MalformedRecordError, match=rf"{split.path}:\d+: damaged gzip stream") as error:
            read()
        assert error.value.reason == today.value.reason  # the same damage, named at the line it cut (to a 64 KiB read)
        assert 1 < error.value.line <= 600 and abs(error.value.line - today.value.line) < 300


def test_integer_ids_and_labels_that_do_not_fit(tmp_path):
    split = release(tmp_path, [{"src_id": "10", "src_query": "a", "tgt_results": [["20", 6], ["9223372036854775807", 1]]},
                               {"src_id": "11", "src_query": "b", "tgt_results": [["007", 0]]}])
    assert split.qrels_table().column("doc_id").to_pylist() == ["20", "9223372036854775807", "007"]  # strings by default
    with pytest.raises(MalformedRecordError, match=r":2: int_ids: doc_id '007' is not a plain decimal integer"):
        split.qrels_table(int_ids=True)
    split = release(tmp_path, [{"src_id": "10", "src_query": "a", "tgt_results": [["1", 6]]}, {"src_id": "x1", "src_query": "b", "tgt_results": []}])
    with pytest.raises(MalformedRecordError, match=r":2: int_ids: src_id 'x1'"):
        split.queries_table(int_ids=True)
    split = release(tmp_path, [{"src_id": "10", "src_query": "a", "tgt_results": [["1", 6]]}, {"src_id": "11", "src_query": "b", "tgt_results": [["2", 1], ["3", 300]]}])
    assert list(split.qrels())[-1].label == 300  # today's iterator keeps any integer
    with pytest.raises(MalformedRecordError, match=r":2: label 300 does not fit"):
        split.qrels_table()
