"""The released files: BI-139 base and full, DOCS and DOCS-FULL, and the index (docs/method.md sections 7 and 9).

Units of work, each bounded by a block of queries or a stream of documents:

- ``write_direction``: one BI-139 direction X -> Y, its full and base files of the
  four splits. It streams X's blocks of propagated labels in query order and holds
  only numbers per document besides one block: each of X's queries' priority and
  key (``splits.write_query_splits``), the direction's eval sets
  (``splits.write_eval_picks``), every eval key of the build, Y's page ids, and the
  direction's queries.
- ``write_docs``: ``DOCS/{lang}.tsv.gz`` and ``DOCS-FULL/{lang}.tsv.gz``, streamed.
- ``write_index``: ``downloads.json.gz`` from what the units reported.

MULTI-8 is ``clirmatrix.pipeline.multi8``. Results are rendered from numeric page
ids in one compiled pass per block (``render_results``): the same bytes as
``writers.query_line``, the plain reference, at a small fraction of its cost.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numba
import numpy as np
import orjson
import pyarrow.compute as pc

from clirmatrix.pipeline import fileio, layout
from clirmatrix.pipeline.corpus import WorkDirs, catalog_numbers, iter_docs, read_catalog
from clirmatrix.pipeline.fileio import atomic_create
from clirmatrix.pipeline.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.parquet_io import read_table
from clirmatrix.pipeline.propagation import group_bounds
from clirmatrix.pipeline.splits import SplitSettings, direction_queries, direction_splits, read_eval_keys, seeded_rng
from clirmatrix.pipeline.units import LanguagePlan
from clirmatrix.pipeline.writers import SortedLines, WrittenFile, docs_text, filler, gzip_lines
from clirmatrix.schemas import EVAL_PICKS, PROPAGATED, QUERY_SPLITS


@dataclass(frozen=True)
class ReleaseSettings:
    """Splits, MULTI-8 languages, candidates per query, and the URL prefix written into the index."""

    splits: SplitSettings = field(default_factory=SplitSettings)
    multi_langs: tuple[str, ...] = MULTI8_LANGUAGES
    candidates: int = layout.BASE_CANDIDATES
    base_url: str = ""

    def fingerprint_parts(self) -> dict:
        return asdict(self)


# --- rendering ------------------------------------------------------------------------------------

_PAIR_BYTES = 28  # '["' + up to 19 digits + '", ' + label + ']' + ', '
_TWO_DIGITS = np.frombuffer(b"".join(b"%02d" % n for n in range(100)), dtype=np.uint8)  # "00".."99"


@numba.njit(cache=True)
def _render(page_ids, labels, starts, out, pair_end, query_end, two_digits):
    """``[["id", label], ...]`` per query into ``out`` (``json.dumps`` spacing); the end offset of every pair and every query."""
    digits = np.empty(20, np.uint8)
    at = 0
    for q in range(starts.shape[0] - 1):
        out[at] = 91  # [
        at += 1
        for row in range(starts[q], starts[q + 1]):
            if row > starts[q]:
                out[at] = 44  # ,
                out[at + 1] = 32
                at += 2
            out[at] = 91
            out[at + 1] = 34  # "
            at += 2
            value = page_ids[row]
            first = 20  # the id's digits, written backwards two at a time into digits[first:]
            while value >= 100:
                pair = value % 100
                value //= 100
                first -= 2
                digits[first] = two_digits[2 * pair]
                digits[first + 1] = two_digits[2 * pair + 1]
            if value >= 10:
                first -= 2
                digits[first] = two_digits[2 * value]
                digits[first + 1] = two_digits[2 * value + 1]
            else:
                first -= 1
                digits[first] = 48 + value
            for i in range(first, 20):
                out[at] = digits[i]
                at += 1
            out[at] = 34
            out[at + 1] = 44
            out[at + 2] = 32
            out[at + 3] = 48 + labels[row]
            out[at + 4] = 93  # ]
            at += 5
            pair_end[row] = at
        out[at] = 93
        at += 1
        query_end[q] = at
    return at


class RenderedResults:
    """The ``tgt_results`` of consecutive queries, rendered at once.

    Args:
        page_ids, labels: one row per result, grouped by query, each query's rows in release order.
        starts: row offsets of the queries (``len(queries) + 1``).
    """

    def __init__(self, page_ids: np.ndarray, labels: np.ndarray, starts: np.ndarray) -> None:
        self.starts = np.ascontiguousarray(starts, dtype=np.int64)
        out = np.empty(len(page_ids) * _PAIR_BYTES + 2 * len(self.starts), dtype=np.uint8)
        self.pair_end = np.empty(len(page_ids), dtype=np.int64)
        self.query_end = np.empty(len(self.starts) - 1, dtype=np.int64)
        if (page_ids < 0).any():
            raise ValueError("page ids must not be negative")
        used = _render(
            np.ascontiguousarray(page_ids, dtype=np.int64), np.ascontiguousarray(labels, dtype=np.int8), self.starts, out, self.pair_end, self.query_end, _TWO_DIGITS
        )
        self.buffer = out[:used].tobytes()

    def _begin(self, query: int) -> int:
        return int(self.query_end[query - 1]) if query else 0

    def full(self, query: int) -> bytes:
        """All results of the ``query``-th query: ``[["id", label], ...]``."""
        return self.buffer[self._begin(query) : int(self.query_end[query])]

    def first(self, query: int, n: int) -> bytes:
        """The opening bracket and the first ``n`` (>= 1) results, without the closing one."""
        return self.buffer[self._begin(query) : int(self.pair_end[self.starts[query] + n - 1])]


def query_prefix(page_id: int, title: str) -> bytes:
    """A query line up to its results: ``{"src_id": "...", "src_query": "...", "tgt_results": `` (``json.dumps`` bytes)."""
    return b'{"src_id": "%d", "src_query": %s, "tgt_results": ' % (page_id, json.dumps(title).encode())


@numba.njit(cache=True)
def _sort_each(keys, starts):
    order = np.empty(keys.shape[0], np.int64)
    for group in range(starts.shape[0] - 1):
        low, high = starts[group], starts[group + 1]
        local = np.argsort(keys[low:high])
        for i in range(high - low):
            order[low + i] = low + local[i]
    return order


def release_order(starts: np.ndarray, page_ids: np.ndarray, label: np.ndarray) -> np.ndarray:
    """The order of rows already grouped by query (groups at ``starts``) that sorts each query's results as released.

    Label descending, then page id ascending (docs/method.md section 9), as one unsigned
    key per row: page ids are below 10**18 < 2**60 (``is_page_id``), labels fill the 3 bits above.
    """
    keys = (np.uint64(6) - label.astype(np.uint64)) << np.uint64(60) | page_ids.astype(np.uint64)
    return _sort_each(keys, np.ascontiguousarray(starts, dtype=np.int64))


def query_groups(query: np.ndarray) -> np.ndarray:
    """Row offsets of the runs of a sorted query column, with the end: ``len(groups) + 1`` values."""
    _, starts, _ = group_bounds(query)
    return np.r_[starts, len(query)].astype(np.int64)


def base_candidates(rendered: RenderedResults, picks: Sequence[tuple[int, np.ndarray, np.random.Generator]], tgt_ids: np.ndarray, k: int) -> list[bytes]:
    """Exactly ``k`` results per pick (docs/method.md section 7): the ``k`` best labelled, then seeded label-0 filler by page id.

    Each pick is (query index in ``rendered``, its labelled documents as Y positions in
    release order, its split's generator); generators are drawn from in the picks' order.
    """
    fillers = [np.sort(tgt_ids[filler(docs, len(tgt_ids), k - min(k, len(docs)), rng)]) for _, docs, rng in picks]
    offsets = np.r_[0, np.cumsum([len(ids) for ids in fillers])].astype(np.int64)
    every = np.concatenate(fillers) if fillers else np.zeros(0, np.int64)
    extra = RenderedResults(every, np.zeros(len(every), np.int8), offsets)
    results = []
    for i, (query, docs, _) in enumerate(picks):
        labelled = rendered.first(query, min(k, len(docs)))
        results.append(labelled + b", " + extra.full(i)[1:] if offsets[i + 1] > offsets[i] else labelled + b"]")
    return results


def judged(label: np.ndarray, groups: np.ndarray, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per query (rows at ``groups``): labels >= 1 and >= 4 among its first ``limit`` rows (all when None)."""
    counts = []
    for threshold in (1, 4):
        cumulative = np.r_[0, np.cumsum(label >= threshold)]
        ends = groups[1:] if limit is None else np.minimum(groups[1:], groups[:-1] + limit)
        counts.append(cumulative[ends] - cumulative[groups[:-1]])
    return counts[0], counts[1]


# --- BI-139 ---------------------------------------------------------------------------------------


def write_direction(work_root: str, out_root: str, src: LanguagePlan, tgt: LanguagePlan, settings: ReleaseSettings) -> dict:
    """One unit: BI-139 full and base files of X -> Y for every split, streamed block by block."""
    work = WorkDirs(work_root)
    splits = read_table([work.query_splits_file(src.lang)], QUERY_SPLITS, ["order", "key"])
    priority, identity = splits.column("order").to_numpy(), splits.column("key").to_numpy()
    queries = direction_queries(work, src.lang, tgt.lang, src.blocks)
    picks = read_table([work.eval_picks_file(src.lang)], EVAL_PICKS)
    picks = picks.filter(pc.equal(picks.column("tgt"), tgt.lang))
    split_of, base_of = direction_splits(queries, picks, identity, priority, read_eval_keys(work), settings.splits.train_size)
    rngs = [seeded_rng(settings.splits.seed, "fill", f"{src.lang}.{tgt.lang}.{split}") for split in layout.SPLITS]
    tgt_ids = catalog_numbers(work, tgt.lang, "page_id")
    k = settings.candidates
    with contextlib.ExitStack() as stack:
        full_files = [stack.enter_context(gzip_lines(fileio.join(out_root, layout.query_file("bi139-full", src.lang, tgt.lang, s)))) for s in layout.SPLITS]
        base_files = [stack.enter_context(gzip_lines(fileio.join(out_root, layout.query_file("bi139-base", src.lang, tgt.lang, s)))) for s in layout.SPLITS]
        full_sorted = [SortedLines() for _ in layout.SPLITS]
        base_sorted = [SortedLines() for _ in layout.SPLITS]
        for block in range(src.blocks):
            table = read_table([work.propagated_file(src.lang, tgt.lang, block)], PROPAGATED)
            if table.num_rows == 0:
                continue
            # Rows come grouped by query (ascending), each query's by Y position: order them as released.
            query, doc, label = (table.column(name).to_numpy() for name in ("query", "doc", "label"))
            groups = query_groups(query)
            ordered = release_order(groups, tgt_ids[doc], label)
            doc, label = doc[ordered], label[ordered]
            firsts = query[groups[:-1]]
            rendered = RenderedResults(tgt_ids[doc], label, groups)
            first_position = src.block(block)[0]
            catalog = read_catalog(work, src.lang, ["page_id", "title"], first_position, int(firsts[-1]) + 1)
            page_ids, titles = catalog.column("page_id").to_numpy(), catalog.column("title").to_pylist()
            prefixes = [query_prefix(int(page_ids[q - first_position]), titles[q - first_position]) for q in firsts.tolist()]
            at = np.searchsorted(queries, firsts)
            query_split, in_base = split_of[at], base_of[at]  # NOT_CHOSEN: in another direction's eval sets, so in no file here
            full_ge1, full_ge4 = judged(label, groups)
            picked = np.flatnonzero(in_base)
            base_ge1, base_ge4 = judged(label, groups, k)
            picks = [(j, doc[groups[j] : groups[j + 1]], rngs[query_split[j]]) for j in picked.tolist()]
            base_lines = dict(zip(picked.tolist(), base_candidates(rendered, picks, tgt_ids, k)))
            src_ids = page_ids[firsts - first_position]
            for split in range(len(layout.SPLITS)):
                mine = np.flatnonzero(query_split == split)
                full_sorted[split].add(src_ids[mine], [prefixes[j] + rendered.full(j) + b"}" for j in mine.tolist()])
                full_files[split].count(int(full_ge1[mine].sum()), int(full_ge4[mine].sum()), int((groups[mine + 1] - groups[mine]).sum()))
                chosen = mine[in_base[mine]]
                base_sorted[split].add(src_ids[chosen], [prefixes[j] + base_lines[j] + b"}" for j in chosen.tolist()])
                base_files[split].count(int(base_ge1[chosen].sum()), int(base_ge4[chosen].sum()), len(chosen) * min(k, len(tgt_ids)))
        for split in range(len(layout.SPLITS)):  # BI-139 lists queries by src_id ascending, as the release does
            full_sorted[split].drain(full_files[split])
            base_sorted[split].drain(base_files[split])
    files = [f.record for pair in zip(full_files, base_files) for f in pair]
    return {"unit": f"bi139.{src.lang}.{tgt.lang}", "files": describe_files(out_root, files)}


def describe_files(out_root: str, records: Sequence[WrittenFile]) -> list[dict]:
    """What a unit reports of the files it wrote: path below ``out_root``, md5, size, lines and label counts."""
    return [{**asdict(record), "path": fileio.relative_to(out_root, record.path)} for record in records]


# --- DOCS and the index -----------------------------------------------------------------------------


def write_docs(work_root: str, out_root: str, lang: str) -> dict:
    """One unit: ``DOCS/{lang}.tsv.gz`` (truncated text) and ``DOCS-FULL/{lang}.tsv.gz``, in dump order."""
    work = WorkDirs(work_root)
    with gzip_lines(fileio.join(out_root, layout.docs_file("docs", lang))) as short, gzip_lines(fileio.join(out_root, layout.docs_file("docs-full", lang))) as full:
        for batch in iter_docs(work, lang, ["doc_id", "text", "text_full"]):
            short.write_text(docs_text(batch.column("doc_id"), batch.column("text")), batch.num_rows)
            full.write_text(docs_text(batch.column("doc_id"), batch.column("text_full")), batch.num_rows)
    return {"unit": f"docs.{lang}", "files": describe_files(out_root, [short.record, full.record])}


def index_url_root(out_root: str, base_url: str) -> str:
    """Where the index's URLs point: ``base_url`` when publishing, else OUT itself (``file://`` locally).

    Absolute always: a client holding only the index (ir_datasets' downloader) cannot
    resolve a relative URL.
    """
    if base_url:
        return base_url.rstrip("/") + "/"
    if fileio.is_remote(out_root):
        return out_root.rstrip("/") + "/"
    return Path(fileio.absolute(out_root)).as_uri().rstrip("/") + "/"


def write_index(out_root: str, files: Sequence[dict], base_url: str) -> str:
    """``downloads.json.gz``: context -> key -> url, expected_md5, cache_path, size, size_hint (docs/method.md section 9)."""
    root = index_url_root(out_root, base_url)
    index: dict[str, dict[str, dict]] = {}
    for entry in files:
        released = layout.parse_path(entry["path"])
        context, key = layout.index_key(released.dataset, released.src, released.tgt, released.split)
        index.setdefault(context, {})[key] = {
            "url": root + entry["path"], "expected_md5": entry["md5"], "cache_path": entry["path"], "size": entry["size"],
            "size_hint": entry["size"],  # what ir_datasets' disk-space check reads
        }
    path = fileio.join(out_root, layout.INDEX)
    with atomic_create(path) as handle, gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as stream:
        stream.write(orjson.dumps(index, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
    return path
