"""UUID (logical type on FIXED_LEN_BYTE_ARRAY(16)) and INTERVAL (the
FIXED_LEN_BYTE_ARRAY(12) converted type) columns are read as DuckDB reads
them, not as BLOBs: Python values uuid.UUID and datetime.timedelta (30-day
months, as DuckDB's Python client), DuckDB's text, equality, grouping,
sorting, joins, pruning; arithmetic is refused by name.  Checked against
DuckDB over the same files."""

from __future__ import annotations

import struct
import uuid

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine.errors import PqdbError
from scan import thrift as T
from tests.scan.thrift_writer import rewrite_footer

U = ["00112233-4455-6677-8899-aabbccddeeff", "ffffffff-4455-6677-8899-aabbccddeeff",
     "80000000-0000-0000-0000-000000000000", "7fffffff-ffff-ffff-ffff-ffffffffffff",
     "00000000-0000-0000-0000-000000000000"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("types")
    ids = [uuid.UUID(U[i % 5]) if i % 7 != 6 else None for i in range(40)]
    arr = pa.array([u.bytes if u else None for u in ids], pa.binary(16)).cast(pa.uuid())
    uuids = d / "uuid.parquet"
    pq.write_table(pa.table({"u": arr, "k": list(range(40))}), uuids, row_group_size=10,
                   bloom_filter_options={"u": True})
    vals = [(1, 0, 0), (0, 30, 0), (14, 3, 5), (0, 0, 0), (0, 1, 3_600_000 * 25), None,
            (0, 40, 0), (2**32 - 1, 0, 0)]
    raw = pa.array([None if v is None else struct.pack("<III", *v) for v in vals], pa.binary(12))
    plain = d / "fixed12.parquet"
    pq.write_table(pa.table({"i": raw, "k": list(range(len(vals)))}), plain)
    intervals = d / "interval.parquet"

    def converted(raw):
        raw["schema"][1]["converted_type"] = T.CONVERTED_TYPES.index("INTERVAL")
    rewrite_footer(plain, intervals, converted)
    return {"uuid": uuids, "interval": intervals}


QUERIES = [
    "DESCRIBE SELECT * FROM {uuid}",
    "SELECT * FROM {uuid} ORDER BY k",
    "SELECT u::VARCHAR, typeof(u) FROM {uuid} ORDER BY k",
    "SELECT count(*) FROM {uuid} WHERE u = 'ffffffff-4455-6677-8899-aabbccddeeff'",
    "SELECT count(*) FROM {uuid} WHERE u = '{{00112233-4455-6677-8899-AABBCCDDEEFF}}'",
    "SELECT k FROM {uuid} WHERE u > '7fffffff-ffff-ffff-ffff-ffffffffffff' ORDER BY k",
    "SELECT count(*) FROM {uuid} WHERE u IN ('80000000-0000-0000-0000-000000000000', "
    "'00000000-0000-0000-0000-000000000001')",
    "SELECT u, count(*) FROM {uuid} GROUP BY u ORDER BY u",
    "SELECT u FROM {uuid} ORDER BY u DESC NULLS LAST, k LIMIT 12",
    "SELECT min(u), max(u), count(DISTINCT u) FROM {uuid}",
    "SELECT count(*) FROM {uuid} a JOIN {uuid} b ON a.u = b.u",
    "SELECT u || '!' FROM {uuid} WHERE k < 3 ORDER BY k",
    "DESCRIBE SELECT * FROM {interval}",
    "SELECT * FROM {interval} ORDER BY k",
    "SELECT i::VARCHAR, typeof(i) FROM {interval} ORDER BY k",
    "SELECT count(*) FROM {interval} WHERE i = INTERVAL 30 DAY",
    "SELECT count(*) FROM {interval} WHERE i = INTERVAL 1 MONTH",
    "SELECT k FROM {interval} WHERE i > INTERVAL 35 DAY ORDER BY k",
    "SELECT k FROM {interval} ORDER BY i DESC, k",
    "SELECT i, count(*) FROM {interval} GROUP BY i ORDER BY i",
    "SELECT min(i), max(i), count(DISTINCT i) FROM {interval}",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_like_duckdb(sql, files):
    sql = sql.format(**{k: f"'{v}'" for k, v in files.items()}) if "{" in sql else sql
    r = duckdb.connect().execute(sql)
    want, want_types = r.fetchall(), [str(c[1]) for c in r.description]
    res = engine.connect(config={"threads": 2}).sql(sql)
    assert res.types == want_types
    assert res.fetchall() == want


def test_printed_like_duckdb(files):
    con = engine.connect()
    text = str(con.sql(f"SELECT * FROM '{files['interval']}' ORDER BY k"))
    for shown in ("1 month", "30 days", "1 year 2 months 3 days 00:00:00.005", "00:00:00",
                  "1 day 25:00:00", "40 days", "-1 month"):
        assert shown in text
    text = str(con.sql(f"SELECT u FROM '{files['uuid']}'"))
    assert "ffffffff-4455-6677-8899-aabbccddeeff" in text


def test_pruning_by_uuid_statistics_and_bloom(files):
    con = engine.connect(config={"threads": 1})
    res = con.sql(f"SELECT count(*) FROM '{files['uuid']}' "
                  "WHERE u = '00000000-0000-0000-0000-000000000001'")
    assert res.fetchall() == [(0,)]
    assert res.pruning.row_groups_skipped == 4        # statistics or bloom filter


@pytest.mark.parametrize("sql", [
    "SELECT sum(i) FROM {interval}", "SELECT i + INTERVAL 1 DAY FROM {interval}",
    "SELECT DATE '2000-01-01' + i FROM {interval}", "SELECT u + 1 FROM {uuid}",
    "SELECT upper(u) FROM {uuid}", "SELECT u::BIGINT FROM {uuid}"])
def test_other_operations_are_refused(files, sql):
    with pytest.raises(PqdbError):
        engine.connect().sql(sql.format(**{k: f"'{v}'" for k, v in files.items()})).fetchall()


def test_numpy_and_arrow(files):
    con = engine.connect()
    r = con.sql(f"SELECT u, k FROM '{files['uuid']}' ORDER BY k")
    assert list(r.to_numpy()["u"][:2]) == [uuid.UUID(U[0]), uuid.UUID(U[1])]
    table = r.to_arrow()
    assert table.column("u").to_pylist()[:2] == [uuid.UUID(U[0]).bytes, uuid.UUID(U[1]).bytes]
    table = con.sql(f"SELECT i FROM '{files['interval']}' ORDER BY k").to_arrow()
    assert table.column("i").type == pa.month_day_nano_interval()
    assert table.column("i").to_pylist()[2] == pa.scalar(
        (14, 3, 5_000_000), pa.month_day_nano_interval()).as_py()
