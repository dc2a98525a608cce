"""Arithmetic and comparison over whole vectors.

Exact types never wrap: BIGINT and narrow DECIMAL use overflow-checked numba
kernels, narrower integers are computed in int64 and range-checked, wide
DECIMAL/HUGEINT use Python ints in object arrays.  As in DuckDB, ``/`` is
float division (x / 0 is inf, -inf or NaN), ``//`` and an exact ``%`` by zero
raise, and a float ``%`` by zero is NaN.  ``//`` and ``%`` truncate toward zero.
"""

from __future__ import annotations

import numpy as np

from engine.block import Int64WideVector, Vector, int64_values
from engine.errors import ArithmeticOverflowError, UnsupportedFeatureError
from engine.expr import numeric_kernels as nk
from engine.expr.cast import (cast_vector, check_int_range, check_precision, rescale,
                              to_float64, valid_mask)
from engine.expr.vectors import (clean_object, coded_dictionary, const_view, merge_nulls,
                                 null_bool)
from engine.kernels import strings as sk
from planner.expressions import MIRRORED_COMPARISON
from planner.types import BIGINT, DOUBLE, DataType, comparison_type

_OPS = {"add": "+", "sub": "-", "mul": "*"}


def _overflow(op, typ, a, b):
    return ArithmeticOverflowError(f"Overflow in {op} of {typ} ({a} {_OPS.get(op, op)} {b})")


def _exact_values(vec: Vector, as_decimal: DataType | None, scale: int):
    """Integer data of vec at ``scale`` (object for wide types)."""
    data = clean_object(vec) if vec.data.dtype == object else vec.data
    src_scale = vec.type.scale if vec.type.is_decimal else 0
    valid = valid_mask(vec)
    if data.dtype == np.bool_:
        data = data.astype(np.int64)
    if as_decimal is not None and as_decimal.numpy_dtype == object and data.dtype != object:
        data = data.astype(object)
    if data.dtype == np.uint64 and data.dtype != object:
        data = data.astype(object)
    return rescale(data, src_scale, scale, valid)


def arithmetic(op: str, args: list[Vector], out_type: DataType) -> Vector:
    a, b = args
    n = len(a)
    nulls = merge_nulls(a.nulls, b.nulls)
    if a.type.is_temporal or b.type.is_temporal:
        return _temporal_arithmetic(op, a, b, out_type, nulls)
    if op == "div" or out_type.is_float or op == "intdiv" and not out_type.is_integer:
        return _float_arithmetic(op, a, b, out_type, nulls)
    fast = _fast_int64_arithmetic(op, a, b, out_type, nulls, n)
    if fast is not None:
        return fast
    valid = ~null_bool(nulls, n)
    if out_type.is_decimal:
        if op == "mul":
            sa = a.type.scale if a.type.is_decimal else 0
            sb = b.type.scale if b.type.is_decimal else 0
            x = _exact_values(a, out_type, sa)
            y = _exact_values(b, out_type, sb)
            res_scale = sa + sb
        else:
            res_scale = out_type.scale
            x = _exact_values(a, out_type, res_scale)
            y = _exact_values(b, out_type, res_scale)
            if out_type.precision == 38:    # capped: DuckDB casts each operand first
                check_precision(x, 38, valid, out_type)
                check_precision(y, 38, valid, out_type)
    else:
        x = _exact_values(a, out_type, 0)
        y = _exact_values(b, out_type, 0)
    if x.dtype == object or y.dtype == object or out_type.numpy_dtype == object:
        res, nulls = _object_op(op, x.astype(object), y.astype(object), nulls, valid)
    else:
        res, nulls = _int64_op(op, x.astype(np.int64), y.astype(np.int64), nulls, valid, out_type)
    valid = ~null_bool(nulls, n)
    if out_type.is_decimal:
        if op == "mul" and res_scale != out_type.scale:
            res = rescale(res, res_scale, out_type.scale, valid, out_type)
        check_precision(res, out_type.precision, valid, out_type)
        if out_type.numpy_dtype != object and res.dtype == object:
            res = _int64_from_object(res, valid)
    else:
        check_int_range(res, out_type, valid)
        if res.dtype == object and out_type.numpy_dtype != object:
            res = _int64_from_object(res, valid, out_type.numpy_dtype)
        res = res.astype(out_type.numpy_dtype) if res.dtype != object else res
    return Vector(out_type, res, nulls)


