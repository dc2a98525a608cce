"""Synopses: min, max and null count of a column over row ranges of a file.

A file gets at most ``cap`` synopses (Config.statistics_synopses, 100).
``synopsis_bounds`` cuts its rows: with more row groups than ``cap``,
consecutive row groups share a synopsis (as evenly as the count allows);
with fewer, each row group gets one or more, big row groups cut into
equal row ranges so that every synopsis holds about rows / cap rows (a
one-row-group Arrow file still gets up to ``cap``; pieces hold at least
MIN_SYNOPSIS_ROWS rows).  The cut depends on
the row-group sizes only: the same for every query, thread count and
block size.

A synopsis made of whole row groups takes its values from the footer
statistics when every row group has them (the caller hands them in, as
``FooterRange``s: engine/filtering/pruning.py decides which footer values
are trustworthy); the others are computed from the decoded blocks by the
kernels below: NULLs counted, NaN left out of min/max (DuckDB orders NaN
above every number, pruning treats a float column's max as open), -0.0
folded into 0.0, strings ordered by their bytes (unsigned).

Bounds are in storage form: ints (Python int), floats, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from scan.views import compare_strings
from stats.columns import BOOL, FLOAT, INT, STRING, UINT, ColumnBlock, PackedBytes, views_as_bytes


# a row group is cut into synopses of at least this many rows
MIN_SYNOPSIS_ROWS = 2048


def synopsis_bounds(row_group_rows, cap: int) -> np.ndarray:
    """Row boundaries of a file's synopses: increasing int64, 0 first and
    the file's rows last; at most ``cap`` synopses; every row-group
    boundary of a file with at most ``cap`` row groups is among them, and
    row groups are cut into pieces of about rows / cap rows (no fewer than
    MIN_SYNOPSIS_ROWS)."""
    sizes = [int(n) for n in row_group_rows]
    ends = np.cumsum([0] + sizes).astype(np.int64)
    total = int(ends[-1])
    cap = max(int(cap), 1)
    if total == 0:
        return np.zeros(1, np.int64)
    groups = len(sizes)
    if groups >= cap:
        # row groups i*groups//cap .. (i+1)*groups//cap - 1 form synopsis i
        picks = [(i * groups) // cap for i in range(cap)] + [groups]
        return np.unique(ends[picks])
    target = max(-(-total // cap), MIN_SYNOPSIS_ROWS)
    while True:
        pieces = [max(1, n // target) if n else 0 for n in sizes]
        if sum(pieces) <= cap:
            break
        target += max(1, target // 16)
    out = [0]
    for start, n, k in zip(ends[:-1], sizes, pieces):
        if n == 0:
            continue
        step = -(-n // k)
        for s in range(step, n, step):
            out.append(int(start) + s)
        out.append(int(start) + n)
    return np.array(out, np.int64)


def whole_row_groups(bounds: np.ndarray, row_group_rows) -> list:
    """For each synopsis: the row groups it is made of (a range), or None
    when it covers part of one row group."""
    ends = np.cumsum([0] + [int(n) for n in row_group_rows]).astype(np.int64)
    starts, stops = bounds[:-1], bounds[1:]
    a = np.searchsorted(ends, starts)
    b = np.searchsorted(ends, stops)
    last = len(ends) - 1
    whole = (a <= last) & (b <= last)
    whole &= (ends[np.minimum(a, last)] == starts) & (ends[np.minimum(b, last)] == stops)
    return [range(int(x), int(y)) if w else None
            for x, y, w in zip(a.tolist(), b.tolist(), whole.tolist())]


@dataclass
class FooterRange:
    """A row group's footer statistics of one column, as far as trusted:
    lo/hi None when unknown, null_count None when unknown."""
    lo: object
    hi: object
    null_count: int | None


# ---- kernels -------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def piece_of(bounds, row):
    """The synopsis holding ``row``: np.searchsorted(bounds, row, "right") - 1,
    as a loop: numba's np.searchsorted lives in numba.np.arraymath, whose
    import (scipy.linalg among it) costs a process's first query ~0.1 s."""
    lo, hi = 0, bounds.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if bounds[mid] <= row:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@njit(nogil=True, cache=True)
