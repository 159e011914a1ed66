"""``OUT/report.html``: one self-contained page to look at a build or a download.

Researchers would rather look than read JSON. The page holds the inputs and
settings (from ``manifest.json``), per language documents, links, queries and bad
records, the Table 7.1-7.4 statistics with their heat maps (from ``stats/``, the
PNGs inlined), label distributions, and, for a few directions, sample queries beside
their labelled documents (label and the first words of the text, in the target
script). No network, no script: it opens anywhere. Reads are bounded: label counts
come from at most ``MAX_LABEL_FILES`` files and ``MAX_LINES`` lines each, and samples
from the directions whose document files are smallest.
"""

from __future__ import annotations

import base64
import csv
import html
import os
from collections import Counter
from collections.abc import Iterable
from itertools import islice
from pathlib import Path

import orjson

from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import iter_docs, iter_queries, walk_release

MAX_LABEL_FILES = 24
MAX_LINES = 2_000
SAMPLE_DIRECTIONS = 3
SAMPLE_QUERIES = 3
SAMPLE_DOCS = 5
FIRST_WORDS = 24
FIRST_CHARS = 200  # scripts without spaces have no words to count

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; } h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0 1em; } td, th { border: 1px solid #ddd; padding: .2em .5em; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; } .muted { color: #777; } img { max-width: 100%; border: 1px solid #eee; }
.grid { display: flex; flex-wrap: wrap; gap: 1em; } .grid figure { margin: 0; width: 22em; } figcaption { font-size: .85em; color: #555; }
.query { margin: .8em 0; } .doc { margin-left: 1.5em; } .label { display: inline-block; min-width: 1.6em; font-weight: bold; }
"""


def write_report(root: str | os.PathLike, finished_only: bool = True) -> Path:
    """Write ``{root}/report.html`` atomically from what the folder holds; returns its path.

    ``finished_only=False`` lets the build write it just before it removes its in-progress mark.
    """
    from clirmatrix.pipeline.tools.validate import refuse_unreleased

    root = Path(root)
    if finished_only:
        refuse_unreleased(str(root))  # a folder that holds no build or download gets no page about nothing
        layout.refuse_incomplete(root)
    page = render_report(root)
    target = root / layout.REPORT
    with atomic_write(target) as handle:
        handle.write(page.encode())
    return target


def render_report(root: Path) -> str:
    """The page's HTML for a build (``manifest.json`` present) or a download."""
    manifest = orjson.loads((root / layout.MANIFEST).read_bytes()) if (root / layout.MANIFEST).is_file() else None
    released = [item for _, item in walk_release(root) if item is not None]
    kind = "build" if manifest else "download"
    parts = [f"<h1>CLIRMatrix {kind}: {_e(root.resolve().name)}</h1>", f"<p class=muted>{_e(str(root.resolve()))}</p>"]
    if (root / layout.CARD).is_file():
        parts.append(f"<p>The dataset card, with the method, inputs, sizes, limits, licences and how to cite: <a href='{layout.CARD}'>{layout.CARD}</a></p>")
    titles = _TitleLookup(root, manifest)
    parts += _inputs(manifest) + _languages(manifest) + _files(released) + _statistics(root) + _labels(root, released) + _samples(root, released, titles)
    body = "\n".join(parts)
    return f"<!doctype html>\n<html><head><meta charset=utf-8><title>CLIRMatrix {kind}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"


def _e(text: object) -> str:
    return html.escape(str(text))


def _table(header: Iterable[str], rows: Iterable[Iterable[object]], left: int = 1) -> str:
    head = "".join(f"<th class=l>{_e(h)}</th>" if i < left else f"<th>{_e(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td class=l>{_e(c)}</td>" if i < left else f"<td>{_e(f'{c:,}' if isinstance(c, int) else c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _inputs(manifest: dict | None) -> list[str]:
    if manifest is None:
        return ["<h2>Inputs and settings</h2><p>A download: no manifest, so no inputs or settings to show.</p>"]
    settings = manifest.get("settings", {})
    inputs = manifest.get("inputs", [])
    versions = manifest.get("versions", {})
    return [
        "<h2>Inputs and settings</h2>",
        _table(["input", "bytes", "md5"], [(i["path"], i["size"], i["md5"]) for i in inputs]),
        _table(["setting", "value"], [(k, ", ".join(v) if isinstance(v, list) else v) for k, v in sorted(settings.items())], left=2),
        "<p class=muted>" + _e(", ".join(f"{k} {v}" for k, v in sorted(versions.items()))) + "</p>",
    ]


def _languages(manifest: dict | None) -> list[str]:
    if manifest is None:
        return []
    counts = manifest.get("counts", {}).get("languages", {})
    inputs = manifest.get("input_counts", {})
    rows = []
    for lang, entry in sorted(counts.items()):
        read = inputs.get(lang, {})
        bad = read.get("rejected", {})
        rows.append((lang, read.get("records", ""), entry["docs"], entry["linked"], entry.get("queries_without_hits", ""),
                     sum(bad.values()) if bad else 0, ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))))  # fmt: skip
    wikidata = inputs.get("wikidata")
    if wikidata:
        bad = wikidata.get("rejected", {})
        rows.append(("wikidata", wikidata["records"], "", "", "", sum(bad.values()), ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))))
    dropped = manifest.get("dropped_languages", [])
    notes = manifest.get("notes", [])
    return [
        "<h2>Languages</h2>",
        _table(["lang", "records read", "documents", "linked to Wikidata", "queries without hits", "bad records", "bad, by kind"], rows),
        f"<p>Dropped (fewer than --min-docs documents): {_e(', '.join(dropped) or 'none')}.</p>" if manifest else "",
        "".join(f"<p class=muted>note: {_e(note)}</p>" for note in notes),
    ]


