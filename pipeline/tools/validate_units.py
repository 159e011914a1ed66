"""``validate``'s units of work: one language's DOCS files, and one direction X -> Y's query files.

A unit reads each of its files once, through the compiled scanner
(``validate_scan``), taking its md5 on the way; lines the scanner does not accept, and
queries that break a per-query rule, go through the Python rules below, which word
every finding. What the rules across files need (each file's query ids, a direction's
base and full pairs) comes back as int64 arrays (``validate_scan.id_key``), so a unit
holds one file's ids, never its pairs: a base file's labelled pairs and the full
file's pairs for the same queries are the most it keeps.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numba
import numpy as np
import orjson

from clirmatrix.pipeline.output.jsonl import MalformedRecordError, QueryRecord, parse_doc, parse_query
from clirmatrix.pipeline.output.layout import BASE_CANDIDATES, SPLITS, ReleasedFile
from clirmatrix.pipeline.tools.validate_report import (
    BASE_FULL,
    CANDIDATES,
    DOC_TEXT,
    DOCS_FULL,
    DUPLICATE_DOC,
    DUPLICATE_QUERY,
    DUPLICATE_RESULT,
    EMPTY_FILE,
    EXAMPLE_IDS,
    ID_ORDER,
    LABEL_6,
    LABEL_ORDER,
    LABEL_RANGE,
    LINE_BYTES,
    MALFORMED,
    MISSING_DOC,
    NO_RELEVANT,
    QUERY_ORDER,
    SPLIT_OVERLAP,
    SPLIT_SIZE,
    Recorder,
    examples,
)
from clirmatrix.pipeline.tools.validate_scan import BROKEN, CLEAN, HEAD, MIDDLE, OTHER, RESULTS, SPACES, Block, Reading, docs_blocks, id_key, query_blocks, scan_docs, scan_queries

SPLIT_BIT = {split: 1 << i for i, split in enumerate(SPLITS)}
FULL, BASE, MULTI8 = "bi139-full", "bi139-base", "multi8"


def in_release_bytes(line: bytes) -> bool:
    """Whether a query line is byte for byte what Python's ``json.dumps`` makes of its record, as the release's are."""
    return json.dumps(orjson.loads(line)).encode() == line.rstrip(b"\r\n")


def several(mask: int) -> bool:
    return bool(mask & (mask - 1))


def splits_of(mask: int) -> list[str]:
    return [split for split in SPLITS if mask & SPLIT_BIT[split]]


class Names(dict):
    """The text of every id that is not a plain number, by its (negative) key; plain numbers are their own text."""

    def key(self, text: str) -> int:
        key = id_key(text)
        if key < 0:
            self[key] = text
        return key

    def text(self, key: int) -> str:
        return str(key) if key >= 0 else self[int(key)]


@dataclass
class Outcome:
    """What a unit found and read: its findings, records per file, md5 and size per file, ids' texts."""

    recorder: Recorder
    counts: dict[str, int] = field(default_factory=dict)
    digests: dict[str, tuple[str, int]] = field(default_factory=dict)
    names: Names = field(default_factory=Names)
    queries: int = 0

    def read(self, released: ReleasedFile, reading: Reading) -> None:
        self.digests[released.path] = (reading.md5, reading.size)


# --- DOCS ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocsTask:
    """One language's ``DOCS`` and ``DOCS-FULL`` files; its sorted doc keys are saved at ``keys_path`` for the directions."""

    root: str
    lang: str
    docs: ReleasedFile | None
    full: ReleasedFile | None
    build: bool
    keys_path: str


@dataclass
class DocsOutcome(Outcome):
    lang: str = ""
    documents: int | None = None  # distinct ids in DOCS, when it is there


