"""The floors inside ``pipeline/`` (docs/architecture.md): a module imports from its own floor or below, never in a loop;
and bench/'s scripts and its support package (bench/support/) import one another one way only.

Every import counts, at the top of a module, inside a function (imported when it runs)
or under ``TYPE_CHECKING`` (read by the type checker): each is a dependency of the
module on the one it names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = "clirmatrix.pipeline"
# pipeline's floors, lowest first: a top-level module (errors.py) or a subpackage (io/) each.
FLOORS = ("errors", "settings", "io", "engines", "method", "formats", "extraction", "output", "config", "tools")
BENCH_OUTPUT = "out"  # bench/out/: what the benches write (git ignores it), not modules of bench/


def _modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Every module under ``root`` by its dotted name (a package by its ``__init__.py``): pipeline/'s under ``clirmatrix.pipeline``,
    bench/'s (``package=""``) as the scripts import them, by file name (``part_floors``, ``support.toy``); bench/out/ (outputs) left out."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if not package and parts[0] == BENCH_OUTPUT:
            continue
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        modules[".".join((package, *parts) if package else parts)] = path
    return modules


def _module_of(target: str, modules: dict[str, Path]) -> str | None:
    """The module that ``target`` names or lies in (``a.b.NAME``: ``a.b``), or None when it is not one of ``modules``."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, name within ``modules``) of each import in ``path``, wherever it stands; ``from a import b`` names ``a.b`` when that is a module."""
    found = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *([node.module] if node.module else [])]) if node.level else node.module
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        found += [(node.lineno, target) for target in targets if _module_of(target, modules)]
    return found


def _floor(module: str) -> int:
    """The floor of a module of pipeline/ (the package itself: below all); an unknown one fails, naming it."""
    top = module.removeprefix(PACKAGE).lstrip(".").split(".")[0]
    if not top:
        return -1
    assert top in FLOORS, f"pipeline/{top} has no floor: give it one in FLOORS and in docs/architecture.md"
    return FLOORS.index(top)


def _graph(root: Path, package: str = PACKAGE) -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    """The modules and, for each, the modules among them it imports (with the line of the first such import)."""
    modules = _modules(root, package)
    edges: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        for line, target in _imports(name, path, modules):
            target = _module_of(target, modules)  # a name inside a module: the module
            if target != name:
                edges[name].setdefault(target, line)
    return modules, edges


def upward_imports(root: Path) -> list[str]:
    """Each import from a higher floor, as ``path:line: module (floor) imports module (floor)``."""
    modules, edges = _graph(root)
    return [
        f"{modules[name].relative_to(root.parent)}:{line}: {name} ({FLOORS[_floor(name)]}) imports {target} ({FLOORS[_floor(target)]}), a higher floor"
        for name in modules
        for target, line in sorted(edges[name].items(), key=lambda item: item[1])
        if _floor(target) > _floor(name)
    ]


