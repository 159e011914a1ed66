"""``propagated`` + ``labels`` + ``docs`` -> the released files (PIPELINE.md sections 7-9).

Units of work, all in one Beam pipeline:
- a BI-139 direction X -> Y: ``BI-139/full`` and ``BI-139/base`` files of the four splits;
- a MULTI-8 document language Y: its 100-candidate list per chosen entity, written
  into ``MULTI-8/{X}/{X}.{Y}.{split}.jl.gz`` for the 7 other languages;
- a language's documents: ``DOCS/{lang}.tsv.gz`` and ``DOCS-FULL/{lang}.tsv.gz``.
Each unit reports the md5 and size of what it wrote; the driver then writes
``downloads.json.gz`` from those reports.

Example::

    python -m clirmatrix.beam_jobs.write_release --work work/ --out out/ --langs en,de,fr --seed 13
"""

from __future__ import annotations

import argparse
import functools
import gzip
import logging
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

import apache_beam as beam
import numpy as np
import orjson

from clirmatrix.beam_jobs import common, stages
from clirmatrix.beam_jobs.propagate import read_entities
from clirmatrix.pipeline import fileio, layout
from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.corpus import WorkDirs, iter_doc_batches, read_docs
from clirmatrix.pipeline.fileio import atomic_create
from clirmatrix.pipeline.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.parquet_io import read_table
from clirmatrix.pipeline.propagation import group_bounds
from clirmatrix.pipeline.splits import SplitSettings, assign, choose, query_key, seeded_rng
from clirmatrix.pipeline.writers import TargetDocs, WrittenFile, docs_line, filler, gzip_lines, query_line_json
from clirmatrix.schemas import LABELS, PROPAGATED

LOG = logging.getLogger("clirmatrix")


