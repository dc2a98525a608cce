"""DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY.

DELTA_BINARY_PACKED (spec "Delta Encoding"): a header of ULEB128 <block size
in values> <miniblocks per block> <total value count> and a zigzag ULEB128
<first value>; then blocks of <zigzag min delta> <one bit-width byte per
miniblock> <miniblocks, bit-packed LSB first>.  Arithmetic wraps (two's
complement), so INT32 columns decode in 64 bits and are truncated.

DELTA_LENGTH_BYTE_ARRAY: delta-packed lengths, then the bytes back to back
(views point into the page buffer).  DELTA_BYTE_ARRAY: delta-packed prefix
lengths, then the suffixes as DELTA_LENGTH_BYTE_ARRAY; values are rebuilt
into a new heap.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.varint import VARINT_TOO_LONG, VARINT_TRUNCATED, read_uleb128
from scan.errors import FileFormatError
from scan.memops import copy_bytes
from scan.views import views_from_offsets

ERR_TRUNCATED = VARINT_TRUNCATED
ERR_VARINT = VARINT_TOO_LONG
ERR_HEADER = -3
ERR_BIT_WIDTH = -4
ERR_TOO_FEW = -5

_MESSAGES = {
    ERR_TRUNCATED: "DELTA_BINARY_PACKED data ends early",
    ERR_VARINT: "DELTA_BINARY_PACKED varint is malformed",
    ERR_HEADER: "DELTA_BINARY_PACKED header is invalid (block size / miniblocks)",
    ERR_BIT_WIDTH: "DELTA_BINARY_PACKED miniblock bit width exceeds 64",
    ERR_TOO_FEW: "DELTA_BINARY_PACKED holds fewer values than the page needs",
}


@njit(nogil=True, cache=True)
def _unzigzag(u):
    return (u >> np.uint64(1)) ^ (np.uint64(0) - (u & np.uint64(1)))


@njit(nogil=True, cache=True)
def _read_bits(buf, end, bitpos, bw):
    """``bw`` bits (<= 64) starting at bit ``bitpos``; bytes past end read 0."""
    v = np.uint64(0)
    got = 0
    while got < bw:
        p = bitpos >> 3
        sh = bitpos & 7
        byte = np.uint64(buf[p]) if p < end else np.uint64(0)
        take = 8 - sh
        if take > bw - got:
            take = bw - got
        v |= ((byte >> np.uint64(sh)) & np.uint64((1 << take) - 1)) << np.uint64(got)
        got += take
        bitpos += take
    return v


@njit(nogil=True, cache=True)
def _delta_binary_kernel(buf, pos, end, count, out):
    """Decode ``count`` values into ``out`` (int64); returns the position after
    the whole stream (all of its header's values) or a negative status."""
    if end > buf.shape[0]:
        end = buf.shape[0]
    block_size, pos = read_uleb128(buf, pos, end, 10)
    if pos < 0:
        return pos                      # ERR_TRUNCATED / ERR_VARINT
    miniblocks, pos = read_uleb128(buf, pos, end, 10)
    if pos < 0:
        return pos
    u, pos = read_uleb128(buf, pos, end, 10)
    if pos < 0:
        return pos
    total = np.int64(u)
    u, pos = read_uleb128(buf, pos, end, 10)
    if pos < 0:
        return pos
    last = _unzigzag(u)
    if (block_size == 0 or block_size > np.uint64(1 << 31) or miniblocks == 0
            or block_size % np.uint64(128) != 0 or block_size % miniblocks != 0
            or (block_size // miniblocks) % np.uint64(32) != 0 or total < 0):
        return ERR_HEADER
    if total < count:
        return ERR_TOO_FEW
    vpm = np.int64(block_size // miniblocks)
    m = np.int64(miniblocks)
    if total == 0:
        return pos
    if count > 0:
        out[0] = np.int64(last)
    produced = 1
    while produced < total:
        u, pos = read_uleb128(buf, pos, end, 10)
        if pos < 0:
            return pos
        min_delta = _unzigzag(u)
        if pos + m > end:
            return ERR_TRUNCATED
        widths = pos
        pos += m
        for j in range(m):
            if produced >= total:
                break
            bw = np.int64(buf[widths + j])
            if bw > 64:
                return ERR_BIT_WIDTH
            nbytes = vpm * bw // 8
            n = vpm
            if n > total - produced:
                n = total - produced
            if produced < count:
                k_stop = n
                if k_stop > count - produced:
                    k_stop = count - produced
                if pos + (k_stop * bw + 7) // 8 > end:
                    return ERR_TRUNCATED
                bitpos = pos * 8
                for k in range(k_stop):
                    d = _read_bits(buf, end, bitpos, bw)
                    bitpos += bw
                    last = last + min_delta + d
                    out[produced + k] = np.int64(last)
            else:
                # values past `count`: skip without decoding (last no longer needed)
                pass
            produced += n
            pos += nbytes
            if pos > end:
                if produced >= total:
                    pos = end
                else:
                    return ERR_TRUNCATED
    return pos


def decode_delta_binary_packed(buf: np.ndarray, pos: int, end: int, count: int,
                               physical_type: str = "INT64") -> tuple[np.ndarray, int]:
    """``count`` DELTA_BINARY_PACKED values (int32 for INT32, else int64) and
    the position after the encoded stream."""
    pos, end, count = int(pos), min(int(end), len(buf)), int(count)
    if count < 0 or pos < 0:
        raise FileFormatError(f"negative value count {count} or position {pos}")
    out = np.empty(count, np.int64)
    new_pos = _delta_binary_kernel(buf, pos, end, count, out)
    if new_pos < 0:
        raise FileFormatError(_MESSAGES.get(int(new_pos), "DELTA_BINARY_PACKED failed"))
    if physical_type == "INT32":
        out = out.astype(np.int32)         # wraps mod 2**32, as the spec says
    return out, int(new_pos)


def _lengths_to_offsets(lengths: np.ndarray, start: int, end: int,
                        what: str) -> np.ndarray:
    if len(lengths) and int(lengths.min()) < 0:
        raise FileFormatError(f"{what}: negative value length")
    offsets = np.empty(len(lengths) + 1, np.int64)
    offsets[0] = start
    np.cumsum(lengths, out=offsets[1:])
    offsets[1:] += start
    if offsets[-1] > end:
        raise FileFormatError(
            f"{what}: values need {int(offsets[-1]) - start} bytes, the page has {end - start}")
    return offsets


def decode_delta_length_byte_array(buf: np.ndarray, pos: int, end: int,
                                   count: int) -> tuple[np.ndarray, int]:
    """``count`` DELTA_LENGTH_BYTE_ARRAY values as (n, 2) views into ``buf``
    (heap = ``buf``) and the position after the last value."""
    end = min(int(end), len(buf))
    lengths, data_pos = decode_delta_binary_packed(buf, pos, end, count, "INT32")
    offsets = _lengths_to_offsets(lengths.astype(np.int64), data_pos, end,
                                  "DELTA_LENGTH_BYTE_ARRAY")
    views = np.empty((int(count), 2), np.uint64)
    views_from_offsets(buf, offsets, views)
    return views, int(offsets[-1])


@njit(nogil=True, cache=True)
def _prefix_rebuild_kernel(buf, suffix_offsets, prefixes, heap, offsets):
    """Rebuild DELTA_BYTE_ARRAY values into ``heap``; returns the first row
    whose prefix is longer than the previous value, or -1."""
    w = 0
    prev_start = 0
    prev_len = 0
    for i in range(prefixes.shape[0]):
        p = prefixes[i]
        if p < 0 or p > prev_len:
            return i
        offsets[i] = w
        copy_bytes(heap, w, heap, prev_start, p)      # (the previous value: no overlap)
        s0 = suffix_offsets[i]
        sl = suffix_offsets[i + 1] - s0
        copy_bytes(heap, w + p, buf, s0, sl)
        prev_start = w
        prev_len = p + sl
        w += prev_len
    offsets[prefixes.shape[0]] = w
    return -1


def decode_delta_byte_array(buf: np.ndarray, pos: int, end: int,
                            count: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``count`` DELTA_BYTE_ARRAY values: (views, heap, new_pos).  The heap is
    new (values are rebuilt from shared prefixes)."""
    end = min(int(end), len(buf))
    prefixes, suffix_pos = decode_delta_binary_packed(buf, pos, end, count, "INT32")
    suffix_lengths, data_pos = decode_delta_binary_packed(buf, suffix_pos, end, count, "INT32")
    suffix_offsets = _lengths_to_offsets(suffix_lengths.astype(np.int64), data_pos, end,
                                         "DELTA_BYTE_ARRAY")
    prefixes = prefixes.astype(np.int64)
    # value i has length prefixes[i] + suffix_len[i]; a prefix may not exceed
    # the previous value's length (checked before allocating the heap)
    lengths = prefixes + np.diff(suffix_offsets)
    bad_rows = np.flatnonzero((prefixes < 0) | (prefixes > np.concatenate(([0], lengths[:-1]))))
    if len(bad_rows):
        raise FileFormatError(
            f"DELTA_BYTE_ARRAY: prefix length at value {int(bad_rows[0])} exceeds "
            f"the previous value")
    total = int(prefixes.sum()) + int(suffix_offsets[-1] - suffix_offsets[0])
    heap = np.empty(total, np.uint8)
    offsets = np.empty(len(prefixes) + 1, np.int64)
    bad = _prefix_rebuild_kernel(buf, suffix_offsets, prefixes, heap, offsets)
    if bad >= 0:
        raise FileFormatError(
            f"DELTA_BYTE_ARRAY: prefix length at value {bad} exceeds the previous value")
    views = np.empty((len(prefixes), 2), np.uint64)
    views_from_offsets(heap, offsets, views)
    return views, heap, int(suffix_offsets[-1])