def check_docs(task: DocsTask) -> DocsOutcome:
    """Each line's rules, repeated ids, and DOCS-FULL against DOCS."""
    outcome = DocsOutcome(Recorder(task.build), lang=task.lang)
    ids = None
    if task.docs is not None:
        ids = np.unique(_read_docs(task.root, task.docs, outcome, None))
        outcome.documents = len(ids)
        _save_keys(task.keys_path, ids)
    if task.full is not None:
        _read_docs(task.root, task.full, outcome, ids)
    return outcome


def _save_keys(path: str, keys: np.ndarray) -> None:
    """A DOCS unit's keys where the directions' units load them: a local file, or an object in a scratch prefix every worker reaches (``validate_remote``)."""
    if "://" in path:
        from clirmatrix.pipeline.tools.validate_remote import write_array

        write_array(path, keys)
    else:
        np.save(path, keys)


def _load_keys(path: str) -> np.ndarray:
    if "://" in path:
        from clirmatrix.pipeline.tools.validate_remote import read_array

        return read_array(path)
    return np.load(path)


def _read_docs(root: str, released: ReleasedFile, outcome: DocsOutcome, truncated: np.ndarray | None) -> np.ndarray:
    """The doc keys of a TSV file's well-formed lines, in file order; DOCS-FULL is compared with DOCS (``truncated``)."""
    path, record, names = released.path, outcome.recorder, outcome.names
    keys, lines = [], []
    reading = Reading()
    for block in docs_blocks(os.path.join(root, path), reading):
        block_keys = block.ids.copy()
        kept = block.verdicts == CLEAN
        for i in np.flatnonzero((block.verdicts == BROKEN) | (block.verdicts == OTHER)).tolist():
            number = block.first_line + i
            try:
                doc_id, text = parse_doc(block.line(i), path, number)
            except MalformedRecordError as error:
                record.fail(path, MALFORMED, error.reason, number)
                continue
            block_keys[i], kept[i] = names.key(doc_id), True
            if "\r" in text:
                record.fail(path, DOC_TEXT, "carriage return inside the text", number)
            if not text.strip():
                record.strict(path, DOC_TEXT, f"doc {doc_id} has an empty text (docs/method.md section 2)", number)
        at = np.flatnonzero(kept)
        keys.append(block_keys[at])
        lines.append(at + block.first_line)
    if reading.error:
        record.fail(path, MALFORMED, reading.error, reading.error_line)
    outcome.read(released, reading)
    all_keys, all_lines = (np.concatenate(keys), np.concatenate(lines)) if keys else (np.empty(0, np.int64), np.empty(0, np.int64))
    for at in _repeats(all_keys).tolist():
        record.fail(path, DUPLICATE_DOC, f"doc id {names.text(all_keys[at])} appears again", int(all_lines[at]))
    distinct = len(np.unique(all_keys))
    if truncated is not None:
        for at in np.flatnonzero(~np.isin(all_keys, truncated)).tolist():
            record.fail(path, DOCS_FULL, f"doc {names.text(all_keys[at])} is not in DOCS/{released.src}.tsv.gz", int(all_lines[at]))
        if distinct != len(truncated):
            record.fail(path, DOCS_FULL, f"{distinct:,} documents, but DOCS/{released.src}.tsv.gz has {len(truncated):,}")
    outcome.counts[path] = distinct
    return all_keys


def _repeats(keys: np.ndarray) -> np.ndarray:
    """Positions, in order, of keys seen earlier in ``keys``."""
    if not len(keys):
        return np.empty(0, np.int64)
    _, first = np.unique(keys, return_index=True)
    repeated = np.ones(len(keys), bool)
    repeated[first] = False
    return np.flatnonzero(repeated)


# --- one direction's query files ------------------------------------------------------------------


@dataclass(frozen=True)
class DirectionTask:
    """The query files of one direction X -> Y (every set and split), with what DOCS/Y told."""

    root: str
    src: str
    tgt: str
    files: tuple[ReleasedFile, ...]
    build: bool
    train_size: int
    eval_size: int
    documents: int | None  # distinct ids in DOCS/Y, when it is there
    keys_path: str | None  # DOCS/Y's sorted doc keys, when it is there


