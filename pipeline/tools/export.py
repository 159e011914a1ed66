"""``clirmatrix export``: a build or download in the layouts other tools read (Hugging Face datasets, BEIR, Anserini/pyserini).

One unit per released file (``ExportTask``): it streams the file's records into its
outputs in batches, so memory stays bounded whatever the build's size, and writes each
output atomically. A finished unit leaves a report in ``DIR/.export/`` naming its
source's size and mtime, so a rerun skips it while the source is unchanged: an export
resumes where it stopped. ``EXPORT_IN_PROGRESS`` marks the folder until the last step
(a README with the configs for ``hf``, the queries files and shared corpora for ``beir``)
is written. The units run on Beam's runners like a build's (``beam_jobs/export.py``);
this module is the library that does the work, and never imports Beam.

Layouts (docs/exporting.md):

- ``hf``: ``{set}/{src}_{tgt}/{split}.parquet`` (``src_id``, ``src_query``, ``tgt_results``:
  a list of ``{doc_id, label}``) and ``docs/{lang}.parquet`` (``doc_id``, ``text``); config
  names ``{set}_{src}_{tgt}`` (splits ``train``, ``dev``, ``test1``, ``test2``) and
  ``docs_{lang}`` (split ``corpus``), declared in ``README.md``'s front matter.
- ``beir``: ``{set}/{src}_{tgt}/`` with ``corpus.jsonl``, ``queries.jsonl`` and
  ``qrels/{split}.tsv``; each document language's corpus is written once under
  ``corpora/{lang}/`` and hard-linked into its directions.
- ``pyserini``: ``collections/{lang}/docs.jsonl`` (``id``, ``contents``),
  ``topics/{set}/{src}_{tgt}.{split}.tsv`` and ``qrels/{set}/{src}_{tgt}.{split}.txt``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from clirmatrix.pipeline.errors import InvalidInputError, MissingInputError
from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.io.reports import report_path
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.card import CARD, render_card
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, walk_release
from clirmatrix.pipeline.tools.release_columns import docs_columns, docs_json_lines, query_columns
from clirmatrix.schemas.contracts import ExportReport, ExportTask

FORMATS = layout.EXPORT_FORMATS
IN_PROGRESS = "EXPORT_IN_PROGRESS"
REPORTS = ".export"  # the units' reports (under its ``_reports/``): hidden, so no reader of the export sees them
SPLIT_ORDER = {split: number for number, split in enumerate(layout.SPLITS)}  # a direction's splits as the release lists them
BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore\n"
HF_QUERIES = pa.schema([("src_id", pa.string()), ("src_query", pa.string()),
                        ("tgt_results", pa.list_(pa.struct([("doc_id", pa.string()), ("label", pa.int8())])))])
HF_DOCS = pa.schema([("doc_id", pa.string()), ("text", pa.string())])


@dataclass(frozen=True)
class ExportPlan:
    """What an export writes: its units, and what they were chosen from."""

    root: str
    fmt: str
    docs_set: str  # docs or docs-full: the documents the corpora are made of
    tasks: list[ExportTask]


def direction(src: str, tgt: str) -> str:
    """A direction's folder name: ``en_de`` (as the release's index keys it; no language code holds ``_``)."""
    return f"{src}_{tgt}"


def hf_config(dataset: str, src: str, tgt: str | None = None) -> str:
    """The stable config name of a direction (``bi139-base_en_de``) or a language's documents (``docs_de``)."""
    return f"{dataset}_{src}_{tgt}" if tgt else f"{dataset}_{src}"


def _pick(values: Sequence[str] | None, found: set[str], what: str) -> set[str]:
    if not values:
        return found
    missing = sorted(set(values) - found)
    if missing:
        raise InvalidInputError(f"{what}: {', '.join(missing)} not in this folder (it has {', '.join(sorted(found)) or 'none'})")
    return set(values)


