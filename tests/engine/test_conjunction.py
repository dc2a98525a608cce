"""Conjunction (engine/filtering/conjunction.py): comparisons checked by the
predicate kernels give exactly the expression evaluator's mask (NULL and
FALSE drop a row), for every operator, constant side, storage width and
NULL pattern; what the kernels cannot take falls back to the evaluator;
and SQL filters over Parquet match DuckDB at 1 and 2 threads."""

from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from engine.block import Block, Int64WideVector, Vector
from engine.expr import evaluate_predicate
from engine.kernels.predicates import OPS
from engine.filtering.conjunction import Conjunction
from planner import types as T
from planner.expressions import Call, ColumnRef, Literal
from tests.connections import pqdb_with_views

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _vector(typ, values, nulls):
    data = np.array(values, dtype=typ.numpy_dtype)
    return Vector(typ, data, None if nulls is None else np.array(nulls, np.uint8))


def _expected(exprs, block):
    mask = np.ones(block.n, np.bool_)
    for e in exprs:
        mask &= np.asarray(evaluate_predicate(e, block), dtype=bool)
    return mask


def _check(exprs, block, leaves=None):
    conj = Conjunction(exprs)
    if leaves is not None:
        assert len(conj.leaves) == leaves
    mask, kept = conj.mask(block)
    want = _expected(exprs, block)
    assert kept == int(want.sum())
    if kept:                                  # with no row left the mask may be partial
        assert np.array_equal(mask, want)


@st.composite
def _column(draw, typ, bounds, n):
    values = draw(st.lists(st.integers(*bounds), min_size=n, max_size=n))
    nulls = draw(st.one_of(st.none(), st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return _vector(typ, values, nulls)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from([(T.INTEGER, _INT32), (T.BIGINT, _INT64), (T.DATE, _INT32)]),
       st.sampled_from(sorted(OPS)), st.booleans(), st.integers(0, 40))
def test_column_against_constant(data, typ_bounds, op, constant_first, n):
    typ, bounds = typ_bounds
    col = data.draw(_column(typ, bounds, n))
    small = st.integers(-5, 5) if typ.id != "DATE" else st.integers(-3, 3)
    wide = st.integers(*bounds)
    value = data.draw(st.one_of(small, wide))
    if n:                                     # often a value the column holds
        value = data.draw(st.one_of(st.just(int(col.data[0])), st.just(value)))
    lit = Literal(value, typ)
    ref = ColumnRef(0, typ)
    expr = Call(op, [lit, ref] if constant_first else [ref, lit], T.BOOLEAN)
    _check([expr], Block([col], n), leaves=1)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(sorted(OPS)), st.integers(0, 40),
       st.sampled_from([(T.INTEGER, T.INTEGER), (T.BIGINT, T.INTEGER), (T.DATE, T.DATE),
                        (T.DECIMAL(15, 2), T.DECIMAL(12, 2))]))
def test_column_against_column(data, op, n, types):
    ta, tb = types
    a = data.draw(_column(ta, (-4, 4), n))
    b = data.draw(_column(tb, (-4, 4), n))
    expr = Call(op, [ColumnRef(0, ta), ColumnRef(1, tb)], T.BOOLEAN)
    _check([expr], Block([a, b], n), leaves=1)


@settings(max_examples=80, deadline=None)
@given(st.data(), st.integers(1, 60))
def test_mixed_conjunction_with_general_conjuncts(data, n):
    """Kernel comparisons, nested ANDs and string conjuncts in one filter."""
    a = data.draw(_column(T.BIGINT, (-3, 3), n))
    d = data.draw(_column(T.DATE, (0, 6), n))
    words = data.draw(st.lists(st.sampled_from(["x", "y", "long string value"]),
                               min_size=n, max_size=n))
    from engine.convert import strings_to_vector
    s = strings_to_vector(words, T.VARCHAR)
    block = Block([a, d, s], n)
    lo, hi = data.draw(st.integers(-3, 3)), data.draw(st.integers(0, 6))
    exprs = [
        Call("and", [Call("ge", [ColumnRef(0, T.BIGINT), Literal(lo, T.BIGINT)], T.BOOLEAN),
                     Call("eq", [ColumnRef(2, T.VARCHAR), Literal("x", T.VARCHAR)],
                          T.BOOLEAN)], T.BOOLEAN),
        Call("lt", [ColumnRef(1, T.DATE), Literal(hi, T.DATE)], T.BOOLEAN),
    ]
    _check(exprs, block, leaves=2)


