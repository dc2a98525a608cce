"""16-byte string views (Umbra layout) over byte heaps.

A view is two uint64 words (little endian):
    word 0 = length (low 32 bits) | first 4 bytes, zero padded (high 32 bits)
    word 1 = bytes 4..11, zero padded, when length <= 12,
             else the byte offset of the whole string in the heap.
Views are built by numba kernels; the heap is any uint8 array (often the
decompressed page or dictionary page buffer itself: zero copy).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.errors import FileFormatError
from scan.memops import copy_bytes, load8_be

INLINE_MAX = 12
_LEN_MASK = np.uint64(0xFFFFFFFF)


@njit(nogil=True, cache=True, inline="always")
def view_length(w0):
    """Length of the string whose view's first word is ``w0``."""
    return np.int64(w0 & np.uint64(0xFFFFFFFF))


@njit(nogil=True, cache=True, inline="always")
def view_byte(w0, w1, heap, j):
    """Byte j of a string with view (w0, w1)."""
    n = np.int64(w0 & np.uint64(0xFFFFFFFF))
    if n > 12:
        return heap[np.int64(w1) + j]
    if j < 4:
        return np.uint8((w0 >> np.uint64(32 + 8 * j)) & np.uint64(0xFF))
    return np.uint8((w1 >> np.uint64(8 * (j - 4))) & np.uint64(0xFF))


@njit(nogil=True, cache=True, inline="always")
def bswap32(x):
    """The low 32 bits of ``x`` byte-swapped (a view's prefix as a big-endian number)."""
    return (((x & np.uint64(0xFF)) << np.uint64(24)) | ((x & np.uint64(0xFF00)) << np.uint64(8))
            | ((x >> np.uint64(8)) & np.uint64(0xFF00)) | ((x >> np.uint64(24)) & np.uint64(0xFF)))


@njit(nogil=True, cache=True, inline="always")
def bswap64(x):
    """``x`` byte-swapped (8 little-endian bytes as a big-endian number)."""
    return (bswap32(x & np.uint64(0xFFFFFFFF)) << np.uint64(32)) | bswap32(x >> np.uint64(32))


@njit(nogil=True, cache=True, inline="always")
def _word_after_prefix(w0, w1, heap, j, n):
    """Bytes j..j+7 (j >= 4, j < n) of a string of length n with view (w0,
    w1), as a big-endian number, zero past the string's end."""
    if n <= 12:                         # inline: j == 4, bytes 4..11 are word 1
        return bswap64(w1)
    off = np.int64(w1)
    if j + 8 <= n:
        return load8_be(heap, off + j)
    # the last n - j (1..7) bytes: the string's last 8 bytes, shifted up
    return load8_be(heap, off + n - 8) << np.uint64(8 * (8 - (n - j)))


@njit(nogil=True, cache=True, inline="always")
def compare_strings(a0, a1, ha, b0, b1, hb):
    """-1, 0, 1: unsigned byte-wise order of two strings given by their
    views (a0, a1) over heap ``ha`` and (b0, b1) over ``hb``: the 4-byte
    prefixes first, then 8 bytes at a time."""
    if a0 == b0 and a1 == b1 and view_length(a0) <= 12:
        return 0
    pa = bswap32(a0 >> np.uint64(32))
    pb = bswap32(b0 >> np.uint64(32))
    if pa != pb:
        return -1 if pa < pb else 1
    la = view_length(a0)
    lb = view_length(b0)
    m = min(la, lb)
    j = 4
    while j < m:
        x = _word_after_prefix(a0, a1, ha, j, la)
        y = _word_after_prefix(b0, b1, hb, j, lb)
        if m - j < 8:                   # only the bytes both strings have
            keep = np.uint64(0xFFFFFFFFFFFFFFFF) << np.uint64(8 * (8 - (m - j)))
            x &= keep
            y &= keep
        if x != y:
            return -1 if x < y else 1
        j += 8
    if la == lb:
        return 0
    return -1 if la < lb else 1


@njit(nogil=True, cache=True, inline="always")
def make_view(buf, off, length, out, i):
    """Write the view of ``buf[off:off+length]`` into ``out[i]``."""
    prefix = np.uint64(0)
    m = length if length < 4 else 4
    for k in range(m):
        prefix |= np.uint64(buf[off + k]) << np.uint64(8 * k)
    out[i, 0] = np.uint64(length) | (prefix << np.uint64(32))
    if length <= 12:
        rest = np.uint64(0)
        for k in range(4, length):
            rest |= np.uint64(buf[off + k]) << np.uint64(8 * (k - 4))
        out[i, 1] = rest
    else:
        out[i, 1] = np.uint64(off)


