"""The extraction job: dumps folder -> ``docs``, ``sitelinks`` and ``entity_docs`` Parquet.

Runs the first three stages of the build in order (each a Beam pipeline):
documents per language, Wikidata sitelinks for the languages that kept enough
documents, then the entity links. Output layout under ``WORK``::

    docs/{lang}/{NNNNN}-{dump}.parquet        sitelinks/{lang}/{NNNNN}-{dump}.parquet
    entity_docs/{lang}.parquet                each stage: _reports/, _SUCCESS.json

Example::

    python -m clirmatrix.beam_jobs.extract --dumps dumps/ --work work/ --min-docs 1000
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from clirmatrix.beam_jobs.all_stages import EXTRACTION
from clirmatrix.beam_jobs.stages import BuildRun, doc_summary, run_declared, stages_command
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.io.localio import check_folder_path
from clirmatrix.schemas.contracts import DocsSummary, LinkSummary, SitelinksSummary


@dataclass
class ExtractResult:
    """The three stage summaries and anything worth telling the user."""

    docs: DocsSummary
    sitelinks: SitelinksSummary
    entity_docs: LinkSummary
    notes: list[str]

    @classmethod
    def of(cls, run: BuildRun) -> ExtractResult:
        return cls(*(run.summaries[stage.name] for stage in EXTRACTION), run.notes())


def run_extract(config: BuildConfig, work_dir: str, beam_args: Sequence[str] = (), work_flag: str = "--work") -> ExtractResult:
    """Run the extraction stages (``all_stages.EXTRACTION``) for every language found (or ``config.langs``) into ``work_dir``
    (given as ``work_flag``); ``beam_args`` resolved (``stages.beam_flags``)."""
    check_folder_path(work_dir, work_flag)  # before anything is read
    return ExtractResult.of(run_declared(EXTRACTION, config, work_dir, beam_args))  # a missing Wikidata dump is refused before anything runs


def run(argv: Sequence[str] | None = None) -> ExtractResult:
    return ExtractResult.of(stages_command(EXTRACTION, doc_summary(__doc__), argv, work_help="Where the Parquet goes."))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
