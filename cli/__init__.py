"""The ``clirmatrix`` command: the click group, the one list of its commands, and ``main``, the entry point.

Each command parses its flags, calls the library, and turns the library's typed
input errors (``clirmatrix.pipeline.errors.InputError``) into a one-paragraph
message and exit 2; no traceback for bad input. So does an ``OSError`` the machine
causes about a path (a folder the user may not write, a read-only or full disk:
``environment_error``), in one line naming the path. Every other exception keeps its
traceback (it is a bug). Unknown ``--flags`` of ``extract`` go to Apache Beam (``--runner=...``).

A module per command or group, each importing only ``common`` (the console, the flag
helpers) of ``cli/``, never another command module nor this one; ``COMMANDS`` below
registers them all:

- ``sample``: sample; ``build``: extract, build; ``plan``: plan; ``dumps``: dumps list, dumps fetch;
- ``download``: download; ``export``: export; ``validate``: validate; ``irds``: irds; ``report``: report;
- ``search``: search; ``engines``: engines compare; ``compose``: compose;
- ``train``: train, evaluate, reproduce (multi8, bi139), which import torch only when they run.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import sys

import click
from rich.logging import RichHandler
from rich.markup import escape

from clirmatrix.cli import build, compose, download, dumps, engines, export, irds, plan, report, sample, search, train, validate
from clirmatrix.cli.common import console

__all__ = ["cli", "console", "environment_error", "main"]

LOG = logging.getLogger("clirmatrix")


def _setup_logging(verbose: bool) -> None:
    from clirmatrix.beam_jobs.local_worker import beam_is_quiet  # no Beam import: logging is set before Beam loads

    handler = RichHandler(console=console, show_path=False)
    if not verbose:
        handler.addFilter(beam_is_quiet)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[handler], force=True)
    LOG.setLevel(logging.DEBUG if verbose else logging.INFO)
    # Beam's own INFO lines (worker start-up, channels) drown the progress.
    logging.getLogger("apache_beam").setLevel(logging.INFO if verbose else logging.ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show debug logs, Beam's included.")
@click.version_option(package_name="clirmatrix")
def cli(verbose: bool) -> None:
    """Build CLIRMatrix-style cross-lingual retrieval datasets from Wikipedia and Wikidata dumps."""
    _setup_logging(verbose)


COMMANDS = (
    sample.sample, build.extract, build.build, search.search, validate.validate, compose.compose, engines.engines, download.download,
    report.report, irds.irds_command, plan.plan_command, train.train, train.evaluate, train.reproduce, dumps.dumps, export.export,
)
for _command in COMMANDS:
    cli.add_command(_command)


# An OSError of these about a path is the machine's, not a bug: a folder the user may not write, a read-only or full disk.
_ENVIRONMENT_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})
# The hidden names a file is written under before it gets its own (localio.atomic_write, fileio's, download's .part).
_TEMPORARY_NAME = re.compile(r"^\.(?P<name>.+?)(?:\.tmp-[0-9a-f]{12}|\.part)$")


def environment_error(error: OSError) -> str | None:
    """One line for an OSError the machine caused (``_ENVIRONMENT_ERRNOS``, about a path), naming the path: ``cannot write to
    PATH: Permission denied``, as the build's own write check says it; None for any other, a bug, which keeps its traceback.

    A hidden temporary name is shown as the file it was to become; a path that is there and
    may not be read is ``cannot read PATH``.
    """
    if error.errno not in _ENVIRONMENT_ERRNOS or error.filename is None:
        return None
    path = os.fsdecode(error.filename)
    folder, name = os.path.split(path)
    if temporary := _TEMPORARY_NAME.match(name):
        path = os.path.join(folder, temporary["name"])
    unreadable = error.errno in (errno.EACCES, errno.EPERM) and os.path.exists(path) and not os.access(path, os.R_OK)
    return f"cannot {'read' if unreadable else 'write to'} {path}: {error.strerror or os.strerror(error.errno)}"


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run a command, map library errors to messages and exit codes.

    Ctrl-C (a SIGINT to the process group, as a terminal sends it, or to this
    process alone): the first interrupts the command, which ends with exit code 130
    and one line, ``interrupted`` and the notes its KeyboardInterrupt carries (the
    build's: what it kept and how to resume), no traceback; a further one ends the
    process at once, as quietly. Run as the program (no ``argv``), an interrupted
    command ends the process itself (below). The command runs under click's
    ``make_context`` and ``invoke`` rather than ``cli.main``, whose own
    KeyboardInterrupt handling writes a blank line first (for a terminal's ``^C``:
    written here to a terminal only); what else ``cli.main`` did is kept (a closed
    output pipe: exit 1, quietly), but for shell completion, which this command does
    not offer.
    """
    import atexit
    import contextlib
    import signal
    import threading

    args = sys.argv[1:] if argv is None else list(argv)
    _setup_logging("-v" in args or "--verbose" in args)  # before the library imports Beam, which logs on import
    from clirmatrix.pipeline.errors import InputError

    interrupts, told = 0, False

    def on_interrupt(signum: int, frame: object) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            raise KeyboardInterrupt
        if not told:  # a further Ctrl-C: no unwinding left to print a traceback; local workers follow their driver
            os.write(2, b"interrupted\n")
        os._exit(130)

    on_interrupt.raises_keyboard_interrupt = True  # beam_jobs.runners.RAISES_KEYBOARD_INTERRUPT: it ends the local workers, then calls this
    before = signal.getsignal(signal.SIGINT)  # Python's, or clirmatrix.__main__'s while the command loaded: replaced; any other is the caller's
    ours = threading.current_thread() is threading.main_thread() and (before is signal.default_int_handler or getattr(before, "replaceable", False))
    if ours:
        signal.signal(signal.SIGINT, on_interrupt)
    try:
        try:
            with cli.make_context("clirmatrix", args) as ctx:
                code = cli.invoke(ctx)
        except click.exceptions.Exit as done:  # --help, --version
            code = done.exit_code
    except KeyboardInterrupt as interrupt:
        interrupts = max(interrupts, 1)
        if sys.stderr.isatty():
            console.print()  # after the terminal's ^C
        console.print(": ".join(["interrupted", *(["; ".join(interrupt.__notes__)] if getattr(interrupt, "__notes__", None) else [])]), markup=False, highlight=False, soft_wrap=True)
        told = True
        if argv is None:
            # The process itself ends here: its exit functions run (logging's flush, multiprocessing ending its daemon
            # processes), not the rest of Python's shutdown: Beam's gRPC teardown takes a while, and Python drops its
            # SIGINT handler first, so a second Ctrl-C there would kill the process (status -2, not 130).
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(130)
        return 130
    except click.exceptions.Abort:
        console.print("aborted")
        return 130
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except InputError as error:  # our typed input errors only: a bug elsewhere keeps its traceback
        console.print(f"[red]error:[/] {error}", highlight=False, soft_wrap=True)
        return 2
    except OSError as error:
        if error.errno == errno.EPIPE:  # the reader of our output went away (| head): quiet, as click's main is
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        line = environment_error(error)
        if line is None:  # any other OSError is a bug of ours: its traceback
            raise
        console.print(f"[red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
        return 2
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())

