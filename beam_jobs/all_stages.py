"""The build's stages, in the order they run: the one list the build, ``extract`` and the command line derive from.

Each stage declares what it reads of ``BuildConfig`` and what enters its fingerprint
on its own class (``stages.BaseStage``); this module only orders them::

    extract_docs -> extract_sitelinks -> link_entities -> retrieve -> label -> propagate -> write_release -> stats
"""

from __future__ import annotations

from clirmatrix.beam_jobs.extract_docs import ExtractDocs
from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
from clirmatrix.beam_jobs.label import Label
from clirmatrix.beam_jobs.link_entities import LinkEntities
from clirmatrix.beam_jobs.propagate import Propagate
from clirmatrix.beam_jobs.retrieve import Retrieve
from clirmatrix.beam_jobs.stages import BaseStage, declared_settings
from clirmatrix.beam_jobs.stats import Stats
from clirmatrix.beam_jobs.write_release import WriteRelease

EXTRACTION: tuple[type[BaseStage], ...] = (ExtractDocs, ExtractSitelinks, LinkEntities)  # `clirmatrix extract`: dumps -> Parquet
STAGES: tuple[type[BaseStage], ...] = (*EXTRACTION, Retrieve, Label, Propagate, WriteRelease, Stats)
STAGE_NAMES: tuple[str, ...] = tuple(stage.name for stage in STAGES)  # as the build's records, summaries and timings name them


def extraction_settings() -> tuple[str, ...]:
    """The settings ``extract`` takes: those its stages declare, and ``--workers``."""
    return declared_settings(EXTRACTION)
