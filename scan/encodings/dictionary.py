"""Dictionary encoding (PLAIN_DICTIONARY / RLE_DICTIONARY).

The dictionary page is PLAIN encoded (decode it with ``decode_plain``; for
strings the views point into the dictionary page buffer).  Data pages hold
one bit-width byte followed by RLE/bit-packed hybrid indices; values are
gathered from the dictionary with a bounds check.

Two ways to a data page's values: ``dictionary_values`` runs the fused
kernel (indices decoded and gathered in one pass, the rows a selection
keeps only), which every decode path tries first; it gives up (None) on any
defect, and ``decode_dictionary_indices`` + ``gather``, the checked path,
then name the error.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.rle import decode_hybrid
from scan.encodings.varint import read_uleb128
from scan.errors import FileFormatError
from scan.memops import load8
from scan.selection import NO_SEL


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


@njit(nogil=True, cache=True)
def dictionary_page_kernel(buf, pos, end, count, dictionary, out, sel, use_sel):
    """Fused decode of one dictionary-encoded data page: the bit-width byte
    at ``pos``, then RLE/bit-packed indices, each written as
    ``out[j] = dictionary[index]`` (no int32 index array, no second pass).
    With ``use_sel`` only values k with sel[k] != 0 are kept (branch-free:
    every value is written, the cursor advances by sel[k]; ``out`` needs one
    slot of slack).  Every index is range-checked, kept or not.  Returns
    the number of values kept, or -1 on any defect: the caller then reruns
    the checked two-step decoder, which names the error.

    Bit-packed indices are read from a zero-padded copy of the page with
    one unaligned 8-byte load per value, or per group of eight values (bit
    widths up to 8: one load; up to 16: two).  Indices are unsigned, so
    numba adds no wrap-around test; the range check is a branch that is
    never taken (a running maximum instead made every value wait for the
    previous one: 15% slower than the old loop on l_orderkey)."""
    if end > buf.shape[0]:
        end = buf.shape[0]
    if pos >= end:
        return -1
    bit_width = np.int64(buf[pos])
    pos += 1
    if bit_width > 32:
        return -1
    size = dictionary.shape[0]
    if size == 0:
        return 0 if count == 0 else -1
    top = np.uint64(size - 1)
    start = pos
    padded = np.zeros(end - start + 16, np.uint8)
    padded[:end - start] = buf[start:end]
    mask = np.uint64((np.int64(1) << bit_width) - 1)
    width = np.uint64(bit_width)
    value_bytes = (bit_width + 7) // 8
    filled = 0
    j = 0
    while filled < count:
        if pos >= end:
            return -1
        header, pos = read_uleb128(buf, pos, end, 5)
        if pos < 0:
            return -1
        run = np.int64(header >> np.uint64(1))
        if (header & np.uint64(1)) == 0:
            if pos + value_bytes > end:
                return -1
            v = np.uint64(0)
            for k in range(value_bytes):
                v |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
            pos += value_bytes
            n = min(run, count - filled)
            if n > 0:
                if v > top:
                    return -1
                value = dictionary[v]
                if use_sel:
                    for k in range(n):
                        out[j] = value
                        j += np.int64(sel[filled + k])
                else:
                    for k in range(n):
                        out[j + k] = value
                    j += n
            filled += n
        else:
            n = min(run * 8, count - filled)
            if pos + (n * bit_width + 7) // 8 > end:
                return -1
            first = np.uint64(pos - start)          # byte of the run's first value
            k0 = 0
            if use_sel:
                for k in range(n):
                    bit = first * np.uint64(8) + np.uint64(k) * width
                    idx = (load8(padded, bit >> np.uint64(3)) >> (bit & np.uint64(7))) & mask
                    if idx > top:
                        return -1
                    out[j] = dictionary[idx]
                    j += np.int64(sel[filled + k])
                k0 = n
            elif bit_width <= 8:                    # eight values in one word
                groups = n // 8
                at = np.uint64(j)
                for g in range(groups):
                    w = load8(padded, first + np.uint64(g) * width)
                    o = at + np.uint64(8 * g)
                    for t in range(8):
                        idx = (w >> (np.uint64(t) * width)) & mask
                        if idx > top:
                            return -1
                        out[o + np.uint64(t)] = dictionary[idx]
                k0 = groups * 8
            elif bit_width <= 16:                   # four in each of two words
                groups = n // 8
                at = np.uint64(j)
                half = np.uint64((4 * bit_width) >> 3)
                shift = np.uint64((4 * bit_width) & 7)
                for g in range(groups):
                    b = first + np.uint64(g) * width
                    w0 = load8(padded, b)
                    w1 = load8(padded, b + half) >> shift
                    o = at + np.uint64(8 * g)
                    for t in range(4):
                        idx = (w0 >> (np.uint64(t) * width)) & mask
                        if idx > top:
                            return -1
                        out[o + np.uint64(t)] = dictionary[idx]
                        idx = (w1 >> (np.uint64(t) * width)) & mask
                        if idx > top:
                            return -1
                        out[o + np.uint64(t + 4)] = dictionary[idx]
                k0 = groups * 8
            if not use_sel:
                at = np.uint64(j)
                for k in range(k0, n):
                    bit = first * np.uint64(8) + np.uint64(k) * width
                    idx = (load8(padded, bit >> np.uint64(3)) >> (bit & np.uint64(7))) & mask
                    if idx > top:
                        return -1
                    out[at + np.uint64(k)] = dictionary[idx]
                j += n
            filled += n
            pos += run * bit_width
            if pos > end:
                pos = end
    return j


def _is_views(d) -> bool:
    return d.ndim == 2 and d.dtype == np.uint64 and d.shape[1] == 2


def _fusable(d) -> bool:
    return _is_views(d) or (d.ndim == 1 and d.dtype.kind in "iuf" and d.dtype.itemsize in (4, 8))


def direct_buffer(dictionary, num_rows):
    """A flat output for a whole chunk of fused dictionary pages (one slot
    of slack for the selecting kernel), or None."""
    if not _fusable(dictionary):
        return None
    return np.empty(num_rows + 1, np.complex128 if _is_views(dictionary) else dictionary.dtype)


def direct_values(direct, dictionary):
    """The values a direct_buffer (or a slice of it) holds, in the
    dictionary's storage."""
    return direct.view(np.uint64).reshape(-1, 2) if _is_views(dictionary) else direct


