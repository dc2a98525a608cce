"""Shared timing for the bench scripts."""

from __future__ import annotations

import math
import time


def best_times_paired(cons, sql: str, repeat: int) -> list[float]:
    """Minimum wall time of ``repeat`` runs of sql (results fetched) on
    each connection, after one warm-up run on each (numba cache, buffer
    manager); the runs are taken in turn (one run on each, ``repeat``
    times), so that every connection's runs meet the same stretches of a
    machine whose speed drifts (a VM's neighbours); a ratio of the results
    then compares like with like."""
    for con in cons:
        con.sql(sql).fetchall()
    best = [math.inf] * len(cons)
    for _ in range(repeat):
        for i, con in enumerate(cons):
            t0 = time.perf_counter()
            con.sql(sql).fetchall()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best
