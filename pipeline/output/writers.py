"""Released files: gzip JSON Lines of queries and gzip TSV of documents (docs/method.md section 9).

Files are written under a temporary name and renamed when complete, and gzip
carries no timestamp or file name, so the same data gives the same bytes. The
md5 and size are computed while writing, for ``downloads.json.gz``.

Query lines travel as ``Lines``: one buffer of text and the end of each line, never a
Python object a line; ``SortedLines`` orders a file's lines by src_id across blocks,
in memory up to ``SORT_MEMORY`` and through local disk past it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.output.gzip_encoder import GzipEncoder


@dataclass
class WrittenFile:
    """What ``downloads.json.gz`` needs to know of a file, plus how many lines it holds."""

    path: str
    md5: str = ""
    size: int = 0
    lines: int = 0
    docs_ge4: int = 0  # for query files: judged documents with label >= 4 and >= 1 (docs/method.md section 10)
    docs_ge1: int = 0
    pairs: int = 0  # for query files: [doc_id, label] pairs, the qrels a loader counts


class _Digest:
    """A write-only stream that hashes and counts the bytes on their way to ``target``."""

    def __init__(self, target) -> None:
        self.target = target
        self.md5 = hashlib.md5()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.md5.update(data)
        self.size += len(data)
        return self.target.write(data)

    def flush(self) -> None:
        pass


@numba.njit(cache=True)
def _gather(text, ends, order, out, out_ends):
    at = np.uint64(0)  # unsigned offsets: numba checks signed ones for wrapping around
    for i in range(order.shape[0]):
        line = order[i]
        start = np.uint64(ends[line - 1]) if line else np.uint64(0)
        stop = np.uint64(ends[line])
        while start < stop:
            out[at] = text[start]
            at += np.uint64(1)
            start += np.uint64(1)
        out_ends[i] = at


@dataclass(frozen=True)
class Lines:
    """Lines in one buffer, the way the writers pass them: no Python object a line.

    ``text`` (uint8) holds every line with its newline, line ``i`` ending at ``ends[i]``
    (the first starting at 0).
    """

    text: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.ends)

    def view(self) -> memoryview:
        """The text of every line, newlines included."""
        return memoryview(self.text[: int(self.ends[-1]) if len(self.ends) else 0])

    def slice(self, start: int, stop: int) -> Lines:
        """Lines ``[start, stop)``, sharing this buffer."""
        first = int(self.ends[start - 1]) if start else 0
        last = int(self.ends[stop - 1]) if stop > start else first
        return Lines(self.text[first:last], self.ends[start:stop] - first)

    def take(self, order: np.ndarray, out: np.ndarray | None = None) -> Lines:
        """The lines at ``order``, in that order, in a new buffer (or in ``out``, when it is large enough)."""
        order = np.ascontiguousarray(order, dtype=np.int64)
        size = int(np.diff(self.ends, prepend=0)[order].sum())
        if out is None or len(out) < size:
            out = np.empty(size, dtype=np.uint8)
        out_ends = np.empty(len(order), dtype=np.int64)
        _gather(self.text, np.ascontiguousarray(self.ends, dtype=np.int64), order, out, out_ends)
        return Lines(out, out_ends)

    def to_list(self) -> list[bytes]:
        """Each line as bytes, without its newline (for tests and small tools)."""
        data = self.view().tobytes()
        return [data[start : end - 1] for start, end in zip([0, *self.ends[:-1].tolist()], self.ends.tolist())]


class GzipLines:
    """Append lines (bytes without the newline) to a gzip file; see :func:`gzip_lines`."""

    def __init__(self, encoder: GzipEncoder, record: WrittenFile) -> None:
        self._encoder = encoder
        self.record = record

    def write(self, line: bytes) -> None:
        """Append a line."""
        self.write_text(line + b"\n", 1)

    def write_many(self, lines: Sequence[bytes]) -> None:
        """Append several lines at once (the same file as writing them one by one)."""
        if lines:
            self.write_text(b"\n".join(lines) + b"\n", len(lines))

    def write_lines(self, lines: Lines) -> None:
        """Append a buffer of lines (the same file as writing them one by one)."""
        self.write_text(lines.view(), len(lines))

    def write_text(self, text: bytes | memoryview, lines: int) -> None:
        """Append ready text holding ``lines`` whole lines, each ending in a newline."""
        self.record.lines += lines
        self._encoder.write(text)

    def count(self, ge1: int, ge4: int, pairs: int) -> None:
        """Add judged documents with label >= 1 and >= 4 (docs/method.md section 10), and result pairs, to the file's counts."""
        self.record.docs_ge1 += ge1
        self.record.docs_ge4 += ge4
        self.record.pairs += pairs



