"""``retrieval`` -> ``labels`` Parquet: Jenks labels per query, label 6 for its own article (PIPELINE.md section 5).

One unit of work per language, read a row group at a time (a query's hits are
contiguous, in rank order). A query with no hits (a title that analyses to no
tokens) still gets its own article, label 6.

Example::

    python -m clirmatrix.beam_jobs.label --work work/ --langs en,de
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from clirmatrix.beam_jobs import common, stages
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.labels import OWN_ARTICLE, query_labels
from clirmatrix.pipeline.parquet_io import ParquetSink
from clirmatrix.pipeline.propagation import group_bounds
from clirmatrix.schemas import LABELS

LOG = logging.getLogger("clirmatrix")


def label_block(query: np.ndarray, doc: np.ndarray, score: np.ndarray, first_query: int, end_query: int) -> pa.Table:
    """Labels of queries ``first_query`` .. ``end_query - 1`` from their hits (rows of one row group)."""
    queries, starts, ends = group_bounds(query)
    found = dict(zip(queries.tolist(), zip(starts.tolist(), ends.tolist())))
    out_query, out_doc, out_label = [], [], []
    for q in range(first_query, end_query):
        start, end = found.get(q, (0, 0))
        positions, labels = query_labels(doc[start:end], score[start:end], q)
        out_query.append(np.full(len(positions), q, dtype=np.int32))
        out_doc.append(positions)
        out_label.append(labels)
    if not out_query:
        return LABELS.empty_table()
    return pa.table([pa.array(np.concatenate(out_query)), pa.array(np.concatenate(out_doc)), pa.array(np.concatenate(out_label))], schema=LABELS)


class LabelLanguage(beam.DoFn):
    """One language -> ``labels/{lang}.parquet`` and label counts."""

    def __init__(self, retrieval_dir: str, out_dir: str, doc_counts: dict[str, int]) -> None:
        self.retrieval_dir = retrieval_dir
        self.out_dir = out_dir
        self.doc_counts = doc_counts

    def process(self, lang: str) -> Iterator[str]:
        n_docs = self.doc_counts[lang]
        counts = np.zeros(OWN_ARTICLE + 1, dtype=np.int64)  # per label, counted in numpy: millions of rows
        next_query = 0
        with FileSystems.open(fileio.join(self.retrieval_dir, f"{lang}.parquet"), compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            hits = pq.ParquetFile(handle)
            with ParquetSink(fileio.join(self.out_dir, f"{lang}.parquet"), LABELS) as sink:
                carry = (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
                for group in range(hits.num_row_groups):
                    table = hits.read_row_group(group)
                    rows = tuple(np.concatenate([old, table.column(name).to_numpy()]) for old, name in zip(carry, ("query", "doc", "score")))
                    if len(rows[0]) == 0:
                        continue
                    # The last query of a row group may continue in the next one: keep its rows for later.
                    last = int(rows[0][-1])
                    cut = int(np.searchsorted(rows[0], last, side="left"))
                    block = label_block(rows[0][:cut], rows[1][:cut], rows[2][:cut], next_query, last)
                    carry, next_query = tuple(column[cut:] for column in rows), last
                    counts += np.bincount(block.column("label").to_numpy(), minlength=OWN_ARTICLE + 1)
                    sink.add_table(block)
                block = label_block(*carry, next_query, n_docs)
                counts += np.bincount(block.column("label").to_numpy(), minlength=OWN_ARTICLE + 1)
                sink.add_table(block)
        report = {"lang": lang, "queries": n_docs, "labels": {str(label): int(counts[label]) for label in range(1, OWN_ARTICLE + 1)}}
        common.write_report(self.out_dir, lang, report)
        yield lang


def run_label(work_root: str, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Label every language the retrieval stage searched."""
    work = WorkDirs(work_root)
    retrieval = common.require_complete(work.stage("retrieval"), "retrieval")
    doc_counts = {lang: report["docs"] for lang, report in retrieval["languages"].items()}
    out_dir = work.stage("labels")
    common.start_stage(out_dir)
    stages.run_units("LabelLanguage", sorted(doc_counts), LabelLanguage(work.stage("retrieval"), out_dir, doc_counts), beam_args, workers)
    return stages.finish_languages(out_dir, "labels")


def run(argv: Sequence[str] | None = None) -> dict:
    args, beam_args = stages.job_parser(__doc__, "The build's work folder (with retrieval/).").parse_known_args(argv)
    return run_label(args.work, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
