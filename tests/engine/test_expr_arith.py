"""Arithmetic, comparison, abs and round against DuckDB."""

from decimal import Decimal as D

import pytest

from engine.errors import ArithmeticOverflowError, UnsupportedFeatureError
from planner import types as T
from tests.engine.test_expr_support import call, col, duck_eval, lit, run

DEC152 = T.DECIMAL(15, 2)
DEC123 = T.DECIMAL(12, 3)
A = [D("1.05"), D("-2.50"), None, D("0.01"), D("9999999.99"), D("-0.05")]
B = [D("2.125"), D("3.000"), D("1.000"), None, D("-0.001"), D("0.049")]


@pytest.mark.parametrize("op,sym", [("add", "+"), ("sub", "-"), ("mul", "*")])
def test_decimal_arith_exact(op, sym):
    cols = [(A, DEC152), (B, DEC123)]
    a, b = col(0, DEC152), col(1, DEC123)
    out_t = T.arithmetic_type(op, DEC152, DEC123)
    got = run(call(op, [a, b], out_t), cols)
    want = duck_eval(f"c0 {sym} c1", cols)
    assert got == want


def test_decimal_div_and_mod():
    cols = [(A, DEC152), (B, DEC123)]
    a, b = col(0, DEC152), col(1, DEC123)
    got = run(call("div", [a, b], T.DOUBLE), cols)
    want = duck_eval("c0 / c1", cols)
    assert got == pytest.approx(want)
    mt = T.arithmetic_type("mod", DEC152, DEC123)
    assert run(call("mod", [a, b], mt), cols) == duck_eval("c0 % c1", cols)


def test_decimal_overflow_raises():
    big = T.DECIMAL(18, 2)
    cols = [([D("9999999999999999.99"), D("1")], big), ([D("9999999999999999.99"), None], big)]
    with pytest.raises(ArithmeticOverflowError):
        run(call("mul", [col(0, big), col(1, big)], T.DECIMAL(18, 4)), cols)
    add_t = T.DECIMAL(18, 2)      # an add typed to stay in 64 bits (DuckDB types it DECIMAL(19,2))
    cols2 = [([D("92233720368547758.07")], T.DECIMAL(18, 2)), ([D("0.01")], T.DECIMAL(18, 2))]
    with pytest.raises(ArithmeticOverflowError):
        run(call("add", [col(0, big), col(1, big)], add_t), cols2)


def test_overflow_ignored_in_null_rows():
    # the value gap under a NULL must not trigger overflow checks
    import numpy as np
    from engine.block import Block, Vector
    from engine.expr import evaluate
    v = Vector(T.BIGINT, np.array([2**62, 1], np.int64), np.array([1, 0], np.uint8))
    out = evaluate(call("mul", [col(0, T.BIGINT), col(0, T.BIGINT)], T.BIGINT), Block([v], 2))
    assert out.nulls.tolist() == [1, 0] and out.data[1] == 1


def test_bigint_overflow():
    cols = [([2**62, 1], T.BIGINT), ([2, 5], T.BIGINT)]
    with pytest.raises(ArithmeticOverflowError):
        run(call("mul", [col(0, T.BIGINT), col(1, T.BIGINT)], T.BIGINT), cols)
    cols = [([2**63 - 1], T.BIGINT), ([1], T.BIGINT)]
    with pytest.raises(ArithmeticOverflowError):
        run(call("add", [col(0, T.BIGINT), col(1, T.BIGINT)], T.BIGINT), cols)
    cols = [([2**31 - 1], T.INTEGER), ([1], T.INTEGER)]
    with pytest.raises(ArithmeticOverflowError):
        run(call("add", [col(0, T.INTEGER), col(1, T.INTEGER)], T.INTEGER), cols)


def test_integer_ops_match_duckdb():
    xs = [7, -7, 0, None, 100, -2**31, 15]
    ys = [2, 2, 3, 1, None, 7, -4]
    cols = [(xs, T.INTEGER), (ys, T.BIGINT)]
    a, b = col(0, T.INTEGER), col(1, T.BIGINT)
    for op, sym in [("add", "+"), ("sub", "-"), ("mul", "*"), ("intdiv", "//"), ("mod", "%")]:
        assert run(call(op, [a, b], T.BIGINT), cols) == duck_eval(f"c0 {sym} c1", cols), op
    assert run(call("div", [a, b], T.DOUBLE), cols) == pytest.approx(duck_eval("c0 / c1", cols))
    assert run(call("neg", [b], T.BIGINT), cols) == duck_eval("-c1", cols)


def test_division_by_zero_as_duckdb():
    """/ is float division (inf, -inf, NaN); // and an exact % raise; a
    NULL row's gap (0 here) never raises."""
    cols = [([5, -6, None, 0], T.INTEGER), ([0, 0, 0, 0], T.INTEGER)]
    a, b = col(0, T.INTEGER), col(1, T.INTEGER)
    got = run(call("div", [a, b], T.DOUBLE), cols)
    assert got[:3] == [float("inf"), float("-inf"), None] and got[3] != got[3]
    for op in ("mod", "intdiv"):
        with pytest.raises(ArithmeticOverflowError, match="by zero"):
            run(call(op, [a, b], T.INTEGER), cols)
    ok = [([5, None], T.INTEGER), ([2, 0], T.INTEGER)]
    assert run(call("intdiv", [col(0, T.INTEGER), col(1, T.INTEGER)], T.INTEGER), ok) == [2, None]
    fa, fb = col(0, T.DOUBLE), col(1, T.DOUBLE)
    fcols = [([5.0, -7.5], T.DOUBLE), ([0.0, 2.0], T.DOUBLE)]
    m = run(call("mod", [fa, fb], T.DOUBLE), fcols)
    assert m[0] != m[0] and m[1] == -1.5            # fmod; x % 0.0 is NaN
    with pytest.raises(ArithmeticOverflowError, match="by zero"):
        run(call("intdiv", [fa, fb], T.DOUBLE), fcols)
    assert run(call("intdiv", [fa, fb], T.DOUBLE), [([-7.0], T.DOUBLE), ([2.0], T.DOUBLE)]) == [-3.5]


