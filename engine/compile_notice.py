"""Saying so when kernels compile: a cold numba cache (a fresh install that
skipped ``make install``'s precompile step, a new NUMBA_CACHE_DIR) makes the
first queries compile their kernels, seconds each.  The CLI watches numba's
``numba:compile`` events (fired on a cache miss only, never on a cache hit)
and says once, on stderr, that it is compiling; on a terminal it keeps a
count on that line.

numba is imported lazily (``import engine`` and ``SELECT 1`` never load it),
so the watch hooks the import of numba rather than importing it itself."""

from __future__ import annotations

import sys
import threading
import time

from engine.kernel_cache import forget, when_imported

NOTICE = ("pqdb: compiling kernels on first use (numba's cache is cold; "
          "`python -m tpch.precompile` or `make install` compiles them ahead)")


class CompileWatch:
    """Counts kernel compilations (cache misses) and reports them on ``stream``."""

    def __init__(self, stream=None, progress: bool | None = None):
        self._stream = stream                   # None: sys.stderr when writing
        if progress is None:
            isatty = getattr(self.stream, "isatty", None)
            progress = bool(isatty and isatty())
        self.progress = progress
        self._hook = self._listener = None
        self.compiled = 0
        self.noticed = False
        self._on_line = False
        self._started = None
        self._lock = threading.Lock()

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    def install(self) -> "CompileWatch":
        """Register with numba now if it is loaded, else when it is imported."""
        self._hook = when_imported("numba", self._register)
        return self

    def uninstall(self) -> None:
        """Stop watching (the CLI's main returns; numba stays loaded)."""
        forget(self._hook)
        if self._listener is not None:
            from numba.core import event
            event.unregister("numba:compile", self._listener)
            self._listener = None

    def _register(self) -> None:
        from numba.core import event

        watch = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                watch.started(ev.data["dispatcher"].py_func)

            def on_end(self, ev):
                pass

        self._listener = _Listener()
        event.register("numba:compile", self._listener)

    def started(self, func) -> None:
        try:
            self._started_unguarded(func)
        except (OSError, ValueError):       # a closed or broken stream never fails a query
            pass

    def _started_unguarded(self, func) -> None:
        with self._lock:
            self.compiled += 1
            if not self.noticed:
                self.noticed = True
                self._started = time.perf_counter()
                if not self.progress:
                    print(NOTICE, file=self.stream, flush=True)
            if self.progress:
                name = f"{func.__module__}.{func.__qualname__}"
                self.stream.write(f"\r\x1b[K{NOTICE}: {self.compiled} ({name})")
                self.stream.flush()
                self._on_line = True

    def finish(self) -> None:
        """End the progress line (after a statement), if one is open."""
        with self._lock:
            if self._on_line and not getattr(self.stream, "closed", False):
                took = time.perf_counter() - self._started
                self.stream.write(f"\r\x1b[Kpqdb: compiled {self.compiled} kernels "
                                  f"in {took:.1f} s\n")
                self.stream.flush()
                self._on_line = False