def _files(released: list[layout.ReleasedFile]) -> list[str]:
    per_set = Counter(item.dataset for item in released)
    return ["<h2>Released files</h2>", _table(["set", "files"], sorted(per_set.items()))]


def _statistics(root: Path) -> list[str]:
    stats = root / layout.STATS_DIR
    if not stats.is_dir():
        return ["<h2>Statistics</h2><p>No stats/ folder.</p>"]
    parts = ["<h2>Statistics (Tables 7.1-7.4)</h2>",
             "<p>Per direction and split: queries, and the mean number of documents with label &ge; 4 and &ge; 1 per query.</p>"]  # fmt: skip
    for table in sorted(stats.glob("*.tsv")):
        with open(table, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle, delimiter="\t"))
        name = table.stem
        test1 = [row for row in rows[1:] if row[2] == "test1"]
        parts.append(f"<h3>{_e(name)}</h3>")
        figures = "".join(
            f"<figure><img alt='{_e(png.stem)}' src='data:image/png;base64,{base64.b64encode(png.read_bytes()).decode()}'><figcaption>{_e(png.stem)}</figcaption></figure>"
            for png in sorted(stats.glob(f"{name}_*.png"))
        )
        parts.append(f"<div class=grid>{figures}</div>")
        parts.append(f"<details><summary>test1 rows ({len(test1):,} directions)</summary>{_table(rows[0], test1, left=3)}</details>")
    return parts


def _labels(root: Path, released: list[layout.ReleasedFile]) -> list[str]:
    parts = ["<h2>Label distributions</h2>"]
    for dataset in layout.QUERY_SETS:
        files = [item for item in released if item.dataset == dataset][:MAX_LABEL_FILES]
        counts: Counter = Counter()
        lines = 0
        for item in files:
            for record in islice(iter_queries(root / item.path), MAX_LINES):
                lines += 1
                counts.update(label for _, label in record.tgt_results)
        if not files:
            continue
        total = sum(counts.values()) or 1
        rows = [(str(label), counts[label], f"{counts[label] / total:.1%}") for label in layout.LABELS]
        parts.append(f"<h3>{_e(dataset)}</h3><p class=muted>{len(files):,} files, {lines:,} queries read (up to {MAX_LINES:,} a file)</p>")
        parts.append(_table(["label", "judgements", "share"], rows))
    return parts


class _TitleLookup:
    """Titles of target documents from a build's work folder (its catalog), when it is still there; DOCS has none."""

    def __init__(self, root: Path, manifest: dict | None) -> None:
        work = (manifest or {}).get("settings", {}).get("work") or str(root / ".work")
        self.catalog = Path(work) / "catalog" if "://" not in work else None

    def titles(self, lang: str, doc_ids: set[str]) -> dict[str, str]:
        path = self.catalog / f"{lang}.parquet" if self.catalog else None
        if path is None or not path.is_file() or not doc_ids:
            return {}
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=["page_id", "title"])
        wanted = {int(doc_id) for doc_id in doc_ids if doc_id.isdigit()}
        return {str(page_id): title for page_id, title in zip(table.column("page_id").to_pylist(), table.column("title").to_pylist()) if page_id in wanted}


def _samples(root: Path, released: list[layout.ReleasedFile], lookup: _TitleLookup) -> list[str]:
    """A few test1 queries of the directions whose target documents are smallest, with their labelled documents."""
    docs_size = {item.src: (root / item.path).stat().st_size for item in released if item.dataset == "docs"}
    candidates = [item for item in released if item.dataset == "bi139-base" and item.split == "test1" and item.tgt in docs_size]
    chosen = sorted(candidates, key=lambda item: (docs_size[item.tgt], item.src, item.tgt))[:SAMPLE_DIRECTIONS]
    parts = ["<h2>Sample queries</h2>"]
    if not chosen:
        return parts + ["<p>No BI-139 base test1 file with its DOCS here.</p>"]
    for item in chosen:
        records = list(islice(iter_queries(root / item.path), SAMPLE_QUERIES))
        wanted = {doc_id for record in records for doc_id, label in record.tgt_results[:SAMPLE_DOCS] if label > 0}
        texts = {doc_id: text for doc_id, text in iter_docs(root / layout.docs_file("docs", item.tgt)) if doc_id in wanted}
        titles = lookup.titles(item.tgt, wanted)
        parts.append(f"<h3>{_e(item.src)} &rarr; {_e(item.tgt)}</h3>")
        for record in records:
            docs = "".join(
                f"<div class=doc><span class=label>{label}</span> <b>{_e(titles.get(doc_id, doc_id))}</b>: "
                f"{_e(' '.join(texts.get(doc_id, '(not in DOCS)').split()[:FIRST_WORDS])[:FIRST_CHARS])} &hellip;</div>"
                for doc_id, label in record.tgt_results[:SAMPLE_DOCS]
                if label > 0
            )
            parts.append(f"<div class=query><b>{_e(record.src_query)}</b> <span class=muted>({_e(record.src_id)})</span>{docs}</div>")
    return parts