@njit(nogil=True, cache=True)
def views_from_offsets(heap, offsets, out):
    """Views of ``heap[offsets[i]:offsets[i+1]]`` (Arrow-style offsets)."""
    for i in range(offsets.shape[0] - 1):
        make_view(heap, offsets[i], offsets[i + 1] - offsets[i], out, i)


@njit(nogil=True, cache=True)
def _be_to_int64_kernel(views, heap, out):
    """Big-endian two's complement bytes -> int64; returns the first row that
    does not fit in int64, or -1."""
    for i in range(views.shape[0]):
        w0 = views[i, 0]
        length = np.int64(w0 & np.uint64(0xFFFFFFFF))
        if length == 0:
            out[i] = 0
            continue
        # fetch byte k of the value
        acc = np.uint64(0)
        first = np.uint64(0)
        for k in range(length):
            if length <= 12:
                if k < 4:
                    b = (w0 >> np.uint64(32 + 8 * k)) & np.uint64(0xFF)
                else:
                    b = (views[i, 1] >> np.uint64(8 * (k - 4))) & np.uint64(0xFF)
            else:
                b = np.uint64(heap[np.int64(views[i, 1]) + k])
            if k == 0:
                first = b
            if k < length - 8:
                # leading bytes beyond 8 must be pure sign extension
                sign = np.uint64(0xFF) if first >= np.uint64(128) else np.uint64(0)
                if b != sign:
                    return i
            else:
                acc = (acc << np.uint64(8)) | b
        if length < 8 and first >= np.uint64(128):
            acc |= ~np.uint64(0) << np.uint64(8 * length)
        v = np.int64(acc)
        if length > 8:
            # the kept 8 bytes must have the same sign as the dropped ones
            if (first >= np.uint64(128)) != (v < 0):
                return i
        out[i] = v
    return -1


def _check_heap_bounds(views: np.ndarray, heap: np.ndarray) -> None:
    """Every long-string view must lie inside ``heap``."""
    lengths = views[:, 0] & _LEN_MASK
    long_rows = lengths > INLINE_MAX
    if long_rows.any():
        ends = views[long_rows, 1] + lengths[long_rows]
        if int(ends.max()) > len(heap) or int(views[long_rows, 1].max()) >= 2**62:
            raise FileFormatError("string view points past its heap")


@njit(nogil=True, cache=True)
def _compact_kernel(views, heap, out, new_heap):
    """out = views with every long string copied, in order, into new_heap."""
    pos = 0
    for i in range(views.shape[0]):
        w0 = views[i, 0]
        out[i, 0] = w0
        ln = np.int64(w0 & np.uint64(0xFFFFFFFF))
        if ln > INLINE_MAX:
            s = np.int64(views[i, 1])
            copy_bytes(new_heap, pos, heap, s, ln)
            out[i, 1] = np.uint64(pos)
            pos += ln
        else:
            out[i, 1] = views[i, 1]