def test_decimal_scales_differ_use_the_evaluator():
    """DECIMAL(15,2) against DECIMAL(15,3): storage integers do not compare;
    the evaluator decides (exactly)."""
    a = _vector(T.DECIMAL(15, 2), [150, 151, -7], None)
    b = _vector(T.DECIMAL(15, 3), [1500, 1500, -70], None)
    for op in OPS:
        _check([Call(op, [ColumnRef(0, a.type), ColumnRef(1, b.type)], T.BOOLEAN)],
               Block([a, b], 3), leaves=0)
    _check([Call("lt", [ColumnRef(0, a.type), Literal(1505, T.DECIMAL(15, 3))], T.BOOLEAN)],
           Block([a], 3), leaves=0)


def test_wide_values_at_run_time_use_the_evaluator():
    """A column typed for the kernels that arrives as an Int64WideVector (or
    as object values) is checked by the evaluator instead."""
    typ = T.DECIMAL(15, 2)
    wide = Int64WideVector(typ, np.array([5, 7, 9], np.int64), np.array([0, 1, 0], np.uint8))
    expr = Call("gt", [ColumnRef(0, typ), Literal(6, typ)], T.BOOLEAN)
    _check([expr], Block([wide], 3), leaves=1)


def test_null_constant_and_empty_block():
    expr = Call("eq", [ColumnRef(0, T.BIGINT), Literal(None, T.BIGINT)], T.BOOLEAN)
    _check([expr], Block([_vector(T.BIGINT, [1, 2], None)], 2), leaves=0)
    _check([Call("lt", [ColumnRef(0, T.BIGINT), Literal(3, T.BIGINT)], T.BOOLEAN)],
           Block([_vector(T.BIGINT, [], None)], 0), leaves=1)
    mask, kept = Conjunction([]).mask(Block([_vector(T.BIGINT, [4, 5], None)], 2))
    assert kept == 2 and mask.all()


