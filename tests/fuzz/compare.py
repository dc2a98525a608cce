"""Result comparison: multisets (or lists under a total ORDER BY); floats
within a relative tolerance, NaN equal to NaN; decimals and everything else
exactly."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

REL = 1e-9


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
        return fa == fb or abs(fa - fb) <= REL * max(abs(fa), abs(fb)) or abs(fa - fb) < 1e-12
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal)):
        return Decimal(a) == Decimal(b)
    return type(a) is type(b) and a == b


def _key(v):
    """A sort key that puts equal (and nearly equal) values together."""
    if v is None:
        return (0, 0, "")
    if isinstance(v, bool):
        return (1, int(v), "")
    if isinstance(v, float):
        if math.isnan(v):
            return (2, math.inf, "nan")
        return (2, float(f"{v:.6g}"), "")
    if isinstance(v, (int, Decimal)):
        return (2, float(f"{float(v):.6g}"), "")
    return (3, 0, repr(v))


def _row_key(row):
    return tuple(_key(v) for v in row)


def differ(got: list[tuple], want: list[tuple], ordered: bool) -> str | None:
    """None when the results agree, else a short description."""
    if len(got) != len(want):
        return f"{len(got)} rows, DuckDB {len(want)}:\n  got  {got[:8]}\n  want {want[:8]}"
    if not ordered:
        got, want = sorted(got, key=_row_key), sorted(want, key=_row_key)
    for i, (g, w) in enumerate(zip(got, want)):
        if len(g) != len(w) or not all(same_value(a, b) for a, b in zip(g, w)):
            if not ordered and _multiset_equal(got, want):
                return None
            return f"row {i}: got {g!r}\n  DuckDB {w!r}"
    return None


def _multiset_equal(got, want) -> bool:
    """Slow exact matching, for rows whose sort keys tie differently."""
    if len(got) > 3000:
        return False
    left = list(want)
    for g in got:
        for j, w in enumerate(left):
            if len(g) == len(w) and all(same_value(a, b) for a, b in zip(g, w)):
                del left[j]
                break
        else:
            return False
    return True
