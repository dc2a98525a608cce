"""Constant folding and literal conversion."""

import pytest

from planner import types as T
from planner.expressions import Call, ColumnRef, Interval, Literal
from planner.folding import add_interval, cast_value, fold, parse_date, parse_timestamp

DAY = 86_400_000_000


def lit(v, t):
    return Literal(v, t)


def test_cast_values():
    assert cast_value("1998-12-01", T.VARCHAR, T.DATE) == parse_date("1998-12-01") == 10561
    assert cast_value("1970-01-02 00:00:01", T.VARCHAR, T.TIMESTAMP) == DAY + 1_000_000
    assert cast_value("12.345", T.VARCHAR, T.DECIMAL(10, 2)) == 1235
    assert cast_value(-125, T.DECIMAL(5, 2), T.DECIMAL(5, 1)) == -13      # half away from zero
    assert cast_value(7, T.INTEGER, T.DECIMAL(12, 2)) == 700
    assert cast_value(150, T.DECIMAL(5, 2), T.INTEGER) == 2
    assert cast_value(2.5, T.DOUBLE, T.INTEGER) == 2      # DuckDB: half to even, like rint
    assert cast_value(3.5, T.DOUBLE, T.INTEGER) == 4
    assert cast_value(10561, T.DATE, T.TIMESTAMP) == 10561 * DAY
    assert cast_value(10561, T.DATE, T.VARCHAR) == "1998-12-01"
    assert cast_value(None, T.VARCHAR, T.DATE) is None
    with pytest.raises(ValueError):
        cast_value("1998-02-30", T.VARCHAR, T.DATE)
    with pytest.raises(ValueError):
        cast_value(300, T.INTEGER, T.TINYINT)


def test_add_interval_clamps_month_end():
    jan31 = parse_date("2021-01-31")
    assert add_interval(jan31, T.DATE, Interval(months=1), T.DATE) == parse_date("2021-02-28")
    assert add_interval(jan31, T.DATE, Interval(months=-2), T.DATE) == parse_date("2020-11-30")
    ts = parse_timestamp("2020-01-01 12:00:00")
    assert add_interval(ts, T.TIMESTAMP, Interval(days=1, micros=5), T.TIMESTAMP) == ts + DAY + 5


def test_fold_arithmetic():
    e = Call("sub", [lit(1, T.DECIMAL(10, 0)), lit(6, T.DECIMAL(3, 2))], T.DECIMAL(13, 2))
    assert fold(e).value == 94
    e = Call("mul", [lit(15, T.DECIMAL(3, 1)), lit(3, T.DECIMAL(2, 1))], T.DECIMAL(5, 2))
    assert fold(e).value == 45          # 1.5 * 0.3 = 0.45
    assert fold(Call("add", [lit(2, T.INTEGER), lit(3, T.INTEGER)], T.INTEGER)).value == 5
    # overflow and division by zero are left for the engine
    big = Call("add", [lit(2**31 - 1, T.INTEGER), lit(1, T.INTEGER)], T.INTEGER)
    assert isinstance(fold(big), Call)
    assert isinstance(fold(Call("div", [lit(1.0, T.DOUBLE), lit(0.0, T.DOUBLE)], T.DOUBLE)), Call)
    # DuckDB: // of doubles is /, not floor division
    assert fold(Call("intdiv", [lit(-7.0, T.DOUBLE), lit(2.0, T.DOUBLE)], T.DOUBLE)).value == -3.5


def test_fold_date_minus_interval():
    e = Call("date_sub", [lit(parse_date("1998-12-01"), T.DATE),
                          lit(Interval(days=90), T.INTERVAL)], T.TIMESTAMP)
    folded = fold(e)
    assert folded.type == T.TIMESTAMP and folded.value == parse_date("1998-09-02") * DAY


