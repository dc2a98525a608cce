"""Synopses skip data: a restricted scan of a file whose filter columns
have synopses drops the ranges that cannot match, and returns DuckDB's
rows on sorted and unsorted files, with and without footer statistics;
LIMIT leaves no partial statistics; a rewritten file loses them."""

from __future__ import annotations

import math
import os

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.stats.helpers import connect, file_stats, statistics_rows, table_sample

N = 200_000

WHERES = [
    "k BETWEEN 50000 AND 50500",
    "k < 1000",
    "k >= 199000",
    "k = 123456",
    "k IN (5, 77777, 150000)",
    "s = 'v123'",
    "s >= 'v99'",
    "d BETWEEN DATE '1970-02-01' AND DATE '1970-02-03'",
    "f > 1.0e5 AND f < 1.01e5",
    "f < 0",
    "n IS NULL AND k < 5000",
    "n IS NOT NULL AND k > 190000",
    "m = 7 AND k < 100000",
    "k < 100 OR k > 199900",
]


def _table(sorted_keys: bool) -> pa.Table:
    rng = np.random.default_rng(11)
    k = np.arange(N) if sorted_keys else rng.permutation(N)
    f = k.astype(np.float64)
    f[k % 1000 == 7] = np.nan
    n = pa.array(np.where(k % 3 == 0, None, k).tolist(), pa.int64())
    return pa.table({
        "k": pa.array(k, pa.int64()),
        "s": pa.array([f"v{x}" for x in k]),
        "d": pa.array((k // 2000).astype(np.int32), pa.date32()),
        "f": pa.array(f),
        "n": n,
        "m": pa.array((k % 10).astype(np.int32)),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("skipping")
    out = {}
    for order in ("sorted", "unsorted"):
        t = _table(order == "sorted")
        for name, kw in {"stats": dict(row_group_size=50_000),
                         "nostats": dict(row_group_size=50_000, write_statistics=False),
                         "one_group_nostats": dict(row_group_size=1 << 30,
                                                   write_statistics=False)}.items():
            path = str(d / f"{order}_{name}.parquet")
            pq.write_table(t, path, **kw)
            out[f"{order}_{name}"] = path
    return out


def _norm(rows):
    return sorted(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r)
                  for r in rows)


@pytest.mark.parametrize("layout", ["sorted_stats", "sorted_nostats", "sorted_one_group_nostats",
                                    "unsorted_stats", "unsorted_nostats"])
def test_skipping_returns_duckdb_rows(files, layout):
    path = files[layout]
    con = connect(threads=2, block_rows=8192)
    duck = duckdb.connect()
    skipped = 0
    for run in range(2):
        for where in WHERES:
            sql = f"SELECT k, s, d, f, n, m FROM '{path}' WHERE {where}"
            res = con.sql(sql)
            assert _norm(res.fetchall()) == _norm(duck.execute(sql).fetchall()), (run, where)
            if run == 1:
                skipped += res.pruning.synopses_skipped
    if layout.startswith("sorted") and "nostats" in layout:
        assert skipped > 0                     # synopses are the only source here


def test_no_skipping_while_collecting(files):
    """The first query reads every row of the columns it collects (the
    pruning counters still say what its rows skipped)."""
    path = files["sorted_nostats"]
    con = connect(threads=2)
    res = con.sql(f"SELECT count(*) FROM '{path}' WHERE k < 1000")
    assert res.fetchall() == [(1000,)] and res.pruning.synopses_skipped == 0
    res = con.sql(f"SELECT count(*) FROM '{path}' WHERE k < 1000")
    assert res.fetchall() == [(1000,)] and res.pruning.synopses_skipped > 0


def test_limit_leaves_no_partial_statistics(files):
    path = files["sorted_stats"]
    con = connect(threads=2, block_rows=4096)
    con.sql(f"SELECT k, s FROM '{path}' LIMIT 10").fetchall()
    assert file_stats(con, path) is None and table_sample(con, [path]) is None
    con.sql(f"SELECT count(k) FROM '{path}'").fetchall()
    fs = file_stats(con, path)
    assert set(fs.columns) == {"k"}
    assert set(table_sample(con, [path]).columns) == {"k"}


def test_columns_join_later(files):
    path = files["unsorted_stats"]
    con = connect(threads=2)
    con.sql(f"SELECT count(k) FROM '{path}'").fetchall()
    sample_k = table_sample(con, [path]).columns["k"].python_values()
    con.sql(f"SELECT count(s), count(f) FROM '{path}' WHERE k < 10").fetchall()
    sample = table_sample(con, [path])
    assert set(sample.columns) == {"k", "s", "f"}
    assert sample.columns["k"].python_values() == sample_k
    keys = sample_k
    assert sample.columns["s"].python_values() == [f"v{k}".encode() for k in keys]
    stats = statistics_rows(con, path)
    assert stats["k"]["key_guess"] and stats["s"]["sample_rows"] == 1024
    assert stats["d"]["distinct_estimate"] is None and stats["d"]["sample_rows"] == 0


def test_rewritten_file_loses_statistics(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"k": np.arange(1000)}), path)
    con = connect(threads=2)
    con.sql(f"SELECT count(k) FROM '{path}'").fetchall()
    assert abs(statistics_rows(con, path)["k"]["distinct_estimate"] - 1000) <= 20
    pq.write_table(pa.table({"k": np.arange(5000) % 10}), path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert statistics_rows(con, path)["k"]["distinct_estimate"] is None
    res = con.sql(f"SELECT count(*) FROM '{path}' WHERE k = 3")
    assert res.fetchall() == [(500,)]
    assert statistics_rows(con, path)["k"]["distinct_estimate"] == 10


def test_statistics_off(files):
    path = files["sorted_nostats"]
    con = connect(threads=2, statistics=False)
    con.sql(f"SELECT count(k) FROM '{path}'").fetchall()
    assert file_stats(con, path) is None
    con.sql("SET statistics = true")
    con.sql(f"SELECT count(k) FROM '{path}'").fetchall()
    assert file_stats(con, path) is not None
