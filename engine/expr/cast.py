"""CAST between SQL types, per block (DuckDB semantics: decimal rounding half
away from zero, double -> integer rounding half to even, range checks)."""

from __future__ import annotations

import decimal

import numpy as np

from engine.block import Int64WideVector, Vector, int64_values
from engine.errors import ArithmeticOverflowError, ExecutionError, UnsupportedFeatureError
from engine.expr import numeric_kernels as nk
from engine.expr.vectors import clean_object, flat, null_bool, string_vector
from engine.kernels import dates as dk
from engine.kernels import strings as sk
from planner.folding import decimal_text, scaled_int
from planner.types import DataType

_INT_RANGE = {
    "TINYINT": (-2**7, 2**7 - 1), "SMALLINT": (-2**15, 2**15 - 1),
    "INTEGER": (-2**31, 2**31 - 1), "BIGINT": (-2**63, 2**63 - 1),
    "HUGEINT": (-2**127, 2**127 - 1),
    "UTINYINT": (0, 2**8 - 1), "USMALLINT": (0, 2**16 - 1),
    "UINTEGER": (0, 2**32 - 1), "UBIGINT": (0, 2**64 - 1),
}
_DUCK_INT_NAME = {"TINYINT": "INT8", "SMALLINT": "INT16", "INTEGER": "INT32",
                  "BIGINT": "INT64", "HUGEINT": "INT128", "UTINYINT": "UINT8",
                  "USMALLINT": "UINT16", "UINTEGER": "UINT32", "UBIGINT": "UINT64"}
_TS = ("TIMESTAMP", "TIMESTAMPTZ")
_TS_NS = ("TIMESTAMP_NS", "TIMESTAMPTZ_NS")


def valid_mask(vec: Vector) -> np.ndarray:
    return ~null_bool(vec.nulls, len(vec))


def _overflow(value, target: DataType):
    return ArithmeticOverflowError(f"Could not cast value {value} to {target}")


def to_float64(vec: Vector) -> np.ndarray:
    """float64 values of a numeric/bool vector.  Decimals convert exactly
    rounded, as DuckDB does: x * 10**-s rounds once (int64 / 10.0**s rounds
    twice when the digits pass 2**53 or the scale passes 22: 84 of 3,000
    random DECIMAL(18,s) values came out one bit off)."""
    t = vec.type
    if isinstance(vec, Int64WideVector):
        return _decimal_doubles(vec.ints, t.scale) if t.is_decimal else vec.ints.astype(np.float64)
    if t.is_decimal:
        data = clean_object(vec) if vec.data.dtype == object else vec.data
        return _decimal_doubles(data, t.scale)
    if vec.data.dtype == object:
        return clean_object(vec).astype(np.float64)      # Python int -> float rounds once
    return vec.data.astype(np.float64)


_EXACT_DOUBLE = 1 << 53


def _decimal_doubles(data: np.ndarray, scale: int) -> np.ndarray:
    """Scaled integers / 10**scale, correctly rounded."""
    if data.dtype != object:
        ints = data.astype(np.int64, copy=False)
        out = ints.astype(np.float64)
        if scale == 0:
            return out
        if scale <= 22:                     # 10**scale is exact: one rounding
            out /= 10.0 ** scale
            slow = np.flatnonzero((ints >= _EXACT_DOUBLE) | (ints <= -_EXACT_DOUBLE))
        else:
            slow = np.arange(len(ints))
        if len(slow):
            p = 10 ** scale
            out[slow] = [v / p for v in ints[slow].tolist()]   # int / int rounds once
        return out
    p = 10 ** scale
    return np.array([int(v) / p for v in data], np.float64)


def rescale(data: np.ndarray, from_scale: int, to_scale: int, valid: np.ndarray,
            target: DataType | None = None) -> np.ndarray:
    """Scaled integers moved to another scale: exact when growing (overflow is
    an error), rounded half away from zero when shrinking.  Object arrays
    (wide decimals) use Python ints."""
    if from_scale == to_scale:
        return data
    if data.dtype == object:
        if to_scale > from_scale:
            return data * (10 ** (to_scale - from_scale))
        p = 10 ** (from_scale - to_scale)
        return np.array([_round_div(int(v), p) for v in data], dtype=object)
    if to_scale > from_scale:
        k = to_scale - from_scale
        if k > 18:
            bad = nk.checked_bound(data, 1, valid)
            if bad >= 0:
                raise _overflow(data[bad], target or "DECIMAL")
            return np.zeros_like(data)
        factor = np.full(len(data), 10 ** k, np.int64)
        out, bad = nk.checked_mul(data.astype(np.int64), factor, valid)
        if bad >= 0:
            raise _overflow(data[bad], target or f"DECIMAL with scale {to_scale}")
        return out
    k = from_scale - to_scale
    if k > 18:
        return np.zeros(len(data), np.int64)
    return nk.round_div_pow(data.astype(np.int64), np.int64(10 ** k))


