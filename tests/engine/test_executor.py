"""Executor tests: hand-built logical plans vs DuckDB on the same files."""

from __future__ import annotations

import datetime as dt

import pytest

from engine.errors import MemoryLimitError
from planner import logical as L
from planner import types as T
from tests.engine.test_executor_helpers import (agg, assert_rows_equal, call, duck, lit, ref,
                                                run, scan, write_sample_tables)

CONFIGS = [(1, 65536), (2, 1000), (4, 1000), (2, 777), (2, 1_000_000)]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return write_sample_tables(tmp_path_factory.mktemp("exec"))


def test_plain_scan_keeps_file_order(tables):
    p1, _ = tables
    plan = scan(p1)
    want = duck("SELECT * FROM t1", t1=p1)
    for threads, rows in CONFIGS + [(4, 1)]:
        if rows == 1:
            rows = 64
        assert_rows_equal(run(plan, threads, rows), want, ordered=True)


def test_scan_filter_and_pruning(tables):
    p1, _ = tables
    s = scan(p1)
    # id is sorted: row groups of 700 rows; id between 1000 and 1200 hits one row group
    filters = [call("ge", ref(s, "id"), lit(1000, T.BIGINT)),
               call("le", ref(s, "id"), lit(1200, T.BIGINT)),
               call("is_not_null", ref(s, "s"))]
    plan = scan(p1, filters=filters)
    want = duck("SELECT * FROM t1 WHERE id BETWEEN 1000 AND 1200 AND s IS NOT NULL", t1=p1)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want, ordered=True)
    from engine.operators.scan import ScanSource
    from tests.engine.test_executor_helpers import make_ctx
    src = ScanSource(plan, make_ctx())
    assert len(src.morsels()) == 1 and src.row_groups_pruned == 4


@pytest.mark.parametrize("op,value", [("eq", 699), ("eq", 700), ("lt", 700), ("le", 700),
                                      ("gt", 2099), ("ge", 2100), ("lt", 0), ("gt", 10 ** 6),
                                      ("eq", None)])
def test_pruning_is_exact(tables, op, value):
    p1, _ = tables
    s = scan(p1)
    plan = scan(p1, ["k", "id"])
    plan.filters = [call(op, ref(plan, "id"), lit(value, T.BIGINT))]
    sym = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    v = "NULL" if value is None else value
    want = duck(f"SELECT k, id FROM t1 WHERE id {sym} {v}", t1=p1)
    assert_rows_equal(run(plan, 2, 500), want, ordered=True)


def test_string_and_date_pruning(tables):
    p1, _ = tables
    s = scan(p1)
    day = (dt.date(1995, 6, 1) - dt.date(1970, 1, 1)).days
    plan = scan(p1, ["id", "s", "dt"])
    plan.filters = [call("lt", ref(plan, "dt"), lit(day, T.DATE)),
                    call("ge", ref(plan, "s"), lit("kiwi", T.VARCHAR))]
    want = duck("SELECT id, s, dt FROM t1 WHERE dt < DATE '1995-06-01' AND s >= 'kiwi'", t1=p1)
    assert_rows_equal(run(plan, 2, 1000), want, ordered=True)


def test_filter_project(tables):
    p1, _ = tables
    s = scan(p1)
    f = L.Filter(s, call("gt", ref(s, "k"), lit(25, T.INTEGER)))
    p = L.Project(f, [ref(f, "id"), ref(f, "s"),
                      call("add", ref(f, "id"), lit(1, T.BIGINT), typ=T.BIGINT)],
                  ["id", "s", "id1"])
    want = duck("SELECT id, s, id + 1 FROM t1 WHERE k > 25", t1=p1)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(p, threads, rows), want, ordered=True)


def test_one_row():
    plan = L.Project(L.OneRow(), [lit(42, T.INTEGER)], ["x"])
    assert run(plan) == [(42,)]


