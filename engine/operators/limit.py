"""Limit sink: the first offset+limit rows in input order; stops pulling
morsels once enough rows arrived (workers take morsels in order, so the
processed morsels always form a prefix)."""

from __future__ import annotations

import threading

from engine.operators.collect import CollectSink


class LimitSink(CollectSink):
    def __init__(self, types, limit: int | None, offset: int = 0, memory=None):
        super().__init__(types, memory, "limit input")
        self.limit, self.offset = limit, offset
        self._rows = 0
        self._per_morsel: dict[int, int] = {}
        self._lock = threading.Lock()

    def consume(self, local, block, seq):
        super().consume(local, block, seq)
        with self._lock:
            self._rows += block.n
            if self.limit is not None:
                self._per_morsel[seq[0]] = self._per_morsel.get(seq[0], 0) + block.n

    def done(self) -> bool:
        return self.limit is not None and self._rows >= self.offset + self.limit

    def enough(self, morsel_index: int) -> bool:
        """The rows seen of morsels up to ``morsel_index`` (all of them come
        before the rest of that morsel) already fill offset + limit: a join
        emitting many rows per input block stops there.  Earlier morsels
        still running are not cut (their rows may yet come first)."""
        if self.limit is None or self._rows < self.offset + self.limit:
            return False
        with self._lock:
            seen = sum(n for m, n in self._per_morsel.items() if m <= morsel_index)
        return seen >= self.offset + self.limit

    def merge(self, locals_):
        block = super().merge(locals_)
        stop = block.n if self.limit is None else self.offset + self.limit
        return block.slice(self.offset, stop)