@dataclass
class FileIds:
    """A query file's well-formed records: their src_id keys and line numbers, in file order."""

    dataset: str
    split: str
    path: str
    keys: np.ndarray
    lines: np.ndarray


@dataclass
class DirectionOutcome(Outcome):
    files: list[FileIds] = field(default_factory=list)
    overlapping: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # queries already reported within the direction


class _Pairs:
    """Judged pairs of some records, gathered block by block: each pair's record (ordinal among those kept), doc key, label; each record's key and line."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.records = 0

    def add(self, keys: np.ndarray, lines: np.ndarray, lengths: np.ndarray, docs: np.ndarray, labels: np.ndarray) -> None:
        """Records with these keys and lines, holding ``lengths`` pairs each, in order, from ``docs`` and ``labels``."""
        record = np.repeat(np.arange(self.records, self.records + len(keys)), lengths)
        self.parts.append((record, docs, labels, keys, lines))
        self.records += len(keys)

    def key_set(self) -> set[int]:
        return {key for part in self.parts for key in part[3].tolist()}

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return (np.empty(0, np.int64),) * 5
        return tuple(np.concatenate([part[k] for part in self.parts]).astype(np.int64) for k in range(5))


def _ranges(offsets: np.ndarray, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pairs of each record, positions of all their pairs in order) for records' ``offsets``."""
    starts, lengths = offsets[records], offsets[records + 1] - offsets[records]
    if not len(records):
        return lengths, np.empty(0, np.int64)
    ends = np.cumsum(lengths)
    return lengths, np.arange(ends[-1]) - np.repeat(ends - lengths - starts, lengths)


class DocSet:
    """A language's doc keys for membership tests of millions of judged ids: a bitmap over plain-number ids, binary search for the rest.

    A binary search per judged id into millions of sorted ids costs a cache miss a
    step; page ids are below ~10^8, so one bit each (12 MB for English) answers with
    one read.
    """

    def __init__(self, sorted_keys: np.ndarray) -> None:
        keys = np.asarray(sorted_keys, dtype=np.int64)
        self.others = keys[keys < 0]  # hashed ids: few or none
        plain = keys[keys >= 0]
        self.bits = np.zeros((int(plain[-1]) >> 3) + 1 if len(plain) else 1, np.uint8)
        _set_bits(self.bits, plain)

    def contains(self, values: np.ndarray) -> np.ndarray:
        found = _test_bits(self.bits, values)
        negative = values < 0
        if negative.any():
            found[negative] = np.isin(values[negative], self.others)
        return found


@numba.njit(cache=True)
def _set_bits(bits, keys):
    for key in keys:
        bits[key >> 3] |= np.uint8(1 << (key & 7))


@numba.njit(cache=True)
def _test_bits(bits, values):
    found = np.zeros(values.shape[0], np.bool_)
    limit = bits.shape[0] << 3
    for i in range(values.shape[0]):
        value = values[i]
        found[i] = 0 <= value < limit and (bits[value >> 3] >> (value & 7)) & 1 == 1
    return found


