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
from dataclasses import dataclass, replace

from clirmatrix.beam_jobs.extract_docs import ExtractDocs, docs_settings
from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
from clirmatrix.beam_jobs.link_entities import LinkEntities
from clirmatrix.beam_jobs.stages import config_parser, doc_summary, parse_config
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.localio import check_folder_path
from clirmatrix.pipeline.method.dumps import NoDumpsError, find_dumps
from clirmatrix.schemas.contracts import DocsSummary, LinkSummary, SitelinksSummary

FLAGS = ("dumps", "langs", "skip_missing", "source", "links", "split_mb", "min_docs", "max_bad_fraction", "workers")


@dataclass
class ExtractResult:
    """The three stage summaries and anything worth telling the user."""

    docs: DocsSummary
    sitelinks: SitelinksSummary
    entity_docs: LinkSummary
    notes: list[str]


def run_extract(config: BuildConfig, work_dir: str, beam_args: Sequence[str] = (), work_flag: str = "--work") -> ExtractResult:
    """Run docs, sitelinks and linking for every language found (or ``config.langs``) into ``work_dir`` (given as ``work_flag``);
    ``beam_args`` resolved (``stages.beam_flags``)."""
    check_folder_path(work_dir, work_flag)  # before anything is read
    config, work_dir = replace(config, dumps=fileio.absolute(config.dumps)), fileio.absolute(work_dir)
    found, sources = find_dumps(config.dumps, config.langs, config.source, config.skip_missing, config.links)
    workers = config.workers or None
    docs = ExtractDocs(work_dir, found.docs, docs_settings(config)).run(beam_args, workers)
    kept = sorted(docs.languages)
    if not kept:
        raise NoDumpsError(f"every language has fewer than --min-docs {config.min_docs:,} documents; nothing to link")
    sitelinks = ExtractSitelinks(work_dir, sources, kept, config.max_bad_fraction, config.split_bytes).run(beam_args, workers)
    entity_docs = LinkEntities(work_dir).run(beam_args, workers)
    return ExtractResult(docs, sitelinks, entity_docs, found.notes)


def run(argv: Sequence[str] | None = None) -> ExtractResult:
    parser = config_parser(doc_summary(__doc__), FLAGS, lambda p: p.add_argument("--work", required=True, help="Where the Parquet goes."))
    args, config, beam_args = parse_config(parser, argv, FLAGS, needs=("dumps",))
    return run_extract(config, args.work, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
