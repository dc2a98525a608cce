"""String-view kernels (numba): build, flatten, compare, transform (LIKE
and prefix/suffix matches: engine/kernels/like.py).

A string vector is ``views`` ((n, 2) uint64, see planner/types.py) plus a
uint8 ``heap``.  Most transforming kernels work on a *flat* form: ``offsets``
(n + 1 int64) and ``data`` (uint8), the bytes of row i being
``data[offsets[i]:offsets[i+1]]``; ``views_from_flat`` turns that back into
views whose heap is ``data`` itself (no copy of long strings).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.memops import copy_bytes
from scan.views import bswap32 as _bswap32, compare_strings  # noqa: F401 (re-exported)
from scan.views import view_byte as _byte, view_length as _len

_EMPTY_HEAP = np.zeros(0, np.uint8)
_MASK32 = np.uint64(0xFFFFFFFF)


def as_heap(heap) -> np.ndarray:
    return _EMPTY_HEAP if heap is None else heap


# ---------------------------------------------------------------- flat <-> views
@njit(nogil=True, cache=True)
def views_from_flat(offsets, data):
    """Views for the flat strings; long strings point into ``data``."""
    n = offsets.shape[0] - 1
    views = np.zeros((n, 2), np.uint64)
    for i in range(n):
        start = offsets[i]
        ln = offsets[i + 1] - start
        w0 = np.uint64(ln)
        k = min(ln, 4)
        for j in range(k):
            w0 |= np.uint64(data[start + j]) << np.uint64(32 + 8 * j)
        views[i, 0] = w0
        if ln > 12:
            views[i, 1] = np.uint64(start)
        else:
            w1 = np.uint64(0)
            for j in range(4, ln):
                w1 |= np.uint64(data[start + j]) << np.uint64(8 * (j - 4))
            views[i, 1] = w1
    return views


@njit(nogil=True, cache=True)
def flatten_views(views, heap):
    """(offsets, data): the strings of ``views`` copied contiguously."""
    n = views.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    for i in range(n):
        offsets[i + 1] = offsets[i] + _len(views[i, 0])
    data = np.empty(offsets[n], np.uint8)
    for i in range(n):
        w0 = views[i, 0]
        w1 = views[i, 1]
        ln = offsets[i + 1] - offsets[i]
        o = offsets[i]
        if ln > 12:
            s = np.int64(w1)
            copy_bytes(data, o, heap, s, ln)
        else:
            for j in range(ln):
                data[o + j] = _byte(w0, w1, heap, j)
    return offsets, data


def flatten(vec_views, heap):
    return flatten_views(np.ascontiguousarray(vec_views), as_heap(heap))


def views_from_pylist(values):
    """(views, heap, nulls|None) for a list of str/bytes/None."""
    n = len(values)
    nulls = np.zeros(n, np.uint8)
    parts = []
    for i, v in enumerate(values):
        if v is None:
            nulls[i] = 1
            parts.append(b"")
        else:
            parts.append(v.encode("utf-8") if isinstance(v, str) else bytes(v))
    lengths = np.fromiter((len(p) for p in parts), np.int64, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(parts), np.uint8).copy()
    views = views_from_flat(offsets, data)
    return views, data, (nulls if nulls.any() else None)


def views_to_pylist(views, heap, nulls=None, decode_utf8=True):
    """Python objects (str, or bytes when decode_utf8 is False; None for NULL)."""
    offsets, data = flatten(views, heap)
    blob = data.tobytes()
    off = offsets.tolist()
    if decode_utf8 and blob.isascii():      # one decode; byte offsets are character offsets
        text = blob.decode("ascii")
        out = [text[a:b] for a, b in zip(off, off[1:])]
    elif decode_utf8:
        out = [blob[off[i]:off[i + 1]].decode("utf-8", "replace") for i in range(len(views))]
    else:
        out = [blob[off[i]:off[i + 1]] for i in range(len(views))]
    if nulls is not None:
        for i in np.flatnonzero(nulls).tolist():
            out[i] = None
    return out


# ---------------------------------------------------------------- comparison


@njit(nogil=True, cache=True)
def compare_views(va, ha, vb, hb):
    """int8 per row: sign of a - b."""
    n = va.shape[0]
    out = np.empty(n, np.int8)
    for i in range(n):
        out[i] = compare_strings(va[i, 0], va[i, 1], ha, vb[i, 0], vb[i, 1], hb)
    return out


@njit(nogil=True, cache=True)
def compare_views_const(va, ha, c0, c1, hc):
    """int8 per row: sign of a - constant."""
    n = va.shape[0]
    out = np.empty(n, np.int8)
    for i in range(n):
        out[i] = compare_strings(va[i, 0], va[i, 1], ha, c0, c1, hc)
    return out


@njit(nogil=True, cache=True)
def equal_views(va, ha, vb, hb):
    n = va.shape[0]
    out = np.zeros(n, np.bool_)
    for i in range(n):
        a0 = va[i, 0]
        if a0 != vb[i, 0]:
            continue
        ln = _len(a0)
        if ln <= 12:
            out[i] = va[i, 1] == vb[i, 1]
        else:
            sa = np.int64(va[i, 1])
            sb = np.int64(vb[i, 1])
            eq = True
            for j in range(4, ln):
                if ha[sa + j] != hb[sb + j]:
                    eq = False
                    break
            out[i] = eq
    return out


@njit(nogil=True, cache=True)
def equal_views_const(va, ha, c0, c1, hc):
    n = va.shape[0]
    out = np.zeros(n, np.bool_)
    ln = _len(c0)
    if ln <= 12:
        for i in range(n):
            out[i] = va[i, 0] == c0 and va[i, 1] == c1
        return out
    sc = np.int64(c1)
    for i in range(n):
        if va[i, 0] != c0:
            continue
        sa = np.int64(va[i, 1])
        eq = True
        for j in range(4, ln):
            if ha[sa + j] != hc[sc + j]:
                eq = False
                break
        out[i] = eq
    return out


# ---------------------------------------------------------------- transforms
@njit(nogil=True, cache=True)
def concat_flat(oa, da, ob, db):
    n = oa.shape[0] - 1
    offsets = np.zeros(n + 1, np.int64)
    for i in range(n):
        offsets[i + 1] = offsets[i] + (oa[i + 1] - oa[i]) + (ob[i + 1] - ob[i])
    data = np.empty(offsets[n], np.uint8)
    for i in range(n):
        o = offsets[i]
        la = oa[i + 1] - oa[i]
        copy_bytes(data, o, da, oa[i], la)
        copy_bytes(data, o + la, db, ob[i], ob[i + 1] - ob[i])
    return offsets, data


@njit(nogil=True, cache=True)
def char_lengths(offsets, data):
    """Characters per row (UTF-8: bytes that are not continuation bytes)."""
    n = offsets.shape[0] - 1
    out = np.zeros(n, np.int64)
    for i in range(n):
        c = 0
        for j in range(offsets[i], offsets[i + 1]):
            if (data[j] & 0xC0) != 0x80:
                c += 1
        out[i] = c
    return out


@njit(nogil=True, cache=True)
def substring_flat(offsets, data, starts, lengths, has_length):
    """SQL substring on characters (DuckDB rules: start 1-based, negative start
    counts from the end, negative length takes the characters before start)."""
    n = offsets.shape[0] - 1
    begin = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    for i in range(n):
        s0 = offsets[i]
        s1 = offsets[i + 1]
        nchars = 0
        for j in range(s0, s1):
            if (data[j] & 0xC0) != 0x80:
                nchars += 1
        st = starts[i]
        if st < 0:
            st = nchars + st + 1
        if has_length:
            ln = lengths[i]
            if ln >= 0:
                lo, hi = st, st + ln
            else:
                lo, hi = st + ln, st
        else:
            lo, hi = st, nchars + 1
        lo = max(lo, 1)
        hi = min(hi, nchars + 1)
        if hi <= lo:
            begin[i] = s0
            end[i] = s0
            continue
        # character positions lo..hi-1 (1-based) -> byte offsets
        c = 0
        b = s1
        e = s1
        for j in range(s0, s1):
            if (data[j] & 0xC0) != 0x80:
                c += 1
                if c == lo:
                    b = j
                if c == hi:
                    e = j
                    break
        begin[i] = b
        end[i] = e
    out_off = np.zeros(n + 1, np.int64)
    for i in range(n):
        out_off[i + 1] = out_off[i] + end[i] - begin[i]
    out = np.empty(out_off[n], np.uint8)
    for i in range(n):
        copy_bytes(out, out_off[i], data, begin[i], end[i] - begin[i])
    return out_off, out


@njit(nogil=True, cache=True)
def ascii_case(data, upper):
    out = data.copy()
    if upper:
        for j in range(out.shape[0]):
            b = out[j]
            if 97 <= b <= 122:
                out[j] = b - 32
    else:
        for j in range(out.shape[0]):
            b = out[j]
            if 65 <= b <= 90:
                out[j] = b + 32
    return out


@njit(nogil=True, cache=True)
def gather_flat(offsets, data, idx):
    """Flat strings of rows idx (rows may repeat)."""
    m = idx.shape[0]
    out_off = np.zeros(m + 1, np.int64)
    for k in range(m):
        i = idx[k]
        out_off[k + 1] = out_off[k] + offsets[i + 1] - offsets[i]
    out = np.empty(out_off[m], np.uint8)
    for k in range(m):
        i = idx[k]
        copy_bytes(out, out_off[k], data, offsets[i], offsets[i + 1] - offsets[i])
    return out_off, out


@njit(nogil=True, cache=True)
def _rebase_into(views, base, out, start):
    """out[start:start + len(views)] = views, long strings' offsets + base."""
    for i in range(views.shape[0]):
        w0 = views[i, 0]
        w1 = views[i, 1]
        if (w0 & _MASK32) > 12:
            w1 += base
        out[start + i, 0] = w0
        out[start + i, 1] = w1


def rebase_views(views: np.ndarray, base: int) -> np.ndarray:
    """Views whose long-string offsets are moved by ``base`` (heap concatenation)."""
    if base == 0 or len(views) == 0:
        return views
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    out = np.empty_like(views)
    _rebase_into(views, np.uint64(base), out, 0)
    return out


def concat_rebased(parts: list, bases) -> np.ndarray:
    """The views of ``parts`` one after another, each part's long-string
    offsets moved by its base (one pass, no boolean masks: a merge of string
    groups spent ~1 ms per merge in masked numpy before)."""
    n = sum(len(v) for v in parts)
    out = np.empty((n, 2), np.uint64)
    pos = 0
    for views, base in zip(parts, bases):
        if len(views):
            views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
            _rebase_into(views, np.uint64(base), out, pos)
            pos += len(views)
    return out


def unify_heaps(parts):
    """[(views, heap)] -> ([views rebased], one heap) so rows can be mixed."""
    heaps, out, base = [], [], 0
    for views, heap in parts:
        out.append(rebase_views(views, base))
        if heap is not None and len(heap):
            heaps.append(heap)
            base += len(heap)
    heap = np.concatenate(heaps) if heaps else np.zeros(0, np.uint8)
    return out, heap
