"""Lucene 9.9.1 itself as a benchmark contender: ``LuceneSide`` drives ``support/java/LuceneBench.java``.

The embedded engine claims Lucene's scores, so ``bench/engine_bench.py --lucene`` runs
Lucene on the same corpus and queries and compares speed and top-k lists. Lucene runs
in its own JVM (the Anserini fat jar, see ``support/lucene_jar.py``) that analyses
and builds every query once at start-up, then answers ``run`` (search every query once
and report this thread's CPU seconds), ``each`` (the same, each query's CPU time
apart) and ``dump`` (write the top k) on stdin. No Python is in the loop while Lucene
is timed, and the caller can interleave rounds of the two engines so that drift in the
machine's load hits both alike.

Why the JVM flags: the embedded engine's figure is one thread on one core, so the JVM
gets one core too. ``taskset -c CORE`` (when present) pins the whole process, JIT
compiler and garbage collector included, to that core; ``-XX:ActiveProcessorCount=1``
sizes the JVM's own thread pools for one core; ``-XX:+UseSerialGC`` collects on no
extra threads. ``run_round`` returns the searching thread's CPU time (ThreadMXBean),
which leaves out JIT and GC; the process's CPU time and the wall time of the same
round are in ``last_round``. Why the warm-up: the JVM interprets a method until it
has run often enough for the JIT (C2) to compile it, so the first rounds are slower
and would understate Lucene; ``warmup`` rounds run untimed before the caller's.

The index is built once per corpus (one thread, then ``forceMerge(1)``, so Lucene doc
ids are file positions) and cached in ``workdir`` under the corpus file's name and
size; ``index_seconds``, ``index_cpu_seconds`` and ``index_bytes`` are those of the
build, also when the index came from the cache (``index_cached`` says which).

    side = LuceneSide(Path("bench/out/engine_corpus_50000.jsonl"), titles, k=100, combine="best_fields", workdir=Path("bench/out/lucene"))
    try:
        cpu = min(side.run_round() for _ in range(3))   # CPU seconds for all queries
        lists = side.top_k()                            # per query: (positions int32, scores float32)
    finally:
        side.close()
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import numpy as np
from support import lucene_jar

MAIN_CLASS = "LuceneBench"
SCHEMA = 1  # bump when LuceneBench.java indexes differently: cached indexes are rebuilt
JVM_OPTIONS = ("-XX:ActiveProcessorCount=1", "-XX:+UseSerialGC")


def pinned_command(args: list[str], core: int | None, heap: str) -> list[str]:
    """``java ... LuceneBench args`` with the one-core JVM options, under ``taskset -c core`` when possible."""
    command = lucene_jar.java_command(MAIN_CLASS, *args, heap=heap, jvm_options=JVM_OPTIONS)
    taskset = shutil.which("taskset")
    if core is not None and taskset and hasattr(os, "sched_getaffinity"):
        allowed = os.sched_getaffinity(0)
        command = [taskset, "-c", str(core if core in allowed else min(allowed)), *command]
    return command


class LuceneSide:
    """Lucene serving ``queries`` over ``corpus`` in a JVM pinned to one core; see the module docstring."""

    def __init__(
        self,
        corpus: Path,
        queries: list[str],
        k: int = 100,
        combine: str = "best_fields",
        workdir: Path = Path("bench/out/lucene"),
        warmup: int = 3,
        core: int | None = 0,
        heap: str = "4g",
    ) -> None:
        reason = lucene_jar.available()
        if reason is not None:
            raise lucene_jar.LuceneUnavailable(reason)
        if combine not in ("best_fields", "most_fields"):
            raise ValueError(f"combine must be best_fields or most_fields, not {combine!r}")
        self.corpus, self.n_queries, self.k, self.core, self.heap = Path(corpus), len(queries), k, core, heap
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.index_dir, stats, self.index_cached = self._index()
        self.index_seconds: float = stats["wall"]  # wall clock of the one-thread build, JSON parsing included
        self.index_cpu_seconds: float = stats["process_cpu"]
        self.index_bytes: int = stats["bytes"]
        self.last_round: dict[str, float] = {}

        # Titles hold no line breaks, but any query could: for the analyzer they only separate words.
        fd, name = tempfile.mkstemp(prefix="queries-", suffix=".txt", dir=self.workdir)
        self._query_file = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(q.replace("\r", " ").replace("\n", " ") + "\n" for q in queries)
        self._log = open(self.workdir / "serve.log", "ab")
        command = pinned_command(["serve", str(self.index_dir), str(self._query_file), str(k), combine], core, heap)
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, encoding="utf-8")
        try:
            ready = self._reply()
            if ready["queries"] != self.n_queries:
                raise RuntimeError(f"LuceneBench read {ready['queries']} queries, not {self.n_queries}")
            self.analysis_cpu_seconds: float = ready["analysis_cpu"]  # analysing + building every Query, once
            for _ in range(warmup):
                self.run_round()
        except BaseException:
            self.close()
            raise

    def _index(self) -> tuple[Path, dict, bool]:
        """The cached index of the corpus and its build figures, building it first if missing."""
        key = f"index-{self.corpus.name}-{self.corpus.stat().st_size}-v{SCHEMA}"
        index_dir, stats_file = self.workdir / key, self.workdir / f"{key}.json"
        if index_dir.is_dir() and stats_file.is_file():
            return index_dir, json.loads(stats_file.read_text()), True
        partial = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=self.workdir))
        try:
            done = subprocess.run(pinned_command(["index", str(self.corpus), str(partial)], self.core, self.heap), capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"LuceneBench index failed ({done.returncode}):\n{done.stderr[-3000:]}")
            stats = json.loads(done.stdout.strip().splitlines()[-1])
            shutil.rmtree(index_dir, ignore_errors=True)
            partial.replace(index_dir)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        stats_file.write_text(json.dumps(stats) + "\n")
        return index_dir, stats, False

    def _command(self, line: str) -> dict:
        assert self._process.stdin is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()
        return self._reply()

    def _reply(self) -> dict:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            tail = (self.workdir / "serve.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"LuceneBench serve exited ({self._process.returncode}); serve.log ends:\n{tail}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"LuceneBench: {reply['error']}")
        return reply

    def _file_reply(self, command: str, suffix: str, ndmin: int) -> np.ndarray:
        """The integers that ``command FILE`` has the JVM write to a file beside the queries (the file is removed)."""
        path = self._query_file.with_suffix(suffix)
        try:
            self._command(f"{command} {path}")
            return np.loadtxt(path, dtype=np.int64, ndmin=ndmin)
        finally:
            path.unlink(missing_ok=True)

    def run_round(self) -> float:
        """Search every query once; the searching thread's CPU seconds (``last_round`` has process CPU and wall)."""
        self.last_round = self._command("run")
        return float(self.last_round["cpu"])

    def time_each_query(self) -> np.ndarray:
        """Search every query once, each timed alone: the searching thread's CPU nanoseconds per query (int64)."""
        return self._file_reply("each", ".each", ndmin=1)

    def top_k(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query, in order, the last round's top k: (corpus positions int32, scores float32), best first."""
        rows = self._file_reply("dump", ".hits", ndmin=2).reshape(-1, 3)
        cuts = np.searchsorted(rows[:, 0], np.arange(self.n_queries + 1))
        positions = rows[:, 1].astype(np.int32)
        scores = rows[:, 2].astype(np.uint32).view(np.float32)  # Float.floatToIntBits: exact
        return [(positions[a:b], scores[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]

    def close(self) -> None:
        """Stop the JVM and remove the query file (the index stays cached)."""
        process = getattr(self, "_process", None)
        if process is not None and process.poll() is None:
            try:
                assert process.stdin is not None
                process.stdin.write("quit\n")
                process.stdin.close()
                process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
        if process is not None and process.stdout is not None:
            process.stdout.close()
        self._query_file.unlink(missing_ok=True)
        self._log.close()

    def __enter__(self) -> LuceneSide:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()