class _QueryFile:
    """One query file read once: per-line and per-file rules, missing documents, and the pairs the direction's rules ask for."""

    def __init__(self, task: DirectionTask, released: ReleasedFile, outcome: DirectionOutcome, docs: DocSet | None, want: np.ndarray | None = None, keep_all: bool = False) -> None:
        self.task, self.released, self.outcome = task, released, outcome
        self.path = released.path
        self.docs = docs
        self.want = want  # keep the pairs of these queries' first records (full against base)
        self.want_keys = np.fromiter(want, np.int64, len(want)) if want is not None else None
        self.keep_all = keep_all  # keep every record's labelled pairs (base, when full is there)
        self.pairs = _Pairs()
        self.wanted_seen: set[int] = set()
        self.judged = self.absent = self.first_absent = 0
        self.missing: dict[int, None] = {}  # the first EXAMPLE_IDS absent doc keys, in file order

    def read(self) -> FileIds:
        task, released, record = self.task, self.released, self.outcome.recorder
        full = released.dataset == FULL
        documents = task.documents
        candidates = -1 if full else BASE_CANDIDATES if documents is None else min(BASE_CANDIDATES, documents)
        reading = Reading()
        keys, lines = [], []
        unlike = first_unlike = 0
        for block in query_blocks(os.path.join(task.root, self.path), reading, 1 if full else 0, candidates, task.build):
            block_keys = block.ids.copy()
            kept = block.verdicts <= BROKEN
            extra: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            for i in np.flatnonzero(block.verdicts == BROKEN).tolist():
                number = block.first_line + i
                check_results(record, released, number, parse_query(block.line(i), self.path, number), documents, task.build)
            for i in np.flatnonzero(block.verdicts == OTHER).tolist():
                number, line = block.first_line + i, block.line(i)
                try:
                    parsed = parse_query(line, self.path, number)
                except MalformedRecordError as error:
                    record.fail(self.path, MALFORMED, error.reason, number)
                    continue
                if not in_release_bytes(line):
                    unlike += 1
                    first_unlike = first_unlike or number
                check_results(record, released, number, parsed, documents, task.build)
                block_keys[i], kept[i] = self.outcome.names.key(parsed.src_id), True
                extra[i] = (
                    np.array([self.outcome.names.key(doc_id) for doc_id, _ in parsed.tgt_results], np.int64),
                    np.array([label for _, label in parsed.tgt_results], np.int64),
                )
            at = np.flatnonzero(kept)
            keys.append(block_keys[at])
            lines.append(at + block.first_line)
            self._pairs(block, at, block_keys, extra)
        if reading.error:
            record.fail(self.path, MALFORMED, reading.error, reading.error_line)
        if unlike:
            record.strict(self.path, LINE_BYTES, f"{unlike:,} lines are not the bytes of json.dumps(record) (', ' and ': ' separators, \\uXXXX escapes)", first_unlike)
        self.outcome.read(released, reading)
        ids = FileIds(released.dataset, released.split, self.path, *((np.concatenate(keys), np.concatenate(lines)) if keys else (np.empty(0, np.int64),) * 2))
        self._file_rules(ids)
        return ids

    def _pairs(self, block: Block, at: np.ndarray, keys: np.ndarray, extra: dict[int, tuple[np.ndarray, np.ndarray]]) -> None:
        """Count judged and absent documents, and keep the pairs asked for, of the block's well-formed records ``at``."""
        offsets = block.pair_offsets
        if extra:  # lines the Python rules read: their pairs are not in the scanner's arrays; rebuild the block's
            docs = [extra[i][0] if i in extra else block.doc_ids[offsets[i] : offsets[i + 1]] for i in range(len(block))]
            labels = [extra[i][1] if i in extra else block.labels[offsets[i] : offsets[i + 1]] for i in range(len(block))]
            offsets = np.r_[0, np.cumsum([len(d) for d in docs])]
            doc_ids, all_labels = np.concatenate(docs).astype(np.int64), np.concatenate(labels).astype(np.int64)
        else:
            doc_ids, all_labels = block.doc_ids, block.labels
        lengths, positions = _ranges(offsets, at)
        self.judged += len(positions)
        if self.docs is not None and len(positions):
            judged = doc_ids[positions]
            absent = np.flatnonzero(~self.docs.contains(judged))
            if len(absent):
                self.absent += len(absent)
                self.first_absent = self.first_absent or block.first_line + int(np.repeat(at, lengths)[absent[0]])
                for doc in judged[absent].tolist():
                    if len(self.missing) >= EXAMPLE_IDS:
                        break
                    self.missing.setdefault(doc)
        if self.want is not None:  # a query's first record only
            chosen = at[np.isin(keys[at], self.want_keys) & ~np.isin(keys[at], np.fromiter(self.wanted_seen, np.int64, len(self.wanted_seen)))]
            _, first = np.unique(keys[chosen], return_index=True)
            chosen = chosen[np.sort(first)]
            self.wanted_seen.update(keys[chosen].tolist())
        elif self.keep_all:
            chosen = at
        else:
            return
        lengths, positions = _ranges(offsets, chosen)
        self.pairs.add(keys[chosen], chosen + block.first_line, lengths, doc_ids[positions], all_labels[positions])

    def _file_rules(self, ids: FileIds) -> None:
        task, released, record, names = self.task, self.released, self.outcome.recorder, self.outcome.names
        for at in _repeats(ids.keys).tolist():
            record.fail(self.path, DUPLICATE_QUERY, f"src_id {names.text(ids.keys[at])} appears again in this file", int(ids.lines[at]))
        if released.dataset != MULTI8 and len(ids.keys) > 1:  # BI-139 lists queries by src_id as numbers; MULTI-8 in one seeded order
            if (ids.keys < 0).any():  # an id that is not a plain number: by length, then text
                order = [(len(text), text) for text in map(names.text, ids.keys.tolist())]
                falls = [at for at in range(1, len(order)) if order[at] < order[at - 1]]
            else:
                falls = (np.flatnonzero(ids.keys[1:] < ids.keys[:-1]) + 1).tolist()
            if falls:
                at = falls[0]
                record.strict(self.path, QUERY_ORDER, f"src_id {names.text(ids.keys[at])} after {names.text(ids.keys[at - 1])}: queries not by src_id ascending", int(ids.lines[at]))
        queries = len(ids.keys)
        self.outcome.counts[self.path] = queries
        self.outcome.queries += queries
        if not queries:
            record.warn(self.path, EMPTY_FILE, "holds no queries (the release has such files, docs/formats.md 1.7)")
        if released.dataset != FULL:
            limit = task.train_size if released.split == "train" else task.eval_size
            if queries > limit:
                record.fail(self.path, SPLIT_SIZE, f"{queries:,} queries, more than the {released.split} size {limit:,}")
        if self.absent:
            docs_path = f"DOCS/{released.tgt}.tsv.gz"
            record.strict(
                self.path, MISSING_DOC,
                f"{self.absent:,} of {self.judged:,} judged doc ids are not in {docs_path}, e.g. {examples(map(names.text, self.missing))}", self.first_absent,
            )


