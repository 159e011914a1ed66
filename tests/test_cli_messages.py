"""Flags and messages: a mistake in a flag is one line naming the flag, found before any work.

Written from the user's side: the command, the line it prints, the exit code (2 for
bad input), and that nothing was started or written. None of these runs a build.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest
from conftest import sigint_as_in_a_terminal

from clirmatrix.cli import main
from clirmatrix.pipeline.config import ConfigError, resolve
from clirmatrix.pipeline.method.dumps import WIKIDATA_JSON, LinkInputs
from clirmatrix.pipeline.method.languages import BI139_LANGUAGES, MULTI8_LANGUAGES, WIKIPEDIA_LANGUAGES, UnknownLanguageError, check_langs
from clirmatrix.pipeline.output import layout


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def one_error(output: str) -> str:
    """The ``error: ...`` message, checked to be one line with no traceback."""
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, output
    return errors[0].removeprefix("error: ")


@pytest.fixture
def dumps(tmp_path):
    folder = tmp_path / "dumps"
    folder.mkdir()
    return folder


# ------------------------------------------------------------------- the shared language check


def test_check_langs_suggests_by_case_and_spelling():
    assert check_langs("en, de,en", WIKIPEDIA_LANGUAGES, "--langs") == ["en", "de"]  # order kept, once each
    with pytest.raises(UnknownLanguageError) as error:
        check_langs("EN", WIKIPEDIA_LANGUAGES, "--langs")
    assert str(error.value) == "--langs EN: not a Wikipedia language code; did you mean en?"
    with pytest.raises(UnknownLanguageError, match=r"^--src zh_min_nan: not a Wikipedia language code; did you mean zh-min-nan\?$"):
        check_langs(["zh_min_nan"], WIKIPEDIA_LANGUAGES, "--src")
    with pytest.raises(UnknownLanguageError, match=r"^--tgt dewiki: not a BI-139 language; did you mean de\?$"):
        check_langs("dewiki", BI139_LANGUAGES, "--tgt", "BI-139 language")
    with pytest.raises(UnknownLanguageError) as error:
        check_langs("Fr,qqqq,en", MULTI8_LANGUAGES, "--langs", "MULTI-8 language")
    assert str(error.value) == "--langs: not a MULTI-8 language: Fr (did you mean fr?), qqqq (MULTI-8 languages: ar, de, en, es, fr, ja, ru, zh)"


# ------------------------------------------------------------------- build and extract


def test_workers_zero_is_refused_not_silently_auto(capsys, dumps, tmp_path):
    for command in ("build", "extract"):
        code, output = run(capsys, command, "--dumps", str(dumps), "--out", str(tmp_path / "out"), "--workers", "0")
        assert code == 2
        assert one_error(output) == "--workers 0 is not a setting: give 1 or more, or leave --workers out for one per unit of work, up to the cores"
    assert not (tmp_path / "out").exists()
    toml = tmp_path / "build.toml"
    toml.write_text(f'dumps = "{dumps}"\nout = "{tmp_path / "out"}"\nworkers = 0\n')
    code, output = run(capsys, "build", "--config", str(toml))
    assert code == 2 and one_error(output).endswith(f"(workers in {toml})")
    assert resolve(None, {"dumps": "d", "out": "o"}).workers == 0  # left out: one per unit of work
    assert resolve(None, {"dumps": "d", "out": "o", "workers": 2}).workers == 2
    code, output = run(capsys, "build", "--help")
    assert "1 or more [default: one per unit of work, up to the cores]" in " ".join(output.split())


@pytest.mark.parametrize(
    "flag, value, message",
    [("--min-docs", "-1", "--min-docs must be at least 0, got -1"),
     ("--max-bad-fraction", "2", "--max-bad-fraction must be between 0 and 1, got 2.0"),
     ("--title-boost", "0", "--title-boost must be above 0, got 0.0"),
     ("--block-size", "0", "--block-size must be at least 1, got 0")],
)  # fmt: skip
def test_errors_name_the_flag_not_the_setting(capsys, dumps, tmp_path, flag, value, message):
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path / "out"), flag, value)
    assert code == 2 and one_error(output) == message


def test_a_config_file_value_names_the_flag_and_the_key(tmp_path):
    toml = tmp_path / "build.toml"
    toml.write_text('dumps = "d"\nout = "o"\nmin_docs = -5\n')
    with pytest.raises(ConfigError) as error:
        resolve(str(toml), {})
    assert str(error.value) == f"--min-docs must be at least 0, got -5 (min_docs in {toml})"
    with pytest.raises(ConfigError, match=r"^--min-docs must be at least 0, got -1$"):  # the flag wins, and is the one named
        resolve(str(toml), {"min_docs": -1})


@pytest.mark.parametrize(
    "args, message",
    [(["--langs", "EN"], "--langs EN: not a Wikipedia language code; did you mean en?"),
     (["--langs", "en,De"], "--langs De: not a Wikipedia language code; did you mean de?"),
     (["--langs", "zh_min_nan"], "--langs zh_min_nan: not a Wikipedia language code; did you mean zh-min-nan?"),
     (["--multi-langs", "en,EN"], "--multi-langs EN: not a Wikipedia language code; did you mean en? (a code Wikimedia's list lacks is accepted when --langs names it too)"),
     (["--multi-langs", "en"], "--multi-langs names one language (en); MULTI-8 needs 2 or more, or none to build no MULTI-8")],
)  # fmt: skip
def test_every_language_list_is_checked_with_a_suggestion(capsys, dumps, tmp_path, args, message):
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path / "out"), *args)
    assert code == 2 and one_error(output) == message
    assert not (tmp_path / "out").exists()


def test_multi_langs_refuses_an_unknown_code(capsys, dumps, tmp_path):
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path / "out"), "--multi-langs", "en,xx")
    assert code == 2 and one_error(output).startswith("--multi-langs xx: not a Wikipedia language code")
    # A code the list lacks (a new wiki) is taken when --langs names it too: the dump search judges it then.
    assert resolve(None, {"dumps": "d", "out": "o", "langs": "en,xx", "multi_langs": "en,xx"}).multi_langs == ("en", "xx")
    code, output = run(capsys, "extract", "--dumps", str(dumps), "--out", str(tmp_path / "out"), "--langs", "DE")
    assert code == 2 and one_error(output) == "--langs DE: not a Wikipedia language code; did you mean de?"


@pytest.mark.parametrize("command", ["build", "extract"])
def test_an_out_that_is_a_file_is_one_line_before_any_work(capsys, dumps, tmp_path, command):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    code, output = run(capsys, command, "--dumps", str(dumps), "--out", str(taken))
    assert code == 2 and one_error(output) == f"--out {taken} is a file, not a folder; give a folder (a missing one is created)"
    assert "Errno" not in output and taken.read_text() == "not a folder"
    code, output = run(capsys, command, "--dumps", str(dumps), "--out", str(taken / "out"))
    assert code == 2 and one_error(output) == f"--out {taken / 'out'}: {taken} is a file, not a folder; give a folder (a missing one is created)"
    if command == "build":
        code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path / "out"), "--work", str(taken))
        assert code == 2 and one_error(output).startswith(f"--work {taken} is a file")
        assert not (tmp_path / "out" / layout.IN_PROGRESS).exists()


def test_compose_langs_are_checked(capsys):
    code, output = run(capsys, "compose", "--langs", "en,JA")
    assert code == 2 and one_error(output) == "--langs JA: not a Wikipedia language code; did you mean ja?"


# ------------------------------------------------------------------- sample


def test_sample_refuses_a_folder_in_use_without_force(capsys, tmp_path):
    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep me")
    code, output = run(capsys, "sample", str(folder), "--docs-per-lang", "50", "--langs", "en")
    assert code == 2
    assert one_error(output) == f"OUT_DIR {folder} is not empty; pass --force to write the sample into it anyway, or give a new folder"
    assert sorted(p.name for p in folder.iterdir()) == ["mine.txt"]
    code, output = run(capsys, "sample", str(folder), "--docs-per-lang", "50", "--langs", "en", "--force")
    assert code == 0 and (folder / "mine.txt").read_text() == "keep me"
    # Today's inputs by default: Enterprise HTML and wb_items_per_site, no 2020 CirrusSearch or Wikidata JSON dump.
    names = sorted(p.name for p in folder.iterdir())
    assert any(n.startswith("enwiki-NS0-") and n.endswith("-ENTERPRISE-HTML.json.tar.gz") for n in names), names
    assert any(n.endswith("-wb_items_per_site.sql.gz") for n in names) and not any("cirrussearch" in n or n.startswith("latest-all") for n in names), names
    written = {path: path.stat().st_mtime_ns for path in folder.rglob("*")}
    # The same command again (the README's line, rerun): the folder holds this very sample, so nothing is written.
    code, output = run(capsys, "sample", str(folder), "--docs-per-lang", "50", "--langs", "en", "--broken")
    assert code == 0 and "already holds this sample (same settings); nothing written" in output and "build them with:" in output
    assert {path: path.stat().st_mtime_ns for path in folder.rglob("*")} == written
    code, output = run(capsys, "sample", str(folder), "--docs-per-lang", "50", "--langs", "en", "--seed", "4")  # another sample: refused
    assert code == 2 and one_error(output).startswith(f"OUT_DIR {folder} is not empty; pass --force")
    code, output = run(capsys, "sample", str(folder), "--docs-per-lang", "50", "--langs", "EN", "--force")
    assert code == 2 and one_error(output) == "--langs EN: not a sample language; did you mean en? (sample languages: ar, de, en, es, fr, ja, ru, zh)"


def test_sample_says_how_a_small_sample_builds(capsys, tmp_path):
    from click.testing import CliRunner

    from clirmatrix.cli import cli
    from clirmatrix.pipeline.tools.sample import build_flags, make_world

    text = " ".join(CliRunner().invoke(cli, ["sample", "--help"], terminal_width=400).output.split())
    assert "--force" in text and "--max-bad-fraction 0.001" in text and "fewer than 1,000 articles" in text and "--clean" in text
    code, output = run(capsys, "sample", str(tmp_path / "small"), "--docs-per-lang", "60", "--langs", "en,de")
    truth = json.loads((tmp_path / "small" / "sample-truth.json").read_text())
    smallest = min(sum(lang in langs for langs in truth["entities"].values()) for lang in ("en", "de"))
    line = next(line for line in output.splitlines() if line.startswith("build them with:"))
    flags = line.split("--out OUT ")[1].split()
    assert flags[:2] == ["--min-docs", "50"] and flags[2] == "--max-bad-fraction" and float(flags[3]) * smallest >= 1
    code, output = run(capsys, "sample", str(tmp_path / "clean"), "--docs-per-lang", "60", "--langs", "en", "--clean")
    assert "--max-bad-fraction" not in output  # no bad record, nothing to allow
    # The default sample (2,000 per language) builds with the README's --min-docs 1000 and the default fraction.
    assert build_flags(make_world(2000)) == ["--min-docs", "1000"]


def test_records_are_entity_lines_in_the_wikidata_messages(tmp_path):
    """One word per thing: the Wikidata bad-input message counts entity lines, the progress line sitelinks."""
    from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
    from clirmatrix.pipeline.io.badinput import TooManyBadRecords
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    write_sample_dumps(tmp_path / "dumps", docs_per_lang=50, langs=("en",), broken=True, inputs="classic")
    with pytest.raises(TooManyBadRecords, match=r"latest-all\.json\.gz: 1 of \d+ entity lines \("):
        sources = LinkInputs.wikidata_wide(WIKIDATA_JSON, [str(tmp_path / "dumps" / "latest-all.json.gz")])
        ExtractSitelinks(str(tmp_path), sources, ["en"], 0.001).run(workers=1)


# ------------------------------------------------------------------- train, evaluate, reproduce


@pytest.fixture(scope="module")
def short_model(tmp_path_factory):
    """(release, model dir): a toy en/de release and a tiny BERT of 32 positions, fewer than its query-document pairs
    (up to 44 pieces) and than every default --max-len: without the check, training died of a RuntimeError."""
    pytest.importorskip("torch", reason="the trainer needs the train extra")
    pytest.importorskip("transformers", reason="the trainer needs the train extra")
    pytest.importorskip("ir_measures", reason="the trainer needs the train extra")
    from support.toy import build_tiny_backbone, write_toy_release

    from clirmatrix.pipeline.output.jsonl import iter_docs

    root = tmp_path_factory.mktemp("short")
    release = write_toy_release(root / "release", langs=("en", "de"), entities=120, splits={"train": 60, "dev": 20, "test1": 20})
    texts = [text for lang in release.langs for _, text in iter_docs(root / "release" / "DOCS" / f"{lang}.tsv.gz")]
    return root / "release", build_tiny_backbone(root / "model", texts, max_positions=32)


QUICK = ["--epochs", "1", "--steps-per-epoch", "2", "--batch-size", "4", "--dev-queries", "2", "--eval-batch-size", "64", "--device", "cpu"]


def test_an_explicit_max_len_beyond_the_model_is_one_line(capsys, short_model, tmp_path):
    release, model = short_model
    code, output = run(capsys, "train", "--data", str(release), "--init", str(model), "--out", str(tmp_path / "run"), *QUICK, "--max-len", "512")
    assert code == 2
    assert one_error(output) == f"--max-len 512 is longer than the 32 positions of the model in {model} (max_position_embeddings); give --max-len 32 or less"
    assert not (tmp_path / "run").exists(), "nothing is written before the check"
    quick = [flag if flag != "--steps-per-epoch" else "--steps" for flag in QUICK]
    code, output = run(capsys, "reproduce", "bi139", "--data", str(release), "--init", str(model), "--runs", str(tmp_path / "runs"), "--tgt", "de", *quick, "--max-len", "100")
    assert code == 2 and one_error(output).startswith("--max-len 100 is longer than the 32 positions")
    assert not (tmp_path / "runs").exists()


def test_the_default_max_len_is_cut_to_the_model_with_a_note(capsys, short_model, tmp_path):
    release, model = short_model
    quick = [flag if flag != "--steps-per-epoch" else "--steps" for flag in QUICK]  # train spells it as reproduce does, too
    args = ("train", "--data", str(release), "--init", str(model), "--out", str(tmp_path / "run"), *quick)
    code, output = run(capsys, *args)
    assert code == 0, output
    note = f"note: --max-len 32, not the cross-encoder default 512: the model in {model} has 32 positions"
    assert "".join(note.split()) in "".join(output.split())  # rich wraps a long path anywhere, even inside it
    saved = json.loads((tmp_path / "run" / "args.json").read_text())
    assert saved["max_len"] == 32 and saved["steps_per_epoch"] == 2  # what the run really used
    code, output = run(capsys, *args)  # the same command again finds the same run, not "other settings"
    assert code == 0 and "other settings" not in output


def test_reproduce_cuts_the_default_max_len_for_every_run_and_reuses_them(capsys, short_model, tmp_path):
    release, model = short_model
    quick = [flag if flag != "--steps-per-epoch" else "--steps" for flag in QUICK]
    args = ("reproduce", "bi139", "--data", str(release), "--init", str(model), "--runs", str(tmp_path / "runs"), "--tgt", "de", "--limit", "3", *quick)
    code, output = run(capsys, *args)
    assert code == 0, output
    assert "note: --max-len 32, not the cross-encoder default 512" in " ".join(output.split())
    assert json.loads((tmp_path / "runs" / "bi139-en-de" / "args.json").read_text())["max_len"] == 32
    code, output = run(capsys, *args)  # a rerun compares settings with the cut length: the run is reused
    assert code == 0 and "other settings" not in output
    assert re.search(r"runs reused \(finished\)\W+1\b", output) and re.search(r"runs trained\W+0\b", output)


@pytest.mark.parametrize(
    "command, message",
    [(["train", "--src", "EN"], "--src EN: not a Wikipedia language code; did you mean en?"),
     (["train", "--src", "en", "--tgt", "de,Xx"], "--tgt Xx: not a Wikipedia language code"),
     (["reproduce", "bi139", "--src", "EN"], "--src EN: not a BI-139 language; did you mean en?"),
     (["reproduce", "multi8", "--langs", "en,DE"], "--langs DE: not a MULTI-8 language; did you mean de? (MULTI-8 languages: ar, de, en, es, fr, ja, ru, zh)")],
)  # fmt: skip
def test_training_language_flags_are_checked(capsys, short_model, tmp_path, command, message):
    release, model = short_model
    where = ["--runs", str(tmp_path / "runs")] if command[0] == "reproduce" else ["--out", str(tmp_path / "run")]
    code, output = run(capsys, *command, "--data", str(release), "--init", str(model), *where)
    assert code == 2 and one_error(output).startswith(message)
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


def test_train_on_an_unfinished_build_refuses_before_making_the_run_folder(capsys, short_model, tmp_path):
    import shutil

    release, model = short_model
    unfinished = tmp_path / "out"
    shutil.copytree(release, unfinished)
    (unfinished / layout.IN_PROGRESS).write_text('{"incomplete": "clirmatrix build has not finished writing this folder; rerun clirmatrix build"}\n')
    code, output = run(capsys, "train", "--data", str(unfinished), "--init", str(model), "--out", str(tmp_path / "run"), *QUICK)
    assert code == 2 and one_error(output).startswith("incomplete build: rerun clirmatrix build")
    assert not (tmp_path / "run").exists()


def test_evaluate_language_flags_and_train_out_are_checked(capsys, short_model, tmp_path):
    release, model = short_model
    code, output = run(capsys, "evaluate", "--run", str(tmp_path), "--data", str(release), "--src", "En")
    assert code == 2 and one_error(output) == "--src En: not a Wikipedia language code; did you mean en?"
    taken = tmp_path / "taken"
    taken.write_text("")
    code, output = run(capsys, "train", "--data", str(release), "--init", str(model), "--out", str(taken))
    assert code == 2 and one_error(output) == f"--out {taken} is a file, not a folder; give a folder (a missing one is created)"
    code, output = run(capsys, "train", "--data", str(tmp_path / "nowhere"), "--init", str(model), "--out", str(tmp_path / "run"))
    assert code == 2 and one_error(output).startswith(f"--data {tmp_path / 'nowhere'} is not a folder")


def test_ctrl_c_while_the_command_loads_ends_it_quietly(tmp_path):
    """A Ctrl-C in the tenths of a second the command takes to load: exit 130 and one line, not an import's traceback."""
    import shutil
    import signal
    import subprocess
    import time

    script = shutil.which("clirmatrix", path=str(Path(sys.executable).parent))
    assert script, "the clirmatrix script is installed beside this Python"
    # Python reports each import as it ends (PYTHONPROFILEIMPORTTIME): click's means the command line is loading.
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    process = subprocess.Popen([script, "sample", str(tmp_path / "dumps")], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, preexec_fn=sigint_as_in_a_terminal)
    seen = b""
    while not re.search(rb"\| +click\n", seen):
        line = process.stderr.readline()
        assert line, seen.decode()[-2000:]
        seen += line
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    rest = process.communicate(timeout=10)[1]
    text = (seen + rest).decode()
    assert process.returncode == 130 and time.monotonic() - sent < 2, (process.returncode, text[-2000:])
    assert "Traceback" not in text and "interrupted" in text.splitlines(), text[-2000:]


