"""Link sources -> ``sitelinks`` Parquet (entity, lang, title) and page entities (doc_id, entity).

One step of ``clirmatrix.pipeline.extraction.links``: a unit per links input, a range of
a bz2 Wikidata JSON dump, or a wiki's ``page_props``. The Wikidata-wide source
(``--links``, docs/method.md section 3), the ``wb_items_per_site`` SQL dump or the JSON
dump, becomes sitelinks of the selected languages in
``sitelinks/{lang}/{NNNNN}-{dump name}.parquet``; each wiki's ``page_props`` dump becomes
``sitelinks/_page_props/{lang}/{NNNNN}-{dump name}.parquet``: which item each page id is.

Example::

    python -m clirmatrix.beam_jobs.extract_sitelinks --dumps dumps/ --work work/ --links wikidata-json --langs en,de,zh
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from importlib import metadata

from clirmatrix.beam_jobs import common
from clirmatrix.beam_jobs.stages import BuildRun, Stage, Step, run_job
from clirmatrix.pipeline.config import DEFAULT_SPLIT_BYTES
from clirmatrix.pipeline.extraction import links
from clirmatrix.pipeline.extraction.links import READ, LinkUnit
from clirmatrix.pipeline.io.badinput import DEFAULT_MAX_BAD_FRACTION
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.dumps import LinkInputs
from clirmatrix.schemas.contracts import LinksFileReport, SitelinksSummary, Summary, Unit


class ExtractSitelinks(Stage):
    """Link sources -> each selected language's sitelinks and page entities, every record counted."""

    name = "extract_sitelinks"
    folder = Folders.sitelinks
    config_fields = ("dumps", "langs", "source", "skip_missing", "links", "max_bad_fraction", "split_mb")
    steps = (Step(READ, "ReadLinksFile", "a links file or range: the selected languages' sitelinks, or a wiki's page entities"),)

    def __init__(
        self, work_root: str, sources: LinkInputs, langs: Sequence[str] = (), max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION,
        split_bytes: int = DEFAULT_SPLIT_BYTES, prefilter: bool = True,
    ) -> None:  # fmt: skip
        super().__init__(work_root)
        self.sources = sources
        self.langs = tuple(sorted(langs))  # none: the languages the docs stage kept
        self.max_bad_fraction = max_bad_fraction
        self.split_bytes = split_bytes
        self.prefilter = prefilter

    @classmethod
    def from_run(cls, run: BuildRun) -> ExtractSitelinks:
        # The languages: those the docs stage kept in this run, else --langs, else those of its finished folder.
        return cls(run.work_root, run.links(), run.langs, run.config.max_bad_fraction, run.config.split_bytes)

    @classmethod
    def check(cls, run: BuildRun) -> None:
        """The link sources found (a missing Wikidata dump refused), before anything runs."""
        run.links()

    def fingerprint_inputs(self, run: BuildRun) -> dict:
        """The files read (names under ``--dumps``, sizes, times), the source found, the languages selected, this clirmatrix's version."""
        return {"clirmatrix": metadata.version("clirmatrix"), "links": self.sources.mode, "inputs": run.link_inputs(), "langs": list(self.langs)}

    def upstream(self) -> dict[str, Summary]:
        return {} if self.langs else {Folders.docs: common.require_complete(self.work.stage(Folders.docs), Folders.docs)}

    def selected(self, upstream: dict[str, Summary]) -> list[str]:
        return list(self.langs) or sorted(upstream[Folders.docs].languages)

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        return [Unit(READ, unit.name, unit) for unit in links.link_units(self.sources, self.selected(upstream), self.split_bytes)]

    def run_unit(self, unit: Unit) -> LinksFileReport:
        match unit.task:
            case LinkUnit():
                return links.extract_links(self.stage_dir, unit.task, self.prefilter)
        raise TypeError(f"{self.name} has no step for {unit.task!r}")

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, LinksFileReport]) -> SitelinksSummary:
        """Raises ``TooManyBadRecords`` past the limit, and ``DamagedInputError`` for a JSON dump cut short."""
        return links.summarise(list(reports.values()), self.sources, self.selected(upstream), self.max_bad_fraction, self.name)


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(ExtractSitelinks, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
