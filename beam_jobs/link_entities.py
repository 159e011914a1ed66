"""``docs`` + ``sitelinks`` -> ``entity_docs`` Parquet: which document of each language is which entity.

One unit of work per language (PIPELINE.md section 3): read that language's
document ids, titles and dump entities, and its sitelinks, match them by
normalised title in Arrow, and write ``{out}/{lang}.parquet``.

Example::

    python -m clirmatrix.beam_jobs.link_entities --docs work/docs --sitelinks work/sitelinks --output work/entity_docs
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator, Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.linking import link_language
from clirmatrix.pipeline.parquet_io import read_table, write_table
from clirmatrix.schemas import DOCS, ENTITY_DOCS, SITELINKS

LOG = logging.getLogger("clirmatrix")


class LinkLanguage(beam.DoFn):
    """One language -> its ``entity_docs`` file and link counts."""

    def __init__(self, docs_dir: str, sitelinks_dir: str, out_dir: str) -> None:
        self.docs_dir = docs_dir
        self.sitelinks_dir = sitelinks_dir
        self.out_dir = out_dir

    def process(self, lang: str) -> Iterator[str]:
        docs = read_table(fileio.list_files(fileio.join(self.docs_dir, lang, "*.parquet")), DOCS, ["doc_id", "title", "entity"])
        links = read_table(fileio.list_files(fileio.join(self.sitelinks_dir, lang, "*.parquet")), SITELINKS, ["entity", "title"])
        table, stats = link_language(lang, docs, links)
        write_table(fileio.join(self.out_dir, f"{lang}.parquet"), table, ENTITY_DOCS)
        common.write_report(self.out_dir, lang, stats.to_dict())
        yield lang


def run_link_entities(docs_dir: str, sitelinks_dir: str, out_dir: str, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Link every language the docs stage kept; returns the per-language counts."""
    docs_summary = common.require_complete(docs_dir, "docs")
    sitelinks_summary = common.require_complete(sitelinks_dir, "sitelinks")
    langs = sorted(docs_summary["languages"])
    missing = [lang for lang in langs if lang not in sitelinks_summary["languages"]]
    if missing:
        raise ValueError(f"the sitelinks in {sitelinks_dir} were extracted without {', '.join(missing)}; rerun that stage with these languages")
    common.start_stage(out_dir)
    options = common.pipeline_options(beam_args, workers or common.default_workers(len(langs)))
    with beam.Pipeline(options=options) as pipeline:
        _ = (
            pipeline
            | "Languages" >> beam.Create(langs, reshuffle=len(langs) > 1)
            | "LinkLanguage" >> beam.ParDo(LinkLanguage(docs_dir, sitelinks_dir, out_dir))
        )
    stats = {report["lang"]: report for report in common.read_reports(out_dir)}
    totals = {key: sum(s[key] for s in stats.values()) for key in ("docs", "linked_wikidata", "linked_dump", "unlinked", "disagreements")}
    summary = {"stage": "entity_docs", "languages": dict(sorted(stats.items())), "totals": totals}
    common.finish_stage(out_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", required=True)
    parser.add_argument("--sitelinks", required=True)
    parser.add_argument("--output", required=True)
    args, beam_args = parser.parse_known_args(argv)
    return run_link_entities(args.docs, args.sitelinks, args.output, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
