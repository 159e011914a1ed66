"""The repository keeps its promises: the README's test command is what CI runs; the wheel is clirmatrix only."""

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest
from conftest import REPO


def readme_command(name: str) -> str:
    readme = (REPO / "README.md").read_text()
    match = re.search(rf"<!-- {name} -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, f"README has no <!-- {name} --> block"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command():
    command = readme_command("test-command")
    ci_lines = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert command in ci_lines


def test_the_test_command_installs_cpu_torch_before_the_train_extra():
    command = readme_command("test-command")
    assert "torch==2.13.0" in command and ".[test,train]" in command
    assert command.index("torch==2.13.0") < command.index(".[test,train]")


def test_readme_main_command_uses_the_bundled_sample():
    command = readme_command("main-command")
    assert "clirmatrix sample" in command and "clirmatrix build" in command


@pytest.mark.slow
def test_wheel_holds_only_the_clirmatrix_package(tmp_path):
    # Built from a copy of the tree without build/: setuptools reuses the tree's own build/, where modules of
    # an earlier layout (the Lucene harnesses and the toy before they moved to bench/support/) would still lie.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "out", "demo", "__pycache__", "*.egg-info", ".*_cache"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(source)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("clirmatrix-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    code = [n for n in names if ".dist-info/" not in n]
    assert code and all(n.startswith("clirmatrix/") for n in code)
    groups = ("io", "method", "output", "tools", "formats", "extraction", "engines", "engines/embedded")
    for package in ("cli", "pipeline", "beam_jobs", "schemas", "models", *(f"pipeline/{group}" for group in groups), "models/losses", "models/modeling", "models/recipes"):
        assert f"clirmatrix/{package}/__init__.py" in names
    top = sorted(n for n in code if n.count("/") == 1)
    assert top == ["clirmatrix/__init__.py", "clirmatrix/__main__.py", "clirmatrix/irds.py"], top  # the public API and the command's entry: nothing generic
    # What the tests and benches share (bench/support/: toy releases, Lucene and its Java harnesses) is not the product.
    support = [n for n in names if n.endswith(".java") or "support" in n.split("/") or Path(n).stem in ("toy", "lucene_jar")]
    assert not support, support
    # The measured cost of each part (bench/scale_bench.py writes it), which planning a build reads.
    model = orjson.loads(zipfile.ZipFile(wheel).read("clirmatrix/pipeline/cost_model.json"))
    assert model["measured"] and model["command"].startswith("python bench/scale_bench.py")
    assert all(rate > 0 for name, rate in model["rates_cpu_seconds"].items() if not name.startswith("merge"))


def test_the_code_is_clean_under_the_linter():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(REPO)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.+)$", page.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_the_readme_starts_a_user_in_under_200_lines_and_every_doc_link_resolves():
    readme = REPO / "README.md"
    assert len(readme.read_text().splitlines()) <= 200
    for page in [readme, *sorted((REPO / "docs").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            if "://" in target or not (target or anchor):
                continue
            linked = page.parent / target if target else page
            assert linked.exists(), f"{page.name} links to {target}, which is not there"
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), f"{page.name} links to {target}#{anchor}, a heading {linked.name} does not have"


def test_the_code_cites_the_projects_own_docs():
    cited = set()
    for path in [*REPO.glob("pipeline/**/*.py"), *REPO.glob("beam_jobs/*.py"), *REPO.glob("models/**/*.py"), *REPO.glob("schemas/*.py")]:
        text = path.read_text()
        assert "shared/docs" not in text and not re.search(r"(?<![/\w])(PIPELINE|MODELS|FORMATS|BEAM)\.md", text), path
        cited |= set(re.findall(r"docs/(\w+\.md)", text))
    assert cited and all((REPO / "docs" / name).exists() for name in cited), cited


def test_the_library_imports_neither_the_beam_jobs_nor_the_trainer_nor_the_command_line():
    import ast

    forbidden = {"pipeline": ("clirmatrix.beam_jobs", "clirmatrix.models", "clirmatrix.cli"), "schemas": ("clirmatrix.pipeline", "clirmatrix.beam_jobs", "clirmatrix.models", "clirmatrix.cli"),
                 "models": ("clirmatrix.beam_jobs", "clirmatrix.cli"), "beam_jobs": ("clirmatrix.models", "clirmatrix.cli"), "cli": ()}  # fmt: skip
    for package, banned in forbidden.items():
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names] if isinstance(node, ast.Import) else []
                assert not any(name.startswith(banned) for name in names), f"{path.relative_to(REPO)} imports {names}"
                # The public API (clirmatrix/) sits above every layer: nothing inside imports it back.
                if isinstance(node, ast.ImportFrom) and node.module == "clirmatrix":  # only its subpackages (from clirmatrix import pipeline)
                    names = [f"clirmatrix.{a.name}" for a in node.names if a.name not in forbidden]
                assert not any(name == "clirmatrix" or name.startswith("clirmatrix.") and name.split(".")[1] not in forbidden for name in names), f"{path.relative_to(REPO)} imports the API {names}"
