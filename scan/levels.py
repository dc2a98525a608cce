"""Definition / repetition levels and the null mask of flat columns.

Levels are RLE/bit-packed hybrid encoded with bit width = bit length of the
maximum level.  Data page v1 prefixes them with a 4-byte little-endian length;
data page v2 stores their byte length in the page header.  For a flat
nullable column a row is null when its definition level is below the
maximum; values are stored dense (non-null rows only) and scattered into a
full-length array whose null slots are gaps (zeros).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.rle import decode_hybrid, hybrid_kernel
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.pages import DATA_PAGE_V2


def _level_dtype(max_level: int):
    return np.uint8 if max_level < 256 else np.int16


def _check_levels(levels: np.ndarray, max_level: int, what: str) -> np.ndarray:
    # the hybrid decoder never yields more than bit_length(max_level) bits, so
    # the range check is only needed when max_level is not all ones
    all_ones = max_level == (1 << max_level.bit_length()) - 1
    if len(levels) and not all_ones:
        lo, hi = int(levels.min()), int(levels.max())
        if lo < 0 or hi > max_level:
            bad = hi if hi > max_level else lo
            raise FileFormatError(f"{what} level {bad} outside 0..{max_level}")
    return levels.astype(_level_dtype(max_level))


def decode_levels_v1(buf: np.ndarray, pos: int, max_level: int,
                     count: int) -> tuple[np.ndarray | None, int]:
    """Levels of a v1 data page: 4-byte LE length, then the hybrid encoding.

    Returns (levels as uint8, or int16 when max_level >= 256; new position).
    ``max_level == 0`` -> (None, pos): nothing is stored."""
    pos, max_level = int(pos), int(max_level)
    if max_level == 0:
        return None, pos
    if max_level < 0 or pos < 0:
        raise FileFormatError(f"negative maximum level {max_level} or position {pos}")
    if pos + 4 > len(buf):
        raise FileFormatError("levels are missing their 4-byte length")
    length = int(buf[pos]) | int(buf[pos + 1]) << 8 | int(buf[pos + 2]) << 16 \
        | int(buf[pos + 3]) << 24
    start = pos + 4
    if start + length > len(buf):
        raise FileFormatError(
            f"levels length {length} exceeds the page ({len(buf) - start} bytes left)")
    raw, _ = decode_hybrid(buf, start, start + length, max_level.bit_length(), count)
    return _check_levels(raw, max_level, "definition/repetition"), start + length


def decode_levels_v2(buf: np.ndarray, pos: int, length: int, max_level: int,
                     count: int) -> np.ndarray | None:
    """Levels of a v2 data page: the hybrid over exactly ``length`` bytes.

    ``max_level == 0`` -> None."""
    pos, length, max_level = int(pos), int(length), int(max_level)
    if max_level == 0:
        return None
    if length < 0 or pos < 0 or pos + length > len(buf):
        raise FileFormatError(
            f"levels length {length} exceeds the page ({len(buf) - pos} bytes left)")
    raw, _ = decode_hybrid(buf, pos, pos + length, max_level.bit_length(), count)
    return _check_levels(raw, max_level, "definition/repetition")


@njit(nogil=True, cache=True)
def _unpack_msb_kernel(buf, pos, bit_width, count, out):
    """Deprecated BIT_PACKED levels: most significant bit first."""
    bit = pos * 8
    for i in range(count):
        v = 0
        for _ in range(bit_width):
            byte = buf[bit >> 3]
            v = (v << 1) | ((byte >> (7 - (bit & 7))) & 1)
            bit += 1
        out[i] = v


def decode_levels_bitpacked(buf: np.ndarray, pos: int, max_level: int,
                            count: int) -> tuple[np.ndarray | None, int]:
    """Levels in the deprecated BIT_PACKED encoding (v1 pages, no length
    prefix, ``ceil(count * bit_width / 8)`` bytes, MSB first)."""
    pos, max_level, count = int(pos), int(max_level), int(count)
    if max_level == 0:
        return None, pos
    width = max_level.bit_length()
    nbytes = (count * width + 7) // 8
    if count < 0 or pos < 0 or pos + nbytes > len(buf):
        raise FileFormatError("BIT_PACKED levels exceed the page")
    out = np.empty(count, np.int32)
    _unpack_msb_kernel(buf, pos, width, count, out)
    return _check_levels(out, max_level, "definition/repetition"), pos + nbytes


def page_def_levels(page, max_def: int) -> np.ndarray | None:
    """The definition levels of a flat column's data page (v1: at the start
    of ``page.data``, RLE or BIT_PACKED; v2: ``page.levels``), or None for
    a required column."""
    if max_def == 0:
        return None
    if page.kind == DATA_PAGE_V2:
        return decode_levels_v2(page.levels, page.rep_length, page.def_length, max_def,
                                page.num_values)
    if page.def_encoding == "BIT_PACKED":
        lv, _ = decode_levels_bitpacked(page.data, 0, max_def, page.num_values)
    elif page.def_encoding == "RLE":
        lv, _ = decode_levels_v1(page.data, 0, max_def, page.num_values)
    else:
        raise UnsupportedFeatureError(f"definition level encoding {page.def_encoding}")
    return lv


def values_start(page, max_def: int) -> int:
    """Byte position of a flat column's values in its data page's
    ``page.data`` (v1 pages: after the definition levels)."""
    if page.kind == DATA_PAGE_V2 or max_def == 0:
        return 0
    data = page.data
    if page.def_encoding == "BIT_PACKED":
        return (page.num_values * max_def.bit_length() + 7) // 8
    return 4 + (int(data[0]) | int(data[1]) << 8 | int(data[2]) << 16 | int(data[3]) << 24)


def nulls_from_def_levels(def_levels: np.ndarray, max_def: int) -> np.ndarray:
    """The null mask of a flat column: 1 where the definition level is below
    ``max_def``."""
    return (def_levels < max_def).view(np.uint8)


def scatter_dense(dense_values: np.ndarray, nulls: np.ndarray) -> np.ndarray:
    """Spread dense (non-null) values over ``len(nulls)`` slots; null slots are
    zero gaps.  Works for 1-D arrays and (n, 2) string views."""
    valid = nulls == 0
    n_valid = int(np.count_nonzero(valid))
    if n_valid != len(dense_values):
        raise FileFormatError(
            f"page has {len(dense_values)} values but its levels say {n_valid} are non-null")
    if n_valid == len(nulls):
        return dense_values
    shape = (len(nulls),) + tuple(dense_values.shape[1:])
    if dense_values.dtype == object:
        out = np.full(shape, 0, dtype=object)
    else:
        out = np.zeros(shape, dtype=dense_values.dtype)
    out[valid] = dense_values
    return out


@njit(nogil=True, cache=True)
def v1_defined(src, pos, end, n, defined):
    """The n definition levels of a flat optional column's v1 data page
    (bit width 1: 4-byte length, then the RLE / bit-packed hybrid, decoded
    by scan.encodings.rle's kernel) at src[pos:end] into ``defined`` (int32;
    1 = a value, 0 = NULL).  Returns (where the values start, how many rows
    are defined), or (-1, 0) when the levels are malformed."""
    if pos + 4 > end:
        return -1, 0
    length = (np.int64(src[pos]) | (np.int64(src[pos + 1]) << 8)
              | (np.int64(src[pos + 2]) << 16) | (np.int64(src[pos + 3]) << 24))
    stop = pos + 4 + length
    if stop > end or hybrid_kernel(src, pos + 4, stop, 1, n, defined) < 0:
        return -1, 0
    valid = 0
    for k in range(n):
        valid += defined[k]
    return stop, valid
