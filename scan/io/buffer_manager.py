"""The buffer manager: every byte pqdb reads passes through it.

Pages are variable size (one column chunk, or a footer), keyed by
(source identity, offset, length), evicted least-recently-used when the
memory budget is exceeded; never written back.  Once the engine marks
queries (``begin_query``), pages the running query used or said it will
read (``want``) are not evicted for its other reads: a page read when only
such pages are left is not cached at all, so a scan larger than the
budget keeps the part that fit instead of evicting it page by page.  A
prefetched page (remote read-ahead, which the scan reads next) takes the
room of pages the query has read already, else of those it will read
last; state derived from a page is not charged at the cost of such pages.
Thread-safe: two threads asking for the same range cause one read.

The budget bounds the compressed bytes kept: the chunks of the row groups in
flight and, beyond them, a cache that saves later queries the re-read, the
page-header parse and the CRC check.  The engine counts ``bytes_cached``
against its memory_limit and calls ``shrink`` when operators need the memory
(engine/context.py): the cache is evicted first.  A page some reader still
holds stays alive until it lets go; eviction only forgets it.

Whoever derives state from a cached page (scan/row_ranges.py's chunk states
keep the decompressed pages of a chunk) registers ``add_eviction_listener``
and drops that state when the page leaves the cache, so evicted bytes do not
stay pinned.  State that lives exactly as long as its page (the decoded
dictionaries scan/required_chunk.py keeps in the page's chunk memo) is
``charge``d to the page instead: its bytes count against the budget as long
as the page stays, and go with it.  A buffer made from a page (an encrypted
chunk's plaintext) is ``derive``d from it: charged and evicted with it.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict

import numpy as np

from scan.io.remote import IoCounters

DEFAULT_BUDGET = 1 << 30

_LISTENERS: list = []
_MANAGERS: "weakref.WeakSet[BufferManager]" = weakref.WeakSet()


def add_eviction_listener(fn) -> None:
    """Call ``fn(page)`` (the evicted uint8 array) whenever any buffer
    manager evicts or invalidates a page; called without locks held."""
    if fn not in _LISTENERS:
        _LISTENERS.append(fn)


def _notify(pages) -> None:
    for page in pages:
        for p in [page] + derived_from(page):
            for fn in _LISTENERS:
                fn(p)


# buffers derived from a cached page (an encrypted chunk's plaintext,
# scan/crypto.py): id(parent) -> (weak parent, [weak children]); a child
# is charged as its parent is, and evicted with it
_DERIVED: dict = {}
_PARENT: dict = {}                  # id(child) -> (weak child, weak parent)
_DERIVED_LOCK = threading.Lock()


def derive(parent: np.ndarray, child: np.ndarray) -> None:
    """``child`` is made from ``parent`` (a page a manager returned) and
    lives no longer: ``charge(child, n)`` charges ``parent``, and eviction
    listeners hear of ``child`` when ``parent`` goes."""
    with _DERIVED_LOCK:
        try:
            pkey, ckey = id(parent), id(child)
            entry = _DERIVED.get(pkey)
            if entry is None or entry[0]() is not parent:
                entry = _DERIVED[pkey] = (weakref.ref(
                    parent, lambda r, k=pkey, d=_DERIVED: d.pop(k, None)), [])
            entry[1].append(weakref.ref(child))
            _PARENT[ckey] = (weakref.ref(child, lambda r, k=ckey, d=_PARENT: d.pop(k, None)),
                             weakref.ref(parent))
        except TypeError:             # not weak-referenceable: nothing derived
            pass


def derived_from(page) -> list:
    """The live buffers ``derive``d from ``page``."""
    with _DERIVED_LOCK:
        entry = _DERIVED.get(id(page))
        if entry is None or entry[0]() is not page:
            return []
        return [c for c in (r() for r in entry[1]) if c is not None]


def _parent(page):
    with _DERIVED_LOCK:
        entry = _PARENT.get(id(page))
    if entry is None or entry[0]() is not page:
        return page
    parent = entry[1]()
    return page if parent is None else parent


class _Pending:
    __slots__ = ("event", "result", "error")

    def __init__(self):
        self.event = threading.Event()
        self.result = None
        self.error = None


class BufferManager:
    """LRU cache of byte ranges under a memory budget."""

    def __init__(self, memory_budget_bytes: int = DEFAULT_BUDGET):
        self.memory_budget_bytes = max(int(memory_budget_bytes), 0)
        self._pages: OrderedDict = OrderedDict()
        self._keys: dict = {}           # id(page) -> key, for charge
        self._charged: dict = {}        # key -> bytes charged to the page
        self._pending: dict = {}
        self._used = 0
        self._lock = threading.Lock()
        self.reads = 0          # number of source reads (for tests and stats)
        self.hits = 0
        self.peak_bytes = 0     # most bytes cached at once
        self.io = IoCounters()
        self._fresh: set = set()        # prefetched pages not yet asked for
        self._query = 0                 # begin_query's count; 0: plain LRU
        self._used_in: dict = {}        # key -> the query that last used the page
        self._wanted: set = set()       # keys the running query said it will read
        self._read_order: OrderedDict = OrderedDict()   # keys the running query read, in order
        self._settled = 0               # the query whose reads found only protected pages
        _MANAGERS.add(self)

    def begin_query(self) -> None:
        """A query starts (the engine calls this).  From the first call on,
        a page read when the cache is full of pages the current query used
        already or said it will read (``want``) is not cached (_room_for):
        a scan larger than the cache then keeps the part that fit from one
        run to the next, where LRU evicted each page just before the next
        run asked for it (SF10 lineitem's columns)."""
        with self._lock:
            self._query += 1
            self._wanted = set()
            self._read_order = OrderedDict()

    @staticmethod
    def keys_of(source, ranges) -> frozenset:
        """The cache keys of the (offset, length) ranges of ``source``."""
        ident = source.identity()
        return frozenset((ident, int(off), int(n)) for off, n in ranges)

    def want(self, keys) -> None:
        """The running query will read the ranges of ``keys`` (keys_of; its
        scans announce their chunks): a cached one of them is not evicted
        for a page this query reads before it (see _room_for)."""
        with self._lock:
            if self._query:
                self._wanted |= keys

    def _protected(self, key) -> bool:
        """A page the running query used or said it will read (lock held)."""
        return self._used_in.get(key) == self._query or key in self._wanted

    def _room_for(self, length: int, evicted: list) -> bool:
        """Make room for a page of ``length`` bytes read now (lock held):
        whether it is cached.  Once queries are marked (begin_query), pages
        the running query used or will read are passed over (moved behind
        the others) and the least recently used of the rest evicted; when
        only such pages are left, the page stays uncached -- evicting one
        would only make a later read of this query miss (a run starting
        with a miss evicted, one by one, each page it was about to hit:
        SF10 Q20 hit 80 of ~700 MB cached).  Evicted pages go to
        ``evicted``."""
        if length > self.memory_budget_bytes:
            return False
        if not self._query or self._used + length <= self.memory_budget_bytes:
            return True                 # (_evict_to makes the room)
        if self._settled == self._query:
            return False                # only protected pages left in this query
        pages, passed = self._pages, 0
        while self._used + length > self.memory_budget_bytes:
            if not pages or passed >= len(pages):
                self._settled = self._query
                return False
            key = next(iter(pages))
            if self._protected(key):
                pages.move_to_end(key)
                passed += 1
                continue
            page = pages.pop(key)
            self._used -= self._forget(key, page)
            evicted.append(page)
        return True

    def _room_for_prefetch(self, length: int, evicted: list) -> bool:
        """Room for a prefetched page when only protected pages are left
        (lock held).  First the pages the running query has read already
        go, first read first; then, if need be, of the pages it will read,
        those cached last: a scan's pages come in the order it reads them,
        so those are the ones it needs furthest ahead (the page a scan
        about to read must never go).  A remote scan larger than the cache
        then keeps most of what fit from one run to the next, where LRU
        evicted each page just before the next run asked for it (every run
        refetched everything).  False, evicting nothing, when even that
        frees too little (pages prefetched and not yet read stay)."""
        need = self._used + length - self.memory_budget_bytes
        read = self._read_order
        candidates = itertools.chain(read, (k for k in reversed(self._pages) if k not in read))
        victims, free = [], 0
        for key in candidates:
            if free >= need:
                break
            page = self._pages.get(key)
            if page is not None and key not in self._fresh:
                victims.append((key, page))
                free += page.nbytes + self._charged.get(key, 0)
        if free < need:
            return False
        for key, page in victims:
            del self._pages[key]
            self._used -= self._forget(key, page)
            evicted.append(page)
        return True

    def _mark_read(self, key) -> None:
        """The running query has read page ``key`` (lock held)."""
        if self._query:
            self._read_order[key] = None
            self._read_order.move_to_end(key)

    @property
    def bytes_cached(self) -> int:
        return self._used

    @property
    def bytes_bound(self) -> int:
        """Most bytes it may cache: its budget (or what it holds, when the
        budget was lowered below that)."""
        return max(self.memory_budget_bytes, self._used)

    def get(self, source, offset: int, length: int) -> np.ndarray:
        """The bytes [offset, offset+length) of ``source`` as a uint8 array.

        The array is shared with other callers: treat it as read-only."""
        key = (source.identity(), int(offset), int(length))
        with self._lock:
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
                self._used_in[key] = self._query
                self._mark_read(key)
                self.hits += 1
                if key in self._fresh:      # fetched for this read, ahead of it
                    self._fresh.discard(key)
                else:
                    self.io.add(bytes_from_cache=int(length))
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
            with self._lock:
                self._fresh.discard(key)        # (a prefetch's page: now asked for)
            return pending.result
        try:
            out = np.empty(int(length), dtype=np.uint8)
            source.read_into(int(offset), out)
        except BaseException as e:
            self._fail(key, pending, e)
            raise
        if not getattr(source, "counts_io", False):
            self.io.add(requests=1, bytes_fetched=int(length))
        self._complete(key, pending, out)
        return out

    def holds(self, source, offset: int, length: int) -> bool:
        """Whether the range is cached or being read (no LRU touch)."""
        key = (source.identity(), int(offset), int(length))
        with self._lock:
            return key in self._pages or key in self._pending

    def _fail(self, key, pending: _Pending, error: BaseException) -> None:
        pending.error = error
        with self._lock:
            self._pending.pop(key, None)
        pending.event.set()

    def _complete(self, key, pending: _Pending, out: np.ndarray,
                  fresh: bool = False) -> None:
        """Cache a page read for ``key`` and wake whoever waits for it
        (``fresh``: a prefetch, whose first hit is no cache hit)."""
        pending.result = out
        length = out.nbytes
        with self._lock:
            self._pending.pop(key, None)
            self.reads += 1
            evicted: list = []
            if self._room_for(length, evicted) or \
                    (fresh and self._room_for_prefetch(length, evicted)):
                self._pages[key] = out
                self._keys[id(out)] = key
                self._used_in[key] = self._query
                self._used += out.nbytes
                if fresh:
                    self._fresh.add(key)
                else:
                    self._mark_read(key)
                evicted += self._evict_to(self.memory_budget_bytes)
                self.peak_bytes = max(self.peak_bytes, self._used)
        pending.event.set()
        _notify(evicted)

    def prefetch(self, source, ranges, max_waste: float | None = None) -> int:
        """Start reading the (offset, length) ranges of ``source`` that are
        neither cached nor in flight, without waiting: through
        ``source.fetch_ranges`` (remote sources), else not at all;
        ``max_waste`` goes to its coalescing (scan/io/remote.py).  The
        bytes started."""
        fetch = getattr(source, "fetch_ranges", None)
        if fetch is None:
            return 0
        ident = source.identity()
        todo = []
        with self._lock:
            for off, length in ranges:
                key = (ident, int(off), int(length))
                if key in self._pages or key in self._pending or length <= 0:
                    continue
                pending = self._pending[key] = _Pending()
                todo.append((key, pending))
        if not todo:
            return 0

        def done(i, data, error):
            key, pending = todo[i]
            if error is not None:
                self._fail(key, pending, error)
                return
            try:
                if isinstance(data, np.ndarray) and data.dtype == np.uint8 and \
                        data.base is None and data.flags.writeable and len(data) == key[2]:
                    out = data                  # a response's own array: kept as it is
                else:                           # (a slice would keep its response alive)
                    out = np.frombuffer(data, dtype=np.uint8).copy()
            except BaseException as e:      # noqa: BLE001 - the waiter sees it
                self._fail(key, pending, e)
                return
            self._complete(key, pending, out, fresh=True)
        try:
            extra = {} if max_waste is None else {"max_waste": max_waste}
            fetch([(k[1], k[2]) for k, _ in todo], done, **extra)
        except BaseException as e:
            for key, pending in todo:
                if not pending.event.is_set():
                    self._fail(key, pending, e)
            raise
        return sum(k[2] for k, _ in todo)

    def _evict_to(self, target: int) -> list:
        """Drop least-recently-used pages until at most ``target`` bytes
        stay (lock held); the dropped pages, for the listeners."""
        evicted = []
        while self._used > target and self._pages:
            key, page = self._pages.popitem(last=False)
            self._used -= self._forget(key, page)
            evicted.append(page)
        return evicted

    def _forget(self, key, page) -> int:
        """Bytes page ``key`` counted (its own and those charged to it)."""
        del self._keys[id(page)]
        self._fresh.discard(key)
        self._used_in.pop(key, None)
        self._read_order.pop(key, None)
        return page.nbytes + self._charged.pop(key, 0)

    def charge_page(self, page: np.ndarray, nbytes: int) -> bool:
        """Count ``nbytes`` of derived state against the budget for as long
        as ``page`` (an array this manager returned) stays cached; False,
        charging nothing, when it is not cached here (any more), when
        ``nbytes`` is more than a quarter of the budget (keeping it would
        push out most of the cache), or when making room would evict a page
        the running query used or will read (_room_for)."""
        evicted: list = []
        with self._lock:
            key = self._keys.get(id(page))
            if key is None or self._pages.get(key) is not page or \
                    int(nbytes) > self.memory_budget_bytes // 4:
                return False
            # when only pages the running query will read are left, state
            # derived from one is not worth evicting another for
            ok = self._room_for(int(nbytes), evicted)
            if ok:
                self._charged[key] = self._charged.get(key, 0) + int(nbytes)
                self._used += int(nbytes)
                evicted += self._evict_to(self.memory_budget_bytes)
                self.peak_bytes = max(self.peak_bytes, self._used)
        _notify(evicted)
        return ok

    def shrink(self, nbytes: int) -> int:
        """Evict least-recently-used pages until ``nbytes`` are freed (or
        the cache is empty); the bytes freed."""
        with self._lock:
            before = self._used
            evicted = self._evict_to(max(before - int(nbytes), 0))
            freed = before - self._used
        _notify(evicted)
        return freed

    def set_budget(self, memory_budget_bytes: int) -> None:
        """A new budget; pages past it are evicted now."""
        with self._lock:
            self.memory_budget_bytes = max(int(memory_budget_bytes), 0)
            evicted = self._evict_to(self.memory_budget_bytes)
        _notify(evicted)

    def invalidate(self, source=None) -> None:
        """Drop every cached page (of ``source`` only, when given)."""
        with self._lock:
            if source is None:
                evicted = list(self._pages.values())
                self._pages.clear()
                self._keys.clear()
                self._fresh.clear()
                self._charged.clear()
                self._used_in.clear()
                self._read_order.clear()
                self._wanted = set()
                self._used = 0
            else:
                ident = source.identity()
                evicted = []
                for k in [k for k in self._pages if k[0] == ident]:
                    page = self._pages.pop(k)
                    self._used -= self._forget(k, page)
                    evicted.append(page)
        _notify(evicted)


def charge(page: np.ndarray, nbytes: int) -> bool:
    """``BufferManager.charge_page`` on whichever manager holds ``page``;
    False when none does (a page read outside the cache: state derived from
    it should not outlive the read).  A buffer ``derive``d from a page
    charges that page."""
    page = _parent(page)
    return any(m.charge_page(page, nbytes) for m in list(_MANAGERS))


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
