"""``labels`` + ``entity_docs`` -> ``propagated`` Parquet: labels carried into every other language (PIPELINE.md section 6).

Two Beam pipelines. First, per language, the entity of every document by
position (``propagated/_entities/{lang}.parquet``), so later units read a small
column instead of every language's ids. Then one unit per query language X:
read X's labels once and write ``propagated/{X}/{Y}.parquet`` for every other
language Y.

Example::

    python -m clirmatrix.beam_jobs.propagate --work work/ --langs en,de,fr
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.beam_jobs import common, stages
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.corpus import WorkDirs, load_corpus
from clirmatrix.pipeline.parquet_io import read_table, write_table
from clirmatrix.pipeline.propagation import Labelled, propagate
from clirmatrix.schemas import LABELS, PROPAGATED

LOG = logging.getLogger("clirmatrix")
ENTITIES = pa.schema([pa.field("entity", pa.string(), nullable=True)], metadata={"clirmatrix.artefact": "entities_by_position"})


def entities_path(stage_dir: str, lang: str) -> str:
    return fileio.join(stage_dir, "_entities", f"{lang}.parquet")


def read_entities(stage_dir: str, lang: str) -> pa.Array:
    """The entity (or null) of each document of ``lang``, by position."""
    return read_table([entities_path(stage_dir, lang)], ENTITIES).column("entity").combine_chunks()


class EntitiesByPosition(beam.DoFn):
    def __init__(self, work_root: str, out_dir: str) -> None:
        self.work_root = work_root
        self.out_dir = out_dir

    def process(self, lang: str) -> Iterator[str]:
        corpus = load_corpus(WorkDirs(self.work_root), lang, with_titles=False)
        write_table(entities_path(self.out_dir, lang), pa.table([corpus.entities], schema=ENTITIES), ENTITIES)
        yield lang


class PropagateLanguage(beam.DoFn):
    """Query language X -> one Parquet file per target language, and per-direction counts."""

    def __init__(self, work_root: str, out_dir: str, langs: Sequence[str]) -> None:
        self.work_root = work_root
        self.out_dir = out_dir
        self.langs = list(langs)

    def process(self, src: str) -> Iterator[str]:
        work = WorkDirs(self.work_root)
        table = read_table([fileio.join(work.stage("labels"), f"{src}.parquet")], LABELS)
        labels = Labelled(*(table.column(name).to_numpy() for name in ("query", "doc", "label")))
        src_entities = read_entities(self.out_dir, src)
        directions = {}
        for tgt in self.langs:
            if tgt == src:
                continue
            x_to_y = pc.index_in(src_entities, value_set=read_entities(self.out_dir, tgt), skip_nulls=True)
            carried = propagate(labels, x_to_y.fill_null(-1).to_numpy().astype(np.int32))
            write_table(
                fileio.join(self.out_dir, src, f"{tgt}.parquet"),
                pa.table([pa.array(carried.query), pa.array(carried.doc), pa.array(carried.label)], schema=PROPAGATED),
                PROPAGATED,
            )
            directions[tgt] = {"queries": int(len(np.unique(carried.query))), "labels": int(len(carried.label))}
        common.write_report(self.out_dir, src, {"lang": src, "queries": int(len(np.unique(labels.query))), "directions": directions})
        LOG.info("%s: labels carried into %d languages", src, len(directions))
        yield src


def run_propagate(work_root: str, langs: Sequence[str], beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Carry every language's labels into every other language."""
    work = WorkDirs(work_root)
    common.require_complete(work.stage("labels"), "labels")
    out_dir = work.stage("propagated")
    common.start_stage(out_dir)
    langs = sorted(langs)
    stages.run_units("EntitiesByPosition", langs, EntitiesByPosition(work_root, out_dir), beam_args, workers)
    stages.run_units("PropagateLanguage", langs, PropagateLanguage(work_root, out_dir, langs), beam_args, workers)
    return stages.finish_languages(out_dir, "propagated")


def run(argv: Sequence[str] | None = None) -> dict:
    parser = stages.job_parser(__doc__, "The build's work folder (with labels/ and entity_docs/).", with_langs=True)
    args, beam_args = parser.parse_known_args(argv)
    return run_propagate(args.work, args.langs, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
