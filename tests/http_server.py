"""A real HTTP server on 127.0.0.1 for the remote-file tests and the
benchmark: aiohttp.web on its own thread, honouring Range, HEAD, If-Match
and If-Unmodified-Since, with a request log, and fault injection.

    server = HttpServer(); server.start()
    server.add("t.parquet", path_or_bytes)
    url = server.url("t.parquet")
    server.fail("t.parquet", "503", "503")   # the next two data GETs fail
    server.log                                # [Request(method, path, range, status, sent)]

Faults (consumed one per GET with a Range header, or per request of any
kind for ``any=True``): "503", "429", "404", "403", "500" (that status),
"reset" (half the body, then the connection is cut), "truncate" (a short
body with a matching Content-Length), "slow" (sleeps ``slow_seconds``
first), "ignore_range" (200 with the whole file), "bad_range" (206 with a
wrong Content-Range).  ``replace(name, data)`` swaps the file (new ETag).
``fail_randomly(share, kinds, seed)`` draws faults for a share of all
ranged GETs (a soak).  ``refuse_head`` makes HEAD 405; paths under /redirect/ answer 302 to the
file.  ``rate`` caps the bytes per second sent (the benchmark's network);
``latency`` delays each answer (HEAD or GET) by that many seconds (an
object store's time to first byte).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate

from aiohttp import web


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    status: int
    sent: int
    headers: dict


class HttpServer:
    def __init__(self, rate: float | None = None, latency: float = 0.0):
        self.files: dict[str, bytes] = {}
        self.etags: dict[str, str] = {}
        self.mtimes: dict[str, float] = {}
        self.faults: dict[str, list] = {}
        self.injected: list[str] = []   # every fault served, in order
        self._random = None             # (fail_randomly)
        self._share = 0.0
        self._kinds: list[str] = []
        self._log: list[Request] = []
        self.refuse_head = False
        self.send_etag = True
        self.slow_seconds = 5.0
        self.rate = rate
        self.latency = latency          # seconds before each answer (an object store's)
        self.in_flight = 0
        self.max_in_flight = 0
        self._methods_in_flight: list[str] = []
        self.together: set = set()      # (method arriving, a method it found in flight)
        self._lock = threading.Lock()
        self._loop = None
        self._runner = None
        self.port = None

    # -- content -----------------------------------------------------------------
    def add(self, name: str, data) -> str:
        if not isinstance(data, (bytes, bytearray)):
            with open(data, "rb") as f:
                data = f.read()
        with self._lock:
            self.files[name] = bytes(data)
            self.etags[name] = '"' + hashlib.sha1(data).hexdigest()[:16] + '"'
            self.mtimes[name] = time.time() if name not in self.mtimes else self.mtimes[name] + 10
        return self.url(name)

    def replace(self, name: str, data) -> None:
        self.add(name, data)

    def remove(self, name: str) -> None:
        with self._lock:
            self.files.pop(name, None)

    def fail(self, name: str, *faults: str, any: bool = False) -> None:
        with self._lock:
            self.faults.setdefault(name, []).extend((f, any) for f in faults)

    def fail_randomly(self, share: float, kinds, seed: int) -> None:
        """From now on a ``share`` of the ranged GETs (of any file) gets a
        fault drawn from ``kinds``, reproducibly for a ``seed`` (faults
        queued by ``fail`` come first); ``injected`` lists every fault
        served."""
        import random
        with self._lock:
            self._random, self._share, self._kinds = random.Random(seed), share, list(kinds)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def clear_log(self) -> None:
        """Forget the requests served so far, once the handlers still
        running recorded theirs (see ``log``): a footer read whose handler
        logged it after the clear counted as a later request."""
        deadline = time.monotonic() + 2.0
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.005)
        with self._lock:
            self._log.clear()

    @property
    def log(self) -> list[Request]:
        """The requests served so far.  A handler records its request after
        the response's last byte is written, when the client may already
        have it: wait (up to 2 s) for the handlers still running."""
        deadline = time.monotonic() + 2.0
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.005)
        return self._log

    def data_requests(self, name: str | None = None) -> list[Request]:
        return [r for r in self.log if r.method == "GET" and
                (name is None or r.path.lstrip("/") == name)]

    def bytes_sent(self) -> int:
        return sum(r.sent for r in self.log)

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> "HttpServer":
        ready = threading.Event()

        def run():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            self._runner = web.AppRunner(app, access_log=None)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            self._loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())

        self._thread = threading.Thread(target=run, name="test-http-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    # -- serving --------------------------------------------------------------------
    def _record(self, request, status: int, sent: int) -> None:
        with self._lock:
            self._log.append(Request(request.method, request.path, request.headers.get("Range"),
                                    status, sent, dict(request.headers)))

    def _fault(self, name: str, ranged: bool):
        with self._lock:
            queue = self.faults.get(name)
            if queue and (ranged or queue[0][1]):
                fault = queue.pop(0)[0]
            elif ranged and self._random is not None and self._random.random() < self._share:
                fault = self._random.choice(self._kinds)
            else:
                return None
            self.injected.append(fault)
            return fault

    async def _handle(self, request: web.Request):
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.together.update((request.method, m) for m in self._methods_in_flight)
            self._methods_in_flight.append(request.method)
        try:
            return await self._serve(request)
        finally:
            with self._lock:
                self.in_flight -= 1
                self._methods_in_flight.remove(request.method)

    async def _serve(self, request: web.Request):
        path = request.path
        if path == "/__stats":          # (the benchmark's server in its own process)
            with self._lock:
                by_path: dict = {}
                for r in self._log:
                    by_path[r.path] = by_path.get(r.path, 0) + r.sent
                stats = {"bytes": sum(r.sent for r in self._log), "requests": len(self._log),
                         "by_path": by_path}
            return web.json_response(stats)
        if path.startswith("/redirect/"):
            self._record(request, 302, 0)
            raise web.HTTPFound("/" + path[len("/redirect/"):])
        name = path.lstrip("/")
        with self._lock:
            data = self.files.get(name)
            etag = self.etags.get(name)
            mtime = self.mtimes.get(name)
        if data is None:
            self._record(request, 404, 0)
            return web.Response(status=404, text="not found")
        rng = request.headers.get("Range")
        fault = self._fault(name, request.method == "GET" and rng is not None)
        if fault and fault.isdigit():
            self._record(request, int(fault), 0)
            return web.Response(status=int(fault), text=f"injected {fault}")
        if fault == "slow":
            await asyncio.sleep(self.slow_seconds)
        if self.latency:
            await asyncio.sleep(self.latency)
        headers = {"Accept-Ranges": "bytes", "Last-Modified": formatdate(mtime, usegmt=True)}
        if self.send_etag:
            headers["ETag"] = etag
        if request.method == "HEAD":
            if self.refuse_head:
                self._record(request, 405, 0)
                return web.Response(status=405)
            self._record(request, 200, 0)
            headers["Content-Length"] = str(len(data))
            return web.Response(status=200, headers=headers)
        if request.method != "GET":
            self._record(request, 405, 0)
            return web.Response(status=405)
        if_match = request.headers.get("If-Match")
        if if_match and self.send_etag and if_match != etag:
            self._record(request, 412, 0)
            return web.Response(status=412, text="precondition failed")
        start, end, status = 0, len(data), 200
        if rng and fault != "ignore_range":
            spec = rng.split("=", 1)[1]
            a, _, b = spec.partition("-")
            if not a:                           # bytes=-N: the last N bytes
                start, end = max(len(data) - int(b), 0), len(data)
            else:
                start, end = int(a), min(int(b) + 1, len(data)) if b else len(data)
            if start >= len(data):
                self._record(request, 416, 0)
                return web.Response(status=416, headers={"Content-Range": f"bytes */{len(data)}"})
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
            if fault == "bad_range":
                headers["Content-Range"] = f"bytes {start + 1}-{end}/{len(data)}"
        body = memoryview(data)[start:end]          # no copy of the range
        if fault == "truncate":
            body = body[:len(body) // 2]
        resp = web.StreamResponse(status=status, headers=headers)
        resp.content_length = len(body)
        await resp.prepare(request)
        if fault == "reset":
            await resp.write(body[:len(body) // 2])
            self._record(request, status, len(body) // 2)
            request.transport.close()
            return resp
        sent = 0
        # uncapped: one write, the transport sends it as the socket takes it
        # (64 KiB writes cost the server as much CPU as the client's reads,
        # on the same cores, in bench/remote.py)
        step = 1 << 16 if self.rate else max(len(body), 1)
        t0 = time.perf_counter()
        try:
            for i in range(0, len(body), step):
                await resp.write(body[i:i + step])
                sent += len(body[i:i + step])
                if self.rate:
                    ahead = sent / self.rate - (time.perf_counter() - t0)
                    if ahead > 0:
                        await asyncio.sleep(ahead)
            await resp.write_eof()
        except (ConnectionError, OSError):     # the client went away (a peer reading ahead)
            pass
        self._record(request, status, sent)
        return resp


def serve_directory(server: HttpServer, directory: str, prefix: str = "") -> dict:
    """Add every file below ``directory``; {relative path: url}."""
    out = {}
    for root, _dirs, files in os.walk(directory):
        for f in sorted(files):
            full = os.path.join(root, f)
            rel = os.path.relpath(full, directory).replace(os.sep, "/")
            out[rel] = server.add(prefix + rel, full)
    return out


def bounded(fn, seconds: float = 60.0):
    """``fn()``'s result (or exception), failing the test if it takes longer
    than ``seconds``: no remote test may hang."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:          # noqa: BLE001 - re-raised below
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise AssertionError(f"did not finish within {seconds} s (hung?)")
    if "error" in out:
        raise out["error"]
    return out["value"]


