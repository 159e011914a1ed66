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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import tomllib
import yaml

from clirmatrix.pipeline.engines.base import COMBINATIONS, Bm25Settings
from clirmatrix.pipeline.engines.registry import ENGINES
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.badinput import DEFAULT_MAX_BAD_FRACTION
from clirmatrix.pipeline.method.input_kinds import LINKS, SOURCES
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES, WIKIPEDIA_LANGUAGES, check_langs, is_language_code
from clirmatrix.pipeline.method.units import DEFAULT_BLOCK_SIZE, DEFAULT_SEARCH_UNIT_QUERIES, DEFAULT_SHARD_DOCS

# The defaults, ConfigError and comma_list live a floor below (pipeline/settings.py), where the stages' own settings take them too.
from clirmatrix.pipeline.settings import (
    DEFAULT_EVAL_SIZE,
    DEFAULT_K,
    DEFAULT_MIN_DOCS,
    DEFAULT_SEED,
    DEFAULT_SPLIT_BYTES,
    DEFAULT_SPLIT_MB,
    DEFAULT_THREADS,
    DEFAULT_TRAIN_SIZE,
    ConfigError,
    comma_list,
)

_BM25 = Bm25Settings()  # k1 1.2, b 0.3 (footnote 9), title^2, best_fields


def flag_name(setting: str) -> str:
    """The command-line flag of a setting: ``min_docs`` -> ``--min-docs``."""
    return "--" + setting.replace("_", "-")


def _setting(default: object, help: str, **rule: object) -> object:
    """A setting with what ``--help`` says of it and what it may be; flags and config keys derive from these fields."""
    return field(default=default, metadata={"help": help, **rule})


