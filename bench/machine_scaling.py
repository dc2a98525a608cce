"""What this machine gives a second thread, with no Python and no GIL in
the way: four numba nogil kernels, each timed twice on one thread and once
on two threads side by side (each thread on its own copy of the data).

    .venv/bin/python bench/machine_scaling.py [--rounds 4]

Kernels:
  compute      a dependent floating-point chain (registers only)
  L2 stream    sums over 256 KiB per thread (fits each core's L2)
  L3 stream    sums over 4 MiB per thread (past L2, inside the shared L3)
  RAM stream   sums over 80 MiB per thread

A scan's kernels (decompression, decoding, filters) stream column chunks
that live past L2, so the L3 and RAM rows are the ceiling for the scan-heavy
TPC-H queries; bench/scaling.py's ratios read against them.  Prints the
speedup of each round, so the spread of a noisy host shows.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def _compute(n):
    acc = 0.0
    for i in range(n):
        acc += (i * 0.5) % 7.0
    return acc


@njit(nogil=True, cache=True)
def _stream(arr, reps):
    s = 0
    for _ in range(reps):
        for i in range(arr.shape[0]):
            s += arr[i]
    return s


def _speedup(fn, args_a, args_b) -> float:
    """Two sequential calls on one thread over one call on each of two threads."""
    t = time.perf_counter()
    fn(*args_a)
    fn(*args_b)
    one = time.perf_counter() - t
    threads = [threading.Thread(target=fn, args=a) for a in (args_a, args_b)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return one / (time.perf_counter() - t)


def _stream_args(nbytes: int, target_s: float = 0.15):
    rows = nbytes // 8
    a, b = np.arange(rows, dtype=np.int64), np.arange(rows, dtype=np.int64)
    _stream(a, 1)
    t = time.perf_counter()
    _stream(a, 3)
    reps = max(1, int(target_s / ((time.perf_counter() - t) / 3)))
    return (a, reps), (b, reps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args(argv)
    _compute(10)
    cases = [("compute", _compute, (20_000_000,), (20_000_000,))]
    for name, nbytes in (("L2 stream", 256 << 10), ("L3 stream", 4 << 20), ("RAM stream", 80 << 20)):
        a, b = _stream_args(nbytes)
        cases.append((name, _stream, a, b))
    print(f"{'kernel':>12}  2-thread speedup per round")
    for name, fn, a, b in cases:
        r = [_speedup(fn, a, b) for _ in range(args.rounds)]
        print(f"{name:>12}  " + "  ".join(f"{x:.2f}x" for x in r)
              + f"   (median {float(np.median(r)):.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
