"""Sorted runs and their k-way merge (numba kernels behind ORDER BY).

Rows to sort are a *row matrix* ``rows`` ((n, W + 1) uint64, C order;
engine.operators.sort builds it): words 0..W-1 of a row are unsigned
integers whose lexicographic order is the sort order (NULL flags and
order-preserving value codes, packed by their ranges); word W is the row's
index.  Where ``string_col[w] = s >= 0`` word w belongs to a string key: it
holds the string's first 8 bytes (big endian), and rows tying on it are
compared on the whole strings ``views[s][row index]`` (16-byte views into
``heap``), reversed when ``string_desc[w]``.  Rows tying on every word are
ordered by row index, so the order is a strict total order: every sort and
merge here is stable, and rows of different runs are comparable (per-run
string ranks are not).  Sorting moves whole rows, so a merge reads every run
sequentially.

  word_ranges   per logical word, its (min, max) over some rows
  pack_rows     logical words -> physical row words (value - min, shifted)
  sort_run      rows lo..hi sorted in place: string words become exact ranks
                within the run (engine.kernels.sort.string_sort_ranks), a
                stable LSD radix sort (digits of up to DIGIT_BITS bits over
                the bits in use; digits equal in every row skipped) orders
                the rows, then the string words become prefixes
  cut_runs      per run, the positions of splitter rows (binary search)
  merge_runs    k-way merge (binary heap) of pieces of sorted runs
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.sort import chunk_at, string_sort_ranks
from engine.kernels.strings import compare_strings

DIGIT_BITS = 12               # radix digit width of the row sort


# ---------------------------------------------------------------- comparison
@njit(nogil=True, cache=True, inline="always")
def row_less(ra, a, rb, b, string_col, string_desc, views, heap):
    """True when row ra[a] sorts before row rb[b]."""
    nw = ra.shape[1] - 1
    for w in range(nw):
        x = ra[a, w]
        y = rb[b, w]
        if x != y:
            return x < y
        s = string_col[w]
        if s >= 0:
            i = np.int64(ra[a, nw])
            j = np.int64(rb[b, nw])
            c = compare_strings(views[s, i, 0], views[s, i, 1], heap,
                                views[s, j, 0], views[s, j, 1], heap)
            if c != 0:
                return (c > 0) if string_desc[w] else (c < 0)
    return ra[a, nw] < rb[b, nw]


# ---------------------------------------------------------------- run sort
@njit(nogil=True, cache=True)
def _sort_rows(run, tmp):
    """Stable LSD radix sort of the rows of ``run`` by words W-1..0, in
    digits of up to DIGIT_BITS bits over each word's used bits; digits
    equal in every row are skipped."""
    n, width = run.shape
    nw = width - 1
    if n < 2:
        return
    used = np.zeros(nw, np.uint64)
    for i in range(n):
        for w in range(nw):
            used[w] |= run[i, w]
    pass_word = np.empty(nw * 64, np.int64)
    pass_shift = np.empty(nw * 64, np.uint64)
    pass_mask = np.empty(nw * 64, np.uint64)
    t = 0
    for w in range(nw - 1, -1, -1):       # least significant pass first
        bits = 0
        v = used[w]
        while v:
            bits += 1
            v >>= np.uint64(1)
        if bits == 0:
            continue
        npass = (bits + DIGIT_BITS - 1) // DIGIT_BITS
        d = (bits + npass - 1) // npass
        for j in range(npass):
            pass_word[t] = w
            pass_shift[t] = np.uint64(j * d)
            pass_mask[t] = np.uint64((1 << d) - 1)
            t += 1
    counts = np.zeros((t, 1 << DIGIT_BITS), np.int64)
    for i in range(n):
        for q in range(t):
            counts[q, np.int64((run[i, pass_word[q]] >> pass_shift[q]) & pass_mask[q])] += 1
    src, dst = run, tmp
    passes = 0
    offsets = np.empty(1 << DIGIT_BITS, np.int64)
    for q in range(t):
        w = pass_word[q]
        shift = pass_shift[q]
        mask = pass_mask[q]
        if counts[q, np.int64((run[0, w] >> shift) & mask)] == n:
            continue
        total = 0
        for b in range(np.int64(mask) + 1):
            offsets[b] = total
            total += counts[q, b]
        for i in range(n):
            b = np.int64((src[i, w] >> shift) & mask)
            p = offsets[b]
            offsets[b] = p + 1
            for c in range(width):
                dst[p, c] = src[i, c]
        src, dst = dst, src
        passes += 1
    if passes % 2:
        run[:, :] = tmp


@njit(nogil=True, cache=True)
def sort_run(rows, string_col, string_desc, views, heap, lo, hi):
    """Sort rows[lo:hi] in place (their index words must be lo..hi-1)."""
    run = rows[lo:hi]
    n = hi - lo
    nw = rows.shape[1] - 1
    nstrings = 0
    for w in range(nw):
        if string_col[w] >= 0:
            nstrings += 1
    prefixes = np.empty((nstrings, n), np.uint64)
    t = 0
    for w in range(nw):
        s = string_col[w]
        if s >= 0:
            sv = views[s, lo:hi]
            ranks = string_sort_ranks(sv, heap)
            top = np.int64(0)           # ranks.max(), without numba.np.arraymath (it
            for i in range(n):          # imports scipy.linalg on a process's first sort)
                top = max(top, ranks[i])
            desc = string_desc[w]
            for i in range(n):
                run[i, w] = np.uint64(top - ranks[i]) if desc else np.uint64(ranks[i])
                key = chunk_at(sv[i, 0], sv[i, 1], heap, 0)
                prefixes[t, i] = ~key if desc else key
            t += 1
    _sort_rows(run, np.empty_like(run))
    t = 0
    for w in range(nw):
        if string_col[w] >= 0:
            for i in range(n):
                run[i, w] = prefixes[t, np.int64(run[i, nw]) - lo]
            t += 1


# ---------------------------------------------------------------- packing
@njit(nogil=True, cache=True)
def word_ranges(words, lo, hi, nulls, null_of):
    """(min, max) of each logical word (row of ``words``) over columns
    lo..hi, skipping NULL rows of value words (nulls[null_of[w]] set)."""
    nwords = words.shape[0]
    mins = np.full(nwords, np.uint64(0xFFFFFFFFFFFFFFFF))
    maxs = np.zeros(nwords, np.uint64)
    for w in range(nwords):
        nr = null_of[w]
        mn = mins[w]
        mx = maxs[w]
        for i in range(lo, hi):
            if nr >= 0 and nulls[nr, i]:
                continue
            v = words[w, i]
            if v < mn:
                mn = v
            if v > mx:
                mx = v
        mins[w] = mn
        maxs[w] = mx
    return mins, maxs


@njit(nogil=True, cache=True)
def pack_rows(words, lo, hi, nulls, null_of, mins, target, shifts, rows):
    """rows[lo:hi]: logical word w of each row, minus mins[w], shifted by
    shifts[w] into physical word target[w] (-1: not stored; NULL rows of
    value words store 0); the last word is the row index."""
    nw = rows.shape[1] - 1
    for i in range(lo, hi):
        for p in range(nw):
            rows[i, p] = 0
        rows[i, nw] = np.uint64(i)
    for w in range(words.shape[0]):
        p = target[w]
        if p < 0:
            continue
        nr = null_of[w]
        mn = mins[w]
        sh = np.uint64(shifts[w])
        for i in range(lo, hi):
            if nr >= 0 and nulls[nr, i]:
                continue
            rows[i, p] |= (words[w, i] - mn) << sh


# ---------------------------------------------------------------- merging
@njit(nogil=True, cache=True)
def cut_runs(rows, string_col, string_desc, views, heap, bounds, splitters):
    """cuts[r, j + 1]: position of run r's first row not before splitter row
    j (cuts[r, 0] and cuts[r, P + 1] are the run's ends).  Run r is
    rows[bounds[r]:bounds[r + 1]], sorted; the splitter rows are sorted."""
    nruns = bounds.shape[0] - 1
    p = splitters.shape[0]
    cuts = np.empty((nruns, p + 2), np.int64)
    for r in range(nruns):
        cuts[r, 0] = bounds[r]
        cuts[r, p + 1] = bounds[r + 1]
        lo = bounds[r]
        for j in range(p):
            a = lo
            b = bounds[r + 1]
            while a < b:
                m = (a + b) >> 1
                if row_less(rows, m, splitters, j, string_col, string_desc, views, heap):
                    a = m + 1
                else:
                    b = m
            cuts[r, j + 1] = a
            lo = a
    return cuts


@njit(nogil=True, cache=True, inline="always")
def _sift_down(order, i, m, pos, rows, string_col, string_desc, views, heap):
    while True:
        c = 2 * i + 1
        if c >= m:
            return
        if c + 1 < m and row_less(rows, pos[order[c + 1]], rows, pos[order[c]],
                                  string_col, string_desc, views, heap):
            c += 1
        if not row_less(rows, pos[order[c]], rows, pos[order[i]],
                        string_col, string_desc, views, heap):
            return
        t = order[i]
        order[i] = order[c]
        order[c] = t
        i = c


@njit(nogil=True, cache=True)
def merge_runs(rows, string_col, string_desc, views, heap, starts, ends, out, emit_index):
    """Merge the sorted pieces rows[starts[r]:ends[r]] into ``out``: the
    rows' index words when emit_index, else their positions in ``rows``.
    Stops when ``out`` is full; returns the number written."""
    nruns = starts.shape[0]
    nw = rows.shape[1] - 1
    pos = starts.copy()
    order = np.empty(nruns, np.int64)       # binary heap of runs by head row
    m = 0
    for r in range(nruns):
        if pos[r] < ends[r]:
            order[m] = r
            m += 1
    for i in range(m // 2 - 1, -1, -1):
        _sift_down(order, i, m, pos, rows, string_col, string_desc, views, heap)
    k = 0
    limit = out.shape[0]
    while m > 0 and k < limit:
        r = order[0]
        p = pos[r]
        out[k] = np.int64(rows[p, nw]) if emit_index else p
        k += 1
        pos[r] = p + 1
        if p + 1 == ends[r]:
            m -= 1
            order[0] = order[m]
        if m > 1:
            _sift_down(order, 0, m, pos, rows, string_col, string_desc, views, heap)
    return k
