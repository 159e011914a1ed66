"""``validate``'s reads of a tree on an object store (``s3://``, ``gs://``): through Beam's FileSystems (``fileio``), as the build writes there.

Imported only for such a tree (``validate._tree``): a local folder is read with ``os`` as
before, without loading Beam. The driver lists the prefix once (``Prefix.files``: every
object's path and size) and answers from that listing what a local folder answers from
the disk (is it there, is it a build, which files it holds); the files themselves are
opened with ``fileio.open_raw``, by the driver (the index, the manifest) and by the units
(``validate_scan.read_blocks``). A DOCS unit's doc keys, when its scratch is a URL, go
through here too (``write_array``, ``read_array``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
from apache_beam.io.filesystems import FileSystems

from clirmatrix.pipeline.errors import MissingInputError
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.output.layout import IN_PROGRESS, ReleasedFile, incomplete_build, parse_path


class Prefix:
    """A build or download below a URL, as ``validate``'s driver reads it (``validate._Folder`` is a local folder's)."""

    remote = True

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")
        self._files: dict[str, int] | None = None

    def files(self) -> dict[str, int]:
        """Every object below the prefix, by relative path, with its size, sorted; dot-entries at any depth left out (as ``jsonl.walk_release`` does)."""
        if self._files is None:
            prefix = self.root + "/"
            try:
                results = FileSystems.match([prefix + "**"])
            except Exception as error:  # whatever the store raises for a missing bucket or missing rights (BeamIOError wraps it)
                raise MissingInputError(f"{self.root} is not a folder: it cannot be listed ({type(error).__name__}: {str(error).splitlines()[0][:300]})") from None
            found = {}
            for result in results:
                for item in result.metadata_list:
                    relative = item.path[len(prefix) :] if item.path.startswith(prefix) else None
                    if relative and not any(part.startswith(".") for part in relative.split("/")):
                        found[relative] = item.size_in_bytes
            self._files = dict(sorted(found.items()))
        return self._files

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def is_tree(self) -> bool:
        return bool(self.files())

    def has(self, name: str) -> bool:
        """A file of that name, or a folder (a prefix holding any object)."""
        return name in self.files() or any(path.startswith(name + "/") for path in self.files())

    def is_file(self, name: str) -> bool:
        return name in self.files()

    def open(self, name: str) -> BinaryIO:
        return fileio.open_raw(self.path(name))

    def size(self, name: str) -> int:
        return self.files()[name] if name in self.files() else fileio.size_of(self.path(name))

    def walk(self) -> Iterator[tuple[str, ReleasedFile | None]]:
        for path in self.files():
            yield path, parse_path(path)

    def refuse_incomplete(self) -> None:
        """``layout.refuse_incomplete`` for a prefix: a build that ``clirmatrix build --out URL`` has not finished still holds its mark."""
        if IN_PROGRESS in self.files():
            raise incomplete_build(self.root, self.path(IN_PROGRESS))


def write_array(path: str, array: np.ndarray) -> None:
    """``np.save`` to a URL (atomically: a retried unit leaves what a first try would)."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    fileio.write_bytes(path, buffer.getvalue())


def read_array(path: str) -> np.ndarray:
    return np.load(io.BytesIO(fileio.read_bytes(path)))
