"""Number functions over whole vectors: abs, round, floor and ceil.

Decimals stay exact (scaled int64, or Python ints when wider than 18
digits); round is half away from zero (DuckDB) for doubles and decimals."""

from __future__ import annotations

import numpy as np

from engine.block import Vector
from engine.errors import ArithmeticOverflowError
from engine.expr import numeric_kernels as nk
from engine.expr.cast import cast_vector, rescale, to_float64, valid_mask
from engine.expr.vectors import clean_object
from planner.types import DOUBLE, DataType, decimal_of


def absolute(v: Vector, out_type: DataType) -> Vector:
    if v.data.dtype == object:
        return Vector(out_type, np.abs(clean_object(v)), v.nulls)
    if v.type.is_integer and v.data.dtype.kind == "i":
        lo = np.iinfo(v.data.dtype).min
        if (valid_mask(v) & (v.data == lo)).any():
            raise ArithmeticOverflowError(f"Overflow on abs({lo})")
    res = np.abs(v.data)
    out = Vector(v.type, res, v.nulls)
    return cast_vector(out, out_type) if out_type != v.type else out


def round_vector(v: Vector, digits: int, out_type: DataType) -> Vector:
    """round(x, digits): half away from zero (DuckDB) for doubles and decimals;
    a decimal result keeps the scale of out_type."""
    if v.type.is_decimal:
        valid = valid_mask(v)
        data = clean_object(v) if v.data.dtype == object else v.data
        s = v.type.scale
        keep = max(min(digits, s), -v.type.precision)
        if keep < s:
            step = s - keep
            if data.dtype == object:
                p = 10 ** step
                r = np.array([(abs(int(x)) + p // 2) // p * (1 if x >= 0 else -1) for x in data], dtype=object)
            else:
                r = nk.round_div_pow(data.astype(np.int64), np.int64(10 ** step)) if step <= 18 else np.zeros(len(data), np.int64)
            cur = keep
        else:
            r, cur = data, s
        target_scale = out_type.scale if out_type.is_decimal else cur
        r = rescale(r, cur, target_scale, valid, out_type)
        if out_type.is_decimal:
            return Vector(out_type, r.astype(out_type.numpy_dtype) if r.dtype != object and out_type.numpy_dtype != object else r, v.nulls)
        dec = Vector(DataType("DECIMAL", 38 if r.dtype == object else 18, target_scale), r, v.nulls)
        return cast_vector(dec, out_type)
    if v.type.is_integer:
        if digits >= 0:
            return cast_vector(v, out_type)
        dec = cast_vector(v, decimal_of(v.type) if v.type.id != "BIGINT" else DataType("DECIMAL", 18, 0))
        return round_vector(dec, digits, out_type)
    x = to_float64(v)
    r = _round_float(x, digits)
    return Vector(out_type, r.astype(out_type.numpy_dtype) if out_type.is_float else r, v.nulls) \
        if out_type.is_float else cast_vector(Vector(DOUBLE, r, v.nulls), out_type)


def _round_float(x: np.ndarray, digits: int) -> np.ndarray:
    """round(x, digits) of doubles as DuckDB computes it: x * 10**digits in
    long double (64-bit mantissa), rounded half away from zero, back to
    double, divided by 10**digits (round(123.05, 1) = 123.0, as 123.05 is
    123.04999...; round(0.125, 2) = 0.13).  The double product rounds, so
    rows whose scaled value lies near a tie or past 2**52 are computed
    exactly with Decimal (exact where long double is: below 2**64)."""
    scale = 10.0 ** abs(digits)
    with np.errstate(all="ignore"):
        y = x * scale if digits >= 0 else x / scale
        r = np.trunc(y + np.copysign(0.5, y))
        r = r / scale if digits >= 0 else r * scale
        ay = np.abs(y)
        frac = ay - np.floor(ay)
        exact = (np.abs(frac - 0.5) < 1e-6) | (ay >= 2.0 ** 52)
        exact &= ay < 2.0 ** 63
        r = np.where(np.isfinite(r), r, x)
    if exact.any():
        from decimal import ROUND_HALF_UP, Decimal, localcontext

        from planner.folding import EXACT
        with localcontext(EXACT):
            for i in np.flatnonzero(exact).tolist():
                q = float(Decimal(float(x[i])).scaleb(digits).quantize(Decimal(1), ROUND_HALF_UP))
                r[i] = q / scale if digits >= 0 else q * scale
    return r


# ---------------------------------------------------------------- comparison


def floor_ceil(x: Vector, up: bool, out_type: DataType) -> Vector:
    """floor(x) (ceil(x) when ``up``): a decimal keeps its digits at scale 0,
    anything else is a DOUBLE."""
    if x.type.is_decimal:
        q = 10 ** x.type.scale
        d = x.data
        if d.dtype == object:
            res = -((-d) // q) if up else d // q
            out = np.asarray(res, dtype=object)
        else:
            out = -np.floor_divide(-d, q) if up else np.floor_divide(d, q)
        return Vector(out_type, out.astype(out_type.numpy_dtype), x.nulls)
    f = x.data.astype(np.float64)
    r = np.ceil(f) if up else np.floor(f)
    return Vector(out_type, r.astype(out_type.numpy_dtype, copy=False), x.nulls)
