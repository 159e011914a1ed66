"""The one line between a user's mistake and a bug in our code.

Every error that something the user gave can cause (a flag, a file, a dump, a
server, a folder that is not a finished build) derives from ``InputError``: the
command line shows it as one message and exits 2. Anything else is a bug of ours
and keeps its traceback, so it can be reported and fixed.
"""

from __future__ import annotations


class InputError(Exception):
    """Something the user gave is wrong, missing or unreachable."""


class InvalidInputError(InputError, ValueError):
    """A value, a setting or a record that cannot be used as given."""


class MissingInputError(InputError, FileNotFoundError):
    """A file or folder the command needs is not there."""


def add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)``: what a stopped command kept, which the command line prints after ``interrupted``.

    Python 3.10 has no ``add_note`` (nor shows notes in tracebacks): there the note goes
    into ``__notes__`` alone, which is what the command line reads.
    """
    if hasattr(error, "add_note"):
        error.add_note(note)
    else:
        error.__notes__ = [*getattr(error, "__notes__", []), note]
