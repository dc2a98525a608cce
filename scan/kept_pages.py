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

Pages are filled by whichever read decompresses them first: the kernel
decompresses a page that is not marked filled into its arena slot, and the
caller marks the range's pages filled after the kernel returns (after the
GIL is taken back, so the flag is written after the bytes).  Two reads that
decompress the same page at once write the same bytes."""

from __future__ import annotations

import threading

import numpy as np

from scan.io.buffer_manager import charge

_LOCK = threading.Lock()
_KEY = "kept-plain-pages"


class KeptPages:
    """One chunk's arena: ``offsets[i]`` is data page i's slot in ``arena``
    (-1: not kept), ``filled[i]`` 1 once it holds the page."""
    __slots__ = ("arena", "offsets", "filled")

    def __init__(self, arena, offsets, filled):
        self.arena, self.offsets, self.filled = arena, offsets, filled


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
                kept = KeptPages(np.empty(total, np.uint8), offsets,
                                 np.zeros(len(offsets), np.uint8))
        memo[_KEY] = kept
        return kept
