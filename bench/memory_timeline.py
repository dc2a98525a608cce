"""Resident memory over time while one TPC-H query runs under a
memory_limit, next to what the query has reserved and what the caches hold:
what nobody reserved shows as ``rss - idle - reserved - cached``.

    .venv/bin/python bench/memory_timeline.py --data data/sf10 --query 18 \\
        --limit 2000MB [--runs 2] [--threads 2] [--every 0.1]

One connection, views over the data's files; the query runs ``--runs``
times; VmRSS and the trackers (engine.context.MemoryTracker, one per query)
are sampled every ``--every`` seconds on a thread.  Printed: the idle RSS
(connection made, kernels loaded by a tiny query), then per run the peak
sample and the largest unreserved one, or the error the run raised.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import engine  # noqa: E402
import engine.context as context  # noqa: E402
from tpch.queries import query_text, view_statements  # noqa: E402

MIB = 1 << 20


def rss_mib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


class Sampler:
    """(seconds, rss, reserved, cached) every ``every`` s, all in MiB."""

    def __init__(self, every: float):
        self.every, self.trackers, self.samples = every, [], []
        self.stop = False
        init = context.MemoryTracker.__init__
        trackers = self.trackers

        def tracked_init(tracker, *a, **k):
            init(tracker, *a, **k)
            trackers.append(tracker)
        context.MemoryTracker.__init__ = tracked_init
        self.t0 = time.perf_counter()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stop:
            t = self.trackers[-1] if self.trackers else None
            self.samples.append((time.perf_counter() - self.t0, rss_mib(),
                                 t.used // MIB if t else 0, t.cached() // MIB if t else 0))
            time.sleep(self.every)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--query", type=int, default=18)
    ap.add_argument("--limit", default="2000MB")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("--timeline", type=float, default=0.0,
                    help="also print a sample every this many seconds of each run")
    args = ap.parse_args(argv)
    con = engine.connect(threads=args.threads, memory_limit=args.limit)
    for stmt in view_statements(args.data):
        con.sql(stmt)
    con.sql("SELECT count(*) FROM (SELECT 1)").fetchall()
    idle = rss_mib()
    print(f"{args.data} Q{args.query}, memory_limit {args.limit}, {args.threads} threads; "
          f"idle RSS {idle} MiB")
    sampler = Sampler(args.every)
    sql = query_text(args.query)
    for run in range(args.runs):
        sampler.samples.clear()
        start = time.perf_counter()
        try:
            rows = len(con.sql(sql).fetchall())
            outcome = f"{rows} rows"
        except engine.Error as e:
            outcome = f"{type(e).__name__}: {str(e)[:120]}"
        took = time.perf_counter() - start
        samples = list(sampler.samples)
        if not samples:
            print(f"run {run}: {outcome} in {took:.2f} s (no samples)")
            continue
        if args.timeline > 0:
            last = -args.timeline
            for t, rss, used, cached in samples:
                if t - last >= args.timeline:
                    last = t
                    print(f"  {t:7.2f} s  rss {rss:6d}  reserved {used:6d}  cached {cached:5d}"
                          f"  unreserved {rss - idle - used - cached:6d} MiB")
        peak = max(samples, key=lambda s: s[1])
        loose = max(samples, key=lambda s: s[1] - s[2] - s[3])
        most = max(samples, key=lambda s: s[2])
        print(f"run {run}: {outcome} in {took:.2f} s; peak RSS {peak[1]} MiB "
              f"(= idle {idle} + limit-relative {peak[1] - idle} MiB) with {peak[2]} MiB reserved "
              f"and {peak[3]} MiB cached; most unreserved: {loose[1] - loose[2] - loose[3] - idle}"
              f" MiB over idle at {loose[0]:.1f} s; most reserved {most[2]} MiB at {most[0]:.1f} s "
              f"(RSS {most[1]} MiB)")
    sampler.stop = True


if __name__ == "__main__":
    main()