@dataclass(frozen=True)
class ReleaseSettings:
    """Splits, MULTI-8 languages, candidates per query, and the URL prefix written into the index."""

    splits: SplitSettings = field(default_factory=SplitSettings)
    multi_langs: tuple[str, ...] = MULTI8_LANGUAGES
    candidates: int = layout.BASE_CANDIDATES
    base_url: str = ""

    def fingerprint_parts(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class QueryLanguage:
    """A query language's ids, titles and the split and seeded order of each of its queries."""

    doc_ids: list[str]
    titles: list[str]
    split_of: np.ndarray
    order: np.ndarray


@functools.lru_cache(maxsize=2)
def _query_language(work_root: str, lang: str, splits: SplitSettings) -> QueryLanguage:
    work = WorkDirs(work_root)
    docs = read_docs(work, lang, ["doc_id", "title"]).to_pydict()
    # The propagate stage already joined each position's entity; no second join here.
    entities = read_entities(work.stage("propagated"), lang).to_pylist()
    split_of, order = assign([query_key(lang, doc_id, entity) for doc_id, entity in zip(docs["doc_id"], entities)], splits)
    return QueryLanguage(docs["doc_id"], docs["title"], split_of, order)


@functools.lru_cache(maxsize=4)
def _target_docs(work_root: str, lang: str) -> TargetDocs:
    return TargetDocs(read_docs(WorkDirs(work_root), lang, ["doc_id"]).column("doc_id").to_pylist())


class ReleaseOrdered:
    """(query, doc, label) rows sorted for release: by query, then label descending, then page id."""

    def __init__(self, table, target: TargetDocs) -> None:
        query, doc, label = (table.column(name).to_numpy() for name in ("query", "doc", "label"))
        order = target.release_order(query, doc, label)
        self.query, self.doc, self.label = query[order], doc[order], label[order]
        queries, starts, ends = group_bounds(self.query)
        self.queries = queries
        self._bounds = dict(zip(queries.tolist(), zip(starts.tolist(), ends.tolist())))

    def of(self, query: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = self._bounds[query]
        return self.doc[start:end], self.label[start:end]


def candidates_json(target: TargetDocs, docs: np.ndarray, labels: np.ndarray, k: int, rng: np.random.Generator) -> bytes:
    """Exactly ``k`` results (PIPELINE.md section 7): the ``k`` best labelled, then seeded label-0 filler."""
    extra = target.by_rank(filler(docs, len(target), k - min(k, len(docs)), rng))
    return target.results_json(docs[:k].tolist() + extra.tolist(), labels[:k].tolist() + [0] * len(extra))


def write_direction(out_root: str, work_root: str, src: str, tgt: str, settings: ReleaseSettings) -> list[WrittenFile]:
    """BI-139 full and base files of X -> Y for every split."""
    queries_of = _query_language(work_root, src, settings.splits)
    target = _target_docs(work_root, tgt)
    rows = ReleaseOrdered(read_table([fileio.join(WorkDirs(work_root).stage("propagated"), src, f"{tgt}.parquet")], PROPAGATED), target)
    written = []
    for split in layout.SPLITS:
        in_split = rows.queries[queries_of.split_of[rows.queries] == layout.SPLITS.index(split)]
        base = set(choose(queries_of.split_of, queries_of.order, rows.queries, split, settings.splits.size_of(split)).tolist())
        rng = seeded_rng(settings.splits.seed, "fill", f"{src}.{tgt}.{split}")
        full_path, base_path = (fileio.join(out_root, layout.query_file(name, src, tgt, split)) for name in ("bi139-full", "bi139-base"))
        with gzip_lines(full_path) as full_file, gzip_lines(base_path) as base_file:
            for q in in_split.tolist():
                docs, labels = rows.of(q)
                src_id, title = queries_of.doc_ids[q], queries_of.titles[q]
                full_file.write(query_line_json(src_id, title, target.results_json(docs.tolist(), labels.tolist())), labels)
                if q in base:
                    line = query_line_json(src_id, title, candidates_json(target, docs, labels, settings.candidates, rng))
                    base_file.write(line, labels[: settings.candidates])
        written += [full_file.record, base_file.record]
    return written


def multi8_entities(stage_dir: str, langs: Sequence[str]) -> tuple[list[str], dict[str, dict[str, int]]]:
    """Entities with an article in every MULTI-8 language (sorted), and each one's position per language."""
    positions = {}
    for lang in langs:
        entities = read_entities(stage_dir, lang).to_pylist()
        positions[lang] = {entity: position for position, entity in enumerate(entities) if entity is not None}
    shared = set.intersection(*(set(p) for p in positions.values())) if positions else set()
    return sorted(shared), positions


def write_multi8_target(out_root: str, work_root: str, tgt: str, settings: ReleaseSettings) -> list[WrittenFile]:
    """The MULTI-8 files with ``tgt`` documents: one 100-candidate list per entity, shared by all 7 sources."""
    work = WorkDirs(work_root)
    entities, positions = multi8_entities(work.stage("propagated"), settings.multi_langs)
    split_of, order = assign([query_key("", "", entity) for entity in entities], settings.splits)
    target = _target_docs(work_root, tgt)
    rows = ReleaseOrdered(read_table([fileio.join(work.stage("labels"), f"{tgt}.parquet")], LABELS), target)
    sources = {src: read_docs(work, src, ["doc_id", "title"]).to_pydict() for src in settings.multi_langs if src != tgt}
    written = []
    for split in layout.SPLITS:
        chosen = choose(split_of, order, np.arange(len(entities)), split, settings.splits.size_of(split)).tolist()
        rng = seeded_rng(settings.splits.seed, "multi8", f"{tgt}.{split}")
        lists = [rows.of(positions[tgt][entities[index]]) for index in chosen]
        results = [candidates_json(target, docs, labels, settings.candidates, rng) for docs, labels in lists]
        for src, corpus in sources.items():
            with gzip_lines(fileio.join(out_root, layout.query_file("multi8", src, tgt, split))) as out:
                for index, result, (_, labels) in zip(chosen, results, lists):
                    position = positions[src][entities[index]]
                    line = query_line_json(corpus["doc_id"][position], corpus["title"][position], result)
                    out.write(line, labels[: settings.candidates])
            written.append(out.record)
    return written


def write_docs(out_root: str, work_root: str, lang: str) -> list[WrittenFile]:
    """``DOCS/{lang}.tsv.gz`` (truncated text) and ``DOCS-FULL/{lang}.tsv.gz``, in dump order."""
    with gzip_lines(fileio.join(out_root, layout.docs_file("docs", lang))) as short, gzip_lines(fileio.join(out_root, layout.docs_file("docs-full", lang))) as full:
        for batch in iter_doc_batches(WorkDirs(work_root), lang, ["doc_id", "text", "text_full"]):
            for doc_id, text, text_full in zip(*(batch.column(name).to_pylist() for name in ("doc_id", "text", "text_full"))):
                short.write(docs_line(doc_id, text))
                full.write(docs_line(doc_id, text_full))
    return [short.record, full.record]


class WriteUnit(beam.DoFn):
    """One unit (``("bi139", X, Y)``, ``("multi8", Y)`` or ``("docs", L)``) -> files and a report of them."""

    def __init__(self, out_root: str, work_root: str, report_dir: str, settings: ReleaseSettings) -> None:
        self.out_root = out_root
        self.work_root = work_root
        self.report_dir = report_dir
        self.settings = settings

    def process(self, unit: tuple[str, ...]) -> Iterator[str]:
        kind, *langs = unit
        if kind == "bi139":
            written = write_direction(self.out_root, self.work_root, langs[0], langs[1], self.settings)
        elif kind == "multi8":
            written = write_multi8_target(self.out_root, self.work_root, langs[0], self.settings)
        else:
            written = write_docs(self.out_root, self.work_root, langs[0])
        name = "-".join(unit)
        files = [{**asdict(record), "path": fileio.relative_to(self.out_root, record.path)} for record in written]
        common.write_report(self.report_dir, name, {"unit": name, "files": files})
        LOG.info("wrote %s (%d files)", name, len(files))
        yield name


def release_units(langs: Sequence[str], multi_langs: Sequence[str]) -> list[tuple[str, ...]]:
    """Every unit of a build: the BI-139 directions, the MULTI-8 targets (when all 8 are present), the documents."""
    langs = sorted(langs)
    units: list[tuple[str, ...]] = [("bi139", src, tgt) for src in langs for tgt in langs if src != tgt]
    if multi_langs and set(multi_langs) <= set(langs):
        units += [("multi8", tgt) for tgt in sorted(multi_langs)]
    return units + [("docs", lang) for lang in langs]


def write_index(out_root: str, files: Sequence[dict], base_url: str) -> str:
    """``downloads.json.gz``: context -> key -> url, expected_md5, cache_path, size (PIPELINE.md section 9)."""
    index: dict[str, dict[str, dict]] = {}
    for entry in files:
        released = layout.parse_path(entry["path"])
        context, key = layout.index_key(released.dataset, released.src, released.tgt, released.split)
        url = f"{base_url.rstrip('/')}/{entry['path']}" if base_url else entry["path"]
        index.setdefault(context, {})[key] = {"url": url, "expected_md5": entry["md5"], "cache_path": entry["path"], "size": entry["size"]}
    path = fileio.join(out_root, layout.INDEX)
    with atomic_create(path) as handle, gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as stream:
        stream.write(orjson.dumps(index, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
    return path


def run_write_release(
    work_root: str,
    out_root: str,
    langs: Sequence[str],
    settings: ReleaseSettings,
    beam_args: Sequence[str] = (),
    workers: int | None = None,
) -> dict:
    """Write every released file and the index; returns counts per set."""
    work = WorkDirs(work_root)
    common.require_complete(work.stage("propagated"), "propagation")
    report_dir = work.stage("release")
    common.start_stage(report_dir)
    for folder in ("BI-139", "MULTI-8", "DOCS", "DOCS-FULL", layout.INDEX):
        fileio.remove_tree(fileio.join(out_root, folder))
    units = release_units(langs, settings.multi_langs)
    stages.run_units("WriteUnit", units, WriteUnit(out_root, work_root, report_dir, settings), beam_args, workers)
    files = sorted((f for report in common.read_reports(report_dir) for f in report["files"]), key=lambda f: f["path"])
    write_index(out_root, files, settings.base_url)
    counts: dict[str, dict[str, int]] = {}
    for entry in files:
        dataset = layout.parse_path(entry["path"]).dataset
        total = counts.setdefault(dataset, {"files": 0, "lines": 0, "bytes": 0})
        total["files"] += 1
        total["lines"] += entry["lines"]
        total["bytes"] += entry["size"]
    summary = {"stage": "release", "multi8": any(unit[0] == "multi8" for unit in units), "sets": counts, "files": files}
    common.finish_stage(report_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--langs", required=True, type=comma_list)
    parser.add_argument("--seed", type=int, default=13)
    args, beam_args = parser.parse_known_args(argv)
    return run_write_release(args.work, args.out, args.langs, ReleaseSettings(splits=SplitSettings(seed=args.seed)), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
