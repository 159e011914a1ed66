"""What every clirmatrix Beam job shares: runner options, stage folders, per-unit reports.

A stage writes into its own folder. Each unit of work (a dump file, a language)
writes its report to ``_reports/`` beside its output; the driver reads them after
the run, and only then writes ``_SUCCESS.json``. A folder without that marker is
an unfinished stage, whatever files it holds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from apache_beam.options.pipeline_options import PipelineOptions

from clirmatrix.pipeline import fileio

SUCCESS = "_SUCCESS.json"
REPORTS = "_reports"


def pipeline_options(beam_args: Sequence[str] = (), workers: int = 1) -> PipelineOptions:
    """Beam options; without ``--runner`` the in-process FnApiRunner with ``workers`` processes.

    The FnApiRunner is named explicitly so a local run never depends on the network
    (BEAM.md: the DirectRunner first tries to download the Prism runner). Any
    standard Beam flag (``--runner=FlinkRunner``, ``--runner=DataflowRunner
    --project ...``) passes through unchanged.
    """
    args = list(beam_args)
    if not names_runner(args):
        workers = max(1, workers)
        args += ["--runner=FnApiRunner", f"--direct_num_workers={workers}"]
        args.append("--direct_running_mode=" + ("multi_processing" if workers > 1 else "in_memory"))
    if not any(arg.startswith("--default_sdk_harness_log_level") for arg in args):
        # Worker processes log their start-up at INFO; keep our progress lines only.
        args += ["--default_sdk_harness_log_level=WARNING", '--sdk_harness_log_level_overrides={"clirmatrix":"INFO"}']
    return PipelineOptions(args)


def names_runner(beam_args: Sequence[str]) -> bool:
    """Whether the Beam flags choose a runner (else the local FnApiRunner runs the job)."""
    return any(arg == "--runner" or arg.startswith("--runner=") for arg in beam_args)


def default_workers(units: int) -> int:
    """As many worker processes as there are units of work, up to the number of cores."""
    return max(1, min(units, os.cpu_count() or 1))


def start_stage(stage_dir: str) -> None:
    """Clear a stage folder so no output of an earlier run can mix with this one."""
    fileio.remove_tree(stage_dir)
    fileio.make_dirs(stage_dir)


def write_report(stage_dir: str, name: str, report: dict) -> None:
    fileio.write_json(fileio.join(stage_dir, REPORTS, f"{name}.json"), report)


def read_reports(stage_dir: str) -> list[dict]:
    return [fileio.read_json(path) for path in fileio.list_files(fileio.join(stage_dir, REPORTS, "*.json"))]


def finish_stage(stage_dir: str, summary: dict) -> None:
    fileio.write_json(fileio.join(stage_dir, SUCCESS), summary)


def is_complete(stage_dir: str) -> bool:
    return fileio.exists(fileio.join(stage_dir, SUCCESS))


class IncompleteStageError(RuntimeError):
    """A stage's output was asked for before that stage finished."""


def require_complete(stage_dir: str, what: str) -> dict:
    """The stage's summary, or a clear error saying which stage to run first."""
    if not is_complete(stage_dir):
        raise IncompleteStageError(f"{stage_dir} holds no finished {what} (no {SUCCESS}); run that stage first")
    return fileio.read_json(fileio.join(stage_dir, SUCCESS))
