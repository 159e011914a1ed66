"""Which Beam runner runs the stages, named shortly, and what it needs to run our code.

``--runner dask`` (or ``flink``, ``dataflow``, ``spark``, ``portable``, ``direct``)
is expanded to the class Beam knows; without ``--runner`` every stage runs on the
in-process ``FnApiRunner`` (``common.pipeline_options``). What each runner gets on
top of the user's flags:

- ``dask``: ``--dask_partition_size=1`` unless a partition size or count is given.
  Beam's Dask runner otherwise puts up to 128 units of work in one partition, and a
  partition runs on one worker: every unit of a stage would run on one machine.
- a runner whose workers run in containers (Dataflow, and Flink, Spark or a portable
  job server with the default Docker environment): the project itself, as a wheel
  built from this source tree and staged with ``--extra_package``, so the workers
  install it (with numba, PyStemmer, isal and the rest from PyPI) before running a
  unit. Nothing is added when the user already says how to get the code there
  (``--setup_file``, ``--extra_package(s)``, ``--sdk_container_image``), nor for
  environments that run in the driver's or the worker machine's own Python
  (``--environment_type=LOOPBACK``, ``PROCESS``, ``EXTERNAL``), nor for Dask, whose
  workers are started by the user from an environment with clirmatrix installed.

The flags are resolved once per command, on the driver (``resolve``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from apache_beam.portability import python_urns
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from clirmatrix.beam_jobs import local_worker
from clirmatrix.pipeline.config import ConfigError

LOG = logging.getLogger("clirmatrix")

DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
LOCAL_RUNNER = "clirmatrix.beam_jobs.runners.LocalRunner"
RUNNERS = {
    "direct": "DirectRunner",
    "local": LOCAL_RUNNER,
    "fnapi": "FnApiRunner",
    "dask": DASK_RUNNER,
    "flink": "FlinkRunner",
    "spark": "SparkRunner",
    "dataflow": "DataflowRunner",
    "portable": "PortableRunner",
}
# Runners whose SDK workers run in containers that know nothing of this project.
_CONTAINER_RUNNERS = {"DataflowRunner", "FlinkRunner", "SparkRunner", "PortableRunner"}
# Environments that run our code in a Python the user set up (no container to ship to).
_OWN_PYTHON_ENVIRONMENTS = {"LOOPBACK", "PROCESS", "EXTERNAL", "BEAM_PYTHON"}
_BEAM_WORKER = b"-m apache_beam.runners.worker.sdk_worker_main"
_SHIPPING_FLAGS = ("--setup_file", "--extra_package", "--extra_packages", "--sdk_container_image", "--worker_harness_container_image")


def flag_value(beam_args: Sequence[str], name: str) -> str | None:
    """The value of ``--name=value`` or ``--name value`` in Beam flags (the last one given)."""
    value = None
    args = list(beam_args)
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def _without(beam_args: Sequence[str], name: str) -> list[str]:
    """The flags without any ``--name`` (in either form)."""
    kept: list[str] = []
    skip = False
    for arg in beam_args:
        if skip:
            skip = False
        elif arg == name:
            skip = True
        elif not arg.startswith(name + "="):
            kept.append(arg)
    return kept


def runner_class(beam_args: Sequence[str]) -> str | None:
    """The runner the flags choose, its short name expanded; None when they choose none."""
    named = flag_value(beam_args, "--runner")
    if named is None:
        return None
    return RUNNERS.get(named.lower(), named)


def is_dask(beam_args: Sequence[str]) -> bool:
    return runner_class(beam_args) in (DASK_RUNNER, "DaskRunner")


def needs_shipping(beam_args: Sequence[str]) -> bool:
    """Whether the runner's workers are containers that must be given the project."""
    runner = runner_class(beam_args)
    if runner is None or runner.rsplit(".", 1)[-1] not in _CONTAINER_RUNNERS:
        return False
    if any(flag_value(beam_args, flag) is not None for flag in _SHIPPING_FLAGS):
        return False
    environment = (flag_value(beam_args, "--environment_type") or "DOCKER").upper()
    return runner.endswith("DataflowRunner") or environment not in _OWN_PYTHON_ENVIRONMENTS


def resolve(beam_args: Sequence[str]) -> list[str]:
    """The user's Beam flags with the runner's short name expanded and what it needs added."""
    args = list(beam_args)
    runner = runner_class(args)
    if runner is None:
        return args
    args = _without(args, "--runner") + [f"--runner={runner}"]
    if is_dask(args) and flag_value(args, "--dask_partition_size") is None and flag_value(args, "--dask_npartitions") is None:
        args.append("--dask_partition_size=1")
    if needs_shipping(args):
        package = build_wheel()
        LOG.info("staging %s for the %s workers", package, runner)
        args.append(f"--extra_package={package}")
    return args


def source_tree() -> Path | None:
    """The folder holding this project's ``pyproject.toml``, when clirmatrix runs from its source."""
    from clirmatrix import pipeline

    root = Path(pipeline.__path__[0]).resolve().parent
    return root if (root / "pyproject.toml").is_file() and (root / "beam_jobs").is_dir() else None