def test_a_truncated_bz2_dump_stops_the_build_naming_the_file(capsys, tmp_path):
    """A cut multistream XML dump (an EOFError underneath) is bad input named in one line, exit 2: not click's "aborted" (130), the Ctrl-C code."""
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    dumps = tmp_path / "dumps"
    write_sample_dumps(dumps, docs_per_lang=120, langs=("fr",), broken=False)
    (xml,) = dumps.glob("frwiki-*-pages-articles-multistream.xml.bz2")
    xml.write_bytes(xml.read_bytes()[: xml.stat().st_size // 2])
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path / "out"), "--min-docs", "50", "--workers", "1")
    assert code == 2 and "aborted" not in output
    assert one_error(output).startswith(f"{xml}: the bz2 stream is cut short")


# ------------------------------------------------------------------- destinations the user may not write


PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2  # <linux/prctl.h>, <linux/capability.h>


def _as_a_user_who_may_not_write() -> None:
    """``preexec_fn``: the command meets a folder's permissions as a user does, even when the suite runs as root.

    Root passes any permission by two capabilities; dropped from the bounding set here,
    the command (still root after exec, but without them) is refused a root-owned 0o555
    folder as anyone is. Dropping to nobody (65534) instead is not possible here: the
    venv's Python lives under /root/.pyenv and /root is 0o700, so nobody could not even
    start it; root without the two capabilities still reads its own 0o700 folders.
    """
    if os.geteuid() == 0:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _clirmatrix(*args: str, **options):
    import shutil
    import subprocess

    script = shutil.which("clirmatrix", path=str(Path(sys.executable).parent))
    assert script, "the clirmatrix script is installed beside this Python"
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120, **options)