def sample_parquet(path: str, rows: int = 200_000, row_group_size: int = 50_000) -> str:
    """A Parquet file of a few row groups (ints, doubles, strings, dates),
    written by pyarrow (a test dependency)."""
    import datetime
    import pyarrow as pa
    import pyarrow.parquet as pq
    import numpy as np
    rng = np.random.default_rng(7)
    table = pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "x": rng.random(rows),
        "s": pa.array([f"name{i % 997}" for i in range(rows)]),
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 400)
                       for i in range(rows)]),
    })
    pq.write_table(table, path, row_group_size=row_group_size, compression="snappy")
    return path


class ServerProcess:
    """An HttpServer in a process of its own (the benchmark: its Python does
    not share the measured process's GIL); ``bytes_sent()`` asks it."""

    def __init__(self, directory: str, rate: float | None = None, latency: float = 0.0):
        import subprocess
        import sys
        args = [sys.executable, "-m", "tests.http_server", directory]
        if rate:
            args += ["--rate", str(rate)]
        if latency:
            args += ["--latency", str(latency)]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.directory = directory

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def stats(self) -> dict:
        """{"bytes", "requests", "by_path"} served so far."""
        import json
        import urllib.request
        with urllib.request.urlopen(self.url("__stats"), timeout=10) as f:
            return json.loads(f.read())

    def bytes_sent(self, prefix: str | None = None) -> int:
        """Bytes sent so far (of the paths under ``prefix`` only, when given)."""
        stats = self.stats()
        if prefix is None:
            return stats["bytes"]
        return sum(n for p, n in stats["by_path"].items() if p.lstrip("/").startswith(prefix))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _main() -> None:
    import argparse
    ap = argparse.ArgumentParser(description="serve a directory over HTTP on 127.0.0.1")
    ap.add_argument("directory")
    ap.add_argument("--rate", type=float, default=None, help="bytes per second")
    ap.add_argument("--latency", type=float, default=0.0,
                    help="seconds before each answer")
    args = ap.parse_args()
    server = HttpServer(rate=args.rate, latency=args.latency).start()
    serve_directory(server, args.directory)
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    _main()
