"""The release's gzip bytes on other CPUs: this machine's encoder output beside the same encoder's under qemu-user (issue 54).

A released file's md5 is published, so ``gzip_encoder.gzip_bytes(text)`` must give the
same bytes on every CPU a build may run on. This bench compresses a corpus with the
encoder's own module, loaded by path in a bare Python (the standard library, zlib-ng
and, for the contrast, isal; nothing of clirmatrix), once natively and once under each
emulated CPU, and compares every output byte for byte:

- x86-64 under ``qemu-x86_64-static -cpu MODEL``, running this machine's own Python
  and its zlib-ng wheel: qemu64 (SSE2/SSE3: no SSSE3, no SSE4.2), Nehalem (SSE4.2),
  Westmere (+PCLMULQDQ), SandyBridge (AVX), Haswell (AVX2, BMI2), max. qemu's TCG does
  not emulate AVX-512; this machine's own run covers it when it has it.
- aarch64 under ``qemu-aarch64-static -cpu MODEL``, running Debian's arm64 Python (a
  sysroot unpacked with ``dpkg -x``) and the aarch64 wheels of the same zlib-ng and
  isal versions: cortex-a53 (ARMv8.0 + CRC32, PMULL), neoverse-n1, a64fx (SVE), max
  (SVE2, SHA3).

Each run prints the CPU features the guest sees (CPUID and XCR0 on x86-64, the auxv
HWCAPs on aarch64), so the table shows which kernels were on offer.

Jobs: zlib-ng at the release's level (2) and, for the record, levels 1, 6 and 9
(``--levels``), through ``GzipEncoder`` (1 MiB slices, the fixed header); and isal at
level 2 as the old writer wrote (``isal.igzip.GzipFile``, mtime 0, the same 1 MiB
slices), as a contrast: it chooses kernels by CPU features, so its bytes differ.

Corpus (``corpus``): the text of a sample build's released files (BI-139 base and full,
MULTI-8, DOCS, DOCS-FULL), whole files and prefixes from 200 B to 4 MB (at and around
the 1 MiB slice), plus random bytes, highly repetitive text, an empty file and a single
byte. ``--build OUT`` names the build (default: /tmp/demo/out, else a sample build made
in a temporary folder, about a minute).

Setup (``--prepare [DIR]``, idempotent, prints what it did; Debian/Ubuntu, as root):
``apt-get install qemu-user-static``; ``dpkg --add-architecture arm64``; ``apt-get
download`` of the arm64 Python and the few libraries it loads, unpacked into
DIR/aarch64/sysroot; ``pip download`` of the aarch64 wheels of this machine's zlib-ng
and isal versions, unzipped into DIR/aarch64/site; one run under qemu as a check.
DIR defaults to $CLIRMATRIX_CROSS_CPU_ROOT or ~/.cache/clirmatrix/cross-cpu
(tests/test_gzip_bytes.py looks there).

Usage:
    python bench/cross_cpu_bench.py --prepare [DIR]
    python bench/cross_cpu_bench.py [--root DIR] [--build OUT] [--levels 2,1,6,9] [--isal-levels 2] [--cpus all|NAME,...] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from importlib import metadata, util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENCODER_PATH = REPO / "pipeline" / "output" / "gzip_encoder.py"
ROOT_ENV = "CLIRMATRIX_CROSS_CPU_ROOT"
CHUNK = 1 << 20  # gzip_encoder.CHUNK; the corpus puts inputs at and around it
PREPARE_COMMAND = "python bench/cross_cpu_bench.py --prepare"

# (name, qemu binary, -cpu model); the x86-64 ones run this machine's Python, the aarch64 ones the prepared sysroot's
X86_MODELS = ("qemu64", "Nehalem", "Westmere", "SandyBridge", "Haswell", "max")
ARM_MODELS = ("cortex-a53", "neoverse-n1", "a64fx", "max")
X86_QEMU = ("qemu-x86_64-static", "qemu-x86_64")
ARM_QEMU = ("qemu-aarch64-static", "qemu-aarch64")


def default_root() -> Path:
    """Where ``--prepare`` puts the aarch64 sysroot and wheels, and where the test looks for them."""
    return Path(os.environ.get(ROOT_ENV) or Path.home() / ".cache" / "clirmatrix" / "cross-cpu")


# --- what runs inside each (emulated) CPU --------------------------------------------------------

GUEST = r"""
import json, os, sys, time

