"""The released CLIRMatrix file layout (docs/method.md section 9, docs/formats.md section 1).

One place names every released file, so the writers, ``validate`` and ``download``
agree on paths and on the keys of ``downloads.json.gz``. Paths are relative to the
root of a build or a download, with ``/`` separators.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.method.split_names import EVAL_SPLITS as EVAL_SPLITS  # the method names its sets; the files are named by them
from clirmatrix.pipeline.method.split_names import SPLITS as SPLITS

BASE_CANDIDATES = 100  # K: candidates per query in BI-139 base and MULTI-8
LABELS = range(0, 7)  # 0 = filler / not retrieved, 1-5 = Jenks class, 6 = the query's own article

INDEX = "downloads.json.gz"
MANIFEST = "manifest.json"
REPORT = "report.html"  # a page to look at (pipeline/tools/report.py); not a released file
CARD = "README.md"  # the dataset card (pipeline/output/card.py); not a released file
STATS_DIR = "stats"
# Present in a build's OUT from the build's first write there until its index and manifest
# are written: a folder holding it is unfinished (running, failed or killed), whatever
# finished-looking files it already has.
IN_PROGRESS = "BUILD_IN_PROGRESS"

# Set name (as ``clirmatrix download`` spells it) -> context key in downloads.json.gz.
CONTEXTS: dict[str, str] = {
    "bi139-base": "clirmatrix_bi139_base",
    "bi139-full": "clirmatrix_bi139_full",
    "multi8": "clirmatrix_multi8",
    "docs": "clirmatrix_docs",
    "docs-full": "clirmatrix_docs_full",  # [ours]: the release has no full-text documents
}
QUERY_SETS: tuple[str, ...] = ("bi139-base", "bi139-full", "multi8")
RELEASE_FOLDERS: tuple[str, ...] = ("BI-139", "MULTI-8", "DOCS", "DOCS-FULL")  # the top-level folders of a release
DOC_SETS: tuple[str, ...] = ("docs", "docs-full")
EXPORT_FORMATS: tuple[str, ...] = ("hf", "beir", "pyserini")  # what ``clirmatrix export`` writes (pipeline/tools/export.py)


def query_file(dataset: str, src: str, tgt: str, split: str) -> str:
    """Path of the queries+qrels file of one direction and split, e.g. ``BI-139/base/en/en.de.dev.base.jl.gz``."""
    if dataset == "bi139-base":
        return f"BI-139/base/{src}/{src}.{tgt}.{split}.base.jl.gz"
    if dataset == "bi139-full":
        return f"BI-139/full/{src}/{src}.{tgt}.{split}.jl.gz"
    if dataset == "multi8":
        return f"MULTI-8/{src}/{src}.{tgt}.{split}.jl.gz"
    raise ValueError(f"unknown query set {dataset!r}; expected one of {', '.join(QUERY_SETS)}")


def docs_file(dataset: str, lang: str) -> str:
    """Path of a language's document TSV: ``DOCS/{lang}.tsv.gz`` or ``DOCS-FULL/{lang}.tsv.gz``."""
    if dataset == "docs":
        return f"DOCS/{lang}.tsv.gz"
    if dataset == "docs-full":
        return f"DOCS-FULL/{lang}.tsv.gz"
    raise ValueError(f"unknown document set {dataset!r}; expected one of {', '.join(DOC_SETS)}")


def index_key(dataset: str, src: str, tgt: str | None = None, split: str | None = None) -> tuple[str, str]:
    """(context, key) of a file in ``downloads.json.gz``: ``("clirmatrix_bi139_base", "queries/en_de/dev")``."""
    if dataset in DOC_SETS:
        return CONTEXTS[dataset], f"docs/{src}"
    return CONTEXTS[dataset], f"queries/{src}_{tgt}/{split}"


@dataclass(frozen=True)
class ReleasedFile:
    """What a released path holds; ``tgt`` and ``split`` are None for document files."""

    dataset: str
    src: str
    tgt: str | None
    split: str | None
    path: str


_PATTERNS = (
    ("bi139-base", re.compile(r"^BI-139/base/(?P<src>[^/.]+)/(?P=src)\.(?P<tgt>[^/.]+)\.(?P<split>[a-z0-9]+)\.base\.jl\.gz$")),
    ("bi139-full", re.compile(r"^BI-139/full/(?P<src>[^/.]+)/(?P=src)\.(?P<tgt>[^/.]+)\.(?P<split>[a-z0-9]+)\.jl\.gz$")),
    ("multi8", re.compile(r"^MULTI-8/(?P<src>[^/.]+)/(?P=src)\.(?P<tgt>[^/.]+)\.(?P<split>[a-z0-9]+)\.jl\.gz$")),
    ("docs", re.compile(r"^DOCS/(?P<src>[^/.]+)\.tsv\.gz$")),
    ("docs-full", re.compile(r"^DOCS-FULL/(?P<src>[^/.]+)\.tsv\.gz$")),
)


def parse_path(path: str) -> ReleasedFile | None:
    """The released file a relative path names, or None when it is not one (or its split is unknown)."""
    for dataset, pattern in _PATTERNS:
        match = pattern.match(path)
        if match:
            parts = match.groupdict()
            split = parts.get("split")
            if split is not None and split not in SPLITS:
                return None
            return ReleasedFile(dataset, parts["src"], parts.get("tgt"), split, path)
    return None


def path_in_url(url: str) -> str | None:
    """The released path a URL ends with (``.../BI-139/base/en/en.de.dev.base.jl.gz``), or None."""
    parts = url.split("/")
    return next(("/".join(parts[i:]) for i in range(len(parts)) if parse_path("/".join(parts[i:])) is not None), None)


class IncompleteBuildError(InputError):
    """A build folder that ``clirmatrix build`` has not finished."""


def refuse_incomplete(root: str | os.PathLike) -> None:
    """Raise ``IncompleteBuildError`` when ``root`` (a folder, or a ``file://`` URL of one) is an unfinished build.

    Remote roots (http, s3) are not probed: their publisher copies finished builds only.
    """
    root = os.fspath(root)
    if root.startswith("file://"):
        root = unquote(urlparse(root).path)
    elif "://" in root:
        return
    if os.path.exists(os.path.join(root, IN_PROGRESS)):
        raise incomplete_build(root, os.path.join(root, IN_PROGRESS))


def incomplete_build(root: str, mark: str) -> IncompleteBuildError:
    """The error for a build under ``root`` whose unfinished mark ``mark`` is there (a folder's, or a prefix's on an object store)."""
    return IncompleteBuildError(
        f"incomplete build: rerun clirmatrix build ({mark} says the build that writes {root} has not finished: it is running, failed or was killed)"
    )