@pytest.mark.parametrize("threads,rows", CONFIGS)
def test_group_by_all_aggregates(tables, threads, rows):
    p1, _ = tables
    s = scan(p1)
    aggs = [agg("count_star"), agg("count", ref(s, "f")), agg("sum", ref(s, "d")),
            agg("sum", ref(s, "id")), agg("sum", ref(s, "f")), agg("avg", ref(s, "d")),
            agg("avg", ref(s, "k")), agg("min", ref(s, "s")), agg("max", ref(s, "s")),
            agg("min", ref(s, "dt")), agg("max", ref(s, "f")), agg("min", ref(s, "d")),
            agg("count", ref(s, "s"), distinct=True), agg("sum", ref(s, "k"), distinct=True)]
    plan = L.Aggregate(s, [ref(s, "s"), ref(s, "k")], aggs)
    want = duck("SELECT s, k, count(*), count(f), sum(d), sum(id), sum(f), avg(d), avg(k), "
                "min(s), max(s), min(dt), max(f), min(d), count(DISTINCT s), sum(DISTINCT k) "
                "FROM t1 GROUP BY s, k", t1=p1)
    assert_rows_equal(run(plan, threads, rows), want)


def test_group_by_decimal_date(tables):
    p1, _ = tables
    s = scan(p1)
    plan = L.Aggregate(s, [ref(s, "dt"), ref(s, "d")], [agg("count_star")])
    want = duck("SELECT dt, d, count(*) FROM t1 GROUP BY dt, d", t1=p1)
    assert_rows_equal(run(plan, 2, 1000), want)
    plan = L.Aggregate(s, [ref(s, "f")], [agg("count", ref(s, "id"), distinct=True)])
    want = duck("SELECT f, count(DISTINCT id) FROM t1 GROUP BY f", t1=p1)
    assert_rows_equal(run(plan, 2, 1000), want)


def test_aggregate_no_groups_and_empty(tables):
    p1, _ = tables
    s = scan(p1)
    aggs = [agg("count_star"), agg("sum", ref(s, "d")), agg("min", ref(s, "s")),
            agg("avg", ref(s, "f")), agg("count", ref(s, "k"), distinct=True)]
    plan = L.Aggregate(s, [], aggs)
    want = duck("SELECT count(*), sum(d), min(s), avg(f), count(DISTINCT k) FROM t1", t1=p1)
    assert_rows_equal(run(plan, 4, 1000), want)
    empty = L.Filter(s, call("lt", ref(s, "id"), lit(-1, T.BIGINT)))
    plan = L.Aggregate(empty, [], aggs)
    assert run(plan, 2, 1000) == [(0, None, None, None, 0)]
    plan = L.Aggregate(empty, [ref(s, "k")], aggs)
    assert run(plan, 2, 1000) == []


def test_distinct(tables):
    p1, _ = tables
    s = scan(p1)
    plan = L.Aggregate(s, [ref(s, "s"), ref(s, "k")], [])
    want = duck("SELECT DISTINCT s, k FROM t1", t1=p1)
    assert_rows_equal(run(plan, 2, 500), want)


def test_sum_overflow_is_exact(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    p = str(tmp_path / "big.parquet")
    vals = [2 ** 62, 2 ** 62, 2 ** 62, -5, 2 ** 62, -(2 ** 63)] * 3
    pq.write_table(pa.table({"g": [i % 2 for i in range(len(vals))], "x": vals}), p,
                   row_group_size=4)
    s = scan(p)
    plan = L.Aggregate(s, [ref(s, "g")], [agg("sum", ref(s, "x")), agg("avg", ref(s, "x"))])
    want = duck("SELECT g, sum(x), avg(x) FROM t GROUP BY g", t=p)
    for threads in (1, 2):
        assert_rows_equal(run(plan, threads, 2), want)


def test_sort(tables):
    p1, _ = tables
    s = scan(p1)
    keys = [L.SortKey(ref(s, "s"), True, False), L.SortKey(ref(s, "f"), False, True),
            L.SortKey(ref(s, "id"), True)]
    plan = L.Sort(s, keys)
    want = duck("SELECT * FROM t1 ORDER BY s ASC NULLS LAST, f DESC NULLS FIRST, id", t1=p1)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(plan, threads, rows), want, ordered=True)
    keys = [L.SortKey(ref(s, "d"), False, False), L.SortKey(ref(s, "dt"), True, True),
            L.SortKey(ref(s, "id"), False)]
    want = duck("SELECT * FROM t1 ORDER BY d DESC NULLS LAST, dt NULLS FIRST, id DESC", t1=p1)
    assert_rows_equal(run(L.Sort(s, keys), 2, 1000), want, ordered=True)


