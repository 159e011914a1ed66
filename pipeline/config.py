"""Settings of ``clirmatrix build``: defaults, then a TOML or YAML file, then command-line flags.

The file uses the flags' names with underscores or hyphens (``min_docs`` or
``min-docs``); an unknown key is an error naming the file, so a typo never
silently falls back to a default. Lists may be written as lists or as
comma-separated strings. Example ``build.toml``::

    dumps = "dumps/"
    out = "out/"
    langs = ["en", "de", "zh"]
    seed = 13
    min_docs = 10000
    [bm25]            # optional; the paper's values are the defaults
    k1 = 1.2
    b = 0.3
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import tomllib
import yaml

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.units import DEFAULT_BLOCK_SIZE, DEFAULT_SHARD_DOCS

ENGINES = ("embedded", "elasticsearch")
COMBINES = ("best_fields", "most_fields")
SOURCES = ("auto", "cirrus", "xml")


class ConfigError(InvalidInputError):
    """A config file or flag value that cannot be used; the message names the file or flag."""


@dataclass(frozen=True)
class BuildConfig:
    """Everything a build depends on (docs/method.md); the defaults are the paper's."""

    dumps: str = ""
    out: str = ""
    work: str = ""  # default: OUT/.work
    langs: tuple[str, ...] = ()  # default: every language found in the dumps
    skip_missing: bool = False  # a language of `langs` without a dump: skipped with a note instead of an error
    multi_langs: tuple[str, ...] = MULTI8_LANGUAGES
    seed: int = 13
    min_docs: int = 10_000
    train_size: int = 10_000
    eval_size: int = 1_000
    engine: str = "embedded"
    k: int = 100
    k1: float = 1.2
    b: float = 0.3
    title_boost: float = 2.0
    combine: str = "best_fields"
    source: str = "auto"
    max_bad_fraction: float = 0.001
    base_url: str = ""
    es_url: str = ""  # Elasticsearch: one URL, or "en=URL,de=URL"; default $CLIRMATRIX_ES_URL
    workers: int = 0  # 0: one per unit of work, up to the number of cores
    threads: int = 1  # search threads inside one worker
    shard_docs: int = DEFAULT_SHARD_DOCS  # documents per retrieval shard (results do not depend on it)
    block_size: int = DEFAULT_BLOCK_SIZE  # queries per unit of labelling, propagation and writing

    @property
    def work_dir(self) -> str:
        return self.work or f"{self.out.rstrip('/')}/.work"

    def check(self) -> BuildConfig:
        """Raise ConfigError for values no stage could use."""
        if not self.dumps or not self.out:
            raise ConfigError("both --dumps and --out are required (as flags or in the config file)")
        for name, allowed in (("engine", ENGINES), ("combine", COMBINES), ("source", SOURCES)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        for name in ("min_docs", "train_size", "eval_size", "k", "workers", "threads"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative")
        for name in ("shard_docs", "block_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1")
        if not 0 <= self.b <= 1 or self.k1 < 0:
            raise ConfigError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")
        return self


_FIELDS = {f.name: f for f in fields(BuildConfig)}
_TUPLES = {"langs", "multi_langs"}


def comma_list(value: str | Sequence[str]) -> list[str]:
    """Items of a comma-separated string (or of a list of strings), stripped, empty ones dropped."""
    items = value.split(",") if isinstance(value, str) else value
    return [item.strip() for item in items if item.strip()]


def _coerce(name: str, value: object, where: str) -> object:
    kind = type(BuildConfig.__dataclass_fields__[name].default)
    if name in _TUPLES:
        if not isinstance(value, (str, list, tuple)) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: {name} must be a list of language codes or a comma-separated string")
        return tuple(comma_list(value))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise ConfigError(f"{where}: {name} must be {kind.__name__}, got {value!r}")
    return value


def _flatten(data: dict, where: str) -> dict:
    """Accept ``[bm25]`` and ``[splits]`` tables as a grouping of top-level keys."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict) and key in ("bm25", "splits", "retrieval", "scale"):
            flat.update(_flatten(value, f"{where} [{key}]"))
        else:
            flat[key.replace("-", "_")] = value
    return flat


def read_config_file(path: str) -> dict:
    """The settings in a ``.toml``, ``.yaml`` or ``.yml`` file, checked against the known keys."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        if file.suffix == ".toml":
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        elif file.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        else:
            raise ConfigError(f"config file {path}: expected a .toml, .yaml or .yml file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"config file {path} is not valid: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a table of settings at the top level")
    flat = _flatten(data, path)
    unknown = sorted(set(flat) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(_FIELDS))}")
    return {name: _coerce(name, value, path) for name, value in flat.items()}


def resolve(config_file: str | None, flags: dict[str, object]) -> BuildConfig:
    """Defaults, overridden by the config file, overridden by the flags that were given (not None)."""
    settings = read_config_file(config_file) if config_file else {}
    for name, value in flags.items():
        if value is not None:
            settings[name] = _coerce(name, value, f"--{name.replace('_', '-')}")
    return replace(BuildConfig(), **settings).check()


def as_dict(config: BuildConfig) -> dict:
    """The settings as written into ``manifest.json``."""
    return {name: (list(value) if isinstance(value, tuple) else value) for name, value in ((f, getattr(config, f)) for f in _FIELDS)}


__all__ = ["BuildConfig", "ConfigError", "as_dict", "comma_list", "read_config_file", "resolve"]