def fused_form(dictionary):
    """(flat dictionary, views?, integer view dtype) for the fused kernel, or
    None when the dictionary's storage has no fused form.  1-D values are
    gathered as same-size ints, (n, 2) string views as one complex128 per
    row.  Computed once per dictionary, not per page."""
    d = dictionary
    if not _fusable(d):
        return None
    if _is_views(d):
        return np.ascontiguousarray(d).view(np.complex128).reshape(-1), True, None
    as_int = np.int32 if d.dtype.itemsize == 4 else np.int64
    return np.ascontiguousarray(d).view(as_int), False, as_int


def dictionary_values(data, pos, n_valid, dictionary, out=None, sel=None, form=None):
    """Values of a dictionary-encoded page through the fused kernel, or None
    when the dictionary's storage has no fused form or a defect needs the
    checked path.  ``out``: a flat slice of a direct_buffer to write into
    (the result is then a view of it); ``sel``: bool mask of the page's
    values to keep; ``form``: fused_form(dictionary) when the caller has it."""
    if form is None:
        form = fused_form(dictionary)
        if form is None:
            return None
    flat, views, as_int = form
    if out is None:
        keep = n_valid if sel is None else int(np.count_nonzero(sel))
        out = np.empty(keep + 1, np.complex128 if views else dictionary.dtype)
    target = out if views else out.view(as_int)
    use_sel = sel is not None
    kept = dictionary_page_kernel(data, pos, len(data), n_valid, flat, target,
                                   sel.view(np.uint8) if use_sel else NO_SEL, use_sel)
    if kept < 0:
        return None
    out = out[:kept]
    return out.view(np.uint64).reshape(-1, 2) if views else out