@pytest.fixture(scope="module")
def filter_file(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 50_000
    base = dt.date(1994, 1, 1)
    def with_nulls(values, every):
        return [None if i % every == 0 else v for i, v in enumerate(values)]
    table = pa.table({
        "i": pa.array(with_nulls(rng.integers(-50, 50, n).tolist(), 13), pa.int32()),
        "b": pa.array(with_nulls(rng.integers(-10**12, 10**12, n).tolist(), 17), pa.int64()),
        "d1": pa.array(with_nulls([base + dt.timedelta(days=int(x))
                                   for x in rng.integers(0, 700, n)], 11), pa.date32()),
        "d2": pa.array([base + dt.timedelta(days=int(x)) for x in rng.integers(0, 700, n)],
                       pa.date32()),
        "p": pa.array([None if i % 19 == 0 else decimal.Decimal(int(x)).scaleb(-2)
                       for i, x in enumerate(rng.integers(0, 10000, n))], pa.decimal128(12, 2)),
        "s": pa.array(rng.choice(["MAIL", "SHIP", "AIR"], n).tolist()),
    })
    path = tmp_path_factory.mktemp("conjunction") / "f.parquet"
    pq.write_table(table, path, row_group_size=7_000, data_page_size=4096)
    return str(path)


_QUERIES = [
    "SELECT count(*), sum(i) FROM t WHERE i >= -5 AND i < 20",
    "SELECT count(*) FROM t WHERE b > 0 AND b <= 500000000000 AND i <> 3",
    "SELECT count(*) FROM t WHERE d1 < d2 AND d2 >= DATE '1994-06-01' AND d2 < DATE '1995-01-01'",
    "SELECT count(*), sum(p) FROM t WHERE p BETWEEN 10.25 AND 20.5 AND s IN ('MAIL', 'SHIP')",
    "SELECT count(*) FROM t WHERE 7 > i AND DATE '1994-03-01' <= d1",
    "SELECT count(*) FROM t WHERE i = 2147483647 OR i < -40",
    "SELECT i, d1 FROM t WHERE i > 48 AND d1 <> DATE '1994-01-05' ORDER BY ALL",
    "SELECT count(*) FROM t WHERE b < -9223372036854775807",
    "SELECT count(*) FROM (SELECT i + 1 AS j, d1 FROM t) WHERE j < 0 AND d1 > DATE '1995-01-01'",
]


def _assert_matches_duckdb(path, sql, threads):
    con = pqdb_with_views({"t": path}, threads=threads)
    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{path}')")
    assert con.sql(sql).fetchall() == duck.execute(sql).fetchall()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sql", _QUERIES)
def test_sql_filters_match_duckdb(filter_file, sql, threads):
    _assert_matches_duckdb(filter_file, sql, threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_few_survivors_keep_coded_strings(filter_file, threads):
    """Under 1/8 of the rows survive: the restricted columns (a dictionary-
    coded string among them) keep their rows by index; grouping on the
    string then uses its codes."""
    sql = ("SELECT s, count(*), sum(i) FROM t WHERE i > 44 AND s <> 'AIR' "
           "AND d2 < DATE '1995-06-01' GROUP BY s ORDER BY s")
    _assert_matches_duckdb(filter_file, sql, threads)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(0, 40), st.sampled_from([(T.BIGINT, _INT64), (T.INTEGER, _INT32)]))
def test_or_of_ranges_on_one_column(data, n, typ_bounds):
    """OR of ANDs of comparisons with constants on one column (intervals,
    empty ones, the int64 edges) against the evaluator."""
    typ, bounds = typ_bounds
    col = data.draw(_column(typ, (-6, 6), n))
    consts = st.one_of(st.integers(-7, 7), st.sampled_from(bounds))
    ops = st.sampled_from(["eq", "lt", "le", "gt", "ge"])
    branches = data.draw(st.lists(st.lists(st.tuples(ops, consts), min_size=1, max_size=3),
                                  min_size=1, max_size=4))
    ref = ColumnRef(0, typ)

    def cmp(op, v):
        return Call(op, [ref, Literal(v, typ)], T.BOOLEAN)
    args = [cmp(*b[0]) if len(b) == 1 else Call("and", [cmp(*x) for x in b], T.BOOLEAN)
            for b in branches]
    expr = Call("or", args, T.BOOLEAN) if len(args) > 1 else Call("or", args * 2, T.BOOLEAN)
    conj = Conjunction([expr])
    assert len(conj.ranges) == 1
    _check([expr], Block([col], n))


def test_or_with_a_not_equal_or_two_columns_uses_the_evaluator():
    a, b = ColumnRef(0, T.BIGINT), ColumnRef(1, T.BIGINT)
    ne = Call("or", [Call("ne", [a, Literal(1, T.BIGINT)], T.BOOLEAN),
                     Call("eq", [a, Literal(2, T.BIGINT)], T.BOOLEAN)], T.BOOLEAN)
    two = Call("or", [Call("eq", [a, Literal(1, T.BIGINT)], T.BOOLEAN),
                      Call("eq", [b, Literal(2, T.BIGINT)], T.BOOLEAN)], T.BOOLEAN)
    block = Block([_vector(T.BIGINT, [1, 2, 3], [0, 0, 1]), _vector(T.BIGINT, [2, 2, 2], None)],
                  3)
    for e in (ne, two):
        conj = Conjunction([e])
        assert not conj.ranges and not conj.leaves
        _check([e], block)


def _coded(words, dictionary_words, nulls=None):
    """A scan-style CodedVector: views of ``words`` with their codes into
    ``dictionary_words`` (one heap)."""
    from engine.convert import strings_to_vector
    from engine.operators.scan import CodedVector
    d = strings_to_vector(dictionary_words, T.VARCHAR)
    codes = np.array([dictionary_words.index(w) for w in words], np.int32)
    return CodedVector(T.VARCHAR, codes, d.data, d.heap, nulls)


@settings(max_examples=80, deadline=None)
@given(st.data(), st.integers(0, 60))
def test_predicates_on_coded_strings(data, n):
    """eq / ne / IN / LIKE / NOT LIKE / OR over a dictionary-coded column:
    evaluated per entry and gathered by code, as the evaluator decides them
    row by row; small blocks (dictionary not small against the rows) fall
    back to the evaluator."""
    entries = ["MAIL", "SHIP", "AIR", "AIR REG", "a string longer than twelve bytes", ""]
    words = data.draw(st.lists(st.sampled_from(entries), min_size=n, max_size=n))
    vec = _coded(words, entries)
    ref = ColumnRef(0, T.VARCHAR)

    def lit(v):
        return Literal(v, T.VARCHAR)
    exprs = [
        Call("eq", [ref, lit("AIR")], T.BOOLEAN),
        Call("ne", [lit("SHIP"), ref], T.BOOLEAN),
        Call("in_list", [ref, lit("MAIL"), lit("AIR REG"), lit("nope")], T.BOOLEAN),
        Call("like", [ref, lit("%AI%")], T.BOOLEAN),
        Call("not", [Call("like", [ref, lit("a string%")], T.BOOLEAN)], T.BOOLEAN),
        Call("or", [Call("eq", [ref, lit("")], T.BOOLEAN),
                    Call("gt", [ref, lit("M")], T.BOOLEAN)], T.BOOLEAN),
    ]
    chosen = data.draw(st.lists(st.sampled_from(exprs), min_size=1, max_size=3))
    conj = Conjunction(chosen)
    assert len(conj.coded) == len(chosen)
    _check(chosen, Block([vec], n))


def test_coded_predicate_on_a_column_with_nulls_uses_the_evaluator():
    entries = ["x", "y"]
    vec = _coded(["x", "y", "x", "x", "y", "x", "x", "y", "x", "x"], entries,
                 np.array([0, 1, 0, 0, 0, 0, 1, 0, 0, 0], np.uint8))
    expr = Call("eq", [ColumnRef(0, T.VARCHAR), Literal("x", T.VARCHAR)], T.BOOLEAN)
    _check([expr], Block([vec], 10))


@pytest.mark.parametrize("threads", [1, 2])
def test_quantity_bands_and_coded_strings_match_duckdb(filter_file, threads):
    """Q19's shape: OR of ranges on a decimal column, IN and NOT LIKE on a
    dictionary-coded string column."""
    sql = ("SELECT s, count(*), sum(p) FROM t WHERE (p BETWEEN 10 AND 20 OR p BETWEEN 19.5 "
           "AND 31.25 OR p = 50.5) AND s IN ('MAIL', 'AIR') AND s NOT LIKE '%IL' "
           "AND (i > 40 OR i < -40 OR i = 0) GROUP BY s ORDER BY s")
    _assert_matches_duckdb(filter_file, sql, threads)


def test_select_vector_by_positions_equals_by_mask():
    """select_vector takes int64 positions as well as a bool mask (the scan
    keeps few survivors by index): same rows, codes kept, NULLs dropped
    when none is left."""
    from engine.operators.filter import select_vector
    mask = np.array([True, False, True, True, False, False, True, False])
    rows = np.flatnonzero(mask)
    ints = _vector(T.BIGINT, [5, 6, 7, 8, 9, 10, 11, 12], [0, 1, 0, 0, 1, 0, 0, 0])
    entries = ["a", "a string longer than twelve bytes", "c"]
    coded = _coded(["a", "c", "c", "a string longer than twelve bytes", "a", "c", "a", "c"],
                   entries)
    for vec in (ints, coded):
        by_mask, by_rows = select_vector(vec, mask), select_vector(vec, rows)
        assert np.array_equal(by_mask.data, by_rows.data)
        assert (by_mask.nulls is None) == (by_rows.nulls is None)
        assert np.array_equal(getattr(by_mask, "codes", np.zeros(0)),
                              getattr(by_rows, "codes", np.zeros(0)))
    assert select_vector(ints, rows).nulls is None
    assert type(select_vector(coded, rows)).__name__ == "CodedVector"
