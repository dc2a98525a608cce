"""http(s) byte sources over aiohttp.

An ``HttpClient`` runs one aiohttp ``ClientSession`` on a background
event-loop thread (one client per pqdb connection; scan workers submit
range reads and wait, many in flight at once, at most ``concurrency``).

``HttpSource`` (docs/design.md "I/O"):
- opening: HEAD for size, ETag and Last-Modified; a server that refuses
  HEAD gets ``GET`` with ``Range: bytes=0-0``.  Files under 64 KiB are
  fetched whole on the first read.  A file opened for the first time
  (``tail``) asks instead for its last bytes, ``Range: bytes=-N``: one
  round trip gives the size, ETag and the footer's speculative tail read,
  which the footer read then takes from memory; any answer but 206 or 200
  falls back to HEAD.
- every range response is checked: 206 with a matching ``Content-Range``
  and a body of the asked length.  A server that ignores Range (200 with
  the whole body) is accepted: the body is kept whole and serves all reads.
- retries with exponential backoff on connection errors, resets, truncated
  bodies, timeouts, 408, 429 and 5xx; any other status is a PqdbIOError
  naming the URL, the status and the range.
- range reads carry ``If-Match`` with a strong ETag (else
  ``If-Unmodified-Since``), and the response's ETag is compared: a file
  replaced while it is read fails with a clear error (412), never yields
  bytes of two versions.  Redirects are followed.
"""

from __future__ import annotations

import asyncio
import atexit
import re
import threading
import weakref
from concurrent.futures import Future
from contextlib import contextmanager

import numpy as np

from scan.errors import PqdbIOError
from scan.io.remote import SMALL_FILE, IoCounters, RemoteSettings, RemoteSource, done_future

_RETRY_STATUS = {408, 429} | set(range(500, 600))
_HEAD_REFUSED = {400, 403, 405, 406, 501}
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


class FileChangedError(PqdbIOError):
    """The file changed (ETag / Last-Modified / size) while a query read it."""


class _Retryable(Exception):
    pass


