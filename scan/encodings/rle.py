"""The RLE / bit-packed hybrid encoding (levels, dictionary indices, booleans).

Layout (Parquet spec, "Run Length Encoding / Bit-Packing Hybrid"): a sequence
of runs, each introduced by a ULEB128 header.  ``header & 1 == 0``: an RLE run
of ``header >> 1`` copies of one value stored in ``ceil(bit_width / 8)``
little-endian bytes.  ``header & 1 == 1``: ``header >> 1`` groups of 8
bit-packed values (``bit_width`` bytes per group, least significant bit
first).

The numba kernel never raises: it returns a negative status that the Python
wrapper turns into a FileFormatError.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.varint import VARINT_TOO_LONG, VARINT_TRUNCATED, read_uleb128
from scan.errors import FileFormatError

# kernel status codes (negative = failure)
ERR_TRUNCATED = VARINT_TRUNCATED    # the runs end before `count` values were produced
ERR_VARINT = VARINT_TOO_LONG        # a run header is not a valid ULEB128 uint32
ERR_RUN_VALUE = -3      # an RLE run value does not fit its bit width

_MESSAGES = {
    ERR_TRUNCATED: "RLE/bit-packed hybrid data ends before all values were decoded",
    ERR_VARINT: "RLE/bit-packed hybrid run header is not a valid varint",
    ERR_RUN_VALUE: "RLE run value does not fit the bit width",
}


@njit(nogil=True, cache=True)
def hybrid_kernel(buf, pos, end, bit_width, count, out):
    """Decode ``count`` values from ``buf[pos:end]`` into ``out`` (int32).

    Returns the position after the last run used (clamped to ``end``), or a
    negative status.  A final bit-packed run may be cut short by ``end`` as
    long as the bytes of the values actually needed are present."""
    if end > buf.shape[0]:
        end = buf.shape[0]
    filled = 0
    value_bytes = (bit_width + 7) // 8
    mask = np.uint64((1 << bit_width) - 1)
    while filled < count:
        if pos >= end:
            return ERR_TRUNCATED
        header, pos = read_uleb128(buf, pos, end, 5)     # at most 5 bytes: a uint32
        if pos < 0:
            return pos                                     # ERR_TRUNCATED / ERR_VARINT
        run = np.int64(header >> np.uint64(1))
        if (header & np.uint64(1)) == 0:
            # RLE run
            if pos + value_bytes > end:
                return ERR_TRUNCATED
            v = np.uint64(0)
            for k in range(value_bytes):
                v |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
            pos += value_bytes
            if v > mask:
                return ERR_RUN_VALUE
            n = run
            if n > count - filled:
                n = count - filled
            iv = np.int32(np.int64(v) if v < np.uint64(2147483648)
                          else np.int64(v) - 4294967296)
            for k in range(n):
                out[filled + k] = iv
            filled += n
        else:
            # bit-packed run of `run` groups of 8 values
            run_bytes = run * bit_width
            n = run * 8
            if n > count - filled:
                n = count - filled
            need_bytes = (n * bit_width + 7) // 8
            if pos + need_bytes > end:
                return ERR_TRUNCATED
            if bit_width == 0:
                for k in range(n):
                    out[filled + k] = 0
            else:
                acc = np.uint64(0)
                nbits = 0
                p = pos
                k = 0
                while k < n:
                    while nbits < bit_width:
                        acc |= np.uint64(buf[p]) << np.uint64(nbits)
                        p += 1
                        nbits += 8
                    v = acc & mask
                    acc >>= np.uint64(bit_width)
                    nbits -= bit_width
                    out[filled + k] = np.int32(np.int64(v) if v < np.uint64(2147483648)
                                               else np.int64(v) - 4294967296)
                    k += 1
            filled += n
            pos += run_bytes
            if pos > end:
                pos = end
    return pos


def hybrid_error_message(status: int) -> str:
    """The message for a negative kernel status."""
    return _MESSAGES.get(int(status), f"RLE/bit-packed hybrid decoding failed ({status})")


def decode_hybrid(buf: np.ndarray, pos: int, end: int, bit_width: int,
                  count: int) -> tuple[np.ndarray, int]:
    """Decode ``count`` values of the hybrid encoding from ``buf[pos:end]``.

    Returns (int32 array of ``count`` values, position after the runs read).
    Values of bit width 32 above 2**31 - 1 wrap to negative int32."""
    bit_width = int(bit_width)
    count = int(count)
    if not 0 <= bit_width <= 32:
        raise FileFormatError(f"invalid RLE/bit-packed bit width {bit_width}")
    if count < 0:
        raise FileFormatError(f"negative value count {count}")
    pos, end = int(pos), min(int(end), len(buf))
    if pos < 0:
        raise FileFormatError(f"negative byte position {pos}")
    out = np.empty(count, np.int32)
    if count == 0:
        return out, pos
    if bit_width == 0 and pos >= end:
        # a zero bit width may come with no runs at all: every value is 0
        out[:] = 0
        return out, pos
    new_pos = hybrid_kernel(buf, pos, end, bit_width, count, out)
    if new_pos < 0:
        raise FileFormatError(hybrid_error_message(new_pos))
    return out, int(new_pos)


def decode_rle_booleans(buf: np.ndarray, pos: int, end: int,
                        count: int) -> tuple[np.ndarray, int]:
    """BOOLEAN values in the RLE encoding (data pages): a 4-byte length
    prefix, then the hybrid with bit width 1.  Returns (bool_ array, new_pos)."""
    pos, end = int(pos), min(int(end), len(buf))
    if pos < 0 or pos + 4 > end:
        raise FileFormatError("RLE boolean data is missing its 4-byte length")
    length = int(buf[pos]) | int(buf[pos + 1]) << 8 | int(buf[pos + 2]) << 16 \
        | int(buf[pos + 3]) << 24
    if pos + 4 + length > end:
        raise FileFormatError(
            f"RLE boolean length {length} exceeds the page ({end - pos - 4} bytes left)")
    values, _ = decode_hybrid(buf, pos + 4, pos + 4 + length, 1, count)
    return values.astype(np.bool_), pos + 4 + length
