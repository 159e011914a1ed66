"""The carry units (docs/method.md section 6): the stage's rows are ``propagate``'s, in the order the write stage reads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clirmatrix.pipeline.io.parquet_io import write_table
from clirmatrix.pipeline.method.corpus import WorkDirs
from clirmatrix.pipeline.method.propagation import MAX_PACKED_SPAN, BlockCarrier, Labelled, propagate, propagate_block, read_doc_links, write_links_file
from clirmatrix.schemas import LABELS, PROPAGATED
from clirmatrix.schemas.contracts import LanguagePlan, read_typed_report


def _dense(x: np.ndarray, y: np.ndarray, n_src: int) -> np.ndarray:
    x_to_y = np.full(n_src, -1, dtype=np.int32)
    x_to_y[x] = y
    return x_to_y


def _assert_same(got: Labelled, expected: Labelled) -> None:
    for name, a, b in zip(Labelled._fields, got, expected):
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name


def _random_block(rng: np.random.Generator, n_src: int, first: int, queries: int, any_label: bool, shuffled: bool) -> Labelled:
    per = rng.integers(0, 12, queries)
    query = np.repeat(np.arange(first, first + queries), per).astype(np.int32)
    doc = rng.integers(0, n_src, len(query)).astype(np.int32)  # repeats within a query too
    low, high = (-128, 128) if any_label else (1, 7)
    label = rng.integers(low, high, len(query)).astype(np.int8)
    order = rng.permutation(len(query)) if shuffled else np.arange(len(query))
    return Labelled(query[order], doc[order], label[order])


@pytest.mark.parametrize("one_to_one", [True, False])
def test_the_carrier_gives_the_rules_rows_on_random_blocks(one_to_one):
    """One-to-one links and links many X documents share, repeated and shuffled label rows: propagate's rows, dtypes and order."""
    rng = np.random.default_rng(36 + one_to_one)
    for trial in range(60):
        n_src = int(rng.integers(1, 200))
        labels = _random_block(rng, n_src, int(rng.integers(0, 10_000)), int(rng.integers(0, 30)), any_label=trial % 5 == 0, shuffled=trial % 2 == 0)
        x = np.sort(rng.choice(n_src, int(rng.integers(0, n_src + 1)), replace=False)).astype(np.int32)
        y = (rng.choice(2**31 - 1, len(x), replace=False) if one_to_one else rng.integers(0, max(len(x) // 3, 1), len(x))).astype(np.int32)
        carried, queries = BlockCarrier(labels, n_src).carry(x, y)
        expected = propagate(labels, _dense(x, y, n_src))
        _assert_same(carried, expected)
        assert queries == len(np.unique(expected.query))


def test_two_documents_on_one_article_keep_the_higher_label_whichever_comes_first():
    labels = Labelled(np.array([7, 7, 7, 8, 8], np.int32), np.array([0, 1, 2, 1, 0], np.int32), np.array([2, 5, 3, 1, 4], np.int8))
    x, y = np.array([0, 1, 2], np.int32), np.array([9, 9, 3], np.int32)  # X documents 0 and 1 are both Y's 9
    carried, queries = BlockCarrier(labels, 3).carry(x, y)
    assert list(zip(*(column.tolist() for column in carried))) == [(7, 3, 3), (7, 9, 5), (8, 9, 4)]
    assert queries == 2


def test_a_block_too_wide_for_the_keys_is_carried_by_the_rule():
    labels = Labelled(np.array([0, MAX_PACKED_SPAN, MAX_PACKED_SPAN], np.int32), np.array([1, 0, 1], np.int32), np.array([3, 6, 2], np.int8))
    x, y = np.array([0, 1], np.int32), np.array([4, 4], np.int32)
    carrier = BlockCarrier(labels, 2)
    assert not carrier.packed_keys
    carried, queries = carrier.carry(x, y)
    assert list(zip(*(column.tolist() for column in carried))) == [(0, 4, 3), (MAX_PACKED_SPAN, 4, 6)]
    assert queries == 2


def _work(tmp_path, labels: Labelled, links: dict[str, tuple[list[int], list[int]]], docs: int) -> tuple[WorkDirs, LanguagePlan]:
    work = WorkDirs(str(tmp_path))
    plan = LanguagePlan("xx", docs, 1, 4)
    write_table(work.labels_file("xx", 1), pa.table(list(map(pa.array, labels)), schema=LABELS), LABELS)
    for tgt, (x, y) in links.items():
        write_links_file(work.doc_links_file("xx", tgt), np.array(x, np.int32), np.array(y, np.int32))
    return work, plan


def test_a_block_unit_writes_every_language_in_query_then_position_order(tmp_path):
    """Block 1 (queries 4-7), labels in rank order: each Y's file is grouped by query ascending, each query by Y position."""
    labels = Labelled(
        np.array([4, 4, 4, 4, 6, 6, 6, 7], np.int32),
        np.array([4, 9, 2, 0, 6, 3, 9, 7], np.int32),
        np.array([6, 5, 3, 1, 6, 4, 2, 6], np.int8),
    )
    links = {"aa": ([0, 2, 4, 6, 9], [30, 10, 20, 5, 1]), "bb": ([], []), "cc": ([3, 7], [0, 8])}
    work, plan = _work(tmp_path, labels, links, docs=10)
    report = propagate_block(str(tmp_path), plan, 1, ["aa", "bb", "cc", "xx"])
    rows = {tgt: pq.read_table(work.propagated_file("xx", tgt, 1)) for tgt in links}
    assert all(table.schema.equals(PROPAGATED, check_metadata=True) for table in rows.values())
    assert list(zip(*(rows["aa"].column(name).to_pylist() for name in PROPAGATED.names))) == [(4, 1, 5), (4, 10, 3), (4, 20, 6), (4, 30, 1), (6, 1, 2), (6, 5, 6)]
    assert rows["bb"].num_rows == 0
    assert list(zip(*(rows["cc"].column(name).to_pylist() for name in PROPAGATED.names))) == [(6, 0, 4), (7, 8, 6)]
    assert report.directions == {"aa": {"queries": 2, "labels": 6}, "bb": {"queries": 0, "labels": 0}, "cc": {"queries": 2, "labels": 2}}
    assert (report.lang, report.block, report.label_rows) == ("xx", 1, 8)
    assert report.group_cpu_seconds >= 0 and report.carry_cpu_seconds >= 0
    assert read_typed_report(report.to_dict()) == report  # what the runner stores reads back as the same report


def test_a_links_file_read_back_is_what_was_written(tmp_path):
    path = str(tmp_path / "links.parquet")
    x, y = np.array([0, 5, 6, 1000], np.int32), np.array([7, 0, 2**31 - 1, 3], np.int32)
    write_links_file(path, x, y)
    got_x, got_y = read_doc_links(path)
    assert got_x.tolist() == x.tolist() and got_y.tolist() == y.tolist()


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [([3, 2], [0, 1], "x is not strictly ascending"), ([1, 1], [0, 1], "x is not strictly ascending"), ([0, 10], [0, 1], "x is not strictly ascending"), ([0, 1], [0, -1], "negative position")],
)
def test_a_bad_links_file_is_named(tmp_path, x, y, message):
    labels = Labelled(np.array([4], np.int32), np.array([0], np.int32), np.array([6], np.int8))
    work, plan = _work(tmp_path, labels, {"aa": (x, y)}, docs=10)
    with pytest.raises(ValueError, match=message) as raised:
        propagate_block(str(tmp_path), plan, 1, ["aa", "xx"])
    assert work.doc_links_file("xx", "aa") in str(raised.value)


def test_labels_of_a_document_x_does_not_have_are_named(tmp_path):
    labels = Labelled(np.array([4, 4], np.int32), np.array([0, 10], np.int32), np.array([6, 1], np.int8))
    work, plan = _work(tmp_path, labels, {"aa": ([0], [0])}, docs=10)
    with pytest.raises(ValueError, match="outside X's 10 documents") as raised:
        propagate_block(str(tmp_path), plan, 1, ["aa", "xx"])
    assert work.labels_file("xx", 1) in str(raised.value)