_FAST_OPS = {"add": 0, "sub": 1, "mul": 2}


def _fast_int64_arithmetic(op, a, b, out_type, nulls, n):
    """add/sub/mul of integer-stored exact values into BIGINT or a narrow
    DECIMAL in one fused kernel (rescale, operate, precision check); into a
    wide DECIMAL or HUGEINT as an Int64WideVector when no row overflows
    int64 (engine/block.py).  None
    when the general path applies, also when a row fails: the general path
    then raises the error it names."""
    code = _FAST_OPS.get(op)
    wide = out_type.numpy_dtype == object           # wide DECIMAL, HUGEINT: as int64 if it fits
    if code is None or out_type.numpy_dtype != np.int64 and not wide:
        return None
    x, y = int64_values(a), int64_values(b)
    if x is None or y is None:
        return None
    sa = a.type.scale if a.type.is_decimal else 0
    sb = b.type.scale if b.type.is_decimal else 0
    if out_type.is_decimal:
        s = out_type.scale
        if op == "mul":
            if sa + sb != s:
                return None
            fx = fy = 1
        else:
            if not (0 <= s - sa <= 18 and 0 <= s - sb <= 18):
                return None
            fx, fy = 10 ** (s - sa), 10 ** (s - sb)
        limit = 10 ** out_type.precision if out_type.precision < 19 else 0
    elif out_type.id in ("BIGINT", "HUGEINT") and not (a.type.is_decimal or b.type.is_decimal):
        fx = fy = 1
        limit = 0
    else:
        return None
    valid = np.ones(n, np.bool_) if nulls is None else nulls == 0
    res, bad = nk.scaled_int_op(code, np.asarray(x, np.int64), fx, np.asarray(y, np.int64), fy,
                                limit, valid)
    if bad:
        return None
    return Int64WideVector(out_type, res, nulls) if wide else Vector(out_type, res, nulls)


def _int64_from_object(res, valid, dtype=np.int64):
    out = np.zeros(len(res), dtype)
    out[valid] = res[valid].astype(dtype)
    return out


def _int64_op(op, x, y, nulls, valid, out_type):
    if op in ("add", "sub", "mul"):
        fn = {"add": nk.checked_add, "sub": nk.checked_sub, "mul": nk.checked_mul}[op]
        res, bad = fn(x, y, valid)
        if bad >= 0:
            raise _overflow(op, out_type, x[bad], y[bad])
        return res, nulls
    if op not in ("intdiv", "mod"):
        raise UnsupportedFeatureError(f"function {op} on {out_type}")
    res, bad, why = nk.checked_divmod(0 if op == "intdiv" else 1, x, y, valid)
    if bad >= 0:
        if why == 1:
            raise _division_by_zero(op)
        raise _overflow(op, out_type, x[bad], y[bad])
    return res, nulls


def _division_by_zero(op):
    return ArithmeticOverflowError(f"Division by zero in {'//' if op == 'intdiv' else '%'}")


def _object_op(op, x, y, nulls, valid):
    if op == "add":
        return x + y, nulls
    if op == "sub":
        return x - y, nulls
    if op == "mul":
        return x * y, nulls
    is_zero = (y == 0).astype(bool)
    zero = valid & is_zero
    if zero.any():
        raise _division_by_zero(op)
    if is_zero.any():
        y = y.copy()
        y[is_zero] = 1
    ax, ay = np.abs(x), np.abs(y)
    neg = ((x < 0) != (y < 0)).astype(bool)
    if op == "intdiv":
        q = ax // ay
        q[neg] = -q[neg]
        return q, nulls
    if op == "mod":
        r = ax % ay
        xneg = (x < 0).astype(bool)
        r[xneg] = -r[xneg]
        return r, nulls
    raise UnsupportedFeatureError(f"function {op}")


def _float_arithmetic(op, a, b, out_type, nulls):
    x = to_float64(a)
    y = to_float64(b)
    n = len(x)
    valid = ~null_bool(nulls, n)
    with np.errstate(all="ignore"):
        if op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op == "mul":
            r = x * y
        elif op == "div":
            r = x / y                        # IEEE: x / 0 is inf, -inf or NaN
        elif op == "intdiv":                 # DuckDB: // of floats divides, but 0 raises
            zero = valid & (y == 0)
            if zero.any():
                raise _division_by_zero(op)
            r = x / y
        elif op == "mod":
            r = np.fmod(x, y)                # x % 0 is NaN
        else:
            raise UnsupportedFeatureError(f"function {op}")
    if out_type.is_float:
        with np.errstate(over="ignore"):            # FLOAT: past 3.4e38 is inf
            return Vector(out_type, r.astype(out_type.numpy_dtype), nulls)
    return cast_vector(Vector(DOUBLE, r, nulls), out_type)


