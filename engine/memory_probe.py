"""Peak resident memory of the process while a piece of code runs.

    with PeakMemory() as peak:
        con.sql(...).fetchall()
    peak.bytes          # highest resident set size seen during the block

A daemon thread samples /proc/self/statm every ``interval`` seconds (Linux);
elsewhere the process-lifetime peak of resource.getrusage is reported.  Used
by bench/ and available to the TPC-H runner (per-query peak memory).
"""

from __future__ import annotations

import os
import threading

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss() -> int:
    """Resident set size of this process in bytes (0 when unknown)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def lifetime_peak_rss() -> int:
    """Highest resident set size of this process so far, in bytes."""
    try:
        import resource
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kib * 1024 if os.uname().sysname == "Linux" else kib
    except (ImportError, OSError):
        return 0


class PeakMemory:
    """Context manager: ``bytes`` = peak RSS while the block ran."""

    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.bytes = 0
        self._stop = threading.Event()
        self._thread = None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            rss = current_rss()
            if rss > self.bytes:
                self.bytes = rss

    def __enter__(self) -> "PeakMemory":
        self.bytes = current_rss()
        if self.bytes == 0:                      # no /proc: lifetime peak at the end
            return self
        self._thread = threading.Thread(target=self._sample, name="pqdb-peak-memory",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is None:
            self.bytes = lifetime_peak_rss()
            return
        self._stop.set()
        self._thread.join()
        self.bytes = max(self.bytes, current_rss())

    @property
    def mib(self) -> float:
        return self.bytes / (1 << 20)
