"""Randomized joins and aggregations (hypothesis) against DuckDB, with
random thread counts and block sizes."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings, strategies as st

from planner import logical as L
from tests.engine.test_executor_helpers import agg, assert_rows_equal, duck, ref, run, scan

_key = st.one_of(st.none(), st.integers(-3, 3))
_str = st.one_of(st.none(), st.sampled_from(["", "a", "b", "a-long-string-over-12", "é"]))
_rows = st.lists(st.tuples(_key, _str, st.integers(-10**12, 10**12)), max_size=40)


def _write(dirname, name, rows, group_size):
    path = f"{dirname}/{name}.parquet"
    t = pa.table({"k": pa.array([r[0] for r in rows], pa.int32()),
                  "s": pa.array([r[1] for r in rows], pa.string()),
                  "v": pa.array([r[2] for r in rows], pa.int64())})
    pq.write_table(t, path, row_group_size=group_size)
    return path


@settings(max_examples=25, deadline=None)
@given(_rows, _rows, st.sampled_from(["inner", "left", "right", "full", "semi", "anti"]),
       st.integers(1, 4), st.sampled_from([1000, 7, 1]), st.integers(1, 9))
def test_random_join(left, right, kind, threads, block_rows, group_size):
    with tempfile.TemporaryDirectory() as d:
        a_path = _write(d, "a", left, group_size)
        b_path = _write(d, "b", right, group_size)
        a, b = scan(a_path), scan(b_path)
        plan = L.Join(a, b, kind, [ref(a, "k"), ref(a, "s")], [ref(b, "k"), ref(b, "s")])
        cols = "a.*" if kind in ("semi", "anti") else "a.*, b.*"
        want = duck(f"SELECT {cols} FROM a {kind.upper()} JOIN b ON a.k = b.k AND a.s = b.s",
                    a=a_path, b=b_path)
        assert_rows_equal(run(plan, threads, block_rows), want)


@settings(max_examples=25, deadline=None)
@given(_rows, st.integers(1, 4), st.sampled_from([1000, 3]), st.integers(1, 9))
def test_random_group_by(rows, threads, block_rows, group_size):
    with tempfile.TemporaryDirectory() as d:
        path = _write(d, "t", rows, group_size)
        s = scan(path)
        plan = L.Aggregate(s, [ref(s, "s"), ref(s, "k")],
                           [agg("count_star"), agg("sum", ref(s, "v")), agg("min", ref(s, "s")),
                            agg("max", ref(s, "v")), agg("count", ref(s, "v"), distinct=True),
                            agg("avg", ref(s, "v"))])
        want = duck("SELECT s, k, count(*), sum(v), min(s), max(v), count(DISTINCT v), avg(v) "
                    "FROM t GROUP BY s, k", t=path)
        assert_rows_equal(run(plan, threads, block_rows), want)


@settings(max_examples=25, deadline=None)
@given(_rows, st.booleans(), st.booleans(), st.integers(1, 4), st.sampled_from([1000, 2]),
       st.one_of(st.none(), st.integers(0, 10)), st.integers(0, 3))
def test_random_sort_limit(rows, asc, nulls_first, threads, block_rows, limit, offset):
    with tempfile.TemporaryDirectory() as d:
        path = _write(d, "t", rows, 5)
        s = scan(path)
        keys = [L.SortKey(ref(s, "s"), asc, nulls_first), L.SortKey(ref(s, "k"), not asc),
                L.SortKey(ref(s, "v"), True)]
        plan = L.Sort(s, keys)
        if limit is not None:
            plan = L.Limit(plan, limit, offset)
        order = (f"s {'ASC' if asc else 'DESC'} NULLS {'FIRST' if nulls_first else 'LAST'}, "
                 f"k {'DESC' if asc else 'ASC'} NULLS LAST, v")
        tail = "" if limit is None else f" LIMIT {limit} OFFSET {offset}"
        want = duck(f"SELECT * FROM t ORDER BY {order}{tail}", t=path)
        got = run(plan, threads, block_rows)
        assert_rows_equal(got, want, ordered=True)     # (s, k, v) orders rows totally