def _round_div(v: int, p: int) -> int:
    q, r = divmod(abs(v), p)
    if 2 * r >= p:
        q += 1
    return -q if v < 0 else q


def check_precision(data, precision, valid, target):
    if data.dtype == object:
        limit = 10 ** precision
        bad = np.flatnonzero(valid & ((data >= limit) | (data <= -limit)).astype(bool))
        if len(bad):
            raise _overflow(data[bad[0]], target)
        return
    if precision < 19:
        bad = nk.checked_bound(data, np.int64(10 ** precision), valid)
        if bad >= 0:
            raise _overflow(data[bad], target)


def check_int_range(values, target: DataType, valid, shown=None):
    lo, hi = _INT_RANGE[target.id]
    if values.dtype == object:
        bad_mask = valid & ((values < lo) | (values > hi)).astype(bool)
    else:
        if values.dtype.kind == "f":
            bad_mask = valid & ~((values >= lo) & (values <= hi))
        else:
            info = np.iinfo(values.dtype)
            if info.min >= lo and info.max <= hi:
                return
            bad_mask = valid & ((values < lo) | (values > hi))
    bad = np.flatnonzero(bad_mask)
    if len(bad):
        v = (shown if shown is not None else values)[bad[0]]
        raise _overflow(v, target)


def _to_storage(values, target: DataType, valid) -> np.ndarray:
    """Integer-valued array (int64/object/float) into the target's storage."""
    dtype = target.numpy_dtype
    if dtype == object:
        if values.dtype == object:
            return values
        if values.dtype.kind == "f":
            return np.array([int(v) if ok else 0 for v, ok in zip(values, valid)], dtype=object)
        return values.astype(object)
    if values.dtype == object:
        out = np.zeros(len(values), dtype)
        out[valid] = values[valid].astype(dtype)
        return out
    with np.errstate(invalid="ignore", over="ignore"):
        out = values.astype(dtype)
    return out


def _int64_wide_cast(vec: Vector, target: DataType) -> Vector | None:
    """An integer or decimal vector held in int64 (engine.block.int64_values)
    cast to a wide DECIMAL or HUGEINT as an Int64WideVector, when the scale
    does not shrink and every value still fits int64; else None (the exact
    path applies)."""
    ints = int64_values(vec)
    if ints is None or not (target.is_decimal or target.id == "HUGEINT"):
        return None
    src_scale = vec.type.scale if vec.type.is_decimal else 0
    up = (target.scale if target.is_decimal else 0) - src_scale
    if not 0 <= up <= 18:
        return None
    ints = ints.astype(np.int64)
    if vec.nulls is not None:
        ints = np.where(vec.nulls == 0, ints, 0)        # gaps could overflow below
    if up:
        f = 10 ** up
        limit = np.iinfo(np.int64).max // f
        if len(ints) and (ints.max() > limit or ints.min() < -limit):
            return None
        ints = ints * f
    return Int64WideVector(target, ints, vec.nulls)


