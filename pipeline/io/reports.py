"""Stage folders and unit reports: how units tell the driver (and later units) what they did.

Each unit of work writes a small JSON report under ``{stage}/_reports/{unit}.json``
(atomically, the same bytes on a retry); the driver reads them after the stage and
only then writes ``{stage}/_SUCCESS.json``. A folder without that marker is an
unfinished stage, whatever files it holds.
"""

from __future__ import annotations

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.io import fileio
from clirmatrix.schemas.contracts import StaleSummaryError, Summary, read_summary

SUCCESS = "_SUCCESS.json"
REPORTS = "_reports"


class IncompleteStageError(InputError, RuntimeError):
    """A stage's output was asked for before that stage finished."""


def start_stage(stage_dir: str) -> None:
    """Clear a stage folder so no output of an earlier run can mix with this one."""
    fileio.remove_tree(stage_dir)
    fileio.make_dirs(stage_dir)


def report_path(stage_dir: str, name: str) -> str:
    return fileio.join(stage_dir, REPORTS, f"{name}.json")


def write_report(stage_dir: str, name: str, report: dict) -> None:
    fileio.write_json(report_path(stage_dir, name), report)


def read_report(stage_dir: str, name: str) -> dict:
    return fileio.read_json(report_path(stage_dir, name))


def read_reports(stage_dir: str) -> list[dict]:
    return [fileio.read_json(path) for path in fileio.list_files(fileio.join(stage_dir, REPORTS, "*.json"))]


def read_named_reports(stage_dir: str) -> dict[str, dict]:
    """Every report of a stage by unit name."""
    return {fileio.basename(path)[: -len(".json")]: fileio.read_json(path) for path in fileio.list_files(fileio.join(stage_dir, REPORTS, "*.json"))}


def finish_stage(stage_dir: str, summary: Summary) -> None:
    fileio.write_json(fileio.join(stage_dir, SUCCESS), summary.to_dict())


def is_complete(stage_dir: str) -> bool:
    return fileio.exists(fileio.join(stage_dir, SUCCESS))


def require_complete(stage_dir: str, what: str) -> Summary:
    """The stage's summary, or a clear error saying which stage to run first."""
    if not is_complete(stage_dir):
        raise IncompleteStageError(f"{stage_dir} holds no finished {what} (no {SUCCESS}); run that stage first")
    path = fileio.join(stage_dir, SUCCESS)
    try:
        return read_summary(fileio.read_json(path), path)
    except StaleSummaryError as error:
        raise IncompleteStageError(str(error)) from None
