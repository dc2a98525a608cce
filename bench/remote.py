"""Remote-file benchmark: TPC-H served over HTTP on 127.0.0.1.

A byte-counting server (tests/http_server.py, in a process of its own;
``--rate 1gbit`` caps it at the paper's network) serves the data
directory.  Per query it prints:

- ``need``: the distinct bytes the query asks the buffer manager for on a
  cold local run (its column chunks after footer / page-index pruning,
  plus footers and page indexes): what an ideal remote reader fetches;
- ``fetched`` / ``req``: bytes and requests of pqdb's first run over http
  on a fresh connection (``x need``: their ratio), and ``2nd``: the bytes
  its second run fetches (aim: 0, one validation request per file);
- ``disk``: bytes a new process fetches with the disk cache filled by an
  earlier one (``--disk``; aim 0);
- ``local`` / ``http`` seconds: the query on local files and over http,
  each on a fresh connection, the best of ``--repeat`` runs taken in turn
  (``x``: http / local, aim <= 1.5 over localhost);
- ``stat x`` (``--rerun``): lineitem bytes of a third run, after the
  connection's byte cache is dropped but its statistics (collected by the
  first run) kept, over lineitem bytes of the first run (aim on date-sorted
  lineitem, Q6 and Q14: <= 1/8; the paper's Fig. 8);
- ``cpu l`` / ``cpu h`` / ``srv``: CPU seconds of the best local run and
  of the best http run (all of pqdb's threads: the scan threads and the
  http event loop), and the server process's CPU during that http run
  ('-' where /proc cannot tell): over localhost the server and the
  client's I/O share the machine's cores with the query;
- before the table, ``opening``: the seconds to create the views of the
  tables on a fresh connection (each CREATE VIEW opens its files: over
  http one request a file not seen before, for its size, ETag and footer),
  local and over http, best of ``--repeat``, and the requests of one;
- ``peer``: Polars ``scan_parquet`` over http with its SQL (``--peer
  duckdb-fsspec``: DuckDB over pyarrow datasets on fsspec's HTTPFileSystem),
  the same URLs in the same run: its seconds and the bytes the server sent
  it ('-' where it fails: Polars' SQL lacks some TPC-H subqueries).
The files' total size is printed once.  Every timed run starts after a
full garbage collection.  Nothing is asserted.

    .venv/bin/python bench/remote.py                       # SF1 in data/sf1
    .venv/bin/python bench/remote.py --queries 1,6,14 --rate 1gbit --disk
    .venv/bin/python bench/remote.py --latency 20ms --concurrency 64   # an object store
    .venv/bin/python bench/remote.py --coalesce-gap 0      # no range merging
    .venv/bin/python bench/remote.py --latency 20ms --coalesce-waste 0.5   # fewer requests
    .venv/bin/python bench/remote.py --data /tmp/sf1-sorted --queries 6,14 --rerun
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import engine  # noqa: E402
from tests.http_server import ServerProcess  # noqa: E402
from tpch.queries import TABLES, query_text, table_path  # noqa: E402


def parse_rate(text: str | None) -> float | None:
    if not text:
        return None
    t = text.lower().strip()
    for unit, mult in (("gbit", 1e9 / 8), ("mbit", 1e6 / 8), ("mb", 1e6), ("gb", 1e9)):
        if t.endswith(unit):
            return float(t[:-len(unit)]) * mult
    return float(t)


def process_cpu(pid: int) -> float | None:
    """CPU seconds the threads of a process have run (Linux /proc, in
    nanoseconds; a thread that ended no longer counts), or None."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except FileNotFoundError:
                continue
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def settle() -> None:
    """A full garbage collection before a timed run: the 35-60 ms
    collections that earlier runs' garbage would set off inside it
    (docs/performance-notes.md) fall outside, for every side alike."""
    gc.collect()


def parse_seconds(text: str) -> float:
    t = text.lower().strip()
    if t.endswith("ms"):
        return float(t[:-2]) / 1e3
    return float(t[:-1]) if t.endswith("s") else float(t)


def spec_sql(where) -> str:
    """read_parquet's argument: a path or URL, or a list of URLs."""
    if isinstance(where, str):
        return f"'{where}'"
    return "[" + ", ".join(f"'{w}'" for w in where) + "]"


def connect_views(tables: dict, **options):
    con = engine.connect(**options)
    for t, where in tables.items():
        con.sql(f"CREATE OR REPLACE VIEW {t} AS SELECT * FROM read_parquet({spec_sql(where)})")
    return con


def timed(run, server=None):
    """``run()`` after a full garbage collection (settle): its result, its
    seconds, this process's CPU seconds in it, and ``server``'s CPU
    seconds in it (None without a server or where /proc cannot tell)."""
    settle()
    s0 = process_cpu(server.proc.pid) if server is not None else None
    c0, t = time.process_time(), time.perf_counter()
    out = run()
    secs, cpu = time.perf_counter() - t, time.process_time() - c0
    s1 = process_cpu(server.proc.pid) if server is not None else None
    return out, secs, cpu, (None if s0 is None or s1 is None else s1 - s0)


