"""Resident memory of this process: now, its peak, and its peak while a
piece of code runs.

    with PeakMemory() as peak:
        con.sql(...).fetchall()
    peak.bytes          # highest resident set size seen during the block

On Linux the kernel keeps the exact peak (VmHWM in /proc/self/status) and
lets a process reset it (``reset_peak_rss``, writing 5 to
/proc/self/clear_refs); PeakMemory uses that when it can, else a daemon thread
samples /proc/self/statm every ``interval`` seconds; elsewhere the
process-lifetime peak of resource.getrusage is reported.

A process's RSS includes every engine and library in it, so the peak of one
engine is only its own in a process that runs nothing else: bench/memory.py
and ``pqdb-tpch run --memory`` measure each query in a fresh process
(tpch/benchmark.py ``peak_in_subprocess``).
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


def process_status() -> dict:
    """VmRSS and VmHWM (peak RSS since start or the last reset) of this
    process in bytes, from /proc/self/status; {} when unknown."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, value = line.split(":", 1)
                    out[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return out


def reset_peak_rss() -> bool:
    """Reset the kernel's peak RSS (VmHWM) of this process to its current
    RSS; False when the system does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    status = process_status()
    return bool(status) and status.get("VmHWM", 1 << 62) <= status.get("VmRSS", 0) + (1 << 20)


def lifetime_peak_rss() -> int:
    """Highest resident set size of this process so far, in bytes."""
    status = process_status()
    if status.get("VmHWM"):
        return status["VmHWM"]
    try:
        import resource
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kib * 1024 if os.uname().sysname == "Linux" else kib
    except (ImportError, OSError):
        return 0


class PeakMemory:
    """Context manager: ``bytes`` = peak RSS while the block ran,
    ``before`` = RSS when it started.  It resets the process's VmHWM (one
    PeakMemory at a time: an enclosing one falls back to what it sampled)."""

    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.bytes = 0
        self.before = 0
        self._stop = threading.Event()
        self._thread = None
        self._kernel_peak = False

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            rss = current_rss()
            if rss > self.bytes:
                self.bytes = rss

    def __enter__(self) -> "PeakMemory":
        self.bytes = self.before = current_rss()
        if self.bytes == 0:                      # no /proc: lifetime peak at the end
            return self
        self._kernel_peak = reset_peak_rss()
        if self._kernel_peak:
            return self
        self._thread = threading.Thread(target=self._sample, name="pqdb-peak-memory",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._kernel_peak:
            self.bytes = max(self.bytes, process_status().get("VmHWM", 0), current_rss())
            return
        if self._thread is None:
            self.bytes = lifetime_peak_rss()
            return
        self._stop.set()
        self._thread.join()
        self.bytes = max(self.bytes, current_rss())

    @property
    def mib(self) -> float:
        return self.bytes / (1 << 20)
