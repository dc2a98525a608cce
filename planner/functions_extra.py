"""Binding and typing of the scalar functions beyond planner/functions.py:
typeof, nullif, floor, ceil, trim/ltrim/rtrim, starts_with, contains,
date_trunc, date_diff (and DATE - DATE), concat() with NULL skipping.

``bind_extra_function`` is called by the expression binder for every
function node it does not handle itself; it returns None for names it does
not know either.  Types follow DuckDB 2.0 (checked with typeof()):
floor/ceil(DECIMAL(p,s)) -> DECIMAL(p,0), of integers and floats -> DOUBLE;
date_trunc(part, DATE) -> TIMESTAMP; date_diff and DATE - DATE -> BIGINT;
nullif(a, b) -> type of a.
"""

from __future__ import annotations

from sqlglot import exp

from planner import functions as F
from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, Expr, Literal

TRUNC_PARTS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
DIFF_PARTS = ("year", "quarter", "month", "day")
_PART_ALIASES = {"years": "year", "quarters": "quarter", "months": "month", "weeks": "week",
                 "days": "day", "hours": "hour", "minutes": "minute", "seconds": "second",
                 "yy": "year", "yyyy": "year", "mm": "month", "dd": "day", "d": "day"}
_ANONYMOUS = {"typeof", "nullif", "floor", "ceil", "ceiling", "trim", "ltrim", "rtrim",
              "starts_with", "contains", "date_trunc", "datetrunc", "date_diff", "datediff"}


def bind_extra_function(eb, node) -> Expr | None:
    bind = eb._bind
    cls = type(node)
    if cls is exp.Anonymous:
        name = node.name.lower()
        if name not in _ANONYMOUS:
            return None
        return _by_name(eb, name, [bind(a) for a in node.expressions], node)
    if cls is exp.Typeof:
        return typeof(bind(node.this))
    if cls is exp.Nullif:
        return nullif(bind(node.this), bind(node.expression))
    if cls in (exp.Floor, exp.Ceil):
        if node.args.get("decimals") is not None or node.args.get("to") is not None:
            raise UnsupportedFeatureError(f"{cls.__name__.lower()}() with digits is not supported")
        return floor_ceil("floor" if cls is exp.Floor else "ceil", bind(node.this))
    if cls is exp.Trim:
        chars = node.args.get("expression")
        if chars is not None:
            c = bind(chars)
            if not (isinstance(c, Literal) and c.value == " "):
                raise UnsupportedFeatureError("trim() of characters other than ' ' is not supported")
        pos = (node.args.get("position") or "BOTH").upper()
        func = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[pos]
        return trim(func, bind(node.this))
    if cls in (exp.StartsWith, exp.Contains):
        name = "starts_with" if cls is exp.StartsWith else "contains"
        return pattern_test(name, bind(node.this), bind(node.expression))
    if cls in (exp.TimestampTrunc, exp.DateTrunc):
        unit = node.args.get("unit")
        return date_trunc(unit.name if unit is not None else "", bind(node.this))
    if cls is exp.DateDiff:
        unit = node.args.get("unit")
        return date_diff(unit.name if unit is not None else "day",
                         bind(node.expression), bind(node.this))
    if cls is exp.Concat and node.args.get("coalesce"):
        # concat(): NULL arguments count as '' (unlike ||)
        args = [F.cast(bind(a), T.VARCHAR) for a in node.expressions]
        return F.concat([F.coalesce([a, Literal("", T.VARCHAR)]) for a in args])
    return None