def test_limit_offset_and_topn(tables):
    p1, _ = tables
    s = scan(p1)
    want = duck("SELECT * FROM t1 LIMIT 10 OFFSET 695", t1=p1)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(L.Limit(s, 10, 695), threads, rows), want, ordered=True)
    keys = [L.SortKey(ref(s, "k"), False, False), L.SortKey(ref(s, "id"), True)]
    want = duck("SELECT * FROM t1 ORDER BY k DESC NULLS LAST, id LIMIT 25 OFFSET 5", t1=p1)
    for threads, rows in CONFIGS:
        assert_rows_equal(run(L.Limit(L.Sort(s, keys), 25, 5), threads, rows), want,
                          ordered=True)
    assert run(L.Limit(s, 0, 0)) == []
    assert len(run(L.Limit(s, None, 2990), 2, 100)) == 10


def test_memory_limit(tables):
    p1, _ = tables
    s = scan(p1)
    plan = L.Sort(s, [L.SortKey(ref(s, "id"), False)])
    with pytest.raises(MemoryLimitError, match="memory_limit"):
        run(plan, 2, 500, memory_limit=20_000)
    plan = L.Aggregate(s, [ref(s, "id")], [agg("count_star")])
    with pytest.raises(MemoryLimitError):
        run(plan, 1, 500, memory_limit=30_000)


def test_multi_file_scan_matches_columns_by_name(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from engine.errors import FileFormatError
    a, b, c = (str(tmp_path / f"{x}.parquet") for x in "abc")
    pq.write_table(pa.table({"x": [1, 2, 3], "y": ["p", "q", "r"]}), a)
    pq.write_table(pa.table({"y": ["s", "t"], "x": [4, 5]}), b)
    pq.write_table(pa.table({"x": [6]}), c)
    plan = scan([a, b], ["y", "x"])
    assert run(plan, 2, 1000) == [("p", 1), ("q", 2), ("r", 3), ("s", 4), ("t", 5)]
    plan.filters = [call("ge", ref(plan, "x"), lit(3, T.BIGINT))]
    assert run(plan, 1, 1000) == [("r", 3), ("s", 4), ("t", 5)]
    with pytest.raises(FileFormatError, match="'y'"):
        run(scan([a, c], ["y", "x"]))


def test_unsupported_join_kind_and_memory_in_join(tables):
    from engine.errors import UnsupportedFeatureError
    p1, p2 = tables
    a, b = scan(p1, ["id", "k"]), scan(p2, ["k", "v"])
    with pytest.raises(UnsupportedFeatureError, match="asof"):
        run(L.Join(a, b, "asof", [ref(a, "k")], [ref(b, "k")]))
    with pytest.raises(MemoryLimitError):
        run(L.Join(a, b, "inner", [ref(a, "k")], [ref(b, "k")]), 2, 500, memory_limit=10_000)


def test_count_star_without_columns(tables):
    p1, _ = tables
    plan = L.Aggregate(scan(p1, []), [], [agg("count_star")])
    assert run(plan, 2, 1000) == [(3000,)]


@pytest.mark.parametrize("num_rows,morsel_rows", [(6_001_215, 212_000), (1_000_000, 65_536),
                                                   (100_003, 30_000), (50_000, 7_000)])
def test_morsel_cuts_cover_the_row_group_on_page_multiples(tables, num_rows, morsel_rows):
    """Cuts fall on multiples of PAGE_ROWS (where the common writers end
    pages) when morsels hold that many rows; every row lies in one morsel;
    no morsel is larger than asked for."""
    from engine.operators.scan import PAGE_ROWS, ScanSource
    from tests.engine.test_executor_helpers import make_ctx
    p1, _ = tables
    src = ScanSource(scan(p1), make_ctx())
    src.morsel_rows = morsel_rows
    cuts = src._cut("f", 0, [0], num_rows)
    assert [m[3] for m in cuts] == [sum(m[4] for m in cuts[:i]) for i in range(len(cuts))]
    assert sum(m[4] for m in cuts) == num_rows and all(m[5] == num_rows for m in cuts)
    assert max(m[4] for m in cuts) <= morsel_rows
    if morsel_rows >= PAGE_ROWS:
        assert all(m[3] % PAGE_ROWS == 0 for m in cuts)
    assert len(cuts) > 1
