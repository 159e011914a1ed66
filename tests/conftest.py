"""Shared fixtures: small generated dumps, one extraction run, and the real samples in shared/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("CLIRMATRIX_FIXTURES", REPO.parent / "shared" / "fixtures"))
SAMPLE_LANGS = ("en", "de", "fr", "ru", "ar", "zh", "ja")


MAX_TEST_PROCESSES = 4  # each process builds the session's fixtures (sample builds, toy models) again


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: a process per core, at most ``MAX_TEST_PROCESSES``."""
    return max(1, min(MAX_TEST_PROCESSES, len(os.sched_getaffinity(0))))


def pytest_collection_modifyitems(config, items) -> None:
    """The slow tests first (in their file order), so that with ``--dist load`` they spread over the processes from the start."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True, scope="session")
def _private_train_cache(tmp_path_factory):
    """Training's indexes go to a folder of the session's (child processes too), never to the user's cache."""
    saved = os.environ.get("CLIRMATRIX_TRAIN_CACHE")
    os.environ["CLIRMATRIX_TRAIN_CACHE"] = str(tmp_path_factory.mktemp("train-cache"))
    yield
    if saved is None:
        os.environ.pop("CLIRMATRIX_TRAIN_CACHE", None)
    else:
        os.environ["CLIRMATRIX_TRAIN_CACHE"] = saved


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` of a command a test interrupts: SIGINT at its default, as a terminal starts a command.

    Started in the background by a non-interactive shell (as a CI may start the suite),
    the suite inherits SIGINT ignored, and so would the command: Python then never
    installs its handler, and Ctrl-C does nothing.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def real_fixture(*parts: str) -> Path:
    """A file of the real samples, or a skip saying where it was looked for."""
    path = FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real sample {path} not present (set CLIRMATRIX_FIXTURES to the shared/fixtures folder)")
    return path


def write_sample(tmp_path_factory, langs: tuple[str, ...], seed: int):
    """(dumps folder, generator truth) of ~300 articles per language, one bad record per dump."""
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    root = tmp_path_factory.mktemp("sample")
    world = write_sample_dumps(root / "dumps", docs_per_lang=300, langs=langs, seed=seed, inputs="classic")  # the 2020 formats: the pinned release
    return root / "dumps", world


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    """Generated dumps for 7 languages."""
    return write_sample(tmp_path_factory, SAMPLE_LANGS, seed=5)


@pytest.fixture(scope="session")
def extracted(sample, tmp_path_factory):
    """One in-process extraction of the sample (bad-input limit raised: 1 bad in ~300)."""
    from dataclasses import replace

    from clirmatrix.beam_jobs.extract import run_extract
    from clirmatrix.pipeline.config import BuildConfig

    dumps, world = sample
    work = tmp_path_factory.mktemp("work")
    result = run_extract(replace(BuildConfig(), dumps=str(dumps), min_docs=100, max_bad_fraction=0.01, workers=1), str(work))
    return work, result, world


TRAIN, EVAL = 60, 12  # base train and dev/test sizes of the sample build


def build_config(dumps: Path, out: Path, **changes):
    """Settings of the sample build: small splits, one worker."""
    from dataclasses import replace

    from clirmatrix.pipeline.config import BuildConfig

    config = BuildConfig(
        dumps=str(dumps), out=str(out), min_docs=100, max_bad_fraction=0.01, train_size=TRAIN, eval_size=EVAL, workers=1
    )
    return replace(config, **changes)


@pytest.fixture(scope="session")
def world8(tmp_path_factory):
    """Generated dumps of the 8 MULTI-8 languages."""
    from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES

    return write_sample(tmp_path_factory, MULTI8_LANGUAGES, seed=7)


@pytest.fixture(scope="session")
def built(world8, tmp_path_factory):
    """(release root, build result, generator truth): one ``clirmatrix build`` of the 8-language sample."""
    from clirmatrix.beam_jobs.build import run_build

    dumps, world = world8
    out = tmp_path_factory.mktemp("build") / "out"
    result = run_build(build_config(dumps, out))
    return out, result, world


def without_location(files: dict[str, bytes], root_url: str) -> dict[str, bytes]:
    """Released files with the index's absolute URLs cut back to paths: the index names where a build is, the rest must not."""
    import gzip

    from clirmatrix.pipeline.output.layout import INDEX, MANIFEST, REPORT

    cleaned = {path: data for path, data in files.items() if path not in (MANIFEST, REPORT)}  # both name the folder too
    if INDEX in cleaned:
        cleaned[INDEX] = gzip.decompress(cleaned[INDEX]).replace(root_url.rstrip("/").encode() + b"/", b"")
    return cleaned


def first_differences(mine: dict[str, bytes], theirs: dict[str, bytes], shown: int = 5) -> list[str]:
    """Where two sets of released files differ: each differing path with its first differing line (gzip opened), for a failure message."""
    import gzip

    found = []
    for path in sorted(set(mine) | set(theirs)):
        a, b = mine.get(path), theirs.get(path)
        if a == b:
            continue
        if a is None or b is None:
            found.append(f"{path}: only in {'theirs' if a is None else 'mine'}")
        else:
            lines_a, lines_b = ((gzip.decompress(x) if path.endswith(".gz") else x).splitlines() for x in (a, b))
            at = next((i for i, (x, y) in enumerate(zip(lines_a, lines_b)) if x != y), min(len(lines_a), len(lines_b)))
            line_a, line_b = (lines[at][:300] if at < len(lines) else b"<end>" for lines in (lines_a, lines_b))
            found.append(f"{path}: line {at + 1} of {len(lines_a)}/{len(lines_b)}: {line_a!r} != {line_b!r}")
        if len(found) == shown:
            break
    return found


def released(out: Path) -> dict[str, bytes]:
    """Every file of a local build but its work folder and manifest, with the index's URLs made relative."""
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and ".work" not in p.parts}
    return without_location(files, out.resolve().as_uri())
