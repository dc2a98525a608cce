"""What two threads of one process get out of alternating Python and a
numba nogil kernel, against the same work on one thread.

    .venv/bin/python bench/gil_toy.py

Each thread repeats: pure Python for ``py`` microseconds (holding the GIL),
then a nogil kernel for ``kernel`` microseconds.  With perfect hand-overs
one thread's Python would overlap the other's kernel and every pair up to
50/50 would run 2x faster on two cores; what it really gets shows the cost
of handing the GIL over (docs/performance-notes.md, "What bounds the 2-thread
speedup").
"""

from __future__ import annotations

import threading
import time

from numba import njit


@njit(nogil=True, cache=True)
def _spin(n):
    acc = 0.0
    for i in range(n):
        acc += i * 0.5
    return acc


def _python(k):
    s = 0
    for i in range(k):
        s += i
    return s


def _per_us(f, arg) -> float:
    """Units of ``arg`` that take one microsecond."""
    f(arg)
    t = time.perf_counter()
    for _ in range(200):
        f(arg)
    return arg / ((time.perf_counter() - t) / 200 * 1e6)


def main() -> int:
    spin_us, py_us = _per_us(_spin, 20000), _per_us(_python, 1000)
    print(f"{'python us':>10} {'kernel us':>10} {'1 thread':>9} {'2 threads':>10} {'speedup':>8}")
    for py, kernel in [(5, 20), (20, 40), (20, 80), (50, 50), (10, 100)]:
        nk, npy = int(spin_us * kernel), int(py_us * py)
        iters = int(300000 / (py + kernel))

        def job():
            for _ in range(iters):
                _python(npy)
                _spin(nk)

        t = time.perf_counter()
        job()
        one = time.perf_counter() - t
        threads = [threading.Thread(target=job) for _ in range(2)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        two = time.perf_counter() - t            # twice the work
        print(f"{py:10d} {kernel:10d} {one * 1000:8.0f}ms {two * 1000:9.0f}ms {2 * one / two:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