@pytest.fixture(scope="module")
def toy_release(tmp_path_factory):
    """A small release (en, de): what export, download and report read."""
    from support.toy import write_toy_release

    root = tmp_path_factory.mktemp("toy") / "release"
    write_toy_release(root, langs=("en", "de"), entities=120, splits={"train": 60, "dev": 20, "test1": 20})
    return root


def _skip_unless_permissions_hold(folder: Path) -> None:
    """Skip, saying why, where a command would still write into the 0o555 ``folder`` (root's override not taken away)."""
    import subprocess

    try:
        probe = subprocess.run([sys.executable, "-c", f"open({str(folder / 'probe')!r}, 'w')"], preexec_fn=_as_a_user_who_may_not_write, capture_output=True)
    except subprocess.SubprocessError as error:
        pytest.skip(f"cannot take root's permission override away here: {error}")
    if probe.returncode == 0:
        (folder / "probe").unlink()
        pytest.skip("the command could write a 0o555 folder here (root with its capabilities)")


@pytest.fixture
def locked(tmp_path, toy_release):
    """A 0o555 folder (root's, when the suite runs as root) holding a copy of the release."""
    import shutil

    folder = tmp_path / "locked"
    shutil.copytree(toy_release, folder)
    folder.chmod(0o555)
    _skip_unless_permissions_hold(folder)
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize(
    "command, refused",
    [(["sample", "{locked}/dumps", "--docs-per-lang", "50", "--langs", "en"], "{locked}/dumps"),
     (["report", "{locked}"], "{locked}/report.html"),
     (["export", "{release}", "--format", "beir", "--to", "{locked}/beir"], "{locked}/beir"),
     (["download", "bi139-base", "--src", "en", "--tgt", "de", "--split", "dev", "--base-url", "{release}", "--no-index", "--to", "{locked}/got"], "{locked}/got")],
    ids=["sample", "report", "export", "download"],
)  # fmt: skip
def test_a_destination_the_user_may_not_write_is_one_line(locked, toy_release, command, refused):
    before = sorted(locked.rglob("*"))
    names = {"locked": str(locked), "release": str(toy_release)}
    done = _clirmatrix(*(arg.format(**names) for arg in command), preexec_fn=_as_a_user_who_may_not_write)
    assert done.returncode == 2, done.stderr[-3000:]
    assert one_error(done.stdout + done.stderr) == f"cannot write to {refused.format(**names)}: Permission denied"
    assert sorted(locked.rglob("*")) == before


