"""Reading a .bz2 file in ranges cut at block boundaries gives exactly what reading it whole gives.

Every file is made here with the standard library's ``bz2`` (libbzip2) at compresslevel
1, so a block holds 99,981 bytes of text (100,000 - 19; RLE never fires: the text has
no run of 4 equal bytes, checked). Knowing where blocks end in the text lets the tests
put line ends, ``<page>`` and ``</page>`` tags exactly across block boundaries, and
the tests check that they did.
"""

from __future__ import annotations

import bz2
import io
import random
import re

import pytest

from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM
from clirmatrix.pipeline.io.bz2_ranges import (
    BLOCK_MAGIC,
    BlockRange,
    Bz2StreamError,
    CorruptStreamError,
    TruncatedStreamError,
    check_stream_crcs,
    iter_blocks,
    iter_line_records,
    iter_page_records,
    plan_ranges,
    xml_prologue,
)
from clirmatrix.pipeline.io.fileio import STREAM_ERRORS, stream_error_kind
from clirmatrix.pipeline.io.positions import describe_position, pack_position, unpack_position

BLOCK_TEXT = 99_981  # text per block at compresslevel 1 when RLE never fires
NAME = "dumps/test-pages.xml.bz2"
SYLLABLES = [c + v for c in "bcdfgklmnprstvz" for v in "aeiou"]
SPLITS = [1, 60_000, 10**9]  # one block per range .. the whole file as one range


_VOCABULARY_RNG = random.Random(0)
VOCABULARY = ["".join(_VOCABULARY_RNG.choices(SYLLABLES, k=_VOCABULARY_RNG.randint(1, 4))) for _ in range(20_000)]


def words(rng: random.Random, count: int) -> str:
    """Text without any run of 4 equal characters (consonant-vowel syllables, single spaces)."""
    return " ".join(rng.choices(VOCABULARY, k=count))


def no_runs(text: bytes) -> bytes:
    assert re.search(rb"(.)\1\1\1", text, re.S) is None, "a run of 4 equal bytes would move the block boundaries"
    return text


def boundaries(text_length: int) -> list[int]:
    return list(range(BLOCK_TEXT, text_length, BLOCK_TEXT))


def line_text(seed: int, size: int) -> bytes:
    """Lines of 1 byte to 250 kB; at block boundaries a line ends just before, or just after, or spans."""
    rng = random.Random(seed)
    parts, length = [], 0
    while length < size:
        kind = rng.random()
        count = 2 if kind < 0.3 else rng.randint(10, 1500) if kind < 0.97 else 40_000  # the last: longer than 2 blocks
        line = words(rng, count) + "\n"
        parts.append(line)
        length += len(line)
    text = bytearray("".join(parts).encode())
    for k, boundary in enumerate(boundaries(len(text))):
        if k % 3 == 0:
            text[boundary - 1 : boundary] = b"\n"  # a line starts exactly at the block start
        elif k % 3 == 1:
            text[boundary : boundary + 1] = b"\n"  # a block starts with the newline ending its previous line
    return no_runs(bytes(text))


def multistream(pieces: list[bytes]) -> bytes:
    return b"".join(bz2.compress(piece, 1) for piece in pieces)


def read_all(data: bytes, target: int, reader=iter_line_records) -> list[tuple[int, bytes]]:
    """Every range read on its own (a fresh file object each, as separate workers would), then joined."""
    ranges = plan_ranges(io.BytesIO(data), len(data), target, NAME)
    check_cover(ranges, len(data))
    records, pieces = [], []
    for block_range in ranges:
        pieces.append([])
        records.extend(tuple(record) for record in reader(io.BytesIO(data), len(data), block_range, NAME, pieces[-1]))
    check_stream_crcs(NAME, [[list(piece) for piece in range_pieces] for range_pieces in pieces])  # as stored in JSON
    return records


def read_all_lines(data: bytes, target: int) -> list[tuple[int, bytes]]:
    return read_all(data, target, iter_line_records)


def read_all_pages(data: bytes, target: int) -> list[tuple[int, bytes]]:
    return read_all(data, target, iter_page_records)


def check_cover(ranges: list[BlockRange], size: int) -> None:
    assert ranges[0].start_bit == 0 and ranges[0].prev_bit == -1 and ranges[-1].end_bit == size * 8
    for index, (left, right) in enumerate(zip(ranges, ranges[1:])):
        assert left.end_bit == right.start_bit and left.start_bit <= right.prev_bit < right.start_bit
        assert right.index == index + 1