def x86_features():
    import ctypes, mmap
    # cpuid(leaf, subleaf, out): eax, ebx, ecx, edx to out[0..3]; xgetbv(0) -> XCR0 (the state the OS saves: AVX needs bits 1-2)
    code = bytes.fromhex("5389f889f14989d00fa241890041895804418948084189500c5bc3")
    xgetbv = bytes.fromhex("31c90f01d048c1e2204809d0c3")
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    page.seek(64)
    page.write(xgetbv)
    base = ctypes.addressof(ctypes.c_char.from_buffer(page))
    cpuid = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p)(base)
    regs = (ctypes.c_uint32 * 4)()
    cpuid(1, 0, ctypes.addressof(regs))
    ecx1 = regs[2]
    cpuid(7, 0, ctypes.addressof(regs))
    ebx7, ecx7 = regs[1], regs[2]
    xcr0 = ctypes.CFUNCTYPE(ctypes.c_uint64)(base + 64)() if ecx1 >> 27 & 1 else 0
    avx_state = xcr0 & 6 == 6
    bits = [("ssse3", ecx1, 9), ("sse4.1", ecx1, 19), ("sse4.2", ecx1, 20), ("pclmulqdq", ecx1, 1), ("avx", ecx1, 28),
            ("avx2", ebx7, 5), ("bmi2", ebx7, 8), ("avx512f", ebx7, 16), ("avx512bw", ebx7, 30), ("vpclmulqdq", ecx7, 10)]
    seen = [name for name, reg, bit in bits if reg >> bit & 1 and (avx_state or not name.startswith(("avx", "vpclmul")))]
    return seen or ["sse2"]

def arm_features():
    import struct
    with open("/proc/self/auxv", "rb") as handle:
        aux = dict(struct.iter_unpack("<QQ", handle.read()))
    hwcap, hwcap2 = aux.get(16, 0), aux.get(26, 0)
    seen = [name for name, bit in (("asimd", 1), ("pmull", 4), ("crc32", 7), ("sha3", 17), ("sve", 22)) if hwcap >> bit & 1]
    return seen + (["sve2"] if hwcap2 >> 1 & 1 else [])

def features():
    machine = os.uname().machine
    try:
        return machine, x86_features() if machine == "x86_64" else arm_features() if machine == "aarch64" else []
    except Exception as error:  # a Python without ctypes, a kernel without /proc: the comparison still holds
        return machine, ["unknown: %s" % type(error).__name__]

def main():
    spec = json.loads(sys.argv[1])
    import importlib.util
    found = importlib.util.spec_from_file_location("gzip_encoder_under_test", spec["encoder"])
    encoder = importlib.util.module_from_spec(found)
    found.loader.exec_module(encoder)
    with open(spec["inputs"], "rb") as handle:
        lengths = json.loads(handle.readline())
        payload = memoryview(handle.read())
    texts, at = [], 0
    for length in lengths:
        texts.append(payload[at:at + length])
        at += length

    def zlib_ng(text, level):
        saved, encoder.LEVEL = encoder.LEVEL, level
        try:
            return encoder.gzip_bytes(text)
        finally:
            encoder.LEVEL = saved

    def isal(text, level):  # the writer before issue 54: isal's GzipFile, fed the same 1 MiB slices
        import io
        import isal.igzip
        sink = io.BytesIO()
        with isal.igzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0, compresslevel=level) as stream:
            for start in range(0, len(text), encoder.CHUNK):
                stream.write(text[start:start + encoder.CHUNK])
        return sink.getvalue()

    try:
        import isal as isal_package
        isal_version = isal_package.__version__
    except ImportError:
        isal_version = None
    machine, seen = features()
    report = {"machine": machine, "features": seen, "python": sys.version.split()[0], "zlib_ng": [encoder.PACKAGE_VERSION, encoder.LIBRARY_VERSION],
              "isal": isal_version, "sizes": {}, "seconds": {}}
    with open(spec["outputs"], "wb") as out:
        for name, level in spec["jobs"]:
            key = "%s %d" % (name, level)
            if name == "isal" and isal_version is None:
                continue
            compress = zlib_ng if name == "zlib-ng" else isal
            started, sizes = time.process_time(), []
            for text in texts:
                data = compress(text, level)
                out.write(data)
                sizes.append(len(data))
            report["sizes"][key] = sizes
            report["seconds"][key] = time.process_time() - started
    print(json.dumps(report))