def minmax_numbers(values, nulls, first_row, bounds, lo, hi, seen, null_counts):
    """Fold rows [first_row, first_row + n) into the synopses they fall in:
    ``bounds`` are the synopses' row boundaries; NaN is left out; -0.0 is
    taken as 0.0.  One tight loop per synopsis piece of the block."""
    n = values.shape[0]
    has_nulls = nulls.shape[0] > 0
    s = piece_of(bounds, first_row)
    k = 0
    while k < n:
        stop = min(n, bounds[s + 1] - first_row)
        j = k
        while j < stop:                     # the piece's first non-NULL, non-NaN value
            if has_nulls and nulls[j]:
                null_counts[s] += 1
            elif values[j] == values[j]:
                break
            j += 1
        found = j < stop
        a = values[j] if found else values[k]
        b = a
        if found and has_nulls:
            for i in range(j + 1, stop):
                if nulls[i]:
                    null_counts[s] += 1
                    continue
                v = values[i]
                if v == v:
                    a = min(a, v)
                    b = max(b, v)
        elif found:
            for i in range(j + 1, stop):    # (ints: a plain min/max loop, vectorized)
                v = values[i]
                if v == v:
                    a = min(a, v)
                    b = max(b, v)
        if found:
            if a == 0:
                a = a - a                   # -0.0 -> 0.0 (ints unchanged)
            if b == 0:
                b = b - b
            if not seen[s]:
                seen[s] = True
                lo[s] = a
                hi[s] = b
            else:
                lo[s] = min(lo[s], a)
                hi[s] = max(hi[s], b)
        k = stop
        s += 1


@njit(nogil=True, cache=True, inline="always")
def view_compare(views, i, heap, j):
    """-1 / 0 / 1: string i against string j (both in ``views``), bytewise."""
    return compare_strings(views[i, 0], views[i, 1], heap, views[j, 0], views[j, 1], heap)


@njit(nogil=True, cache=True)
def minmax_views(views, heap, nulls, first_row, bounds, lo_row, hi_row, null_counts):
    """Per synopsis the block row of its smallest and largest string
    (-1: none in this block)."""
    n = views.shape[0]
    has_nulls = nulls.shape[0] > 0
    s = piece_of(bounds, first_row)
    end = bounds[s + 1]
    for k in range(n):
        r = first_row + k
        while r >= end:
            s += 1
            end = bounds[s + 1]
        if has_nulls and nulls[k]:
            null_counts[s] += 1
            continue
        if lo_row[s] < 0:
            lo_row[s] = k
            hi_row[s] = k
            continue
        if k > 0 and views[k, 0] == views[k - 1, 0] and views[k, 1] == views[k - 1, 1] \
                and not (has_nulls and nulls[k - 1]):
            continue                    # the same view as the row before: the same string
        if view_compare(views, k, heap, lo_row[s]) < 0:
            lo_row[s] = k
        elif view_compare(views, k, heap, hi_row[s]) > 0:
            hi_row[s] = k


@njit(nogil=True, cache=True)
def minmax_codes(codes, dictionary, heap, first_row, bounds, lo_code, hi_code, stamp):
    """Dictionary-coded strings (no NULLs): per synopsis the dictionary
    entry of its smallest and largest string; every entry is compared once
    per synopsis (``stamp``: int64 per entry, all -1 at first)."""
    n = codes.shape[0]
    s = piece_of(bounds, first_row)
    end = bounds[s + 1]
    for k in range(n):
        r = first_row + k
        while r >= end:
            s += 1
            end = bounds[s + 1]
        c = codes[k]
        if stamp[c] == s:
            continue
        stamp[c] = s
        if lo_code[s] < 0:
            lo_code[s] = c
            hi_code[s] = c
        elif view_compare(dictionary, c, heap, lo_code[s]) < 0:
            lo_code[s] = c
        elif view_compare(dictionary, c, heap, hi_code[s]) > 0:
            hi_code[s] = c


# ---- one column's synopses ----------------------------------------------------------

@dataclass
class SynopsisColumn:
    """A column's synopses in one file: ``lo``/``hi`` (int64, uint64 or
    float64 arrays; PackedBytes for strings), valid where ``has_range``
    (some non-NULL, non-NaN value), and ``null_counts``."""
    kind: str
    lo: object
    hi: object
    has_range: np.ndarray
    null_counts: np.ndarray

    def bounds_of(self, s: int) -> tuple:
        """(lo, hi) of synopsis s as Python values, (None, None) when unknown."""
        if not self.has_range[s]:
            return None, None
        if self.kind == STRING:
            return self.lo[s], self.hi[s]
        lo, hi = self.lo[s].item(), self.hi[s].item()
        if self.kind == BOOL:
            return bool(lo), bool(hi)
        return lo, hi

    @property
    def nbytes(self) -> int:
        return self.lo.nbytes + self.hi.nbytes + self.has_range.nbytes + self.null_counts.nbytes


def _array_dtype(kind: str):
    return {INT: np.int64, BOOL: np.int64, UINT: np.uint64, FLOAT: np.float64}[kind]