# What the wheel is built from: the package folders (pyproject.toml's package-dir) and the files its metadata names.
_PACKAGE_FOLDERS = ("clirmatrix", "cli", "pipeline", "beam_jobs", "schemas", "models")
_PROJECT_FILES = ("pyproject.toml", "README.md")


def _tree_fingerprint(root: Path) -> str:
    """A hash of the project's files (names, sizes, modification times): the wheel's cache key."""
    digest = hashlib.sha256()
    for folder in _PACKAGE_FOLDERS:
        for path in sorted(p for p in (root / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    for name in _PROJECT_FILES:
        stat = (root / name).stat()
        digest.update(f"{name}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def build_wheel(cache_dir: str | None = None) -> str:
    """A wheel of this project (pure Python), built with pip once per source state and cached."""
    root = source_tree()
    if root is None:
        raise ConfigError(
            "this runner's workers need the clirmatrix package, and no source tree was found to build it from; "
            "pass --extra_package=clirmatrix-X.whl, --setup_file=PATH/pyproject.toml or --sdk_container_image=IMAGE"
        )
    folder = Path(cache_dir or tempfile.gettempdir()) / f"clirmatrix-wheel-{_tree_fingerprint(root)}"
    wheels = sorted(folder.glob("clirmatrix-*.whl"))
    if wheels:
        return str(wheels[-1])
    folder.mkdir(parents=True, exist_ok=True)
    # Built from a clean copy of the package folders: setuptools reuses the tree's own build/,
    # whose modules of an earlier layout would otherwise ship with the new ones.
    with tempfile.TemporaryDirectory(prefix="clirmatrix-source-") as clean:
        for name in _PROJECT_FILES:
            shutil.copy2(root / name, Path(clean) / name)
        for package in _PACKAGE_FOLDERS:
            shutil.copytree(root / package, Path(clean) / package, ignore=shutil.ignore_patterns("__pycache__"))
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(folder), clean]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    wheels = sorted(folder.glob("clirmatrix-*.whl"))
    if done.returncode or not wheels:
        raise ConfigError(f"building the clirmatrix wheel for the workers failed ({' '.join(command)}):\n{done.stderr.strip()[-2000:]}")
    return str(wheels[-1])


class LocalRunner(FnApiRunner):
    """Beam's in-process FnApiRunner, whose worker processes start through ``local_worker`` (quiet start-up).

    With ``--direct_running_mode=multi_processing`` the FnApiRunner starts each
    worker as ``python -m apache_beam.runners.worker.sdk_worker_main``; this runner
    starts the same worker behind ``clirmatrix.beam_jobs.local_worker``, which
    sets up logging first and ends the worker when this process (the driver, whose
    pid it is given) has ended. Beam runs the command through a shell; ``exec``
    (POSIX) makes the worker the driver's own child, with no shell left between
    them to outlive either. Where the driver ends its workers on a SIGINT
    (``interrupt_reaches_workers``), they start with SIGINT ignored, so that a
    terminal's Ctrl-C leaves them to the driver instead of printing a traceback
    each (a worker Beam ends itself for a stuck bundle, ``terminate_sdk_harness``,
    then ends by its SIGKILL a minute later instead of its SIGINT). In memory (one
    worker: the units run in the driver), a Ctrl-C raised inside a unit comes out of
    Beam as a RuntimeError of its step (``KeyboardInterrupt [while running ...]``),
    logged with its traceback: it leaves as the KeyboardInterrupt it is, and the log
    record is left out (``_worker_end_filter``). Everything else is Beam's runner unchanged.
    """

    def run_via_runner_api(self, pipeline_proto, options):  # noqa: ANN001, ANN201 (Beam's signature)
        with interrupt_reaches_workers() as ends_workers:
            for environment in pipeline_proto.components.environments.values():
                if environment.urn == python_urns.SUBPROCESS_SDK and environment.payload.endswith(_BEAM_WORKER):
                    environment.payload = local_worker_command(ignore_interrupt=ends_workers).encode()
            try:
                return super().run_via_runner_api(pipeline_proto, options)
            except Exception as error:
                if _Ended.workers and is_interrupt(error):
                    raise KeyboardInterrupt from None
                raise


# Set on a SIGINT handler that raises KeyboardInterrupt as Python's own does (the command line's):
# ``interrupt_reaches_workers`` ends the workers, then hands the signal on to it.
RAISES_KEYBOARD_INTERRUPT = "raises_keyboard_interrupt"
_ENDS_WORKERS = "clirmatrix_ends_workers"  # set on the handler of ``interrupt_reaches_workers`` and on what it installs
_WORKER_EXIT_REPORT = "Worker subprocess exited with return code"  # what Beam's thread raises when a worker it started ends


class _Ended:
    """Whether the driver has ended its workers on an interrupt (until the next run): their end is then no news."""

    workers = False


@contextlib.contextmanager
def interrupt_reaches_workers() -> Iterator[bool]:
    """While a local pipeline runs, a SIGINT ends its worker processes, then interrupts the driver; yields whether it does.

    Interrupted, Beam's FnApiRunner closes its workers' channels and waits for
    the worker processes to exit, which they never do: the build would hang, its
    workers idle. So the driver ends them itself (SIGTERM, Linux, where ``/proc``
    lists them), whether the SIGINT came from a terminal (the whole process group)
    or for the driver alone (``kill -INT``, a process manager), and is then
    interrupted as Python would be (or by the command line's handler, marked
    ``RAISES_KEYBOARD_INTERRUPT``, whose second interrupt ends the process at
    once). A further SIGINT kills what is left of the workers (SIGKILL) before it
    is handed on the same way.

    The driver's Beam threads then report the workers' end: the gRPC streams to
    them broken (``grpc.RpcError``, in threads and in Beam's ERROR records) and
    each worker's exit (a RuntimeError in the thread that started it). Once the
    driver has ended its workers, and until the next run starts, these reports are
    left out (``threading.excepthook``, a filter on Beam's loggers): the interrupt
    is the news.

    Nothing changes where the program has a SIGINT handler of its own, outside
    the main thread, or where the workers cannot be listed (no ``/proc``); the
    context then yields False, and a terminal's Ctrl-C reaches the workers as before.
    Nested, the outer context does the work.
    """
    current = signal.getsignal(signal.SIGINT)
    if getattr(current, _ENDS_WORKERS, False):
        yield True
        return
    chained = current is signal.default_int_handler or getattr(current, RAISES_KEYBOARD_INTERRUPT, False)
    if threading.current_thread() is not threading.main_thread() or not chained or not local_worker.FINDS_WORKERS:
        yield False
        return
    interrupts, done = 0, threading.Event()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1
        first = interrupts == 1  # read once: a second SIGINT may run its handler in the middle of this one
        _Ended.workers = True  # before the first worker ends
        _leave_out_worker_ends()
        _signal_workers(signal.SIGTERM if first else signal.SIGKILL)
        if first:
            # Beam's own threads may start a worker yet (or have one between its shell and exec): ended as they appear.
            threading.Thread(target=_end_later_workers, args=(done,), name="clirmatrix-end-workers", daemon=True).start()
        current(signum, frame)

    setattr(interrupt, _ENDS_WORKERS, True)
    _Ended.workers = False
    signal.signal(signal.SIGINT, interrupt)
    try:
        yield True
    finally:
        done.set()
        signal.signal(signal.SIGINT, current)


def _signal_workers(signum: int) -> None:
    for pid in local_worker.local_workers(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def _end_later_workers(done: threading.Event, interval: float = 0.05) -> None:
    """After an interrupt, until Beam has cleaned up (``done``) and once more then: SIGTERM to any worker of this driver."""
    while not done.wait(interval):
        _signal_workers(signal.SIGTERM)
    _signal_workers(signal.SIGTERM)


def is_worker_end(error: BaseException | None) -> bool:
    """Whether an exception (or one it was raised from or during) reports a local worker's end: a broken gRPC stream, Beam's exit report."""
    import grpc

    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, grpc.RpcError) or (isinstance(error, RuntimeError) and str(error).startswith(_WORKER_EXIT_REPORT)):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def _leave_out_worker_ends() -> None:
    """Install, once, what drops the reports of the workers' end while ``_Ended.workers``: a thread hook and a filter on Beam's loggers."""
    previous = threading.excepthook
    if not getattr(previous, _ENDS_WORKERS, False):

        def excepthook(args: threading.ExceptHookArgs) -> None:
            if not (_Ended.workers and is_worker_end(args.exc_value)):
                previous(args)

        setattr(excepthook, _ENDS_WORKERS, True)
        threading.excepthook = excepthook
    for name, logger in [("apache_beam", logging.getLogger("apache_beam")), *list(logging.root.manager.loggerDict.items())]:
        if name.startswith("apache_beam") and isinstance(logger, logging.Logger) and _worker_end_filter not in logger.filters:
            logger.addFilter(_worker_end_filter)


def is_interrupt(error: BaseException | None) -> bool:
    """Whether an exception is, or was raised from or during, a KeyboardInterrupt (Beam re-raises one in a unit as a RuntimeError)."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, KeyboardInterrupt) or (isinstance(error, RuntimeError) and str(error).startswith("KeyboardInterrupt [while running")):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def _worker_end_filter(record: logging.LogRecord) -> bool:
    """False (leave out) for a Beam record that reports, with its exception, a local worker's end or the Ctrl-C, once the driver was interrupted."""
    return not (_Ended.workers and record.exc_info is not None and (is_worker_end(record.exc_info[1]) or is_interrupt(record.exc_info[1])))


def local_worker_command(ignore_interrupt: bool = False) -> str:
    """The shell command that starts one local worker process of this driver (with SIGINT ignored: the driver ends it)."""
    command = f"-m {local_worker.MODULE} {local_worker.DRIVER_FLAG}={os.getpid()}"
    if os.name == "posix":
        # An ignored signal stays ignored through exec, and Python then leaves it so from its first instruction.
        return ("trap '' INT; " if ignore_interrupt else "") + f"exec {shlex.quote(sys.executable)} {command}"
    return f"{sys.executable} {command}"
