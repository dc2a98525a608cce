"""Read-ahead of column chunks for remote files (scan/io/remote.py).

A scan announces the row groups and columns it will read
(``ParquetFile.will_read``); when it then reads a chunk of row group ``g``,
the chunks of ``g`` and of the row groups after it, up to ``window`` bytes
ahead, are requested through ``BufferManager.prefetch`` -- coalesced per
row group and several requests in flight -- while the current ones decode.
The page indexes (ColumnIndex, OffsetIndex) of the announced chunks, which
pruning and page maps read before the data, are requested at once: they
lie together before the footer, so they come in one or a few requests.
Reads the scan does not announce are read on demand, one request each.

A row group the scan reads only some row ranges of (the rest skipped by
synopses) is fetched by pages: for each flat chunk with an offset index,
the dictionary region and the run of data pages covering each range
(``ParquetFile.page_run``, the same ranges the reader then asks for).
On date-sorted data a selective filter then fetches a few pages, not the
row group's chunks.
"""

from __future__ import annotations

import bisect
import contextlib
import threading


# the page indexes of the columns read are fetched with those of the columns
# between them (a few KB per chunk): one request, not one per index
INDEX_WASTE = 1e9


class ChunkPrefetcher:
    def __init__(self, pf, window: int):
        self.pf = pf
        self.window = max(int(window), 1)
        self._lock = threading.Lock()
        self._order: list = []          # row groups in announced order
        self._position: dict = {}       # row group -> its index in _order
        self._ranges: dict = {}         # row group -> [(offset, length)]
        self._ends: list = [0]          # bytes of _order[:i], i = 0..len(_order)
        self._requested = 0             # _order[:_requested] are requested
        self._by_pages: set = set()     # row groups read by the pages of some ranges

    def reads_pages(self, rg: int) -> bool:
        """Whether the scan reads only some row ranges of row group ``rg``
        (then a ranged read of a chunk not cached fetches its pages)."""
        return rg in self._by_pages

    def announce(self, plan) -> None:
        """``plan``: [(row group, [leaf column indexes], row ranges or None)]
        in reading order (see ParquetFile.will_read)."""
        order, ranges, index_ranges, partial = [], {}, [], {}
        for rg, cols, rows in plan:
            rs = []
            num_rows = self.pf.row_groups[rg].num_rows
            if rows is not None and sum(n for _, n in rows) < num_rows:
                partial[rg] = (sorted(set(cols)), rows)
            for c in sorted(set(cols)):
                try:
                    _col, _rg, chunk, length = self.pf.chunk_extent(rg, c)
                except Exception:           # noqa: BLE001 - the read reports it
                    continue
                rs.append((chunk.start, length))
                for which in ("column_index", "offset_index"):
                    off = getattr(chunk, f"{which}_offset", None)
                    n = getattr(chunk, f"{which}_length", None)
                    if off is not None and n and off >= 4 and off + n <= self.pf.source.size():
                        index_ranges.append((off, n))
            if rs:
                order.append(rg)
                ranges[rg] = ranges.get(rg, []) + rs
        if index_ranges:        # page indexes are read first (pruning, page maps): they
            # lie together before the footer, small: one region, the others' with them
            self.pf.buffer_manager.prefetch(self.pf.source, index_ranges, max_waste=INDEX_WASTE)
        by_pages = set()
        for rg, (cols, rows) in partial.items():     # (waits for the offset indexes)
            rs = self._page_ranges(rg, cols, rows)
            if rs is not None:
                ranges[rg] = rs
                by_pages.add(rg)
        ends = [0]
        for rg in order:
            ends.append(ends[-1] + sum(n for _, n in ranges[rg]))
        with self._lock:
            self._order = order
            self._position = {rg: i for i, rg in enumerate(order)}
            self._ranges = ranges
            self._ends = ends
            self._requested = 0
            self._by_pages = by_pages
        if order:               # the first window travels while the scan starts
            self.on_read(order[0])

    def _page_ranges(self, rg: int, cols: list, rows: list):
        """The byte ranges of the page runs of ``rows`` in each chunk, or
        None when some chunk has no usable offset index (whole chunks then)."""
        out: set = set()
        bm, source = self.pf.buffer_manager, self.pf.source
        for c in cols:
            try:
                _col, _rg, chunk, length = self.pf.chunk_extent(rg, c)
            except Exception:               # noqa: BLE001 - the read reports it
                return None
            if bm.holds(source, chunk.start, length):
                continue                    # cached whole: the reader takes it from there
            for start, count in rows:
                try:
                    run = self.pf.page_run(rg, c, start, count)
                except Exception:           # noqa: BLE001 - the read reports it
                    return None
                if run is None:
                    return None
                out.update(run.ranges)
        return sorted(out)

    def on_read(self, rg: int) -> None:
        """Row group ``rg`` is being read: request it and what follows,
        within the window.  Called for every chunk read, so cheap when
        there is nothing new to request: the window's end comes from the
        announced sizes by bisection, and what was requested is a prefix
        of the announced order (row groups the reads skipped past are
        requested with the window: the scan's other morsels read them)."""
        with self._lock:
            pos = self._position.get(rg)
            if pos is None:
                return
            ends = self._ends
            end = max(pos + 1, bisect.bisect_right(ends, ends[pos] + self.window) - 1)
            if end <= self._requested:
                return
            todo = self._order[self._requested:end]
            self._requested = end
        bm, source = self.pf.buffer_manager, self.pf.source
        batch = getattr(source, "batch", contextlib.nullcontext)
        with batch():               # the window's requests start together
            for g in todo:
                bm.prefetch(source, self._ranges[g])