def _temporal_arithmetic(op, a, b, out_type, nulls):
    """DATE +/- integer days, DATE - DATE (days), TIMESTAMP - TIMESTAMP."""
    if op == "sub" and a.type == b.type and a.type.id == "DATE":
        r = a.data.astype(np.int64) - b.data.astype(np.int64)
        return cast_vector(Vector(BIGINT, r, nulls), out_type)
    if op in ("add", "sub") and a.type.id == "DATE" and b.type.is_integer:
        d = b.data.astype(np.int64)
        r = a.data.astype(np.int64) + (d if op == "add" else -d)
        return cast_vector(Vector(a.type, r.astype(np.int32), nulls), out_type)
    if op == "add" and b.type.id == "DATE" and a.type.is_integer:
        return _temporal_arithmetic(op, b, a, out_type, nulls)
    if op == "sub" and a.type.id in ("TIMESTAMP", "TIMESTAMPTZ") and a.type == b.type:
        return Vector(out_type, a.data - b.data, nulls)
    raise UnsupportedFeatureError(f"function {op} on {a.type} and {b.type}")


def negate(v: Vector, out_type: DataType) -> Vector:
    v = cast_vector(v, out_type) if v.type != out_type and not v.type.is_decimal else v
    if v.data.dtype == object:
        return Vector(out_type, -clean_object(v), v.nulls)
    if v.type.is_float:
        return Vector(out_type, -v.data, v.nulls)
    valid = valid_mask(v)
    data = v.data
    if v.type.is_integer and data.dtype.kind == "u":
        # an unsigned type holds no negative value: DuckDB raises for any but 0
        bad = np.flatnonzero(valid & (data != 0))
        if len(bad):
            raise ArithmeticOverflowError(f"Overflow in negation of {v.type} "
                                          f"({int(data[bad[0]])})")
    elif v.type.is_integer and data.dtype.kind == "i":
        lo = np.iinfo(data.dtype).min
        if np.any(valid & (data == lo)):
            raise ArithmeticOverflowError(f"Overflow in negation of {v.type} ({lo})")
    return Vector(out_type, (-data).astype(out_type.numpy_dtype), v.nulls)


_NUMPY_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
              "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def _from_sign(op, sign):
    if op == "eq":
        return sign == 0
    if op == "ne":
        return sign != 0
    if op == "lt":
        return sign < 0
    if op == "le":
        return sign <= 0
    if op == "gt":
        return sign > 0
    return sign >= 0


def align_for_compare(a: Vector, b: Vector):
    """Both operands in one comparable storage (rescaled decimals, common type)."""
    if a.type == b.type:
        return a, b
    if a.type.is_string and b.type.is_string:
        return a, b
    if a.type.id == "NULL" or b.type.id == "NULL":
        return a, b
    try:
        t = comparison_type(a.type, b.type)
    except TypeError:
        raise UnsupportedFeatureError(f"comparison of {a.type} and {b.type}") from None
    return cast_vector(a, t), cast_vector(b, t)


def _scaled_int_type(t) -> bool:
    """Types whose object storage holds Python ints (wide decimals, HUGEINT)."""
    return t.is_decimal or t.is_integer


def _small_ints(data: np.ndarray) -> np.ndarray | None:
    """int64 values of an integer or object (wide decimal) array when every
    entry is an int that fits, else None.  NULL slots may hold any value
    (the caller carries the NULL mask), but a None among them means None."""
    if data.dtype.kind in "iu" and data.dtype.itemsize <= 8 and data.dtype != np.uint64:
        return data
    if data.dtype != object:
        return None
    try:
        return data.astype(np.int64)
    except (TypeError, OverflowError, ValueError):
        return None