def check_results(record: Recorder, released: ReleasedFile, number: int, query: QueryRecord, documents: int | None, build: bool) -> None:
    """Labels, order, duplicates and the candidate count of one query, each broken rule worded."""
    path, results = released.path, query.tgt_results
    labels = [label for _, label in results]
    doc_ids = [doc_id for doc_id, _ in results]
    where = f"query {query.src_id}"
    lowest = 1 if released.dataset == FULL else 0
    if labels and (min(labels) < lowest or max(labels) > 6):
        bad = sorted({label for label in labels if not lowest <= label <= 6})
        record.fail(path, LABEL_RANGE, f"{where}: labels {bad} outside {lowest}..6", number)
    if len(set(doc_ids)) != len(doc_ids):
        counted: dict[str, int] = {}
        for doc_id in doc_ids:
            counted[doc_id] = counted.get(doc_id, 0) + 1
        record.fail(path, DUPLICATE_RESULT, f"{where}: doc ids judged twice: {examples(d for d, c in counted.items() if c > 1)}", number)
    if labels != sorted(labels, reverse=True):
        position = next(i for i in range(1, len(labels)) if labels[i] > labels[i - 1])
        record.fail(path, LABEL_ORDER, f"{where}: tgt_results not by label descending at position {position}", number)
    elif build:
        keys = [(-label, len(doc_id), doc_id) for doc_id, label in results]
        if keys != sorted(keys):
            record.fail(path, ID_ORDER, f"{where}: equal labels not in doc id order", number)
    if labels.count(6) > 1:
        record.fail(path, LABEL_6, f"{where}: {labels.count(6)} documents with label 6 (only the query's own article)", number)
    if not any(label >= 1 for label in labels):
        record.fail(path, NO_RELEVANT, f"{where}: no document with label >= 1 (docs/method.md section 6)", number)
    if released.dataset != FULL:
        expected = BASE_CANDIDATES if documents is None else min(BASE_CANDIDATES, documents)
        if len(results) != expected:
            known = (
                f"DOCS/{released.tgt}.tsv.gz has {documents:,} documents" if documents is not None
                else f"DOCS/{released.tgt}.tsv.gz is absent, so a language of under {BASE_CANDIDATES} documents cannot be ruled in"
            )
            record.fail(path, CANDIDATES, f"{where}: {len(results)} candidates, expected {expected} ({known})", number)


