"""``clirmatrix validate OUT``: check a build or a download against the released format.

Every rule of docs/method.md sections 7-9 that the files themselves can show is checked.
A tree with ``manifest.json`` is one of our builds and is held to all our rules; without
it the tree is (part of) the official release, whose known anomalies (docs/formats.md
1.7: qrels ids missing from DOCS, files left out of a partial download) are warnings.
Only failures make a report not ``ok``.

The work, in units spread over ``workers`` processes (``validate_units``): each
language's DOCS files; then each direction X -> Y's query files (records, split sizes,
ids missing from DOCS/Y, base against full, overlapping splits), each file read once
with its md5 taken on the way. Then, here, from the units' ids: leakage between splits
across directions and MULTI-8's alignment, per query language; the index against the
md5s read; the manifest. A unit holds one file's query ids and one DOCS file's doc ids
at most, never a file's pairs.

A tree on an object store (``s3://``, ``gs://``) is read the same way through Beam's
FileSystems (``validate_remote``: one listing of the prefix, then each file streamed).
Its units run on Beam's runners when a ``Spread`` is given (``beam_jobs/validate.py``,
what ``clirmatrix validate URL`` uses): DOCS keys and the units' outcomes then go through
a scratch every worker reaches, and only the rules across units run here, as for a folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO, Protocol, TypeVar

import numpy as np
import orjson
from isal import igzip

from clirmatrix.pipeline.errors import MissingInputError
from clirmatrix.pipeline.io.localio import STREAM_ERRORS, md5_of
from clirmatrix.pipeline.output.gzip_encoder import ENCODER
from clirmatrix.pipeline.output.jsonl import walk_release
from clirmatrix.pipeline.output.layout import CARD, CONTEXTS, INDEX, MANIFEST, RELEASE_FOLDERS, REPORT, SPLITS, STATS_DIR, ReleasedFile, index_key, path_in_url, refuse_incomplete
from clirmatrix.pipeline.settings import DEFAULT_EVAL_SIZE, DEFAULT_TRAIN_SIZE
from clirmatrix.pipeline.tools.validate_report import (  # the rules' names, the report and its printing are validate's own: imported from here
    ALIGNMENT,
    BASE_FULL,
    CANDIDATES,
    CHECKSUM,
    DOC_TEXT,
    DOCS_FULL,
    DUPLICATE_DOC,
    DUPLICATE_QUERY,
    DUPLICATE_RESULT,
    EMPTY_FILE,
    ENCODER_RULE,
    ID_ORDER,
    INDEX_RULE,
    LABEL_6,
    LABEL_ORDER,
    LABEL_RANGE,
    LAYOUT,
    LEAKAGE,
    LINE_BYTES,
    MALFORMED,
    MANIFEST_RULE,
    MAX_EXAMPLES,
    MISSING_DOC,
    MISSING_FILE,
    NO_RELEVANT,
    NOT_INDEXED,
    QUERY_ORDER,
    SAME_LANGUAGE,
    SIZE,
    SPLIT_OVERLAP,
    SPLIT_SIZE,
    URL,
    Finding,
    Recorder,
    ValidationReport,
    examples,
    print_report,
)
from clirmatrix.pipeline.tools.validate_units import (
    BASE,
    FULL,
    MULTI8,
    SPLIT_BIT,
    DirectionOutcome,
    DirectionTask,
    DocsTask,
    FileIds,
    Names,
    check_direction,
    check_docs,
    masks_of,
    several,
    splits_of,
    warm,
)

__all__ = [
    "ALIGNMENT", "BASE_FULL", "CANDIDATES", "CHECKSUM", "DOCS_FULL", "DOC_TEXT", "DUPLICATE_DOC", "DUPLICATE_QUERY", "DUPLICATE_RESULT",
    "EMPTY_FILE", "ENCODER_RULE", "ID_ORDER", "INDEX_RULE", "LABEL_6", "LABEL_ORDER", "LABEL_RANGE", "LAYOUT", "LEAKAGE", "LINE_BYTES",
    "MALFORMED", "MANIFEST_RULE", "MAX_EXAMPLES", "MISSING_DOC", "MISSING_FILE", "NOT_INDEXED", "NO_RELEVANT", "QUERY_ORDER",
    "SAME_LANGUAGE", "SIZE", "SPLIT_OVERLAP", "SPLIT_SIZE", "URL", "Finding", "NotAReleaseError", "ValidationReport", "built_sizes",
    "Spread", "print_report", "refuse_unreleased", "release_sizes", "validate",
]

_TEST_BITS = SPLIT_BIT["test1"] | SPLIT_BIT["test2"]
POOL_BYTES = 64 << 20  # compressed bytes a unit stage must read before worker processes pay for starting (~1 s each)

Task = TypeVar("Task")
Outcome = TypeVar("Outcome")


class NotAReleaseError(MissingInputError):
    """A folder that holds nothing of a build or a download."""


class Spread(Protocol):
    """Runs ``validate``'s units elsewhere than in local processes (``beam_jobs.validate``: on Beam's runners)."""

    scratch: str  # a folder or URL every unit reaches: each DOCS unit saves its doc keys there for the directions' units

    def run(self, check: Callable[[Task], Outcome], tasks: list[Task], on_file: Callable[[str], None], paths: Callable[[Task], list[str]]) -> list[Outcome]:
        """Each task's outcome (``check(task)``), in the tasks' order; ``on_file`` with each of a unit's ``paths`` once it has finished."""
        ...


