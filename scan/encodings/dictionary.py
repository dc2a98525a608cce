"""Dictionary encoding (PLAIN_DICTIONARY / RLE_DICTIONARY).

The dictionary page is PLAIN encoded (decode it with ``decode_plain``; for
strings the views point into the dictionary page buffer).  Data pages hold
one bit-width byte followed by RLE/bit-packed hybrid indices; values are
gathered from the dictionary with a bounds check.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.rle import decode_hybrid
from scan.errors import FileFormatError


def decode_dictionary_indices(buf: np.ndarray, pos: int, end: int,
                              count: int) -> np.ndarray:
    """``count`` dictionary indices (int32) from ``buf[pos:end]``: the first
    byte is the bit width, then the hybrid encoding."""
    pos, end, count = int(pos), min(int(end), len(buf)), int(count)
    if count == 0:
        return np.zeros(0, np.int32)
    if pos < 0 or pos >= end:
        raise FileFormatError("dictionary-encoded page has no bit width byte")
    bit_width = int(buf[pos])
    if bit_width > 32:
        raise FileFormatError(f"dictionary index bit width {bit_width} exceeds 32")
    indices, _ = decode_hybrid(buf, pos + 1, end, bit_width, count)
    return indices


@njit(nogil=True, cache=True)
def _index_range_kernel(indices, size):
    """The first position of an index outside 0..size-1, or -1."""
    for i in range(indices.shape[0]):
        v = indices[i]
        if v < 0 or v >= size:
            return i
    return -1


@njit(nogil=True, cache=True)
def _gather_rows_kernel(dictionary, indices, out):
    """out[i] = dictionary[indices[i]] for (n, 2) views; returns the first bad
    position or -1."""
    size = dictionary.shape[0]
    for i in range(indices.shape[0]):
        v = indices[i]
        if v < 0 or v >= size:
            return i
        out[i, 0] = dictionary[v, 0]
        out[i, 1] = dictionary[v, 1]
    return -1


@njit(nogil=True, cache=True)
def _gather_kernel(dictionary, indices, out):
    """out[i] = dictionary[indices[i]] for 1-D arrays; returns the first bad
    position or -1."""
    size = dictionary.shape[0]
    for i in range(indices.shape[0]):
        v = indices[i]
        if v < 0 or v >= size:
            return i
        out[i] = dictionary[v]
    return -1


_SAME_SIZE_INT = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


def gather(dictionary_values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``dictionary_values[indices]`` with a bounds check (an index outside
    the dictionary -> FileFormatError).  Works for 1-D arrays and (n, 2)
    string views (whose heap stays the dictionary page buffer)."""
    size = len(dictionary_values)
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    d = dictionary_values
    if d.dtype == object:
        bad = _index_range_kernel(indices, size)
        out = None if bad >= 0 else np.take(d, indices, axis=0)
    else:
        d = np.ascontiguousarray(d)
        out = np.empty((len(indices),) + d.shape[1:], d.dtype)
        if d.ndim == 2 and d.shape[1] == 2:
            bad = _gather_rows_kernel(d, indices, out)
        elif d.ndim == 1 and d.dtype.itemsize in _SAME_SIZE_INT:
            # gather the bits: one compiled signature per width, not per dtype
            as_int = _SAME_SIZE_INT[d.dtype.itemsize]
            bad = _gather_kernel(d.view(as_int), indices, out.view(as_int))
        else:
            bad = _index_range_kernel(indices, size)
            out = np.take(d, indices, axis=0) if bad < 0 else None
    if bad >= 0:
        raise FileFormatError(
            f"dictionary index {int(indices[bad])} out of range for a dictionary "
            f"of {size} values")
    return out
