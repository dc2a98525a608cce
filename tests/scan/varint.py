"""ULEB128 varints and zigzag, as the thrift compact protocol and the RLE and
DELTA encodings write them: building blocks of the tests' reference encoders."""

from __future__ import annotations


def uleb128(n: int) -> bytes:
    """n >= 0 in 7-bit groups, least significant first, high bit = more."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def zigzag(v: int) -> int:
    """A signed 64-bit value as unsigned: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ..."""
    return (v << 1) ^ (v >> 63)
