"""Binding of the scalar functions the expression binder's dispatch does not
name itself (planner/binder_expressions.py asks here for every other
function node): typeof, nullif, floor / ceil(ing), trim / ltrim / rtrim,
starts_with, contains, date_trunc / datetrunc, date_diff / datediff, and
concat(), whose NULL arguments count as '' (unlike ||).  Each comes as a
sqlglot node of its own or, where sqlglot does not know it, as an
Anonymous call by name.  Their typing lives with their kind
(functions_strings.py, functions_dates.py, functions_numbers.py,
functions.py).

Types follow DuckDB (checked with typeof()): floor/ceil(DECIMAL(p,s)) ->
DECIMAL(p,0), of integers and floats -> DOUBLE; date_trunc(part, DATE) ->
TIMESTAMP; date_diff and DATE - DATE -> BIGINT; nullif(a, b) -> type of a.
"""

from __future__ import annotations

from sqlglot import exp

from planner import functions as F
from planner import functions_dates as dates
from planner import functions_numbers as numbers
from planner import functions_strings as strings
from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import Expr, Literal

# the names bound here when sqlglot parses them as Anonymous calls
_BY_NAME = {"typeof", "nullif", "floor", "ceil", "ceiling", "trim", "ltrim", "rtrim",
            "starts_with", "contains", "date_trunc", "datetrunc", "date_diff", "datediff"}


def bind_function(eb, node) -> Expr | None:
    """The bound call of ``node`` (a sqlglot function node) when it is one of
    the functions above, else None; ``eb`` is the ExpressionBinder."""
    bind = eb._bind
    cls = type(node)
    if cls is exp.Anonymous:
        name = node.name.lower()
        if name not in _BY_NAME:
            return None
        return _by_name(eb, name, [bind(a) for a in node.expressions], node)
    if cls is exp.Typeof:
        return F.typeof(bind(node.this))
    if cls is exp.Nullif:
        return F.nullif(bind(node.this), bind(node.expression))
    if cls in (exp.Floor, exp.Ceil):
        if node.args.get("decimals") is not None or node.args.get("to") is not None:
            raise UnsupportedFeatureError(f"{cls.__name__.lower()}() with digits is not supported")
        return numbers.floor_ceil("floor" if cls is exp.Floor else "ceil", bind(node.this))
    if cls is exp.Trim:
        chars = node.args.get("expression")
        if chars is not None:
            c = bind(chars)
            if not (isinstance(c, Literal) and c.value == " "):
                raise UnsupportedFeatureError("trim() of characters other than ' ' is not supported")
        pos = (node.args.get("position") or "BOTH").upper()
        func = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[pos]
        return strings.trim(func, bind(node.this))
    if cls in (exp.StartsWith, exp.Contains):
        name = "starts_with" if cls is exp.StartsWith else "contains"
        return strings.pattern_test(name, bind(node.this), bind(node.expression))
    if cls in (exp.TimestampTrunc, exp.DateTrunc):
        unit = node.args.get("unit")
        return dates.date_trunc(unit.name if unit is not None else "", bind(node.this))
    if cls is exp.DateDiff:
        unit = node.args.get("unit")
        return dates.date_diff(unit.name if unit is not None else "day",
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
        return F.typeof(args[0])
    if name == "nullif":
        need(2)
        return F.nullif(*args)
    if name in ("floor", "ceil", "ceiling"):
        need(1)
        return numbers.floor_ceil("floor" if name == "floor" else "ceil", args[0])
    if name in ("trim", "ltrim", "rtrim"):
        need(1)
        return strings.trim(name, args[0])
    if name in ("starts_with", "contains"):
        need(2)
        return strings.pattern_test(name, *args)
    if name in ("date_trunc", "datetrunc"):
        need(2)
        return dates.date_trunc(_constant_part(eb, args[0], name, node), args[1])
    need(3)
    return dates.date_diff(_constant_part(eb, args[0], name, node), args[1], args[2])


def _constant_part(eb, e: Expr, name: str, node) -> str:
    if not (isinstance(e, Literal) and isinstance(e.value, str)):
        raise UnsupportedFeatureError(f"{name}() with a non-constant part is not supported")
    return e.value
