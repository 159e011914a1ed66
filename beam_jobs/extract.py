"""The extraction job: dumps folder -> ``docs``, ``sitelinks`` and ``entity_docs`` Parquet.

Runs the three stages in order (each a Beam pipeline): documents per language,
Wikidata sitelinks for the languages that kept enough documents, then the
entity links. Output layout under ``WORK``::

    docs/{lang}/{NNNNN}-{dump}.parquet        sitelinks/{lang}/{NNNNN}-{dump}.parquet
    entity_docs/{lang}.parquet                each stage: _reports/, _SUCCESS.json

Example::

    python -m clirmatrix.beam_jobs.extract --dumps dumps/ --out work/ --min-docs 1000
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from clirmatrix.beam_jobs import common, runners
from clirmatrix.beam_jobs.extract_docs import DocsSettings, run_extract_docs
from clirmatrix.beam_jobs.extract_sitelinks import run_extract_sitelinks
from clirmatrix.beam_jobs.link_entities import run_link_entities
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.badinput import DEFAULT_MAX_BAD_FRACTION
from clirmatrix.pipeline.config import DEFAULT_MIN_DOCS, DEFAULT_SPLIT_MB, comma_list
from clirmatrix.pipeline.dumps import LINKS, SOURCES, DumpSet, LinkInputs, choose_links, discover
from clirmatrix.pipeline.errors import MissingInputError
from clirmatrix.pipeline.localio import check_folder_path

LOG = logging.getLogger("clirmatrix")


class NoDumpsError(MissingInputError):
    """The dumps folder holds nothing this job can read."""


@dataclass
class ExtractResult:
    """The three stage summaries and anything worth telling the user."""

    docs: dict
    sitelinks: dict
    entity_docs: dict
    notes: list[str]


def stage_dirs(work_dir: str) -> dict[str, str]:
    return {name: fileio.join(work_dir, name) for name in ("docs", "sitelinks", "entity_docs")}


def find_dumps(dumps_dir: str, langs: Sequence[str] | None, source: str, skip_missing: bool = False, links: str = "auto") -> tuple[DumpSet, LinkInputs]:
    """The dumps to read and the link sources; notes (e.g. a skipped language) are logged, nothing usable is an error."""
    found = discover(dumps_dir, list(langs) if langs else None, source, skip_missing)
    for note in found.notes:
        LOG.warning(note)
    if not found.docs:
        raise NoDumpsError(
            f"no Wikipedia dumps found in {dumps_dir} (expected names like enwiki-20261101-pages-articles-multistream.xml.bz2, "
            "enwiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz or enwiki-20240101-cirrussearch-content.json.gz)"
        )
    sources = choose_links(found, links, dumps_dir)
    LOG.info("entity links from %s", sources.describe())
    return found, sources


def run_extract(
    dumps_dir: str,
    work_dir: str,
    langs: Sequence[str] | None = None,
    source: str = "auto",
    settings: DocsSettings = DocsSettings(),
    beam_args: Sequence[str] = (),
    workers: int | None = None,
    skip_missing: bool = False,
    links: str = "auto",
) -> ExtractResult:
    """Run docs, sitelinks and linking for every language found (or ``langs``)."""
    check_folder_path(work_dir, "--out")  # before anything is read
    dumps_dir, work_dir, beam_args = prepare_run(dumps_dir, work_dir, beam_args)
    found, sources = find_dumps(dumps_dir, langs, source, skip_missing, links)
    dirs = stage_dirs(work_dir)
    docs = run_extract_docs(found.docs, dirs["docs"], settings, beam_args, workers)
    kept = sorted(docs["languages"])
    if not kept:
        raise NoDumpsError(f"every language has fewer than --min-docs {settings.min_docs:,} documents; nothing to link")
    sitelinks = run_extract_sitelinks(sources, kept, dirs["sitelinks"], settings.max_bad_fraction, beam_args, workers, split_bytes=settings.split_bytes)
    entity_docs = run_link_entities(work_dir, beam_args, workers)
    return ExtractResult(docs, sitelinks, entity_docs, found.notes)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dumps", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--langs", type=comma_list, default=None)
    parser.add_argument("--source", choices=SOURCES, default="auto")
    parser.add_argument("--links", choices=LINKS, default="auto")
    parser.add_argument("--split-mb", type=int, default=DEFAULT_SPLIT_MB, help="compressed MB per unit of a dump read in ranges")
    parser.add_argument("--min-docs", type=int, default=DEFAULT_MIN_DOCS)
    parser.add_argument("--max-bad-fraction", type=float, default=DEFAULT_MAX_BAD_FRACTION)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--skip-missing", action="store_true", help="languages of --langs without a dump are skipped, not an error")
    return parser


def run(argv: Sequence[str] | None = None) -> ExtractResult:
    args, beam_args = build_parser().parse_known_args(argv)
    settings = DocsSettings(min_docs=args.min_docs, max_bad_fraction=args.max_bad_fraction, split_bytes=args.split_mb << 20)
    return run_extract(args.dumps, args.out, args.langs, args.source, settings, beam_args, args.workers, args.skip_missing, args.links)


def prepare_run(dumps_dir: str, work_dir: str, beam_args: Sequence[str]) -> tuple[str, str, list[str]]:
    """Absolute paths (workers have working directories of their own) and resolved Beam flags."""
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    return fileio.absolute(dumps_dir), fileio.absolute(work_dir), beam_args


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
