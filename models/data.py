"""Raw training text read straight from a CLIRMatrix build or download (docs/models.md sections 0-5).

Everything here yields strings and ids; tokenization is ``collate``'s job and nothing
imports torch. The released files are gzip streams (English DOCS is ~2 GB), so random
access comes from an on-disk SQLite index built once per file by streaming it:

    >>> docs = DocStore("out/", "de")                 # builds ~/.cache/clirmatrix/train/DOCS/de.tsv.gz.{key}.sqlite once
    >>> docs["12"]                                     # 'Alan Smithee steht als ...'
    >>> queries = QueryStore("out/", "multi8", "en", "de", "train")
    >>> queries[0]                                     # QueryRecord(src_id='12', src_query=..., tgt_results=(('7', 6), ...))
    >>> pairs = mine_parallel_pairs("out/", [("en", "de")], kind="title")
    >>> write_parallel_tsv("out/parallel/en-de.tsv", pairs)

**[ours]** The index of ``{root}/{release path}`` lives at
``{cache_dir}/{release path}.{key}.sqlite``, ``key`` a digest of the source file's content
(``content_key``), so training never writes under the data folder, two copies of a file
share one index, and a changed file gets a new one. ``cache_dir`` is ``train
--cache-dir``, else ``$CLIRMATRIX_TRAIN_CACHE``, else ``{user cache}/train``
(``$CLIRMATRIX_CACHE/train`` or ``~/.cache/clirmatrix/train``). A file's digest is computed once (a streamed
SHA-256) and remembered under ``{cache_dir}/.digests`` with the size, mtime and inode it
was computed for. Building writes a
unique temporary file that ``os.replace`` puts in place, under an advisory lock, so
several torchrun ranks can open the same store at once: one builds, the others wait and
then read. Readers open the file read-only, once per process (forked DataLoader workers
reopen it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import permutations
from pathlib import Path
from typing import NamedTuple

from isal import igzip

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.fingerprint import fingerprint
from clirmatrix.pipeline.io.localio import atomic_path, atomic_write, hexdigest_of, user_cache_dir
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.method.truncate import SENTENCE_SPLIT
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import QueryRecord, iter_lines, iter_queries, parse_query
from clirmatrix.pipeline.tools.loader import QuerySplit, documents

try:  # POSIX; elsewhere concurrent builders each build and the last os.replace wins
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

log = logging.getLogger(__name__)

_BATCH = 10_000  # rows per executemany while building an index
_IN_CHUNK = 500  # ids per ``IN (...)`` lookup, under SQLite's historical limit of 999 variables


class ParallelPair(NamedTuple):
    """Two texts about one Wikidata item: its titles, or the first sentences of its articles."""

    lang_a: str
    lang_b: str
    text_a: str
    text_b: str


# --------------------------------------------------------------------------------------
# On-disk indexes


class _SqliteIndex:
    """A SQLite file derived from released file(s), rebuilt when any source changes.

    Subclasses give ``_SCHEMA`` (the CREATE statements), ``_INSERT`` and ``_rows()``; the
    base keeps the fingerprint (the content keys of the sources) in a ``meta`` table.
    """

    _TABLE: str = ""
    _SCHEMA: str = ""
    _INSERT: str = ""

    def __init__(self, sources: Sequence[Path], cache_dir: str | os.PathLike | None, name: str) -> None:
        """``name``: the index's path below the cache folder, before its key (the release path of its source)."""
        self.sources = list(sources)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.key = content_key(self.sources, self.cache_dir)
        self.index_path = self.cache_dir / f"{name}.{self.key}.sqlite"
        self.built = False  # whether this object (re)built the index
        self._connection: sqlite3.Connection | None = None
        self._pid = -1
        self._ensure_fresh()
        self.count = int(self._meta("count"))

    # Freshness and building

    def _fingerprint(self) -> str:
        return self.key

    def _stored_fingerprint(self) -> str | None:
        if not self.index_path.is_file():
            return None
        try:
            with contextlib.closing(self._open_readonly()) as connection:
                row = connection.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        except sqlite3.DatabaseError:  # a damaged or foreign file: rebuild it
            return None
        return row[0] if row else None

    def _ensure_fresh(self) -> None:
        wanted = self._fingerprint()
        if self._stored_fingerprint() == wanted:
            return
        try:
            self.index_path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_path.touch()
        except PermissionError as error:
            raise PermissionError(
                f"cannot write the index of {self.sources[0]} under {self.index_path.parent} ({error.strerror}); give a writable cache folder (train --cache-dir)"
            ) from error
        with self._build_lock():
            if self._stored_fingerprint() == self._fingerprint():  # another process built it meanwhile
                return
            self._build(self._fingerprint())
            self.built = True

    @property
    def _lock_path(self) -> Path:
        return self.index_path.with_name(f".{self.index_path.name}.lock")

    @contextlib.contextmanager
    def _build_lock(self) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover
            yield
            return
        with open(self._lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _build(self, fingerprint: str) -> None:
        log.info("indexing %s into %s", ", ".join(map(str, self.sources)), self.index_path)
        with atomic_path(self.index_path) as temporary:
            connection = sqlite3.connect(temporary)
            try:
                # The file is private until os.replace, so no journal and no fsync per commit.
                connection.execute("PRAGMA journal_mode = OFF")
                connection.execute("PRAGMA synchronous = OFF")
                connection.execute("PRAGMA cache_size = -65536")  # 64 MiB of page cache while inserting
                connection.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);" + self._SCHEMA)
                batch: list[tuple] = []
                for row in self._rows():
                    batch.append(row)
                    if len(batch) >= _BATCH:
                        connection.executemany(self._INSERT, batch)
                        batch.clear()
                connection.executemany(self._INSERT, batch)
                count = connection.execute(f"SELECT COUNT(*) FROM {self._TABLE}").fetchone()[0]
                connection.executemany("INSERT INTO meta VALUES (?, ?)", [("fingerprint", fingerprint), ("count", str(count))])
                connection.commit()
            finally:
                connection.close()

    def _rows(self) -> Iterator[tuple]:
        raise NotImplementedError

    # Reading

    def _open_readonly(self) -> sqlite3.Connection:
        # immutable=1: the file is never changed in place (a rebuild replaces it), so SQLite
        # needs no locks and a read-only folder works.
        return sqlite3.connect(f"{self.index_path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None or self._pid != os.getpid():  # a forked worker gets its own handle
            self._connection = self._open_readonly()
            self._pid = os.getpid()
        return self._connection

    def _meta(self, key: str) -> str:
        return self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]

    def close(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            self._connection.close()
        self._connection = None

    def __getstate__(self) -> dict:  # picklable for spawned DataLoader workers: reopen there
        state = self.__dict__.copy()
        state["_connection"], state["_pid"] = None, -1
        return state

    def __len__(self) -> int:
        return self.count


def default_cache_dir() -> Path:
    """Where training's indexes go unless ``--cache-dir`` says otherwise: ``$CLIRMATRIX_TRAIN_CACHE``, else the user's cache folder's ``train/``."""
    return Path(os.environ.get("CLIRMATRIX_TRAIN_CACHE") or user_cache_dir() / "train")


def content_key(sources: Sequence[Path], cache_dir: Path) -> str:
    """A short key of the sources' contents, in order: what an index of them is named by."""
    return fingerprint([_content_digest(source, cache_dir) for source in sources])[:16]


def _content_digest(source: Path, cache_dir: Path) -> str:
    """SHA-256 of a file's bytes, remembered for its size, mtime and inode (a rewritten file is hashed again)."""
    stat = source.stat()
    stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    path = str(source.resolve())
    memo = cache_dir / ".digests" / f"{fingerprint(path)}.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        known = json.loads(memo.read_text())
        if known["stamp"] == stamp:
            return known["sha256"]
    with open(source, "rb") as handle:
        digest = hexdigest_of(handle, "sha256")
    with contextlib.suppress(OSError):  # a read-only cache folder still works: the digest is recomputed next time
        memo.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(memo) as out:
            out.write(json.dumps({"path": path, "stamp": stamp, "sha256": digest}).encode())
    return digest


class DocStore(_SqliteIndex):
    """Random access to the texts of ``DOCS/{lang}.tsv.gz`` (``DOCS-FULL`` when ``full``).

    A doc id that appears twice keeps its first text (``clirmatrix validate`` reports the
    duplicate). A missing DOCS file raises ``FileNotFoundError`` with the download command.
    """

    _TABLE = "docs"
    # A rowid table: texts of ~1 kB are too large for a WITHOUT ROWID b-tree (SQLite's rule of thumb).
    _SCHEMA = "CREATE TABLE docs (doc_id TEXT PRIMARY KEY, text TEXT NOT NULL);"
    _INSERT = "INSERT OR IGNORE INTO docs VALUES (?, ?)"

    def __init__(self, root: str | os.PathLike, lang: str, full: bool = False, cache_dir: str | os.PathLike | None = None) -> None:
        self.root, self.lang, self.full = Path(root), lang, full
        relative = layout.docs_file("docs-full" if full else "docs", lang)
        self.path = self.root / relative
        documents(self.root, lang, full)  # raises FileNotFoundError with the download hint
        super().__init__([self.path], cache_dir, relative)

    def _rows(self) -> Iterator[tuple[str, str]]:
        return documents(self.root, self.lang, self.full)

    def __getitem__(self, doc_id: str) -> str:
        text = self.get(doc_id)
        if text is None:
            raise KeyError(f"doc id {doc_id!r} is not in {self.path}")
        return text

    def __contains__(self, doc_id: object) -> bool:
        return self._db.execute("SELECT 1 FROM docs WHERE doc_id = ?", (doc_id,)).fetchone() is not None

    def get(self, doc_id: str, default: str | None = None) -> str | None:
        """The text of ``doc_id``, or ``default`` when DOCS lacks it (docs/formats.md 1.7: qrels ids can be missing)."""
        row = self._db.execute("SELECT text FROM docs WHERE doc_id = ?", (doc_id,)).fetchone()
        return default if row is None else row[0]

    def get_many(self, ids: Sequence[str]) -> list[str]:
        """The texts of ``ids`` in their order; ``KeyError`` naming the first id that is missing."""
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _IN_CHUNK):
            chunk = unique[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(self._db.execute(f"SELECT doc_id, text FROM docs WHERE doc_id IN ({marks})", chunk))
        for doc_id in ids:
            if doc_id not in found:
                raise KeyError(f"doc id {doc_id!r} is not in {self.path}")
        return [found[doc_id] for doc_id in ids]


class QueryStore(_SqliteIndex):
    """Random access, by position, to the queries of one direction and split.

    The index keeps each line as released; ``store[i]`` parses it with the same reader
    as ``loader`` (``jsonl.parse_query``), so ids stay strings.
    """

    _TABLE = "queries"
    _SCHEMA = "CREATE TABLE queries (position INTEGER PRIMARY KEY, line BLOB NOT NULL);"
    _INSERT = "INSERT INTO queries VALUES (?, ?)"

    def __init__(self, root: str | os.PathLike, dataset: str, src: str, tgt: str, split: str, cache_dir: str | os.PathLike | None = None) -> None:
        self.root, self.dataset, self.src, self.tgt, self.split = Path(root), dataset, src, tgt, split
        self.path = QuerySplit(root, dataset, src, tgt, split).path  # raises FileNotFoundError with the download hint
        super().__init__([self.path], cache_dir, layout.query_file(dataset, src, tgt, split))

    def _rows(self) -> Iterator[tuple[int, bytes]]:
        name = os.fspath(self.path)
        for position, (number, line) in enumerate(iter_lines(name)):
            parse_query(line, name, number)  # a bad line fails the build, naming file and line
            yield position, line

    def _record(self, line: bytes) -> QueryRecord:
        record = parse_query(line, os.fspath(self.path))
        return QueryRecord(record.src_id, record.src_query, tuple(record.tgt_results))

    def __getitem__(self, index: int) -> QueryRecord:
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(f"query {index} out of range: {self.path} has {self.count}")
        (line,) = self._db.execute("SELECT line FROM queries WHERE position = ?", (index,)).fetchone()
        return self._record(line)

    def __iter__(self) -> Iterator[QueryRecord]:
        for (line,) in self._db.execute("SELECT line FROM queries ORDER BY position"):
            yield self._record(line)


class _TitleIndex(_SqliteIndex):
    """``src_id -> src_query`` of every query of ``lang`` in a query set: the titles of its pages."""

    _TABLE = "titles"
    _SCHEMA = "CREATE TABLE titles (src_id TEXT PRIMARY KEY, title TEXT NOT NULL) WITHOUT ROWID;"
    _INSERT = "INSERT OR IGNORE INTO titles VALUES (?, ?)"

    def __init__(self, root: Path, dataset: str, lang: str, cache_dir: str | os.PathLike | None) -> None:
        sources = _query_files_from(root, dataset, lang)
        super().__init__(sources, cache_dir, f"{_query_folder(dataset, lang)}/titles")

    def _rows(self) -> Iterator[tuple[str, str]]:
        for source in self.sources:
            for record in iter_queries(source):
                yield record.src_id, record.src_query

    def get(self, page_id: str) -> str | None:
        row = self._db.execute("SELECT title FROM titles WHERE src_id = ?", (page_id,)).fetchone()
        return None if row is None else row[0]


def _query_folder(dataset: str, lang: str) -> str:
    """The release folder of ``lang``'s query files in ``dataset``, e.g. ``BI-139/base/en``."""
    return layout.query_file(dataset, lang, "_", "train").rsplit("/", 1)[0]


def _query_files_from(root: Path, dataset: str, lang: str) -> list[Path]:
    """Every query file of ``dataset`` whose queries are in ``lang`` (any target, any split), sorted."""
    folder = _query_folder(dataset, lang)
    directory = root / folder
    if not directory.is_dir():
        return []
    found = []
    for entry in sorted(directory.iterdir()):
        released = layout.parse_path(f"{folder}/{entry.name}")
        if released is not None and released.dataset == dataset and released.src == lang and entry.is_file():
            found.append(entry)
    return found


# --------------------------------------------------------------------------------------
# Directions and parallel pairs


def multi8_directions() -> list[tuple[str, str]]:
    """The 56 ordered (src, tgt) pairs of MULTI-8, src-major in the languages' order (docs/models.md section 1)."""
    return list(permutations(MULTI8_LANGUAGES, 2))


PAIR_KINDS = ("title", "lead")


def mine_parallel_pairs(
    root: str | os.PathLike,
    pairs: Sequence[tuple[str, str]],
    kind: str = "title",
    dataset: str = "bi139-base",
    splits: Sequence[str] = ("train",),
    *,
    cache_dir: str | os.PathLike | None = None,
    skipped: Counter | None = None,
) -> Iterator[ParallelPair]:
    """Parallel pairs of Wikidata-linked articles, taken from the build itself (docs/models.md section 0, 3).

    In the query file X->Y of each split, the candidate labelled 6 is the article about the
    query's own Wikidata item in Y; the query's ``src_query`` is its X title.

    - ``kind="title"``: (X title, Y title). The Y title is the ``src_query`` of that doc id
      where it is a query in some Y->* file of ``dataset`` (any split). A pair whose Y title
      is unknown (no Y->* file, or the page is no query there) is skipped.
    - ``kind="lead"``: the first sentence (``split_sentences``) of each article's DOCS text:
      ``src_id`` in ``DOCS/X`` and the label-6 doc in ``DOCS/Y``. Pages missing from DOCS,
      or with empty text, are skipped.

    Order: ``pairs`` in order, then ``splits``, then file order. Queries without a label-6
    candidate give nothing. Skips are counted by reason into ``skipped`` when given
    (``no_link``, ``title_unknown``, ``doc_missing``, ``empty_text``) and logged at the end.
    Missing query files raise ``FileNotFoundError``; an unknown ``kind`` raises ``ValueError``.
    """
    if kind not in PAIR_KINDS:
        raise ValueError(f"unknown parallel pair kind {kind!r}; expected one of {', '.join(PAIR_KINDS)}")
    base = Path(root)
    # Check every input up front, so a typo fails before any work.
    paths = [(src, tgt, QuerySplit(base, dataset, src, tgt, split).path) for src, tgt in pairs for split in splits]
    return _mine(base, dataset, kind, paths, cache_dir, skipped if skipped is not None else Counter())


def _mine(
    base: Path, dataset: str, kind: str, paths: list[tuple[str, str, Path]], cache_dir: str | os.PathLike | None, counts: Counter
) -> Iterator[ParallelPair]:
    before = sum(counts.values())
    titles: dict[str, _TitleIndex | None] = {}
    stores: dict[str, DocStore] = {}

    def title_index(lang: str) -> _TitleIndex | None:
        if lang not in titles:
            titles[lang] = _TitleIndex(base, dataset, lang, cache_dir) if _query_files_from(base, dataset, lang) else None
        return titles[lang]

    def lead(lang: str, page_id: str) -> str | None:
        if lang not in stores:
            stores[lang] = DocStore(base, lang, cache_dir=cache_dir)
        text = stores[lang].get(page_id)
        if text is None:
            counts["doc_missing"] += 1
            return None
        sentences = split_sentences(text)
        if not sentences:
            counts["empty_text"] += 1
            return None
        return sentences[0]

    for src, tgt, path in paths:
        for record in iter_queries(path):
            linked = next((doc_id for doc_id, label in record.tgt_results if label == 6), None)
            if linked is None:
                counts["no_link"] += 1
                continue
            if kind == "title":
                index = title_index(tgt)
                text_b = index.get(linked) if index is not None else None
                if text_b is None:
                    counts["title_unknown"] += 1
                    continue
                yield ParallelPair(src, tgt, record.src_query, text_b)
            else:
                text_a = lead(src, record.src_id)
                text_b = lead(tgt, linked) if text_a is not None else None
                if text_a is not None and text_b is not None:
                    yield ParallelPair(src, tgt, text_a, text_b)
    if sum(counts.values()) > before:
        log.info("parallel pairs (%s) skipped: %s", kind, dict(counts))


_TSV_UNSAFE = re.compile(r"[\t\r\n]")


def write_parallel_tsv(path: str | os.PathLike, pairs: Iterable[ParallelPair]) -> int:
    """Write ``lang_a\\tlang_b\\ttext_a\\ttext_b`` lines atomically (gzip when ``path`` ends in .gz); returns how many.

    Tabs and line breaks inside a text become spaces, so each pair stays one line.
    """
    count = 0
    with atomic_write(path) as raw:
        stream = igzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if os.fspath(path).endswith(".gz") else contextlib.nullcontext(raw)
        with stream as out:
            for pair in pairs:
                out.write(("\t".join(_TSV_UNSAFE.sub(" ", field) for field in pair) + "\n").encode("utf-8"))
                count += 1
    return count


def read_parallel_tsv(path: str | os.PathLike) -> Iterator[ParallelPair]:
    """The pairs of a file ``write_parallel_tsv`` wrote, lazily; a line without 4 fields raises ``ValueError``."""
    name = os.fspath(path)
    for number, line in iter_lines(name):
        fields = line.decode("utf-8").split("\t")
        if len(fields) != 4:
            raise InvalidInputError(f"{name}:{number}: expected 4 tab-separated fields (lang_a, lang_b, text_a, text_b), found {len(fields)}")
        yield ParallelPair(*fields)


# --------------------------------------------------------------------------------------
# Sentences (CCP, docs/models.md section 5)

# [ours] A sentence ends where truncation sees one (``truncate.SENTENCE_SPLIT``): a run of
# stops, plus any closing quotes or brackets; Latin-like stops only before whitespace or the
# end ("3.14" stays whole), CJK ones anywhere (CJK puts no space between sentences).
# Abbreviations ("Dr. Who") do split: the splitter is deliberately simple.
_SENTENCE_END = SENTENCE_SPLIT


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` by the rule above, stripped; empty pieces are dropped."""
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [sentence for sentence in sentences if sentence]


def sentence_windows(texts: Iterable[str], window: int = 5) -> Iterator[list[str]]:
    """Consecutive, non-overlapping windows of ``window`` sentences of each text, streamed.

    A text of ``n`` sentences gives ``n // window`` windows (the remainder is dropped), so
    texts with fewer than ``window`` sentences give none. **[ours]** non-overlapping, so two
    windows of one batch never share a sentence (a shared one would be a false negative).
    """
    for text in texts:
        yield from windows_of(split_sentences(text), window)


def windows_of(sentences: Sequence[str], window: int) -> list[list[str]]:
    """The consecutive, non-overlapping windows of ``window`` sentences in ``sentences`` (the remainder dropped)."""
    if window < 2:
        raise ValueError(f"a window needs at least 2 sentences (a centre and its context), got {window}")
    return [list(sentences[start : start + window]) for start in range(0, len(sentences) - window + 1, window)]
