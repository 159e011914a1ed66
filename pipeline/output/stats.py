"""Per-direction statistics of a release: Tables 7.1-7.4 of the dissertation (section 7.2.6).

For each direction X -> Y: the number of queries, and the average number of documents
per query with label >= 4 and with label >= 1 (label 6, the query's own article,
counts in both; label 0 filler in neither). Written as one TSV per collection and
drawn as heat maps over the language matrix (rows: query language, columns:
document language), like docs/method.md section 10 asks.

Which queries the paper averages over it does not say. Tables 7.1-7.3 are titled
"CLIRMatrix BI-139", so the reference numbers are those of ``full`` (the "raw"
collection, every query) pooled over its splits: the ``split = all`` rows of
``bi139_full.tsv``. ``base`` gives the same means up to sampling: its queries are a
sample of full's, and it keeps every labelled document unless there are more than
100 (at most 101 can exist: 100 retrieved plus the query's own article). Table 7.4
is MULTI-8 (label >= 4 only), pooled over its splits too. Every split is kept in
the TSVs, since the totals cost nothing extra.

``direction_stats`` is pure and its result a plain, picklable dataclass
(``dataclasses.asdict`` round-trips it), so a Beam job can map it over files and
hand the rows to ``write_stats``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.output.jsonl import iter_queries, walk_release
from clirmatrix.pipeline.output.layout import QUERY_SETS, SPLITS, STATS_DIR, ReleasedFile, parse_path

ALL_SPLITS = "all"  # the split of a row pooled over a direction's splits
MEASURES = ("queries", "mean_ge4", "mean_ge1")
COLUMNS = ("src", "tgt", "split", "queries", "docs_ge4", "docs_ge1", "mean_ge4", "mean_ge1")
DPI = 100
CELL_INCHES = 0.18  # a 139 x 139 matrix is about 27 inches square, tick labels still legible
ANNOTATE_CELLS = 400  # write the values into the cells of matrices up to this size (MULTI-8)


@dataclass(frozen=True)
class DirectionStats:
    """Counts of one query file (or, with ``split == "all"``, of a direction's files pooled)."""

    dataset: str
    src: str
    tgt: str
    split: str
    queries: int
    docs_ge4: int  # documents with label >= 4, summed over the queries
    docs_ge1: int  # documents with label >= 1, summed over the queries

    @property
    def mean_ge4(self) -> float:
        return self.docs_ge4 / self.queries if self.queries else 0.0

    @property
    def mean_ge1(self) -> float:
        return self.docs_ge1 / self.queries if self.queries else 0.0


def _released(path: str) -> ReleasedFile:
    """The released file a path (absolute or relative) ends with: BI-139 paths have 4 parts, MULTI-8 3."""
    parts = os.fspath(path).replace(os.sep, "/").split("/")
    for depth in (4, 3):
        found = parse_path("/".join(parts[-depth:]))
        if found is not None and found.tgt is not None:
            return found
    raise ValueError(f"{path} is not a released query file (docs/method.md section 9)")


def direction_stats(path: str | os.PathLike) -> DirectionStats:
    """Queries and labelled-document totals of one ``*.jl.gz`` query file."""
    released = _released(os.fspath(path))
    queries = ge4 = ge1 = 0
    for record in iter_queries(path):
        queries += 1
        for _, label in record.tgt_results:
            if label >= 1:
                ge1 += 1
                if label >= 4:
                    ge4 += 1
    return DirectionStats(released.dataset, released.src, released.tgt, released.split, queries, ge4, ge1)


def collect_stats(root: str, on_file: Callable[[str], None] | None = None) -> list[DirectionStats]:
    """``direction_stats`` of every query file under a build or download, in path order."""
    rows = []
    for path, released in walk_release(root):
        if released is not None and released.tgt is not None:
            if on_file:
                on_file(path)
            rows.append(direction_stats(os.path.join(root, path)))
    return rows


def pooled(rows: Iterable[DirectionStats]) -> list[DirectionStats]:
    """One ``split == "all"`` row per (collection, direction): the sums over its split rows."""
    totals: dict[tuple[str, str, str], list[int]] = {}
    for row in rows:
        if row.split != ALL_SPLITS:
            total = totals.setdefault((row.dataset, row.src, row.tgt), [0, 0, 0])
            total[0] += row.queries
            total[1] += row.docs_ge4
            total[2] += row.docs_ge1
    return [DirectionStats(*key, ALL_SPLITS, *total) for key, total in sorted(totals.items())]


def _order(row: DirectionStats) -> tuple:
    return (row.src, row.tgt, SPLITS.index(row.split) if row.split in SPLITS else len(SPLITS))


def stats_tsv(rows: Iterable[DirectionStats]) -> bytes:
    """The TSV of one collection: a header, then every split row and the pooled row of each direction."""
    lines = ["\t".join(COLUMNS)]
    for row in sorted(rows, key=_order):
        values = (row.src, row.tgt, row.split, row.queries, row.docs_ge4, row.docs_ge1, f"{row.mean_ge4:.3f}", f"{row.mean_ge1:.3f}")
        lines.append("\t".join(map(str, values)))
    return ("\n".join(lines) + "\n").encode()


def heatmap_png(rows: Iterable[DirectionStats], measure: str, title: str) -> bytes:
    """A heat map of one measure: rows = query language, columns = document language.

    Deterministic bytes: the size follows from the language counts, the PNG carries
    no software or date metadata, and no global pyplot state is touched.
    """
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.figure import Figure

    rows = list(rows)
    srcs = sorted({row.src for row in rows})
    tgts = sorted({row.tgt for row in rows})
    matrix = np.full((len(srcs), len(tgts)), np.nan)
    for row in rows:
        matrix[srcs.index(row.src), tgts.index(row.tgt)] = getattr(row, measure)
    finite = matrix[np.isfinite(matrix)]
    top = float(finite.max()) if finite.size else 0.0
    # Query counts span orders of magnitude (full train files hold 10 to 10^6 queries).
    norm = LogNorm(vmin=1, vmax=max(top, 10.0)) if measure == "queries" else Normalize(vmin=0, vmax=max(top, 1e-9))
    figure = Figure(figsize=(max(6.5, 2.5 + CELL_INCHES * len(tgts)), max(4.5, 1.5 + CELL_INCHES * len(srcs))), dpi=DPI)
    axes = figure.add_subplot()
    # Grey: no file for that direction (or, on the log scale, a file without queries).
    cmap = colormaps["viridis"].with_extremes(bad="#dddddd")
    image = axes.imshow(np.ma.masked_invalid(matrix), norm=norm, cmap=cmap, aspect="auto", interpolation="nearest")
    small = len(srcs) * len(tgts) <= ANNOTATE_CELLS
    fontsize = 9 if small else 6
    axes.set_xticks(range(len(tgts)), labels=tgts, rotation=90, fontsize=fontsize)
    axes.set_yticks(range(len(srcs)), labels=srcs, fontsize=fontsize)
    axes.set_xlabel("document language")
    axes.set_ylabel("query language")
    axes.set_title(title, fontsize=10)
    if small:
        for (i, j), value in np.ndenumerate(matrix):
            if np.isfinite(value):
                text = f"{value:,.0f}" if measure == "queries" else f"{value:.1f}"
                dark = float(np.ma.filled(norm(value), 1.0)) < 0.5
                axes.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    figure.colorbar(image, ax=axes, shrink=0.8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


_TITLES = {
    "queries": "queries per direction",
    "mean_ge4": "documents with label >= 4 per query",
    "mean_ge1": "documents with label >= 1 per query",
}


def stats_files(rows: Iterable[DirectionStats]) -> dict[str, bytes]:
    """``{collection}.tsv`` and ``{collection}_{measure}.png`` per collection with rows: file name -> bytes.

    The collections are ``bi139_base``, ``bi139_full`` and ``multi8``. Heat maps draw
    the pooled (``split == "all"``) rows.
    """
    rows = [row for row in rows if row.split != ALL_SPLITS]
    files: dict[str, bytes] = {}
    for dataset in QUERY_SETS:
        mine = [row for row in rows if row.dataset == dataset]
        if not mine:
            continue
        name = dataset.replace("-", "_")
        whole = pooled(mine)
        files[f"{name}.tsv"] = stats_tsv(mine + whole)
        for measure in MEASURES:
            files[f"{name}_{measure}.png"] = heatmap_png(whole, measure, f"{dataset}: {_TITLES[measure]} (all splits)")
    return files


def write_stats(root: str, rows: Iterable[DirectionStats], out_dir: str | None = None) -> list[str]:
    """Write ``stats_files`` into ``out_dir`` (default ``{root}/stats``, which ``validate`` ignores); return the paths."""
    out_dir = out_dir or os.path.join(root, STATS_DIR)
    written = []
    for name, data in stats_files(rows).items():
        written.append(os.path.join(out_dir, name))
        with atomic_write(written[-1]) as handle:
            handle.write(data)
    return written