class SynopsisAccumulator:
    """One thread's partial synopses of one column of one file."""

    def __init__(self, kind: str, bounds: np.ndarray, known: list | None = None):
        self.kind = kind
        self.bounds = bounds
        s = len(bounds) - 1
        self.null_counts = np.zeros(s, np.int64)
        self.seen = np.zeros(s, np.bool_)
        if kind == STRING:
            self.lo: list = [None] * s
            self.hi: list = [None] * s
        else:
            dt = _array_dtype(kind)
            self.lo = np.zeros(s, dt)
            self.hi = np.zeros(s, dt)

    def add(self, block: ColumnBlock, first_row: int) -> None:
        """Fold one decoded block starting at file row ``first_row``."""
        nulls = block.nulls if block.nulls is not None else np.zeros(0, np.uint8)
        if self.kind != STRING:
            values = block.values
            if values.dtype == np.bool_:
                values = values.view(np.uint8)
            elif values.dtype.itemsize < 4:
                values = values.astype(np.int32)
            minmax_numbers(values, nulls, first_row, self.bounds, self.lo, self.hi, self.seen,
                           self.null_counts)
            return
        s = len(self.bounds) - 1
        lo_row = np.full(s, -1, np.int64)
        hi_row = np.full(s, -1, np.int64)
        if block.values is None:
            stamp = np.full(len(block.dictionary), -1, np.int64)
            minmax_codes(block.codes, block.dictionary, block.heap, first_row, self.bounds,
                         lo_row, hi_row, stamp)
            views = block.dictionary
        else:
            views = block.values
            minmax_views(views, _heap(block.heap), nulls, first_row, self.bounds, lo_row,
                         hi_row, self.null_counts)
        touched = np.flatnonzero(lo_row >= 0)
        if len(touched) == 0:
            return
        los = views_as_bytes(views, block.heap, lo_row[touched])
        his = views_as_bytes(views, block.heap, hi_row[touched])
        for t, a, b in zip(touched, los, his):
            self._fold_bytes(int(t), a, b)

    def _fold_bytes(self, s: int, lo: bytes, hi: bytes) -> None:
        if not self.seen[s]:
            self.seen[s] = True
            self.lo[s], self.hi[s] = lo, hi
            return
        if lo < self.lo[s]:
            self.lo[s] = lo
        if hi > self.hi[s]:
            self.hi[s] = hi

    def merge(self, other: "SynopsisAccumulator") -> None:
        self.null_counts += other.null_counts
        if self.kind == STRING:
            for s in np.flatnonzero(other.seen):
                self._fold_bytes(int(s), other.lo[s], other.hi[s])
            return
        both = self.seen & other.seen
        only = other.seen & ~self.seen
        self.lo[both] = np.minimum(self.lo[both], other.lo[both])
        self.hi[both] = np.maximum(self.hi[both], other.hi[both])
        self.lo[only] = other.lo[only]
        self.hi[only] = other.hi[only]
        self.seen |= other.seen

    def finish(self, footer: dict | None = None) -> SynopsisColumn:
        """The synopses; ``footer`` maps synopsis -> FooterRange for the
        synopses taken from footer statistics (not computed here)."""
        lo, hi, seen, nulls = self.lo, self.hi, self.seen.copy(), self.null_counts.copy()
        if footer:
            lo = list(lo) if self.kind == STRING else lo.copy()
            hi = list(hi) if self.kind == STRING else hi.copy()
            for s, fr in footer.items():
                nulls[s] = fr.null_count
                if fr.lo is None:
                    seen[s] = False
                    continue
                seen[s] = True
                lo[s], hi[s] = fr.lo, fr.hi
        if self.kind == STRING:
            lo = PackedBytes.from_list([v if seen[i] else None for i, v in enumerate(lo)])
            hi = PackedBytes.from_list([v if seen[i] else None for i, v in enumerate(hi)])
        return SynopsisColumn(self.kind, lo, hi, seen, nulls)


def footer_synopses(groups: list, ranges_of, required: bool) -> dict:
    """Synopsis -> FooterRange for the synopses of whole row groups whose
    every row group has footer min/max (and a null count, or the column
    is required): the union of their ranges.  ``ranges_of(rg)`` gives a
    row group's FooterRange, None when its footer does not tell (lo/hi
    None in a FooterRange: every value of the row group is NULL);
    ``groups`` is whole_row_groups()."""
    out = {}
    for s, rgs in enumerate(groups):
        if rgs is None or len(rgs) == 0:
            continue
        lo = hi = None
        nulls = 0
        ok = True
        for rg in rgs:
            fr = ranges_of(rg)
            nc = None if fr is None else (0 if required else fr.null_count)
            if fr is None or nc is None or (fr.lo is None) != (fr.hi is None):
                ok = False
                break
            nulls += nc
            if fr.lo is None:
                continue              # no value known: only right when all NULL
            lo = fr.lo if lo is None or fr.lo < lo else lo
            hi = fr.hi if hi is None or fr.hi > hi else hi
        if ok:
            out[s] = FooterRange(lo, hi, nulls)
    return out


def _heap(heap):
    return heap if heap is not None and len(heap) else np.zeros(1, np.uint8)
