"""Lucene itself, for checking the embedded engine against it: a JDK 21+ and the Anserini fat jar.

The embedded engine promises Lucene's analysis and Lucene's BM25 (Elasticsearch 8
runs Lucene 9). The way to hold it to that is to run Lucene: the Anserini 1.7.1 fat
jar (Lucene 9.9.1 with its analysis modules) ships inside the pyserini 1.6.0 source
distribution on PyPI, so ``anserini_jar`` fetches that one file with ``pip download``
(no dependencies) into a cache. Our Java harnesses (``java/*.java`` beside this module, our own code)
are compiled against it on first use. Tests and ``bench/engine_bench.py --lucene`` use
this module (test and bench support, not part of clirmatrix); without a JDK 21+ they skip and say why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from clirmatrix.pipeline.io.localio import PypiFetchError, fetch_from_pypi, user_cache_dir

PYSERINI = "pyserini==1.6.0"
JAR_NAME = "anserini-1.7.1-fatjar.jar"
LUCENE_VERSION = "9.9.1"
MIN_JAVA = 21
JAVA_SOURCES = Path(__file__).parent / "java"


class LuceneUnavailable(RuntimeError):
    """No JDK 21+ or no Anserini jar: the message says which, and how to provide it."""


def cache_dir() -> Path:
    """Where the jar and compiled classes live: the user's cache folder (``localio.user_cache_dir``)."""
    return user_cache_dir()


def _java_version(home: Path) -> int | None:
    release = home / "release"
    if not (home / "bin" / "javac").exists() or not release.exists():
        return None
    found = re.search(r'JAVA_VERSION="(\d+)', release.read_text(errors="replace"))
    return int(found.group(1)) if found else None


def java_home() -> Path:
    """A JDK with ``javac`` of version 21 or later: ``$CLIRMATRIX_JAVA_HOME``, ``$JAVA_HOME``, or one under /usr/lib/jvm."""
    candidates = [os.environ.get("CLIRMATRIX_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    javac = shutil.which("javac")
    if javac:
        candidates.append(str(Path(javac).resolve().parent.parent))
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(str(p) for p in sorted(jvm.iterdir(), reverse=True))
    for candidate in candidates:
        if candidate and (_java_version(Path(candidate)) or 0) >= MIN_JAVA:
            return Path(candidate)
    raise LuceneUnavailable(f"no JDK {MIN_JAVA}+ found (set CLIRMATRIX_JAVA_HOME); Lucene {LUCENE_VERSION} needs Java {MIN_JAVA}")


def anserini_jar(fetch: bool = True) -> Path:
    """The Anserini fat jar: ``$CLIRMATRIX_ANSERINI_JAR``, else the cache, else fetched from PyPI (pyserini's sdist)."""
    given = os.environ.get("CLIRMATRIX_ANSERINI_JAR")
    if given:
        if not Path(given).is_file():
            raise LuceneUnavailable(f"CLIRMATRIX_ANSERINI_JAR={given} is not a file")
        return Path(given)
    jar = cache_dir() / "anserini" / JAR_NAME
    if jar.is_file():
        return jar
    if not fetch:
        raise LuceneUnavailable(f"{jar} is missing (it comes inside {PYSERINI} on PyPI)")
    try:
        return fetch_from_pypi(PYSERINI, JAR_NAME, jar)
    except PypiFetchError as error:
        raise LuceneUnavailable(str(error)) from error


def classpath(*sources: str) -> str:
    """Compile ``java/<source>.java`` against the jar (once per source version); the classpath that runs them."""
    home, jar = java_home(), anserini_jar()
    out = cache_dir() / "java-classes"
    for source in sources:
        path = JAVA_SOURCES / f"{source}.java"
        stamp = out / f"{source}.{int(path.stat().st_mtime_ns)}.{path.stat().st_size}.ok"
        if stamp.exists():
            continue
        out.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([str(home / "bin" / "javac"), "-cp", str(jar), "-d", str(out), str(path)], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"javac {path.name} failed:\n{done.stderr}")
        for old in out.glob(f"{source}.*.ok"):
            old.unlink()
        stamp.touch()
    return os.pathsep.join([str(out), str(jar)])


def java_command(main_class: str, *args: str, heap: str = "4g", jvm_options: Sequence[str] = ()) -> list[str]:
    """The command line that runs ``main_class`` (a source under ``java/``) with Lucene on the classpath."""
    return [str(java_home() / "bin" / "java"), f"-Xmx{heap}", *jvm_options, "-cp", classpath(main_class), main_class, *args]


def available() -> str | None:
    """None when Lucene can run here (fetching the jar if needed), else the reason it cannot."""
    try:
        java_home()
        anserini_jar()
    except LuceneUnavailable as error:
        return str(error)
    return None
