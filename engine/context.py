"""What a running plan needs: configuration, a file opener, memory accounting."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from engine.config import Config
from engine.errors import MemoryLimitError


class MemoryTracker:
    """Counts bytes held by hash tables and materialized intermediates;
    raises MemoryLimitError past the limit.  Thread-safe."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._lock = threading.Lock()

    def reserve(self, nbytes: int, what: str = "intermediate result") -> None:
        if nbytes == 0:
            return
        with self._lock:
            if nbytes > 0 and self.used + nbytes > self.limit:
                raise MemoryLimitError(
                    f"memory_limit of {self.limit} bytes exceeded by {what} "
                    f"(holding {self.used} bytes, needing {nbytes} more); "
                    f"raise it with SET memory_limit = '...'")
            self.used += nbytes
            self.peak = max(self.peak, self.used)

    def release(self, nbytes: int) -> None:
        with self._lock:
            self.used = max(self.used - nbytes, 0)

    def child(self) -> "QueryMemory":
        return QueryMemory(self)


class QueryMemory:
    """One query's share of a MemoryTracker; close() returns all it holds."""

    def __init__(self, parent: MemoryTracker):
        self.parent = parent
        self.used = 0
        self._lock = threading.Lock()

    def reserve(self, nbytes: int, what: str = "intermediate result") -> None:
        self.parent.reserve(nbytes, what)
        with self._lock:
            self.used += nbytes

    def release(self, nbytes: int) -> None:
        with self._lock:
            nbytes = min(nbytes, self.used)
            self.used -= nbytes
        self.parent.release(nbytes)

    def close(self) -> None:
        self.release(self.used)


class PruningCounters:
    """What the scans of one query skipped by footer statistics, the page
    index and bloom filters (engine/operators/pruning.py).  Thread-safe."""
    FIELDS = ("row_groups_scanned", "row_groups_skipped", "bloom_rejections",
              "pages_skipped", "rows_skipped")

    def __init__(self):
        self._lock = threading.Lock()
        for name in self.FIELDS:
            setattr(self, name, 0)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __repr__(self) -> str:
        return f"PruningCounters({self.as_dict()})"


@dataclass
class ExecutionContext:
    config: Config
    open_file: Callable[[str], object]          # path -> scan.ParquetFile (cached)
    memory: MemoryTracker | None = field(default=None)
    pruning: PruningCounters = field(default_factory=PruningCounters)

    def __post_init__(self):
        if self.memory is None:
            self.memory = MemoryTracker(self.config.memory_limit)
