"""LIKE kernels (numba) over string views or the flat form of
engine/kernels/strings.py: literal pieces between '%' searched eight
positions at a time (``like_pieces``), prefix and suffix tests, and the
general matcher with '_' and an escape (``like_const``, ``like_rows``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.memops import load8
from scan.views import view_byte as _byte, view_length as _len


@njit(nogil=True, cache=True, inline="always")
def _char_len(b):
    if b < 0x80:
        return 1
    if b >= 0xF0:
        return 4
    if b >= 0xE0:
        return 3
    if b >= 0xC0:
        return 2
    return 1


@njit(nogil=True, cache=True, inline="always")
def _like_one(s, s0, sn, p, p0, pn, esc):
    """SQL LIKE of s[s0:s0+sn] against pattern p[p0:p0+pn]; esc < 0: none.
    '_' matches one UTF-8 character, '%' any sequence."""
    si = 0
    pi = 0
    star_p = -1
    star_s = 0
    while si < sn:
        if pi < pn:
            c = np.int64(p[p0 + pi])
            if c == esc and pi + 1 < pn:
                if s[s0 + si] == p[p0 + pi + 1]:
                    si += 1
                    pi += 2
                    continue
            elif c == 37:  # '%'
                pi += 1
                star_p = pi
                star_s = si
                continue
            elif c == 95:  # '_'
                si += _char_len(s[s0 + si])
                pi += 1
                continue
            elif s[s0 + si] == c:
                si += 1
                pi += 1
                continue
        if star_p < 0:
            return False
        star_s += _char_len(s[s0 + star_s])
        si = star_s
        pi = star_p
    while pi < pn and p[p0 + pi] == 37:
        pi += 1
    return pi >= pn and si == sn


@njit(nogil=True, cache=True)
def like_const(offsets, data, pat, esc):
    n = offsets.shape[0] - 1
    out = np.empty(n, np.bool_)
    for i in range(n):
        out[i] = _like_one(data, offsets[i], offsets[i + 1] - offsets[i], pat, 0, pat.shape[0], esc)
    return out


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_BYTE_ONES = np.uint64(0x0101010101010101)


@njit(nogil=True, cache=True, inline="always")
def _find(src, base, pos, end, pieces, p0, m):
    """First i in [pos, end - m] where src[base + i:base + i + m] equals
    pieces[p0:p0 + m], or -1.  Pieces of two bytes and more test eight
    positions at once (SWAR): a position is a candidate when both the
    piece's first and its last byte match there (English text matches a
    first byte alone every few bytes), and only candidates compare the
    bytes between.  The 8-byte loads stay inside ``src``; near its end the
    positions are tested one by one."""
    if m == 0:
        return pos
    c0 = pieces[p0]
    if m == 1:
        for i in range(pos, end):
            if src[base + i] == c0:
                return i
        return -1
    cl = pieces[p0 + m - 1]
    first = np.uint64(c0) * _BYTE_ONES
    last = np.uint64(cl) * _BYTE_ONES
    room = src.shape[0] - base - m - 7          # i <= room: loads at i and i + m - 1 fit
    i = pos
    while i <= end - m:
        if i <= room:
            x = (load8(src, base + i) ^ first) | (load8(src, base + i + m - 1) ^ last)
            hits = ~(((x & _LOW7) + _LOW7) | x | _LOW7)     # 0x80 in each byte where x is 0
            valid = end - m - i + 1
            if valid < 8:
                hits &= (np.uint64(1) << np.uint64(8 * valid)) - np.uint64(1)
            while hits:
                k = 0
                while ((hits >> np.uint64(8 * k)) & np.uint64(0x80)) == 0:
                    k += 1
                at = i + k
                ok = True
                for t in range(1, m - 1):
                    if src[base + at + t] != pieces[p0 + t]:
                        ok = False
                        break
                if ok:
                    return at
                hits &= hits - np.uint64(1)
            i += 8
            continue
        if src[base + i] == c0 and src[base + i + m - 1] == cl:
            ok = True
            for t in range(1, m - 1):
                if src[base + i + t] != pieces[p0 + t]:
                    ok = False
                    break
            if ok:
                return i
        i += 1
    return -1


@njit(nogil=True, cache=True)
def like_pieces(views, heap, pieces, bounds):
    """LIKE of every string against a pattern of literal pieces joined by
    '%' (no '_', no escape): pieces[bounds[j]:bounds[j + 1]] is piece j; the
    first piece must start the string, the last end it (either may be empty:
    a leading or trailing '%'), the ones between occur in order.  Matched
    bytewise on the views, leftmost first (enough for literal pieces)."""
    k = bounds.shape[0] - 1
    if bounds[1] == bounds[0] and bounds[k] == bounds[k - 1]:
        return _like_middle(views, heap, pieces, bounds)
    n = views.shape[0]
    out = np.zeros(n, np.bool_)
    inline = np.empty(12, np.uint8)
    head = bounds[1] - bounds[0]
    tail = bounds[k] - bounds[k - 1]
    for i in range(n):
        w0 = views[i, 0]
        w1 = views[i, 1]
        ln = _len(w0)
        if ln < head + tail:
            continue
        if ln > 12:
            src = heap
            base = np.int64(w1)
        else:
            for j in range(ln):
                inline[j] = _byte(w0, w1, heap, j)
            src = inline
            base = 0
        ok = True
        for t in range(head):
            if src[base + t] != pieces[bounds[0] + t]:
                ok = False
                break
        end = ln - tail
        if ok and k > 1:
            for t in range(tail):
                if src[base + end + t] != pieces[bounds[k - 1] + t]:
                    ok = False
                    break
        if not ok:
            continue
        pos = head
        for j in range(1, k - 1):
            m = bounds[j + 1] - bounds[j]
            at = _find(src, base, pos, end, pieces, bounds[j], m)
            if at < 0:
                ok = False
                break
            pos = at + m
        out[i] = ok
    return out


@njit(nogil=True, cache=True)
def _like_middle(views, heap, pieces, bounds):
    """like_pieces of a pattern that starts and ends with '%' ('%green%',
    '%special%requests%'): strings in the heap first, then the inline ones
    from a scratch copy.  The search is written out in each loop: numba
    does not inline a helper's own inlined calls, and a call that passes
    arrays costs reference counting per row (measured: twice the time)."""
    n = views.shape[0]
    k = bounds.shape[0] - 1
    out = np.zeros(n, np.bool_)
    short = 0
    for i in range(n):
        ln = _len(views[i, 0])
        if ln <= 12:
            short += 1
            continue
        base = np.int64(views[i, 1])
        pos = 0
        ok = True
        for j in range(1, k - 1):
            m = bounds[j + 1] - bounds[j]
            at = _find(heap, base, pos, ln, pieces, bounds[j], m)
            if at < 0:
                ok = False
                break
            pos = at + m
        out[i] = ok
    if short == 0:
        return out
    inline = np.empty(12, np.uint8)
    for i in range(n):
        w0 = views[i, 0]
        ln = _len(w0)
        if ln > 12:
            continue
        w1 = views[i, 1]
        for j in range(ln):
            inline[j] = _byte(w0, w1, heap, j)
        pos = 0
        ok = True
        for j in range(1, k - 1):
            m = bounds[j + 1] - bounds[j]
            at = _find(inline, 0, pos, ln, pieces, bounds[j], m)
            if at < 0:
                ok = False
                break
            pos = at + m
        out[i] = ok
    return out


@njit(nogil=True, cache=True)
def like_rows(offsets, data, poffsets, pdata, esc):
    n = offsets.shape[0] - 1
    out = np.empty(n, np.bool_)
    for i in range(n):
        out[i] = _like_one(data, offsets[i], offsets[i + 1] - offsets[i],
                           pdata, poffsets[i], poffsets[i + 1] - poffsets[i], esc)
    return out


@njit(nogil=True, cache=True)
def affix_const(views, heap, pat, suffix):
    """Each string starts with ``pat`` (ends with it, when ``suffix``):
    LIKE 'abc%' and LIKE '%abc'."""
    n = views.shape[0]
    k = pat.shape[0]
    out = np.zeros(n, np.bool_)
    for i in range(n):
        w0 = views[i, 0]
        w1 = views[i, 1]
        ln = _len(w0)
        if ln < k:
            continue
        at = ln - k if suffix else 0
        ok = True
        for j in range(k):
            if _byte(w0, w1, heap, at + j) != pat[j]:
                ok = False
                break
        out[i] = ok
    return out
