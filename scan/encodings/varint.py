"""ULEB128 varints, the one reader the numba kernels share: RLE/bit-packed
run headers (scan/encodings/rle.py, the fused dictionary kernel, the run
directory of scan/sparse_offsets.py), the DELTA_* headers
(scan/encodings/delta.py) and Snappy's length preamble
(scan/snappy_kernel.py).  The thrift footer and page-header decoder
(scan/thrift.py) is pure Python and keeps its own reader
(``CompactDecoder.varint``).

It sits in the per-run loop of the hybrid decoders, where a call per run
header would cost: LLVM inlines it into every caller (their machine code
holds no call to it), and those decode as fast as with the hand-written
loops before.  numba's own ``inline="always"`` made the hybrid decoder
slower instead: 6M levels in runs of 1-19 values (bench/kernels.py,
"hybrid levels, short runs") took 8.3-8.4 ms as before with this plain
njit function, 9.2-9.4 ms inlined by numba."""

from __future__ import annotations

import numpy as np
from numba import njit

# status codes in place of the new position (negative = failure); the
# hybrid and DELTA decoders return them as their own ERR_TRUNCATED/ERR_VARINT
VARINT_TRUNCATED = -1       # the bytes end inside the varint
VARINT_TOO_LONG = -2        # more than max_bytes bytes


@njit(nogil=True, cache=True)
def read_uleb128(buf, pos, end, max_bytes):
    """(value, new position) of the ULEB128 varint at buf[pos:end]: value
    as uint64 (bits beyond 64 of a 10-byte varint are dropped), position
    after its last byte.  At most ``max_bytes`` bytes (5 for a uint32, 10
    for a uint64); the position is VARINT_TRUNCATED or VARINT_TOO_LONG (the
    value then 0) when the varint is cut off by ``end`` or longer."""
    v = np.uint64(0)
    shift = 0
    limit = 7 * max_bytes
    while True:
        if pos >= end:
            return np.uint64(0), VARINT_TRUNCATED
        b = np.uint64(buf[pos])
        pos += 1
        if shift < 64:
            v |= (b & np.uint64(0x7F)) << np.uint64(shift)
        if b < 128:
            return v, pos
        shift += 7
        if shift >= limit:
            return np.uint64(0), VARINT_TOO_LONG
