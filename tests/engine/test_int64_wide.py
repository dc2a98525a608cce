"""Wide values (DECIMAL(38, s), HUGEINT) held as int64 while they fit
(engine.block.Int64WideVector): sums, comparisons, sort keys, row selection,
arithmetic and casts on them against DuckDB, with NULL groups and with sums
past int64, where every path must fall back to exact Python ints."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.block import Int64WideVector, Vector, concat_vectors, int64_values, take_vector
from engine.expr.arith import arithmetic, compare
from engine.expr.cast import cast_vector
from engine.operators.accumulators import make_accumulator
from engine.operators.filter import select_vector
from planner import types as T
from planner.logical import AggregateCall
from planner.expressions import ColumnRef
from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_rows_equal, duck

N = 30_000
BIG = 9 * 10 ** 17          # 40 of these in one group pass int64


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(5)
    g = rng.integers(0, 4_000, N)
    g[:200] = np.arange(200) % 5                # groups 0..4: 40 rows and more each
    d = [None if rng.random() < 0.05 else decimal.Decimal(int(x)).scaleb(-2)
         for x in rng.integers(-10 ** 7, 10 ** 7, N)]
    # column h: huge values in the first rows (groups 0..4), whose sums pass int64
    h = [decimal.Decimal(BIG if r < 200 else int(x)).scaleb(-2)
         for r, x in enumerate(rng.integers(0, 1000, N).tolist())]
    i = rng.integers(-10 ** 9, 10 ** 9, N)
    t = pa.table({
        "g": pa.array(g, pa.int64()),
        "d": pa.array(d, pa.decimal128(15, 2)),
        "h": pa.array(h, pa.decimal128(18, 2)),
        "i": pa.array(i, pa.int64()),
        "nullgrp": pa.array([None if x % 7 == 0 else 1 for x in g.tolist()], pa.int32()),
    })
    path = str(tmp_path_factory.mktemp("int64wide") / "t.parquet")
    pq.write_table(t, path, row_group_size=5000)
    return path


QUERIES = [
    # HAVING on a wide sum against a literal and against another wide sum
    "SELECT g, sum(d) FROM t GROUP BY g HAVING sum(d) > 3000",
    "SELECT g, sum(d), sum(i) FROM t GROUP BY g HAVING sum(d) * 100 >= sum(i) / 1000",
    # groups whose every d is NULL sum to NULL; the order puts them first/last
    "SELECT g % 50 AS k, sum(CASE WHEN g % 50 = 3 THEN NULL ELSE d END) AS s "
    "FROM t GROUP BY k ORDER BY s DESC NULLS LAST, k",
    "SELECT g, sum(d) AS s FROM t GROUP BY g ORDER BY s, g LIMIT 25",
    # arithmetic and casts on wide sums (Q20's 0.5 * sum, Q11's threshold)
    "SELECT g, 0.5 * sum(d), sum(d) + sum(d), sum(d) - 1, CAST(sum(d) AS DECIMAL(38, 5)), "
    "CAST(sum(d) AS DOUBLE) FROM t GROUP BY g",
    "SELECT g FROM t GROUP BY g HAVING sum(d) > (SELECT sum(d) * 0.0001 FROM t)",
    # sums past int64 in some groups: exact Python ints, compared and ordered
    "SELECT g, sum(h) FROM t GROUP BY g HAVING sum(h) > 100",
    "SELECT g, sum(h) AS s, sum(h) * 2, sum(h) - sum(h) FROM t GROUP BY g ORDER BY s DESC, g LIMIT 20",
    # BIGINT sums are HUGEINT; overflowing products go exact
    "SELECT g % 10 AS k, sum(i), sum(i) * 1000000000, sum(i) + 1 FROM t GROUP BY k",
    # a wide sum as a join key and as a group key
    "SELECT a.g, b.g FROM (SELECT g, sum(d) AS s FROM t GROUP BY g) a "
    "JOIN (SELECT g, sum(d) AS s FROM t GROUP BY g) b ON a.s = b.s WHERE a.g < 200",
    "SELECT s, count(*) FROM (SELECT g % 100 AS k, sum(d) AS s FROM t GROUP BY k) GROUP BY s",
    "SELECT nullgrp, sum(d), min(sum(d)) OVER () FROM t GROUP BY nullgrp",
    # sums and averages of wide products held as int64 (Q9's amount), with
    # sums carried past int64 (h * 10) and products past it (h * 1000: exact)
    "SELECT g % 20 AS k, sum(d * d), avg(d * d), sum(CAST(h AS DECIMAL(30, 2)) * 10), "
    "avg(CAST(h AS DECIMAL(30, 2)) * 10), count(*) FROM t GROUP BY k",
    "SELECT g % 3 AS k, sum(CAST(h AS DECIMAL(30, 2)) * 1000), "
    "avg(CAST(h AS DECIMAL(30, 2)) * 1000), sum(d * i - d) FROM t GROUP BY k",
    "SELECT sum(d * i), avg(d * i), sum(CAST(h AS DECIMAL(30, 2)) * 10) FROM t",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("threads", [1, 2])
def test_wide_sums_match_duckdb(table, sql, threads):
    want = duck(sql, t=table)
    con = pqdb_with_views({"t": table}, threads=threads, block_rows=4096)
    got = con.sql(sql).fetchall()
    assert_rows_equal(got, want, ordered="ORDER BY" in sql)


def test_parallel_top_n_gathers_wide_sums(tmp_path):
    """The sort's parallel gather (more than 2 x 65536 rows) keeps the int64
    form and its values."""
    n = 300_000
    rng = np.random.default_rng(9)
    path = str(tmp_path / "w.parquet")
    pq.write_table(pa.table({"g": pa.array(np.arange(n) % 200_000),
                             "d": pa.array([decimal.Decimal(int(x)).scaleb(-2)
                                            for x in rng.integers(-10 ** 9, 10 ** 9, n)],
                                           pa.decimal128(15, 2))}), path)
    sql = "SELECT g, sum(d) AS s FROM t GROUP BY g ORDER BY s DESC, g"
    want = duck(sql, t=path)
    con = pqdb_with_views({"t": path}, threads=2)
    assert_rows_equal(con.sql(sql).fetchall(), want, ordered=True)


# ---------------------------------------------------------------- unit level

D38 = T.DECIMAL(38, 2)


def test_data_is_a_read_only_object_array_of_the_same_values():
    v = Int64WideVector(D38, np.array([5, -(2 ** 63), 2 ** 63 - 1], np.int64))
    assert v.data.dtype == object and v.data.tolist() == [5, -(2 ** 63), 2 ** 63 - 1]
    assert type(v.data[0]) is int
    with pytest.raises(ValueError):
        v.data[0] = 1                     # a stale ints could disagree: refused
    assert len(v) == 3 and int64_values(v) is v.ints


def test_selection_slicing_and_concat_keep_the_int64_form():
    v = Int64WideVector(D38, np.arange(6, dtype=np.int64), np.array([0, 1, 0, 0, 1, 0], np.uint8))
    taken = take_vector(v, np.array([4, 0, 1]))
    assert isinstance(taken, Int64WideVector) and taken.ints.tolist() == [4, 0, 1]
    assert taken.nulls.tolist() == [1, 0, 1]
    kept = select_vector(v, np.array([True, False, True, True, False, False]))
    assert isinstance(kept, Int64WideVector) and kept.nulls is None
    assert kept.ints.tolist() == [0, 2, 3]
    both = concat_vectors([v.slice(0, 2), v.slice(4, 6)])
    assert isinstance(both, Int64WideVector) and both.ints.tolist() == [0, 1, 4, 5]
    assert both.nulls.tolist() == [0, 1, 1, 0]
    mixed = concat_vectors([v.slice(0, 1), Vector(D38, np.array([2 ** 70], object))])
    assert not isinstance(mixed, Int64WideVector) and mixed.data.tolist() == [0, 2 ** 70]


def test_sum_finalize_is_int64_until_a_carry():
    call = AggregateCall("sum", ColumnRef(0, T.DECIMAL(15, 2)), False, D38)
    acc = make_accumulator(call, T.DECIMAL(15, 2))
    gid = np.array([0, 0, 1, 2], np.int64)
    acc.update(gid, Vector(T.DECIMAL(15, 2), np.array([2 ** 62, 2 ** 62, 5, 7], np.int64),
                           np.array([0, 0, 0, 1], np.uint8)), 3)
    out = acc.finalize(3)
    assert not isinstance(out, Int64WideVector)            # group 0 passed int64: exact
    assert out.data.tolist()[:2] == [2 ** 63, 5] and out.nulls.tolist() == [0, 0, 1]
    acc = make_accumulator(call, T.DECIMAL(15, 2))
    acc.update(gid, Vector(T.DECIMAL(15, 2), np.array([-3, 4, 5, 7], np.int64)), 3)
    out = acc.finalize(3)
    assert isinstance(out, Int64WideVector) and out.ints.tolist() == [1, 5, 7]


def test_arithmetic_and_casts_fall_back_to_exact_on_overflow():
    big = Int64WideVector(D38, np.array([2 ** 62, 3], np.int64))
    doubled = arithmetic("add", [big, big], D38)
    assert not isinstance(doubled, Int64WideVector)
    assert doubled.data.tolist() == [2 ** 63, 6]
    small = arithmetic("mul", [Int64WideVector(D38, np.array([7, -2], np.int64)),
                               Vector(T.INTEGER, np.array([3, 4], np.int32))], D38)
    assert isinstance(small, Int64WideVector) and small.ints.tolist() == [21, -8]
    up = cast_vector(big, T.DECIMAL(38, 5))
    assert not isinstance(up, Int64WideVector) and up.data.tolist() == [2 ** 62 * 1000, 3000]
    up = cast_vector(Vector(T.DECIMAL(15, 2), np.array([1, -2], np.int64),
                            np.array([0, 1], np.uint8)), T.DECIMAL(38, 4))
    assert isinstance(up, Int64WideVector) and up.ints.tolist()[0] == 100
    assert up.nulls.tolist() == [0, 1]
    eq = compare("gt", Int64WideVector(D38, np.array([1, 5], np.int64)),
                 Vector(D38, np.array([2 ** 70, 2], object)))
    assert eq.data.tolist() == [False, True]


@pytest.mark.parametrize("scales", [(2, 12), (12, 2), (0, 18), (3, 3), (0, 5)])
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_across_scales_are_exact(scales, op):
    """x (scale sa) op y (scale sb) on int64 without a common type, against
    exact fractions; values near multiples of the scale factor, negative
    ones and the int64 extremes."""
    from fractions import Fraction
    sa, sb = scales
    rng = np.random.default_rng(sa * 100 + sb)
    f = 10 ** abs(sa - sb)
    base = rng.integers(-10 ** 6, 10 ** 6, 400, dtype=np.int64)
    x = np.concatenate([base, [2 ** 63 - 1, -(2 ** 63), 0, 1, -1]]).astype(np.int64)
    near = base * (f if sa < sb else 1) + rng.integers(-2, 3, 400)
    y = np.concatenate([near, [0, 0, 2 ** 63 - 1, -(2 ** 63), -1]]).astype(np.int64)
    a = Int64WideVector(T.DECIMAL(38, sa), x) if sa else Vector(T.BIGINT, x)
    b = Vector(T.DECIMAL(18, sb), y) if sb else Vector(T.BIGINT, y)
    got = compare(op, a, b).data.tolist()
    py = {"eq": lambda p, q: p == q, "ne": lambda p, q: p != q, "lt": lambda p, q: p < q,
          "le": lambda p, q: p <= q, "gt": lambda p, q: p > q, "ge": lambda p, q: p >= q}[op]
    want = [py(Fraction(int(p), 10 ** sa), Fraction(int(q), 10 ** sb))
            for p, q in zip(x.tolist(), y.tolist())]
    assert got == want


def test_compare_skips_only_casts_that_cannot_fail(tmp_path):
    """CAST(sum AS DECIMAL(38,12)) > t is compared on int64; a narrowing
    cast in a comparison still raises its overflow error."""
    path = str(tmp_path / "c.parquet")
    pq.write_table(pa.table({"d": pa.array([decimal.Decimal("12345678901234.56"),
                                            decimal.Decimal("-1.05")], pa.decimal128(16, 2))}),
                   path)
    con = pqdb_with_views({"t": path})
    for sql in ["SELECT sum(d) FROM t HAVING CAST(sum(d) AS DECIMAL(38,12)) > 1.000000000001",
                "SELECT d FROM t WHERE CAST(d AS DECIMAL(30,14)) >= -1.05",
                "SELECT d FROM t WHERE CAST(d AS DECIMAL(38,20)) < 0"]:
        assert_rows_equal(con.sql(sql).fetchall(), duck(sql, t=path), ordered=False)
    from engine.errors import PqdbError
    with pytest.raises(PqdbError):
        con.sql("SELECT d FROM t WHERE CAST(d AS DECIMAL(10,2)) > 0").fetchall()


def test_min_max_and_join_keys_over_int64_held_sums(table):
    """min/max over wide sums fold per group on int64 first; a wide sum as a
    hash key hashes like the Python int it stands for (Q15's join on the
    maximum revenue), including sums past int64 on one side."""
    con = pqdb_with_views({"t": table}, threads=2, block_rows=4096)
    for sql in [
        "SELECT g % 7 AS k, max(s), min(s) FROM (SELECT g, sum(d) AS s FROM t GROUP BY g) "
        "GROUP BY k",
        "SELECT max(s), min(s) FROM (SELECT g, sum(h) AS s FROM t GROUP BY g)",
        "WITH r AS (SELECT g, sum(d) AS s FROM t GROUP BY g) "
        "SELECT g, s FROM r WHERE s = (SELECT max(s) FROM r)",
        "WITH r AS (SELECT g, sum(h) AS s FROM t GROUP BY g) "
        "SELECT a.g, b.g FROM r a JOIN r b ON a.s = b.s - 0 WHERE a.g < 300",
        # int64-held keys on one side, Python ints (a value past int64 in the
        # union) on the other: both hash alike
        "WITH r AS (SELECT g, sum(d) AS s FROM t GROUP BY g), "
        "u AS (SELECT g, s FROM r UNION ALL "
        "SELECT -1, CAST(99999999999999999999999999.99 AS DECIMAL(38,2))) "
        "SELECT r.g, u.g FROM r JOIN u ON r.s = u.s",
        "WITH r AS (SELECT g, sum(d) AS s FROM t GROUP BY g), "
        "u AS (SELECT g, s FROM r UNION ALL "
        "SELECT -1, CAST(99999999999999999999999999.99 AS DECIMAL(38,2))) "
        "SELECT s, count(*) FROM u GROUP BY s HAVING count(*) > 0",
    ]:
        assert_rows_equal(con.sql(sql).fetchall(), duck(sql, t=table), ordered=False)