def plan_export(root: str | os.PathLike, fmt: str, sets: Sequence[str] | None = None, src: Sequence[str] | None = None,
                tgt: Sequence[str] | None = None, splits: Sequence[str] | None = None, full_docs: bool = False) -> ExportPlan:
    """The units of an export of ``root`` (a finished build or a download): one per released file it reads."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"--format {fmt}: choose from {', '.join(FORMATS)}")
    root = os.fspath(root)
    layout.refuse_incomplete(root)
    released = [item for _, item in walk_release(root) if item is not None]
    queries = [item for item in released if item.dataset in layout.QUERY_SETS]
    if not queries:
        raise MissingInputError(f"{root} holds no released query files (BI-139/, MULTI-8/): nothing to export")
    chosen_sets = _pick(sets, {item.dataset for item in queries}, "--sets")
    chosen_src = _pick(src, {item.src for item in queries}, "--src")
    chosen_tgt = _pick(tgt, {item.tgt for item in queries}, "--tgt")
    chosen_splits = _pick(splits, {item.split for item in queries}, "--splits")
    docs_set = "docs-full" if full_docs else "docs"
    wanted = sorted((item for item in queries if item.dataset in chosen_sets and item.src in chosen_src and item.tgt in chosen_tgt
                     and item.split in chosen_splits), key=lambda item: item.path)
    if not wanted:
        raise InvalidInputError("no released query file matches --sets, --src, --tgt and --splits together")
    doc_langs = sorted({item.tgt for item in wanted})
    have_docs = {item.src for item in released if item.dataset == docs_set}
    missing = [lang for lang in doc_langs if lang not in have_docs]
    if missing:
        raise MissingInputError(f"{root} lacks {', '.join(layout.docs_file(docs_set, lang) for lang in missing)}, which the export's corpora are made of "
                                f"(clirmatrix download {docs_set} --tgt {','.join(missing)})")
    tasks = [_docs_task(fmt, docs_set, lang) for lang in doc_langs] + [_queries_task(fmt, item) for item in wanted]
    return ExportPlan(root, fmt, docs_set, tasks)


def _docs_task(fmt: str, docs_set: str, lang: str) -> ExportTask:
    source = layout.docs_file(docs_set, lang)
    output = {"hf": f"docs/{lang}.parquet", "beir": f"corpora/{lang}/corpus.jsonl", "pyserini": f"collections/{lang}/docs.jsonl"}[fmt]
    return ExportTask(fmt, "docs", source, (output,))


def _queries_task(fmt: str, item: layout.ReleasedFile) -> ExportTask:
    pair = direction(item.src, item.tgt)
    if fmt == "hf":
        outputs = (f"{item.dataset}/{pair}/{item.split}.parquet",)
    elif fmt == "beir":
        outputs = (f"{item.dataset}/{pair}/qrels/{item.split}.tsv", f"{item.dataset}/{pair}/.queries.{item.split}.jsonl")
    else:
        outputs = (f"topics/{item.dataset}/{pair}.{item.split}.tsv", f"qrels/{item.dataset}/{pair}.{item.split}.txt")
    return ExportTask(fmt, "queries", item.path, outputs)


def unit_name(task: ExportTask) -> str:
    """The unit's report name: its first output, flattened."""
    return task.outputs[0].replace("/", "__")


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def is_done(root: str | os.PathLike, to: str | os.PathLike, task: ExportTask) -> bool:
    """Whether a unit finished on an earlier run from the same source without an error, and its outputs are all there."""
    report = Path(report_path(str(Path(to) / REPORTS), unit_name(task)))
    try:
        done = orjson.loads(report.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return not done.get("error") and done.get("source_stamp") == _stamp(Path(root) / task.source) and all((Path(to) / output).is_file() for output in task.outputs)


def export_unit(root: str | os.PathLike, to: str | os.PathLike, task: ExportTask) -> ExportReport:
    """Write one unit's outputs from its released file, streamed a block of ~8 MB of text at a time (``release_columns``)."""
    source = Path(root) / task.source
    stamp = _stamp(source)
    targets = [Path(to) / output for output in task.outputs]
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:  # a damaged record or stream: reported (the atomic writes leave nothing), and the driver refuses the export
        if task.kind == "docs":
            return ExportReport(source=task.source, source_stamp=stamp, rows=_write_docs(task.fmt, source, targets[0]))
        rows, qrels, cleaned = {"hf": _write_hf_queries, "beir": _write_beir_queries, "pyserini": _write_pyserini_queries}[task.fmt](source, targets)
    except MalformedRecordError as error:
        return ExportReport(source=task.source, source_stamp=stamp, rows=0, error=str(error))
    return ExportReport(source=task.source, source_stamp=stamp, rows=rows, qrels=qrels, cleaned=cleaned)


class DamagedReleaseError(InvalidInputError):
    """Released files that could not be read to their end: the export stays marked unfinished."""

    @classmethod
    def of(cls, errors: Sequence[str], to: str | os.PathLike) -> DamagedReleaseError:
        """The error for the units' messages (each naming its file): one line for one file, else a line per file."""
        if len(errors) == 1:
            return cls(f"{errors[0]}; nothing was exported from this released file and {to} stays unfinished (fetch it again, then rerun)")
        return cls("released files that cannot be read to their end; nothing was exported from them and "
                   f"{to} stays unfinished (fetch them again, then rerun):\n" + "\n".join("    " + line for line in errors))


def _parquet(target: Path, schema: pa.Schema, batches: Iterator[dict], dictionary: bool = True) -> int:
    """Rows written to a zstd Parquet file, one row group a batch, atomically (an empty file still has the schema).

    A damaged source ends the batches with an error: the writer is closed then, inside the
    atomic write that removes its file, not later by the garbage collector over a closed
    handle (which printed pyarrow's ``Exception ignored in ParquetWriter.__del__`` traceback).
    """
    rows = 0
    with atomic_write(target) as handle, pq.ParquetWriter(handle, schema, compression="zstd", use_dictionary=dictionary) as writer:
        for columns in batches:
            table = pa.table(columns, schema=schema)
            writer.write_table(table)
            rows += table.num_rows
    return rows


def _write_docs(fmt: str, source: Path, target: Path) -> int:
    if fmt == "hf":
        # no dictionary: every id and text is distinct, and trying one cost a quarter of the writing
        return _parquet(target, HF_DOCS, ({"doc_id": doc_ids, "text": texts} for doc_ids, texts in docs_columns(source)), dictionary=False)
    rows = 0
    with atomic_write(target) as out:
        for lines, count in docs_json_lines(source, beir_doc if fmt == "beir" else pyserini_doc):
            out.write(lines)
            rows += count
    return rows


def beir_doc(doc_id: str, text: str) -> dict:
    """A line of a BEIR ``corpus.jsonl``."""
    return {"_id": doc_id, "title": "", "text": text}


def pyserini_doc(doc_id: str, text: str) -> dict:
    """A line of an Anserini ``JsonCollection``."""
    return {"id": doc_id, "contents": text}


def _write_hf_queries(source: Path, targets: list[Path]) -> tuple[int, int, int]:
    qrels = 0
    pair_type = HF_QUERIES.field("tgt_results").type

    def columns() -> Iterator[dict]:
        nonlocal qrels
        for block in query_columns(source):
            pairs = pa.StructArray.from_arrays([block.doc_ids, block.labels_int8()], fields=list(pair_type.value_type))
            qrels += block.pairs
            yield {"src_id": block.src_ids, "src_query": block.src_queries,
                   "tgt_results": pa.ListArray.from_arrays(pa.array(block.offsets, pa.int32()), pairs, type=pair_type)}

    return _parquet(targets[0], HF_QUERIES, columns()), qrels, 0


def _write_beir_queries(source: Path, targets: list[Path]) -> tuple[int, int, int]:
    rows = qrels = 0
    with atomic_write(targets[0]) as qrels_out, atomic_write(targets[1]) as queries_out:
        qrels_out.write(BEIR_QRELS_HEADER.encode())
        for block in query_columns(source):
            queries_out.write(b"".join(orjson.dumps({"_id": src_id, "text": query}) + b"\n" for src_id, query in zip(block.src_ids.to_pylist(), block.src_queries.to_pylist())))
            qrels_out.write(block.pair_lines(b"\t", b"\t"))
            rows, qrels = rows + len(block.src_ids), qrels + block.pairs
    return rows, qrels, 0


def _one_line(text: str) -> tuple[str, bool]:
    cleaned = " ".join(text.replace("\t", " ").splitlines()) if ("\t" in text or "\n" in text or "\r" in text) else text
    return cleaned, cleaned != text


def _write_pyserini_queries(source: Path, targets: list[Path]) -> tuple[int, int, int]:
    rows = qrels = cleaned = 0
    with atomic_write(targets[0]) as topics_out, atomic_write(targets[1]) as qrels_out:
        for block in query_columns(source):
            topics = []
            for src_id, query in zip(block.src_ids.to_pylist(), block.src_queries.to_pylist()):
                title, changed = _one_line(query)
                cleaned += changed
                topics.append(f"{src_id}\t{title}\n")
            topics_out.write("".join(topics).encode())
            qrels_out.write(block.pair_lines(b" 0 ", b" "))
            rows, qrels = rows + len(block.src_ids), qrels + block.pairs
    return rows, qrels, cleaned


# --- the last step, on the driver ----------------------------------------------------------------


_TEMPORARY = re.compile(r"\..+\.tmp-[0-9a-f]{12}")  # localio.atomic_path's names: a file being written


def begin_export(to: str | os.PathLike) -> None:
    """Mark the folder unfinished before the first unit writes into it; remove what an interrupted run was writing.

    A worker process ended by Ctrl-C leaves its file half-written under a hidden temporary
    name (never under the file's own); no two exports write one folder at once, so here
    none is being written any more.
    """
    Path(to).mkdir(parents=True, exist_ok=True)
    (Path(to) / IN_PROGRESS).write_text("clirmatrix export is writing this folder; it is unfinished until this file is gone\n")
    for path in Path(to).rglob(".*.tmp-*"):
        if _TEMPORARY.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)


