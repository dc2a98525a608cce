"""Evaluators of the scalar functions typed by planner/functions_extra.py:
floor, ceil, trim/ltrim/rtrim, date_trunc, date_diff.  Registered into the
evaluator's dispatch table by engine/expr/evaluate.py."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector
from engine.errors import UnsupportedFeatureError
from engine.expr.vectors import flat, literal_vector, merge_nulls, string_vector
from engine.kernels import dates as dk
from planner.expressions import Call


def _evaluate(e, block: Block) -> Vector:
    from engine.expr.evaluate import evaluate
    return evaluate(e, block)


def _floor_ceil(call: Call, block: Block) -> Vector:
    x = _evaluate(call.args[0], block)
    if x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    up = call.func == "ceil"
    if x.type.is_decimal:
        q = 10 ** x.type.scale
        d = x.data
        if d.dtype == object:
            res = -((-d) // q) if up else d // q
            out = np.asarray(res, dtype=object)
        else:
            out = -np.floor_divide(-d, q) if up else np.floor_divide(d, q)
        return Vector(call.type, out.astype(call.type.numpy_dtype), x.nulls)
    f = x.data.astype(np.float64)
    return Vector(call.type, np.ceil(f) if up else np.floor(f), x.nulls)


def _trim(call: Call, block: Block) -> Vector:
    from engine.kernels.string_trim import trim_flat
    x = _evaluate(call.args[0], block)
    if x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    offsets, data = flat(x)
    o, d = trim_flat(offsets, data, call.func != "rtrim", call.func != "ltrim")
    return string_vector(call.type, o, d, x.nulls)


_MICROS = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000}


def _micros(x: Vector) -> np.ndarray:
    if x.type.id == "DATE":
        return x.data.astype(np.int64) * dk.MICROS_PER_DAY
    if x.type.id == "TIMESTAMP":
        return x.data.astype(np.int64)
    raise UnsupportedFeatureError(f"date function on {x.type}")


def _days(x: Vector) -> np.ndarray:
    if x.type.id == "DATE":
        return x.data.astype(np.int64)
    return np.floor_divide(_micros(x), dk.MICROS_PER_DAY)


def _date_trunc(call: Call, block: Block) -> Vector:
    part = call.args[0].value
    x = _evaluate(call.args[1], block)
    if x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    if part in _MICROS:
        t = _micros(x)
        return Vector(call.type, t - np.mod(t, _MICROS[part]), x.nulls)
    days = _days(x)
    if part == "day":
        out = days
    elif part == "week":                       # ISO weeks start on Monday; 1970-01-01 was a Thursday
        out = days - np.mod(days + 3, 7)
    else:
        ys, ms, _ = dk.civil_from_days(days)
        if part == "year":
            ms = np.ones_like(ms)
        elif part == "quarter":
            ms = (ms - 1) // 3 * 3 + 1
        out = dk.days_from_civil(ys, ms, np.ones_like(ms))
    return Vector(call.type, out * dk.MICROS_PER_DAY, x.nulls)


def _date_diff(call: Call, block: Block) -> Vector:
    part = call.args[0].value
    a = _evaluate(call.args[1], block)
    b = _evaluate(call.args[2], block)
    if a.type.id == "NULL" or b.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    da, db = _days(a), _days(b)
    nulls = merge_nulls(a.nulls, b.nulls)
    if part == "day":
        return Vector(call.type, db - da, nulls)
    ya, ma, _ = dk.civil_from_days(da)
    yb, mb, _ = dk.civil_from_days(db)
    if part == "year":
        res = yb - ya
    elif part == "quarter":
        res = (yb * 4 + (mb - 1) // 3) - (ya * 4 + (ma - 1) // 3)
    else:
        res = (yb * 12 + mb) - (ya * 12 + ma)
    return Vector(call.type, res.astype(np.int64), nulls)


FUNCS = {"floor": _floor_ceil, "ceil": _floor_ceil, "trim": _trim, "ltrim": _trim,
         "rtrim": _trim, "date_trunc": _date_trunc, "date_diff": _date_diff}
