"""The commands themselves, stopped or fed a cut file at random moments: one line each time, and a rerun that completes.

Each case runs the real ``clirmatrix`` in a process (and session) of its own, as a user
does, its stdout and stderr read together:

- ``bz2 cut``: the sample's XML dump (``frwiki-...-multistream.xml.bz2``; the build never
  reads the multistream index beside it) cut at a random byte, then ``clirmatrix build``: it
  must fail with exit 2 and one ``error:`` line naming the file, no traceback;
- ``build``, ``export``, ``dumps fetch``: a SIGINT at a random moment (uniform over the
  first 80% of the command's clean run time, loading included; runs vary), to the process
  group (a terminal's Ctrl-C) or to the command alone (``kill -INT``), every other case.
  It must end with exit 130 and
  one line, ``interrupted...``, nothing else after the signal but its own log lines, no
  traceback (``Traceback``, ``Exception ignored``, an ``ERROR`` record) anywhere, no
  process of its session left; then the same command, run again, must complete (exit 0)
  and give the bytes of an uninterrupted run: the release files and the index for
  ``build`` (md5s, and each file's md5 and size in the index), every exported file but the hidden unit reports for ``export``, the
  dumps themselves for ``dumps fetch`` (from the local dumps-site server of
  bench/support/dumps_site.py, throttled so the fetch lasts seconds).

Verdicts: **one line** (exit 130, the line, nothing more), **finished** (the command had
ended before the signal's moment: nothing to judge), **silent** (another exit code, or
no ``interrupted`` line, or a cut file not named), **traceback**; and, for the rerun,
**completed** and **same bytes**.

Usage: python bench/fuzz_bench.py --commands [--cases 24] [--seed 1] [--docs-per-lang 2000]
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

CLI = [sys.executable, "-m", "clirmatrix"]  # what the clirmatrix script runs, Ctrl-C while it loads included
KINDS = ("bz2 cut", "build", "export", "dumps fetch")
TRACEBACK_SIGNS = ("Traceback", "Exception ignored", " ERROR ")


@dataclass(frozen=True)
class CommandCase:
    kind: str
    moment: str  # when the signal went (or where the file was cut), and to whom
    verdict: str  # one line, finished, silent, traceback (bz2 cut: one line, silent, traceback)
    rerun: str  # completed, failed, or "" (none)
    same: str  # same bytes, differ, or ""
    detail: str


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal starts a command, whatever the bench inherited


class Running:
    """A command in a session of its own; its stdout and stderr read together as they come."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(CLI + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=_default_sigint, env={**os.environ, "COLUMNS": "1000", **(env or {})})
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=lambda: [self.chunks.append(c) for c in iter(lambda: self.process.stdout.read1(65536), b"")], daemon=True)
        self.reader.start()

    @property
    def output(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def finish(self, timeout: float = 900) -> tuple[int, str]:
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self.reader.join(5)
        return self.process.returncode, self.output

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in session(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()


def session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (Linux: read from /proc)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X", b"x") and int(fields[3]) == sid:
            found.append(int(name))
    return found


def run(args: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> tuple[int, str, float]:
    began = time.monotonic()
    code, output = Running(args, env).finish(timeout)
    return code, output, time.monotonic() - began


def interrupt(args: list[str], at: float, group: bool, env: dict[str, str] | None = None) -> tuple[str, str]:
    """(verdict, detail) of the command stopped ``at`` seconds after its start."""
    command = Running(args, env)
    try:
        command.process.wait(timeout=at)
        return "finished", f"ended (exit {command.process.returncode}) before {at:.2f} s"
    except subprocess.TimeoutExpired:
        pass
    before = len(command.output)
    sent = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(command.process.pid, signal.SIGINT) if group else os.kill(command.process.pid, signal.SIGINT)
    code, output = command.finish(timeout=60)
    took = time.monotonic() - sent
    left, gone_by = session(command.process.pid), time.monotonic() + 3
    while left and time.monotonic() < gone_by:
        time.sleep(0.05)
        left = session(command.process.pid)
    command.kill()
    after = [line for line in output[before:].splitlines() if line.strip() and " INFO " not in line and " WARNING " not in line]
    if any(sign in output for sign in TRACEBACK_SIGNS):
        shown = next(line for line in output.splitlines() if any(sign in line for sign in TRACEBACK_SIGNS))
        return "traceback", f"exit {code} after {took:.2f} s: {shown[:200]}"
    said = [line for line in after if line.startswith("interrupted")]
    if code != 130 or len(said) != 1 or after[-1:] != said or left:
        return "silent", f"exit {code} after {took:.2f} s, {len(left)} processes left, after the signal: {after[-3:]}"
    return "one line", f"exit 130 after {took:.2f} s: {said[0][:160]}"


def md5s(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(str(p.relative_to(root)).startswith(s) for s in skip)}


def release_md5s(out: Path) -> dict[str, str]:
    """The md5 of every released file, and what the index says of each (its md5 and size: its URLs name the folder)."""
    import gzip

    import orjson

    from clirmatrix.pipeline.output.jsonl import walk_release

    index = orjson.loads(gzip.decompress((out / "downloads.json.gz").read_bytes()))
    listed = {f"index {context}/{key}": f"{entry.get('expected_md5')} {entry.get('size')}" for context, entries in index.items()
              if isinstance(entries, dict) for key, entry in entries.items() if isinstance(entry, dict)}
    return {path: hashlib.md5((out / path).read_bytes()).hexdigest() for path, item in walk_release(out) if item is not None} | listed


# --- the cases ---------------------------------------------------------------------------------


class Bench:
    """The sample dumps, a reference build, export and fetch of them, and where each case works."""

    def __init__(self, work: Path, docs_per_lang: int, min_docs: int) -> None:
        self.work, self.min_docs = work, min_docs
        self.dumps = work / "dumps"
        if not (self.dumps / "sample-truth.json").exists():
            shutil.rmtree(self.dumps, ignore_errors=True)
            clean = ["--clean"] if docs_per_lang < 1200 else []  # a broken record a dump is over the default bad fraction below that
            code, output, _ = run(["sample", str(self.dumps), "--docs-per-lang", str(docs_per_lang), *clean])
            assert code == 0, output
        self.reference = work / "reference"
        shutil.rmtree(self.reference, ignore_errors=True)
        code, output, self.build_seconds = run(self.build_args(self.dumps, self.reference))
        assert code == 0, output
        self.release = release_md5s(self.reference)
        code, output, self.export_seconds = run(self.export_args(work / "reference-export"))
        assert code == 0, output
        self.exported = md5s(work / "reference-export", skip=(".export",))
        self.site = None

    def build_args(self, dumps: Path, out: Path) -> list[str]:
        return ["build", "--dumps", str(dumps), "--out", str(out), "--min-docs", str(self.min_docs)]

    def export_args(self, to: Path) -> list[str]:
        return ["export", str(self.reference), "--format", "hf", "--to", str(to)]

    def bz2_cut(self, number: int, rng: random.Random) -> CommandCase:
        dumps = self.work / "cut-dumps"
        shutil.rmtree(dumps, ignore_errors=True)
        shutil.copytree(self.dumps, dumps)
        victim = rng.choice(sorted(dumps.glob("*.xml.bz2")))  # what the build reads (it never opens the multistream index)
        data = victim.read_bytes()
        cut = rng.randrange(1, len(data))
        victim.write_bytes(data[:cut])
        out = self.work / "cut-out"
        shutil.rmtree(out, ignore_errors=True)
        code, output, seconds = run(self.build_args(dumps, out))
        moment = f"{victim.name} cut at byte {cut:,} of {len(data):,}"
        errors = [line for line in output.splitlines() if line.startswith("error:")]
        if any(sign in output for sign in TRACEBACK_SIGNS):
            return CommandCase("bz2 cut", moment, "traceback", "", "", next(line for line in output.splitlines() if any(s in line for s in TRACEBACK_SIGNS))[:200])
        if code != 2 or len(errors) != 1 or str(victim) not in errors[0]:
            return CommandCase("bz2 cut", moment, "silent", "", "", f"exit {code}: {(errors or output.splitlines()[-1:])[:2]}")
        return CommandCase("bz2 cut", moment, "one line", "", "", errors[0][:200])

    def build_case(self, number: int, rng: random.Random) -> CommandCase:
        out = self.work / "interrupted-build"
        shutil.rmtree(out, ignore_errors=True)
        at, group = rng.uniform(0, 0.8 * self.build_seconds), number % 2 == 0
        verdict, detail = interrupt(self.build_args(self.dumps, out), at, group)
        moment = f"at {at:.1f} s of {self.build_seconds:.1f}, to the {'process group' if group else 'command alone'}"
        code, output, _ = run(self.build_args(self.dumps, out))
        if code != 0:
            return CommandCase("build", moment, verdict, "failed", "", f"{detail}; rerun exit {code}: {output.splitlines()[-1:]}")
        same = release_md5s(out) == self.release
        return CommandCase("build", moment, verdict, "completed", "same bytes" if same else "differ", detail)

    def export_case(self, number: int, rng: random.Random) -> CommandCase:
        to = self.work / "interrupted-export"
        shutil.rmtree(to, ignore_errors=True)
        at, group = rng.uniform(0, 0.8 * self.export_seconds), number % 2 == 0
        verdict, detail = interrupt(self.export_args(to), at, group)
        moment = f"at {at:.1f} s of {self.export_seconds:.1f}, to the {'process group' if group else 'command alone'}"
        code, output, _ = run(self.export_args(to))
        if code != 0:
            return CommandCase("export", moment, verdict, "failed", "", f"{detail}; rerun exit {code}: {output.splitlines()[-1:]}")
        same = md5s(to, skip=(".export",)) == self.exported
        return CommandCase("export", moment, verdict, "completed", "same bytes" if same else "differ", detail)

    def fetch_case(self, number: int, rng: random.Random) -> CommandCase:
        site, listing, files, seconds = self._mirror()
        to = self.work / "fetched"
        shutil.rmtree(to, ignore_errors=True)
        args = ["dumps", "fetch", "--listing", str(listing), "--to", str(to)]
        at, group = rng.uniform(0, 0.8 * seconds), number % 2 == 0
        verdict, detail = interrupt(args, at, group)
        moment = f"at {at:.1f} s of {seconds:.1f}, to the {'process group' if group else 'command alone'}"
        code, output, _ = run(args)
        if code != 0:
            return CommandCase("dumps fetch", moment, verdict, "failed", "", f"{detail}; rerun exit {code}: {output.splitlines()[-1:]}")
        same = all((to / name).read_bytes() == data for name, data in files.items())
        return CommandCase("dumps fetch", moment, verdict, "completed", "same bytes" if same else "differ", detail)

    def _mirror(self):
        """The sample dumps served as a mirror on 127.0.0.1 (throttled), a saved listing of them, and a clean fetch's seconds."""
        if self.site is None:
            from support.dumps_site import DumpsSite

            from clirmatrix.pipeline.tools.dumps_site import DumpListing, OfferedFile

            site = DumpsSite(self.work / "site")
            offered, files = [], {}
            for dump in sorted(self.dumps.glob("*wiki*")):
                data = dump.read_bytes()
                path = f"mirror/{dump.name}"
                (site.root / path).parent.mkdir(parents=True, exist_ok=True)
                (site.root / path).write_bytes(data)
                offered.append(OfferedFile(dump.name, site.url + path, "html", dump.name.split("wiki")[0], "20261101", len(data), hashlib.md5(data).hexdigest()))
                files[dump.name] = data
            site.throttle = 2_000_000  # bytes a second a connection: a few seconds for the sample
            listing = self.work / "listing.json"
            listing.write_bytes(DumpListing(site.url, "latest", offered, offered).to_json())
            clean = self.work / "fetched-clean"
            shutil.rmtree(clean, ignore_errors=True)
            code, output, seconds = run(["dumps", "fetch", "--listing", str(listing), "--to", str(clean)])
            assert code == 0, output
            self.site = (site, listing, files, seconds)
        return self.site

    def close(self) -> None:
        if self.site is not None:
            self.site[0].stop()


def run_command_cases(cases: int, seed: int, work: Path, docs_per_lang: int, min_docs: int, kinds: tuple[str, ...] = KINDS) -> list[CommandCase]:
    """``cases`` cases, cycling through ``kinds``; each printed as it ends (a case takes seconds to a minute)."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    bench = Bench(work, docs_per_lang, min_docs)
    print(f"reference: build {bench.build_seconds:.1f} s, export {bench.export_seconds:.1f} s", flush=True)
    run_one = {"bz2 cut": bench.bz2_cut, "build": bench.build_case, "export": bench.export_case, "dumps fetch": bench.fetch_case}
    outcomes = []
    try:
        for number in range(cases):
            kind = kinds[number % len(kinds)]
            outcome = run_one[kind](number // len(kinds), rng)
            print(f"  {outcome.kind}: {outcome.moment}: {outcome.verdict}{', rerun ' + outcome.rerun if outcome.rerun else ''}"
                  f"{', ' + outcome.same if outcome.same else ''} ({outcome.detail})", flush=True)
            outcomes.append(outcome)
    finally:
        bench.close()
    return outcomes


def print_command_tally(outcomes: list[CommandCase]) -> None:
    print(f"{'command':<12} {'tried':>6} {'one line':>9} {'finished':>9} {'silent':>7} {'traceback':>10} {'rerun ok':>9} {'same bytes':>11}")
    for kind in KINDS:
        mine = [o for o in outcomes if o.kind == kind]
        if not mine:
            continue
        verdicts = Counter(o.verdict for o in mine)
        reruns = sum(o.rerun == "completed" for o in mine) if kind != "bz2 cut" else "-"
        same = sum(o.same == "same bytes" for o in mine) if kind != "bz2 cut" else "-"
        print(f"{kind:<12} {len(mine):>6} {verdicts['one line']:>9} {verdicts['finished']:>9} {verdicts['silent']:>7} {verdicts['traceback']:>10} {reruns:>9} {same:>11}")
    for outcome in outcomes:
        if outcome.verdict in ("silent", "traceback") or outcome.rerun == "failed" or outcome.same == "differ":
            print(f"{outcome.verdict}: {outcome.kind} {outcome.moment}: rerun {outcome.rerun or '-'}, {outcome.same or '-'}: {outcome.detail}")