class _Folder:
    """A local tree, as the driver reads it (``validate_remote.Prefix`` is a tree on an object store's)."""

    remote = False

    def __init__(self, root: str) -> None:
        self.root = root

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def is_tree(self) -> bool:
        return os.path.isdir(self.root)

    def has(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def is_file(self, name: str) -> bool:
        return os.path.isfile(self.path(name))

    def open(self, name: str) -> BinaryIO:
        return open(self.path(name), "rb")

    def size(self, name: str) -> int:
        return os.path.getsize(self.path(name))

    def walk(self) -> Iterator[tuple[str, ReleasedFile | None]]:
        return walk_release(self.root)

    def refuse_incomplete(self) -> None:
        refuse_incomplete(self.root)


def _tree(root: str) -> _Folder:
    """How the driver reads ``root``: a local folder, or a prefix on an object store (a URL: ``validate_remote.Prefix``,
    which answers the same calls; Beam is imported only then)."""
    if "://" in root:
        from clirmatrix.pipeline.tools.validate_remote import Prefix

        return Prefix(root)
    return _Folder(root)


def default_workers() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def validate(
    root: str,
    *,
    train_size: int | None = None,
    eval_size: int | None = None,
    on_file: Callable[[str], None] | None = None,
    workers: int | None = None,
    spread: Spread | None = None,
) -> ValidationReport:
    """Check a build (``manifest.json`` present) or a downloaded (partial) release under ``root``.

    Args:
        root: the folder holding ``BI-139/``, ``MULTI-8/``, ``DOCS/``, ``downloads.json.gz``, ...,
            or a URL of one on an object store (``s3://bucket/out``; Beam's FileSystems set up
            for it, ``beam_jobs.common.use_filesystem_options``).
        train_size: the most queries a base or MULTI-8 train file may hold [default: the
            build's own ``--train-size`` from its ``manifest.json``, else the release's].
        eval_size: the most queries a base or MULTI-8 dev/test1/test2 file may hold [default:
            likewise ``--eval-size``].
        on_file: called with each relative path once it has been read (for a progress display).
        workers: processes to read in [default: the cores, or this process alone for a
            tree of under ``POOL_BYTES`` compressed bytes]; 1 reads in this process. A URL's
            units run in this process unless ``spread``.
        spread: where the units run instead (``beam_jobs.validate.run_validate``: Beam's
            runners), with their scratch; the rules across units still run here.

    Returns:
        The report; ``report.ok`` is False when any rule failed.
    """
    tree = _tree(root)
    if not tree.is_tree():
        raise MissingInputError(f"{root} is not a folder")
    tree.refuse_incomplete()
    _refuse_unreleased(tree)
    built = _built_sizes(tree)
    report = ValidationReport(root=root, build=tree.is_file(MANIFEST))
    record = Recorder(report.build)
    released = _layout(tree, record)
    report.files = len(released)
    on_file = on_file or (lambda path: None)
    if tree.remote and spread is None:
        workers = 1  # forked workers would share this process's object-store clients
    scratch_folder = tempfile.TemporaryDirectory(prefix="clirmatrix-validate-") if spread is None else contextlib.nullcontext(spread.scratch)
    with scratch_folder as scratch:
        docs_tasks = _docs_tasks(root, released, report.build, scratch)
        docs = _units(check_docs, docs_tasks, lambda task: [f for f in (task.docs, task.full) if f], tree, workers, on_file, spread)
        documents = {outcome.lang: outcome.documents for outcome in docs}
        direction_tasks = _direction_tasks(
            root, released, report.build,
            built["train_size"] if train_size is None else train_size, built["eval_size"] if eval_size is None else eval_size,
            documents, scratch,
        )
        directions = _units(check_direction, direction_tasks, lambda task: list(task.files), tree, workers, on_file, spread)
    digests: dict[str, tuple[str, int]] = {}
    counts: dict[str, int] = {}
    for outcome in [*docs, *directions]:
        record.merge(outcome.recorder)
        digests.update(outcome.digests)
        counts.update(outcome.counts)
        report.queries += outcome.queries
    report.docs = sum(count for count in documents.values() if count is not None)
    by_src: dict[str, list[tuple[DirectionTask, DirectionOutcome]]] = defaultdict(list)
    for task, outcome in zip(direction_tasks, directions):
        by_src[task.src].append((task, outcome))
    for src in sorted(by_src):
        _across_directions(record, src, by_src[src])
    _index(tree, record, released, digests)
    if report.build:
        _manifest(tree, record, counts)
    return record.into(report)


# --- the units and how they run ------------------------------------------------------------------


def _layout(tree: _Folder, record: Recorder) -> list[ReleasedFile]:
    """Released files worth reading; unknown and same-language files are failures."""
    released = []
    strays = 0
    for path, parsed in tree.walk():
        if path in (INDEX, MANIFEST, REPORT, CARD) or path.startswith(STATS_DIR + "/"):
            continue
        if parsed is None:
            strays += 1
            if strays <= MAX_EXAMPLES:  # each a file of its own: counted past the first few, not listed
                record.fail(path, LAYOUT, "not a released file name (docs/method.md section 9)")
        elif parsed.tgt is not None and parsed.tgt == parsed.src:
            record.fail(path, SAME_LANGUAGE, f"query and document language are both {parsed.src!r}")
        else:
            released.append(parsed)
    if strays > MAX_EXAMPLES:
        record.fail(".", LAYOUT, f"... and {strays - MAX_EXAMPLES:,} more files that are not released file names")
    return released


def _docs_tasks(root: str, released: list[ReleasedFile], build: bool, scratch: str) -> list[DocsTask]:
    by_lang: dict[str, dict[str, ReleasedFile]] = defaultdict(dict)
    for item in released:
        if item.tgt is None:
            by_lang[item.src][item.dataset] = item
    return [DocsTask(root, lang, files.get("docs"), files.get("docs-full"), build, os.path.join(scratch, f"{lang}.npy")) for lang, files in sorted(by_lang.items())]


def _direction_tasks(root: str, released: list[ReleasedFile], build: bool, train_size: int, eval_size: int, documents: dict[str, int | None], scratch: str) -> list[DirectionTask]:
    by_direction: dict[tuple[str, str], list[ReleasedFile]] = defaultdict(list)
    for item in released:
        if item.tgt is not None:
            by_direction[(item.src, item.tgt)].append(item)
    return [
        DirectionTask(
            root, src, tgt, tuple(files), build, train_size, eval_size, documents.get(tgt),
            os.path.join(scratch, f"{tgt}.npy") if documents.get(tgt) is not None else None,
        )
        for (src, tgt), files in sorted(by_direction.items())
    ]


def _sizes(tree: _Folder, files: Sequence[ReleasedFile]) -> dict[str, int]:
    return {item.path: tree.size(item.path) for item in files}


def _units(check: Callable[[Task], Outcome], tasks: list[Task], files: Callable[[Task], list[ReleasedFile]], tree: _Folder, workers: int | None,
           on_file: Callable[[str], None], spread: Spread | None) -> list[Outcome]:
    """Each task's outcome, in the tasks' order: from ``spread`` when given, else from local processes (``_run``)."""
    paths = lambda task: [f.path for f in files(task)]
    if spread is not None:
        return spread.run(check, tasks, on_file, paths)
    return _run(check, tasks, _sizes(tree, [f for task in tasks for f in files(task)]), workers, on_file, paths)


def _quiet_worker() -> None:
    """A Ctrl-C reaches every process of the terminal's group: the parent ends the workers, which stay silent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(check: Callable[[Task], Outcome], tasks: list[Task], sizes: dict[str, int], workers: int | None, on_file: Callable[[str], None], paths: Callable[[Task], list[str]]) -> list[Outcome]:
    """Each task's outcome, in the tasks' order; the largest start first when spread over processes."""
    small = workers is None and sum(sizes.values()) < POOL_BYTES
    workers = min(workers or default_workers(), len(tasks))
    if workers <= 1 or small:
        outcomes = []
        for task in tasks:
            outcomes.append(check(task))
            for path in paths(task):
                on_file(path)
        return outcomes
    order = sorted(range(len(tasks)), key=lambda i: -sum(sizes.get(path, 0) for path in paths(tasks[i])))
    found: dict[int, Outcome] = {}
    context = _context()
    if context.get_start_method() == "fork":
        warm()  # once here rather than in every worker
    pool = context.Pool(workers, initializer=_quiet_worker)
    try:
        for i, outcome in pool.imap_unordered(_numbered_check, [(check, i, tasks[i]) for i in order]):
            found[i] = outcome
            for path in paths(tasks[i]):
                on_file(path)
        pool.close()
    finally:
        pool.terminate()
        pool.join()
    return [found[i] for i in range(len(tasks))]


def _context():
    """How workers start. Forked on Linux when this process runs no other thread: nothing is imported again, and a
    user's script needs no ``if __name__ == "__main__"``. Else (the command line's progress bar is a thread) from a
    fork server that has imported the units' module once; spawned where there is none.
    """
    import multiprocessing
    import threading

    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["clirmatrix.pipeline.tools.validate_units"])
    return context


def _numbered_check(item: tuple[Callable, int, object]) -> tuple[int, object]:
    check, i, task = item
    return i, check(task)


# --- across a query language's directions ---------------------------------------------------------


def _across_directions(record: Recorder, src: str, directions: list[tuple[DirectionTask, DirectionOutcome]]) -> None:
    """MULTI-8's queries aligned across targets; test queries in no other split across directions (our builds: one split per query)."""
    names = Names()
    for _, outcome in directions:
        names.update(outcome.names)
    files = [ids for _, outcome in directions for ids in outcome.files]
    tgt_of = {ids.path: task.tgt for task, outcome in directions for ids in outcome.files}
    _alignment(record, names, [ids for ids in files if ids.dataset == MULTI8])
    overlapping = np.unique(np.concatenate([outcome.overlapping for _, outcome in directions]))
    bi139 = masks_of([ids for ids in files if ids.dataset in (BASE, FULL)])
    multi8 = masks_of([ids for ids in files if ids.dataset == MULTI8])
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    for name, (keys, masks) in (("BI-139", bi139), ("MULTI-8", multi8)):
        chosen = np.flatnonzero((masks & (masks - 1)).astype(bool) & ~np.isin(keys, overlapping))
        for key, mask in zip(keys[chosen].tolist(), masks[chosen].tolist()):
            groups[(name, mask)].append(key)
    other = dict(zip(*(array.tolist() for array in bi139)))
    reported = set(overlapping.tolist())
    for key, mask in zip(*(array.tolist() for array in multi8)):
        both = mask | other.get(key, 0)
        if other.get(key, 0) and several(both) and key not in reported:
            groups[("MULTI-8 and BI-139", both)].append(key)
    for (name, mask), keys in sorted(groups.items()):
        # The paper promises only that test queries are in no other split; MULTI-8 and
        # BI-139 it splits separately. Our builds assign one split per query everywhere.
        always = name != "MULTI-8 and BI-139" and (mask & _TEST_BITS or name == "MULTI-8")
        ids = [names.text(key) for key in keys]
        example = sorted(ids, key=lambda i: (len(i), i))[0]
        (path, line), *others = _places(files, tgt_of, keys[ids.index(example)], mask)
        message = (
            f"{len(ids):,} {src} queries are in more than one split ({', '.join(splits_of(mask))}) across {name} "
            f"directions, e.g. {examples(ids)}; {example} is also in {'; '.join(f'{p}:{n}' for p, n in others)}"
        )
        (record.fail if always else record.strict)(path, LEAKAGE, message, line)