main()
"""


# --- the emulated CPUs ------------------------------------------------------------------------------


@dataclass
class Cpu:
    """One CPU to run the guest on: its command prefix and environment, or why it cannot run here."""

    name: str
    argv: list[str] = field(default_factory=list)  # up to and including the Python and its flags
    env: dict[str, str] = field(default_factory=dict)
    missing: str | None = None  # why it cannot run here, and how to make it run


def _which(names: tuple[str, ...]) -> str | None:
    return next((found for found in map(shutil.which, names) if found), None)


def host_site(folder: Path) -> Path:
    """``folder``/site holding links to only this machine's zlib_ng and isal packages and their metadata: a guest Python sees nothing else."""
    site = folder / "site"
    site.mkdir(parents=True, exist_ok=True)
    for distribution, package in (("zlib-ng", "zlib_ng"), ("isal", "isal")):
        found = util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            continue
        source = Path(next(iter(found.submodule_search_locations)))
        version = metadata.version(distribution)
        info = next(source.parent.glob(f"{package}-{version}.dist-info"), None)  # importlib.metadata reads the version there
        for item in (source, info):
            if item is not None and not (site / item.name).exists():
                (site / item.name).symlink_to(item, target_is_directory=True)
    return site


def _guest_env(pythonpath: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=str(pythonpath), PYTHONNOUSERSITE="1")
    return env


def native(site: Path) -> Cpu:
    """This machine, running the guest in a bare Python (no site, only ``site`` from ``host_site`` on the path): the reference."""
    return Cpu(f"{platform.machine()} this machine (native)", [sys.executable, "-S"], _guest_env(site))


def x86(model: str, site: Path) -> Cpu:
    """This machine's Python under ``qemu-x86_64 -cpu model``, with ``site`` from ``host_site``: needs only qemu-user on an x86-64 machine."""
    name = f"x86-64 {model}"
    if platform.machine() != "x86_64":
        return Cpu(name, missing=f"this machine is {platform.machine()}, not x86-64: its Python cannot run under qemu-x86_64")
    qemu = _which(X86_QEMU)
    if qemu is None:
        return Cpu(name, missing=f"qemu-x86_64-static is not installed (Debian: apt-get install qemu-user-static; or {PREPARE_COMMAND})")
    return Cpu(name, [qemu, "-cpu", model, sys.executable, "-S"], _guest_env(site))


def aarch64(model: str, root: Path | None = None) -> Cpu:
    """Debian's arm64 Python with the aarch64 wheels, under ``qemu-aarch64 -cpu model``: needs ``--prepare``."""
    root = root or default_root()
    name = f"aarch64 {model}"
    qemu = _which(ARM_QEMU)
    ready = root / "aarch64" / "ready.json"
    if qemu is None:
        return Cpu(name, missing=f"qemu-aarch64-static is not installed; prepare with: {PREPARE_COMMAND} {root}")
    if not ready.exists():
        return Cpu(name, missing=f"no arm64 sysroot at {root / 'aarch64'} (set {ROOT_ENV} to another); prepare with: {PREPARE_COMMAND} {root}")
    state = json.loads(ready.read_text())
    sysroot, site = root / "aarch64" / "sysroot", root / "aarch64" / "site"
    python = sysroot / "usr" / "bin" / f"python{state['python']}"
    return Cpu(name, [qemu, "-cpu", model, "-L", str(sysroot), str(python), "-S"], _guest_env(site))


