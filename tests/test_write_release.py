"""The BI-139 write stage's compiled parts against their plain references (issue 36): the same bytes, the same random draws."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pytest

from clirmatrix.pipeline.io.parquet_io import write_table
from clirmatrix.pipeline.method.corpus import WorkDirs
from clirmatrix.pipeline.method.propagation import query_groups
from clirmatrix.pipeline.method.splits import SplitSettings, write_eval_keys, write_eval_picks, write_query_splits
from clirmatrix.pipeline.output import layout, writers
from clirmatrix.pipeline.output.gzip_encoder import CHUNK as COMPRESS_CHUNK
from clirmatrix.pipeline.output.gzip_encoder import gzip_bytes
from clirmatrix.pipeline.output.release import QueryText, ReleaseSettings, Results, base_fill, in_release_order, render_lines, write_direction
from clirmatrix.pipeline.output.writers import Lines, SortedLines, filler, gzip_lines, query_line
from clirmatrix.schemas import CATALOG, PROPAGATED
from clirmatrix.schemas.contracts import LanguagePlan


@pytest.mark.parametrize("n_docs", [1, 40, 100, 150, 9_999, 10_001, 20_000, 300_000])
def test_compiled_filler_draws_what_numpy_choice_draws(n_docs):
    """``base_fill`` is ``writers.filler`` (numpy's Generator.choice) pick after pick, and leaves the generator where it would."""
    meta = np.random.default_rng(n_docs)
    for k in (1, 100):
        sizes = np.minimum(meta.integers(1, 160, 12), n_docs)
        docs = np.concatenate([meta.choice(n_docs, size, replace=False) for size in sizes])
        starts = np.r_[0, np.cumsum(sizes)]
        picks = np.sort(meta.choice(len(sizes), 8, replace=False))
        tgt_ids = meta.choice(10**9, n_docs, replace=False)
        seed = int(meta.integers(1 << 62))
        compiled, plain = np.random.default_rng(seed), np.random.default_rng(seed)
        ids, counts = base_fill(compiled, docs.astype(np.int32), starts, picks, tgt_ids, k)
        expected = [np.sort(tgt_ids[filler(docs[starts[j] : starts[j + 1]], n_docs, k - min(k, sizes[j]), plain)]) for j in picks]
        assert counts.tolist() == [len(e) for e in expected]
        assert ids.tolist() == np.concatenate(expected).tolist()
        assert compiled.integers(1 << 62) == plain.integers(1 << 62)


def test_titles_are_escaped_as_json_dumps_escapes_them():
    """Every kind of character json.dumps treats apart: controls, quote, backslash, DEL, the BMP, beyond it."""
    rng = np.random.default_rng(3)
    pools = [(0, 0x80), (0x80, 0x800), (0x800, 0xD800), (0xE000, 0x10000), (0x10000, 0x110000)]  # UTF-8's 1-4 byte characters
    titles = ["".join(chr(int(rng.integers(*pools[int(rng.integers(len(pools)))]))) for _ in range(int(rng.integers(0, 12)))) for _ in range(400)]
    titles += ["", '"', "\\", "\x7f", "\u2028\u2029\u0085", "\U0001f389"]
    src_ids = rng.integers(0, 10**15, len(titles))
    results = Results(np.array([5]), np.array([3], np.int8), np.zeros(len(titles), np.int64), np.ones(len(titles), np.int64))
    lines = render_lines(QueryText.from_strings(src_ids, titles), results, np.arange(len(titles))).to_list()
    assert lines == [query_line(str(i), title, [("5", 3)]) for i, title in zip(src_ids.tolist(), titles)]


def test_results_are_sorted_as_released_in_one_pass():
    rng = np.random.default_rng(8)
    query = np.sort(rng.integers(0, 300, 20_000)).astype(np.int32)
    doc = rng.integers(0, 5_000, len(query)).astype(np.int32)
    label = rng.integers(0, 7, len(query)).astype(np.int8)
    tgt_ids = rng.choice(10**9, 5_000, replace=False)
    groups = query_groups(query)
    ids, docs, labels = in_release_order(groups, doc, label, tgt_ids)
    for low, high in zip(groups[:-1], groups[1:]):
        rows = sorted(zip(-label[low:high].astype(int), tgt_ids[doc[low:high]], doc[low:high]))
        assert list(zip(-labels[low:high].astype(int), ids[low:high], docs[low:high])) == rows


def _lines(keys: list[int]) -> tuple[np.ndarray, Lines]:
    data = [b'{"k": %d, "pad": "%s"}\n' % (key, b"x" * (key % 7)) for key in keys]
    return np.array(keys, dtype=np.int64), Lines(np.frombuffer(b"".join(data), np.uint8), np.cumsum([len(d) for d in data]))


@pytest.mark.parametrize("memory", [0, 1 << 30])
def test_sorted_lines_merge_blocks_held_or_spilled_into_key_order(tmp_path, memory):
    """Blocks in any order, spilled to disk or held, merged in small batches: every line once, by key, ties by block."""
    rng = np.random.default_rng(1)
    blocks = [rng.permutation(np.r_[rng.choice(10_000, 500, replace=False), 42]).tolist() for _ in range(4)]
    sorter = SortedLines(batch=64, memory=memory)
    for block in blocks:
        sorter.add(*_lines(block))
    with gzip_lines(str(tmp_path / "merged.jl.gz")) as out:
        sorter.drain(out)
    lines = gzip.decompress((tmp_path / "merged.jl.gz").read_bytes()).splitlines()
    keys = [json.loads(line)["k"] for line in lines]
    assert keys == sorted(key for block in blocks for key in block) and out.record.lines == len(keys)
    assert keys.count(42) == 4


@pytest.mark.parametrize("memory", [0, 1 << 30])
def test_sorted_lines_write_blocks_already_in_key_order_as_one_sorted_write(tmp_path, monkeypatch, memory):
    """Blocks whose keys follow each other (a dump in page id order; one key shared at a boundary) are written as they come, held or spilled: the bytes of one write of every line."""
    monkeypatch.setattr(writers, "SPILL_READ", 1000)  # a spilled run read back in many pieces
    rng = np.random.default_rng(4)
    blocks = [np.sort(rng.choice(np.arange(start, start + 3_000), 400, replace=False)).tolist() for start in (0, 3_000, 6_000, 9_000)]
    blocks[2][0] = blocks[1][-1]  # equal keys across blocks keep their blocks' order
    sorter = SortedLines(batch=64, memory=memory)
    for block in blocks:
        sorter.add(*_lines(block))
    with gzip_lines(str(tmp_path / "in-order.jl.gz")) as out:
        sorter.drain(out)
    with gzip_lines(str(tmp_path / "one-write.jl.gz")) as reference:
        reference.write_lines(_lines([key for block in blocks for key in block])[1])
    assert out.record.md5 == reference.record.md5 and out.record.lines == reference.record.lines == sum(map(len, blocks))


def test_the_compressor_gets_the_same_slices_however_the_text_arrives(tmp_path):
    """Some deflate levels' bytes depend on how input is cut: the encoder always gets CHUNK slices of the file's text, as one write gives."""
    text = np.random.default_rng(2).integers(32, 127, int(2.5 * COMPRESS_CHUNK), dtype=np.uint8).tobytes()
    with gzip_lines(str(tmp_path / "whole.gz")) as whole:
        whole.write_text(text, 1)
    cuts = np.sort(np.random.default_rng(3).choice(len(text), 40, replace=False))
    with gzip_lines(str(tmp_path / "pieces.gz")) as pieces:
        for start, end in zip(np.r_[0, cuts], np.r_[cuts, len(text)]):
            pieces.write_text(memoryview(text)[start:end], 0)
    assert pieces.record.md5 == whole.record.md5 and gzip.decompress((tmp_path / "pieces.gz").read_bytes()) == text
    assert (tmp_path / "whole.gz").read_bytes() == gzip_bytes(text)


def _direction(root, queries: int = 900, tgt_docs: int = 3_000, block_size: int = 200) -> tuple[LanguagePlan, LanguagePlan]:
    """A small WORK folder with what ``write_direction`` reads: X -> Y over several blocks, page ids in no order."""
    rng = np.random.default_rng(5)
    work = WorkDirs(str(root))
    src, tgt = LanguagePlan("xx", queries, 1, block_size), LanguagePlan("yy", tgt_docs, 1, block_size)
    titles = pa.array([f"Query {i} \u00e9\u4e2d" for i in range(queries)])
    write_table(work.catalog_file("xx"), pa.table([pa.array(rng.choice(10**8, queries, replace=False)), pa.array(np.arange(queries)), titles], schema=CATALOG), CATALOG)
    write_table(work.catalog_file("yy"), pa.table([pa.array(rng.choice(10**8, tgt_docs, replace=False)), pa.array(np.zeros(tgt_docs, np.int64)), pa.array([""] * tgt_docs)], schema=CATALOG), CATALOG)
    for block in range(src.blocks):
        low, high = src.block(block)
        chosen = np.flatnonzero(rng.random(high - low) < 0.7) + low
        query = np.repeat(chosen, rng.integers(1, 130, len(chosen)))
        doc = rng.integers(0, tgt_docs, len(query))
        keep = np.unique(np.c_[query, doc], axis=0)
        label = rng.integers(1, 7, len(keep)).astype(np.int8)
        write_table(work.propagated_file("xx", "yy", block), pa.table([pa.array(keep[:, 0].astype(np.int32)), pa.array(keep[:, 1].astype(np.int32)), pa.array(label)], schema=PROPAGATED), PROPAGATED)
    settings = SplitSettings(train_size=150, eval_size=40)
    write_query_splits(str(root), "xx", settings)
    write_eval_picks(str(root), "xx", src.blocks, ["yy"], settings)
    write_eval_keys(str(root), [work.eval_picks_file("xx")])
    return src, tgt


def test_a_direction_writes_the_same_files_whether_its_runs_spill_or_not(tmp_path, monkeypatch):
    """Several blocks whose src_ids interleave: held in memory or spilled run by run, the same bytes; each base line 100 results."""
    src, tgt = _direction(tmp_path / "work")
    settings = ReleaseSettings(splits=SplitSettings(train_size=150, eval_size=40))
    held = write_direction(str(tmp_path / "work"), str(tmp_path / "held"), src, tgt, settings)
    monkeypatch.setattr(writers, "SORT_MEMORY", 0)
    spilled = write_direction(str(tmp_path / "work"), str(tmp_path / "spilled"), src, tgt, settings)
    assert held.files == spilled.files
    train = gzip.decompress((tmp_path / "held" / layout.query_file("bi139-base", "xx", "yy", "train")).read_bytes()).splitlines()
    records = [json.loads(line) for line in train]
    assert len(records) == 150 and all(len(r["tgt_results"]) == 100 for r in records)
    assert [int(r["src_id"]) for r in records] == sorted(int(r["src_id"]) for r in records)


def test_a_worker_with_another_gzip_encoder_refuses_to_write(tmp_path):
    """The driver's encoder travels in the settings; a worker with another zlib-ng (a cluster's own install) stops before writing a byte."""
    from clirmatrix.beam_jobs.write_release import WriteRelease
    from clirmatrix.pipeline.output.gzip_encoder import ENCODER
    from clirmatrix.pipeline.output.release import EncoderMismatchError
    from clirmatrix.schemas.contracts import DocsTask, Unit

    ReleaseSettings().check_encoder()
    driver = ReleaseSettings(gzip={**ENCODER, "package": "0.9.0", "library": "2.1.7"})
    stage = WriteRelease(str(tmp_path / "work"), str(tmp_path / "out"), driver)
    with pytest.raises(EncoderMismatchError, match=r"install zlib-ng==0\.9\.0 on every worker"):
        stage.run_unit(Unit("plan", "docs.xx", DocsTask("xx")))
    assert not (tmp_path / "out").exists()
