"""What a running plan needs: configuration, a file opener, memory accounting."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from engine.config import Config
from engine.errors import MemoryLimitError, QueryInterrupted, QueryTimeout
from engine.memory_probe import current_rss


def format_bytes(n: int) -> str:
    """``n`` bytes for people: "50.0 MiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


TRIM_AFTER_EVICTING = 32 << 20    # cache bytes evicted at once that are given back to the OS
# near the limit (reservations plus cache budgets past this share of it) the
# process's resident size is looked at every RESIDENT_CHECK_BYTES reserved;
# when it holds more than UNACCOUNTED_SLACK past what it held unreserved
# after the last trim, the allocator's free memory goes back to the OS
PRESSURE_SHARE = 0.5
RESIDENT_CHECK_BYTES = 32 << 20
UNACCOUNTED_SLACK = 256 << 20


class MemoryTracker:
    """Counts bytes held by hash tables, materialized intermediates and scan
    buffers, against ``limit``, together with the bytes of the caches
    (``caches``: objects with ``bytes_cached`` and ``shrink(nbytes) -> freed``,
    e.g. the buffer manager and the chunk-state cache).  A reservation that
    does not fit evicts the caches first; when the reservations alone would
    pass the limit it raises MemoryLimitError.  Thread-safe."""

    def __init__(self, limit: int, caches=()):
        self.limit = limit
        self.caches = tuple(caches)
        self.used = 0
        self.peak = 0
        self.evicted = 0          # cache bytes evicted to make room
        self.trims = 0            # allocator trims near the limit (_watch_resident)
        self._unreserved_cap = None   # resident bytes outside reservations and caches that trigger a trim
        self._since_check = 0
        self._lock = threading.Lock()

    def cached(self) -> int:
        """Bytes the caches hold now."""
        return sum(c.bytes_cached for c in self.caches)

    def _cache_bound(self) -> int:
        """Most bytes the caches can hold (their budgets; the bytes they hold
        when one has no budget): while reservations plus this fit, no cache
        needs asking (summing the chunk states per reservation cost Python
        time on every block)."""
        bound = 0
        for c in self.caches:
            b = getattr(c, "bytes_bound", None)
            bound += c.bytes_cached if b is None else b
        return bound

    def reserve(self, nbytes: int, what: str = "intermediate result") -> None:
        if nbytes == 0:
            return
        evicted = 0
        with self._lock:
            if nbytes > 0:
                if self.used + nbytes > self.limit:
                    raise MemoryLimitError(
                        f"memory_limit of {format_bytes(self.limit)} ({self.limit} bytes) "
                        f"exceeded by {what}: it needs {format_bytes(nbytes)} more while this "
                        f"query holds {format_bytes(self.used)} (caches are evicted first); "
                        f"raise it with SET memory_limit = '...'")
                if self.caches and self.used + nbytes + self._cache_bound() > self.limit:
                    before = self.evicted
                    self._make_room(self.used + nbytes - self.limit)
                    evicted = self.evicted - before
            self.used += nbytes
            self.peak = max(self.peak, self.used)
            watch = self._check_due(nbytes)
        if watch and evicted < TRIM_AFTER_EVICTING:
            self._watch_resident()
        if evicted >= TRIM_AFTER_EVICTING:
            # evicted cache bytes are free, but the allocator keeps them in the
            # arena of the thread that freed them, where another thread's
            # arrays cannot use them: at SF10 a second Q18 under 1500MB peaked
            # 600 MiB higher than the first.  Give them back (~16 ms a call).
            from engine.scheduler import release_free_memory
            release_free_memory()

    def _check_due(self, nbytes: int) -> bool:
        """Whether the resident size is to be looked at now: every
        RESIDENT_CHECK_BYTES reserved or released while reservations plus
        cache budgets are past PRESSURE_SHARE of the limit.  Lock held."""
        self._since_check += abs(nbytes)
        if self._since_check < RESIDENT_CHECK_BYTES or \
                self.used + self._cache_bound() <= self.limit * PRESSURE_SHARE:
            return False
        self._since_check = 0
        return True

    def _watch_resident(self) -> None:
        """Near the limit: what the process holds beyond the reservations
        and caches is mostly memory freed into the allocator's per-thread
        arenas, where other threads' arrays cannot use it (SF30 Q5 under
        5GB held 1.1 GiB of it, past the limit).  Past a cap it is trimmed;
        the cap follows what stays after a trim (unreserved bytes that are
        really in use, the interpreter's and the kernels'), plus a slack."""
        unreserved = current_rss() - self.used - self.cached()
        cap = self._unreserved_cap
        if cap is not None and unreserved <= cap:
            self._unreserved_cap = min(cap, unreserved + UNACCOUNTED_SLACK)
            return
        from engine.scheduler import release_free_memory
        release_free_memory()
        self.trims += 1
        after = current_rss() - self.used - self.cached()
        self._unreserved_cap = after + UNACCOUNTED_SLACK

    def _make_room(self, headroom: int) -> None:
        """Evict caches (in order) until they fit into the limit minus what
        is reserved; ``headroom`` = reserved - limit (<= 0). Lock held."""
        excess = headroom + self.cached()
        for cache in self.caches:
            if excess <= 0:
                return
            freed = cache.shrink(excess)
            self.evicted += freed
            excess -= freed

    def release(self, nbytes: int) -> None:
        """Give back ``nbytes`` (whoever releases has dropped the arrays
        first: near the limit, their memory is looked after here)."""
        with self._lock:
            self.used = max(self.used - nbytes, 0)
            watch = self._check_due(nbytes)
        if watch:
            self._watch_resident()

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


