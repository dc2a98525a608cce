"""Casts, extract and interval arithmetic against DuckDB."""

import datetime
from decimal import Decimal as D

import pytest

from engine.errors import ArithmeticOverflowError, ExecutionError
from planner import types as T
from planner.expressions import Interval
from tests.engine.test_expr_support import call, col, duck_eval, lit, run

V = T.VARCHAR


def cast(e, t):
    return call("cast", [e], t)


@pytest.mark.parametrize("src,dst,values", [
    (T.DECIMAL(10, 3), T.DECIMAL(10, 2), [D("1.255"), D("-1.255"), D("0.004"), D("-0.005"), None]),
    (T.DECIMAL(10, 2), T.DECIMAL(12, 4), [D("1.25"), D("-99999999.99"), None]),
    (T.DECIMAL(5, 1), T.INTEGER, [D("2.5"), D("-2.5"), D("3.4"), None]),
    (T.DOUBLE, T.INTEGER, [2.5, 3.5, -2.5, -0.4, None]),
    (T.DOUBLE, T.DECIMAL(10, 2), [1.125, -1.125, 0.1, None]),
    (T.INTEGER, T.DECIMAL(12, 2), [1, -7, 0, None]),
    (T.INTEGER, T.DOUBLE, [1, -7, None]),
    (T.BIGINT, T.SMALLINT, [1, -7, 32767, None]),
    (T.DECIMAL(15, 2), T.DOUBLE, [D("1.05"), D("-0.01"), None]),
    (T.DECIMAL(15, 2), T.DECIMAL(38, 4), [D("1.05"), D("-0.01"), None]),
    (T.DECIMAL(38, 4), T.DECIMAL(15, 2), [D("1.0550"), D("-0.0150"), None]),
    (T.INTEGER, T.BOOLEAN, [0, 1, -3, None]),
    (T.BOOLEAN, T.INTEGER, [True, False, None]),
])
def test_numeric_casts(src, dst, values):
    cols = [(values, src)]
    assert run(cast(col(0, src), dst), cols) == duck_eval(f"CAST(c0 AS {dst})", cols)


@pytest.mark.parametrize("src,values", [
    (T.DECIMAL(5, 2), [D("0.05"), D("-1.50"), D("123.00"), D("-0.01"), None]),
    (T.DECIMAL(3, 0), [D("5"), D("-100"), None]),
    (T.INTEGER, [0, -5, 2**31 - 1, -2**31, None]),
    (T.BIGINT, [-2**63, 2**63 - 1, 7]),
    (T.DOUBLE, [1.5, 1e20, 0.1, 3.0, 1 / 3, 1e-5, None]),
    (T.BOOLEAN, [True, False, None]),
    (T.DATE, [datetime.date(2020, 1, 2), datetime.date(1969, 12, 31), datetime.date(2000, 2, 29), None]),
    (T.TIMESTAMP, [datetime.datetime(2020, 1, 2, 3, 4, 5, 123000), datetime.datetime(1960, 5, 6, 0, 0, 0),
                   datetime.datetime(2021, 1, 1, 23, 59, 59, 1), None]),
])
def test_cast_to_varchar(src, values):
    cols = [(values, src)]
    assert run(cast(col(0, src), V), cols) == duck_eval("CAST(c0 AS VARCHAR)", cols)


@pytest.mark.parametrize("dst,values", [
    (T.INTEGER, [" 12 ", "+12", "-2147483648", "1.5", "2.5", "-2.5", "1e2", None]),
    (T.BIGINT, ["9223372036854775807", "-9223372036854775808", "0"]),
    (T.DECIMAL(5, 2), ["1.555", " 1.5 ", "-0.005", "123", ".5", None]),
    (T.DECIMAL(30, 3), ["12345678901234567890.1235", "-1", None]),
    (T.DOUBLE, ["1e2", "1.5", " -0.25", "inf", None]),
    (T.DATE, ["2020-01-02", "2020-1-2", " 1999-12-31 ", "2000-02-29", None]),
    (T.TIMESTAMP, ["2020-01-02 03:04:05", "2020-01-02T03:04", "2020-01-02 03:04:05.123456",
                   "2020-01-02", "2020-01-02 03:04:05Z", None]),
    (T.BOOLEAN, ["true", "F", "1", "no", None]),
])
def test_cast_from_varchar(dst, values):
    cols = [(values, V)]
    assert run(cast(col(0, V), dst), cols) == duck_eval(f"CAST(c0 AS {dst})", cols)