def needed_bytes(local: dict, sql: str, threads: int) -> tuple[int, float, float]:
    """Distinct bytes a cold local run asks the buffer manager for, its
    seconds and its CPU seconds."""
    con = connect_views(local, threads=threads)
    bm = con._catalog.buffer_manager
    seen = set()
    get = bm.get

    def spy(source, offset, length):
        seen.add((source.identity(), int(offset), int(length)))
        return get(source, offset, length)
    bm.get = spy
    _, secs, cpu, _ = timed(lambda: con.sql(sql).fetchall())
    con.close()
    return sum(n for _, _, n in seen), secs, cpu


def disk_run(urls: dict, sql: str, cache: str, threads: int) -> int:
    """bytes_fetched of the query in a new process reading through the disk cache."""
    code = (f"import sys; sys.path.insert(0, {_ROOT!r})\n"
            f"from bench.remote import connect_views\n"
            f"con = connect_views({urls!r}, threads={threads}, remote_cache_dir={cache!r})\n"
            f"r = con.sql({sql!r}); r.fetchall(); print(r.io['bytes_fetched'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    if out.returncode:
        return -1
    return int(out.stdout.split()[-1])


def polars_run(urls: dict, sql: str, threads: int):
    """Polars: scan_parquet over http (its own object-store client), SQL."""
    try:
        import polars as pl
    except ImportError:
        return None
    ctx = pl.SQLContext({t: pl.scan_parquet(u) for t, u in urls.items()})
    return timed(lambda: ctx.execute(sql).collect())[1]


def duckdb_fsspec_run(urls: dict, sql: str, threads: int):
    """DuckDB over pyarrow datasets read through fsspec's HTTPFileSystem."""
    try:
        import duckdb
        import fsspec
        import pyarrow.dataset as ds
    except ImportError:
        return None
    fs = fsspec.filesystem("http")
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    for t, url in urls.items():
        dataset = ds.dataset(url, format="parquet", filesystem=fs)  # noqa: F841
        con.register(t, dataset)
    return timed(lambda: con.execute(sql).fetchall())[1]


def mb(n: int) -> str:
    return f"{n / 1e6:8.1f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "..", "..", "main", "data", "sf1")
                    if not os.path.isdir(os.path.join(_ROOT, "data", "sf1"))
                    else os.path.join(_ROOT, "data", "sf1"))
    ap.add_argument("--queries", default=",".join(str(i) for i in range(1, 23)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rate", help="cap the server, e.g. 1gbit")
    ap.add_argument("--latency", default="0", help="delay before each answer (HEAD or GET), "
                    "e.g. 20ms (an object store's time to first byte)")
    ap.add_argument("--coalesce-gap", default=None, help="http_coalesce_gap (default 1MiB)")
    ap.add_argument("--coalesce-waste", default=None,
                    help="http_coalesce_waste (default 0.1: bytes <= 1.1x those needed)")
    ap.add_argument("--concurrency", type=int, default=None,
                    help="http_concurrency (default 16)")
    ap.add_argument("--disk", action="store_true", help="also measure the disk cache")
    ap.add_argument("--repeat", type=int, default=3,
                    help="cold runs of each query, local and http in turn (best kept)")
    ap.add_argument("--rerun", action="store_true",
                    help="also run each query with statistics but no cached bytes")
    ap.add_argument("--peer", default="polars", choices=["polars", "duckdb-fsspec", "none"],
                    help="polars: scan_parquet over http; duckdb-fsspec: DuckDB over pyarrow "
                         "datasets on fsspec's HTTPFileSystem")
    args = ap.parse_args(argv)
    data = os.path.abspath(args.data)
    latency = parse_seconds(args.latency)
    server = ServerProcess(data, rate=parse_rate(args.rate), latency=latency)
    local, urls, total = {}, {}, 0
    for t in TABLES:                    # DIR/t.parquet or DIR/t/*.parquet
        local[t] = table_path(data, t)
        files = sorted(glob.glob(local[t]))
        served = [server.url(os.path.relpath(f, data).replace(os.sep, "/")) for f in files]
        urls[t] = served[0] if len(served) == 1 else served
        total += sum(os.path.getsize(f) for f in files)
    options = {"threads": args.threads}
    if args.coalesce_gap is not None:
        options["http_coalesce_gap"] = args.coalesce_gap
    if args.concurrency is not None:
        options["http_concurrency"] = args.concurrency
    if args.coalesce_waste is not None:
        options["http_coalesce_waste"] = args.coalesce_waste
    print(f"data {data}: files {total / 1e6:.1f} MB; server rate "
          f"{args.rate or 'uncapped'}, latency {latency * 1e3:g} ms; "
          f"threads {args.threads}; options {options}")
    # numba, the OS page cache and the http path (aiohttp's import, the
    # server) warm before anything is timed
    connect_views(local, threads=args.threads).sql(query_text(1)).fetchall()
    warm = connect_views(urls, **options)
    warm.sql("SELECT count(*) FROM nation JOIN region ON n_regionkey = r_regionkey").fetchall()
    warm.close()
    opened = {}
    for name, where in (("local", local), ("http", urls)):
        for _ in range(args.repeat):
            requests = server.stats()["requests"]
            c, secs, _, _ = timed(lambda: connect_views(where, **options))
            requests = server.stats()["requests"] - requests
            c.close()
            if name not in opened or secs < opened[name][0]:
                opened[name] = (secs, requests)
    print(f"opening: {len(TABLES)} views on a fresh connection, local "
          f"{opened['local'][0]:.3f} s, http {opened['http'][0]:.3f} s "
          f"({opened['http'][1]} requests)")
    head = (f"{'q':>3} {'need MB':>8} {'fetch MB':>8} {'x need':>6} {'req':>5} {'2nd B':>6} "
            f"{'2nd req':>7} {'disk B':>7} {'local s':>7} {'http s':>7} {'x':>5} "
            f"{'cpu l':>5} {'cpu h':>5} {'srv':>5} "
            f"{'peer s':>7} {'peer MB':>8}" + (f" {'stat x':>6}" if args.rerun else ""))
    print(head)
    sums = dict(need=0, fetched=0, local=0.0, http=0.0, cpu_local=0.0, cpu_http=0.0)
    for q in [int(x) for x in args.queries.split(",")]:
        sql = query_text(q)
        need, local_s, local_cpu = needed_bytes(local, sql, args.threads)
        con = connect_views(urls, **options)
        lineitem = server.bytes_sent("lineitem")
        first, http_s, http_cpu, srv_cpu = timed(lambda: con.sql(sql), server)
        lineitem = server.bytes_sent("lineitem") - lineitem
        second = con.sql(sql)
        stat = ""
        if args.rerun:
            con._catalog.buffer_manager.invalidate()     # the bytes go, statistics stay
            before = server.bytes_sent("lineitem")
            con.sql(sql).fetchall()
            again = server.bytes_sent("lineitem") - before
            stat = f" {again / lineitem:6.3f}" if lineitem else f" {'-':>6}"
        con.close()
        for _ in range(args.repeat - 1):    # cold runs in turn, fresh connections: the best
            cl = connect_views(local, threads=args.threads)
            _, secs, cpu, _ = timed(lambda: cl.sql(sql).fetchall())
            if secs < local_s:
                local_s, local_cpu = secs, cpu
            cl.close()
            ch = connect_views(urls, **options)
            _, secs, cpu, srv = timed(lambda: ch.sql(sql).fetchall(), server)
            if secs < http_s:
                http_s, http_cpu, srv_cpu = secs, cpu, srv
            ch.close()
        disk = "-"
        if args.disk:
            with tempfile.TemporaryDirectory() as cache:
                c2 = connect_views(urls, remote_cache_dir=cache, **options)
                c2.sql(sql).fetchall()
                c2.close()
                disk = str(disk_run(urls, sql, cache, args.threads))
        peer_s, peer_mb = "-", "-"
        if args.peer != "none":
            before = server.bytes_sent()
            run = polars_run if args.peer == "polars" else duckdb_fsspec_run
            try:
                secs = run(urls, sql, args.threads)
            except Exception as e:          # noqa: BLE001 - a peer failure is printed
                secs = None
                print(f"  (peer failed on Q{q}: {type(e).__name__}: {str(e)[:80]})")
            if secs is not None:
                peer_s, peer_mb = f"{secs:7.2f}", mb(server.bytes_sent() - before)
        io, io2 = first.io, second.io
        print(f"{q:>3} {mb(need)} {mb(io['bytes_fetched'])} "
              f"{io['bytes_fetched'] / max(need, 1):6.2f} {io['requests']:>5} "
              f"{io2['bytes_fetched']:>6} {io2['requests']:>7} {disk:>7} {local_s:7.2f} "
              f"{http_s:7.2f} {http_s / local_s:5.2f} {local_cpu:5.2f} {http_cpu:5.2f} "
              f"{'-' if srv_cpu is None else format(srv_cpu, '5.2f'):>5} "
              f"{peer_s:>7} {peer_mb:>8}{stat}", flush=True)
        sums["need"] += need
        sums["fetched"] += io["bytes_fetched"]
        sums["local"] += local_s
        sums["http"] += http_s
        sums["cpu_local"] += local_cpu
        sums["cpu_http"] += http_cpu + (srv_cpu or 0.0)
    print(f"all: fetched/need {sums['fetched'] / max(sums['need'], 1):.2f}, "
          f"http/local time {sums['http'] / max(sums['local'], 1e-9):.2f}, "
          f"CPU (http: pqdb + server) {sums['cpu_http'] / max(sums['cpu_local'], 1e-9):.2f}")
    server.stop()


if __name__ == "__main__":
    main()