class CancelToken:
    """A running query's stop request, shared by all its threads.

    ``cancel()`` (Ctrl-C, Connection.interrupt(), from any thread) or the
    passing of ``timeout`` seconds (query_timeout) makes every later
    ``check()`` raise QueryInterrupted / QueryTimeout.  Workers check between
    morsels, between the blocks an operator emits and between the pieces of
    a parallel merge; kernels are cut into calls of bounded work, so every
    thread sees a stop request within well under a second.  ``active``
    counts the threads working for the query (engine.scheduler), so the
    query's caller can wait until none is left before it returns."""

    def __init__(self, timeout: float = 0.0):
        self.reason: str | None = None           # None, "interrupted" or "timeout"
        self.timeout = float(timeout or 0.0)
        self.deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        self.active = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def cancel(self, reason: str = "interrupted") -> None:
        if self.reason is None:
            self.reason = reason

    @property
    def cancelled(self) -> bool:
        if self.reason is None and self.deadline is not None and \
                time.monotonic() >= self.deadline:
            self.reason = "timeout"
        return self.reason is not None

    def check(self) -> None:
        """Raise the stop error when the query was cancelled or timed out."""
        if self.reason is None:
            if self.deadline is None or time.monotonic() < self.deadline:
                return
            self.reason = "timeout"
        raise self.error()

    def error(self) -> QueryInterrupted:
        if self.reason == "timeout":
            return QueryTimeout(f"query timed out: it ran longer than query_timeout "
                                f"({self.timeout:g} s); raise it with SET query_timeout = "
                                f"'...' (0 = none)")
        return QueryInterrupted("query interrupted")

    # -- the threads working for the query (engine.scheduler) ----------
    def enter(self) -> None:
        with self._lock:
            self.active += 1

    def leave(self) -> None:
        with self._lock:
            self.active -= 1
            if self.active == 0:
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no thread works for the query (at most ``timeout``
        seconds); True when none is left."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.active > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.05))
            return True


_CURRENT = threading.local()           # .token: the CancelToken of this thread's query


def current_cancel() -> CancelToken | None:
    """The CancelToken of the query this thread works for (None outside a query)."""
    return getattr(_CURRENT, "token", None)