@contextlib.contextmanager
def gzip_lines(path: str) -> Iterator[GzipLines]:
    """Write a gzip text file atomically; ``.record`` holds its md5 and size once the block ends."""
    record = WrittenFile(path)
    if "://" in path:  # an object store, through Beam's FileSystems; local files need no Beam (the trainer's toys)
        from clirmatrix.pipeline.io.fileio import atomic_create as create
    else:
        create = atomic_write
    with create(path) as handle:
        digest = _Digest(handle)
        encoder = GzipEncoder(digest)
        yield GzipLines(encoder, record)
        encoder.close()
    record.md5, record.size = digest.md5.hexdigest(), digest.size


SORT_MEMORY = 256 << 20  # bytes of text a SortedLines holds before it spills its runs to local disk
SPILL_READ = 8 << 20  # bytes of a spilled run read back at a time when it needs no merge


class _Run:
    """One block's sorted lines: in memory (``lines``), or spilled to ``path`` (text; keys and line ends as ``.npy``)."""

    def __init__(self, keys: np.ndarray, lines: Lines) -> None:
        self.keys, self.ends, self.lines = keys, lines.ends, lines
        self.path: Path | None = None
        self._handle = None

    @property
    def size(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def spill(self, folder: Path, name: str) -> None:
        self.path = folder / name
        np.save(self.path.with_suffix(".keys.npy"), self.keys)
        np.save(self.path.with_suffix(".ends.npy"), self.ends)
        with open(self.path, "wb") as handle:
            handle.write(self.lines.view())
        self.lines = None
        self.keys = np.load(self.path.with_suffix(".keys.npy"), mmap_mode="r")
        self.ends = np.load(self.path.with_suffix(".ends.npy"), mmap_mode="r")

    def read(self, start: int, length: int, into: memoryview) -> None:
        """Bytes ``[start, start + length)`` of the text into ``into``, read in order from a spilled run."""
        if self.lines is not None:
            into[:length] = self.lines.view()[start : start + length]
            return
        if self._handle is None:
            self._handle = open(self.path, "rb", buffering=0)
        if self._handle.readinto(into[:length]) != length:
            raise OSError(f"{self.path}: a run of sorted lines ends early")

    def write_to(self, out: GzipLines) -> None:
        """Every line of the run, in its order, to ``out`` (a spilled run read back ``SPILL_READ`` bytes at a time)."""
        if self.lines is not None:
            out.write_lines(self.lines)
            return
        buffer = memoryview(np.empty(min(SPILL_READ, max(self.size, 1)), np.uint8))
        for start in range(0, self.size, len(buffer)):
            length = min(len(buffer), self.size - start)
            self.read(start, length, buffer)
            out.write_text(buffer[:length], len(self.ends) if start + length == self.size else 0)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


class SortedLines:
    """Lines that must reach a file in the order of an integer key, arriving one block at a time.

    Each block's lines are sorted in memory into a run. Runs stay in memory up to
    ``memory`` bytes of text (``SORT_MEMORY``); past that, the oldest are spilled to a
    local temporary folder (text, and keys and line ends as ``.npy``, read back
    memory-mapped). ``drain`` writes runs that follow each other in key order as they
    are (a lone run; or the blocks of a dump in page id order, as MediaWiki's are), else
    merges them a batch of about ``batch`` lines at a time: the bounded-memory way to
    order a whole large language. Equal keys keep the order of their blocks, then of
    their lines in a block.
    """

    def __init__(self, batch: int = 8192, memory: int | None = None) -> None:
        self._runs: list[_Run] = []
        self._folder: tempfile.TemporaryDirectory | None = None
        self.batch = batch
        self.memory = SORT_MEMORY if memory is None else memory

    def add(self, keys: np.ndarray, lines: Lines) -> None:
        """One block's lines and their keys (any order)."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(keys):
            return
        if (np.diff(keys) < 0).any():
            order = np.argsort(keys, kind="stable")
            keys, lines = keys[order], lines.take(order)
        self._runs.append(_Run(keys, lines))
        held = [run for run in self._runs if run.path is None]
        total = sum(run.size for run in held)
        for run in held:  # oldest first
            if total <= self.memory:
                break
            if self._folder is None:
                self._folder = tempfile.TemporaryDirectory(prefix="clirmatrix-runs-")
            run.spill(Path(self._folder.name), f"{self._runs.index(run):05d}")
            total -= run.size

    def drain(self, out: GzipLines) -> None:
        """Write every line, in key order, to ``out``; the temporary runs are removed."""
        runs, self._runs = self._runs, []
        try:
            if all(int(run.keys[-1]) <= int(after.keys[0]) for run, after in zip(runs, runs[1:])):
                for run in runs:  # already in order (blocks of a dump in page id order): no merge
                    run.write_to(out)
            else:
                self._merge(runs, out)
        finally:
            for run in runs:
                run.close()
            if self._folder is not None:
                self._folder.cleanup()
                self._folder = None

    def _merge(self, runs: list[_Run], out: GzipLines) -> None:
        at = [0] * len(runs)
        read, merged = np.empty(0, np.uint8), np.empty(0, np.uint8)  # reused from batch to batch
        while True:
            live = [r for r in range(len(runs)) if at[r] < len(runs[r].keys)]
            if not live:
                return
            # Every line up to the smallest of the live runs' keys a share of the batch ahead:
            # at most ``batch`` lines, and at least that share of one run.
            share = max(1, self.batch // len(live))
            bound = min(int(runs[r].keys[min(at[r] + share, len(runs[r].keys)) - 1]) for r in live)
            spans = []
            for r in live:
                keys, ends = runs[r].keys, runs[r].ends
                stop = at[r] + int(np.searchsorted(keys[at[r] :], bound, side="right"))
                if stop > at[r]:
                    first = int(ends[at[r] - 1]) if at[r] else 0
                    spans.append((r, at[r], stop, first, int(ends[stop - 1]) - first))
                    at[r] = stop
            size = sum(span[-1] for span in spans)
            if len(read) < size:
                read, merged = np.empty(size, np.uint8), np.empty(size, np.uint8)
            line_ends, batch_keys, base = [], [], 0
            for r, start, stop, first, length in spans:
                runs[r].read(first, length, memoryview(read)[base:])
                line_ends.append(np.asarray(runs[r].ends[start:stop], dtype=np.int64) - first + base)
                batch_keys.append(runs[r].keys[start:stop])
                base += length
            order = np.argsort(np.concatenate(batch_keys), kind="stable")
            out.write_lines(Lines(read, np.concatenate(line_ends)).take(order, merged))


def result_order(doc_id: str, label: int) -> tuple[int, int, str]:
    """Sort key of ``tgt_results``: label descending, then page id ascending as a number.

    **[ours]** comparing (length, string) orders decimal page ids numerically and
    any other id deterministically.
    """
    return (-label, len(doc_id), doc_id)


def query_line(src_id: str, src_query: str, results: Sequence[tuple[str, int]]) -> bytes:
    """One line of a query file: ``{"src_id": ..., "src_query": ..., "tgt_results": [[doc_id, label], ...]}``.

    The bytes of Python's ``json.dumps`` with default settings, as the release's lines:
    ``", "`` and ``": "`` separators, non-ASCII as ``\\uXXXX``. Escaping keeps U+2028,
    U+2029 and U+0085 out of the line, which ir_datasets' reader would split on.
    """
    ordered = sorted(results, key=lambda pair: result_order(pair[0], pair[1]))
    return json.dumps({"src_id": src_id, "src_query": src_query, "tgt_results": [[doc, int(label)] for doc, label in ordered]}).encode()


def filler(labelled: np.ndarray, n_docs: int, need: int, rng: np.random.Generator) -> np.ndarray:
    """``need`` random positions of ``range(n_docs)`` not in ``labelled`` (all of them when fewer exist)."""
    need = min(need, n_docs - len(labelled))
    if need <= 0:
        return np.zeros(0, dtype=np.int64)
    taken = set(labelled.tolist())
    chosen: list[int] = []
    for position in rng.choice(n_docs, size=min(n_docs, need + len(taken)), replace=False).tolist():
        if position not in taken:
            chosen.append(position)
            if len(chosen) == need:
                break
    return np.array(chosen, dtype=np.int64)


_CONTROL = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


def docs_line(doc_id: str, text: str) -> bytes:
    """``doc_id<TAB>text`` with tabs and line breaks in the text turned into spaces."""
    return f"{doc_id}\t{text.translate(_CONTROL)}".encode()


def docs_text(doc_ids: pa.Array, texts: pa.Array) -> memoryview:
    """The lines ``docs_line`` gives for a whole batch, each ending in a newline, built in Arrow at once."""
    cleaned = pc.replace_substring_regex(texts, "[\t\n\r]", " ")
    lines = pc.binary_join_element_wise(doc_ids, cleaned, "\t")
    # "line" + "\n" + "": every line with its newline, so the value buffer is the text itself.
    with_newline = pc.binary_join_element_wise(lines, pa.scalar("", lines.type), "\n")
    width = 8 if pa.types.is_large_string(with_newline.type) else 4
    offsets = np.frombuffer(with_newline.buffers()[1], dtype=np.int64 if width == 8 else np.int32, count=len(with_newline) + 1, offset=with_newline.offset * width)
    return memoryview(with_newline.buffers()[2])[int(offsets[0]) : int(offsets[-1])]
