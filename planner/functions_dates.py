"""Typing of the date functions (DuckDB's rules, checked with typeof()):

    extract(part, x) and its spellings (year(x), date_part('month', x), ...)
        -> BIGINT (DOUBLE for epoch)
    date_trunc(part, DATE or TIMESTAMP)   -> TIMESTAMP
    date_diff(part, start, end)           -> BIGINT (and DATE - DATE: days)

A VARCHAR literal argument is read as a TIMESTAMP (extract, date_trunc) or a
DATE (date_diff).  DATE/TIMESTAMP +/- INTERVAL is an operator
(planner/functions.py arithmetic).
"""

from __future__ import annotations

from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, Expr, Literal
from planner.functions import cast

EXTRACT_PARTS = {"year", "quarter", "month", "day", "dayofweek", "isodow", "dayofyear",
                 "week", "hour", "minute", "second", "millisecond", "microsecond", "epoch"}
_EXTRACT_ALIASES = {"dow": "dayofweek", "doy": "dayofyear", "years": "year", "months": "month",
                    "days": "day", "hours": "hour", "minutes": "minute", "seconds": "second"}
TRUNC_PARTS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
DIFF_PARTS = ("year", "quarter", "month", "day")
_UNIT_ALIASES = {"years": "year", "quarters": "quarter", "months": "month", "weeks": "week",
                 "days": "day", "hours": "hour", "minutes": "minute", "seconds": "second",
                 "yy": "year", "yyyy": "year", "mm": "month", "dd": "day", "d": "day"}


def extract(part: str, x: Expr) -> Call:
    p = part.lower()
    p = _EXTRACT_ALIASES.get(p, p)
    if p not in EXTRACT_PARTS:
        raise UnsupportedFeatureError(f"EXTRACT({part.upper()} ...) is not supported")
    if isinstance(x, Literal) and x.type.id == "VARCHAR":
        x = cast(x, T.TIMESTAMP)
    if not (x.type.is_temporal or x.type.id == "NULL"):
        raise TypeError(f"cannot extract {p} from {x.type}")
    return Call("extract", [Literal(p, T.VARCHAR), x], T.DOUBLE if p == "epoch" else T.BIGINT)


def _unit(part: str) -> str:
    """A date_trunc / date_diff part in its canonical spelling."""
    p = part.lower().strip()
    return _UNIT_ALIASES.get(p, p)


def date_trunc(part: str, x: Expr) -> Call:
    p = _unit(part)
    if p not in TRUNC_PARTS:
        raise UnsupportedFeatureError(f"date_trunc('{part}', ...) is not supported")
    if isinstance(x, Literal) and x.type.id == "VARCHAR":
        x = cast(x, T.TIMESTAMP)
    if x.type.id not in ("DATE", "TIMESTAMP", "NULL"):
        raise TypeError(f"date_trunc needs DATE or TIMESTAMP, got {x.type}")
    return Call("date_trunc", [Literal(p, T.VARCHAR), x], T.TIMESTAMP)


def date_diff(part: str, start: Expr, end: Expr) -> Call:
    """Number of ``part`` boundaries between start and end (end - start)."""
    p = _unit(part)
    if p not in DIFF_PARTS:
        raise UnsupportedFeatureError(f"date_diff('{part}', ...) is not supported")
    args = []
    for e in (start, end):
        if isinstance(e, Literal) and e.type.id == "VARCHAR":
            e = cast(e, T.DATE)
        if e.type.id not in ("DATE", "TIMESTAMP", "NULL"):
            raise TypeError(f"date_diff needs DATE or TIMESTAMP, got {e.type}")
        args.append(e)
    return Call("date_diff", [Literal(p, T.VARCHAR)] + args, T.BIGINT)