class HttpClient:
    """One aiohttp session on its own event-loop thread."""

    def __init__(self, settings: RemoteSettings | None = None, io: IoCounters | None = None):
        self.settings = settings or RemoteSettings()
        self.io = io or IoCounters()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pqdb-http",
                                        daemon=True)
        self._thread.start()
        self._session = None
        self._sem = None
        self._sem_n = 0
        self._closed = False
        self._batches = threading.local()   # this thread's batch: [(coroutine, Future)]
        _CLIENTS.add(self)

    def run(self, coro) -> Future:
        """A future of ``coro`` run on the event loop.  Inside ``batch()``
        it starts when the batch ends."""
        fut: Future = Future()
        if not self._closed:
            batch = getattr(self._batches, "items", None)
            if batch is not None:
                batch.append((coro, fut))
                return fut
            try:
                return asyncio.run_coroutine_threadsafe(coro, self._loop)
            except RuntimeError:        # closed by another thread just now
                pass
        _refuse([(coro, fut)])
        return fut

    @contextmanager
    def batch(self):
        """The requests this thread submits inside the block start together
        when it ends: one wake-up of the event loop instead of one per
        request (each costs the submitting thread a write to the loop's
        self-pipe and a GIL hand-over: ~12 ms of a scan's start over 170
        requests, SF1 Q17).  Nested blocks join the outer one.  Code inside
        must not wait for the futures it submits."""
        if getattr(self._batches, "items", None) is not None:
            yield
            return
        items: list = []
        self._batches.items = items
        try:
            yield
        finally:
            self._batches.items = None
            if items:
                self._start(items)

    def _start(self, items: list) -> None:
        if self._closed:                    # closed inside the batch
            _refuse(items)
            return

        def start():
            for coro, fut in items:
                if not fut.set_running_or_notify_cancel():
                    coro.close()
                    continue
                self._loop.create_task(coro).add_done_callback(
                    lambda task, fut=fut: _settle(fut, task))
        try:
            self._loop.call_soon_threadsafe(start)
        except RuntimeError:                # closed by another thread just now
            _refuse(items)

    def _ensure(self):
        import aiohttp
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=False),
                auto_decompress=False)
        n = max(1, self.settings.concurrency)
        if self._sem is None or self._sem_n != n:
            self._sem, self._sem_n = asyncio.Semaphore(n), n
        return self._session, self._sem

    async def request(self, method: str, url: str, headers: dict | None = None,
                      byte_range: tuple | None = None, check=None, cuts=None, into=None):
        """(status, headers, body) of one request, retried with backoff on
        transient failures.  ``check(status, headers, body)`` may raise
        _Retryable (retried) or PqdbIOError (not).  A GET with a
        ``byte_range`` reads its body into a uint8 array of the range's
        length (one copy of the bytes on the event-loop thread, not a join
        of the chunks and a copy after it); a longer body (a server that
        ignores Range) comes back as bytes.  ``cuts`` ((lo, hi) offsets into
        the range, sorted by lo): a 206's body goes straight into one array
        per cut (a ``CutBody``), the bytes between cuts are dropped.
        ``into``: the arrays to read into (one per cut, or one of the
        range's length), allocated by the thread that submitted the read
        (see ``HttpSource.submit``)."""
        s = self.settings
        hdrs = {"Accept-Encoding": "identity"}
        hdrs.update(s.headers or {})
        hdrs.update(headers or {})
        try:
            return await self._attempts(method, url, hdrs, byte_range, check, cuts, into)
        except asyncio.CancelledError:
            if self._closed:            # close() cancels what is in flight: an error, no hang
                raise PqdbIOError("http client closed while the request ran", url=url,
                                  byte_range=byte_range) from None
            raise

    async def _attempts(self, method, url, hdrs, byte_range, check, cuts, into):
        import aiohttp
        s = self.settings
        last = None
        for attempt in range(s.retries + 1):
            if attempt:
                await asyncio.sleep(min(0.05 * (2 ** (attempt - 1)), 2.0))
            session, sem = self._ensure()
            try:
                async with sem:
                    timeout = aiohttp.ClientTimeout(total=s.timeout)
                    self.io.add(requests=1)
                    async with session.request(method, url, headers=hdrs, timeout=timeout,
                                               allow_redirects=True) as resp:
                        status = resp.status
                        if status in _RETRY_STATUS:
                            raise _Retryable(f"HTTP {status} {resp.reason or ''}".strip())
                        if method == "HEAD":
                            body = b""
                        elif byte_range is not None and byte_range[1] is not None and \
                                method == "GET":
                            length = byte_range[1] - byte_range[0]
                            if cuts is not None and status == 206:
                                body = await read_cut_body(resp, length, cuts, into)
                            else:
                                body = await _read_body(
                                    resp, length, into if cuts is None else None)
                        else:
                            body = await resp.read()
                        self.io.add(bytes_fetched=len(body))
                        if check is not None:
                            check(status, resp.headers, body)
                        return status, resp.headers, body
            except _Retryable as e:
                last = str(e)
            except asyncio.TimeoutError:
                last = f"timed out after {s.timeout:g} s (http_timeout)"
            except (aiohttp.ClientError, ConnectionError, OSError) as e:
                last = f"{type(e).__name__}: {e}".rstrip(": ")
        raise PqdbIOError(f"request failed after {s.retries + 1} attempts ({last})", url=url,
                          byte_range=byte_range)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def shut():
            # every request still running or waiting (for a retry, for the
            # semaphore) ends with an error now: a stopped loop would leave
            # its future unsettled and whoever waits for it hanging
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._session is not None:
                await self._session.close()
        try:
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=5)
        except Exception:       # noqa: BLE001 - closing anyway
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()              # its selector and self-pipe


async def _read_body(resp, length: int, buf=None):
    """The body of ``resp``: a uint8 array when it is at most ``length``
    bytes (shorter: truncated, the caller's check retries), else bytes.
    ``buf``: the array to read into (else a new one)."""
    if buf is None:
        buf = np.empty(max(length, 0), np.uint8)
    pos, spill = 0, None
    while True:
        block = await resp.content.readany()
        if not block:
            break
        n = len(block)
        if spill is None and pos + n <= length:
            buf[pos:pos + n] = np.frombuffer(block, np.uint8)
            pos += n
        else:
            if spill is None:
                spill = [buf[:pos].tobytes()]
            spill.append(block)
    if spill is not None:
        return b"".join(spill)
    return buf if pos == length else buf[:pos]