@dataclass(frozen=True)
class BuildConfig:
    """Everything a build depends on (docs/method.md): each setting's default, help and check, in one place."""

    # fingerprint=False: the value itself never enters a stage's fingerprint (why, on each); what it selects does.
    dumps: str = _setting("", "Folder (or gs://, s3:// prefix) with {lang}wiki-* dumps and one Wikidata dump.", required=True, fingerprint=False)  # the files found enter
    out: str = _setting("", "Output folder: BI-139/, MULTI-8/, DOCS/, DOCS-FULL/, downloads.json.gz, stats/, manifest.json, report.html.", required=True)
    work: str = _setting("", "Intermediate Parquet [default: OUT/.work].", fingerprint=False)  # where the records are
    langs: tuple[str, ...] = _setting((), "Comma-separated languages [default: every language found].", fingerprint=False)  # the dumps found and languages kept enter
    skip_missing: bool = _setting(False, "Skip languages of --langs that have no dump [default: an error].", fingerprint=False)  # the dumps found enter
    multi_langs: tuple[str, ...] = _setting(MULTI8_LANGUAGES, "MULTI-8 languages, built when all are present.")
    seed: int = _setting(DEFAULT_SEED, "Seed of the splits and the filler documents.")
    min_docs: int = _setting(DEFAULT_MIN_DOCS, "Drop languages with fewer documents.", min=0)
    train_size: int = _setting(DEFAULT_TRAIN_SIZE, "Base train queries per direction.", min=0)
    eval_size: int = _setting(DEFAULT_EVAL_SIZE, "dev, test1 and test2 queries per direction (a quarter each below 4x as many).", min=0)
    engine: str = _setting(ENGINES[0], "Retrieval engine.", choices=ENGINES)
    k: int = _setting(DEFAULT_K, "Documents kept per query (the paper's top 100).", min=1)
    k1: float = _setting(_BM25.k1, "BM25 k1.", min=0)
    b: float = _setting(_BM25.b, "BM25 b.", min=0, max=1)
    title_boost: float = _setting(_BM25.title_boost, "Weight of the title field.", above=0)
    combine: str = _setting(_BM25.combine, "How title and text scores combine.", choices=COMBINATIONS)
    source: str = _setting("auto", "Which dump kind to read documents from [default: the newest; cirrus, html, xml for one date].", choices=SOURCES, fingerprint=False)  # the dumps found enter
    links: str = _setting(
        "auto",
        "Where entity links come from: items-per-site (wb_items_per_site SQL dump), wikidata-json (the JSON dump), or the pages' own items "
        "(record: from HTML and CirrusSearch records; page-props: also from page_props SQL dumps) [default: the first found of "
        "items-per-site, wikidata-json, then the pages' own].",
        choices=LINKS,
        fingerprint=False,  # the source found enters
    )
    max_bad_fraction: float = _setting(DEFAULT_MAX_BAD_FRACTION, "Fail when more input than this is bad.", min=0, max=1)
    base_url: str = _setting("", "URL prefix written into downloads.json.gz [default: OUT's own file:// URL].")
    es_url: str = _setting("", "Elasticsearch for --engine elasticsearch: one URL, or en=URL,de=URL [default: $CLIRMATRIX_ES_URL].", fingerprint=False)  # where
    workers: int = _setting(
        0, "Local worker processes, 1 or more [default: one per unit of work, up to the cores].", min=1, unset=(0, "one per unit of work, up to the cores"), fingerprint=False
    )  # how many
    threads: int = _setting(DEFAULT_THREADS, "Search threads per worker.", min=1, fingerprint=False)  # how many
    shard_docs: int = _setting(DEFAULT_SHARD_DOCS, "Documents per retrieval shard; results do not depend on it.", min=1)
    block_size: int = _setting(DEFAULT_BLOCK_SIZE, "Queries per unit of labelling, propagation and writing.", min=1)
    search_unit_queries: int = _setting(
        DEFAULT_SEARCH_UNIT_QUERIES, "Queries per search unit of a sharded language, in whole blocks; results do not depend on it.", min=1, fingerprint=False
    )  # how the searching is cut: no file depends on it
    split_mb: int = _setting(DEFAULT_SPLIT_MB, "Compressed MB per unit of extraction for dumps read in ranges (Enterprise HTML, bz2 XML, bz2 Wikidata JSON); results do not depend on it.", min=1)

    @property
    def work_dir(self) -> str:
        return self.work or f"{self.out.rstrip('/')}/.work"

    @property
    def split_bytes(self) -> int:
        """``split_mb`` in bytes: what the extraction stages cut their dumps by."""
        return self.split_mb << 20

    def check(self, needs: Sequence[str] = ("dumps", "out")) -> BuildConfig:
        """Raise ConfigError for values no stage could use: the one place each setting is checked.

        ``needs``: the paths the command needs (the build: both; a stage's own command: those it reads or writes).
        """
        missing = [flag_name(name) for name in needs if not getattr(self, name)]
        if missing:
            raise ConfigError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required (as flags or in the config file)")
        for setting in fields(self):
            value, rule, flag = getattr(self, setting.name), setting.metadata, flag_name(setting.name)
            if "unset" in rule and value == rule["unset"][0]:  # the default's stand-in (workers 0: one per unit); resolve refuses it given
                continue
            if "choices" in rule and value not in rule["choices"]:
                raise ConfigError(f"{flag} must be one of {', '.join(rule['choices'])}, got {value!r}", setting.name)
            if ("min" in rule and not value >= rule["min"]) or ("max" in rule and not value <= rule["max"]):  # NaN fails too
                bounds = f"between {rule['min']} and {rule['max']}" if "max" in rule else f"at least {rule['min']}"
                raise ConfigError(f"{flag} must be {bounds}, got {value!r}", setting.name)
            if "above" in rule and not value > rule["above"]:
                raise ConfigError(f"{flag} must be above {rule['above']}, got {value!r}", setting.name)
        self._check_langs()
        return self

    def _check_langs(self) -> None:
        """Language codes: --langs must be codes (a real one without a dump is found by the dump search,
        which also accepts a new wiki's code); --multi-langs must be Wikipedia's or --langs' codes, 2 or more."""
        try:
            check_langs([code for code in self.langs if not is_language_code(code)], WIKIPEDIA_LANGUAGES, "--langs")
        except InvalidInputError as error:
            raise ConfigError(str(error), "langs") from None
        try:
            check_langs(self.multi_langs, WIKIPEDIA_LANGUAGES | set(self.langs), "--multi-langs")
        except InvalidInputError as error:
            raise ConfigError(f"{error} (a code Wikimedia's list lacks is accepted when --langs names it too)", "multi_langs") from None
        if len(set(self.multi_langs)) == 1:
            raise ConfigError(f"--multi-langs names one language ({self.multi_langs[0]}); MULTI-8 needs 2 or more, or none to build no MULTI-8", "multi_langs")


_FIELDS = {f.name: f for f in fields(BuildConfig)}
_TUPLES = {"langs", "multi_langs"}


