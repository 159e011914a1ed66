"""Where a record was in its dump, in one int64 that sorts in file order (the ``dump_line`` column).

A file read whole gives a record its 1-based line number. A file read in ranges of
bz2 blocks (``clirmatrix.pipeline.io.bz2_ranges``) cannot know line numbers (that would
take every block before the range), so its records get a block position instead: bit 62
set, the byte offset of the block the record starts in, and the record's byte offset in
that block's text. Either is the same whatever the split, and messages say which it is.
"""

from __future__ import annotations

# Positions: bit 62 set marks a block position; a line number (whole-file reads of
# gzip or plain files) never reaches 2**62, so one int64 column holds either.
BLOCK_POSITION_FLAG = 1 << 62
_OFFSET_BITS = 24  # byte offset inside a block's text: up to 16 MiB (a 900 kB block of real text decodes to ~1 MB)
_BLOCK_BYTE_BITS = 62 - _OFFSET_BITS  # the block's byte offset in the file: files up to 256 GiB


def pack_position(block_bit: int, offset: int) -> int:
    """One int64 that sorts in file order: flag bit 62, the block's byte offset, the offset in its text.

    Two blocks never start in the same byte (a block is longer than 8 bits), so the
    byte offset names the block.
    """
    block_byte = block_bit >> 3
    if block_byte >> _BLOCK_BYTE_BITS or offset >> _OFFSET_BITS:
        raise ValueError(f"position out of range: block at byte {block_byte:,}, offset {offset:,} in its text")
    return BLOCK_POSITION_FLAG | (block_byte << _OFFSET_BITS) | offset


def unpack_position(position: int) -> tuple[int, int]:
    """``(byte offset of the block in the file, byte offset of the record in the block's text)``."""
    if not position & BLOCK_POSITION_FLAG:
        raise ValueError(f"{position} is a line number, not a block position")
    return (position & ~BLOCK_POSITION_FLAG) >> _OFFSET_BITS, position & ((1 << _OFFSET_BITS) - 1)


def describe_position(position: int) -> str:
    """``block at byte B, byte O of its text`` for a block position; ``line N`` for a line number."""
    if position & BLOCK_POSITION_FLAG:
        block_byte, offset = unpack_position(position)
        return f"block at byte {block_byte:,}, byte {offset:,} of its text"
    return f"line {position:,}"
