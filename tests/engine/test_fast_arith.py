"""The fused int64/DECIMAL arithmetic fast path (arith._fast_int64_arithmetic,
numeric_kernels.scaled_int_op) against exact Python integers, near the
overflow and precision limits, with NULL gaps that must never raise."""

import numpy as np
import pytest

from engine.block import Vector
from engine.errors import ArithmeticOverflowError
from engine.expr.arith import arithmetic
from planner import types as T

LIMIT = 2 ** 63


def _exact(op, x, y, fx, fy):
    a, b = x * fx, y * fy
    return {"add": a + b, "sub": a - b, "mul": a * b}[op]


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("types", [
    (T.BIGINT, T.BIGINT, T.BIGINT),
    (T.DECIMAL(15, 2), T.DECIMAL(12, 3), None),
    (T.DECIMAL(18, 2), T.DECIMAL(18, 0), T.DECIMAL(18, 2)),
    (T.DECIMAL(9, 4), T.DECIMAL(9, 4), T.DECIMAL(18, 8)),
])
def test_fast_path_matches_exact_integers(op, types):
    ta, tb, out = types
    if out is None:
        out = T.arithmetic_type(op, ta, tb)
    if out.numpy_dtype != np.int64:
        pytest.skip("not an int64 result")
    sa = ta.scale if ta.is_decimal else 0
    sb = tb.scale if tb.is_decimal else 0
    if op == "mul":
        fx = fy = 1
        if sa + sb != out.scale:
            pytest.skip("rescaled product: general path")
    else:
        fx, fy = 10 ** (out.scale - sa), 10 ** (out.scale - sb)
    limit = 10 ** out.precision if out.is_decimal and out.precision < 19 else LIMIT
    rng = np.random.default_rng(hash((op, str(ta), str(tb))) % 2 ** 32)
    for magnitude in (10 ** 3, 10 ** 9, 3 * 10 ** 9, 2 ** 40, 2 ** 62):
        x = rng.integers(-magnitude, magnitude, 200, dtype=np.int64)
        y = rng.integers(-magnitude, magnitude, 200, dtype=np.int64)
        nulls = (rng.random(200) < 0.2).astype(np.uint8)
        want = [_exact(op, int(a), int(b), fx, fy) for a, b in zip(x, y)]
        fails = any(not (-limit < w < limit) or not (-LIMIT <= a * fx < LIMIT)
                    or not (-LIMIT <= b * fy < LIMIT)
                    for w, a, b, nl in zip(want, x.tolist(), y.tolist(), nulls) if not nl)
        va, vb = Vector(ta, x, nulls), Vector(tb, y)
        if fails:
            with pytest.raises(ArithmeticOverflowError):
                arithmetic(op, [va, vb], out)
            continue
        got = arithmetic(op, [va, vb], out)
        assert got.nulls is not None and got.nulls.tolist() == nulls.tolist()
        keep = nulls == 0
        assert got.data[keep].tolist() == [w for w, k in zip(want, keep) if k]


def test_null_gaps_never_overflow():
    big = np.array([2 ** 62, 5], np.int64)
    nulls = np.array([1, 0], np.uint8)
    got = arithmetic("mul", [Vector(T.BIGINT, big, nulls), Vector(T.BIGINT, np.array([4, 3]))],
                     T.BIGINT)
    assert got.data[1] == 15 and got.nulls.tolist() == [1, 0]
