"""Hive partitioning (key=value directories) against DuckDB: DESCRIBE types,
rows, filters on partition columns dropping whole files before any read,
local and over http."""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest

import engine
from tests.http_server import bounded

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def hive_dir(tmp_path_factory):
    """A table partitioned by year (BIGINT), day (DATE), ts (TIMESTAMP),
    code ('01': VARCHAR), ratio (1.5: VARCHAR) and city (URL-encoded,
    with a NULL partition)."""
    root = tmp_path_factory.mktemp("hive")
    con = duckdb.connect()
    parts = [(2023, "2023-01-01", "2023-01-01 10:00:00", "01", "1.5", "New%20York"),
             (2023, "2023-06-01", "2023-06-01 00:00:00", "02", "2", "__HIVE_DEFAULT_PARTITION__"),
             (2024, "2024-01-01", "2024-01-01 10:30:00", "03", "2.5", "Paris")]
    for i, (year, day, ts, code, ratio, city) in enumerate(parts):
        d = os.path.join(root, f"year={year}", f"day={day}", f"ts={ts}", f"code={code}",
                         f"ratio={ratio}", f"city={city}")
        os.makedirs(d)
        con.execute(f"COPY (SELECT range + {i * 1000} AS id, (range % 7)::DOUBLE AS v "
                    f"FROM range(1000)) TO '{d}/data.parquet'")
    return str(root)


def glob_of(root):
    return os.path.join(root, "*", "*", "*", "*", "*", "*", "*.parquet")


def describe(con, sql):
    return [tuple(r[:2]) for r in con.execute(f"DESCRIBE {sql}").fetchall()]


@pytest.mark.parametrize("option", ["", ", hive_partitioning = true"])
def test_types_match_duckdb(hive_dir, option):
    sql = f"SELECT * FROM read_parquet('{glob_of(hive_dir)}'{option})"
    ours = describe(engine.connect(), sql)
    theirs = describe(duckdb.connect(), sql)
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    assert [t for _, t in ours][2:] == [t for _, t in theirs][2:]      # (file columns: int64)
    assert dict(ours)["year"] == "BIGINT" and dict(ours)["day"] == "DATE"
    assert dict(ours)["ts"] == "TIMESTAMP" and dict(ours)["code"] == "VARCHAR"


def test_hive_partitioning_false_has_no_partition_columns(hive_dir):
    sql = f"SELECT * FROM read_parquet('{glob_of(hive_dir)}', hive_partitioning = false)"
    assert [n for n, _ in describe(engine.connect(), sql)] == ["id", "v"]


@pytest.mark.parametrize("where", [
    "", "WHERE year = 2023", "WHERE year > 2023 AND v > 3", "WHERE city = 'New York'",
    "WHERE city IS NULL", "WHERE day >= DATE '2023-06-01'", "WHERE code = '01' OR v = 2",
    "WHERE ts < TIMESTAMP '2024-01-01 00:00:00'", "WHERE year = 1999"])
def test_rows_match_duckdb(hive_dir, where):
    sql = (f"SELECT year, day, ts, code, ratio, city, count(*), sum(id), sum(v) "
           f"FROM read_parquet('{glob_of(hive_dir)}', hive_partitioning = true) {where} "
           "GROUP BY ALL ORDER BY ALL")
    assert engine.connect().sql(sql).fetchall() == duckdb.connect().execute(sql).fetchall()


def test_partition_filter_skips_files_before_any_read(hive_dir):
    con = engine.connect()
    sql = f"SELECT sum(id) FROM read_parquet('{glob_of(hive_dir)}') WHERE year = 2024"
    plan = con.sql(f"EXPLAIN {sql}").fetchall()[0][0]
    assert "files=1" in plan
    r = con.sql(sql)
    assert r.fetchall() == [(sum(range(2000, 3000)),)]


def test_hive_over_http(fault_server, hive_dir):
    urls = []
    for root, _dirs, files in os.walk(hive_dir):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), hive_dir)
            fault_server.add(rel, os.path.join(root, f))
            urls.append(fault_server.url(quote(rel, safe="/=:")))
    urls.sort()
    listed = ", ".join(f"'{u}'" for u in urls)
    con = engine.connect()
    sql = (f"SELECT year, city, count(*) FROM read_parquet([{listed}], hive_partitioning = true) "
           "WHERE year = 2023 GROUP BY ALL ORDER BY ALL")
    fault_server.clear_log()
    got = bounded(lambda: con.sql(sql).fetchall())
    assert got == [(2023, "New York", 1000), (2023, None, 1000)]
    # (the city directory of the NULL partition is __HIVE_DEFAULT_PARTITION__)
    # the 2024 file, ruled out by the filter (and not the first, whose
    # footer gives the schema), is not asked for at all
    assert "Paris" not in urls[0]
    assert [r for r in fault_server.log if "Paris" in r.path] == []


