"""String heaps of several vectors into one, without copying what no row uses.

Rows taken from a large table (a hash join's build side) keep their views
into its whole string heap.  Putting such vectors' heaps together by
concatenation copies every heap whole, once per block: Q10 at SF10 copied
the 200 MB heaps of 1.5M customers for every batch of a few thousand
joined rows.  ``compact_views`` instead copies only the long strings the
rows point to, into a heap of their own; ``one_heap`` picks whichever of the
two allocates fewer bytes.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from scan.memops import copy_bytes

_LOW32 = np.uint64(0xFFFFFFFF)
_NO_NULLS = np.zeros(1, np.bool_)
_EMPTY = np.zeros(0, np.uint8)

# below this many heap bytes concatenating is cheap whatever the rows use
COMPACT_MIN_BYTES = 1 << 20


@njit(nogil=True, cache=True)
def long_bytes(views, isnull, has_nulls):
    """Bytes of the long (> 12 bytes) strings of the non-NULL rows."""
    total = 0
    for i in range(views.shape[0]):
        if has_nulls and isnull[i]:
            continue
        length = np.int64(views[i, 0] & _LOW32)
        if length > 12:
            total += length
    return total


@njit(nogil=True, cache=True)
def compact_views(views, heap, isnull, has_nulls, out, col, out_heap, pos):
    """out[:, col:col+2] = views with each long string copied from ``heap``
    to ``out_heap`` at ``pos`` onwards (its offset rewritten); NULL rows 0.
    Returns the position after the last byte written."""
    for i in range(views.shape[0]):
        if has_nulls and isnull[i]:
            out[i, col] = 0
            out[i, col + 1] = 0
            continue
        w0 = views[i, 0]
        w1 = views[i, 1]
        length = np.int64(w0 & _LOW32)
        if length > 12:
            off = np.int64(w1)
            copy_bytes(out_heap, pos, heap, off, length)
            w1 = np.uint64(pos)
            pos += length
        out[i, col] = w0
        out[i, col + 1] = w1
    return pos


def distinct_heaps(heaps) -> list:
    """The non-empty heaps, each object once (blocks of one table share theirs)."""
    out, seen = [], set()
    for h in heaps:
        if h is not None and len(h) and id(h) not in seen:
            seen.add(id(h))
            out.append(h)
    return out


def should_compact(views_list, heaps, nulls_list=None) -> bool:
    """Whether copying the rows' long strings allocates fewer bytes than
    concatenating their distinct heaps (more than one, and big)."""
    distinct = distinct_heaps(heaps)
    if len(distinct) < 2:
        return False
    total = sum(len(h) for h in distinct)
    if total < COMPACT_MIN_BYTES:
        return False
    used = 0
    for j, views in enumerate(views_list):
        isnull = None if nulls_list is None else nulls_list[j]
        used += long_bytes(np.ascontiguousarray(views, np.uint64),
                           _NO_NULLS if isnull is None else isnull, isnull is not None)
    return 2 * used < total


def compacted(views_list, heaps, nulls_list=None):
    """(views of each vector over one new heap, the heap): the long strings
    the rows use, copied once per row.  NULL rows' views become 0."""
    used = 0
    for j, views in enumerate(views_list):
        isnull = None if nulls_list is None else nulls_list[j]
        used += long_bytes(np.ascontiguousarray(views, np.uint64),
                           _NO_NULLS if isnull is None else isnull, isnull is not None)
    out_heap = np.empty(used, np.uint8)
    out, pos = [], 0
    for j, (views, heap) in enumerate(zip(views_list, heaps)):
        isnull = None if nulls_list is None else nulls_list[j]
        dest = np.empty((len(views), 2), np.uint64)
        pos = compact_views(np.ascontiguousarray(views, np.uint64),
                            _EMPTY if heap is None else heap,
                            _NO_NULLS if isnull is None else isnull, isnull is not None,
                            dest, 0, out_heap, pos)
        out.append(dest)
    return out, out_heap


class HeapCache:
    """The concatenation of a set of heaps that keeps coming back.

    A hash join's probe output points into the build side's heaps, the same
    ones for every block: grouping such rows by several string columns
    (Q10 with statistics: the customer columns come from the build side)
    either concatenated those heaps or copied the strings each block uses,
    per block.  A caller that sees one block after another (an aggregation's
    thread-local state) keeps one of these: the second time in a row the
    same heaps come together, they are concatenated once and every later
    block only rebases its views.  What it holds is reserved against
    ``memory`` (engine.context.QueryMemory) before it is made."""

    def __init__(self, memory=None, what: str = "string keys' heaps"):
        self.memory, self.what = memory, what
        self._last: tuple = ()       # weak references to the previous set
        self.heaps: tuple = ()       # the cached set, in order (kept alive)
        self.heap = _EMPTY
        self.bases: dict[int, int] = {}
        self.nbytes = 0

    def bases_for(self, distinct: list) -> dict | None:
        """{id(heap): offset in ``self.heap``} when ``distinct`` (distinct
        non-empty heaps, in the caller's order) is the cached set or has
        just become it; None otherwise."""
        if _same(self.heaps, distinct):
            return self.bases
        last = [r() for r in self._last]
        self._last = tuple(weakref.ref(h) for h in distinct)
        if not _same(last, distinct):
            return None
        self.clear()
        total = sum(len(h) for h in distinct)
        if self.memory is not None:
            self.memory.reserve(total, self.what)
        self.nbytes = total
        self.heaps = tuple(distinct)
        self.heap = np.concatenate([np.asarray(h, np.uint8) for h in distinct])
        self.bases, base = {}, 0
        for h in distinct:
            self.bases[id(h)] = base
            base += len(h)
        return self.bases

    def clear(self) -> None:
        """Let go of the cached set and its reservation."""
        self.heaps, self.heap, self.bases = (), _EMPTY, {}
        if self.memory is not None and self.nbytes:
            self.memory.release(self.nbytes)
        self.nbytes = 0


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
