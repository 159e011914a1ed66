"""Released files: gzip JSON Lines of queries and gzip TSV of documents (docs/method.md section 9).

Files are written under a temporary name and renamed when complete, and gzip
carries no timestamp or file name, so the same data gives the same bytes. The
md5 and size are computed while writing, for ``downloads.json.gz``.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import isal.igzip
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.localio import atomic_write

GZIP_LEVEL = 2  # isal's default: ~10x the speed of zlib level 6 at about the same size for this data


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


# The compressor is fed the text in slices of exactly this many bytes. isal's output depends on
# how its input is cut into calls, so the cut must depend on the text alone (not on lines, blocks
# or workers) for the same text to give the same bytes; and a call per line cost ~10 us.
COMPRESS_CHUNK = 1 << 20


class GzipLines:
    """Append lines (bytes without the newline) to a gzip file; see :func:`gzip_lines`."""

    def __init__(self, stream: isal.igzip.GzipFile, record: WrittenFile) -> None:
        self._stream = stream
        self._pending = bytearray()
        self.record = record

    def write(self, line: bytes) -> None:
        """Append a line."""
        self.write_text(line + b"\n", 1)

    def write_many(self, lines: Sequence[bytes]) -> None:
        """Append several lines at once (the same file as writing them one by one)."""
        if lines:
            self.write_text(b"\n".join(lines) + b"\n", len(lines))

    def write_text(self, text: bytes | memoryview, lines: int) -> None:
        """Append ready text holding ``lines`` whole lines, each ending in a newline."""
        self._pending += text
        self.record.lines += lines
        if len(self._pending) >= COMPRESS_CHUNK:
            self._compress(final=False)

    def count(self, ge1: int, ge4: int, pairs: int) -> None:
        """Add judged documents with label >= 1 and >= 4 (docs/method.md section 10), and result pairs, to the file's counts."""
        self.record.docs_ge1 += ge1
        self.record.docs_ge4 += ge4
        self.record.pairs += pairs

    def _compress(self, final: bool) -> None:
        whole = len(self._pending) if final else len(self._pending) - len(self._pending) % COMPRESS_CHUNK
        for start in range(0, whole, COMPRESS_CHUNK):
            self._stream.write(bytes(self._pending[start : min(whole, start + COMPRESS_CHUNK)]))
        del self._pending[:whole]


@contextlib.contextmanager
def gzip_lines(path: str) -> Iterator[GzipLines]:
    """Write a gzip text file atomically; ``.record`` holds its md5 and size once the block ends."""
    record = WrittenFile(path)
    if "://" in path:  # an object store, through Beam's FileSystems; local files need no Beam (the trainer's toys)
        from clirmatrix.pipeline.fileio import atomic_create as create
    else:
        create = atomic_write
    with create(path) as handle:
        digest = _Digest(handle)
        with isal.igzip.GzipFile(filename="", mode="wb", fileobj=digest, mtime=0, compresslevel=GZIP_LEVEL) as stream:
            lines = GzipLines(stream, record)
            yield lines
            lines._compress(final=True)
    record.md5, record.size = digest.md5.hexdigest(), digest.size


class SortedLines:
    """Lines that must reach a file in the order of an integer key, arriving one block at a time.

    A block's lines are sorted in memory. When every block has come, a file of one
    block is written straight away; with several, each block became a run in a local
    temporary folder (lines, and their keys as ``.npy``), and ``drain`` merges the runs,
    holding one line per run: the bounded-memory way to order a whole large language.
    """

    def __init__(self) -> None:
        self._pending: tuple[np.ndarray, list[bytes]] | None = None
        self._runs: list[Path] = []
        self._folder: tempfile.TemporaryDirectory | None = None

    def add(self, keys: np.ndarray, lines: list[bytes]) -> None:
        """One block's lines and their keys (any order)."""
        order = np.argsort(keys, kind="stable")
        block = (np.asarray(keys)[order], [lines[i] for i in order.tolist()])
        if self._pending is None and not self._runs:  # the first block waits: it may be the only one
            self._pending = block
            return
        if self._pending is not None:
            self._spill(*self._pending)
            self._pending = None
        self._spill(*block)

    def _spill(self, keys: np.ndarray, lines: list[bytes]) -> None:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="clirmatrix-runs-")
        run = Path(self._folder.name) / f"{len(self._runs):05d}"
        np.save(run.with_suffix(".npy"), keys)
        run.write_bytes(b"".join(line + b"\n" for line in lines))
        self._runs.append(run)

    def drain(self, out: GzipLines, batch: int = 10_000) -> None:
        """Write every line, in key order, to ``out``; the temporary runs are removed."""
        if not self._runs:
            if self._pending is not None:
                out.write_many(self._pending[1])
            return
        with contextlib.ExitStack() as files:
            streams = [zip(np.load(run.with_suffix(".npy")).tolist(), files.enter_context(open(run, "rb"))) for run in self._runs]
            chunk: list[bytes] = []
            for _, line in heapq.merge(*streams, key=lambda pair: pair[0]):
                chunk.append(line[:-1])
                if len(chunk) == batch:
                    out.write_many(chunk)
                    chunk = []
            out.write_many(chunk)
        self._folder.cleanup()
        self._runs, self._folder = [], None


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