def test_cast_errors():
    with pytest.raises(ExecutionError, match="Could not convert string 'x' to INT32"):
        run(cast(col(0, V), T.INTEGER), [(["1", "x"], V)])
    with pytest.raises(ExecutionError, match="'2020-13-01'"):
        run(cast(col(0, V), T.DATE), [(["2020-13-01"], V)])
    with pytest.raises(ArithmeticOverflowError):
        run(cast(col(0, T.INTEGER), T.DECIMAL(3, 0)), [([1000], T.INTEGER)])
    with pytest.raises(ArithmeticOverflowError):
        run(cast(col(0, T.BIGINT), T.INTEGER), [([2**40], T.BIGINT)])
    with pytest.raises(ArithmeticOverflowError):
        run(cast(col(0, V), T.SMALLINT), [(["40000"], V)])
    # a bad value under a NULL is never looked at
    assert run(cast(col(0, V), T.INTEGER), [([None, "3"], V)]) == [None, 3]


def test_date_timestamp_casts():
    dates = [datetime.date(2020, 1, 2), datetime.date(1969, 12, 31), None]
    cols = [(dates, T.DATE)]
    assert run(cast(col(0, T.DATE), T.TIMESTAMP), cols) == duck_eval("CAST(c0 AS TIMESTAMP)", cols)
    ts = [datetime.datetime(2020, 1, 2, 3, 4), datetime.datetime(1969, 12, 31, 23, 59), None]
    cols = [(ts, T.TIMESTAMP)]
    assert run(cast(col(0, T.TIMESTAMP), T.DATE), cols) == duck_eval("CAST(c0 AS DATE)", cols)


DATES = [datetime.date(y, m, d) for y, m, d in [
    (1998, 1, 31), (2000, 2, 29), (1900, 3, 1), (2021, 1, 1), (2020, 12, 31), (1969, 12, 31),
    (1970, 1, 1), (2024, 1, 7), (2004, 12, 27), (2005, 1, 2), (1600, 2, 29), (2100, 2, 28),
    (1994, 8, 31), (1992, 5, 31)]] + [None]


@pytest.mark.parametrize("part", ["year", "month", "day", "quarter", "dayofweek", "dayofyear",
                                  "week", "isodow", "isoyear"])
def test_extract_date(part):
    cols = [(DATES, T.DATE)]
    got = run(call("extract", [lit(part, V), col(0, T.DATE)], T.BIGINT), cols)
    assert got == duck_eval(f"extract({part} FROM c0)", cols)


@pytest.mark.parametrize("part", ["year", "month", "day", "hour", "minute", "second",
                                  "millisecond", "microsecond", "dayofweek"])
def test_extract_timestamp(part):
    ts = [datetime.datetime(2021, 1, 1, 10, 11, 12, 500000), datetime.datetime(1969, 12, 31, 23, 59, 58, 1),
          datetime.datetime(2000, 2, 29, 0, 0, 0), None]
    cols = [(ts, T.TIMESTAMP)]
    got = run(call("extract", [lit(part, V), col(0, T.TIMESTAMP)], T.BIGINT), cols)
    assert got == duck_eval(f"extract({part} FROM c0)", cols)
    got = run(call("extract", [lit("epoch", V), col(0, T.TIMESTAMP)], T.DOUBLE), cols)
    assert got == pytest.approx(duck_eval("extract(epoch FROM c0)", cols))


@pytest.mark.parametrize("iv,sql", [
    (Interval(months=1), "INTERVAL 1 MONTH"), (Interval(months=3), "INTERVAL 3 MONTH"),
    (Interval(months=12), "INTERVAL 1 YEAR"), (Interval(months=-1), "INTERVAL (-1) MONTH"),
    (Interval(days=90), "INTERVAL 90 DAY"), (Interval(months=13, days=1), "INTERVAL '1 year 1 month 1 day'"),
])
def test_date_add_sub_intervals(iv, sql):
    cols = [(DATES, T.DATE)]
    ilit = lit(iv, T.INTERVAL)
    got = run(call("date_add", [col(0, T.DATE), ilit], T.TIMESTAMP), cols)
    assert got == duck_eval(f"c0 + {sql}", cols)
    got = run(call("date_sub", [col(0, T.DATE), ilit], T.TIMESTAMP), cols)
    assert got == duck_eval(f"c0 - {sql}", cols)
    got = run(call("date_add", [col(0, T.DATE), ilit], T.DATE), cols)
    assert got == duck_eval(f"CAST(c0 + {sql} AS DATE)", cols)


def test_timestamp_add_interval():
    ts = [datetime.datetime(2020, 1, 31, 10, 0), datetime.datetime(2019, 3, 31, 23, 59, 59), None]
    cols = [(ts, T.TIMESTAMP)]
    iv = lit(Interval(months=1, micros=3_600_000_000), T.INTERVAL)
    got = run(call("date_add", [col(0, T.TIMESTAMP), iv], T.TIMESTAMP), cols)
    assert got == duck_eval("c0 + INTERVAL '1 month 1 hour'", cols)


def test_date_compare_with_literal():
    cols = [(DATES, T.DATE)]
    cutoff = (datetime.date(1995, 3, 15) - datetime.date(1970, 1, 1)).days
    got = run(call("lt", [col(0, T.DATE), lit(cutoff, T.DATE)], T.BOOLEAN), cols)
    assert got == duck_eval("c0 < DATE '1995-03-15'", cols)