def _compare_scaled_ints(op: str, a: Vector, b: Vector) -> np.ndarray | None:
    """op on two exact numbers held in int64 (integers, decimals of any
    scale, Int64WideVector): compared exactly without a common type, which
    could overflow int64 (Q11 compares a DECIMAL(38,2) sum with a
    DECIMAL(38,12) threshold).  x * 10**k against y is decided by
    q, r = divmod(y, 10**k): x * 10**k > y  <=>  x > q, and equality needs
    r == 0.  None when an operand is not such a vector."""
    ta, tb = a.type, b.type
    if not ((ta.is_decimal or ta.is_integer) and (tb.is_decimal or tb.is_integer)):
        return None
    x, y = int64_values(a), int64_values(b)
    if x is None or y is None:
        return None
    sa = ta.scale if ta.is_decimal else 0
    sb = tb.scale if tb.is_decimal else 0
    if sa > sb:                                     # make a the side of smaller scale
        x, y, sa, sb, op = y, x, sb, sa, MIRRORED_COMPARISON[op]
    if sa == sb:
        return _NUMPY_CMP[op](x, y)
    if sb - sa > 18:
        return None
    q, r = np.divmod(y.astype(np.int64, copy=False), np.int64(10 ** (sb - sa)))
    exact = r == 0
    if op in ("eq", "ne"):
        eq = (x == q) & exact
        return eq if op == "eq" else ~eq
    gt = x > q
    if op in ("gt", "le"):
        return gt if op == "gt" else ~gt
    ge = gt | ((x == q) & exact)
    return ge if op == "ge" else ~ge


def compare(op: str, a: Vector, b: Vector, b_const=None) -> Vector:
    """op in eq ne lt le gt ge; b_const: the Python value of b when it is a
    literal string (fast path against one constant view)."""
    from planner.types import BOOLEAN
    n = len(a)
    nulls = merge_nulls(a.nulls, b.nulls)
    if a.type.id == "NULL" or b.type.id == "NULL":
        return Vector(BOOLEAN, np.zeros(n, np.bool_), np.ones(n, np.uint8))
    scaled = _compare_scaled_ints(op, a, b)
    if scaled is not None:
        return Vector(BOOLEAN, scaled, nulls)
    a, b = align_for_compare(a, b)
    if a.type.is_string:
        ha = sk.as_heap(a.heap)
        dictionary = coded_dictionary(a) if b_const is not None else None
        va = np.ascontiguousarray(a.data if dictionary is None else dictionary)
        if b_const is not None:
            c0, c1, hc = const_view(b_const)
            if op in ("eq", "ne"):
                eq = sk.equal_views_const(va, ha, c0, c1, hc)
                res = eq if op == "eq" else ~eq
            else:
                res = _from_sign(op, sk.compare_views_const(va, ha, c0, c1, hc))
            if dictionary is not None:          # one result per entry, gathered by code
                res = res[a.codes]
        else:
            vb = np.ascontiguousarray(b.data)
            hb = sk.as_heap(b.heap)
            if op in ("eq", "ne"):
                eq = sk.equal_views(va, ha, vb, hb)
                res = eq if op == "eq" else ~eq
            else:
                res = _from_sign(op, sk.compare_views(va, ha, vb, hb))
        return Vector(BOOLEAN, res, nulls)
    x, y = a.data, b.data
    if x.dtype == object or y.dtype == object:
        exact = _scaled_int_type(a.type) and _scaled_int_type(b.type)
        xi, yi = (_small_ints(x), _small_ints(y)) if exact else (None, None)
        if xi is not None and yi is not None:       # wide decimals whose values fit int64
            res = _NUMPY_CMP[op](xi, yi)
        else:
            x, y = clean_object(a), clean_object(b)
            res = _NUMPY_CMP[op](x, y).astype(np.bool_)
    elif x.dtype.kind == "f" or y.dtype.kind == "f":
        res = _float_compare(op, x, y)
    else:
        res = _NUMPY_CMP[op](x, y)
    return Vector(BOOLEAN, res, nulls)


def _float_compare(op, x, y):
    """DuckDB's order for floats: NaN equals NaN and is greater than every
    other value (so sorting, grouping, min/max and comparisons agree)."""
    res = _NUMPY_CMP[op](x, y)
    nx, ny = np.isnan(x), np.isnan(y)
    if not (nx.any() or ny.any()):
        return res
    both = nx & ny
    if op == "eq":
        return res | both
    if op == "ne":
        return res & ~both
    if op == "lt":
        return res | (~nx & ny)
    if op == "le":
        return res | ny
    if op == "gt":
        return res | (nx & ~ny)
    return res | nx                    # ge
