"""What the command modules share: the console they print to, and the helpers of their flags.

No command lives here; each command module imports this one and nothing else of ``cli/``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable

import click
from rich.console import Console

# Piped or logged, rich would wrap every table to 80 columns; wide enough for our tables instead.
console = Console(stderr=True, width=None if sys.stderr.isatty() or "COLUMNS" in os.environ else 160)


def comma_list_or_none(value: str | None, every: str = "") -> list[str] | None:
    """A comma-separated flag as a list, None for an empty or absent one or one that says ``every`` (``plan --langs``, ``export --src all``)."""
    from clirmatrix.pipeline.settings import comma_list  # pipeline.config's is this one, behind BuildConfig and the engines

    return comma_list(value) or None if value and value != every else None


def config_options(names: tuple[str, ...] = (), helps: dict[str, str] | None = None, config_file: bool = True):
    """One flag per ``BuildConfig`` setting (or per setting in ``names``), as ``config.setting_flags`` reads them from its fields.

    Flags default to None, so a config file's value (or the dataclass default) fills
    what the command line leaves out; ``BuildConfig.check`` judges the result.
    """

    def decorate(command):
        for decls, attrs in reversed(_options(names, helps, config_file)):
            command = click.option(*decls, **attrs)(command)
        return command

    return decorate


def _options(names: Iterable[str], helps: dict[str, str] | None, config_file: bool) -> list[tuple[list[str], dict]]:
    """Each setting flag's click declaration and attributes; None by default, so an unset flag leaves the file's value."""
    from clirmatrix.pipeline.config import setting_flags

    options = []
    for flag in setting_flags(names, helps, config_file):
        if flag.switch:
            options.append(([flag.flag, flag.setting], {"is_flag": True, "default": None, "help": flag.help}))
        else:
            kind = click.Choice(flag.choices) if flag.choices else None if flag.kind is str else flag.kind
            options.append(([flag.flag, flag.setting], {"type": kind, "default": None, "help": flag.help}))
    return options


class DeclaredOptions(click.Command):
    """A command whose setting flags are named by the stages' declarations (``settings()``), read only when the command is used.

    The declarations live in the stage modules, which import Beam (a second and more);
    ``clirmatrix --help`` and the other commands never pay for that.
    """

    def __init__(self, *args, settings: Callable[[], Iterable[str]], helps: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._settings, self._helps, self._declared = settings, helps, False

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._declared:
            self._declared = True
            self.params[:0] = [click.Option(decls, **attrs) for decls, attrs in _options(tuple(self._settings()), self._helps, config_file=False)]
        return super().get_params(ctx)
