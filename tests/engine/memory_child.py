"""Run one query in this (fresh) process and report its peak resident memory.

    python -m tests.engine.memory_child '{"limit": "500MB", "threads": 2,
        "warm": {"a": "tiny.parquet"}, "views": {"a": "big.parquet"},
        "sql": "...", "rows": 5}'

The query first runs over the ``warm`` views (smaller files that take the
same paths -- parallel builds, sort runs -- so numba's kernels are compiled
or loaded, and every module the query needs imported), then the views are
pointed at the real files, the allocator's free memory is returned and the
idle resident size taken.  The query runs once more; its peak resident size
(the kernel's VmHWM, reset before it starts: a warm-up compile's peak is not
the query's; getrusage's ru_maxrss where that cannot be reset) is reported
with the result (its row count and first ``rows`` rows) or the error, as
one JSON line on stdout.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def main(spec: dict) -> dict:
    import engine
    from engine.memory_probe import PeakMemory, current_rss
    from engine.scheduler import release_free_memory

    con = engine.connect(threads=spec.get("threads", 2), memory_limit=spec["limit"])

    def views(paths):
        for name, path in paths.items():
            con.sql(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}')")

    views(spec["warm"])
    try:
        con.sql(spec["sql"]).fetchmany(1)
    except engine.MemoryLimitError:
        pass
    views(spec["views"])
    release_free_memory()
    out = {"idle": current_rss()}
    start = time.perf_counter()
    with PeakMemory() as peak:
        try:
            result = con.sql(spec["sql"])
            out["count"] = len(result)
            out["rows"] = [list(map(_plain, r)) for r in result.fetchmany(spec.get("rows", 5))]
            del result
        except engine.PqdbError as e:
            out["error"] = type(e).__name__
            out["message"] = str(e)
    out["seconds"] = time.perf_counter() - start
    out["peak"] = peak.bytes
    out["ru_maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def _plain(v):
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    return str(v)


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
