"""The repository keeps its promises: the README's test command is what CI runs; the wheel is clirmatrix only."""

import re
import subprocess
import sys
import zipfile

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


def test_wheel_holds_only_the_clirmatrix_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("clirmatrix-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    code = [n for n in names if ".dist-info/" not in n]
    assert code and all(n.startswith("clirmatrix/") for n in code)
    for package in ("pipeline", "beam_jobs", "schemas", "models", "pipeline/formats", "pipeline/engines", "models/losses", "models/modeling", "models/recipes"):
        assert f"clirmatrix/{package}/__init__.py" in names
    assert not any(n.startswith("clirmatrix/__init__") for n in names)  # a namespace: nothing generic at the top


def test_the_code_is_clean_under_the_linter():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(REPO)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
