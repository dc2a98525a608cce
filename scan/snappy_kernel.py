"""Raw Snappy decompression as a numba kernel, so a whole column chunk can
be decompressed and decoded in one call (scan/required_chunk.py) instead of
one codec call, and one GIL hand-off, per page.

Format (https://github.com/google/snappy/blob/main/format_description.txt):
a varint uncompressed length, then elements tagged by their low two bits:
literal (length in the tag or in 1-4 following bytes), or a copy of earlier
output (offset in 1, 2 or 4 bytes).  Copies may overlap their own output."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.memops import copy_bytes, load8, store8


@njit(nogil=True, cache=True)
def snappy_decompress(src, start, end, out, out_start, out_len):
    """Decompress raw snappy src[start:end] into out[out_start:out_start +
    out_len].  Returns out_len, or -1 when the stream is corrupt or does not
    decompress to exactly out_len bytes.  Never reads or writes outside the
    given ranges (8-byte moves are used only where 8 bytes of room remain)."""
    if end > src.shape[0] or out_start + out_len > out.shape[0] or start < 0 or out_start < 0:
        return -1
    ip = start
    n = np.int64(0)
    shift = 0
    while True:
        if ip >= end:
            return -1
        b = np.int64(src[ip])
        ip += 1
        n |= (b & 0x7F) << shift
        if b < 128:
            break
        shift += 7
        if shift > 28:
            return -1
    if n != out_len:
        return -1
    op = out_start
    oend = out_start + out_len
    while ip < end:
        tag = np.int64(src[ip])
        ip += 1
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            if ln >= 60:
                nb = ln - 59
                if ip + nb > end:
                    return -1
                ln = 0
                for k in range(nb):
                    ln |= np.int64(src[ip + k]) << (8 * k)
                ip += nb
            ln += 1
            if ip + ln > end or op + ln > oend:
                return -1
            if ln <= 64 and ip + ln + 8 <= end and op + ln + 8 <= oend:
                k = 0
                while k < ln:
                    store8(out, op + k, load8(src, ip + k))
                    k += 8
            else:
                copy_bytes(out, op, src, ip, ln)
            ip += ln
            op += ln
            continue
        if kind == 1:
            if ip >= end:
                return -1
            ln = 4 + ((tag >> 2) & 7)
            off = ((tag >> 5) << 8) | np.int64(src[ip])
            ip += 1
        elif kind == 2:
            if ip + 2 > end:
                return -1
            ln = 1 + (tag >> 2)
            off = np.int64(src[ip]) | (np.int64(src[ip + 1]) << 8)
            ip += 2
        else:
            if ip + 4 > end:
                return -1
            ln = 1 + (tag >> 2)
            off = (np.int64(src[ip]) | (np.int64(src[ip + 1]) << 8)
                   | (np.int64(src[ip + 2]) << 16) | (np.int64(src[ip + 3]) << 24))
            ip += 4
        if off == 0 or off > op - out_start or op + ln > oend:
            return -1
        s = op - off
        if off >= 8 and op + ln + 8 <= oend:
            k = 0
            while k < ln:                     # 8-byte steps never overlap unread input
                store8(out, op + k, load8(out, s + k))
                k += 8
        else:
            for k in range(ln):               # overlapping: byte by byte, as specified
                out[op + k] = out[s + k]
        op += ln
    if op != oend:
        return -1
    return out_len
