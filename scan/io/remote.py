"""What http(s) and fsspec sources share: settings, I/O counters, range
coalescing, the disk cache in the read path, and batched asynchronous reads.

A RemoteSource knows its size and identity (URL + ETag or modification
time + size) from one metadata request when opened.  Reads go through
``submit(start, end) -> concurrent.futures.Future[bytes]`` (subclasses),
which the blocking ``read_into`` waits on and ``fetch_ranges`` (the buffer
manager's prefetch) fans out over, several requests in flight at once:
ranges whose gaps are at most ``coalesce_gap`` become one request (in
pieces of at most MAX_REQUEST bytes), and each requested range is handed
back separately as soon as the pieces under it have come.  With a disk cache, ranges found
there are not requested, and fetched ranges are written to it.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from scan.errors import PqdbIOError
from scan.io.source import ByteSource

SMALL_FILE = 64 * 1024          # files below this are fetched whole
# a coalesced range is requested in pieces of at most this many bytes, in
# parallel: the first chunks arrive (and decode) while later pieces travel
MAX_REQUEST = 8 << 20


class IoCounters:
    """Requests, bytes fetched from the source, bytes served from a cache
    (the buffer manager's memory or the disk cache).  Thread-safe;
    ``snapshot()`` and ``since(snapshot)`` give one query's share."""

    FIELDS = ("requests", "bytes_fetched", "bytes_from_cache")

    def __init__(self):
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes_fetched = 0
        self.bytes_from_cache = 0

    def add(self, requests: int = 0, bytes_fetched: int = 0, bytes_from_cache: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.bytes_fetched += bytes_fetched
            self.bytes_from_cache += bytes_from_cache

    def snapshot(self) -> dict:
        with self._lock:
            return {name: getattr(self, name) for name in self.FIELDS}

    def since(self, before: dict) -> dict:
        now = self.snapshot()
        return {name: now[name] - before.get(name, 0) for name in self.FIELDS}

    def __repr__(self) -> str:
        return f"IoCounters({self.snapshot()})"


# a gap is merged into a request only while the bytes nobody asked for stay
# at most this share of the bytes asked for: merging saves requests (first-
# byte latency, per-request cost), and bytes fetched stay <= 1.1x those needed
# (the default of http_coalesce_waste; on a store where a request costs more
# than the bytes, a larger share trades egress for fewer round trips)
MAX_WASTE = 0.1


@dataclass
class RemoteSettings:
    """The http_* and remote_cache_* options (engine/config.py), as scan/
    sees them.  Sources keep a reference: a connection updates it in place."""
    timeout: float = 30.0
    retries: int = 3
    headers: dict = field(default_factory=dict)
    concurrency: int = 16
    coalesce_gap: int = 1 << 20
    coalesce_waste: float = MAX_WASTE
    footer_prefetch: int = 64 * 1024
    cache_dir: str = ""
    cache_size: int = 4 << 30

    def disk_cache(self):
        """The DiskCache of ``cache_dir`` (None without one)."""
        if not self.cache_dir:
            return None
        from scan.io.disk_cache import disk_cache
        return disk_cache(self.cache_dir, self.cache_size)


def coalesce(ranges, gap: int, max_waste: float = MAX_WASTE,
             history: list | None = None) -> list:
    """Group (offset, length) ranges: sorted, merged while the gap to the
    next is at most ``gap`` bytes and the gaps merged so far (with it) stay
    at most ``max_waste`` of the bytes asked for in the request.  With
    ``history`` ([bytes asked, bytes wasted] before these ranges, updated
    in place) a gap within ``gap`` joins instead while the bytes wasted
    over all the requests stay at most ``max_waste`` of all bytes asked for:
    requests that waste nothing leave room for one that wastes more (SF1
    Q3: of each lineitem row group, l_extendedprice..l_shipdate's gap is
    10.1% of that request, 7.8% of the row group's chunks asked for).  Overlapping
    and touching ranges always merge.  [(start, end, [indexes into ranges])]."""
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    asked, wasted = history if history is not None else (0, 0)
    out: list = []
    for i in order:
        off, length = ranges[i]
        end = off + length
        asked += length
        if out:
            last = out[-1]
            hole = off - last[1]
            new_end = max(last[1], end)
            waste = last[3] + hole
            if history is None:             # this request's waste alone
                fits = waste <= max_waste * (new_end - last[0] - waste)
            else:                           # all the requests' (implied by the above)
                fits = wasted + hole <= max_waste * asked
            if hole <= 0 or (hole <= gap and fits):
                last[1] = new_end
                last[2].append(i)
                last[3] += max(hole, 0)
                wasted += max(hole, 0)
                continue
        out.append([off, end, [i], 0])
    if history is not None:
        history[0], history[1] = asked, wasted
    return [(s, e, idx) for s, e, idx, _ in out]


class RemoteSource(ByteSource):
    """Base of HttpSource and FsspecSource (see the module docstring)."""

    remote = True
    #: the source counts its requests and fetched bytes into ``io`` itself
    counts_io = True

    def __init__(self, url: str, settings: RemoteSettings | None = None,
                 io: IoCounters | None = None):
        self.path = url
        self.settings = settings or RemoteSettings()
        self.io = io or IoCounters()
        self._size = 0
        self.etag: str | None = None
        self.modified: str | None = None
        self._whole: bytes | None = None        # small files, servers ignoring Range
        self._whole_lock = threading.Lock()

    # -- what subclasses provide --------------------------------------------------
    def submit(self, start: int, end: int) -> Future:
        """A future of the bytes [start, end): exactly end - start of them."""
        raise NotImplementedError

    def batch(self):
        """A block whose submitted reads may start together when it ends
        (http: one wake-up of the event loop).  Here: nothing to gather."""
        return contextlib.nullcontext()

    def version(self) -> str:
        """What identifies this version of the file: ETag, else
        modification time (and size)."""
        tag = self.etag or self.modified or ""
        return f"{tag}|{self._size}"

    # -- ByteSource ------------------------------------------------------------
    @property
    def footer_prefetch(self) -> int:
        return self.settings.footer_prefetch

    def size(self) -> int:
        return self._size

    def identity(self) -> str:
        return f"{self.path}#{self.version()}"

    def cacheable(self) -> bool:
        """Whether ranges may go to the disk cache: only with a version."""
        return bool(self.etag or self.modified)

    def read(self, offset: int, length: int) -> bytes:
        out = np.empty(length, dtype=np.uint8)
        self.read_into(offset, out)
        return out.tobytes()

    def read_into(self, offset: int, out: np.ndarray) -> None:
        length = len(out)
        self._check_range(offset, length)
        if length == 0:
            return
        data = self._from_disk(offset, length)
        if data is None:
            data = self.submit(offset, offset + length).result()
            self._check_length(data, offset, length)
            self._to_disk(offset, data)
        out[:] = np.frombuffer(data, dtype=np.uint8)

    def fetch_ranges(self, ranges, done, max_waste: float | None = None) -> None:
        """Read every (offset, length) of ``ranges`` without waiting;
        ``done(i, data, error)`` is called once per range, from any
        thread (``data`` bytes-like, or ``error`` an exception).
        ``max_waste``: see coalesce; the settings' ``coalesce_waste``
        (http_coalesce_waste) unless given (small metadata such as page
        indexes is fetched as one region, whatever lies between)."""
        if max_waste is None:
            max_waste = self.settings.coalesce_waste
        missing = []
        for i, (off, length) in enumerate(ranges):
            try:
                self._check_range(off, length)
                data = self._from_disk(off, length)
            except Exception as e:          # noqa: BLE001 - handed to the waiter
                done(i, None, e)
                continue
            if data is not None:
                done(i, data, None)
            else:
                missing.append(i)
        if not missing:
            return
        sub = [ranges[i] for i in missing]
        with self.batch():
            self._fetch_missing(ranges, missing, sub, done, max_waste)

    def _fetch_missing(self, ranges, missing: list, sub: list, done, max_waste: float) -> None:
        submit_cuts = getattr(self, "submit_cuts", None)
        # one call's ranges (a row group's chunks, or their page runs) share
        # the waste allowance: credit does not carry over to later reads
        groups = coalesce(sub, self.settings.coalesce_gap, max_waste, [0, 0])
        for start, end, members in groups:
            idx = [missing[m] for m in members]
            if submit_cuts is not None and len(idx) > 1 and end - start <= MAX_REQUEST:
                self._fetch_cut(start, end, idx, ranges, submit_cuts, done)
                continue
            try:
                pieces = [(a, min(a + MAX_REQUEST, end), self.submit(a, min(a + MAX_REQUEST, end)))
                          for a in range(start, end, MAX_REQUEST)]
            except Exception as e:          # noqa: BLE001
                for i in idx:
                    done(i, None, e)
                continue
            for i in idx:
                off, length = ranges[i]
                mine = [p for p in pieces if p[0] < off + length and p[1] > off]
                self._deliver_when_done(i, off, length, mine, done)

    def _fetch_cut(self, start: int, end: int, idx: list, ranges, submit_cuts, done) -> None:
        """One request for the ranges ``idx`` (merged into [start, end)),
        each range's bytes read straight into an array of its own."""
        idx = sorted(idx, key=lambda i: ranges[i][0])
        cuts = [(ranges[i][0] - start, ranges[i][0] - start + ranges[i][1]) for i in idx]
        try:
            fut = submit_cuts(start, end, cuts)
        except Exception as e:              # noqa: BLE001 - handed to the waiters
            for i in idx:
                done(i, None, e)
            return

        def arrived(f) -> None:
            error = f.exception()
            for k, i in enumerate(idx):
                if error is not None:
                    done(i, None, error)
                else:
                    self._deliver(i, *ranges[i], lambda: f.result()[k], done)
        fut.add_done_callback(arrived)

    def _deliver_when_done(self, i: int, off: int, length: int, pieces: list, done) -> None:
        """Call ``done(i, ...)`` once every piece (start, end, future) under
        the range has come: the range's bytes cut from them, or the error."""
        left = [len(pieces)]
        lock = threading.Lock()

        def cut():
            parts = []
            for a, _b, fut in pieces:
                got = fut.result()
                if len(pieces) == 1 and a == off and len(got) == length:
                    parts.append(got)           # the whole response: no copy
                    break
                data = memoryview(got)
                lo, hi = max(off, a) - a, min(off + length, a + len(data)) - a
                parts.append(data[lo:max(hi, lo)])
            return parts[0] if len(parts) == 1 else b"".join(parts)

        def one_done(_fut) -> None:
            with lock:
                left[0] -= 1
                if left[0]:
                    return
            self._deliver(i, off, length, cut, done)
        for _a, _b, fut in pieces:
            fut.add_done_callback(one_done)

    def _deliver(self, i: int, off: int, length: int, bytes_of, done) -> None:
        """``done(i, ...)`` with the range's bytes (``bytes_of()``), checked
        for length and written to the disk cache, or with the error."""
        try:
            piece = bytes_of()
            self._check_length(piece, off, length)
            self._to_disk(off, piece)
        except Exception as e:              # noqa: BLE001 - handed to the waiter
            done(i, None, e)
            return
        done(i, piece, None)

    # -- helpers ----------------------------------------------------------------
    def _check_length(self, data, offset: int, length: int) -> None:
        if len(data) != length:
            raise PqdbIOError(f"short read: got {len(data)} of {length} bytes", url=self.path,
                              byte_range=(offset, offset + length))

    def _from_disk(self, offset: int, length: int):
        if self._whole is not None:         # held in memory: no request
            self.io.add(bytes_from_cache=length)
            return memoryview(self._whole)[offset:offset + length]
        cache = self.settings.disk_cache()
        if cache is None or not self.cacheable():
            return None
        data = cache.get(self.path, self.version(), offset, length)
        if data is not None:
            self.io.add(bytes_from_cache=length)
        return data

    def _to_disk(self, offset: int, data) -> None:
        if self._whole is not None:
            return
        cache = self.settings.disk_cache()
        if cache is not None and self.cacheable():
            cache.put(self.path, self.version(), offset, data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, {self._size} bytes)"


def done_future(value=None, error: BaseException | None = None) -> Future:
    fut: Future = Future()
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)
    return fut