def interrupted_note(to: str | os.PathLike) -> str:
    """What an export stopped by Ctrl-C left, for the command's one line after ``interrupted``."""
    if (Path(to) / IN_PROGRESS).exists():
        return f"{to} stays marked unfinished ({IN_PROGRESS}); the files exported so far are kept; run the same command again to resume"
    if Path(to).is_dir() and any(Path(to).iterdir()):
        return f"the export into {to} had finished"
    return f"nothing was written into {to}; run the same command again"


def finish_export(plan: ExportPlan, to: str | os.PathLike) -> list[str]:
    """What needs every unit: BEIR's queries files and corpus links, the hf README; then the mark goes. Returns the paths written."""
    to = Path(to)
    written: list[str] = []
    queries = [task for task in plan.tasks if task.kind == "queries"]
    if plan.fmt == "beir":
        folders: dict[str, list[str]] = {}
        for task in queries:
            folders.setdefault(str(Path(task.outputs[0]).parent.parent), []).append(task.outputs[1])
        for folder, parts in sorted(folders.items()):
            parts.sort(key=lambda part: SPLIT_ORDER[part.rsplit(".", 2)[1]])
            with atomic_write(to / folder / "queries.jsonl") as out:
                for part in parts:
                    out.write((to / part).read_bytes())
            lang = folder.rsplit("_", 1)[1]
            _link(to / "corpora" / lang / "corpus.jsonl", to / folder / "corpus.jsonl")
            written += [f"{folder}/queries.jsonl", f"{folder}/corpus.jsonl"]
    if plan.fmt == "hf":
        configs = hf_configs(plan)
        shown = ", ".join(f"`{config['config_name']}`" for config in configs[:3])
        names = (f"{len(configs):,} configs: one per direction, `{{set}}_{{src}}_{{tgt}}` (e.g. {shown}), with the splits it was exported with, "
                 f"and one per document language, `{plan.docs_set}_{{lang}}`, with the split `corpus`. "
                 '`datasets.load_dataset(FOLDER, "bi139-base_en_de", split="test1")` reads one, offline; the front matter lists them all.')
        with atomic_write(to / CARD) as out:
            out.write(render_card(plan.root, configs, names).encode())
        written.append(CARD)
    (to / IN_PROGRESS).unlink(missing_ok=True)
    return written


def hf_configs(plan: ExportPlan) -> list[dict]:
    """Every config of an hf export with its splits' files, directions first, as the README's front matter lists them."""
    directions: dict[str, dict[str, str]] = {}
    docs: list[dict] = []
    for task in plan.tasks:
        output = task.outputs[0]
        if task.kind == "docs":
            docs.append({"config_name": hf_config(plan.docs_set, Path(output).stem), "data_files": {"corpus": output}})
            continue
        dataset, pair, name = output.split("/")
        src, tgt = pair.split("_", 1)
        directions.setdefault(hf_config(dataset, src, tgt), {})[name.removesuffix(".parquet")] = output
    return [{"config_name": name, "data_files": dict(sorted(files.items(), key=lambda kv: SPLIT_ORDER[kv[0]]))} for name, files in sorted(directions.items())] + docs


def _link(source: Path, target: Path) -> None:
    """``target`` made the same file as ``source`` (a hard link: no copy, and it survives moving the folder)."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:  # a file system without hard links: a relative symlink
        target.symlink_to(os.path.relpath(source, target.parent))
