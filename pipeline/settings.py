"""What a build's settings share, below every part that takes one: their defaults, the error of a bad value, how a list is written.

``config`` (``BuildConfig``: every setting, its help and its check) sits above the
method and the engines, whose choices it names; the stages' own settings
(``SplitSettings``, ``RetrievalSettings``, ...) sit below it and take their defaults
and their error from here, so each default is written once and nothing imports upward.
"""

from __future__ import annotations

from collections.abc import Sequence

from clirmatrix.pipeline.errors import InvalidInputError

# The defaults every command and job takes from here (the paper's where it gives one).
DEFAULT_SEED = 13
DEFAULT_MIN_DOCS = 10_000  # dissertation 7.2.2
DEFAULT_TRAIN_SIZE = 10_000  # base train queries per direction (7.2.4)
DEFAULT_EVAL_SIZE = 1_000  # dev, test1, test2 queries per direction (7.2.4)
DEFAULT_K = 100  # documents kept per query (the paper's top 100)
DEFAULT_SPLIT_MB = 128  # compressed MB per unit of a dump read in ranges: ~2 core-minutes of English XML (docs/scale.md)
DEFAULT_SPLIT_BYTES = DEFAULT_SPLIT_MB << 20
DEFAULT_THREADS = 1  # search threads per worker: a worker is one core (docs/scale.md)


class ConfigError(InvalidInputError):
    """A config file or flag value that cannot be used; the message names the flag (and the file, for a file's value)."""

    def __init__(self, message: str, setting: str = "") -> None:
        super().__init__(message)
        self.setting = setting  # the BuildConfig field at fault, when one is


def comma_list(value: str | Sequence[str]) -> list[str]:
    """Items of a comma-separated string (or of a list of strings), stripped, empty ones dropped."""
    items = value.split(",") if isinstance(value, str) else value
    return [item.strip() for item in items if item.strip()]
