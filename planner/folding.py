"""Constant folding of bound expressions.

Folds literal-only casts, arithmetic, date +/- interval and simple boolean
logic, so that pruning sees literals; and rewrites a comparison of a DATE
column (cast to TIMESTAMP) with a TIMESTAMP literal at midnight into a DATE
comparison, so the scan compares int32 days.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import math
from decimal import (ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal, InvalidOperation,
                     localcontext)

from planner import types as T
from planner import temporal
from planner.expressions import MIRRORED_COMPARISON, Call, Expr, Interval, Literal

EPOCH = _dt.date(1970, 1, 1)
EPOCH_DT = _dt.datetime(1970, 1, 1)
MICROS_PER_DAY = 86_400_000_000
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


# Decimal arithmetic (scaleb, quantize, *) rounds to the context's precision,
# 28 digits by default: DECIMAL(38) literals lost their low digits.  Every
# conversion here runs in this context, wide enough for any double's digits.
EXACT = Context(prec=1000, Emax=100_000, Emin=-100_000)


def scaled_int(text_or_value, scale: int) -> int:
    """A number (decimal text or Decimal/float) times 10**scale, rounded half
    away from zero (DuckDB), exact at any precision.  Raises InvalidOperation
    for text that is no number."""
    with localcontext(EXACT):
        d = text_or_value if isinstance(text_or_value, Decimal) else Decimal(text_or_value)
        if not d.is_finite():
            raise InvalidOperation
        return int(d.scaleb(scale).quantize(Decimal(1), ROUND_HALF_UP))


def decimal_text(v: int, scale: int) -> str:
    """DuckDB's text of a DECIMAL value (scaled int): all scale digits, no
    exponent."""
    if scale == 0:
        return str(v)
    digits = str(abs(v)).rjust(scale + 1, "0")
    return ("-" if v < 0 else "") + digits[:-scale] + "." + digits[-scale:]


class NotFoldable(Exception):
    """The literal conversion is not known at plan time (left to the engine)."""


def fold(expr: Expr) -> Expr:
    """A folded copy of expr (bottom-up)."""
    if not isinstance(expr, Call):
        return expr
    args = [fold(a) for a in expr.args]
    call = Call(expr.func, args, expr.type)
    try:
        if all(isinstance(a, Literal) for a in args) and args:
            value = _evaluate(call)
            if value is not _NO:
                return Literal(value, call.type)
    except (NotFoldable, ValueError):
        # a constant that fails (a cast out of range, bad text) is left to
        # run time, as in DuckDB: it raises only where a row evaluates it
        pass
    if call.func in ("and", "or"):
        return _fold_logic(call)
    if call.func in _COMPARISONS:
        return _date_comparison(call)
    return call


_NO = object()


def _evaluate(call: Call):
    f, args, t = call.func, call.args, call.type
    vals = [a.value for a in args]
    if f == "cast":
        return cast_value(vals[0], args[0].type, t)
    if f in ("add", "sub", "mul", "div", "intdiv", "mod", "neg"):
        if any(v is None for v in vals):
            return None
        return _arith(f, args, t)
    if f in ("date_add", "date_sub"):
        if vals[0] is None:
            return None
        iv = vals[1]
        if f == "date_sub":
            iv = Interval(-iv.months, -iv.days, -iv.micros)
        return add_interval(vals[0], args[0].type, iv, t)
    if f in _COMPARISONS:
        if any(v is None for v in vals):
            return None
        return compare_values(f, *vals)
    if f == "not":
        return None if vals[0] is None else (not vals[0])
    if f == "is_null":
        return vals[0] is None
    if f == "is_not_null":
        return vals[0] is not None
    return _NO


def _nan_key(v):
    """DuckDB's order of floats: NaN equals NaN and sorts above every number."""
    if isinstance(v, float) and v != v:
        return (1, 0.0)
    return (0, v)