def _places(files: list[FileIds], tgt_of: dict[str, str], key: int, mask: int) -> list[tuple[str, int]]:
    """(path, line) of a query's first record in each file of the clashing splits, test files first."""
    places = []
    for ids in sorted(files, key=lambda ids: (-SPLITS.index(ids.split), ids.dataset, tgt_of[ids.path])):
        if mask & SPLIT_BIT[ids.split]:
            at = np.flatnonzero(ids.keys == key)
            if len(at):
                places.append((ids.path, int(ids.lines[at[0]])))
    return places


def _alignment(record: Recorder, names: Names, files: list[FileIds]) -> None:
    """MULTI-8 queries of X and a split are the same, in the same order, for every target (the first target's file is the reference)."""
    reference: dict[str, FileIds] = {}
    for ids in files:  # in target order, as the directions run
        first = reference.setdefault(ids.split, ids)
        if first is ids or np.array_equal(first.keys, ids.keys):
            continue
        shorter = min(len(ids.keys), len(first.keys))
        differ = np.flatnonzero(ids.keys[:shorter] != first.keys[:shorter])
        position = int(differ[0]) if len(differ) else shorter
        record.fail(ids.path, ALIGNMENT, f"query list differs from {first.path} at query {position + 1} ({len(ids.keys):,} vs {len(first.keys):,} queries)")