def import_loops(root: Path, package: str = PACKAGE) -> list[str]:
    """Each loop of imports among the modules, one line each: its modules in order, with the line of every import."""
    modules, edges = _graph(root, package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        index[name] = low[name] = len(index)
        stack.append(name)
        for target in edges[name]:
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while not component or component[-1] != name:
                component.append(stack.pop())
            if len(component) > 1:
                loops.append(_one_loop(sorted(component), edges))

    for name in modules:
        if name not in index:
            visit(name)

    def where(a: str, b: str) -> str:
        return f"{modules[a].relative_to(root.parent)}:{edges[a][b]}"

    return [" -> ".join(f"{a} ({where(a, b)})" for a, b in zip(loop, loop[1:])) + f" -> {loop[-1]}" for loop in loops]


def _one_loop(component: list[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A shortest loop through the first module of a strongly connected component, first module repeated at its end."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for name in frontier:
            for target in sorted(edges[name]):
                if target == start:
                    return [*paths[name], start]
                if target in members and target not in paths:
                    paths[target] = [*paths[name], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no loop through {start}")


def test_every_import_inside_pipeline_goes_to_its_own_floor_or_below():
    upward = upward_imports(REPO / "pipeline")
    assert not upward, "pipeline/'s floors (docs/architecture.md) broken:\n" + "\n".join(upward)


def test_no_modules_of_pipeline_import_each_other_in_a_loop():
    loops = import_loops(REPO / "pipeline")
    assert not loops, "import loops inside pipeline/:\n" + "\n".join(loops)


def test_no_modules_of_bench_import_each_other_in_a_loop():
    """A bench takes what it needs from another bench or from bench/support/, which never take it back (inside a function either)."""
    loops = import_loops(REPO / "bench", package="")
    assert not loops, "import loops inside bench/: move what both need to one side or to a module of its own\n" + "\n".join(loops)


def test_tests_and_benches_import_by_name_never_through_sys_path():
    """What tests and benches share lives in bench/support/ (on the path for both); none edits ``sys.path`` to reach a folder."""
    edits = []
    for path in sorted([*(REPO / "tests").glob("*.py"), *(REPO / "bench").rglob("*.py")]):
        if path.relative_to(REPO).parts[:2] == ("bench", BENCH_OUTPUT):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "path" and node.attr in {"insert", "append", "extend"}:
                if isinstance(node.value.value, ast.Name) and node.value.value.id == "sys":
                    edits.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not edits, "sys.path edited (move what is shared to bench/support/): " + ", ".join(edits)


def test_the_floors_are_those_docs_architecture_md_gives():
    order = "floors, lowest first: " + " -> ".join(FLOORS)
    assert order in " ".join((REPO / "docs" / "architecture.md").read_text(encoding="utf-8").split()).replace("`", ""), f"docs/architecture.md does not say {order!r}"
    assert {path.stem if path.is_file() else path.name for path in (REPO / "pipeline").iterdir() if path.suffix == ".py" or (path / "__init__.py").is_file()} - {"__init__"} == set(FLOORS)


def test_the_check_finds_an_upward_import_anywhere_and_a_loop(tmp_path):
    """An import inside a function or under TYPE_CHECKING counts, relative ones too; a loop is named with its lines."""
    root = tmp_path / "pipeline"
    for folder in ("io", "method", "tools"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "errors.py").write_text("")
    (root / "io" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from clirmatrix.pipeline.method import b\n")
    (root / "method" / "b.py").write_text("def f():\n    from ..tools import c\n")
    (root / "tools" / "c.py").write_text("import clirmatrix.pipeline.io.a\nfrom clirmatrix.pipeline import errors\n")
    assert upward_imports(root) == [
        "pipeline/io/a.py:3: clirmatrix.pipeline.io.a (io) imports clirmatrix.pipeline.method.b (method), a higher floor",
        "pipeline/method/b.py:2: clirmatrix.pipeline.method.b (method) imports clirmatrix.pipeline.tools.c (tools), a higher floor",
    ]
    assert import_loops(root) == [
        "clirmatrix.pipeline.io.a (pipeline/io/a.py:3) -> clirmatrix.pipeline.method.b (pipeline/method/b.py:2) -> clirmatrix.pipeline.tools.c (pipeline/tools/c.py:1) -> clirmatrix.pipeline.io.a"
    ]


def test_the_check_finds_a_loop_among_bench_scripts_through_imports_inside_functions(tmp_path):
    """As bench/part_floors.py and propagate_bench.py were, each importing the other inside a function; bench/out/ is not read."""
    root = tmp_path / "bench"
    for folder in ("support", "out"):
        (root / folder).mkdir(parents=True)
    (root / "support" / "__init__.py").write_text("")
    (root / "support" / "toy.py").write_text("import numpy\nfrom clirmatrix.pipeline.output import layout\n")
    (root / "part_floors.py").write_text("from support import toy\n\n\ndef default_parts():\n    from propagate_bench import carry_part\n")
    (root / "propagate_bench.py").write_text("import support.toy\n\n\ndef carry_part():\n    from part_floors import Part, plans\n")
    (root / "out" / "part_floors.py").write_text("import propagate_bench\n")
    modules, edges = _graph(root, package="")
    assert sorted(modules) == ["part_floors", "propagate_bench", "support", "support.toy"]
    assert edges["part_floors"] == {"support.toy": 1, "propagate_bench": 5} and edges["propagate_bench"] == {"support.toy": 1, "part_floors": 5}
    assert import_loops(root, package="") == ["part_floors (bench/part_floors.py:5) -> propagate_bench (bench/propagate_bench.py:5) -> part_floors"]


def test_what_moved_down_is_still_exported_where_it_was():
    """config and layout export what they exported before, the very objects of the floor below."""
    from clirmatrix.pipeline import config, settings
    from clirmatrix.pipeline.method import split_names
    from clirmatrix.pipeline.output import layout

    for name in ("DEFAULT_SEED", "DEFAULT_MIN_DOCS", "DEFAULT_TRAIN_SIZE", "DEFAULT_EVAL_SIZE", "DEFAULT_SPLIT_MB", "DEFAULT_SPLIT_BYTES", "ConfigError", "comma_list"):
        assert getattr(config, name) is getattr(settings, name) and name in config.__all__
    assert layout.SPLITS is split_names.SPLITS and layout.EVAL_SPLITS is split_names.EVAL_SPLITS


def test_an_engine_is_made_from_the_engine_settings_of_the_stage():
    from clirmatrix.pipeline.engines.base import Bm25Settings
    from clirmatrix.pipeline.engines.registry import EngineSettings
    from clirmatrix.pipeline.method.retrieval import RetrievalSettings
    from clirmatrix.pipeline.settings import ConfigError

    stage = RetrievalSettings("elasticsearch", k=7, bm25=Bm25Settings(b=0.5), threads=3, es_url="en=http://a:9, de=http://b:9", docs_key="d1", shard_docs=5)
    engine = stage.engine_settings
    assert engine == EngineSettings(Bm25Settings(b=0.5), 3, "en=http://a:9, de=http://b:9", "d1")
    assert engine.es_url_for("de") == "http://b:9" and EngineSettings(Bm25Settings(), 1, "http://c:9", "").es_url_for("fr") == "http://c:9"
    with pytest.raises(ConfigError, match="--es-url names no Elasticsearch for fr"):
        engine.es_url_for("fr")