def _by_name(eb, name: str, args: list[Expr], node) -> Expr:
    def need(k: int):
        if len(args) != k:
            raise eb.ctx.error(f"{name}() takes {k} argument{'s' if k != 1 else ''}", node)
    if name == "typeof":
        need(1)
        return typeof(args[0])
    if name == "nullif":
        need(2)
        return nullif(*args)
    if name in ("floor", "ceil", "ceiling"):
        need(1)
        return floor_ceil("floor" if name == "floor" else "ceil", args[0])
    if name in ("trim", "ltrim", "rtrim"):
        need(1)
        return trim(name, args[0])
    if name in ("starts_with", "contains"):
        need(2)
        return pattern_test(name, *args)
    if name in ("date_trunc", "datetrunc"):
        need(2)
        return date_trunc(_constant_part(eb, args[0], name, node), args[1])
    need(3)
    return date_diff(_constant_part(eb, args[0], name, node), args[1], args[2])


def _constant_part(eb, e: Expr, name: str, node) -> str:
    if not (isinstance(e, Literal) and isinstance(e.value, str)):
        raise UnsupportedFeatureError(f"{name}() with a non-constant part is not supported")
    return e.value


def _part(part: str) -> str:
    p = part.lower().strip()
    return _PART_ALIASES.get(p, p)


def typeof(x: Expr) -> Literal:
    return Literal(str(x.type) if x.type.id != "NULL" else '"NULL"', T.VARCHAR)


def nullif(a: Expr, b: Expr) -> Expr:
    out = a.type if a.type.id != "NULL" else T.INTEGER
    test = F.comparison("eq", a, b)
    return Call("case", [test, Literal(None, out), F.cast(a, out)], out)


def floor_ceil(func: str, x: Expr) -> Expr:
    t = x.type
    if t.is_decimal:
        return Call(func, [x], T.DECIMAL(t.precision, 0)) if t.scale else x
    if t.is_numeric or t.id == "NULL":
        return Call(func, [F.cast(x, T.DOUBLE)], T.DOUBLE)
    raise TypeError(f"{func} needs a number, got {t}")


def trim(func: str, x: Expr) -> Call:
    if not (x.type.is_string or x.type.id == "NULL"):
        raise TypeError(f"{func} needs VARCHAR, got {x.type}")
    return Call(func, [F.cast(x, T.VARCHAR)], T.VARCHAR)


def pattern_test(name: str, x: Expr, needle: Expr) -> Expr:
    """starts_with / contains as LIKE with the needle escaped."""
    if not (isinstance(needle, Literal) and needle.type.id in ("VARCHAR", "NULL")):
        raise UnsupportedFeatureError(f"{name}() with a non-constant second argument is not supported")
    if needle.value is None:
        return Literal(None, T.BOOLEAN)
    escaped = "".join("\\" + c if c in "%_\\" else c for c in needle.value)
    pattern = escaped + "%" if name == "starts_with" else "%" + escaped + "%"
    return F.like("like", x, Literal(pattern, T.VARCHAR), Literal("\\", T.VARCHAR))


def date_trunc(part: str, x: Expr) -> Call:
    p = _part(part)
    if p not in TRUNC_PARTS:
        raise UnsupportedFeatureError(f"date_trunc('{part}', ...) is not supported")
    if isinstance(x, Literal) and x.type.id == "VARCHAR":
        x = F.cast(x, T.TIMESTAMP)
    if x.type.id not in ("DATE", "TIMESTAMP", "NULL"):
        raise TypeError(f"date_trunc needs DATE or TIMESTAMP, got {x.type}")
    return Call("date_trunc", [Literal(p, T.VARCHAR), x], T.TIMESTAMP)


def date_diff(part: str, start: Expr, end: Expr) -> Call:
    """Number of ``part`` boundaries between start and end (end - start)."""
    p = _part(part)
    if p not in DIFF_PARTS:
        raise UnsupportedFeatureError(f"date_diff('{part}', ...) is not supported")
    args = []
    for e in (start, end):
        if isinstance(e, Literal) and e.type.id == "VARCHAR":
            e = F.cast(e, T.DATE)
        if e.type.id not in ("DATE", "TIMESTAMP", "NULL"):
            raise TypeError(f"date_diff needs DATE or TIMESTAMP, got {e.type}")
        args.append(e)
    return Call("date_diff", [Literal(p, T.VARCHAR)] + args, T.BIGINT)