def test_a_file_the_user_may_not_read_is_one_line(locked, toy_release, tmp_path):
    import shutil

    shutil.copytree(toy_release, tmp_path / "release")  # writable: only the one file below is refused
    unreadable = tmp_path / "release" / "DOCS" / "en.tsv.gz"
    unreadable.chmod(0)
    done = _clirmatrix("report", str(tmp_path / "release"), preexec_fn=_as_a_user_who_may_not_write)
    assert done.returncode == 2 and one_error(done.stdout + done.stderr) == f"cannot read {unreadable}: Permission denied"


# ------------------------------------------------------------------- build: where it writes


def test_build_refuses_an_out_that_is_or_holds_the_dumps(capsys, dumps, tmp_path):
    (dumps / "keep.txt").write_text("mine")
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(dumps))
    assert code == 2
    assert one_error(output) == f"--out {dumps} is the --dumps folder: the build would write the release among the dumps; give an --out apart from --dumps"
    (tmp_path / "link").symlink_to(dumps)  # the same folder by another name
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path / "link"))
    assert code == 2 and one_error(output).startswith(f"--out {tmp_path / 'link'} is the --dumps folder")
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(tmp_path))
    assert code == 2 and one_error(output) == (f"--dumps {dumps} is inside --out {tmp_path}: the build replaces what --out holds and validate would meet the dumps; give an --out apart from --dumps")
    assert sorted(p.name for p in dumps.iterdir()) == ["keep.txt"] and not (tmp_path / layout.IN_PROGRESS).exists()
    code, output = run(capsys, "build", "--dumps", str(dumps), "--out", str(dumps / "out"))  # an --out inside --dumps is taken
    assert code == 2 and one_error(output).startswith(f"no Wikipedia dumps found in {dumps}")


