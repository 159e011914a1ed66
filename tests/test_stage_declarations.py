"""Each stage declares what it reads of the build's settings; flags and fingerprints are derived from that alone.

The main test adds a setting the way a contributor would: it copies the package, writes
one field into ``BuildConfig`` and names it in one stage's ``settings``. It then checks
three things: the setting is a flag of ``build`` and of that stage's own command, it is
part of that stage's fingerprint, and it appears nowhere else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from clirmatrix.beam_jobs.all_stages import EXTRACTION, STAGES
from clirmatrix.beam_jobs.stages import RUN_SETTINGS, BuildRun
from clirmatrix.pipeline.config import BuildConfig, fingerprinted

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "pipeline", "beam_jobs", "schemas", "models")  # installed as clirmatrix.{name} (pyproject's package-dir)

# What the copy prints: each command's flags and which stages' fingerprints a new value of the setting changes.
PROBE = r"""
import json, sys
from dataclasses import replace
from click.testing import CliRunner
from clirmatrix.beam_jobs.all_stages import STAGES
from clirmatrix.beam_jobs.build import run as build_run
from clirmatrix.beam_jobs.stages import BuildRun, config_parser, declared_settings, stages_parser
from clirmatrix.pipeline.config import BuildConfig, fingerprinted
from clirmatrix.cli import cli

def helps(argv):
    return CliRunner().invoke(cli, argv, terminal_width=400).output

setting = sys.argv[1]
flag = "--" + setting.replace("_", "-")
stage_commands = {stage.name: stages_parser((stage,), stage.name).format_help() for stage in STAGES if stage.name != "stats"}
build_parser = config_parser("build", [f.name for f in __import__("dataclasses").fields(BuildConfig)])
config = BuildConfig(dumps="/d", out="/o")
other = replace(config, **{setting: getattr(config, setting) + 1})
run, other_run = BuildRun(config, "/w", keys={s.name: "k" for s in STAGES}), BuildRun(other, "/w", keys={s.name: "k" for s in STAGES})
changed = [s.name for s in STAGES if fingerprinted(config, s.config_fields) != fingerprinted(other, s.config_fields)]
own = [s.name for s in STAGES if s.name in changed and s.from_run(run).fingerprint(run) != s.from_run(other_run).fingerprint(other_run)]
print(json.dumps({
    "build": flag in build_parser.format_help() and flag in helps(["build", "--help"]),
    "commands": sorted(name for name, text in stage_commands.items() if flag in text),
    "extract": flag in helps(["extract", "--help"]),
    "plan": flag in helps(["plan", "--help"]),
    "fingerprints": changed,
    "own_fingerprint_changes": own,
}))
"""


def _copy_package(target: Path) -> Path:
    """The package laid out as installed (``clirmatrix/`` with its subpackages inside), from this checkout's sources."""
    package = target / "clirmatrix"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "clirmatrix", package, ignore=ignore)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, package / name, ignore=ignore)
    return package


def _edit(path: Path, pattern: str, addition: str) -> None:
    """Insert ``addition`` after the one line matching ``pattern``: a failed match fails the test, never edits silently."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    hits = [number for number, line in enumerate(lines) if re.search(pattern, line)]
    assert len(hits) == 1, f"{path.name}: expected one line matching {pattern!r}, found {len(hits)}"
    lines.insert(hits[0] + 1, addition)
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.slow
def test_a_setting_added_to_one_stage_is_its_flag_and_in_its_fingerprint_and_nowhere_else(tmp_path):
    package = _copy_package(tmp_path)
    # The two edits a contributor makes: the setting, and the stage that reads it.
    _edit(package / "pipeline" / "config.py", r"^    split_mb: int = _setting\(", '    made_up: int = _setting(3, "A made-up knob of the labels.", min=0)\n')
    _edit(package / "beam_jobs" / "label.py", r'^    after = \("retrieve",\)$', '    config_fields = ("made_up",)\n')
    environment = {**os.environ, "PYTHONPATH": str(tmp_path)}
    probe = subprocess.run([sys.executable, "-c", PROBE, "made_up"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found == {
        "build": True,  # a flag of the build (the click command and python -m clirmatrix.beam_jobs.build)
        "commands": ["label"],  # of the label stage's own command, of no other stage's
        "extract": False,
        "plan": False,
        "fingerprints": ["label"],  # in the label stage's fingerprint, in no other stage's settings
        "own_fingerprint_changes": ["label"],
    }


def test_every_setting_is_read_by_a_stage_or_by_the_run():
    """A BuildConfig field no stage declares would be a flag that changes nothing; a declared name must be a field."""
    names = {setting.name for setting in fields(BuildConfig)}
    declared = {name for stage in STAGES for name in stage.config_fields}
    assert declared <= names
    assert names - declared == set(RUN_SETTINGS)


def test_the_stages_come_after_stages_that_run_before_them():
    order = [stage.name for stage in STAGES]
    assert len(set(order)) == len(order) and [stage.name for stage in EXTRACTION] == order[:3]
    for number, stage in enumerate(STAGES):
        assert set(stage.after) <= set(order[:number]), stage.name


@pytest.mark.parametrize("stage", [stage for stage in STAGES if stage.config_fields], ids=lambda stage: stage.name)
def test_a_changed_setting_changes_its_stages_fingerprint_unless_it_changes_no_file(stage):
    """Each declared setting a stage's output depends on moves its fingerprint; workers, threads, paths found and the like never do."""
    config = BuildConfig(dumps="/d", out="/o")
    for name in stage.config_fields:
        value = getattr(config, name)
        other = replace(config, **{name: _another(value)})
        moved = fingerprinted(config, stage.config_fields) != fingerprinted(other, stage.config_fields)
        kept = name in ("dumps", "langs", "skip_missing", "source", "links", "es_url", "threads", "search_unit_queries")
        assert moved != kept, f"{stage.name}: {name}"
    run = BuildRun(config, "/w", keys={before.name: "k" for before in STAGES})
    moved_keys = BuildRun(config, "/w", keys={before.name: "other" for before in STAGES})
    if stage.after and stage.name not in ("extract_docs", "extract_sitelinks"):
        assert stage.from_run(run).fingerprint(run) != stage.from_run(moved_keys).fingerprint(moved_keys)


def _another(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1 if not isinstance(value, float) or value < 0.5 else value / 2
    if isinstance(value, tuple):
        return (*value, "xx") if value else ("en", "de")
    return value + "/x" if value else "x"