def compact_heap(views: np.ndarray, heap: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(views, heap) with a heap holding only the long strings of ``views``,
    when ``heap`` is much larger: a string dictionary decoded inside a
    whole-chunk arena would otherwise carry the arena (megabytes) into
    every block that uses it."""
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    if heap is None:
        return views, np.zeros(0, np.uint8)
    lengths = (views[:, 0] & _LEN_MASK).astype(np.int64)
    need = int(lengths[lengths > INLINE_MAX].sum())
    if len(heap) <= 2 * need + 4096:
        return views, heap
    _check_heap_bounds(views, heap)
    out = np.empty_like(views)
    new_heap = np.empty(need, np.uint8)
    _compact_kernel(views, heap, out, new_heap)
    return out, new_heap


def decimal_from_be_bytes(views: np.ndarray, heap: np.ndarray | None,
                          type_length: int = 0) -> np.ndarray:
    """Decimals (precision <= 18) stored as big-endian two's complement bytes
    (FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY) -> int64 unscaled values.  Empty
    values (null gaps) give 0."""
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    if heap is None:
        heap = np.zeros(0, np.uint8)
    _check_heap_bounds(views, heap)
    out = np.empty(len(views), np.int64)
    bad = _be_to_int64_kernel(views, heap, out)
    if bad >= 0:
        raise FileFormatError(f"decimal value at row {bad} does not fit in 64 bits")
    return out


def decimal_from_be_bytes_wide(views: np.ndarray, heap: np.ndarray | None,
                               type_length: int = 0) -> np.ndarray:
    """Decimals (precision > 18) -> numpy object array of Python ints."""
    values = views_to_pylist(views, heap)
    out = np.empty(len(values), dtype=object)
    out[:] = [int.from_bytes(b, "big", signed=True) for b in values]
    return out


def concat_views(parts: list[tuple[np.ndarray, np.ndarray | None]]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate (views, heap) pairs into one (views, heap).

    Heaps are concatenated once each (parts sharing the same heap object, e.g.
    pages gathered from one dictionary, share it) and long-string offsets are
    rebased, vectorized."""
    empty = np.zeros(0, np.uint8)
    if not parts:
        return np.zeros((0, 2), np.uint64), empty
    if len(parts) == 1:
        v, h = parts[0]
        return v, (h if h is not None else empty)
    bases: dict[int, int] = {}
    heaps: list[np.ndarray] = []
    total = 0
    arrays, part_base = [], []
    for v, h in parts:
        arrays.append(np.asarray(v, dtype=np.uint64).reshape(-1, 2))
        if h is None or len(h) == 0 or len(v) == 0:
            part_base.append(0)
            continue
        key = id(h)
        if key not in bases:
            bases[key] = total
            heaps.append(h)
            total += len(h)
        part_base.append(bases[key])
    views = np.concatenate(arrays)
    if any(part_base):
        row_ends = np.cumsum([len(a) for a in arrays]).astype(np.int64)
        _rebase_kernel(views, row_ends, np.array(part_base, np.int64))
    if len(heaps) == 1:
        heap = heaps[0]
    elif heaps:
        heap = np.concatenate(heaps)
    else:
        heap = empty
    return views, heap


@njit(nogil=True, cache=True)
def _rebase_kernel(views, row_ends, bases):
    """Add bases[p] to the offsets of long strings in rows of part p."""
    start = 0
    for p in range(row_ends.shape[0]):
        b = np.uint64(bases[p])
        stop = row_ends[p]
        if b != 0:
            for i in range(start, stop):
                if (views[i, 0] & np.uint64(0xFFFFFFFF)) > np.uint64(12):
                    views[i, 1] += b
        start = stop


def views_to_pylist(views: np.ndarray, heap: np.ndarray | None,
                    nulls: np.ndarray | None = None) -> list:
    """Decode views to a list of bytes (None where ``nulls`` is 1).  For tests
    and debugging: one Python step per row."""
    views = np.asarray(views, dtype=np.uint64).reshape(-1, 2)
    heap_bytes = bytes(heap) if heap is not None else b""
    lengths = (views[:, 0] & _LEN_MASK).astype(np.int64)
    inline = np.empty((len(views), 16), np.uint8)
    inline_words = inline.view(np.uint64).reshape(-1, 2)
    inline_words[:, 0] = views[:, 0] >> np.uint64(32)
    inline_words[:, 1] = views[:, 1]
    # bytes 0..3 sit at inline[:, 0:4]; bytes 4..11 at inline[:, 8:16]
    out = []
    for i in range(len(views)):
        if nulls is not None and nulls[i]:
            out.append(None)
            continue
        n = int(lengths[i])
        if n <= INLINE_MAX:
            row = inline[i]
            out.append(bytes(row[:min(n, 4)]) + bytes(row[8:8 + max(n - 4, 0)]))
        else:
            off = int(views[i, 1])
            if off + n > len(heap_bytes):
                raise FileFormatError(f"string view {i} points past its heap")
            out.append(heap_bytes[off:off + n])
    return out


def views_from_pylist(values: list) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Build (views, heap, nulls) from a list of bytes/str/None (tests, literals)."""
    nulls = np.array([v is None for v in values], dtype=np.uint8)
    encoded = [b"" if v is None else (v.encode() if isinstance(v, str) else bytes(v))
               for v in values]
    heap = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    offsets = np.zeros(len(encoded) + 1, np.int64)
    offsets[1:] = np.cumsum(np.array([len(b) for b in encoded], dtype=np.int64))
    views = np.empty((len(encoded), 2), np.uint64)
    views_from_offsets(heap, offsets, views)
    return views, heap, (nulls if nulls.any() else None)