# --- index and manifest --------------------------------------------------------------------------


def _index(tree: _Folder, record: Recorder, released: list[ReleasedFile], digests: dict[str, tuple[str, int]]) -> None:
    """Every local released file against its ``downloads.json.gz`` entry (md5, size, url)."""
    if not tree.is_file(INDEX):
        if record.build:
            record.fail(INDEX, INDEX_RULE, "a build must write the index (docs/method.md section 9)")
        return
    contexts = _read_index(record, tree)
    if contexts is None:
        return
    present = set()
    for item in released:
        context, key = index_key(item.dataset, item.src, item.tgt, item.split)
        present.add((context, key))
        entry = contexts.get(context, {}).get(key)
        if entry is None:
            record.strict(item.path, NOT_INDEXED, f"no entry {context} / {key} in {INDEX}")
        else:
            _check_entry(tree, record, item, f"{context} / {key}", entry, digests.get(item.path))
    _absent(record, contexts, present)


def _absent(record: Recorder, contexts: dict[str, dict], present: set[tuple[str, str]]) -> None:
    """Indexed files that are not here: each a failure in a build; in a download (usually partial) one count."""
    absent = []
    for context, entries in sorted(contexts.items()):
        for key, entry in sorted(entries.items()):
            if (context, key) not in present:
                url = entry.get("url") if isinstance(entry, dict) else None
                absent.append((context, key, path_in_url(url) if isinstance(url, str) else None))
    if not absent:
        return
    if record.build:
        for context, key, path in absent:
            record.fail(path or INDEX, MISSING_FILE, f"listed in {INDEX} ({context} / {key}) but not in the build")
    else:
        record.warn(INDEX, MISSING_FILE, f"{len(absent):,} of the files it lists are not here (a partial download), e.g. {absent[0][2] or absent[0][1]}")