def cpus(names: str, root: Path, site: Path) -> list[Cpu]:
    """The emulated CPUs by name (``x86-64 qemu64``, ``aarch64 max``, ...; ``all``)."""
    every = [*(x86(model, site) for model in X86_MODELS), *(aarch64(model, root) for model in ARM_MODELS)]
    if names == "all":
        return every
    wanted = [name.strip() for name in names.split(",")]
    unknown = set(wanted) - {cpu.name for cpu in every}
    if unknown:
        raise SystemExit(f"unknown CPU(s) {sorted(unknown)}; known: {[cpu.name for cpu in every]}")
    return [cpu for cpu in every if cpu.name in wanted]


# --- running the guest ------------------------------------------------------------------------------


@dataclass
class Run:
    """One CPU's outputs: each job's bytes for each input, and what the guest said about itself."""

    cpu: str
    report: dict
    outputs: dict[str, list[bytes]]
    wall: float


def write_inputs(texts: list[bytes], path: Path) -> None:
    """The inputs as the guest reads them: a JSON line of lengths, then the texts back to back."""
    with open(path, "wb") as handle:
        handle.write(json.dumps([len(text) for text in texts]).encode() + b"\n")
        for text in texts:
            handle.write(text)


def start(cpu: Cpu, inputs: Path, jobs: list[tuple[str, int]], folder: Path) -> tuple[subprocess.Popen, Path, float]:
    """Start the guest on ``cpu``; ``finish`` collects it."""
    assert cpu.missing is None, cpu.missing
    outputs = folder / (re.sub(r"\W+", "-", cpu.name) + ".out")
    spec = json.dumps({"encoder": str(ENCODER_PATH), "inputs": str(inputs), "outputs": str(outputs), "jobs": jobs})
    process = subprocess.Popen([*cpu.argv, "-c", GUEST, spec], env=cpu.env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, outputs, time.perf_counter()


def finish(cpu: Cpu, started: tuple[subprocess.Popen, Path, float], timeout: float = 3600) -> Run:
    process, outputs, began = started
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise RuntimeError(f"{cpu.name}: the guest ran past {timeout:.0f} s") from None
    if process.returncode != 0:
        noise = "TCG doesn't support requested feature"  # qemu's warnings about models' features it does not emulate
        said = "\n".join(line for line in stderr.splitlines() if noise not in line)
        raise RuntimeError(f"{cpu.name}: the guest exited {process.returncode}:\n{said[-3000:]}")
    report = json.loads(stdout.strip().splitlines()[-1])
    blob, at, split = outputs.read_bytes(), 0, {}
    for key, sizes in report["sizes"].items():
        split[key] = []
        for size in sizes:
            split[key].append(blob[at : at + size])
            at += size
    outputs.unlink()
    return Run(cpu.name, report, split, time.perf_counter() - began)


def run_all(cpu_list: list[Cpu], texts: list[bytes], jobs: list[tuple[str, int]], parallel: int, folder: Path) -> list[Run]:
    """Every CPU's run, ``parallel`` at a time (in the order given)."""
    inputs = folder / "inputs.bin"
    write_inputs(texts, inputs)
    pending, running, done = list(cpu_list), [], []
    while pending or running:
        while pending and len(running) < parallel:
            cpu = pending.pop(0)
            running.append((cpu, start(cpu, inputs, jobs, folder)))
        cpu, started = running.pop(0)
        done.append(finish(cpu, started))
    return done


def differences(reference: Run, other: Run, key: str) -> list[tuple[int, int, int, int]]:
    """(input, reference size, other size, first differing byte) for each output of ``key`` that differs."""
    found = []
    for number, (ours, theirs) in enumerate(zip(reference.outputs[key], other.outputs[key])):
        if ours != theirs:
            first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            found.append((number, len(ours), len(theirs), first))
    return found


# --- corpora -----------------------------------------------------------------------------------------

_SYLLABLES = ("ka", "to", "rie", "mon", "sei", "lu", "gra", "vo", "zhi", "ne", "pa", "stu", "ber", "qui", "dor")


def _words(rng: random.Random, count: int) -> str:
    return " ".join("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(count))


def query_lines(rng: random.Random, size: int) -> bytes:
    """About ``size`` bytes of BI-139-like lines, exactly as the writers render them (``json.dumps`` with default settings)."""
    lines, total = [], 0
    while total < size:
        results = sorted(([str(rng.randint(1, 9_999_999)), rng.choice((6, 5, 4, 3, 3, 2, 2, 1, 1, 1))] for _ in range(rng.randint(1, 100))), key=lambda r: (-r[1], int(r[0])))
        title = _words(rng, rng.randint(1, 4)).title() + rng.choice(("", "", " (é)", " \u0416\u0443\u043a", " \u6771\u4eac", ' "Q"'))
        line = json.dumps({"src_id": str(rng.randint(1, 70_000_000)), "src_query": title, "tgt_results": results}) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()


def docs_lines(rng: random.Random, size: int) -> bytes:
    """About ``size`` bytes of DOCS-like lines: ``doc_id<TAB>text``."""
    lines, total = [], 0
    while total < size:
        line = f"{rng.randint(1, 70_000_000)}\t{_words(rng, rng.randint(5, 120))}.\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()


def synthetic(seed: int = 54) -> list[tuple[str, bytes]]:
    """Inputs no build makes: empty, one byte, random bytes (incompressible, stored blocks), highly repetitive text (long matches, RLE-like)."""
    rng = random.Random(seed)
    line = b'{"src_id": "12", "src_query": "Same", "tgt_results": [["3", 6], ["4", 5]]}\n'
    return [
        ("empty", b""),
        ("one byte", b"\n"),
        ("random 200 B", rng.randbytes(200)),
        ("random 70 kB", rng.randbytes(70_000)),
        ("random 1 MiB + 5000", rng.randbytes(CHUNK + 5000)),
        ("one byte x 2 MB", b"a" * 2_000_000),
        ("one line x 40,000", line * 40_000),
        ("two bytes x 300 kB", b"ab" * 150_000),
        ("runs of 258 and 3", (b"z" * 258 + b"xyz") * 4_000),
    ]


def small_corpus(seed: int = 54) -> list[tuple[str, bytes]]:
    """The suite's inputs: a handful, a few MB in all, one past the 1 MiB slice (tests/test_gzip_bytes.py)."""
    rng = random.Random(seed)
    return [
        ("empty", b""),
        ("query lines 200 B", query_lines(rng, 200)),
        ("docs lines 5 kB", docs_lines(rng, 5_000)),
        ("query lines 100 kB", query_lines(rng, 100_000)),
        ("docs lines 1 MiB + 1000", docs_lines(rng, CHUNK + 1000)[: CHUNK + 1000]),
        ("random 20 kB", rng.randbytes(20_000)),
        ("one line x 3,000", query_lines(random.Random(1), 120)[:120] * 3_000),
    ]


BUILD_KINDS = (("BI-139 full", "BI-139/full/*/*.jl.gz"), ("BI-139 base", "BI-139/base/*/*.jl.gz"), ("MULTI-8", "MULTI-8/*/*.jl.gz"), ("DOCS", "DOCS/*.tsv.gz"), ("DOCS-FULL", "DOCS-FULL/*.tsv.gz"))
PREFIXES = (200, 1_000, 4_096, 20_000, 65_536, 300_000, CHUNK - 1, CHUNK, CHUNK + 1, 2_500_000, 4_000_000)


def _gunzip(path: Path) -> bytes:
    import isal.igzip

    return isal.igzip.decompress(path.read_bytes())


def build_corpus(out: Path, seed: int = 54, whole_max: int = 4_000_000) -> list[tuple[str, bytes]]:
    """A sample build's text: per kind of file, 4 whole files (smallest, two between, largest up to ``whole_max``) and prefixes of ``PREFIXES`` bytes.

    A prefix starts at a seeded line of the kind's text and ends at a line's end, except
    the three at and around the 1 MiB slice, which are cut to the byte.
    """
    rng = random.Random(seed)
    corpus = []
    for kind, pattern in BUILD_KINDS:
        files = sorted(out.glob(pattern), key=lambda p: (p.stat().st_size, str(p)))
        if not files:
            continue
        texts = {path: _gunzip(path) for path in files}
        fitting = [path for path in files if len(texts[path]) <= whole_max]
        picks = sorted({fitting[0], fitting[len(fitting) // 3], fitting[2 * len(fitting) // 3], fitting[-1]}, key=lambda p: len(texts[p])) if fitting else []
        corpus += [(f"{kind} {path.name} (whole, {len(texts[path]):,} B)", texts[path]) for path in picks]
        joined = b"".join(texts[path] for path in sorted(files))
        for size in PREFIXES:
            if size > len(joined):
                break
            begin = rng.randrange(0, max(1, len(joined) - size))
            begin = joined.find(b"\n", begin) + 1 if begin else 0
            if begin + size > len(joined):
                begin = 0
            piece = joined[begin : begin + size]
            if size not in (CHUNK - 1, CHUNK, CHUNK + 1):
                piece = piece[: piece.rfind(b"\n") + 1] or piece
            corpus.append((f"{kind} prefix {len(piece):,} B", piece))
    return corpus


def sample_build(folder: Path) -> Path:
    """A sample build of the 8 MULTI-8 languages (``clirmatrix sample`` then ``build``), as the README's Try it makes it."""
    cli = [sys.executable, "-m", "clirmatrix"]
    subprocess.run([*cli, "sample", str(folder / "dumps")], check=True, capture_output=True)
    subprocess.run([*cli, "build", "--dumps", str(folder / "dumps"), "--out", str(folder / "out"), "--min-docs", "1000"], check=True, capture_output=True)
    return folder / "out"


# --- setup ------------------------------------------------------------------------------------------


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("  $", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def prepare(root: Path) -> None:
    """qemu-user, Debian's arm64 Python in ROOT/aarch64/sysroot and the aarch64 wheels in ROOT/aarch64/site; each step skipped when done."""
    arm = root / "aarch64"
    debs, sysroot, site, wheels = arm / "debs", arm / "sysroot", arm / "site", arm / "wheels"
    for folder in (debs, sysroot, site, wheels):
        folder.mkdir(parents=True, exist_ok=True)
    apt = os.geteuid() == 0 and shutil.which("apt-get") is not None

    if _which(X86_QEMU) and _which(ARM_QEMU):
        print(f"qemu-user: present ({_which(X86_QEMU)}, {_which(ARM_QEMU)})")
    else:
        if not apt:
            raise SystemExit("qemu-user-static is missing and this is not a Debian-like system run as root: install qemu-user-static, then run this again")
        print("qemu-user: installing")
        _run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)
        _run(["apt-get", "install", "-y", "-q", "qemu-user-static"], stdout=subprocess.DEVNULL)

    if "arm64" in subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True, text=True, check=True).stdout.split():
        print("dpkg: arm64 is a foreign architecture already")
    else:
        if not apt:
            raise SystemExit("run as root: dpkg --add-architecture arm64 && apt-get update")
        print("dpkg: adding arm64")
        _run(["dpkg", "--add-architecture", "arm64"])
        _run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)

    shown = subprocess.run(["apt-cache", "show", "python3-minimal:arm64"], capture_output=True, text=True, check=True).stdout
    minor = re.search(r"python3\.(\d+)-minimal", shown)
    assert minor, "apt-cache show python3-minimal:arm64 names no python3.X-minimal"
    python = f"3.{minor.group(1)}"
    stdlib = subprocess.run(["apt-cache", "show", f"libpython{python}-stdlib:arm64"], capture_output=True, text=True, check=True).stdout
    ffi = re.search(r"\b(libffi\d+)\b", stdlib)
    packages = [f"python{python}-minimal", f"libpython{python}-minimal", f"libpython{python}-stdlib", "libc6", "zlib1g", "libexpat1", ffi.group(1) if ffi else "libffi8", "libgcc-s1"]
    for package in packages:
        if list(debs.glob(f"{package}_*_arm64.deb")):
            print(f"apt: {package}:arm64 downloaded already")
        else:
            print(f"apt: downloading {package}:arm64")
            _run(["apt-get", "download", "-q", f"{package}:arm64"], cwd=debs, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ready_path = arm / "ready.json"
    ready = json.loads(ready_path.read_text()) if ready_path.exists() else {}
    unpacked = set(ready.get("debs", []))
    for deb in sorted(debs.glob("*.deb")):
        if deb.name in unpacked:
            print(f"sysroot: {deb.name} unpacked already")
        else:
            print(f"sysroot: unpacking {deb.name}")
            _run(["dpkg", "-x", str(deb), str(sysroot)])
            unpacked.add(deb.name)

    wanted = {}
    for distribution in ("zlib-ng", "isal"):
        try:
            wanted[distribution] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            print(f"wheels: {distribution} is not installed here; left out")
    unzipped = dict(ready.get("wheels", {}))
    for distribution, version in wanted.items():
        if unzipped.get(distribution) == version:
            print(f"wheels: {distribution}=={version} (aarch64) unzipped already")
            continue
        stem = distribution.replace("-", "_")
        found = sorted(wheels.glob(f"{stem}-{version}-cp{python.replace('.', '')}-*aarch64*.whl"))
        if not found:
            print(f"wheels: downloading {distribution}=={version} for aarch64, CPython {python}")
            _run([sys.executable, "-m", "pip", "download", "-q", f"{distribution}=={version}", "--platform", "manylinux2014_aarch64", "--platform", "manylinux_2_28_aarch64",
                  "--only-binary=:all:", "--implementation", "cp", "--python-version", python, "--no-deps", "-d", str(wheels)])  # fmt: skip
            found = sorted(wheels.glob(f"{stem}-{version}-*aarch64*.whl"))
        assert found, f"no aarch64 wheel of {distribution}=={version} for CPython {python}"
        print(f"wheels: unzipping {found[-1].name}")
        with zipfile.ZipFile(found[-1]) as wheel:
            wheel.extractall(site)
        unzipped[distribution] = version

    ready_path.write_text(json.dumps({"python": python, "debs": sorted(unpacked), "wheels": unzipped}, indent=1) + "\n")
    cpu = aarch64("max", root)
    with tempfile.TemporaryDirectory() as scratch:
        run = run_all([cpu], [b"check\n" * 100], [("zlib-ng", 2)], 1, Path(scratch))[0]
    print(f"check: {cpu.name}: Python {run.report['python']}, zlib-ng {run.report['zlib_ng'][0]} (library {run.report['zlib_ng'][1]}), isal {run.report['isal']},"
          f" features {' '.join(run.report['features'])}; {run.wall:.1f} s")  # fmt: skip
    print(f"ready: {root} (the test and this bench look there; set {ROOT_ENV} to use another folder)")


# --- the bench ------------------------------------------------------------------------------------


def table(reference: Run, runs: list[Run], keys: list[str], inputs: int) -> str:
    header = "| CPU (qemu model) | features the guest sees | " + " | ".join(keys) + " |"
    lines = [header, "|---|---|" + "---:|" * len(keys)]
    for run in [reference, *runs]:
        cells = []
        for key in keys:
            if key not in run.outputs:
                cells.append("-")
            elif run is reference:
                cells.append("reference")
            else:
                cells.append(f"{inputs - len(differences(reference, run, key))}/{inputs}")
        lines.append(f"| {run.cpu} | {' '.join(run.report['features'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prepare", nargs="?", const="", metavar="DIR", help="set up qemu-user and the arm64 sysroot in DIR (default: --root) and stop")
    parser.add_argument("--root", type=Path, default=None, help=f"the prepared folder [default: ${ROOT_ENV} or ~/.cache/clirmatrix/cross-cpu]")
    parser.add_argument("--build", type=Path, default=None, help="a sample build's OUT [default: /tmp/demo/out, else one made in a temporary folder]")
    parser.add_argument("--levels", default="2,1,6,9", help="zlib-ng levels; the release's is 2")
    parser.add_argument("--isal-levels", default="2", help="isal levels, the contrast ('' for none)")
    parser.add_argument("--cpus", default="all", help="'all' or names such as 'x86-64 qemu64,aarch64 max'")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="guests at once")
    args = parser.parse_args()
    if args.prepare is not None:
        prepare(Path(args.prepare) if args.prepare else (args.root or default_root()))
        return
    root = args.root or default_root()
    jobs = [("zlib-ng", int(level)) for level in args.levels.split(",") if level] + [("isal", int(level)) for level in args.isal_levels.split(",") if level]
    with tempfile.TemporaryDirectory(prefix="cross-cpu-") as scratch:
        folder = Path(scratch)
        build = args.build or (Path("/tmp/demo/out") if Path("/tmp/demo/out/manifest.json").exists() else None)
        if build is None:
            print("making a sample build (about a minute) ...", flush=True)
            build = sample_build(folder)
        corpus = build_corpus(build) + synthetic()
        names, texts = [name for name, _ in corpus], [text for _, text in corpus]
        print(f"corpus: {len(texts)} inputs, {sum(map(len, texts)):,} bytes ({min(map(len, texts)):,} to {max(map(len, texts)):,}) from {build} and synthetic text", flush=True)
        site = host_site(folder)
        chosen = cpus(args.cpus, root, site)
        for cpu in chosen:
            if cpu.missing:
                print(f"skipped: {cpu.name}: {cpu.missing}")
        present = [cpu for cpu in chosen if cpu.missing is None]
        began = time.perf_counter()
        reference, *runs = run_all([native(site), *present], texts, jobs, args.jobs, folder)
    keys = [f"{name} {level}" for name, level in jobs]
    print(f"\n{time.strftime('%Y-%m-%d')}, {platform.node()} ({platform.machine()}); {time.perf_counter() - began:.0f} s wall for {len(runs) + 1} runs")
    print(f"reference: Python {reference.report['python']}, zlib-ng {reference.report['zlib_ng'][0]} (library {reference.report['zlib_ng'][1]}), isal {reference.report['isal']}")
    for run in runs:
        if run.report["zlib_ng"] != reference.report["zlib_ng"] or run.report["isal"] != reference.report["isal"]:
            print(f"NOTE {run.cpu}: zlib-ng {run.report['zlib_ng']}, isal {run.report['isal']}: other versions than the reference's")
    print("\nfiles identical to this machine's / files compared, per encoder and level:\n")
    print(table(reference, runs, keys, len(texts)))
    failed = False
    for run in runs:
        for key in keys:
            if key not in run.outputs:
                continue
            found = differences(reference, run, key)
            if found and key.startswith("zlib-ng"):
                failed = True
            for number, ours, theirs, first in found[:3] if key.startswith("zlib-ng") else []:
                print(f"DIFFERS {run.cpu} {key}: {names[number]}: {ours:,} B here, {theirs:,} B there, first at byte {first:,}")
    isal_keys = [key for key in keys if key.startswith("isal")]
    for key in isal_keys:
        sizes = [sum(len(out) for out in run.outputs.get(key, [])) for run in [reference, *runs]]
        print(f"{key}: total bytes per CPU: " + ", ".join(f"{run.cpu}: {size:,}" for run, size in zip([reference, *runs], sizes)))
    print("\nguest CPU seconds per job: " + "; ".join(f"{run.cpu}: " + ", ".join(f"{k} {v:.1f}" for k, v in run.report["seconds"].items()) for run in [reference, *runs][:3]) + " ...")
    if failed:
        raise SystemExit("zlib-ng gave other bytes on an emulated CPU (above)")


if __name__ == "__main__":
    main()