@pytest.fixture(scope="module")
def train_only(tmp_path_factory):
    """(output, out): a build of --eval-size 0 with the default --workers, on a machine of one core (``os.cpu_count``: the build then runs in this process)."""
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    root = tmp_path_factory.mktemp("train-only")
    write_sample_dumps(root / "dumps", docs_per_lang=50, langs=("en", "de"), broken=False)
    args = ["build", "--dumps", str(root / "dumps"), "--out", str(root / "out"), "--min-docs", "10", "--train-size", "5", "--eval-size", "0"]
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(io.StringIO()) as output:
        patch.setattr(os, "cpu_count", lambda: 1)
        code = main(args)
    return code, output.getvalue(), root / "out"


def test_eval_size_0_builds_a_train_only_release_and_says_so(train_only):
    from clirmatrix.pipeline.output.jsonl import iter_queries

    code, output, out = train_only
    assert code == 0, output[-3000:]
    note = "--eval-size 0: every dev, test1 and test2 file is empty (no query is held out; train gets them all)"
    assert "".join(output.split()).count("".join(note.split())) == 2  # as the build starts, and among the notes at its end
    manifest = json.loads((out / layout.MANIFEST).read_text())
    assert note in manifest["notes"]
    assert not list(iter_queries(out / layout.query_file("bi139-base", "en", "de", "test1")))
    assert list(iter_queries(out / layout.query_file("bi139-full", "en", "de", "train")))
    assert manifest["settings"]["workers"] == 1  # what the build used (one per unit, up to the 1 core), not the default's stand-in 0


