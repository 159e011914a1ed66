"""File access through Beam's FileSystems (local, gs://, s3://) with atomic writes.

Dumps are opened raw and wrapped in a fast decompressor chosen by extension
(isal for gzip, the standard library for bz2): isal inflates gzip several times
faster than the standard library (docs/benchmarks.md, the extraction baselines).
Every output is written under a temporary name and renamed only once complete, so a
file with its final name is always whole.
"""

from __future__ import annotations

import bz2
import contextlib
import os
import posixpath
import threading
import uuid
from collections.abc import Iterator
from typing import IO, BinaryIO

import orjson
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from isal import igzip_threaded

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM, FileReport
from clirmatrix.pipeline.io.localio import STREAM_ERRORS, atomic_write  # readers catch STREAM_ERRORS from here too


class _SharedS3Clients:
    """Stands for ``boto3`` in Beam's S3 client module: one boto3 client per set of S3 settings and process.

    Beam builds a new boto3 session and client for every S3 operation (an ``exists``,
    an ``open``, a ``rename``): 110-130 ms of CPU each, measured here, most of a small
    file's cost. boto3's clients are thread-safe, so one per settings serves them all.
    """

    _clients: dict[tuple, object] = {}
    _lock = threading.Lock()

    class session:  # noqa: N801 (the attribute path Beam uses: boto3.session.Session)
        class Session:
            def client(self, **settings):
                key = tuple(sorted(settings.items()))
                with _SharedS3Clients._lock:
                    if key not in _SharedS3Clients._clients:
                        import boto3

                        _SharedS3Clients._clients[key] = boto3.session.Session().client(**settings)
                    return _SharedS3Clients._clients[key]


def _share_s3_clients() -> None:
    try:
        from apache_beam.io.aws.clients.s3 import boto3_client
    except ImportError:  # no apache-beam[aws]: no S3 filesystem either
        return
    if getattr(boto3_client, "boto3", None) is not None:
        boto3_client.boto3 = _SharedS3Clients


_share_s3_clients()


def join(base: str, *parts: str) -> str:
    """Join path parts for local paths and URLs alike."""
    return FileSystems.join(base, *parts) if parts else base


def basename(path: str) -> str:
    """The last component of a local path or URL."""
    return posixpath.basename(path.rstrip("/"))


def relative_to(root: str, path: str) -> str:
    """``path`` below ``root`` (local path or URL prefix), with ``/`` separators; ``path`` itself when outside."""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def is_remote(path: str) -> bool:
    """Whether a path is a URL (gs://, s3://, ...) rather than a local path."""
    return "://" in path


def absolute(path: str) -> str:
    """A local path made absolute; URLs unchanged.

    Workers open paths from their own working directory (a Dask worker's, a
    container's), so the driver turns every relative path into an absolute one.
    """
    if not path or is_remote(path):
        return path
    return os.path.abspath(os.path.expanduser(path))


def exists(path: str) -> bool:
    """Whether a file exists (on object stores a prefix is not a file: see ``any_under``)."""
    return FileSystems.exists(path)


def any_under(prefix: str) -> bool:
    """Whether anything is stored below a folder or prefix, local or remote."""
    return bool(list_files(join(prefix, "**")))


def size_of(path: str) -> int:
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes


def list_files(pattern: str) -> list[str]:
    """Paths matching a glob (``**`` recurses), sorted so that runs are deterministic.

    Nothing matching is an empty list (Beam's own answer, locally and on S3); any
    other error of the filesystem is raised, so that a failed listing never reads
    as an empty one (a stage would then silently skip inputs or reports).
    """
    results = FileSystems.match([pattern])
    return sorted(m.path for result in results for m in result.metadata_list)


def open_raw(path: str) -> BinaryIO:
    """The file's bytes exactly as stored (no automatic decompression)."""
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def open_dump(raw: BinaryIO, path: str, background: bool = True) -> IO[bytes]:
    """Wrap a raw stream in the decompressor its extension names (.gz, .bz2, or none).

    ``background`` inflates gzip in a second thread: faster when a core is spare,
    slower when every core already runs a worker (the thread then only competes).
    """
    if path.endswith(".gz"):
        return igzip_threaded.open(raw, "rb", threads=1 if background else 0)
    if path.endswith(".bz2"):
        return bz2.BZ2File(raw, "rb")
    return raw


