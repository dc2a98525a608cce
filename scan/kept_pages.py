"""Decompressed PLAIN pages of fixed-width values kept with their cached
chunk (scan/required_chunk.py, SNAPPY chunks).

Writers fall back from dictionary to PLAIN pages when a column chunk's
dictionary outgrows its limit (pyarrow and parquet-mr: 1 MiB): prices and
keys in row groups of millions of rows are mostly PLAIN.  A dictionary
chunk's dictionary is kept decoded (scan/kept_dictionary.py), so its reads
decode only compact indices; a PLAIN chunk was decompressed on every read,
and the same query took up to twice as long on a file written in big row
groups as on one of 100k-row groups (bench/layouts.py).  Here the
decompressed bodies of a chunk's compressed PLAIN fixed-width pages are kept
in one arena, charged to the chunk in the buffer manager: they count against
the buffer budget (and memory_limit) and go when the chunk is evicted.  A
PLAIN page decompressed holds its values at their stored width, about what
the decoded column takes; string pages are not kept (their views point into
the page bytes, and text decompresses to several times its size).

Each page is decompressed into the arena by one read only: a read claims
the unclaimed pages of its range under the arena's lock, decompresses those
into their slots in the kernel, and marks them filled after the kernel
returns (or gives the claims back when it failed).  A page another read has
claimed but not yet filled is decompressed into the read's own scratch: its
slot may be half written (the Snappy kernel's 16-byte moves run ahead of the
bytes they complete).  Once every page is filled no lock is taken."""

from __future__ import annotations

import threading

import numpy as np

from scan.io.buffer_manager import charge

_LOCK = threading.Lock()
_KEY = "kept-plain-pages"


_EMPTY, _CLAIMED, _FILLED = 0, 1, 2
_NO_FILL = np.zeros(0, np.uint8)


class KeptPages:
    """One chunk's arena: ``offsets[i]`` is data page i's slot in ``arena``
    (-1: not kept); ``state[i]`` empty, claimed by a read, or filled."""
    __slots__ = ("arena", "offsets", "state", "complete", "_left", "_lock")

    def __init__(self, arena, offsets):
        self.arena, self.offsets = arena, offsets
        self.state = np.zeros(len(offsets), np.uint8)
        self._left = int(np.count_nonzero(offsets >= 0))    # pages not yet filled
        self.complete = False
        self._lock = threading.Lock()

    def claim(self, p0: int, p1: int):
        """(slots, fill) for a read of pages [p0, p1): ``slots[i]`` the
        page's arena slot when it is filled or this read fills it, else -1;
        ``fill[i]`` 1 for the pages this read now has to decompress into
        their slots (empty when there are none)."""
        offsets = self.offsets[p0:p1]
        if self.complete:
            return offsets, _NO_FILL
        with self._lock:
            state = self.state[p0:p1]
            mine = (state == _EMPTY) & (offsets >= 0)
            state[mine] = _CLAIMED
            slots = np.where(mine | (state == _FILLED), offsets, -1)
        return slots, (mine.view(np.uint8) if mine.any() else _NO_FILL)

    def settle(self, p0: int, p1: int, fill, ok: bool) -> None:
        """After the kernel: this read's claimed pages are filled (``ok``)
        or given back."""
        if not len(fill):
            return
        mine = fill.view(np.bool_)
        with self._lock:
            self.state[p0:p1][mine] = _FILLED if ok else _EMPTY
            if ok:
                self._left -= int(np.count_nonzero(mine))
                self.complete = self._left == 0


def kept_pages(buf, memo, table, plain_code_mask: int) -> KeptPages | None:
    """The chunk's KeptPages, made (and charged to ``buf``) on first use;
    None when it has no compressed PLAIN page or ``buf`` is not cached by a
    buffer manager (or is too large to keep: see BufferManager.charge_page).
    ``plain_code_mask`` picks the encoding bit of the table's page codes
    (0 = PLAIN)."""
    if memo is None:
        return None
    kept = memo.get(_KEY, False)
    if kept is not False:
        return kept
    with _LOCK:
        kept = memo.get(_KEY, False)
        if kept is not False:
            return kept
        keep = ((table.encs & plain_code_mask) == 0) & (table.compressed != 0)
        kept = None
        if keep.any():
            sizes = np.where(keep, table.usizes, 0)
            ends = np.cumsum(sizes)
            offsets = np.where(keep, ends - sizes, -1).astype(np.int64)
            total = int(ends[-1])
            if charge(buf, total):
                kept = KeptPages(np.empty(total, np.uint8), offsets)
        memo[_KEY] = kept
        return kept
