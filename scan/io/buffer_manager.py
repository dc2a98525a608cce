"""The buffer manager: every byte pqdb reads passes through it.

Pages are variable size (one column chunk, or a footer), keyed by
(source identity, offset, length), evicted least-recently-used when the
memory budget is exceeded; never written back.  Thread-safe: two threads
asking for the same range cause one read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

DEFAULT_BUDGET = 1 << 30


class _Pending:
    __slots__ = ("event", "result", "error")

    def __init__(self):
        self.event = threading.Event()
        self.result = None
        self.error = None


class BufferManager:
    """LRU cache of byte ranges under a memory budget."""

    def __init__(self, memory_budget_bytes: int = DEFAULT_BUDGET):
        self.memory_budget_bytes = int(memory_budget_bytes)
        self._pages: OrderedDict = OrderedDict()
        self._pending: dict = {}
        self._used = 0
        self._lock = threading.Lock()
        self.reads = 0          # number of source reads (for tests and stats)
        self.hits = 0

    @property
    def bytes_cached(self) -> int:
        return self._used

    def get(self, source, offset: int, length: int) -> np.ndarray:
        """The bytes [offset, offset+length) of ``source`` as a uint8 array.

        The array is shared with other callers: treat it as read-only."""
        key = (source.identity(), int(offset), int(length))
        with self._lock:
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
                self.hits += 1
                return page
            pending = self._pending.get(key)
            owner = pending is None
            if owner:
                pending = _Pending()
                self._pending[key] = pending
        if not owner:
            pending.event.wait()
            if pending.error is not None:
                raise pending.error
            return pending.result
        try:
            out = np.empty(int(length), dtype=np.uint8)
            source.read_into(int(offset), out)
            pending.result = out
        except BaseException as e:
            pending.error = e
            with self._lock:
                del self._pending[key]
            pending.event.set()
            raise
        with self._lock:
            del self._pending[key]
            self.reads += 1
            if length <= self.memory_budget_bytes:
                self._pages[key] = out
                self._used += out.nbytes
                self._evict()
        pending.event.set()
        return out

    def _evict(self) -> None:
        while self._used > self.memory_budget_bytes and self._pages:
            _, page = self._pages.popitem(last=False)
            self._used -= page.nbytes

    def invalidate(self, source=None) -> None:
        """Drop every cached page (of ``source`` only, when given)."""
        with self._lock:
            if source is None:
                self._pages.clear()
                self._used = 0
                return
            ident = source.identity()
            for key in [k for k in self._pages if k[0] == ident]:
                self._used -= self._pages.pop(key).nbytes


_default: BufferManager | None = None
_default_lock = threading.Lock()


def default_buffer_manager() -> BufferManager:
    """The process-wide buffer manager (1 GiB budget unless replaced)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = BufferManager(DEFAULT_BUDGET)
        return _default


def set_default_buffer_manager(manager: BufferManager) -> None:
    global _default
    with _default_lock:
        _default = manager