def check_positions(data: bytes, records: list[tuple[int, bytes]]) -> None:
    """Each position names the block (by its byte) and the offset of the record in its text."""
    starts, text = {}, b""
    for block in iter_blocks(io.BytesIO(data), len(data), 0, NAME):
        starts[block.bit >> 3] = len(text)
        text += block.data
    assert [position for position, _ in records] == sorted({position for position, _ in records})
    for position, record in records:
        block_byte, offset = unpack_position(position)
        at = starts[block_byte] + offset
        assert text[at : at + len(record)] == record


@pytest.fixture(scope="module")
def single_stream() -> tuple[bytes, bytes]:
    text = line_text(1, 2_500_000)
    return text, bz2.compress(text, 1)


def test_blocks_decode_to_the_file_and_hold_a_known_amount(single_stream):
    text, data = single_stream
    blocks = list(iter_blocks(io.BytesIO(data), len(data), 0, NAME))
    assert b"".join(block.data for block in blocks) == text == bz2.decompress(data)
    assert [len(block.data) for block in blocks[:-1]] == [BLOCK_TEXT] * (len(blocks) - 1)
    assert len(blocks) >= 25
    assert blocks[0].bit == 32  # right after "BZh1"
    one_per_block = plan_ranges(io.BytesIO(data), len(data), 1, NAME)
    assert [r.start_bit for r in one_per_block[1:]] == [block.bit for block in blocks[1:]]


def test_line_records_are_the_same_for_every_split(single_stream):
    text, data = single_stream
    expected = text.split(b"\n")
    expected = [line + b"\n" for line in expected[:-1]] + ([expected[-1]] if expected[-1] else [])
    whole = read_all_lines(data, 10**9)
    assert [line for _, line in whole] == expected
    assert max(len(line) for line in expected) > 1.5 * BLOCK_TEXT  # lines spanning 2 and 3 blocks
    check_positions(data, whole)
    for target in SPLITS[:-1]:
        assert read_all_lines(data, target) == whole, target


def test_multistream_lines_with_an_empty_stream_and_a_line_across_streams():
    text = line_text(2, 800_000)
    cuts = [0, 5, 250_000, 250_000, 600_003, len(text)]  # an empty stream; cuts inside lines
    data = multistream([text[a:b] for a, b in zip(cuts, cuts[1:])])
    whole = read_all_lines(data, 10**9)
    assert b"".join(line for _, line in whole) == text
    check_positions(data, whole)
    for target in SPLITS[:-1]:
        assert read_all_lines(data, target) == whole, target


def page(page_id: int, body: str) -> str:
    return (
        f"  <page>\n   <title>Title {page_id}</title>\n   <ns>0</ns>\n   <id>{page_id}</id>\n   <revision>\n"
        f'   <text bytes="{len(body)}" xml:space="preserve">{body}</text>\n   </revision>\n  </page>\n'
    )


PROLOGUE = (
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">\n'
    "  <siteinfo>\n   <sitename>Wikipedia</sitename>\n   <dbname>enwiki</dbname>\n   <namespaces>\n"
    '   <namespace key="0" case="first-letter" />\n   <namespace key="6" case="first-letter">File</namespace>\n'
    "   </namespaces>\n  </siteinfo>\n"
)
EPILOGUE = "</mediawiki>\n"


