"""Sparse offsets into a page, recorded by the first morsel that decodes it
(scan/row_ranges.py) so later morsels jump to their start row: the run
directory of a dictionary page's RLE/bit-packed indices, and the byte
position of every N-th value of a PLAIN BYTE_ARRAY page."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.varint import read_uleb128


@njit(nogil=True, cache=True)
def run_directory(buf, pos, end, count, starts, positions):
    """Walk the run headers of a hybrid RLE/bit-packed stream (``pos`` at the
    first header): starts[r] = index of run r's first value, positions[r] =
    byte position of its header.  Returns the number of runs, or -1 on a
    defect (the caller then takes the checked full-page path)."""
    filled = 0
    r = 0
    if end > buf.shape[0]:
        end = buf.shape[0]
    bw = np.int64(buf[pos - 1])
    value_bytes = (bw + 7) // 8
    while filled < count:
        if pos >= end or r >= starts.shape[0]:
            return -1
        starts[r] = filled
        positions[r] = pos
        r += 1
        u, pos = read_uleb128(buf, pos, end, 5)
        if pos < 0:
            return -1
        header = np.int64(u)
        run = header >> 1
        if header & 1:
            filled += run * 8
            pos += run * bw
        else:
            filled += run
            pos += value_bytes
        if run == 0:
            return -1
    return r


@njit(nogil=True, cache=True)
def byte_array_offsets(buf, pos, end, count, every, out):
    """out[k] = byte position of PLAIN BYTE_ARRAY value k*every.  Returns how
    many entries were recorded (fewer when the page is truncated)."""
    if end > buf.shape[0]:
        end = buf.shape[0]
    k = 0
    for i in range(count):
        if i % every == 0:
            out[k] = pos
            k += 1
        if pos + 4 > end:
            return k
        n = (np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8)
             | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 24))
        pos += 4 + n
    return k