def test_int64_min_intdiv_mod():
    lo = -2**63
    cols = [([lo, lo, lo + 1, -7, 7], T.BIGINT), ([2, -3, -1, 2, -2], T.BIGINT)]
    a, b = col(0, T.BIGINT), col(1, T.BIGINT)
    for op, sym in [("intdiv", "//"), ("mod", "%")]:
        assert run(call(op, [a, b], T.BIGINT), cols) == duck_eval(f"c0 {sym} c1", cols), op
    assert run(call("mod", [a, b], T.BIGINT), [([lo], T.BIGINT), ([-1], T.BIGINT)]) == [0]
    with pytest.raises(ArithmeticOverflowError):
        run(call("intdiv", [a, b], T.BIGINT), [([lo], T.BIGINT), ([-1], T.BIGINT)])


def test_double_ops():
    xs = [1.5, -7.5, None, 0.1, 1e300]
    ys = [2.0, 2.0, 1.0, 0.2, 1e10]
    cols = [(xs, T.DOUBLE), (ys, T.DOUBLE)]
    a, b = col(0, T.DOUBLE), col(1, T.DOUBLE)
    for op, sym in [("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"), ("mod", "%")]:
        assert run(call(op, [a, b], T.DOUBLE), cols) == pytest.approx(duck_eval(f"c0 {sym} c1", cols)), op


def test_wide_decimal_arith():
    w = T.DECIMAL(38, 4)
    xs = [D("12345678901234567890.1234"), D("-1.0001"), None]
    ys = [D("98765432109876543210.0001"), D("2.5000"), D("1")]
    cols = [(xs, w), (ys, w)]
    for op, sym in [("add", "+"), ("sub", "-")]:
        assert run(call(op, [col(0, w), col(1, w)], w), cols) == duck_eval(f"c0 {sym} c1", cols)
    assert run(call("neg", [col(0, w)], w), cols) == duck_eval("-c0", cols)
    assert run(call("lt", [col(0, w), col(1, w)], T.BOOLEAN), cols) == duck_eval("c0 < c1", cols)


@pytest.mark.parametrize("op,sym", [("eq", "="), ("ne", "<>"), ("lt", "<"), ("le", "<="),
                                    ("gt", ">"), ("ge", ">=")])
def test_wide_decimal_compare(op, sym):
    """Wide decimals compare as int64 when every value fits, else exactly as
    Python ints: values around the int64 range and NULLs, against DuckDB."""
    w = T.DECIMAL(38, 2)
    big = D("92233720368547758.07")              # int64 max when scaled by 100
    small = [D("1.00"), D("-2.50"), None, D("300.00"), big, -big, D("0.01")]
    other = [D("1.00"), D("-2.49"), D("5"), None, big, D("-92233720368547758.08"), D("0.00")]
    huge = [D("12345678901234567890.12"), D("-1.00"), None, D("300.00"), D("1"), big, D("9")]
    for xs, ys in ((small, other), (small, huge), (huge, other)):
        cols = [(xs, w), (ys, w)]
        assert run(call(op, [col(0, w), col(1, w)], T.BOOLEAN), cols) \
            == duck_eval(f"c0 {sym} c1", cols), (xs, ys)


@pytest.mark.parametrize("op,sym", [("eq", "="), ("ne", "<>"), ("lt", "<"), ("le", "<="),
                                    ("gt", ">"), ("ge", ">=")])
def test_numeric_compare(op, sym):
    cols = [([1, 2, None, 4, -5], T.INTEGER), ([1, 3, 2, None, -6], T.INTEGER)]
    assert run(call(op, [col(0, T.INTEGER), col(1, T.INTEGER)], T.BOOLEAN), cols) \
        == duck_eval(f"c0 {sym} c1", cols)


def test_decimal_compare_different_scales():
    cols = [([D("1.50"), D("2.00"), D("-1.25")], DEC152), ([D("1.500"), D("1.999"), D("-1.250")], DEC123)]
    got = run(call("eq", [col(0, DEC152), col(1, DEC123)], T.BOOLEAN), cols)
    assert got == [True, False, True]
    got = run(call("gt", [col(0, DEC152), col(1, DEC123)], T.BOOLEAN), cols)
    assert got == [False, True, False]


def test_abs_and_round():
    xs = [D("1.25"), D("-1.25"), D("0.05"), None, D("-0.04"), D("123.45")]
    cols = [(xs, DEC152)]
    x = col(0, DEC152)
    assert run(call("abs", [x], DEC152), cols) == duck_eval("abs(c0)", cols)
    for digits in (0, 1, -1):
        got = run(call("round", [x, lit(digits, T.INTEGER)], T.DECIMAL(15, max(digits, 0))), cols)
        assert got == duck_eval(f"round(c0, {digits})", cols), digits
    ds = [2.5, -2.5, 0.125, 1.005, None, -0.5]
    cols = [(ds, T.DOUBLE)]
    for digits in (0, 2):
        got = run(call("round", [col(0, T.DOUBLE), lit(digits, T.INTEGER)], T.DOUBLE), cols)
        assert got == duck_eval(f"round(c0, {digits})", cols)


def test_unknown_function():
    with pytest.raises(UnsupportedFeatureError, match="function frobnicate"):
        run(call("frobnicate", [col(0, T.INTEGER)], T.INTEGER), [([1], T.INTEGER)])
