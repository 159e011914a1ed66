"""``docs`` + ``sitelinks`` -> ``entity_docs`` and ``catalog`` Parquet: which document of each language is which entity.

One unit of work per language (docs/method.md section 3): stream that language's
titles and dump entities and its sitelinks, match them by normalised title
(``clirmatrix.pipeline.linking``), and write ``entity_docs/{lang}.parquet`` (the
links, in position order) and ``catalog/{lang}.parquet`` (page id, entity and title
of every document by position, which every later stage reads by ranges).

Example::

    python -m clirmatrix.beam_jobs.link_entities --work work/
"""

from __future__ import annotations

import argparse
import functools
import logging
from collections.abc import Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.linking import write_links
from clirmatrix.pipeline.units import Unit

LOG = logging.getLogger("clirmatrix")
LINK = "link"


class LinkEntities(beam.PTransform):
    """Language units -> each language's entity links and catalog, and its link counts as a report."""

    def __init__(self, work_root: str, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.work_root = work_root
        self.beam_args = list(beam_args)

    def expand(self, units):
        report_dir = WorkDirs(self.work_root).stage("entity_docs")
        return units | "LinkLanguage" >> beam.ParDo(common.RunUnits(LINK, functools.partial(link_language_unit, self.work_root), report_dir, self.beam_args))


def link_language_unit(work_root: str, lang: str) -> dict:
    """A language's unit: its links, with its page_props entities when the sitelinks stage read them."""
    return write_links(work_root, lang, WorkDirs(work_root).page_props_dir(lang))


def run_link_entities(work_root: str, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Link every language the docs stage kept; returns the per-language counts."""
    work = WorkDirs(work_root)
    docs_summary = common.require_complete(work.stage("docs"), "docs")
    sitelinks_summary = common.require_complete(work.stage("sitelinks"), "sitelinks")
    langs = sorted(docs_summary["languages"])
    missing = [lang for lang in langs if lang not in sitelinks_summary["languages"]]
    if missing:
        raise ValueError(f"the sitelinks in {work.stage('sitelinks')} were extracted without {', '.join(missing)}; rerun that stage with these languages")
    out_dir = work.stage("entity_docs")
    common.start_stage(out_dir)
    fileio.remove_tree(work.stage("catalog"))
    units = [Unit(LINK, lang, (lang,)) for lang in langs]
    common.run_stage("LinkEntities", units, LinkEntities(work_root, beam_args), beam_args, workers)
    stats = {report["lang"]: report for report in common.read_reports(out_dir)}
    totals = {key: sum(s[key] for s in stats.values()) for key in ("docs", "linked_wikidata", "linked_dump", "unlinked", "disagreements", "page_props", "page_props_disagreements")}
    summary = {"stage": "entity_docs", "languages": dict(sorted(stats.items())), "totals": totals}
    common.finish_stage(out_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="The build's work folder (with docs/ and sitelinks/).")
    args, beam_args = parser.parse_known_args(argv)
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    return run_link_entities(fileio.absolute(args.work), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
