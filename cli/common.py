"""What the command modules share: the console they print to, and the helpers of their flags.

No command lives here; each command module imports this one and nothing else of ``cli/``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import fields

import click
from rich.console import Console

# Piped or logged, rich would wrap every table to 80 columns; wide enough for our tables instead.
console = Console(stderr=True, width=None if sys.stderr.isatty() or "COLUMNS" in os.environ else 160)


def comma_list_or_none(value: str | None) -> list[str] | None:
    """A comma-separated flag as a list, None for an empty or absent one (``plan --langs``, ``download --split``)."""
    from clirmatrix.pipeline.config import comma_list

    return comma_list(value) or None if value else None


def config_options(names: tuple[str, ...] = (), helps: dict[str, str] | None = None, config_file: bool = True):
    """One flag per ``BuildConfig`` field (or per field in ``names``), help and type read from the field: the one source.

    Flags default to None, so a config file's value (or the dataclass default) fills
    what the command line leaves out; ``BuildConfig.check`` judges the result. ``helps``
    rewords a flag for a command that uses it differently (``extract --out``).
    """
    from clirmatrix.pipeline.config import BuildConfig, flag_name

    def decorate(command):
        for setting in reversed([s for s in fields(BuildConfig) if not names or s.name in names]):
            rule, default = setting.metadata, setting.default
            shown = ",".join(default) if isinstance(default, tuple) else default
            required = " [required: as a flag or in the config file]" if config_file else " [required]"
            help_text = (helps or {}).get(setting.name, rule["help"]) + (required if rule.get("required") else "")
            if "[default:" not in help_text and not rule.get("required") and shown not in ("", ()):
                help_text += f" [default: {shown}]"
            kind = click.Choice(rule["choices"]) if "choices" in rule else None if isinstance(default, (str, tuple)) else type(default)
            flag = flag_name(setting.name)
            if isinstance(default, bool):
                command = click.option(flag, setting.name, is_flag=True, default=None, help=help_text)(command)
            else:
                command = click.option(flag, setting.name, type=kind, default=None, help=help_text)(command)
        return command

    return decorate