def _read_index(record: Recorder, tree: _Folder) -> dict[str, dict] | None:
    try:
        with tree.open(INDEX) as raw, igzip.open(raw, "rb") as handle:
            value = orjson.loads(handle.read())
    except (orjson.JSONDecodeError, *STREAM_ERRORS) as error:
        record.fail(INDEX, INDEX_RULE, f"cannot be read as gzip JSON ({type(error).__name__}: {error})")
        return None
    if not isinstance(value, dict):
        record.fail(INDEX, INDEX_RULE, "is not a JSON object of contexts")
        return None
    contexts = {}
    known = set(CONTEXTS.values())
    for context, entries in value.items():
        if context.startswith("_"):  # notes such as "_README" beside the contexts
            continue
        if not isinstance(entries, dict):
            record.fail(INDEX, INDEX_RULE, f"context {context} is not an object of entries")
            continue
        if context not in known:
            record.warn(INDEX, INDEX_RULE, f"unknown context {context}")
        contexts[context] = entries
    return contexts


def _check_entry(tree: _Folder, record: Recorder, released: ReleasedFile, name: str, entry: object, digest: tuple[str, int] | None) -> None:
    path = released.path
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str) or not isinstance(entry.get("expected_md5"), str):
        record.fail(path, INDEX_RULE, f"index entry {name} lacks a url or expected_md5 string")
        return
    if not (entry["url"] == path or entry["url"].endswith("/" + path)):
        record.strict(path, URL, f"index entry {name} has url {entry['url']}, which does not end with the file's path")
    if digest is None:  # not read by a unit (none is left out today)
        with tree.open(path) as handle:
            digest = (md5_of(handle), tree.size(path))
    md5, actual_size = digest
    # The real index has "size"; ir_datasets' verification log (and our fixture) "verified_size".
    size = entry.get("size", entry.get("verified_size"))
    if isinstance(size, int) and size != actual_size:
        record.fail(path, SIZE, f"{actual_size:,} bytes, index entry {name} says {size:,}")
    if md5 != entry["expected_md5"].lower():
        record.fail(path, CHECKSUM, f"md5 {md5}, index entry {name} expects {entry['expected_md5']}")


