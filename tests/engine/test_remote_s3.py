"""s3:// URLs through fsspec's s3fs against a real S3 API on 127.0.0.1
(moto's server, started here; credentials and endpoint from the
environment, as boto reads them): TPC-H queries give the local rows, a
glob reads every object under a prefix, hive partitions a filter rules
out get no request, a replaced object is read again, a missing one is a
PqdbIOError naming it."""

from __future__ import annotations

import contextlib
import io
import logging
import os

import moto.server as moto_server             # (and s3fs, which fsspec loads for s3://)
import pytest

import engine
from tests.connections import pqdb_with_views, tpch_tables
from tests.http_server import bounded
from tpch.queries import query_text

QUERIES = (1, 3, 6, 12, 14)


@pytest.fixture(scope="module")
def s3(tpch_sf001):
    """(boto3 client, {table: s3 URL}) of a bucket holding TPC-H SF0.01,
    lineitem split in three objects under a prefix."""
    import boto3
    import pyarrow.parquet as pq
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = boto3.client("s3")
        client.create_bucket(Bucket="lake")
        urls = {}
        for table, path in tpch_tables(tpch_sf001).items():
            if table == "lineitem":
                t = pq.read_table(path)
                step = -(-t.num_rows // 3)
                for part in range(3):
                    buf = io.BytesIO()
                    pq.write_table(t.slice(part * step, step), buf, row_group_size=5000)
                    client.put_object(Bucket="lake", Key=f"tpch/lineitem/{part}.parquet",
                                      Body=buf.getvalue())
                urls[table] = "s3://lake/tpch/lineitem/*.parquet"
            else:
                client.upload_file(path, "lake", f"tpch/{table}.parquet")
                urls[table] = f"s3://lake/tpch/{table}.parquet"
        yield client, urls
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_tpch_queries_give_the_local_rows(s3, tpch_sf001):
    _, urls = s3
    local = pqdb_with_views(tpch_tables(tpch_sf001), threads=2)
    remote = bounded(lambda: pqdb_with_views(urls, threads=2))
    for q in QUERIES:
        sql = query_text(q)
        first = bounded(lambda: remote.sql(sql))
        assert first.fetchall() == local.sql(sql).fetchall(), q
        assert first.io["requests"] > 0
        again = bounded(lambda: remote.sql(sql))            # from the cache
        assert again.fetchall() == local.sql(sql).fetchall(), q
        assert again.io["bytes_fetched"] == 0, q
    remote.close()


class _Paths(logging.Handler):
    """The paths of the requests moto's server logs (werkzeug's access log:
    '"GET /lake/key HTTP/1.1" 206 -')."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.paths: list[str] = []

    def emit(self, record) -> None:
        parts = record.getMessage().split('"')
        if len(parts) > 1 and len(parts[1].split()) == 3:
            self.paths.append(parts[1].split()[1].split("?")[0])


@contextlib.contextmanager
def served_paths():
    log = logging.getLogger("werkzeug")
    handler, level = _Paths(), log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield handler.paths
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def _put(client, key: str, table) -> None:
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=max(table.num_rows // 3, 1))
    client.put_object(Bucket="lake", Key=key, Body=buf.getvalue())


def test_hive_partitions_a_filter_rules_out_get_no_request(s3):
    import pyarrow as pa
    client, _ = s3
    for part in range(6):
        _put(client, f"hive/part={part}/data.parquet",
             pa.table({"x": list(range(100)), "y": [part * 1.5] * 100}))
    src = "read_parquet('s3://lake/hive/*/*.parquet', hive_partitioning = true)"
    with served_paths() as paths:
        one = bounded(lambda: engine.connect().sql(
            f"SELECT count(*), sum(x), min(y) FROM {src} WHERE part = 4").fetchall())
    assert one == [(100, 4950, 6.0)]
    # the first file gives the schema, part=4 the rows: no other object is asked for
    assert {p for p in paths if "/hive/part=" in p} == \
        {"/lake/hive/part=0/data.parquet", "/lake/hive/part=4/data.parquet"}
    with served_paths() as paths:
        every = bounded(lambda: engine.connect().sql(
            f"SELECT part, count(*) FROM {src} GROUP BY 1 ORDER BY 1").fetchall())
    assert every == [(p, 100) for p in range(6)]
    assert len({p for p in paths if "/hive/part=" in p}) == 6


def test_replaced_object_is_read_again(s3):
    import pyarrow as pa
    client, _ = s3
    _put(client, "swap/f.parquet", pa.table({"v": [1] * 1000}))
    con = engine.connect()
    q = "SELECT count(*), sum(v) FROM read_parquet('s3://lake/swap/*.parquet')"
    assert bounded(lambda: con.sql(q).fetchall()) == [(1000, 1000)]
    _put(client, "swap/f.parquet", pa.table({"v": [7] * 5000}))
    assert bounded(lambda: con.sql(q).fetchall()) == [(5000, 35000)]
    assert bounded(lambda: con.sql("SELECT sum(v) FROM 's3://lake/swap/f.parquet'")
                   .fetchall()) == [(35000,)]


def test_missing_object_names_it(s3):
    con = engine.connect()
    with pytest.raises(engine.PqdbIOError, match="s3://lake/nope.parquet"):
        bounded(lambda: con.sql("SELECT * FROM 's3://lake/nope.parquet'"))
    with pytest.raises(engine.PqdbIOError, match="No files found"):
        bounded(lambda: con.sql("SELECT * FROM 's3://lake/none/*.parquet'"))