def cast_vector(vec: Vector, target: DataType) -> Vector:
    """vec converted to ``target`` (a new Vector; input untouched)."""
    src = vec.type
    if src == target:
        return vec
    n = len(vec)
    if src.id == "NULL":
        from engine.expr.vectors import literal_vector
        return literal_vector(None, target, n)
    if src.is_string and target.is_string:
        return Vector(target, vec.data, vec.nulls, vec.heap)
    if target.is_string:
        return _to_string(vec, target)
    if src.is_string:
        return _from_string(vec, target)
    if target.numpy_dtype == object and (src.is_decimal or src.is_integer):
        fast = _int64_wide_cast(vec, target)
        if fast is not None:
            return fast
    valid = valid_mask(vec)
    data = vec.data
    if data.dtype == object:
        data = clean_object(vec)
    tid = target.id
    if tid == "BOOLEAN":
        if src.is_numeric or src.id == "BOOLEAN":
            return Vector(target, (to_float64(vec) if src.is_decimal else data) != 0, vec.nulls)
    elif target.is_integer:
        if src.is_integer or src.id == "BOOLEAN":
            if data.dtype == np.bool_:
                data = data.astype(np.int8)
            check_int_range(data, target, valid)
            return Vector(target, _to_storage(data, target, valid), vec.nulls)
        if src.is_float:
            r = np.rint(data.astype(np.float64))
            check_int_range(r, target, valid, shown=data)
            return Vector(target, _to_storage(r, target, valid), vec.nulls)
        if src.is_decimal:
            r = rescale(data, src.scale, 0, valid)
            check_int_range(r, target, valid)
            return Vector(target, _to_storage(r, target, valid), vec.nulls)
    elif target.is_float:
        if src.is_numeric or src.id == "BOOLEAN":
            wide = to_float64(vec)
            with np.errstate(over="ignore"):
                out = wide.astype(target.numpy_dtype)
            # a finite value past FLOAT's range raises (DuckDB), inf stays inf
            bad = np.flatnonzero(valid & np.isinf(out) & np.isfinite(wide))
            if len(bad):
                raise _overflow(float(wide[bad[0]]), target)
            return Vector(target, out, vec.nulls)
    elif target.is_decimal:
        wide = target.is_wide_decimal
        if src.is_integer or src.id == "BOOLEAN":
            d = data.astype(object) if wide or data.dtype in (np.uint64, object) \
                else data.astype(np.int64)          # HUGEINT past int64: Python ints
            r = rescale(d, 0, target.scale, valid, target)
        elif src.is_decimal:
            d = data.astype(object) if wide else data
            r = rescale(d, src.scale, target.scale, valid, target)
        elif src.is_float:
            f = data.astype(np.float64) * (10.0 ** target.scale)
            f = np.trunc(f + np.copysign(0.5, f))
            bad = np.flatnonzero(valid & ~(np.abs(f) < 10.0 ** min(target.precision, 18)))
            if len(bad) and not wide:
                raise _overflow(data[bad[0]], target)
            r = _to_storage(f, DataType("HUGEINT") if wide else DataType("BIGINT"), valid)
        else:
            r = None
        if r is not None:
            check_precision(r, target.precision, valid, target)
            if not wide and r.dtype == object:
                r = _to_storage(r, DataType("BIGINT"), valid)
            return Vector(target, r, vec.nulls)
    elif tid == "DATE":
        if src.id in _TS or src.id in _TS_NS:
            # DuckDB: nanoseconds round to microseconds first
            micros = _round_div_away(data.astype(np.int64), 1000) if src.id in _TS_NS else data
            days = np.floor_divide(micros, dk.MICROS_PER_DAY)
            days = _keep_infinities(data, days, dk.TIMESTAMP_INFINITY, dk.DATE_INFINITY)
            return Vector(target, days.astype(np.int32), vec.nulls)
    elif tid in _TS or tid in _TS_NS:
        if src.id == "DATE":
            per_day = dk.MICROS_PER_DAY * (1000 if tid in _TS_NS else 1)
            days = data.astype(np.int64)
            finite = valid & (np.abs(days) != dk.DATE_INFINITY)
            _check_range(days, finite, -(2**63 - 1) // per_day, (2**63 - 2) // per_day, vec, target)
            out = _keep_infinities(days, days * per_day, dk.DATE_INFINITY, dk.TIMESTAMP_INFINITY)
            return Vector(target, out, vec.nulls)
        if src.id in _TS and tid in _TS or src.id in _TS_NS and tid in _TS_NS:
            return Vector(target, data.astype(np.int64), vec.nulls)
        if src.id in _TS:                       # to nanoseconds: exact or an error
            micros = data.astype(np.int64)
            finite = valid & (np.abs(micros) != dk.TIMESTAMP_INFINITY)
            _check_range(micros, finite, -(2**63 - 1) // 1000, (2**63 - 2) // 1000, vec, target,
                         "Could not convert Timestamp to higher precision")
            return Vector(target, _keep_infinities(micros, micros * 1000, dk.TIMESTAMP_INFINITY,
                                                   dk.TIMESTAMP_INFINITY), vec.nulls)
        if src.id in _TS_NS:                    # to microseconds: rounded as DuckDB
            nanos = data.astype(np.int64)
            return Vector(target, _keep_infinities(nanos, _round_div_away(nanos, 1000),
                                                   dk.TIMESTAMP_INFINITY, dk.TIMESTAMP_INFINITY),
                          vec.nulls)
    elif tid in ("TIME", "TIMETZ"):
        if src.id in _TS:
            return Vector(target, np.mod(data, dk.MICROS_PER_DAY), vec.nulls)
        if src.id in _TS_NS:            # rounded to microseconds first, as DuckDB
            micros = _round_div_away(data.astype(np.int64), 1000)
            return Vector(target, np.mod(micros, dk.MICROS_PER_DAY), vec.nulls)
        if src.id in ("TIME", "TIMETZ"):       # TIMETZ holds UTC times (offset +00)
            return Vector(target, data, vec.nulls)
        if src.id == "TIME_NS":
            return Vector(target, _round_div_away(data.astype(np.int64), 1000), vec.nulls)
    elif tid == "TIME_NS":
        if src.id in ("TIME", "TIMETZ"):
            return Vector(target, data.astype(np.int64) * 1000, vec.nulls)
        if src.id in _TS_NS:
            return Vector(target, np.mod(data, dk.MICROS_PER_DAY * 1000), vec.nulls)
        if src.id in _TS:
            return Vector(target, np.mod(data, dk.MICROS_PER_DAY) * 1000, vec.nulls)
    raise UnsupportedFeatureError(f"cast from {src} to {target}")


def _round_div_away(values: np.ndarray, unit: int) -> np.ndarray:
    """values / unit rounded half away from zero (DuckDB's nanosecond ->
    microsecond rounding)."""
    q, r = np.divmod(values, unit)                  # floor, r in [0, unit)
    neg = values < 0
    up = np.where(neg, 2 * r > unit, 2 * r >= unit)
    return q + up


def _keep_infinities(src: np.ndarray, out: np.ndarray, src_inf: int, dst_inf: int) -> np.ndarray:
    """``out`` with the rows holding +-``src_inf`` (the infinities) set to +-``dst_inf``."""
    pos, neg = src == src_inf, src == -src_inf
    if pos.any() or neg.any():
        out = np.where(pos, dst_inf, np.where(neg, -dst_inf, out))
    return out


def _check_range(values, valid, lo, hi, vec, target, message=None):
    bad = np.flatnonzero(valid & ((values < lo) | (values > hi)))
    if len(bad):
        if message is None:
            shown = _to_string(Vector(vec.type, vec.data[bad[:1]], None, vec.heap),
                               DataType("VARCHAR"))
            text = sk.views_to_pylist(shown.data, shown.heap)[0]
            message = f"Could not cast value {text} to {target}: out of range"
        raise ArithmeticOverflowError(message)


# ---------------------------------------------------------------- to text
def _pylist_vector(target, strings, nulls):
    views, heap, _ = sk.views_from_pylist(strings)
    return Vector(target, views, nulls, heap)


def _to_string(vec: Vector, target: DataType) -> Vector:
    src = vec.type
    data = vec.data
    nulls = vec.nulls
    if src.id == "BOOLEAN":
        words = np.array([b"false", b"true"], dtype=object)
        parts = words[data.astype(np.int64)]
        return _pylist_vector(target, list(parts), nulls)
    if src.is_decimal and data.dtype == object or src.id == "HUGEINT":
        vals = clean_object(vec)
        return _pylist_vector(target, [_format_decimal(int(v), src.scale) for v in vals], nulls)
    if src.is_decimal or src.is_integer and data.dtype != np.uint64:
        offsets, buf = nk.format_scaled(data.astype(np.int64), src.scale if src.is_decimal else 0)
        return string_vector(target, offsets, buf, nulls)
    if src.id == "UBIGINT":
        return _pylist_vector(target, [str(int(v)) for v in data], nulls)
    if src.id == "DOUBLE":
        return _pylist_vector(target, [_float_text(repr(float(v)), v) for v in data], nulls)
    if src.id == "FLOAT":
        return _pylist_vector(target, [_float32_text(v) for v in data.astype(np.float32)], nulls)
    if src.id == "UUID":
        import uuid
        bias = 1 << 127                              # scan/storage.py's UUID form
        texts = [str(uuid.UUID(int=(int(v) + bias) & (2**128 - 1))) for v in clean_object(vec)]
        return _pylist_vector(target, texts, nulls)
    if src.id == "INTERVAL":
        from planner.temporal import format_interval
        from scan.storage import interval_fields
        texts = [format_interval(*interval_fields(v)) if v is not None and ok else ""
                 for v, ok in zip(data, valid_mask(vec))]
        return _pylist_vector(target, texts, nulls)
    kind = _TEXT_KINDS.get(src.id)
    if kind is not None:
        offsets, buf = dk.format_values(data, kind)
        if src.id in _TZ:                           # DuckDB shows the offset: +00
            offsets, buf = _append_text(offsets, buf, b"+00", data, kind)
        return string_vector(target, offsets, buf, nulls)
    if src.id == "NULL":
        from engine.expr.vectors import literal_vector
        return literal_vector(None, target, len(data))
    raise UnsupportedFeatureError(f"cast from {src} to {target}")


_TEXT_KINDS = {"DATE": dk.KIND_DATE, "TIMESTAMP": dk.KIND_TIMESTAMP,
               "TIMESTAMPTZ": dk.KIND_TIMESTAMP, "TIMESTAMP_NS": dk.KIND_TIMESTAMP_NS,
               "TIMESTAMPTZ_NS": dk.KIND_TIMESTAMP_NS, "TIME": dk.KIND_TIME,
               "TIME_NS": dk.KIND_TIME_NS, "TIMETZ": dk.KIND_TIME}
_TZ = ("TIMESTAMPTZ", "TIMESTAMPTZ_NS", "TIMETZ")


def _append_text(offsets, buf, suffix: bytes, data, kind):
    """Every string with ``suffix`` appended (not to the infinities)."""
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    add = np.full(n, len(suffix), np.int64)
    if kind != dk.KIND_TIME:
        add[np.abs(data.astype(np.int64)) == dk.TIMESTAMP_INFINITY] = 0
    new_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths + add, out=new_offsets[1:])
    out = np.empty(int(new_offsets[-1]), np.uint8)
    row = np.repeat(np.arange(n), lengths)
    out[new_offsets[row] + (np.arange(len(buf)) - offsets[row])] = buf
    tail = np.flatnonzero(add)
    for k, byte in enumerate(suffix):
        out[new_offsets[tail] + lengths[tail] + k] = byte
    return new_offsets, out


