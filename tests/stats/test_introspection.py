"""SELECT * FROM pqdb_statistics('path or glob'): one row per column of the
table, what the connection's statistics know of it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from tests.stats.helpers import connect, decimals, statistics_rows

COLUMNS = ["column_name", "row_count", "distinct_estimate", "null_count", "min", "max",
           "sample_rows", "synopses", "key_guess", "stats_bytes"]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    d = tmp_path_factory.mktemp("introspection")
    for i in range(3):
        k = np.arange(i * 1000, (i + 1) * 1000)
        pq.write_table(pa.table({
            "id": k,
            "grp": pa.array([f"g{x % 7}" for x in k]),
            "price": decimals((k % 100).astype(np.int64) * 25, 9, 2),
            "day": pa.array((k % 30).astype(np.int32), pa.date32()),
            "maybe": pa.array([None if x % 4 == 0 else float(x) for x in k]),
        }), str(d / f"part{i}.parquet"), row_group_size=400)
    return str(d)


def test_columns_types_and_rows_before_and_after(parts):
    con = connect(threads=2)
    res = con.sql(f"SELECT * FROM pqdb_statistics('{parts}/*.parquet')")
    assert res.columns == COLUMNS
    assert res.types == ["VARCHAR", "BIGINT", "BIGINT", "BIGINT", "VARCHAR", "VARCHAR", "BIGINT",
                         "BIGINT", "BOOLEAN", "BIGINT"]
    before = {r[0]: r for r in res.fetchall()}
    assert list(before) == ["id", "grp", "price", "day", "maybe"]
    assert all(r[1] == 3000 and r[2] is None and r[6] == 0 and r[9] == 0
               for r in before.values())
    con.sql(f"SELECT count(id), count(grp), sum(price), max(day), avg(maybe) "
            f"FROM '{parts}/*.parquet'").fetchall()
    got = statistics_rows(con, f"{parts}/*.parquet")
    print("GOT", got)
    assert abs(got["id"]["distinct_estimate"] - 3000) <= 60 and got["id"]["key_guess"]
    assert got["grp"]["distinct_estimate"] == 7 and not got["grp"]["key_guess"]
    assert (got["price"]["min"], got["price"]["max"]) == ("0.00", "24.75")
    assert (got["day"]["min"], got["day"]["max"]) == ("1970-01-01", "1970-01-30")
    assert got["maybe"]["null_count"] == 750
    assert (got["grp"]["min"], got["grp"]["max"]) == ("g0", "g6")
    assert got["id"]["synopses"] == 9                  # 3 row groups in each of 3 files
    assert all(r["sample_rows"] == 1024 and r["stats_bytes"] > 0 for r in got.values())


def test_filters_and_aliases_work_on_it(parts):
    con = connect()
    con.sql(f"SELECT count(grp) FROM '{parts}/part0.parquet'").fetchall()
    rows = con.sql(f"SELECT s.column_name, s.distinct_estimate FROM "
                   f"pqdb_statistics('{parts}/part0.parquet') s "
                   f"WHERE s.distinct_estimate IS NOT NULL").fetchall()
    assert rows == [("grp", 7)]


def test_bad_arguments():
    con = engine.connect()
    with pytest.raises(engine.Error):
        con.sql("SELECT * FROM pqdb_statistics(42)")
    with pytest.raises(engine.Error):
        con.sql("SELECT * FROM pqdb_statistics('/nonexistent/*.parquet')")


def test_statistics_publish_after_every_file_finished(parts, monkeypatch):
    """The thread that finishes the scan's last morsel publishes only after
    every file's accumulators were merged: a slow merge of one file on the
    other thread used to be published without it (its columns came out
    with no distinct count, now and then)."""
    import threading
    import time

    from stats.collect import TableCollector
    finish = TableCollector.finish_file
    slow = {"done": False}
    lock = threading.Lock()

    def slow_finish(self, i):
        with lock:
            first, slow["done"] = not slow["done"], True
        if first:
            time.sleep(0.3)                     # the other thread finishes meanwhile
        finish(self, i)
    monkeypatch.setattr(TableCollector, "finish_file", slow_finish)
    con = connect(threads=2)
    con.sql(f"SELECT count(id), count(grp) FROM '{parts}/*.parquet'").fetchall()
    got = statistics_rows(con, f"{parts}/*.parquet")
    assert abs(got["id"]["distinct_estimate"] - 3000) <= 60
    assert got["grp"]["distinct_estimate"] == 7 and got["id"]["synopses"] == 9