def _manifest(tree: _Folder, record: Recorder, counts: dict[str, int]) -> None:
    """Our builds' manifest parses, lists counts, and its per-file record counts match the files read."""
    try:
        with tree.open(MANIFEST) as handle:
            value = orjson.loads(handle.read())
    except (OSError, orjson.JSONDecodeError) as error:
        record.fail(MANIFEST, MANIFEST_RULE, f"cannot be read as JSON ({error})")
        return
    listed_counts = value.get("counts") if isinstance(value, dict) else None
    if not isinstance(listed_counts, dict) or not listed_counts:
        record.fail(MANIFEST, MANIFEST_RULE, 'lists no counts (expected a non-empty "counts" object)')
        return
    _encoder(record, value.get("gzip"))
    files = value.get("files", {})
    for path, listed in sorted(files.items() if isinstance(files, dict) else []):
        expected = listed.get("records") if isinstance(listed, dict) else None
        if path in counts and isinstance(expected, int) and expected != counts[path]:
            record.fail(MANIFEST, MANIFEST_RULE, f"counts {expected:,} records for {path}, the file holds {counts[path]:,}")


def _encoder(record: Recorder, recorded: object) -> None:
    """A warning when another gzip encoder (or version, level) wrote the build: this version would write other bytes of the same text."""
    if recorded == ENCODER:
        return
    if isinstance(recorded, dict):
        wrote = f"{recorded.get('encoder')} {recorded.get('library')} (package {recorded.get('package')}) at level {recorded.get('level')}, {recorded.get('chunk')}-byte slices"
    else:
        wrote = "an encoder it does not record (clirmatrix before 2026-11-29: isal, whose bytes depend on the CPU)"
    ours = f"{ENCODER['encoder']} {ENCODER['library']} (package {ENCODER['package']}) at level {ENCODER['level']}, {ENCODER['chunk']}-byte slices"
    record.warn(MANIFEST, ENCODER_RULE, f"the .gz files were written by {wrote}; this clirmatrix writes {ours}: a rebuild here holds the same text in other bytes, and other md5s")


def release_sizes(root: str) -> dict[str, int]:
    """Compressed bytes of each released file under ``root`` (what ``validate`` reads), by relative path: for a progress display."""
    tree = _tree(root)
    return {path: tree.size(path) for path, item in tree.walk() if item is not None}


def built_sizes(root: str) -> dict[str, int]:
    """The split sizes a build was made with (its ``manifest.json`` settings); the release's for a download or an unreadable manifest."""
    return _built_sizes(_tree(root))


def _built_sizes(tree: _Folder) -> dict[str, int]:
    sizes = {"train_size": DEFAULT_TRAIN_SIZE, "eval_size": DEFAULT_EVAL_SIZE}
    try:
        with tree.open(MANIFEST) as handle:
            settings = orjson.loads(handle.read()).get("settings", {})
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return sizes  # no manifest: a download; a broken one is reported by the manifest rule
    return {name: settings[name] if isinstance(settings.get(name), int) else default for name, default in sizes.items()}


def refuse_unreleased(root: str) -> None:
    """``NotAReleaseError`` unless ``root`` holds at least one top-level entry of a build or a download.

    Without this, any folder would be walked whole and every file in it reported as
    "not a released file name" (hundreds of thousands of lines for ``/tmp``).
    """
    _refuse_unreleased(_tree(root))


def _refuse_unreleased(tree: _Folder) -> None:
    if not any(tree.has(name) for name in (*RELEASE_FOLDERS, INDEX, MANIFEST)):
        raise NotAReleaseError(
            f"{tree.root} is not a clirmatrix build or download: it holds none of {', '.join(f'{name}/' for name in RELEASE_FOLDERS)}, {INDEX}, {MANIFEST}"
        )