_format_decimal = decimal_text


def _float32_text(v) -> str:
    """A FLOAT as DuckDB prints it: the shortest digits that read back as the
    same float32 (a decimal on the rounding boundary counts only when the
    float's mantissa is even, as in Ryu), positional for exponents -4..15
    ('10000000000.0'), else scientific ('1e+16'): Python's repr rules."""
    if not np.isfinite(v) or v == 0:
        return _float_text(str(v), v) if not np.isfinite(v) else ("-0.0" if np.signbit(v) else "0.0")
    digits, exp = _shortest_float32(np.float32(v))
    sign = "-" if v < 0 else ""
    if -4 <= exp < 16:
        point = exp + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _shortest_float32(v: np.float32) -> tuple[str, int]:
    """(significant digits, decimal exponent of the first) of |v|."""
    from decimal import Decimal, localcontext

    from planner.folding import EXACT
    a = abs(v)
    with localcontext(EXACT):
        exact = Decimal(float(a))
        lo = (Decimal(float(np.nextafter(a, np.float32(0)))) + exact) / 2
        hi = (Decimal(float(np.nextafter(a, np.float32(np.inf)))) + exact) / 2
        even = int(np.array(a, np.float32).view(np.uint32)) % 2 == 0
        for p in range(1, 10):
            text = f"{exact:.{p - 1}e}"
            cand = Decimal(text)
            if lo < cand < hi or even and (cand == lo or cand == hi):
                mant, _, e = text.partition("e")
                return mant.replace(".", "").rstrip("0") or "0", int(e)
    text = f"{exact:.8e}"
    mant, _, e = text.partition("e")
    return mant.replace(".", "").rstrip("0"), int(e)


