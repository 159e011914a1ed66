"""``docs`` + ``sitelinks`` -> ``entity_docs`` and ``catalog`` Parquet: which document of each language is which entity.

One unit of work per language (docs/method.md section 3): stream that language's
titles and dump entities and its sitelinks, match them by normalised title
(``clirmatrix.pipeline.method.linking``), and write ``entity_docs/{lang}.parquet`` (the
links, in position order) and ``catalog/{lang}.parquet`` (page id, entity and title
of every document by position, which every later stage reads by ranges).

Example::

    python -m clirmatrix.beam_jobs.link_entities --work work/
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from clirmatrix.beam_jobs.stages import BuildRun, Stage, Step, run_job, sum_fields
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.linking import write_links
from clirmatrix.schemas.contracts import LanguageTask, LinkReport, LinkSummary, Summary, Unit

_TOTALS = ("docs", "linked_wikidata", "linked_dump", "unlinked", "disagreements", "page_props", "page_props_disagreements")


class LinkEntities(Stage):
    """Each language's documents matched to Wikidata entities: its links and catalog, and its link counts as a report."""

    name = "link_entities"
    folder = Folders.entity_docs
    reads = (Folders.docs, Folders.sitelinks)
    after = ("extract_docs", "extract_sitelinks")
    steps = (Step("link", "LinkLanguage", "a language's titles and entities matched to its sitelinks"),)

    @classmethod
    def from_run(cls, run: BuildRun) -> LinkEntities:
        return cls(run.work_root)

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        langs = sorted(upstream[Folders.docs].languages)
        missing = [lang for lang in langs if lang not in upstream[Folders.sitelinks].languages]
        if missing:
            raise ValueError(f"the sitelinks in {self.work.stage('sitelinks')} were extracted without {', '.join(missing)}; rerun that stage with these languages")
        fileio.remove_tree(self.work.stage(Folders.catalog))
        return [Unit("link", lang, LanguageTask(lang)) for lang in langs]

    def run_unit(self, unit: Unit) -> LinkReport:
        """A language's links, with its page_props entities when the sitelinks stage read them."""
        lang = unit.task.lang
        return write_links(self.work_root, lang, self.work.page_props_dir(lang))

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, LinkReport]) -> LinkSummary:
        languages = {report.lang: report for report in sorted(reports.values(), key=lambda report: report.lang)}
        return LinkSummary(stage=self.name, languages=languages, totals=sum_fields(languages.values(), _TOTALS))


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(LinkEntities, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