class CutBody:
    """A range's body read into one array per cut (``parts``); ``len`` is
    the bytes received, gaps included (the length checks compare it)."""

    __slots__ = ("parts", "received")

    def __init__(self, parts: list, received: int):
        self.parts, self.received = parts, received

    def __len__(self) -> int:
        return self.received


async def read_cut_body(resp, length: int, cuts, parts: list) -> CutBody:
    """The body of a 206 for ``length`` bytes, each cut's bytes copied once
    into its own array as blocks arrive (a merged request's ranges: no
    array of the whole range, no second copy per range).  A body longer
    than ``length`` is a truncated/invalid response for the checks: its
    ``received`` says so.  ``parts``: the arrays to read into, one per
    cut (allocated by the thread that submitted the read)."""
    first, pos = 0, 0
    while True:
        block = await resp.content.readany()
        if not block:
            break
        n = len(block)
        end = pos + n
        if end > length:
            pos = end
            continue                  # too long: only counted (the check fails it)
        view = None
        k = first
        while k < len(cuts) and cuts[k][0] < end:
            lo, hi = cuts[k]
            a, b = max(lo, pos), min(hi, end)
            if a < b:
                if view is None:
                    view = np.frombuffer(block, np.uint8)
                parts[k][a - lo:b - lo] = view[a - pos:b - pos]
            k += 1
        while first < len(cuts) and cuts[first][1] <= end:
            first += 1
        pos = end
    return CutBody(parts, pos)


_CLIENTS: "weakref.WeakSet[HttpClient]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for client in list(_CLIENTS):
        client.close()


_default_client: HttpClient | None = None
_default_lock = threading.Lock()


def default_client() -> HttpClient:
    """A process-wide client (for scan.open_parquet on a URL)."""
    global _default_client
    with _default_lock:
        if _default_client is None or _default_client._closed:
            _default_client = HttpClient()
        return _default_client


def _refuse(items: list) -> None:
    """The (coroutine, future) pairs of a closed client: never run, failed."""
    for coro, fut in items:
        coro.close()
        fut.set_exception(PqdbIOError("http client is closed"))


def _settle(fut: Future, task) -> None:
    """Hand an event-loop task's outcome to its concurrent future."""
    if task.cancelled():            # (only close() cancels)
        fut.set_exception(PqdbIOError("http client closed while the request ran"))
    elif task.exception() is not None:
        fut.set_exception(task.exception())
    else:
        fut.set_result(task.result())


def _then(fut: Future, fn) -> Future:
    """A future of ``fn(fut's result)`` (or of its exception)."""
    out: Future = Future()

    def then(f):
        if f.exception() is not None:
            out.set_exception(f.exception())
        else:
            out.set_result(fn(f.result()))
    fut.add_done_callback(then)
    return out


def _content_range(headers) -> tuple:
    """(first, last, total or None) of a Content-Range header, else
    (None, None, None)."""
    m = _CONTENT_RANGE.fullmatch(headers.get("Content-Range", "").strip())
    if m is None:
        return None, None, None
    return int(m.group(1)), int(m.group(2)), None if m.group(3) == "*" else int(m.group(3))


def _status_error(status: int, url: str, byte_range=None, what: str = "") -> PqdbIOError:
    names = {401: "unauthorized", 403: "forbidden", 404: "not found", 410: "gone",
             416: "range not satisfiable"}
    text = f"HTTP {status}" + (f" ({names[status]})" if status in names else "")
    return PqdbIOError(f"{what}{text}", url=url, byte_range=byte_range)