def _float_text(text: str, v) -> str:
    """DuckDB prints a NaN whose sign bit is set (0.0 / 0.0 on x86) as -nan."""
    return "-nan" if text == "nan" and np.signbit(v) else text


# ---------------------------------------------------------------- from text
def _bad(value, target: DataType):
    name = _DUCK_INT_NAME.get(target.id, str(target))
    return ExecutionError(f"Could not convert string '{value}' to {name}")


def _row_strings(vec: Vector, rows: np.ndarray) -> list:
    return sk.views_to_pylist(np.ascontiguousarray(vec.data[rows]), vec.heap)


def _py_number(text: str, scale: int):
    """Python fallback parse of a number to an int scaled by 10**scale."""
    t = text.strip()
    try:
        if t.lower().startswith(("0x", "-0x", "+0x")):
            return int(t, 16) * 10 ** scale
        return scaled_int(t, scale)
    except (decimal.InvalidOperation, ValueError):
        return None


def _from_string(vec: Vector, target: DataType) -> Vector:
    valid = valid_mask(vec)
    offsets, buf = flat(vec)
    tid = target.id
    if target.is_integer or target.is_decimal:
        scale = target.scale if target.is_decimal else 0
        values, ok = nk.parse_scaled(offsets, buf, scale)
        bad_rows = np.flatnonzero(valid & ~ok)
        wide = target.numpy_dtype == object or target.is_integer and target.id in ("UBIGINT",)
        if wide:
            values = values.astype(object)
        if len(bad_rows):
            texts = _row_strings(vec, bad_rows)
            if not wide:
                values = values.astype(object)
            for r, t in zip(bad_rows.tolist(), texts):
                v = _py_number(t, scale)
                if v is None:
                    raise _bad(t, target)
                values[r] = v
        if target.is_integer:
            check_int_range(values, target, valid)
        else:
            check_precision(values, target.precision, valid, target)
        return Vector(target, _to_storage(values, target, valid), vec.nulls)
    if target.is_float:
        width = int(np.max(np.diff(offsets))) if len(offsets) > 1 else 1
        fixed = nk.pad_fixed(offsets, buf, max(width, 1))
        strs = fixed.view(f"S{max(width, 1)}").ravel()
        try:
            vals = strs.astype(np.float64)
        except ValueError:
            vals = np.zeros(len(strs), np.float64)
            for i in np.flatnonzero(valid).tolist():
                text = strs[i].decode("utf-8", "replace")
                try:
                    vals[i] = float(text)
                except ValueError:
                    raise _bad(text, target) from None
        return Vector(target, vals.astype(target.numpy_dtype), vec.nulls)
    if tid == "BOOLEAN":
        words = [None if w is None else w.strip().lower()
                 for w in sk.views_to_pylist(vec.data, vec.heap, vec.nulls)]
        out = np.zeros(len(words), np.bool_)
        for i, w in enumerate(words):
            if w is None:
                continue
            if w in ("true", "t", "1", "yes", "y", "on"):
                out[i] = True
            elif w not in ("false", "f", "0", "no", "n", "off"):
                raise _bad(w, target)
        return Vector(target, out, vec.nulls)
    if tid == "DATE" or tid in _TS or tid in _TS_NS:
        want_time = tid != "DATE"
        nanos = tid in _TS_NS
        values, ok = dk.parse_datetimes(offsets, buf, want_time, nanos)
        bad = np.flatnonzero(valid & ~ok)
        if len(bad):       # DuckDB's other forms: infinity, (BC), long years, offsets
            from planner.temporal import parse_datetime
            per_second = 1_000_000_000 if nanos else 1_000_000
            for r, text in zip(bad.tolist(), _row_strings(vec, bad)):
                try:
                    values[r] = parse_datetime(text, per_second, want_time)
                except (ValueError, OverflowError):
                    raise _bad(text, target) from None
        if tid == "DATE":
            return Vector(target, values.astype(np.int32), vec.nulls)
        return Vector(target, values, vec.nulls)
    if tid == "UUID":
        import uuid
        values = np.zeros(len(vec), object)
        for r, text in enumerate(sk.views_to_pylist(vec.data, vec.heap, vec.nulls)):
            if text is None:
                continue
            try:
                values[r] = uuid.UUID(text.strip()).int - (1 << 127)
            except ValueError:
                raise _bad(text, target) from None
        return Vector(target, values, vec.nulls)
    if tid in ("TIME", "TIME_NS", "TIMETZ"):
        from planner.temporal import parse_time
        per_second = 10 ** (9 if tid == "TIME_NS" else 6)
        values = np.zeros(len(vec), np.int64)
        for r, text in enumerate(sk.views_to_pylist(vec.data, vec.heap, vec.nulls)):
            if text is None:
                continue
            try:
                values[r] = parse_time(text, per_second, tid == "TIMETZ")
            except ValueError:
                raise _bad(text, target) from None
        return Vector(target, values, vec.nulls)
    raise UnsupportedFeatureError(f"cast from {vec.type} to {target}")
