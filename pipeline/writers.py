"""Released files: gzip JSON Lines of queries and gzip TSV of documents (PIPELINE.md section 9).

Files are written under a temporary name and renamed when complete, and gzip
carries no timestamp or file name, so the same data gives the same bytes. The
md5 and size are computed while writing, for ``downloads.json.gz``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import isal.igzip
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.fileio import atomic_create

GZIP_LEVEL = 2  # isal's default: ~10x the speed of zlib level 6 at about the same size for this data


@dataclass
class WrittenFile:
    """What ``downloads.json.gz`` needs to know of a file, plus how many lines it holds."""

    path: str
    md5: str = ""
    size: int = 0
    lines: int = 0
    docs_ge4: int = 0  # for query files: judged documents with label >= 4 and >= 1 (PIPELINE.md section 10)
    docs_ge1: int = 0


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

    def count(self, ge1: int, ge4: int) -> None:
        """Add judged documents with label >= 1 and >= 4 to the statistics (PIPELINE.md section 10)."""
        self.record.docs_ge1 += ge1
        self.record.docs_ge4 += ge4

    def _compress(self, final: bool) -> None:
        whole = len(self._pending) if final else len(self._pending) - len(self._pending) % COMPRESS_CHUNK
        for start in range(0, whole, COMPRESS_CHUNK):
            self._stream.write(bytes(self._pending[start : min(whole, start + COMPRESS_CHUNK)]))
        del self._pending[:whole]


@contextlib.contextmanager
def gzip_lines(path: str) -> Iterator[GzipLines]:
    """Write a gzip text file atomically; ``.record`` holds its md5 and size once the block ends."""
    record = WrittenFile(path)
    with atomic_create(path) as handle:
        digest = _Digest(handle)
        with isal.igzip.GzipFile(filename="", mode="wb", fileobj=digest, mtime=0, compresslevel=GZIP_LEVEL) as stream:
            lines = GzipLines(stream, record)
            yield lines
            lines._compress(final=True)
    record.md5, record.size = digest.md5.hexdigest(), digest.size


def result_order(doc_id: str, label: int) -> tuple[int, int, str]:
    """Sort key of ``tgt_results``: label descending, then page id ascending as a number.

    **[ours]** comparing (length, string) orders decimal page ids numerically and
    any other id deterministically.
    """
    return (-label, len(doc_id), doc_id)


def query_line(src_id: str, src_query: str, results: Sequence[tuple[str, int]]) -> bytes:
    """One line of a query file: ``{"src_id": ..., "src_query": ..., "tgt_results": [[doc_id, label], ...]}``."""
    ordered = sorted(results, key=lambda pair: result_order(pair[0], pair[1]))
    return orjson.dumps({"src_id": src_id, "src_query": src_query, "tgt_results": [[doc, int(label)] for doc, label in ordered]})


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


class TargetDocs:
    """A document language's page ids, pre-quoted for JSON, and each one's rank in release order.

    Writing millions of result pairs is the hot loop of the write stage: sorting
    by rank in numpy and joining pre-quoted ids avoids a Python sort key and a
    JSON encode per pair (``query_line`` is the plain reference).
    """

    def __init__(self, doc_ids: Sequence[str]) -> None:
        self.doc_ids = list(doc_ids)
        order = sorted(range(len(self.doc_ids)), key=lambda p: (len(self.doc_ids[p]), self.doc_ids[p]))
        self.rank = np.empty(len(self.doc_ids), dtype=np.int64)
        self.rank[order] = np.arange(len(self.doc_ids))
        self._opened = [b"[" + orjson.dumps(doc_id) + b"," for doc_id in self.doc_ids]

    def __len__(self) -> int:
        return len(self.doc_ids)

    def release_order(self, query: np.ndarray, doc: np.ndarray, label: np.ndarray) -> np.ndarray:
        """Row order that groups by query and sorts each query's results as released."""
        return np.lexsort((self.rank[doc], -label.astype(np.int16), query))

    def by_rank(self, positions: np.ndarray) -> np.ndarray:
        return positions[np.argsort(self.rank[positions], kind="stable")]

    def results_json(self, positions: Sequence[int], labels: Sequence[int]) -> bytes:
        """``[["id",label],...]`` for results already in release order."""
        opened = self._opened
        return b"[" + b",".join([opened[p] + _CLOSE_LABEL[label] for p, label in zip(positions, labels)]) + b"]"


_CLOSE_LABEL = [f"{label}]".encode() for label in range(7)]


def query_line_json(src_id: str, src_query: str, results_json: bytes) -> bytes:
    """The same bytes as :func:`query_line`, from pre-rendered ``tgt_results``."""
    return orjson.dumps({"src_id": src_id, "src_query": src_query})[:-1] + b',"tgt_results":' + results_json + b"}"


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