def compare_values(op: str, a, b) -> bool:
    """op (eq ne lt le gt ge) on two non-NULL literal values, as the engine
    compares them (Python's NaN is unequal to itself and unordered)."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = _nan_key(a), _nan_key(b)
    if op == "eq":
        return a == b
    if op == "ne":
        return a != b
    if op == "lt":
        return a < b
    if op == "le":
        return a <= b
    if op == "gt":
        return a > b
    return a >= b


def _fold_logic(call: Call) -> Expr:
    absorbing = call.func == "or"          # TRUE absorbs OR, FALSE absorbs AND
    keep = []
    for a in call.args:
        if isinstance(a, Literal) and a.value is not None:
            if bool(a.value) == absorbing:
                return Literal(absorbing, T.BOOLEAN)
            continue                       # neutral element
        keep.append(a)
    if not keep:
        return Literal(not absorbing, T.BOOLEAN)
    if len(keep) == 1:
        return keep[0]
    return Call(call.func, keep, call.type)


def _date_comparison(call: Call) -> Expr:
    """cmp(cast(date_col AS TIMESTAMP), TIMESTAMP literal at midnight) ->
    cmp(date_col, DATE literal)."""
    a, b = call.args
    func = call.func
    if isinstance(a, Literal):
        a, b, func = b, a, MIRRORED_COMPARISON[func]
    if (isinstance(a, Call) and a.func == "cast" and a.type.id == "TIMESTAMP"
            and a.args[0].type.id == "DATE" and isinstance(b, Literal)
            and b.type.id == "TIMESTAMP" and b.value is not None):
        days, rem = divmod(b.value, MICROS_PER_DAY)
        if rem == 0:
            return Call(func, [a.args[0], Literal(days, T.DATE)], call.type)
        # not midnight: strict and non-strict bounds collapse onto whole days
        if func in ("lt", "le"):
            return Call("le", [a.args[0], Literal(days, T.DATE)], call.type)
        if func in ("gt", "ge"):
            return Call("gt", [a.args[0], Literal(days, T.DATE)], call.type)
    return call


# ---- literal conversion -------------------------------------------------

def parse_date(text: str) -> int:
    try:
        return (_dt.date.fromisoformat(text.strip()) - EPOCH).days
    except ValueError:
        pass
    try:            # DuckDB's other forms: infinity, (BC), years past 9999
        return temporal.parse_datetime(text, with_time=False)
    except ValueError:
        raise ValueError(f"invalid DATE literal {text!r}") from None


def parse_timestamp(text: str, per_second: int = 1_000_000) -> int:
    s = text.strip()
    try:
        d = _dt.datetime.fromisoformat(s)
    except ValueError:
        d = None
    if d is None or per_second != 1_000_000:
        try:        # nanoseconds, infinity, (BC), years past 9999
            return temporal.parse_datetime(text, per_second)
        except ValueError:
            raise ValueError(f"invalid TIMESTAMP literal {text!r}") from None
    if d.tzinfo is not None:
        d = d.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    delta = d - EPOCH_DT
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def format_date(days: int) -> str:
    return temporal.format_date(days)


def format_timestamp(micros: int) -> str:
    return temporal.format_timestamp(micros)


def _round_half_away(num: int, den: int) -> int:
    q, r = divmod(abs(num), den)
    if 2 * r >= den:
        q += 1
    return q if num >= 0 else -q


def _as_float_type(v: float, t: T.DataType) -> float:
    """A FLOAT literal holds a float32 value (0.6::FLOAT <> 0.6::DOUBLE)."""
    if t.id == "FLOAT":
        import numpy as np
        with np.errstate(over="ignore"):
            f = float(np.float32(v))
        if math.isinf(f) and math.isfinite(v):
            raise ValueError(f"value {v} is out of range for FLOAT")   # (left to run time)
        return f
    return v


def _check_int(v: int, t: T.DataType) -> int:
    bits = {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64, "HUGEINT": 128}
    ubits = {"UTINYINT": 8, "USMALLINT": 16, "UINTEGER": 32, "UBIGINT": 64}
    if t.id in bits and not -2 ** (bits[t.id] - 1) <= v < 2 ** (bits[t.id] - 1):
        raise ValueError(f"value {v} is out of range for {t}")
    if t.id in ubits and not 0 <= v < 2 ** ubits[t.id]:
        raise ValueError(f"value {v} is out of range for {t}")
    return v


def _check_decimal(v: int, t: T.DataType) -> int:
    if abs(v) >= 10 ** t.precision:
        raise ValueError(f"value does not fit {t}")
    return v


def cast_value(v, src: T.DataType, dst: T.DataType):
    """Convert a literal value (storage form) from src to dst.  Raises
    ValueError for invalid input, NotFoldable for conversions left to run time."""
    if v is None or src == dst:
        return v
    s, d = src.id, dst.id
    if s == "VARCHAR":
        text = v
        if d == "DATE":
            return parse_date(text)
        if d in ("TIMESTAMP", "TIMESTAMPTZ"):
            return parse_timestamp(text)
        if d in ("TIMESTAMP_NS", "TIMESTAMPTZ_NS"):
            return parse_timestamp(text, 1_000_000_000)
        if d in ("TIME", "TIME_NS", "TIMETZ"):
            try:
                return temporal.parse_time(text, 10 ** (9 if d == "TIME_NS" else 6), d == "TIMETZ")
            except ValueError:
                raise ValueError(f"invalid {dst} literal {text!r}") from None
        if dst.is_integer or dst.is_decimal:
            scale = dst.scale if dst.is_decimal else 0
            try:
                v = int(text.strip()) * 10 ** scale
            except ValueError:
                try:                        # DuckDB rounds '2.5' to 3
                    v = scaled_int(text.strip(), scale)
                except (InvalidOperation, ValueError):
                    raise ValueError(f"could not convert string {text!r} to {dst}") from None
            return _check_int(v, dst) if dst.is_integer else _check_decimal(v, dst)
        if dst.is_float:
            raise NotFoldable               # 'nan', 'inf', '1e400': the engine's parser
        if d == "BOOLEAN":
            low = text.strip().lower()
            if low in ("true", "t", "1", "yes", "y"):
                return True
            if low in ("false", "f", "0", "no", "n"):
                return False
            raise ValueError(f"could not convert string {text!r} to BOOLEAN")
        if d == "BLOB":
            return text.encode()
        if d == "UUID":             # storage: DuckDB's hugeint form (scan/storage.py)
            import uuid
            try:
                return uuid.UUID(text.strip()).int - (1 << 127)
            except ValueError:
                raise ValueError(f"could not convert string {text!r} to UUID") from None
        raise NotFoldable
    if s == "NULL":
        return None
    if s == "BOOLEAN" and d == "VARCHAR":
        return "true" if v else "false"
    if src.is_integer or s == "BOOLEAN":
        v = int(v)
        if dst.is_integer:
            return _check_int(v, dst)
        if dst.is_decimal:
            return _check_decimal(v * 10 ** dst.scale, dst)
        if dst.is_float:
            return _as_float_type(float(v), dst)
        if d == "BOOLEAN":
            return v != 0
        if d == "VARCHAR":
            return str(v)
        raise NotFoldable
    if src.is_decimal:
        if dst.is_decimal:
            if dst.scale >= src.scale:
                return _check_decimal(v * 10 ** (dst.scale - src.scale), dst)
            return _check_decimal(_round_half_away(v, 10 ** (src.scale - dst.scale)), dst)
        if dst.is_integer:
            return _check_int(_round_half_away(v, 10 ** src.scale), dst)
        if dst.is_float:
            return _as_float_type(v / 10 ** src.scale, dst)
        if d == "VARCHAR":
            return decimal_text(v, src.scale)
        raise NotFoldable
    if src.is_float:
        if dst.is_float:
            return _as_float_type(float(v), dst)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"could not cast {v} to {dst}")
        if dst.is_integer:          # DuckDB: double -> integer rounds half to even
            with localcontext(EXACT):
                return _check_int(int(Decimal(v).quantize(Decimal(1), ROUND_HALF_EVEN)), dst)
        if dst.is_decimal:
            return _check_decimal(scaled_int(Decimal(v), dst.scale), dst)
        raise NotFoldable
    if s == "DATE":
        if d in ("TIMESTAMP", "TIMESTAMPTZ"):
            return v * MICROS_PER_DAY
        if d == "VARCHAR":
            return format_date(v)
        raise NotFoldable
    if s in ("TIMESTAMP", "TIMESTAMPTZ"):
        if d == "DATE":
            return v // MICROS_PER_DAY
        if d in ("TIMESTAMP", "TIMESTAMPTZ"):
            return v
        if d == "VARCHAR":
            return format_timestamp(v)
        raise NotFoldable
    raise NotFoldable


def _arith(f: str, args: list[Literal], t: T.DataType):
    if f == "neg":
        v = -args[0].value
        try:
            if t.is_integer:
                return _check_int(v, t)     # -INT64_MIN overflows: the engine raises
            if t.is_decimal:
                return _check_decimal(v, t)
        except ValueError:
            raise NotFoldable from None
        return v
    a, b = args
    if t.is_float:
        x, y = (_as_float(a), _as_float(b))
        if f == "add":
            return x + y
        if f == "sub":
            return x - y
        if f == "mul":
            return x * y
        if y == 0 or f not in ("div", "intdiv"):
            raise NotFoldable                    # by zero, %: the engine's rules
        return x / y                             # DuckDB: // of floats is /
    if t.is_integer:
        x, y = a.value, b.value
        if f in ("intdiv", "mod", "div") and y == 0:
            raise NotFoldable
        if f == "add":
            r = x + y
        elif f == "sub":
            r = x - y
        elif f == "mul":
            r = x * y
        elif f == "intdiv":
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        elif f == "mod":
            r = abs(x) % abs(y) * (1 if x >= 0 else -1)
        else:
            raise NotFoldable
        try:
            return _check_int(r, t)
        except ValueError:
            raise NotFoldable from None
    if t.is_decimal:
        sa = a.type.scale if a.type.is_decimal else 0
        sb = b.type.scale if b.type.is_decimal else 0
        x, y = a.value, b.value
        if f == "mul":
            r = x * y * 10 ** (t.scale - sa - sb) if t.scale >= sa + sb else None
            if r is None:
                raise NotFoldable
        elif f in ("add", "sub"):
            x, y = x * 10 ** (t.scale - sa), y * 10 ** (t.scale - sb)
            r = x + y if f == "add" else x - y
        else:
            raise NotFoldable
        if abs(r) >= 10 ** t.precision:
            raise NotFoldable
        return r
    raise NotFoldable


def _as_float(lit: Literal) -> float:
    if lit.type.is_decimal:
        return lit.value / 10 ** lit.type.scale
    return float(lit.value)


def add_interval(v: int, src: T.DataType, iv: Interval, dst: T.DataType) -> int:
    """DATE/TIMESTAMP value + interval, as dst (DATE days or TIMESTAMP micros).
    Months are added on the calendar, the day clamped to the month's end."""
    micros = v * MICROS_PER_DAY if src.id == "DATE" else v
    if src.id not in ("DATE", "TIMESTAMP", "TIMESTAMPTZ"):
        raise NotFoldable
    if iv.months:
        days, rem = divmod(micros, MICROS_PER_DAY)
        d = EPOCH + _dt.timedelta(days=days)
        m = d.month - 1 + iv.months
        year, month = d.year + m // 12, m % 12 + 1
        day = min(d.day, calendar.monthrange(year, month)[1])
        micros = (_dt.date(year, month, day) - EPOCH).days * MICROS_PER_DAY + rem
    micros += iv.days * MICROS_PER_DAY + iv.micros
    if dst.id == "DATE":
        return micros // MICROS_PER_DAY
    return micros
