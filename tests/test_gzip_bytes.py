"""The release's .gz bytes are a function of the text alone: on other CPUs, and under load (issue 54; docs/release.md, "The same bytes on any CPU").

The cross-CPU tests run the encoder's own module, loaded by path in a bare Python, under
qemu-user: this machine's Python as an x86-64 without SSE4.2 (qemu64), with SSE4.2 only
(Nehalem) and with AVX2 (Haswell), which needs only ``qemu-x86_64-static``; and Debian's
arm64 Python with the aarch64 wheels, which needs the sysroot ``python
bench/cross_cpu_bench.py --prepare`` makes (in $CLIRMATRIX_CROSS_CPU_ROOT, default
~/.cache/clirmatrix/cross-cpu). Where they are missing, the tests skip and say so.
isal, the encoder before, runs beside it on the same inputs: its bytes must differ where
it picks other kernels, or the emulation proved nothing. The large versions (more CPU
models, levels 1, 6 and 9, a build's text; a build's files compressed thousands of
times under load) are bench/cross_cpu_bench.py and bench/gzip_encoder_bench.py --stress.
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib

import cross_cpu_bench as cross
import gzip_encoder_bench
import pytest

from clirmatrix.pipeline.output.gzip_encoder import CHUNK, HEADER, GzipEncoder, gzip_bytes

CORPUS = cross.small_corpus()
TEXTS = [text for _, text in CORPUS]
JOBS = [("zlib-ng", 2), ("isal", 2)]
# Where isal (1.9.1) picks other deflate kernels than on an x86-64 with SSE4.2: bench/cross_cpu_bench.py found 8 of 84 files alike there, those of 200 bytes or less
ISAL_DIFFERS = {"x86-64 qemu64", "aarch64 cortex-a53", "aarch64 max"}
EMULATED = ["x86-64 qemu64", "x86-64 Nehalem", "x86-64 Haswell", "aarch64 cortex-a53", "aarch64 max"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return cross.host_site(tmp_path_factory.mktemp("guest"))


@pytest.fixture(scope="module")
def here(site, tmp_path_factory):
    """This machine's bytes, from the same bare-Python run the emulated CPUs make."""
    return cross.run_all([cross.native(site)], TEXTS, JOBS, 1, tmp_path_factory.mktemp("here"))[0]


def test_the_encoder_runs_in_a_bare_python_and_writes_what_the_writers_write(here):
    """Loaded by path with only the standard library and zlib-ng (as under qemu), it writes what the package's ``gzip_bytes`` writes: a plain gzip member."""
    assert here.report["zlib_ng"][0] != "unknown", "the guest reads zlib-ng's version from its metadata"
    for (name, text), data in zip(CORPUS, here.outputs["zlib-ng 2"]):
        assert data == gzip_bytes(text), name
        assert data[:10] == HEADER and data[-8:] == struct.pack("<II", zlib.crc32(text), len(text) & 0xFFFFFFFF), name
        assert gzip.decompress(data) == text, name


def test_the_bytes_do_not_depend_on_how_the_text_is_written():
    """Written in pieces of any sizes (as the writers stream lines), the text gives the bytes it gives in one call: the encoder cuts it into 1 MiB slices itself."""
    rng = random.Random(5)
    text = (cross.query_lines(rng, 150_000) * 15)[: 2 * CHUNK + 12345]  # three slices, the last partial
    whole = gzip_bytes(text)
    for sizes in ([1] * 3 + [CHUNK - 3, CHUNK + 1], [CHUNK] * 3, [7, 65536, CHUNK * 2], [rng.randint(1, 300_000) for _ in range(40)]):
        out = gzip_encoder_bench._Count(keep=True)
        encoder = GzipEncoder(out)
        at = 0
        for size in sizes:
            encoder.write(text[at : at + size])
            at += size
        encoder.write(text[at:])
        encoder.close()
        assert out.value() == whole, sizes[:5]


@pytest.mark.parametrize("name", EMULATED)
def test_zlib_ng_writes_the_same_bytes_on_another_cpu(name, here, site, tmp_path):
    """zlib-ng at the release's level under the emulated CPU: every file the same bytes as here; isal, run beside it, differs where its kernels do."""
    (cpu,) = cross.cpus(name, cross.default_root(), site)
    if cpu.missing:
        pytest.skip(f"{name}: {cpu.missing}")
    there = cross.run_all([cpu], TEXTS, JOBS, 1, tmp_path)[0]
    assert there.report["zlib_ng"] == here.report["zlib_ng"], "the same zlib-ng version on both sides"
    differing = cross.differences(here, there, "zlib-ng 2")
    assert not differing, f"{name} ({' '.join(there.report['features'])}): zlib-ng wrote other bytes for " + "; ".join(
        f"{CORPUS[number][0]} ({ours:,} B here, {theirs:,} there, first at byte {first:,})" for number, ours, theirs, first in differing
    )
    measured_here = here.report["machine"] == "x86_64" and "sse4.2" in here.report["features"]  # ISAL_DIFFERS holds against such a machine
    if name in ISAL_DIFFERS and measured_here and "isal 2" in there.outputs and there.report["isal"] == here.report["isal"]:
        assert cross.differences(here, there, "isal 2"), f"{name}: isal wrote the same bytes as here: the emulated CPU did not change its kernels, so this test showed nothing"


def test_concurrent_compression_under_load_gives_the_reference_bytes():
    """Processes of two threads each compress dozens of files in shuffled order and random write sizes, on a dirtied heap, while another process churns memory: every output is the reference."""
    rng = random.Random(54)
    texts = TEXTS + [cross.query_lines(rng, rng.choice((3_000, 20_000, 90_000))) for _ in range(20)] + [cross.docs_lines(rng, rng.choice((5_000, 60_000))) for _ in range(10)]
    result = gzip_encoder_bench.stress(texts, "zlib-ng", workers=2, threads=2, repeats=3, noise=1, noise_mb=256, dirty_bytes=1 << 20)  # zlib-ng's state at level 2: ~340 kB
    assert result.compressions == 2 * 3 * len(texts)
    assert result.noise_mb_touched > 0, "the noise ran while the files were compressed"
    assert not result.mismatches, result.mismatches[:5]
