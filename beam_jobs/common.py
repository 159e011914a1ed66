"""What every clirmatrix Beam job shares: runner options, units of work, stage folders, reports.

A stage writes into its own folder. The driver plans every unit of work of the
stage (a dump file, a language's shard, a block of queries, a direction) before
the pipeline starts; each unit writes its output and its report to ``_reports/``
beside it, both atomically and always the same for the same inputs, so a retried
unit leaves exactly what a first try would. The driver reads the reports after
the run, and only then writes ``_SUCCESS.json``: a folder without that marker is an
unfinished stage, whatever files it holds.

A stage whose units depend on other units runs its steps in one pipeline with a
``Barrier`` between them: every unit flows through every step, each step runs its
own units and passes the others on, and the barrier holds them until the step
before has finished them all. Units keep their own key across a barrier, so they
stay spread over the workers (the runner never sees fewer elements than units).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

# The stage-folder conventions live in the library; the jobs reach them through here.
from clirmatrix.beam_jobs.runners import LOCAL_RUNNER
from clirmatrix.pipeline.io.reports import finish_stage, is_complete, read_named_reports, read_reports, require_complete, start_stage, write_report
from clirmatrix.schemas.contracts import Report, Unit

__all__ = [
    "Barrier", "RunUnits", "StorageDoFn", "default_workers", "finish_stage", "is_complete", "names_runner", "pipeline_options", "read_named_reports", "read_reports",
    "require_complete", "run_stage", "start_stage", "use_filesystem_options", "write_report",
]


def pipeline_options(beam_args: Sequence[str] = (), workers: int = 1) -> PipelineOptions:
    """Beam options; without ``--runner`` the in-process FnApiRunner with ``workers`` processes.

    The FnApiRunner (as ``runners.LocalRunner``, whose workers start quietly) is
    named explicitly so a local run never depends on the network (Beam's
    DirectRunner first tries to download the Prism runner). Any
    standard Beam flag (``--runner=FlinkRunner``, ``--runner=DataflowRunner
    --project ...``) passes through unchanged.
    """
    args = list(beam_args)
    if not names_runner(args):
        workers = max(1, workers)
        args += [f"--runner={LOCAL_RUNNER}", f"--direct_num_workers={workers}"]
        args.append("--direct_running_mode=" + ("multi_processing" if workers > 1 else "in_memory"))
    if not any(arg.startswith("--default_sdk_harness_log_level") for arg in args):
        # Worker processes log their start-up at INFO; keep our progress lines only.
        args += ["--default_sdk_harness_log_level=WARNING", '--sdk_harness_log_level_overrides={"clirmatrix":"INFO"}']
    return PipelineOptions(args)


def use_filesystem_options(beam_args: Sequence[str]) -> None:
    """Give Beam's FileSystems the flags that configure them (``--s3_endpoint_url``, credentials, ...).

    A pipeline does this itself on the driver. The driver's file work before the
    first pipeline needs it done here, and so do the workers: the FnApiRunner's
    worker processes start with no options at all, and Dask runs DoFns in processes
    of its own.
    """
    FileSystems.set_options(PipelineOptions(list(beam_args)))


def names_runner(beam_args: Sequence[str]) -> bool:
    """Whether the Beam flags choose a runner (else the local FnApiRunner runs the job)."""
    return any(arg == "--runner" or arg.startswith("--runner=") for arg in beam_args)


def default_workers(units: int) -> int:
    """As many worker processes as there are units of work, up to the number of cores."""
    return max(1, min(units, os.cpu_count() or 1))


class StorageDoFn(beam.DoFn):
    """A DoFn that reads and writes files: its worker's FileSystems get the job's storage flags first."""

    def __init__(self, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.beam_args = list(beam_args)

    def setup(self) -> None:
        use_filesystem_options(self.beam_args)


class RunUnits(StorageDoFn):
    """Runs the units of one step (``run(unit)`` returns the unit's report) and passes the others on.

    Each finished unit writes its report and leaves its name in the output. No
    state outlives a call: whatever a unit needs it reads from its inputs.
    """

    def __init__(self, step: str, run: Callable[[Unit], Report], report_dir: str, beam_args: Sequence[str] = ()) -> None:
        super().__init__(beam_args)
        self.step = step
        self.run = run
        self.report_dir = report_dir

    def process(self, element):
        if not isinstance(element, Unit) or element.step != self.step:
            yield element
            return
        started, cpu = time.perf_counter(), time.process_time()
        report = self.run(element)
        # What the unit cost, for the benchmarks' models (the process runs one unit at a time).
        cost = {"unit_seconds": round(time.perf_counter() - started, 3), "unit_cpu_seconds": round(time.process_time() - cpu, 3)}
        write_report(self.report_dir, element.name, replace(report, **cost).to_dict())
        yield element.name


def _keyed(element) -> tuple[str, object]:
    return (element.name if isinstance(element, Unit) else str(element)), element


class Barrier(beam.PTransform):
    """Holds every element until the step before has processed all of them (a GroupByKey by unit)."""

    def expand(self, pcoll):
        return pcoll | "ByUnit" >> beam.Map(_keyed) | "AllDone" >> beam.GroupByKey() | "Release" >> beam.FlatMapTuple(lambda _, values: values)


def run_stage(label: str, units: Sequence, transform: beam.PTransform, beam_args: Sequence[str] = (), workers: int | None = None) -> None:
    """One Beam pipeline: ``units`` (usually ``Unit``s) -> ``transform`` (a stage's composite), on the configured runner."""
    if not units:
        return
    options = pipeline_options(beam_args, workers or default_workers(len(units)))
    pipeline = beam.Pipeline(options=options)
    _ = pipeline | f"{label}Units" >> beam.Create(list(units), reshuffle=len(units) > 1) | label >> transform
    result = pipeline.run()
    try:
        result.wait_until_finish()
    finally:
        client = getattr(result, "client", None)  # Beam's Dask runner leaves its client open
        if client is not None:
            client.close()
