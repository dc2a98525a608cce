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
