"""Shared timing for the bench scripts."""

from __future__ import annotations

import math
import time


def best_time(con, sql: str, repeat: int) -> float:
    """Minimum wall time of ``repeat`` runs of sql (results fetched), after
    one warm-up run (numba cache, buffer manager)."""
    con.sql(sql).fetchall()
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        con.sql(sql).fetchall()
        best = min(best, time.perf_counter() - t0)
    return best


def best_times_paired(cons, sql: str, repeat: int) -> list[float]:
    """best_time of sql on each connection, their runs taken in turn (one
    run on each, ``repeat`` times, after a warm-up run on each), so that
    every connection's runs meet the same stretches of a machine whose
    speed drifts (a VM's neighbours); a ratio of the results then compares
    like with like."""
    for con in cons:
        con.sql(sql).fetchall()
    best = [math.inf] * len(cons)
    for _ in range(repeat):
        for i, con in enumerate(cons):
            t0 = time.perf_counter()
            con.sql(sql).fetchall()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best
