"""Resumable build stages: a finished stage is recorded with a fingerprint and skipped on rerun.

A stage's fingerprint hashes its settings and the fingerprints of the stages it
reads, so changing a setting reruns that stage and everything downstream, and
nothing else. Records live in ``WORK/_stages/{name}.json``; a stage whose
record is missing or differs is run again from scratch (its folder is cleared
first), which is also how a killed run resumes.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable, Iterable, Sequence

from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.config import comma_list

LOG = logging.getLogger("clirmatrix")
STAGES_DIR = "_stages"


class StageLog:
    """Which stages of a build finished, with what fingerprint, and their summaries."""

    def __init__(self, work_dir: str) -> None:
        self.dir = fileio.join(work_dir, STAGES_DIR)
        self.skipped: list[str] = []  # stages this run found up to date

    def _path(self, name: str) -> str:
        return fileio.join(self.dir, f"{name}.json")

    def finished(self, name: str, stage_key: str) -> dict | None:
        """The stage's summary if it finished with this fingerprint, else None."""
        path = self._path(name)
        if not fileio.exists(path):
            return None
        record = fileio.read_json(path)
        return record["summary"] if record.get("fingerprint") == stage_key else None

    def run(self, name: str, stage_key: str, body: Callable[[], dict], force: bool = False) -> dict:
        """Skip the stage when already finished with ``stage_key`` (unless ``force``); otherwise run ``body`` and record it."""
        summary = None if force else self.finished(name, stage_key)
        if summary is not None:
            LOG.info("%s: up to date, skipped", name)
            self.skipped.append(name)
            return summary
        LOG.info("%s: running", name)
        started = time.perf_counter()
        summary = body()
        seconds = round(time.perf_counter() - started, 3)
        fileio.write_json(self._path(name), {"stage": name, "fingerprint": stage_key, "seconds": seconds, "summary": summary})
        LOG.info("%s: done in %.1f s", name, seconds)
        return summary

    def seconds(self, name: str) -> float | None:
        path = self._path(name)
        return fileio.read_json(path).get("seconds") if fileio.exists(path) else None


def sum_reports(reports: Iterable[dict], keys: Sequence[str]) -> dict[str, int]:
    reports = list(reports)
    return {key: sum(report.get(key, 0) for report in reports) for key in keys}


def job_parser(doc: str, work_help: str, with_langs: bool = False) -> argparse.ArgumentParser:
    """The flags every build job run on its own shares: ``--work`` (and ``--langs``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--work", required=True, help=work_help)
    if with_langs:
        parser.add_argument("--langs", required=True, type=comma_list)
    return parser
