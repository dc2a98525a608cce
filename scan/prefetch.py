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
"""

from __future__ import annotations

import threading


class ChunkPrefetcher:
    def __init__(self, pf, window: int):
        self.pf = pf
        self.window = max(int(window), 1)
        self._lock = threading.Lock()
        self._order: list = []          # row groups in announced order
        self._ranges: dict = {}         # row group -> [(offset, length)]
        self._issued: set = set()

    def announce(self, plan) -> None:
        """``plan``: [(row group, [leaf column indexes])] in reading order."""
        order, ranges, index_ranges = [], {}, []
        for rg, cols in plan:
            rs = []
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
        with self._lock:
            self._order = order
            self._ranges = ranges
            self._issued = set()
        if index_ranges:        # page indexes are read first (pruning, page maps):
            self.pf.buffer_manager.prefetch(self.pf.source, index_ranges)   # one region

    def on_read(self, rg: int) -> None:
        """Row group ``rg`` is being read: request it and what follows,
        within the window."""
        with self._lock:
            if rg not in self._ranges or not self._order:
                return
            try:
                pos = self._order.index(rg)
            except ValueError:
                return
            todo, ahead = [], 0
            for g in self._order[pos:]:
                size = sum(n for _, n in self._ranges[g])
                if g != rg and ahead + size > self.window:
                    break
                ahead += size
                if g not in self._issued:
                    self._issued.add(g)
                    todo.append(g)
        bm = self.pf.buffer_manager
        for g in todo:
            bm.prefetch(self.pf.source, self._ranges[g])
