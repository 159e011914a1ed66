"""Load a clirmatrix build (or download) with ir_datasets, under names of its own.

ir_datasets' ``clirmatrix`` namespace fetches the official release and its metadata over
the network. ``register`` points ir_datasets at a local OUT folder instead, with the same
id scheme under a prefix, so anything that takes an ir_datasets id (ir_measures,
PyTerrier, ...) reads this build:

    import ir_datasets
    from clirmatrix import irds
    irds.register("out/")                 # -> ["clirmatrix-local/de", "clirmatrix-local/de/bi139-base/en/dev", ...]
    ir_datasets.load("clirmatrix-local/de/bi139-base/en/test1")

Ids: ``{prefix}/{doc_lang}`` (the ``DOCS`` corpus of a language) and
``{prefix}/{doc_lang}/{bi139-base|bi139-full|multi8}/{query_lang}/{split}`` (that corpus,
plus the queries and qrels of ``{query_lang}.{doc_lang}.{split}``). ir_datasets' own
parsers read the files where they are. Counts come from ``manifest.json``'s ``"files"``
when it lists the file, else from one pass over the file on the first call. A
``docs_store()`` is built under ir_datasets' home (``IR_DATASETS_HOME``), never in OUT,
and keyed by the file's size and time, so a rebuilt file gets a new one.

ir_datasets is optional: ``pip install 'clirmatrix[irds]'``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from clirmatrix.pipeline.errors import InputError, InvalidInputError, MissingInputError
from clirmatrix.pipeline.io.localio import STREAM_ERRORS
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, iter_lines, iter_queries, walk_release
from clirmatrix.pipeline.output.layout import MANIFEST, QUERY_SETS, ReleasedFile, docs_file, refuse_incomplete

try:
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.datasets.clirmatrix import QRELS_DEFS
    from ir_datasets.formats import CLIRMatrixQrels, CLIRMatrixQueries, TsvDocs
    from ir_datasets.indices import DEFAULT_DOCSTORE_OPTIONS, PickleLz4FullStore
    from ir_datasets.util import GzipExtract, LocalDownload
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(f"clirmatrix.irds needs ir_datasets ({error}): pip install 'clirmatrix[irds]'") from error

DEFAULT_PREFIX = "clirmatrix-local"
OFFICIAL_NAMESPACE = "clirmatrix"  # ir_datasets' own ids for the official release

_owners: dict[str, Path] = {}  # id -> the root this module registered it for (ir_datasets cannot unregister)


def registered_ids(root: str | os.PathLike, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The ids ``register(root, prefix)`` registers, sorted, without registering anything.

    ir_datasets' registry lives inside one Python process, so ``clirmatrix irds OUT``
    cannot register for the user: it prints these ids, which their own ``register``
    call then makes loadable.
    """
    refuse_incomplete(root)
    _check_prefix(prefix)
    doc_langs, query_files = _released(Path(root))
    return sorted([f"{prefix}/{lang}" for lang in doc_langs] + [_query_id(prefix, item) for item in query_files])


def without_docs(ids: list[str], prefix: str = DEFAULT_PREFIX) -> dict[str, str]:
    """Of ``registered_ids``, the query ids whose document language has no corpus id (no ``DOCS`` file): id -> the missing file.

    They are registered with queries and qrels only (``has_docs()`` is False), as a
    download of query files without their documents has them. Read from the ids, so the
    folder is walked once.
    """
    corpora = {name for name in ids if name.count("/") == prefix.count("/") + 1}
    lacking = {}
    for name in ids:
        corpus = name.rsplit("/", 3)[0]  # {prefix}/{doc_lang}/{set}/{query_lang}/{split} -> {prefix}/{doc_lang}
        if name not in corpora and corpus not in corpora:
            lacking[name] = docs_file("docs", corpus.rsplit("/", 1)[1])
    return lacking