@pytest.mark.parametrize("hive", ["", ", hive_partitioning = true"])
def test_pruned_partitions_get_no_request(fault_server, tmp_path, hive):
    """Ten partitions over http, a filter keeping one: the first file (the
    schema) and the kept one are the only files asked for, with statistics
    on or off; without a filter every file is read."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    urls = []
    for y in range(2010, 2020):
        d = tmp_path / f"year={y}"
        d.mkdir()
        pq.write_table(pa.table({"id": list(range(y * 10, y * 10 + 10))}), d / "p.parquet")
        urls.append(fault_server.add(f"year={y}/p.parquet", str(d / "p.parquet")))
    listed = ", ".join(f"'{u}'" for u in urls)
    for statistics in (True, False):
        con = engine.connect(statistics=statistics)
        fault_server.clear_log()
        sql = f"SELECT sum(id), count(*) FROM read_parquet([{listed}]{hive}) WHERE year = 2015"
        assert bounded(lambda: con.sql(sql).fetchall()) == [(sum(range(20150, 20160)), 10)]
        asked = {r.path.split("/")[1] for r in fault_server.log}
        assert asked == {"year=2010", "year=2015"}, asked
        every = bounded(lambda: con.sql(
            f"SELECT count(*), min(year) FROM read_parquet([{listed}]{hive})").fetchall())
        assert every == [(100, 2010)]
    # the files a scan reads open together, not one round trip each
    fault_server.latency = 0.05
    fault_server.max_in_flight = 0
    con = engine.connect()
    assert bounded(lambda: con.sql(f"SELECT sum(id) FROM read_parquet([{listed}]{hive})")
                   .fetchall()) == [(sum(range(20100, 20200)),)]
    assert fault_server.max_in_flight >= 4, fault_server.max_in_flight


def test_a_partition_with_another_schema_fails_when_read(tmp_path):
    """Files of a hive table past the first are opened when a scan reads
    them: one with other columns is the schema error then, and a filter
    that rules it out never sees it."""
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    for y in (2020, 2021, 2022):
        (tmp_path / f"year={y}").mkdir()
        cols = {"id": [y]} if y != 2022 else {"id": [y], "extra": ["x"]}
        pq.write_table(pa.table(cols), tmp_path / f"year={y}" / "p.parquet")
    con = engine.connect()
    table = f"read_parquet('{tmp_path}/*/*.parquet')"
    assert con.sql(f"SELECT id FROM {table} WHERE year < 2022 ORDER BY 1").fetchall() == \
        [(2020,), (2021,)]
    with pytest.raises(engine.BinderError, match="different schemas"):
        con.sql(f"SELECT id FROM {table} WHERE year = 2022").fetchall()
    with pytest.raises(engine.BinderError, match="different schemas"):
        con.sql(f"SELECT count(*) FROM {table}").fetchall()


def test_hive_over_fsspec_glob(hive_dir):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for root, _dirs, files in os.walk(hive_dir):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), hive_dir)
            with open(os.path.join(root, f), "rb") as src, \
                    fs.open(f"/hive-test/{rel}", "wb") as dst:
                dst.write(src.read())
    sql = ("SELECT year, count(*), sum(id) FROM "
           "read_parquet('memory://hive-test/*/*/*/*/*/*/*.parquet') "
           "WHERE day < DATE '2024-01-01' GROUP BY ALL ORDER BY ALL")
    assert engine.connect().sql(sql).fetchall() == [(2023, 2000, sum(range(2000)))]


def test_count_star_of_pruned_partitions_counts_their_files(tmp_path):
    """count(*) answered from the footers counts only the files partition
    pruning kept (the plan's row_count still counts all of them)."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tests.connections import pqdb_with_views
    for year, n in ((2020, 100), (2021, 250), (2022, 40)):
        d = tmp_path / f"year={year}"
        d.mkdir()
        pq.write_table(pa.table({"x": list(range(n))}), d / "part.parquet", row_group_size=64)
    glob = f"{tmp_path}/*/*.parquet"
    con = pqdb_with_views({}, threads=2)
    for sql in (f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true) "
                "WHERE year = 2021",
                f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true) "
                "WHERE year >= 2021",
                f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)"):
        assert con.sql(sql).fetchall() == duckdb.sql(sql).fetchall(), sql


def test_statistics_of_a_partitioned_table_are_collected(hive_dir):
    """The partition columns are virtual: collecting the file columns'
    statistics beside them (a chunk's dictionary is asked for its file
    columns only) must not give the collection up."""
    con = engine.connect()
    path = glob_of(hive_dir)
    con.sql(f"SELECT year, city, sum(id), sum(v) FROM read_parquet('{path}') "
            "GROUP BY ALL").fetchall()
    got = dict(con.sql(f"SELECT column_name, distinct_estimate FROM pqdb_statistics('{path}')")
               .fetchall())
    assert got["id"] == pytest.approx(3000, rel=0.02) and got["v"] == 7, got