def iter_lines(stream: IO[bytes], report: FileReport) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` until the end, recording a damaged stream in ``report``.

    A truncated or corrupt compressed stream ends the iteration with one reject
    naming the last line read, instead of a traceback. A last line without its
    newline is a file cut short (every dump line ends with one): recorded the same way.
    """
    line_number = 0
    line = b"\n"
    try:
        for line in stream:
            line_number += 1
            yield line_number, line
    except STREAM_ERRORS as error:
        report.reject(line_number + 1, stream_error_kind(error), f"{type(error).__name__}: {error} (after line {line_number:,})")
        return
    if not line.endswith(b"\n"):
        report.reject(line_number, TRUNCATED_STREAM, f"the file ends inside line {line_number:,} (no final newline): it was cut short")


def stream_error_kind(error: BaseException) -> str:
    """``truncated_stream`` when the data ended early, else ``corrupt_stream``."""
    return TRUNCATED_STREAM if isinstance(error, EOFError) else CORRUPT_STREAM


def _temporary_name(path: str) -> str:
    # A dot-prefixed name beside the target: hidden from globs such as ``*.parquet``.
    directory, name = posixpath.split(path)
    return posixpath.join(directory, f".{name}.tmp-{uuid.uuid4().hex[:12]}")


def make_dirs(path: str) -> None:
    """Create a directory and its parents (a no-op on object stores)."""
    if not is_remote(path):
        os.makedirs(path, exist_ok=True)


@contextlib.contextmanager
def atomic_create(path: str) -> Iterator[BinaryIO]:
    """Write to a temporary name beside ``path``; rename over ``path`` only on success.

    The rename replaces an older file of that name (``os.rename`` locally, a copy on
    object stores), so no file ever has its final name before it is whole. A local path
    goes through ``localio.atomic_write``, the one local implementation.
    """
    if not is_remote(path):
        with atomic_write(path) as handle:
            yield handle
        return
    make_dirs(posixpath.dirname(path))
    temporary = _temporary_name(path)
    handle = FileSystems.create(temporary, compression_type=CompressionTypes.UNCOMPRESSED)
    try:
        yield handle
        handle.close()
    except BaseException:
        handle.close()
        FileSystems.delete([temporary])
        raise
    FileSystems.rename([temporary], [path])


def write_json(path: str, value: object) -> None:
    """Write a JSON document atomically (sorted keys, indented, so reruns are byte-identical)."""
    with atomic_create(path) as handle:
        handle.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def read_json(path: str) -> object:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return orjson.loads(handle.read())


class NotWritableError(InputError, OSError):
    """An output folder or bucket that cannot be written to."""


def check_writable(folder: str) -> None:
    """Write and remove a small file in ``folder``, so a missing bucket or a read-only disk fails before any work."""
    probe = join(folder, f".clirmatrix-write-check-{uuid.uuid4().hex[:12]}")
    try:
        write_bytes(probe, b"clirmatrix")  # not empty: S3 refuses to complete an upload of no parts
        FileSystems.delete([probe])
    except Exception as error:  # whatever the storage layer raises: local OSError, S3ClientError, GCS HttpError
        raise NotWritableError(f"cannot write to {folder}: {error}") from None


def read_bytes(path: str) -> bytes:
    """A whole (small) file, local or remote."""
    with open_raw(path) as handle:
        return handle.read()


def write_bytes(path: str, data: bytes) -> None:
    """Write a whole file atomically, local or remote."""
    with atomic_create(path) as handle:
        handle.write(data)


_DELETE_BATCH = 1_000  # S3 deletes at most 1,000 keys per request


def remove_tree(path: str) -> None:
    """Delete a file, or a folder or prefix and everything under it; nothing when absent.

    An object store has no folders: asking whether ``s3://b/work/docs`` exists asks
    for an object of that exact name, which there is none of. So below a URL every
    object that ``path/**`` matches is deleted, plus ``path`` itself when it is one.
    """
    if not is_remote(path):
        if FileSystems.exists(path):
            FileSystems.delete([path])
        return
    found = list_files(join(path, "**"))
    if FileSystems.exists(path):
        found.append(path)
    for start in range(0, len(found), _DELETE_BATCH):
        FileSystems.delete(found[start : start + _DELETE_BATCH])