def register(root: str | os.PathLike, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Register every set under ``root`` with ir_datasets; returns the ids, sorted.

    Calling it again for the same root and prefix registers only what is new there (files
    downloaded since); a prefix already used for another root is refused, because
    ir_datasets cannot replace a registered id.
    """
    refuse_incomplete(root)
    _check_prefix(prefix)
    folder = Path(root).resolve()
    doc_langs, query_files = _released(folder)
    counts = _Counts(folder)
    corpora = {lang: _Docs(folder, lang, prefix, counts) for lang in doc_langs}
    datasets = {f"{prefix}/{lang}": Dataset(docs) for lang, docs in corpora.items()}
    for item in query_files:
        source = GzipExtract(LocalDownload(folder / item.path, mkdir=False))
        queries = _Queries(source, item.src, prefix, partial(counts, item.path, "records"), folder / item.path)
        qrels = _Qrels(source, QRELS_DEFS, partial(counts, item.path, "qrels"), folder / item.path)
        if item.tgt in corpora:
            datasets[_query_id(prefix, item)] = Dataset(corpora[item.tgt], queries, qrels)
        else:
            datasets[_query_id(prefix, item)] = Dataset(_MissingDocs(folder / docs_file("docs", item.tgt), item.tgt), queries, qrels)

    known = set(ir_datasets.registry)
    taken = [name for name in datasets if _owners.get(name) != folder and name in known]
    if taken:
        owner = _owners.get(taken[0])
        by = f"for {owner}" if owner else "by someone else"
        raise InvalidInputError(f"ir_datasets id {taken[0]} is already registered {by}; choose another prefix than {prefix!r}")
    for name, dataset in datasets.items():
        if name not in _owners:
            ir_datasets.registry.register(name, dataset)
            _owners[name] = folder
    return sorted(datasets)


def _check_prefix(prefix: str) -> None:
    if not prefix or prefix.startswith("/") or prefix.endswith("/") or prefix.split("/")[0] == OFFICIAL_NAMESPACE:
        raise InvalidInputError(
            f"prefix {prefix!r}: expected a name such as {DEFAULT_PREFIX!r}, not {OFFICIAL_NAMESPACE!r} (ir_datasets' official ids)"
        )


def _query_id(prefix: str, item: ReleasedFile) -> str:
    """Query files are named ``{query_lang}.{doc_lang}``; ids put the doc language first, as ir_datasets does."""
    return f"{prefix}/{item.tgt}/{item.dataset}/{item.src}/{item.split}"


def _released(root: Path) -> tuple[list[str], list[ReleasedFile]]:
    """(languages with a DOCS file, query files) under root."""
    items = [item for _, item in walk_release(root) if item is not None]
    query_files = [item for item in items if item.dataset in QUERY_SETS]
    doc_langs = {item.src for item in items if item.dataset == "docs"}
    if not doc_langs and not query_files:
        raise MissingInputError(f"{root}: no CLIRMatrix files there (expected a clirmatrix build or download folder)")
    return sorted(doc_langs), query_files


class DocsNotDownloadedError(InputError, AttributeError):
    """A query id's documents asked for when its ``DOCS`` file is not there."""


class _MissingDocs:
    """Stands in for the corpus of a query id whose ``DOCS`` file is missing.

    It has no ``docs_handler``, so ir_datasets' ``has_docs()`` says False; any
    ``docs_*`` call raises an error naming the file and how to fetch it.
    """

    def __init__(self, missing: Path, lang: str) -> None:
        self._message = f"{missing} is not there, so this id has queries and qrels only; fetch it with: clirmatrix download docs --tgt {lang}"

    def _refuse(self, *args, **kwargs):
        raise DocsNotDownloadedError(self._message)

    docs_iter = docs_count = docs_store = docs_cls = docs_namespace = docs_lang = _refuse


class _Counts:
    """``records`` (lines) and ``qrels`` (judged pairs) of the released files of one root.

    Builds list them in ``manifest.json`` under ``"files"``; other files (downloads) are
    read once, on the first call, and remembered by size and time so a rewrite is recounted.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._manifest: tuple[tuple[int, int], dict] | None = None  # (stamp, "files" object)
        self._counted: dict[tuple[str, tuple[int, int]], dict[str, int]] = {}

    def __call__(self, relative: str, key: str) -> int:
        listed = self._listed(relative).get(key)
        if isinstance(listed, int) and not isinstance(listed, bool):
            return listed
        stamp = _stamp(self.root / relative)
        if (relative, stamp) not in self._counted:
            self._counted[(relative, stamp)] = self._count(relative)
        return self._counted[(relative, stamp)][key]

    def _listed(self, relative: str) -> dict:
        path = self.root / MANIFEST
        if not path.is_file():
            return {}
        stamp = _stamp(path)
        if self._manifest is None or self._manifest[0] != stamp:
            manifest = json.loads(path.read_bytes())
            files = manifest.get("files") if isinstance(manifest, dict) else None
            self._manifest = (stamp, files if isinstance(files, dict) else {})
        entry = self._manifest[1].get(relative)
        return entry if isinstance(entry, dict) else {}

    def _count(self, relative: str) -> dict[str, int]:
        path = self.root / relative
        if relative.endswith(".tsv.gz"):
            return {"records": sum(1 for _ in iter_lines(path))}
        records = qrels = 0
        for record in iter_queries(path):
            records += 1
            qrels += len(record.tgt_results)
        return {"records": records, "qrels": qrels}


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


# What ir_datasets' own parsers raise on a damaged file: a cut or garbled gzip stream,
# a line that is not JSON or not UTF-8, a record without its keys or with a bad pair.
_PARSER_ERRORS = (*STREAM_ERRORS, ValueError, UnicodeDecodeError, KeyError, TypeError, IndexError)


class _Guarded:
    """An ir_datasets iterator whose parser errors become one ``MalformedRecordError`` naming the file and record.

    ir_datasets' readers raise whatever their parser met (``EOFError``, ``JSONDecodeError``,
    ``KeyError``); a user should read which file is damaged and what to run, not a
    traceback. Slicing (``docs_iter()[10:20]``) is kept.
    """

    def __init__(self, inner, path: Path, start: int = 0) -> None:
        self._inner = inner
        self._path = path
        self._records = start

    def __iter__(self) -> _Guarded:
        return self

    def __next__(self):
        try:
            item = next(self._inner)
        except InputError:  # ours already names the file
            raise
        except _PARSER_ERRORS as error:
            raise MalformedRecordError(
                str(self._path), 0, f"record {self._records + 1}: {type(error).__name__}: {error} (damaged? clirmatrix validate checks every file)"
            ) from error
        self._records += 1
        return item

    def __getitem__(self, key):
        part = self._inner[key]
        return _Guarded(part, self._path) if hasattr(part, "__next__") else part


class _Docs(TsvDocs):
    """ir_datasets' TSV corpus over ``DOCS/{lang}.tsv.gz``, with this build's count and its docstore outside OUT."""

    def __init__(self, root: Path, lang: str, prefix: str, counts: _Counts) -> None:
        self._relative = docs_file("docs", lang)
        self._counts = counts
        self._store_name = f"{prefix}/{lang}"
        path = root / self._relative
        super().__init__(GzipExtract(LocalDownload(path, mkdir=False)), namespace=f"{prefix}/{lang}", lang=lang)

    def docs_count(self) -> int:
        return self._counts(self._relative, "records")

    def docs_iter(self) -> _Guarded:
        return _Guarded(super().docs_iter(), self._counts.root / self._relative)

    def docs_store(self, field: str = "doc_id", options=DEFAULT_DOCSTORE_OPTIONS) -> PickleLz4FullStore:
        # TsvDocs puts the store next to the file, i.e. inside the release folder.
        path = self._counts.root / self._relative
        key = hashlib.sha1(f"{path}\0{_stamp(path)}".encode()).hexdigest()[:16]
        return PickleLz4FullStore(
            path=str(ir_datasets.util.home_path() / self._store_name / f"docs.{key}.pklz4"),
            init_iter_fn=self.docs_iter,
            data_cls=self.docs_cls(),
            lookup_field=field,
            index_fields=["doc_id"],
            count_hint=self.docs_count,
            options=options,
        )


class _Queries(CLIRMatrixQueries):
    """ir_datasets' reader of a ``.jl.gz`` query file, with its count and a namespace."""

    def __init__(self, source: GzipExtract, lang: str, namespace: str, count: Callable[[], int], path: Path) -> None:
        super().__init__(source, lang)
        self._namespace = namespace
        self._count = count
        self._path = path

    def queries_iter(self) -> _Guarded:
        return _Guarded(iter(super().queries_iter()), self._path)

    def queries_namespace(self) -> str:
        return self._namespace  # ir_datasets' own names an undefined NAME (NameError)

    def queries_count(self) -> int:
        return self._count()


class _Qrels(CLIRMatrixQrels):
    """ir_datasets' reader of the judgements in a ``.jl.gz`` query file, with their count."""

    def __init__(self, source: GzipExtract, defs: dict[int, str], count: Callable[[], int], path: Path) -> None:
        super().__init__(source, defs)
        self._count = count
        self._path = path

    def qrels_iter(self) -> _Guarded:
        return _Guarded(iter(super().qrels_iter()), self._path)

    def qrels_count(self) -> int:
        return self._count()
