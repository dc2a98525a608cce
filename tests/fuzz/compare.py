"""Result comparison: multisets (or lists under a total ORDER BY); floats
within a relative tolerance, NaN equal to NaN; decimals and everything else
exactly."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

REL = 1e-9
ABS = 1e-6


def same_value(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (str, bool, dt.date)) or isinstance(b, (str, bool, dt.date)):
            return False
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        if math.isinf(fa) or math.isinf(fb):
            return fa == fb
        # ABS: float sums whose terms cancel (2147483647 / 1.5 - 2147483648 / 1.5 + ...)
        # keep the terms' rounding error, which depends on the order of the rows
        return fa == fb or abs(fa - fb) <= REL * max(abs(fa), abs(fb)) or abs(fa - fb) <= ABS
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal)):
        return Decimal(a) == Decimal(b)
    return type(a) is type(b) and a == b


def _exact_part(v):
    """A row's value with floats blanked: rows that match have equal parts."""
    if v is None:
        return (0, "")
    if isinstance(v, float):
        return (1, "f")
    if isinstance(v, bool):
        return (2, str(v))
    if isinstance(v, (int, Decimal)):
        return (3, Decimal(v))
    return (4, repr(v))


def _float_part(row):
    return tuple((1, 0.0) if v != v else (0, v) for v in row if isinstance(v, float))


def differ(got: list[tuple], want: list[tuple], ordered: bool) -> str | None:
    """None when the results agree, else a short description."""
    if len(got) != len(want):
        return f"{len(got)} rows, DuckDB {len(want)}:\n  got  {got[:8]}\n  want {want[:8]}"
    if not ordered:
        got, want = _canonical(got), _canonical(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if len(g) != len(w) or not all(same_value(a, b) for a, b in zip(g, w)):
            return f"row {i}: got {g!r}\n  DuckDB {w!r}"
    return None


def _canonical(rows):
    """Rows sorted by their exact values, floats last: rows equal up to float
    tolerance end up at the same position in both results."""
    def key(row):
        return (tuple(_exact_part(v) for v in row), _float_part(row))
    try:
        return sorted(rows, key=key)
    except TypeError:                   # values of different types in one column
        return sorted(rows, key=lambda row: repr(key(row)))
