"""What a user reads works as written: every code block of README.md and docs/ runs, or says why it cannot here.

A fenced block is tagged with its language. ``text`` blocks are not code (a command's
synopsis, a file layout, what a command prints). ``bash``/``sh``, ``python`` and
``toml`` blocks run, in page order (README first), in one working folder shared by all:
the README's "Try it" command makes ``demo/`` there, and the names the other pages use
for a build and a download are that build (``out/``) and a real ``clirmatrix
download`` of part of it (``clirmatrix-data/``, the download's default folder; the
official server is not reachable here). A block that cannot run here (a cluster, a GPU,
Docker, the real dumps site, the suite itself) is preceded by
``<!-- not run here: the reason -->``. ``toml`` blocks are read as ``--config`` reads
them. Lines that make a virtualenv and install into it (``python3 -m venv .venv &&
.venv/bin/pip install ...``) are the environment this suite already runs in: they are
dropped and ``.venv`` points at it.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN = {"bash", "sh", "python", "toml"}
NOT_CODE = {"text"}
NOT_RUN = re.compile(r"<!--\s*not run here:\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
INSTALL = re.compile(r"python3 -m venv \.venv && (?:\.venv/bin/pip install [^&]+&& )+")
TIMEOUT = 600  # seconds a block may take (the README's build takes about a minute)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    lang: str
    code: str
    not_run: str | None  # the reason given, when the block does not run here

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with the ``not run here`` reason in the comment lines just above each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, at = [], 0
    while at < len(lines):
        opening = FENCE.match(lines[at])
        if not opening:
            at += 1
            continue
        end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("```")), None)
        assert end is not None, f"{page.name}:{at + 1}: a code block that is never closed"
        above, reason = at - 1, None
        while above >= 0 and lines[above].strip().startswith("<!--"):
            found = NOT_RUN.search(lines[above])
            reason = found.group(1) if found else reason
            above -= 1
        blocks.append(Block(page, at + 1, opening.group(1), "\n".join(lines[at + 1:end]), reason))
        at = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in read_blocks(page)]


def test_every_block_says_what_it_is():
    """A block is code of a known language or ``text``; one that does not run here gives a reason."""
    for block in BLOCKS:
        assert block.lang in RUN | NOT_CODE, f"{block.where}: tag the block with one of {sorted(RUN | NOT_CODE)}, not {block.lang!r}"
        if block.not_run is not None:
            assert block.lang in RUN, f"{block.where}: a text block needs no 'not run here'"
            assert len(block.not_run) > 10, f"{block.where}: say why the block cannot run here"
    assert sum(block.lang in RUN and block.not_run is None for block in BLOCKS) >= 8


def _public_imports(code: str) -> list[str]:
    """``from clirmatrix import a, b`` names and dotted ``clirmatrix...`` modules a Python block imports."""
    names = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "clirmatrix":
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names if alias.name.split(".")[0] == "clirmatrix"]
    return names


def test_python_blocks_import_only_the_public_api():
    """Users import from ``clirmatrix`` itself (or its ``irds`` module): internal folders may move without breaking a page."""
    import clirmatrix

    seen = 0
    for block in BLOCKS:
        if block.lang != "python":
            continue
        for name in _public_imports(block.code):
            seen += 1
            assert name.count(".") == 1 and name.split(".")[1] in clirmatrix.__all__, f"{block.where}: {name} is not in clirmatrix's public API"
    assert seen >= 3


def test_the_public_api_is_importable_typed_and_documented():
    """Every name of ``clirmatrix.__all__`` imports from the top, says what it is for, and a function's parameters carry types."""
    import inspect

    import clirmatrix
    from clirmatrix import irds

    assert {"QuerySplit", "Query", "Qrel", "documents", "irds", "validate", "BuildConfig", "run_build", "InputError"} <= set(clirmatrix.__all__)
    assert set(clirmatrix.__all__) == {*clirmatrix._WHERE, "irds", "__version__"}  # every name has a home, every home a name
    for name in clirmatrix.__all__:
        value = getattr(clirmatrix, name)
        if name == "__version__":
            assert re.match(r"\d", value)
            continue
        assert inspect.getdoc(value), f"clirmatrix.{name} has no docstring"
        if inspect.isfunction(value):
            signature = inspect.signature(value)
            assert signature.return_annotation is not inspect.Signature.empty, f"clirmatrix.{name} has no return type"
            untyped = [p for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            assert not untyped, f"clirmatrix.{name}: untyped parameters {untyped}"
    for name in irds.__all__:
        assert getattr(irds, name) is not None
    assert set(dir(clirmatrix)) >= set(clirmatrix.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        clirmatrix.nope  # noqa: B018 - the attribute access is the test


def test_importing_clirmatrix_loads_no_heavy_library():
    """``import clirmatrix`` stays cheap: Beam, pyarrow and torch load when a name that needs them is first used."""
    code = "import sys, clirmatrix; print(sorted({m.split('.')[0] for m in sys.modules} & {'apache_beam', 'pyarrow', 'torch', 'numba'}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO.parent)
    assert result.stdout.strip() == "[]"


def test_the_build_api_loads_beam_without_a_word_and_leaves_logging_to_the_user():
    """Beam warns on the root logger while it loads (which would also give it a handler): neither reaches a user of ``run_build``."""
    code = "import logging; from clirmatrix import run_build, BuildConfig; print(len(logging.getLogger().handlers))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO.parent)
    assert result.stdout.strip() == "0" and result.stderr == ""


def _run_block(block: Block, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    if block.lang == "toml":
        config = folder / f"snippet-{block.line}.toml"
        config.write_text(block.code + "\n", encoding="utf-8")
        code = f"from clirmatrix.pipeline.config import resolve; print(resolve({str(config)!r}, {{}}))"
        return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if block.lang == "python":
        return subprocess.run([sys.executable, "-c", block.code], cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    script = INSTALL.sub("", block.code)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def _download_part_of(build: Path, folder: Path, env: dict[str, str]) -> None:
    """``clirmatrix-data``: what a user fetches before the loader's example, from the demo build instead of the official server."""
    for args in (["bi139-base", "--src", "en", "--tgt", "de"], ["docs", "--tgt", "de"]):
        subprocess.run(["clirmatrix", "download", *args, "--base-url", str(build)], cwd=folder, env=env, check=True, capture_output=True, timeout=TIMEOUT)


@pytest.mark.slow
def test_every_runnable_block_runs_as_written(tmp_path):
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # the environment the install lines make
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "IR_DATASETS_HOME": str(tmp_path / "irds-home"),
           "HF_HOME": str(tmp_path / "hf-home"), "HF_DATASETS_OFFLINE": "1", "COLUMNS": "160"}
    runnable = [block for block in BLOCKS if block.lang in RUN and block.not_run is None]
    assert runnable[0].page.name == "README.md" and "clirmatrix build" in runnable[0].code, "the README's Try it comes first: the rest reads its build"
    failures = []
    for number, block in enumerate(runnable):
        result = _run_block(block, folder, env)
        if result.returncode != 0:
            failures.append(f"{block.where} ({block.lang}) exited {result.returncode}:\n{block.code}\n--- output ---\n{(result.stdout + result.stderr)[-3000:]}")
        if number == 0:
            assert not failures, failures[0]
            again = _run_block(block, folder, env)  # "Run it again and every stage is skipped"
            skipped = set(re.findall(r"(\w+): up to date, skipped", again.stderr))
            assert again.returncode == 0 and len(skipped) == 8 and not re.search(r"\w+: running", again.stderr), again.stderr[-2000:]
            (folder / "out").symlink_to("demo/out", target_is_directory=True)  # the pages' "out/" is the demo build
            _download_part_of(folder / "out", folder, env)
    assert not failures, "\n\n".join(failures)
