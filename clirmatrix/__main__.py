"""The ``clirmatrix`` command (and ``python -m clirmatrix``), loaded so that a Ctrl-C at any moment ends it quietly.

Loading the command line (click, rich, the library's settings) takes a few tenths of a
second; a Ctrl-C then would print Python's traceback of an import. Until
``clirmatrix.cli.main`` takes Ctrl-C over, one ends the process with the line it
prints for a command stopped later (``interrupted``) and exit status 130.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_loading(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


_interrupted_while_loading.replaceable = True  # clirmatrix.cli.main installs its own handler over this one


def main() -> None:
    """Load the command line with Ctrl-C quiet, then run it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_loading)
    from clirmatrix.cli import main as run

    sys.exit(run())


if __name__ == "__main__":
    main()
