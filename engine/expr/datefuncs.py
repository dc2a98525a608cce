"""Date functions: extract(part, x), date_add / date_sub with an interval,
date_trunc(part, x) and date_diff(part, start, end)."""

from __future__ import annotations

import numpy as np

from engine.block import Vector
from engine.errors import UnsupportedFeatureError
from engine.expr.cast import cast_vector
from engine.expr.vectors import merge_nulls
from engine.kernels import dates as dk
from planner.types import DOUBLE, DataType

_PARTS = {
    "year": 0, "years": 0, "y": 0, "yr": 0, "yrs": 0,
    "month": 1, "months": 1, "mon": 1, "mons": 1,
    "day": 2, "days": 2, "d": 2, "dayofmonth": 2,
    "quarter": 3, "quarters": 3,
    "dayofweek": 4, "dow": 4, "weekday": 4,
    "dayofyear": 5, "doy": 5,
    "week": 6, "weeks": 6, "w": 6, "weekofyear": 6,
    "isodow": 7, "isoyear": 8, "decade": 9, "century": 10, "millennium": 11,
}
_TIME_PARTS = {"hour": 3_600_000_000, "hours": 3_600_000_000, "h": 3_600_000_000,
               "minute": 60_000_000, "minutes": 60_000_000, "min": 60_000_000,
               "second": 1_000_000, "seconds": 1_000_000, "s": 1_000_000, "sec": 1_000_000}
_MODULO = {3_600_000_000: 24, 60_000_000: 60, 1_000_000: 60}


def _micros(x: Vector) -> np.ndarray:
    t = x.type.id
    if t == "DATE":
        return x.data.astype(np.int64) * dk.MICROS_PER_DAY
    if t == "TIMESTAMP_NS":
        return np.floor_divide(x.data, 1000)
    if t in ("TIMESTAMP", "TIMESTAMPTZ", "TIME"):
        return x.data.astype(np.int64)
    raise UnsupportedFeatureError(f"extract from {x.type}")


def _days(x: Vector) -> np.ndarray:
    if x.type.id == "DATE":
        return x.data.astype(np.int64)
    return np.floor_divide(_micros(x), dk.MICROS_PER_DAY)


def extract(part: str, x: Vector, out_type: DataType) -> Vector:
    p = part.lower().strip()
    if p in _PARTS:
        if x.type.id == "TIME":
            raise UnsupportedFeatureError(f"extract({part}) from TIME")
        res = dk.date_part(_days(x), _PARTS[p])
    elif p in _TIME_PARTS:
        unit = _TIME_PARTS[p]
        res = np.floor_divide(_micros(x), unit) % _MODULO[unit]
    elif p in ("millisecond", "milliseconds", "ms", "microsecond", "microseconds", "us"):
        within_minute = np.mod(_micros(x), 60_000_000)
        res = within_minute // 1000 if p.startswith("milli") or p == "ms" else within_minute
    elif p == "epoch":
        secs = _micros(x).astype(np.float64) / 1e6
        return cast_vector(Vector(DOUBLE, secs, x.nulls), out_type)
    else:
        raise UnsupportedFeatureError(f"extract part {part!r}")
    vec = Vector(DataType("BIGINT"), res.astype(np.int64), x.nulls)
    return cast_vector(vec, out_type)


def add_interval(x: Vector, interval, sign: int, out_type: DataType) -> Vector:
    """x + sign * interval; the result type (DATE or TIMESTAMP) is out_type."""
    months = sign * int(interval.months)
    days = sign * int(interval.days)
    micros = sign * int(interval.micros)
    if x.type.id == "DATE":
        d = x.data.astype(np.int64)
        if months:
            d = dk.add_months(d, np.int64(months))
        d = d + days
        if out_type.id == "DATE" and micros % dk.MICROS_PER_DAY == 0:
            return Vector(out_type, (d + micros // dk.MICROS_PER_DAY).astype(np.int32), x.nulls)
        ts = d * dk.MICROS_PER_DAY + micros
        return cast_vector(Vector(DataType("TIMESTAMP"), ts, x.nulls), out_type)
    if x.type.id in ("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP_NS"):
        t = _micros(x)
        if months:
            day = np.floor_divide(t, dk.MICROS_PER_DAY)
            tod = t - day * dk.MICROS_PER_DAY
            t = dk.add_months(day, np.int64(months)) * dk.MICROS_PER_DAY + tod
        t = t + days * dk.MICROS_PER_DAY + micros
        return cast_vector(Vector(DataType("TIMESTAMP"), t, x.nulls), out_type)
    if x.type.id == "TIME":
        t = np.mod(x.data.astype(np.int64) + micros, dk.MICROS_PER_DAY)
        return Vector(out_type, t, x.nulls)
    raise UnsupportedFeatureError(f"date arithmetic on {x.type}")


# date_trunc's parts below a day, in microseconds
_TRUNC_MICROS = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000}


def date_trunc(part: str, x: Vector, out_type: DataType) -> Vector:
    """x (DATE or TIMESTAMP) truncated to the start of its ``part``, as a
    TIMESTAMP (``part``: a name of planner/functions_dates.py TRUNC_PARTS)."""
    if part in _TRUNC_MICROS:
        t = _micros(x)
        return Vector(out_type, t - np.mod(t, _TRUNC_MICROS[part]), x.nulls)
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
    return Vector(out_type, out * dk.MICROS_PER_DAY, x.nulls)


def date_diff(part: str, a: Vector, b: Vector, out_type: DataType) -> Vector:
    """The number of ``part`` boundaries from a to b (DATE or TIMESTAMP;
    ``part``: a name of planner/functions_dates.py DIFF_PARTS)."""
    da, db = _days(a), _days(b)
    nulls = merge_nulls(a.nulls, b.nulls)
    if part == "day":
        return Vector(out_type, db - da, nulls)
    ya, ma, _ = dk.civil_from_days(da)
    yb, mb, _ = dk.civil_from_days(db)
    if part == "year":
        res = yb - ya
    elif part == "quarter":
        res = (yb * 4 + (mb - 1) // 3) - (ya * 4 + (ma - 1) // 3)
    else:
        res = (yb * 12 + mb) - (ya * 12 + ma)
    return Vector(out_type, res.astype(np.int64), nulls)