# ------------------------------------------------------------------- dumps list --mirror


def test_dumps_list_refuses_a_mirror_folder_that_is_missing_or_no_mirror(capsys, tmp_path):
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    code, output = run(capsys, "dumps", "list", "--mirror", str(tmp_path / "nowhere"), "--langs", "en")
    assert code == 2 and one_error(output) == f"--mirror {tmp_path / 'nowhere'}: no such folder"
    code, output = run(capsys, "dumps", "fetch", "--mirror", (tmp_path / "nowhere").as_uri(), "--langs", "en", "--to", str(tmp_path / "to"))
    assert code == 2 and one_error(output) == f"--mirror {(tmp_path / 'nowhere').as_uri()}: no such folder"
    write_sample_dumps(tmp_path / "dumps", docs_per_lang=50, langs=("en",), broken=False)  # fetched dumps, not the site's layout
    code, output = run(capsys, "dumps", "list", "--mirror", str(tmp_path / "dumps"), "--langs", "en")
    assert code == 2 and one_error(output) == (
        f"--mirror {tmp_path / 'dumps'} is not a dumps mirror: it holds no other/ and no {{wiki}}/ folder (the site's layout: enwiki/20261101/..., "
        "other/enterprise_html/runs/...); it holds dumps themselves, which build --dumps and plan --dumps read"
    )
    assert "note" not in output and not (tmp_path / "to").exists()


def test_no_eof_error_of_ours_can_reach_click_as_an_abort():
    """click turns an EOFError into "aborted" (130, the Ctrl-C code): every EOFError subclass the package defines is an InputError, which main() shows as the one-line error it is, exit 2."""
    import importlib
    import inspect
    import pkgutil

    from clirmatrix import cli, pipeline
    from clirmatrix.pipeline.errors import InputError

    found = []
    modules = [module.name for package in (pipeline, cli) for module in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    for name in modules:
        if name.endswith("__main__"):
            continue
        for _, value in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if issubclass(value, EOFError) and value.__module__.startswith("clirmatrix."):
                found.append(value)
    assert found, "the bz2 reader's TruncatedStreamError, at least"
    assert [cls.__qualname__ for cls in found if not issubclass(cls, InputError)] == []