def test_date_column_vs_timestamp_literal():
    col = ColumnRef(0, T.DATE, "d")
    widened = Call("cast", [col], T.TIMESTAMP)
    midnight = lit(100 * DAY, T.TIMESTAMP)
    e = fold(Call("le", [widened, midnight], T.BOOLEAN))
    assert e.func == "le" and e.args[0] is col and e.args[1].type == T.DATE and e.args[1].value == 100
    e = fold(Call("gt", [midnight, widened], T.BOOLEAN))      # flipped operands
    assert e.func == "lt" and e.args[0] is col
    noon = lit(100 * DAY + DAY // 2, T.TIMESTAMP)
    e = fold(Call("lt", [widened, noon], T.BOOLEAN))
    assert e.func == "le" and e.args[1].value == 100
    e = fold(Call("ge", [widened, noon], T.BOOLEAN))
    assert e.func == "gt" and e.args[1].value == 100
    e = fold(Call("eq", [widened, noon], T.BOOLEAN))
    assert e.func == "eq" and e.args[0].func == "cast"


def test_fold_logic():
    x = ColumnRef(0, T.BOOLEAN, "x")
    assert fold(Call("and", [x, lit(True, T.BOOLEAN)], T.BOOLEAN)) is x
    assert fold(Call("and", [x, lit(False, T.BOOLEAN)], T.BOOLEAN)).value is False
    assert fold(Call("or", [x, lit(True, T.BOOLEAN)], T.BOOLEAN)).value is True
    kept = fold(Call("and", [x, lit(None, T.BOOLEAN)], T.BOOLEAN))
    assert kept.func == "and" and len(kept.args) == 2


def test_wide_decimal_literals_keep_every_digit():
    """Python's default decimal context has 28 digits: DECIMAL(38) literals,
    casts and their text lost their low digits."""
    from planner.folding import decimal_text, scaled_int
    assert scaled_int("99999999999999999999999999.9999999999", 10) == 10**36 - 1
    assert scaled_int("-12345678901234567890123456789.123456789", 9) == \
        -12345678901234567890123456789123456789
    assert scaled_int("2.5", 0) == 3 and scaled_int("-2.5", 0) == -3   # half away from zero
    assert decimal_text(1, 10) == "0.0000000001" and decimal_text(-10**36 + 1, 10) == \
        "-99999999999999999999999999.9999999999"
    assert cast_value("12345678901234567890123456789.123456789", T.VARCHAR,
                      T.DECIMAL(38, 9)) == 12345678901234567890123456789123456789
    assert cast_value("2.5", T.VARCHAR, T.INTEGER) == 3
    assert cast_value(1e30, T.DOUBLE, T.HUGEINT) == int(1e30)
    assert cast_value(1, T.DECIMAL(12, 10), T.VARCHAR) == "0.0000000001"


def test_fold_nan_comparisons_as_duckdb():
    """NaN equals NaN and sorts above every number (the engine's rule), not
    Python's unordered NaN."""
    nan = lit(float("nan"), T.DOUBLE)
    one, inf = lit(1.0, T.DOUBLE), lit(float("inf"), T.DOUBLE)
    want = {"eq": True, "ne": False, "lt": False, "le": True, "gt": False, "ge": True}
    for op, v in want.items():
        assert fold(Call(op, [nan, nan], T.BOOLEAN)).value is v, op
    assert fold(Call("gt", [nan, inf], T.BOOLEAN)).value is True
    assert fold(Call("lt", [one, nan], T.BOOLEAN)).value is True
    assert fold(Call("ne", [one, nan], T.BOOLEAN)).value is True


def test_fold_negation_out_of_range_is_left_to_the_engine():
    """-INT64_MIN folded to a BIGINT literal of 2**63 (numpy then raised an
    OverflowError outside pqdb's errors)."""
    assert isinstance(fold(Call("neg", [lit(-2**63, T.BIGINT)], T.BIGINT)), Call)
    assert fold(Call("neg", [lit(-2**63 + 1, T.BIGINT)], T.BIGINT)).value == 2**63 - 1
    assert isinstance(fold(Call("neg", [lit(-128, T.TINYINT)], T.TINYINT)), Call)