def _coerce(name: str, value: object, where: str) -> object:
    kind = type(BuildConfig.__dataclass_fields__[name].default)
    if name in _TUPLES:
        if not isinstance(value, (str, list, tuple)) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where} must be a list of language codes or a comma-separated string", name)
        return tuple(comma_list(value))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise ConfigError(f"{where} must be {kind.__name__}, got {value!r}", name)
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
    return {name: _coerce(name, value, f"config file {path}: {name}") for name, value in flat.items()}


def resolve(config_file: str | None, flags: dict[str, object], needs: Sequence[str] = ("dumps", "out")) -> BuildConfig:
    """Defaults, overridden by the config file, overridden by the flags that were given (not None).

    A message about a value from the file names the flag and the file's key (``--min-docs
    must be at least 0, got -1 (min_docs in build.toml)``). A setting's stand-in for its
    default (``workers = 0``) is refused when given, so it never silently means "auto".
    """
    settings = read_config_file(config_file) if config_file else {}
    from_file = set(settings)
    for name, value in flags.items():
        if value is not None:
            settings[name] = _coerce(name, value, flag_name(name))
            from_file.discard(name)
    try:
        for name, value in settings.items():
            rule = _FIELDS[name].metadata
            if "unset" in rule and value == rule["unset"][0]:
                stand_in, meaning = rule["unset"]
                raise ConfigError(f"{flag_name(name)} {stand_in!r} is not a setting: give {rule['min']} or more, or leave {flag_name(name)} out for {meaning}", name)
        return replace(BuildConfig(), **settings).check(needs)
    except ConfigError as error:
        if error.setting in from_file:
            raise ConfigError(f"{error} ({error.setting} in {config_file})", error.setting) from None
        raise


def fingerprinted(config: BuildConfig, names: Iterable[str]) -> dict[str, object]:
    """The values of ``names`` that enter a stage's fingerprint: all but those a setting marks ``fingerprint=False``."""
    return {name: getattr(config, name) for name in names if _FIELDS[name].metadata.get("fingerprint", True)}


@dataclass(frozen=True)
class Flag:
    """A setting as a command-line flag: what either command-line library (click, argparse) is given, read from its field."""

    setting: str  # the BuildConfig field
    flag: str  # --min-docs
    help: str  # the field's help, with its default (and "required") said
    kind: type  # str, int or float; a list is a comma-separated str
    choices: tuple[str, ...] = ()
    switch: bool = False  # a bool setting: given or not


def setting_flags(names: Iterable[str] = (), helps: dict[str, str] | None = None, config_file: bool = True) -> list[Flag]:
    """The flags of ``names`` (every setting when empty), in ``BuildConfig``'s order: the one source of every command's setting flags.

    ``helps`` rewords a flag for a command that uses it differently (``extract --out``);
    ``config_file``: whether the command also reads them from ``--config``.
    """
    wanted = set(names)
    flags = []
    for setting in _FIELDS.values():
        if wanted and setting.name not in wanted:
            continue
        rule, default = setting.metadata, setting.default
        shown = ",".join(default) if isinstance(default, tuple) else default
        help_text = (helps or {}).get(setting.name, rule["help"])
        if rule.get("required"):
            help_text += " [required: as a flag or in the config file]" if config_file else " [required]"
        elif "[default:" not in help_text and shown not in ("", ()):
            help_text += f" [default: {shown}]"
        kind = type(default) if isinstance(default, (bool, int, float)) else str
        flags.append(Flag(setting.name, flag_name(setting.name), help_text, kind, tuple(rule.get("choices", ())), isinstance(default, bool)))
    unknown = wanted - {flag.setting for flag in flags}
    if unknown:
        raise KeyError(f"not a setting of BuildConfig: {', '.join(sorted(unknown))}")
    return flags


def as_dict(config: BuildConfig) -> dict:
    """The settings as written into ``manifest.json``."""
    return {name: (list(value) if isinstance(value, tuple) else value) for name, value in ((f, getattr(config, f)) for f in _FIELDS)}


__all__ = [
    "DEFAULT_EVAL_SIZE", "DEFAULT_MIN_DOCS", "DEFAULT_SEED", "DEFAULT_SPLIT_BYTES", "DEFAULT_SPLIT_MB", "DEFAULT_TRAIN_SIZE", "ENGINES",
    "BuildConfig", "ConfigError", "Flag", "as_dict", "comma_list", "fingerprinted", "flag_name", "read_config_file", "resolve", "setting_flags",
]  # fmt: skip