def xml_pages(seed: int, size: int, straddle: bool = True) -> list[str]:
    """Pages (ids without runs of 4 equal digits); with ``straddle``, padded so tags cross block boundaries."""
    rng = random.Random(seed)
    pages, length, k = [], len(PROLOGUE), 0
    ids = (i for i in range(1, 10**6) if not re.search(r"(.)\1\1\1", str(i)))
    while length < size:
        page_id = next(ids)
        body = words(rng, 60_000 if rng.random() < 0.02 else rng.randint(5, 600))  # some pages longer than a block
        text = page(page_id, body)
        boundary = (length // BLOCK_TEXT + 1) * BLOCK_TEXT
        if straddle and boundary - length < 30_000:
            k += 1
            if k % 2:  # "<page>" across the boundary: pad before it
                text = " \n" * ((boundary - 3 - length) // 2) + ("\n" if (boundary - 3 - length) % 2 else "") + text
            else:  # "</page>" across the boundary: a body of the right length
                filler = words(rng, (boundary - length) // 3 + 10)
                want = boundary - 2 - length - page(page_id, "").index("</page>")
                for _ in range(3):  # the body's length is written in the page: settle it
                    if want > 0:
                        text = page(page_id, filler[:want])
                        want += boundary - 2 - length - text.index("</page>")
        pages.append(text)
        length += len(text)
    return pages


def straddling(text: bytes, tag: bytes) -> int:
    return sum(text[b - len(tag) + 1 : b + len(tag) - 1].find(tag) >= 0 for b in boundaries(len(text)))


def test_pages_are_the_same_for_every_split():
    pages = xml_pages(3, 1_500_000)
    text = no_runs((PROLOGUE + "".join(pages) + EPILOGUE).encode())
    assert straddling(text, b"<page>") >= 2 and straddling(text, b"</page>") >= 2
    data = bz2.compress(text, 1)
    raw = io.BytesIO(data)
    assert xml_prologue(raw, len(data), NAME) == text[: text.index(b"<page>")]
    whole = read_all_pages(data, 10**9)
    assert [record for _, record in whole] == re.findall(rb"<page>.*?</page>", text, re.S)
    check_positions(data, whole)
    for target in SPLITS[:-1]:
        assert read_all_pages(data, target) == whole, target


def wikimedia_multistream(pages: list[str], per_stream: int = 40) -> list[bytes]:
    """Like ``pages-articles-multistream``: the header alone, then streams of pages, the end tag in the last."""
    streams = [PROLOGUE.encode()]
    for start in range(0, len(pages), per_stream):
        streams.append("".join(pages[start : start + per_stream]).encode())
    streams[-1] += EPILOGUE.encode()
    return streams


def test_multistream_pages_and_a_file_cut_between_streams():
    pages = xml_pages(4, 800_000, straddle=False)
    streams = wikimedia_multistream(pages)
    data = multistream(streams)
    raw = io.BytesIO(data)
    assert xml_prologue(raw, len(data), NAME) == PROLOGUE.encode() + b"  "
    whole = read_all_pages(data, 10**9)
    assert [record.decode() + "\n" for _, record in whole] == [p[2:] for p in pages]
    check_positions(data, whole)
    for target in SPLITS[1:-1]:
        assert read_all_pages(data, target) == whole, target
    # A valid bz2 file, but not a whole dump: the last range finds no </mediawiki>.
    cut = multistream(streams[:-1])
    with pytest.raises(TruncatedStreamError, match=re.escape(NAME) + r".*</mediawiki>.*at byte"):
        read_all_pages(cut, 200_000)


def test_a_chance_magic_inside_compressed_data_is_no_block():
    # A block's symbol map comes right after its header: the bytes used in 16-byte groups
    # (a 16-bit map of groups, then one 16-bit map per group used). Text made only of the
    # bytes below makes groups 1, 2 and 3 spell 0x3141 0x5926 0x5359, the block magic,
    # inside every block's compressed data.
    used = [10] + [16 + i for i in (2, 3, 7, 9, 15)] + [32 + i for i in (1, 3, 4, 7, 10, 13, 14)]
    used += [48 + i for i in (1, 3, 6, 7, 9, 11, 12, 15)]
    rng = random.Random(5)
    text = bytearray(rng.choice(used[1:]) for _ in range(450_000))
    for i in range(0, len(text), 997):
        text[i] = 10  # lines of ~1 kB
    for i in range(3, len(text)):
        if text[i] == text[i - 1] == text[i - 2] == text[i - 3]:
            text[i] = used[1] if text[i] != used[1] else used[2]
    text = no_runs(bytes(text))
    data = bz2.compress(text, 1)
    bits = bin(int.from_bytes(data, "big"))[2:].zfill(len(data) * 8)
    magic = bin(BLOCK_MAGIC)[2:].zfill(48)
    found = [m.start() for m in re.finditer(f"(?={magic})", bits)]
    blocks = list(iter_blocks(io.BytesIO(data), len(data), 0, NAME))
    assert len(found) == 2 * len(blocks) and len(blocks) == 5  # a false magic in every block
    assert b"".join(block.data for block in blocks) == text
    assert [r.start_bit for r in plan_ranges(io.BytesIO(data), len(data), 1, NAME)[1:]] == [b.bit for b in blocks[1:]]
    whole = read_all_lines(data, 10**9)
    assert read_all_lines(data, 1) == whole and b"".join(line for _, line in whole) == text


@pytest.fixture(scope="module")
def small() -> tuple[bytes, bytes]:
    text = line_text(6, 350_000)
    return text, bz2.compress(text, 1)


def test_a_file_cut_anywhere_is_fatal_and_named(small):
    _, data = small
    block_bits = [block.bit for block in iter_blocks(io.BytesIO(data), len(data), 0, NAME)]
    cuts = [3, 4, 7, (block_bits[1] >> 3) + 1, (block_bits[2] >> 3) - 1, len(data) // 2, len(data) - 8, len(data) - 1]
    for cut in cuts:
        damaged = data[:cut]
        with pytest.raises(TruncatedStreamError, match=re.escape(NAME) + r".*at byte [0-9,]+\)$") as planned:
            plan_ranges(io.BytesIO(damaged), cut, 10**9, NAME)
        assert planned.value.kind == TRUNCATED_STREAM
        # Read without a plan (a reader does not trust one): the reader finds it too.
        with pytest.raises(TruncatedStreamError, match=re.escape(NAME)) as read:
            for _ in iter_blocks(io.BytesIO(damaged), cut, 0, NAME):
                pass
        assert read.value.byte_offset <= cut, cut
        assert isinstance(read.value, STREAM_ERRORS) and stream_error_kind(read.value) == TRUNCATED_STREAM


def test_a_flipped_byte_is_fatal(small):
    _, data = small
    blocks = list(iter_blocks(io.BytesIO(data), len(data), 0, NAME))
    second = blocks[1].bit >> 3
    places = [1, 5, 8, 12, 40, second, second + 7, second + 500, len(data) // 2, len(data) - 9, len(data) - 3, len(data) - 1]
    for place in places:
        damaged = bytearray(data)
        damaged[place] ^= 0x5A
        damaged = bytes(damaged)
        with pytest.raises(Bz2StreamError, match=re.escape(NAME) + r".*byte") as read:
            for _ in iter_blocks(io.BytesIO(damaged), len(damaged), 0, NAME):
                pass
        if 40 <= place < len(data) - 12:  # inside a block's data: the block fails its decoding or CRC
            assert isinstance(read.value, CorruptStreamError) and read.value.kind == CORRUPT_STREAM, place
            assert read.value.byte_offset <= place
        with pytest.raises(Bz2StreamError, match=re.escape(NAME)):
            read_all_lines(damaged, 60_000)


def test_not_a_bz2_file():
    with pytest.raises(CorruptStreamError, match=r"not a bz2 file.*at byte 0\)"):
        plan_ranges(io.BytesIO(b"{}\n" * 100), 300, 10**9, NAME)
    with pytest.raises(CorruptStreamError, match="not another bz2 stream"):
        data = bz2.compress(b"line\n") + b"trailing junk"
        list(iter_blocks(io.BytesIO(data), len(data), 0, NAME))


def test_positions_sort_in_file_order_and_read_back():
    assert unpack_position(pack_position(8 * 123_456_789_012 + 5, 77)) == (123_456_789_012, 77)
    assert pack_position(8 * 10 + 7, 5_000_000) < pack_position(8 * 11, 0) < pack_position(8 * 11, 1)
    assert describe_position(pack_position(8 * 1_234, 56)) == "block at byte 1,234, byte 56 of its text"
    assert describe_position(42) == "line 42"
    assert pack_position(8 * 200 * 2**30, 2**24 - 1) < 2**63  # a 200 GiB file fits an int64
    with pytest.raises(ValueError):
        pack_position(0, 2**24)


def test_a_page_that_never_closes_ends_where_the_next_one_opens():
    """A damaged dump (a lost ``</page>``) costs one broken record, never the page after it."""
    pages = [page(n, f"text {n}") for n in range(1, 6)]
    pages[2] = pages[2].replace("</page>", "</pa#e>")
    text = (PROLOGUE + "".join(pages) + EPILOGUE).encode()
    records = [data for _, data in read_all_pages(bz2.compress(text, 1), 1 << 20)]
    assert len(records) == 5
    assert records[2].startswith(b"<page>") and b"<id>3</id>" in records[2] and not records[2].rstrip().endswith(b"</page>")
    assert [b"<id>%d</id>" % n in records[n - 1] for n in range(1, 6)] == [True] * 5
    assert records[3].startswith(b"<page>") and records[3].endswith(b"</page>")