class HttpSource(RemoteSource):
    """One http(s) URL (see the module docstring)."""

    def __init__(self, url: str, client: HttpClient | None = None, tail: bool = False):
        """``tail``: open with a suffix range read of the footer's tail
        (footer_prefetch bytes) instead of HEAD: for a file whose footer is
        about to be read, not for validating a known one, nor with a disk
        cache (that may hold the footer: HEAD gives the ETag its keys need)."""
        client = client or default_client()
        super().__init__(url, client.settings, client.io)
        self.client = client
        self._whole_future: Future | None = None
        self._tail: tuple | None = None         # (offset, bytes) of the opening's tail read
        tail = tail and not self.settings.cache_dir
        if not (tail and self._open_with_tail(max(self.settings.footer_prefetch, 8))):
            self._open()

    # -- opening ------------------------------------------------------------------
    def _open_with_tail(self, n: int) -> bool:
        """Open by ``GET Range: bytes=-n``: True when the answer gave the
        size (and the last bytes, kept for the footer read), False for the
        HEAD path (a server without suffix ranges, an empty file, an error
        status: HEAD tells it as before)."""
        status, headers, body = self._wait(self.client.request(
            "GET", self.path, {"Range": f"bytes=-{n}"}, (-n, None), self._tail_checker(n)))
        if status == 200:                       # Range ignored: the whole file
            self._size, self._whole = len(body), body
        elif status == 206:
            lo, _, total = _content_range(headers)
            self._size = total
            if lo == 0:
                self._whole = body
            else:
                self._tail = (lo, body)
        else:
            return False
        self.etag = headers.get("ETag")
        self.modified = headers.get("Last-Modified")
        return True

    def _tail_checker(self, n: int):
        url = self.path

        def check(status, headers, body):
            if status == 206:
                lo, hi, total = _content_range(headers)
                if total is None or hi != total - 1 or lo > hi or hi + 1 - lo > n:
                    raise PqdbIOError(f"server sent Content-Range "
                                      f"{headers.get('Content-Range')!r}, not the range asked "
                                      "for", url=url, byte_range=(-n, None))
                if len(body) != hi + 1 - lo:
                    raise _Retryable(f"truncated body ({len(body)} of {hi + 1 - lo} bytes)")
            elif status == 200 and "Content-Length" in headers and \
                    headers["Content-Length"].isdigit() and \
                    int(headers["Content-Length"]) != len(body):
                raise _Retryable(f"truncated body ({len(body)} of {headers['Content-Length']} "
                                 "bytes)")
        return check

    def _open(self) -> None:
        status, headers, body = self._wait(self.client.request("HEAD", self.path))
        if status in _HEAD_REFUSED or (status < 300 and "Content-Length" not in headers):
            status, headers, body = self._wait(self.client.request(
                "GET", self.path, {"Range": "bytes=0-0"}, (0, 1)))
            if status == 206:
                total = _content_range(headers)[2]
                if total is None:
                    raise PqdbIOError(f"cannot tell the file's size: Content-Range "
                                      f"{headers.get('Content-Range')!r}", url=self.path)
                self._size = total
            elif status == 200:
                self._size = len(body)
                self._whole = body
            else:
                raise _status_error(status, self.path, what="cannot open: ")
        elif status >= 300:
            raise _status_error(status, self.path, what="cannot open: ")
        else:
            try:
                self._size = int(headers["Content-Length"])
            except ValueError:
                raise PqdbIOError(f"bad Content-Length {headers['Content-Length']!r}",
                                  url=self.path) from None
        self.etag = headers.get("ETag")
        self.modified = headers.get("Last-Modified")

    def _wait(self, coro):
        return self.client.run(coro).result()

    def batch(self):
        """Requests submitted in the block start together (HttpClient.batch)."""
        return self.client.batch()

    # -- reads ------------------------------------------------------------------
    def _conditions(self) -> dict:
        if self.etag and not self.etag.startswith("W/"):
            return {"If-Match": self.etag}
        if self.modified:
            return {"If-Unmodified-Since": self.modified}
        return {}

    def submit(self, start: int, end: int) -> Future:
        if self._whole is not None:
            return done_future(memoryview(self._whole)[start:end])
        tail = self._tail
        if tail is not None and start >= tail[0]:
            if end == self._size and start == tail[0]:
                self._tail = None               # the footer's read: cached from now on
            return done_future(memoryview(tail[1])[start - tail[0]:end - tail[0]])
        if self._size < SMALL_FILE:
            return self._small(start, end)
        return self.client.run(self._range(start, end, None, np.empty(end - start, np.uint8)))

    def submit_cuts(self, start: int, end: int, cuts) -> Future:
        """A future of one array per (lo, hi) of ``cuts`` (offsets into
        [start, end), sorted by lo): the bytes [start + lo, start + hi),
        from one request whose bytes between cuts are dropped."""
        tail = self._tail
        if self._whole is not None or self._size < SMALL_FILE or \
                (tail is not None and start >= tail[0]):
            return _then(self.submit(start, end),
                         lambda data: [memoryview(data)[lo:hi] for lo, hi in cuts])
        parts = [np.empty(hi - lo, np.uint8) for lo, hi in cuts]
        return self.client.run(self._range(start, end, cuts, parts))

    def _small(self, start: int, end: int) -> Future:
        with self._whole_lock:
            if self._whole_future is None:
                self._whole_future = self.client.run(self._get_whole())
            whole = self._whole_future
        return _then(whole, lambda data: memoryview(data)[start:end])

    async def _get_whole(self):
        _, _, body = await self.client.request("GET", self.path, self._conditions(),
                                               (0, self._size), self._checker(0, self._size))
        if len(body) != self._size:       # (a 206 of the whole range)
            body = body[:self._size]
        self._whole = body
        return body

    async def _range(self, start: int, end: int, cuts=None, into=None):
        """The bytes [start, end) (per cut of ``cuts``), read into ``into``:
        arrays the submitting thread allocated.  Allocated on the event-loop
        thread, they came mostly from memory the kernel had to map and zero
        page by page (SF10 Q6 over http: 145k page faults, 1.3 s of system
        time on that thread); allocated on the scan threads they reuse the
        memory freed pages left, as the local path's reads do (no faults
        after a process's first query)."""
        hdrs = {"Range": f"bytes={start}-{end - 1}"}
        hdrs.update(self._conditions())
        _, _, body = await self.client.request("GET", self.path, hdrs, (start, end),
                                               self._checker(start, end), cuts, into)
        if isinstance(body, CutBody):
            return body.parts
        if len(body) != end - start:        # 200: the whole file, kept
            self._whole = body
            body = memoryview(body)[start:end]
        return body if cuts is None else [memoryview(body)[lo:hi] for lo, hi in cuts]

    def _checker(self, start: int, end: int):
        url, size, etag = self.path, self._size, self.etag

        def check(status, headers, body):
            if status == 412:
                raise FileChangedError("file changed while being read (precondition "
                                       "failed: ETag/Last-Modified no longer match)",
                                       url=url, byte_range=(start, end))
            if status not in (200, 206):
                raise _status_error(status, url, (start, end))
            tag = headers.get("ETag")
            if etag and tag and tag != etag:
                raise FileChangedError(f"file changed while being read (ETag {etag} became "
                                       f"{tag})", url=url, byte_range=(start, end))
            if status == 200:
                if len(body) != size:
                    if "Content-Length" in headers and int(headers["Content-Length"]) != size:
                        raise FileChangedError(f"file changed while being read (size {size} "
                                               f"became {headers['Content-Length']})", url=url)
                    raise _Retryable(f"truncated body ({len(body)} of {size} bytes)")
                return
            lo, hi, total = _content_range(headers)
            if lo is None:
                raise PqdbIOError(f"206 without a valid Content-Range "
                                  f"({headers.get('Content-Range')!r})", url=url,
                                  byte_range=(start, end))
            if total is not None and total != size:
                raise FileChangedError(f"file changed while being read (size {size} became "
                                       f"{total})", url=url, byte_range=(start, end))
            if (lo, hi + 1) != (start, end):
                raise PqdbIOError(f"server sent Content-Range bytes {lo}-{hi}, not the range "
                                  "asked for", url=url, byte_range=(start, end))
            if len(body) != end - start:
                raise _Retryable(f"truncated body ({len(body)} of {end - start} bytes)")
        return check