def set_current_cancel(token: CancelToken | None) -> CancelToken | None:
    """Make ``token`` this thread's; returns the one it replaces."""
    previous = getattr(_CURRENT, "token", None)
    _CURRENT.token = token
    return previous


def check_cancel() -> None:
    """Raise QueryInterrupted / QueryTimeout when this thread's query was
    stopped (cheap: a thread-local read and an attribute test)."""
    token = getattr(_CURRENT, "token", None)
    if token is not None:
        token.check()


class PruningCounters:
    """What the scans of one query skipped by footer statistics, the page
    index and bloom filters (engine/filtering/pruning.py), and by synopses
    (``synopses_skipped``: morsels no row of which can match; their rows
    count in rows_skipped, whole row groups in row_groups_skipped).  The
    ``*_rows_skipped`` fields split the skipped rows by source (``by_source``).
    A scan keeps its own counters with the query's as ``parent``: what it
    adds counts in both (EXPLAIN ANALYZE prints each scan's).  Thread-safe."""
    FIELDS = ("row_groups_scanned", "row_groups_skipped", "bloom_rejections",
              "pages_skipped", "rows_skipped", "synopses_skipped",
              "footer_rows_skipped", "bloom_rows_skipped", "page_index_rows_skipped",
              "synopses_row_groups_skipped", "synopses_rows_skipped", "rows_join_filtered")

    def __init__(self, parent: "PruningCounters | None" = None):
        self._lock = threading.Lock()
        self.parent = parent
        for name in self.FIELDS:
            setattr(self, name, 0)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)
        if self.parent is not None:
            self.parent.add(**counts)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    def by_source(self) -> dict:
        """{source: {unit: count}} of the sources that skipped anything:
        footer and bloom filters skip row groups, the page index pages,
        synopses row groups and morsels (row ranges); each with its rows."""
        footer_groups = (self.row_groups_skipped - self.bloom_rejections
                         - self.synopses_row_groups_skipped)
        out = {
            "footer": {"row_groups": footer_groups, "rows": self.footer_rows_skipped},
            "bloom": {"row_groups": self.bloom_rejections, "rows": self.bloom_rows_skipped},
            "page_index": {"pages": self.pages_skipped, "rows": self.page_index_rows_skipped},
            "synopses": {"row_groups": self.synopses_row_groups_skipped,
                         "ranges": self.synopses_skipped - self.synopses_row_groups_skipped,
                         "rows": self.synopses_rows_skipped},
            # rows that passed the scan's filters but have no partner in a
            # join above (engine/filtering/join_keys.py)
            "join_filter": {"rows": self.rows_join_filtered},
        }
        return {k: v for k, v in out.items() if any(v.values())}

    def __repr__(self) -> str:
        return f"PruningCounters({self.as_dict()})"


@dataclass
class ExecutionContext:
    config: Config
    open_file: Callable[[str], object]          # path -> scan.ParquetFile (cached)
    open_at_once: Callable[[list], None] | None = None   # a scan's remote files, together
    memory: MemoryTracker | None = field(default=None)
    pruning: PruningCounters = field(default_factory=PruningCounters)
    caches: tuple | None = None                 # counted against memory_limit, evicted first
    cancel: CancelToken | None = None           # the query's stop request
    statistics: object = None                   # engine.statistics.StatisticsService, or None
    statistics_claims: set = field(default_factory=set)   # what this query's scans collect
    profile: object = None                      # engine.analyze.QueryProfile (EXPLAIN ANALYZE)

    def __post_init__(self):
        if self.caches is None:
            self.caches = ()
        if self.cancel is None:
            self.cancel = CancelToken(self.config.query_timeout)
        if self.memory is None:
            self.memory = MemoryTracker(self.config.memory_limit, self.caches)

    def open_together(self, files: list) -> None:
        """Open a scan's files at once (the remote ones' requests together)
        before they are opened one by one: a hive table's files past the
        first are first opened here (engine/catalog.py)."""
        if self.open_at_once is not None and len(files) > 1:
            self.open_at_once(files)