def check_direction(task: DirectionTask) -> DirectionOutcome:
    """Every query file of X -> Y: its own rules, then base against full and the splits' overlap within the direction."""
    outcome = DirectionOutcome(Recorder(task.build))
    docs = DocSet(_load_keys(task.keys_path)) if task.keys_path else None
    files = {(item.dataset, item.split): item for item in task.files}
    for split in SPLITS:
        base, full, multi8 = (files.get((dataset, split)) for dataset in (BASE, FULL, MULTI8))
        base_file = None
        if base is not None:
            base_file = _QueryFile(task, base, outcome, docs, keep_all=full is not None)
            outcome.files.append(base_file.read())
        if full is not None:
            want = base_file.pairs.key_set() if base_file is not None else None
            full_file = _QueryFile(task, full, outcome, docs, want=want)
            outcome.files.append(full_file.read())
            if base_file is not None:
                _base_against_full(outcome, base, full, base_file.pairs, full_file.pairs)
        if multi8 is not None:
            outcome.files.append(_QueryFile(task, multi8, outcome, docs).read())
    _overlap_within(outcome, task)
    return outcome


def _chosen(pairs: _Pairs, last: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each query's record, its last (``last``: base's, as the rule's dict keeps the last) or its first, in file order.

    Returns (keys, lines, pair offsets, doc, label, record ordinals) of those records.
    """
    record, doc, label, keys, lines = pairs.arrays()
    order = np.arange(len(keys))[::-1] if last else np.arange(len(keys))
    _, first = np.unique(keys[order], return_index=True)
    chosen = np.sort(order[first])
    starts = np.searchsorted(record, np.arange(len(keys) + 1))
    lengths, positions = _ranges(starts, chosen)
    return keys[chosen], lines[chosen], np.r_[0, np.cumsum(lengths)], doc[positions], label[positions], chosen


@numba.njit(cache=True)
def _labelled_table(docs, labels, lo, hi, table, stamp, mask):
    """A record's {doc: label} of labels >= 1 (the last label of a doc judged twice) in a stamp table; returns its size and the least label."""
    size = 0
    least = 1 << 30
    for i in range(lo, hi):
        if labels[i] < 1:
            continue
        slot = np.int64((np.uint64(docs[i]) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
        while table[slot, 0] == stamp and table[slot, 1] != docs[i]:
            slot = (slot + 1) & mask
        if table[slot, 0] != stamp:
            size += 1
        table[slot, 0], table[slot, 1], table[slot, 2] = stamp, docs[i], labels[i]
    for slot in range(table.shape[0]):
        if table[slot, 0] == stamp and table[slot, 2] < least:
            least = table[slot, 2]
    return size, least


@numba.njit(cache=True)
def _lookup(table, doc, stamp, mask):
    slot = np.int64((np.uint64(doc) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
    while table[slot, 0] == stamp:
        if table[slot, 1] == doc:
            return table[slot, 2]
        slot = (slot + 1) & mask
    return -1


@numba.njit(cache=True)
def _wrong_queries(base_offsets, base_docs, base_labels, full_offsets, full_docs, full_labels, base_of, candidates):
    """Per full record: whether base's record of the same query breaks "base = full's labelled documents (the best ``candidates``) + filler"."""
    wrong = np.zeros(full_offsets.shape[0] - 1, np.bool_)
    longest = 1
    for j in range(full_offsets.shape[0] - 1):
        longest = max(longest, full_offsets[j + 1] - full_offsets[j])
    for i in range(base_offsets.shape[0] - 1):
        longest = max(longest, base_offsets[i + 1] - base_offsets[i])
    size = 1
    while size < 2 * longest + 2:
        size *= 2
    ours = np.full((size, 3), -1, np.int64)
    theirs = np.full((size, 3), -1, np.int64)
    mask = size - 1
    for j in range(full_offsets.shape[0] - 1):
        i = base_of[j]
        our_count, our_least = _labelled_table(base_docs, base_labels, base_offsets[i], base_offsets[i + 1], ours, j, mask)
        their_count, _ = _labelled_table(full_docs, full_labels, full_offsets[j], full_offsets[j + 1], theirs, j, mask)
        for slot in range(size):
            if ours[slot, 0] == j and _lookup(theirs, ours[slot, 1], j, mask) != ours[slot, 2]:
                wrong[j] = True  # a document of base labelled otherwise (or not at all) in full
        left_out, left_most = 0, -1
        for slot in range(size):
            if theirs[slot, 0] == j and _lookup(ours, theirs[slot, 1], j, mask) < 0:
                left_out += 1
                left_most = max(left_most, theirs[slot, 2])
        if left_out and (their_count <= candidates or our_count != candidates or left_most > our_least):
            wrong[j] = True
    return wrong


def _base_against_full(outcome: DirectionOutcome, base: ReleasedFile, full: ReleasedFile, base_pairs: _Pairs, full_pairs: _Pairs) -> None:
    """Base = full's labelled documents (the 100 best when there are more) + label-0 filler.

    Compared query by query in compiled code; a query found wrong is compared again as
    dicts, the way the rule is worded, for its finding.
    """
    base_keys, _, base_offsets, base_docs, base_labels, _ = _chosen(base_pairs, last=True)
    full_keys, full_lines, full_offsets, full_docs, full_labels, _ = _chosen(full_pairs, last=False)
    by_key = np.argsort(base_keys)
    base_of = by_key[np.searchsorted(base_keys, full_keys, sorter=by_key)] if len(full_keys) else np.empty(0, np.int64)
    wrong = _wrong_queries(base_offsets, base_docs, base_labels, full_offsets, full_docs, full_labels, base_of, BASE_CANDIDATES)
    if wrong.any():
        _word_base_against_full(outcome, base, full, base_pairs, full_pairs, set(full_keys[wrong].tolist()), dict(zip(full_keys.tolist(), full_lines.tolist())))
    not_in_full = np.setdiff1d(base_keys, full_keys)
    if len(not_in_full):
        outcome.recorder.fail(
            base.path, BASE_FULL,
            f"{len(not_in_full):,} queries are not in {full.path} (base is drawn from full), e.g. {examples(map(outcome.names.text, not_in_full.tolist()))}",
        )


def _word_base_against_full(outcome: DirectionOutcome, base: ReleasedFile, full: ReleasedFile, base_pairs: _Pairs, full_pairs: _Pairs, wrong: set[int], full_lines: dict[int, int]) -> None:
    """The findings of the queries found wrong, in full's order, each compared as the dicts of its two records."""
    record, names = outcome.recorder, outcome.names

    def dicts(pairs: _Pairs, last: bool) -> dict[int, dict[int, int]]:
        pair_record, doc, label, keys, _ = pairs.arrays()
        found: dict[int, dict[int, int]] = {}
        for r in (range(len(keys) - 1, -1, -1) if last else range(len(keys))):
            key = int(keys[r])
            if key in wrong and key not in found:
                at = pair_record == r
                found[key] = {d: grade for d, grade in zip(doc[at].tolist(), label[at].tolist()) if grade >= 1}
        return found

    ours_of, theirs_of = dicts(base_pairs, last=True), dicts(full_pairs, last=False)
    for key in sorted(wrong, key=full_lines.__getitem__):
        ours, theirs = ours_of[key], theirs_of[key]
        where = f"query {names.text(key)} (line {full_lines[key]} of {full.path})"
        differ = [doc for doc, label in ours.items() if theirs.get(doc) != label]
        if differ:
            doc = differ[0]
            record.fail(base.path, BASE_FULL, f"{where}: doc {names.text(doc)} has label {ours[doc]} in base but {theirs.get(doc, 'none')} in full")
            continue
        left_out = [label for doc, label in theirs.items() if doc not in ours]
        if len(theirs) <= BASE_CANDIDATES and left_out:
            record.fail(base.path, BASE_FULL, f"{where}: {len(left_out)} labelled documents of full are missing from base")
        elif left_out and (len(ours) != BASE_CANDIDATES or max(left_out) > min(ours.values())):
            record.fail(base.path, BASE_FULL, f"{where}: base does not keep the {BASE_CANDIDATES} best-labelled of full's {len(theirs)}")


def _overlap_within(outcome: DirectionOutcome, task: DirectionTask) -> None:
    """One direction's splits are disjoint, whatever the collection."""
    paths = {(item.dataset, item.split): item.path for item in task.files}
    overlapping = []
    for dataset in (BASE, FULL, MULTI8):
        keys, masks = masks_of([ids for ids in outcome.files if ids.dataset == dataset])
        clashing = np.flatnonzero(masks & (masks - 1))
        overlapping.append(keys[clashing])
        for mask in sorted(set(masks[clashing].tolist())):
            ids = keys[clashing][masks[clashing] == mask]
            named = [paths[(dataset, split)] for split in splits_of(mask)]
            outcome.recorder.fail(named[-1], SPLIT_OVERLAP, f"{len(ids):,} queries also in {', '.join(named[:-1])}, e.g. {examples(map(outcome.names.text, ids.tolist()))}")
    outcome.overlapping = np.unique(np.concatenate(overlapping))


def masks_of(files: list[FileIds]) -> tuple[np.ndarray, np.ndarray]:
    """(distinct query keys, the splits each is in as bits) over some query files."""
    if not files:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    keys = np.concatenate([ids.keys for ids in files])
    bits = np.concatenate([np.full(len(ids.keys), SPLIT_BIT[ids.split], np.int64) for ids in files])
    order = np.argsort(keys, kind="stable")
    keys, bits = keys[order], bits[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
    return keys[starts], np.bitwise_or.reduceat(bits, starts) if len(keys) else np.empty(0, np.int64)


def warm() -> None:
    """Load every compiled kernel (from numba's cache) in this process, so that workers forked from it need not."""
    text = np.frombuffer(b'{"src_id": "1", "src_query": "q", "tgt_results": [["2", 6]]}\n', dtype=np.uint8)
    ids = np.zeros(2, np.int64)
    scan_queries(text, HEAD, MIDDLE, RESULTS, True, 0, -1, True, ids.copy(), np.zeros(2, np.int8), ids.copy(), np.zeros(3, np.int64), ids.copy(), ids.copy(),
                 np.full((512, 2), -1, np.int64), np.zeros((2, 2), np.int64))
    scan_docs(np.frombuffer(b"1\tx\n", dtype=np.uint8), SPACES, ids.copy(), np.zeros(2, np.int8), ids.copy())
    DocSet(np.array([1, 2], np.int64)).contains(ids)
    offsets = np.array([0, 1], np.int64)
    _wrong_queries(offsets, ids[:1], ids[:1] + 1, offsets, ids[:1], ids[:1] + 1, np.zeros(1, np.int64), BASE_CANDIDATES)
