"""Typing of operators, conditionals and aggregates (DuckDB's rules).

Each binder here takes bound argument expressions and returns a typed Call
with the casts its operands need (see planner/expressions.py).  They raise
TypeError for operand types that do not fit; the expression binder turns that
into a BinderError with the position of the SQL text.

The named scalar functions are typed by kind next door, the same way:
functions_strings.py, functions_dates.py, functions_numbers.py and
functions_nested.py.
"""

from __future__ import annotations

from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import AggregateCall, Call, Expr, Interval, Literal


def cast(expr: Expr, to: T.DataType) -> Expr:
    """expr converted to type ``to`` (no-op when it already has it)."""
    if expr.type == to:
        return expr
    if isinstance(expr, Literal) and expr.value is None:
        return Literal(None, to)
    return Call("cast", [expr], to)


def unify(exprs: list[Expr], what: str, comparison: bool = False) -> list[Expr]:
    """Cast every expression to the common type of all of them (for a
    comparison or IN list: T.comparison_type, else T.common_type).  Integer
    literals that fit the others' integer type take it (DuckDB's integer
    literals: coalesce(tinyint_col, 3) is TINYINT)."""
    typed = [e for e in exprs if integer_literal(e) is None] or exprs
    target = typed[0].type
    for e in typed[1:]:
        target = _common_with_literals(target, e, exprs, comparison)
    for e in exprs:
        if e not in typed and not _fits(integer_literal(e), target):
            target = _common_with_literals(target, e, exprs, comparison)
    return [cast(e, target) for e in exprs]


class SQLIntegerLiteral(Literal):
    """An integer literal as written in the SQL text: DuckDB lets it take the
    type of a narrower integer operand it fits (``tinyint_col + 1`` is
    TINYINT); ``1::INTEGER`` or ``1 + 1`` are plain INTEGERs."""


def integer_literal(e: Expr) -> int | None:
    """The value of an integer literal as written in SQL (``3``, ``-3``)."""
    if isinstance(e, SQLIntegerLiteral):
        return e.value
    if isinstance(e, Call) and e.func == "neg" and len(e.args) == 1:
        v = integer_literal(e.args[0])
        return None if v is None else -v
    return None


_NARROW = {"TINYINT": (-2**7, 2**7 - 1), "SMALLINT": (-2**15, 2**15 - 1),
           "UTINYINT": (0, 2**8 - 1), "USMALLINT": (0, 2**16 - 1), "UINTEGER": (0, 2**32 - 1)}


def _fits(v: int | None, t: T.DataType) -> bool:
    """An integer literal's value fits a narrow integer type t: it adopts t."""
    if v is None or t.id not in _NARROW:
        return False
    lo, hi = _NARROW[t.id]
    return lo <= v <= hi


def _adapt_literal(e: Expr, other: T.DataType) -> Expr:
    v = integer_literal(e)
    return Literal(v, other) if _fits(v, other) else e


def _common_with_literals(target: T.DataType, e: Expr, exprs: list[Expr],
                          comparison: bool) -> T.DataType:
    try:
        if comparison:
            return T.comparison_type(target, e.type)
        return T.common_type(target, e.type)
    except TypeError:
        # a string literal adopts the other side's type (DuckDB: x = '5')
        if _is_string_literal(e):
            return target
        if target.id == "VARCHAR" and all(_is_string_literal(x) or x.type == e.type
                                          for x in exprs if x.type.id == "VARCHAR"):
            return e.type
        raise


def _is_string_literal(e: Expr) -> bool:
    return isinstance(e, Literal) and e.type.id == "VARCHAR"


# ---- operators ------------------------------------------------------------

def comparison(op: str, a: Expr, b: Expr) -> Call:
    a, b = unify([a, b], op, comparison=True)
    if a.type.id == "NULL":
        a, b = cast(a, T.INTEGER), cast(b, T.INTEGER)
    return Call(op, [a, b], T.BOOLEAN)


def arithmetic(op: str, a: Expr, b: Expr) -> Call:
    """add sub mul div intdiv mod, including DATE/TIMESTAMP +/- INTERVAL and
    DATE +/- integer."""
    ta, tb = a.type, b.type
    if op in ("add", "sub") and (ta.is_temporal or tb.is_temporal or "INTERVAL" in (ta.id, tb.id)):
        return _date_arithmetic(op, a, b)
    if a.type.id == "VARCHAR" and isinstance(a, Literal):
        a = cast(a, T.DOUBLE if not tb.is_numeric else tb)
    if b.type.id == "VARCHAR" and isinstance(b, Literal):
        b = cast(b, T.DOUBLE if not ta.is_numeric else ta)
    a, b = _adapt_literal(a, b.type), _adapt_literal(b, a.type)   # ti + 1 is TINYINT
    t = T.arithmetic_type(op, a.type, b.type)
    if t.is_decimal and op in ("add", "sub", "mul"):
        a = a if a.type.is_decimal else cast(a, T.decimal_of(_non_null(a.type, b.type)))
        b = b if b.type.is_decimal else cast(b, T.decimal_of(_non_null(b.type, a.type)))
        return Call(op, [a, b], t)
    return Call(op, [cast(a, t), cast(b, t)], t)


def _non_null(t: T.DataType, other: T.DataType) -> T.DataType:
    if t.id == "NULL":
        return T.INTEGER if not other.is_decimal else other
    return t


# DuckDB negates a constant that is its type's minimum in the next wider
# type: -CAST(-128 AS TINYINT) is 128 SMALLINT, -(INT64_MIN) 2^63 HUGEINT
_WIDER = {"TINYINT": (-2 ** 7, T.SMALLINT), "SMALLINT": (-2 ** 15, T.INTEGER),
          "INTEGER": (-2 ** 31, T.BIGINT), "BIGINT": (-2 ** 63, T.HUGEINT)}


def negate(a: Expr) -> Expr:
    if not a.type.is_numeric and a.type.id != "NULL":
        raise TypeError(f"cannot negate {a.type}")
    if a.type.id in _WIDER:
        from planner.folding import fold
        lowest, wider = _WIDER[a.type.id]
        folded = fold(a)
        if isinstance(folded, Literal) and folded.value == lowest:
            return Literal(-lowest, wider)
    t = a.type if a.type.id != "NULL" else T.INTEGER
    return Call("neg", [cast(a, t)], t)


def _date_arithmetic(op: str, a: Expr, b: Expr) -> Call:
    ta, tb = a.type, b.type
    if op == "add" and ta.id == "INTERVAL" and tb.id != "INTERVAL":
        a, b, ta, tb = b, a, tb, ta
    func = "date_add" if op == "add" else "date_sub"
    if ta.id in ("DATE", "TIMESTAMP", "TIMESTAMPTZ") and tb.id == "INTERVAL":
        if not isinstance(b, Literal):
            raise UnsupportedFeatureError("non-constant INTERVAL expressions are not supported")
        out = ta if ta.id != "DATE" else T.TIMESTAMP
        return Call(func, [a, b], out)
    if ta.id == "DATE" and tb.is_integer:
        if not isinstance(b, Literal):
            raise UnsupportedFeatureError("DATE +/- a non-constant integer is not supported")
        return Call(func, [a, Literal(Interval(days=int(b.value)), T.INTERVAL)], T.DATE)
    if op == "add" and tb.id == "DATE" and ta.is_integer:
        return _date_arithmetic(op, b, a)
    if op == "sub" and ta.id == "DATE" and tb.id == "DATE":
        from planner.functions_dates import date_diff
        return date_diff("day", b, a)
    raise TypeError(f"cannot apply {op} to {ta} and {tb}")


def concat(args: list[Expr]) -> Call:
    return Call("concat", [cast(a, T.VARCHAR) for a in args], T.VARCHAR)


def in_list(x: Expr, values: list[Expr]) -> Call:
    exprs = unify([x] + values, "IN", comparison=True)
    return Call("in_list", exprs, T.BOOLEAN)


def like(func: str, x: Expr, pattern: Expr, escape: Expr | None) -> Call:
    for e in (x, pattern) + ((escape,) if escape is not None else ()):
        if not (e.type.is_string or e.type.id == "NULL"):
            raise TypeError(f"{func.upper()} needs VARCHAR operands, got {e.type}")
    args = [cast(x, T.VARCHAR), cast(pattern, T.VARCHAR)]
    if escape is not None:
        args.append(cast(escape, T.VARCHAR))
    return Call(func, args, T.BOOLEAN)


def case(conditions: list[Expr], results: list[Expr], default: Expr) -> Call:
    unified = unify(results + [default], "CASE")
    args: list[Expr] = []
    for cond, res in zip(conditions, unified):
        args += [_boolean(cond), res]
    args.append(unified[-1])
    return Call("case", args, unified[-1].type)


def _boolean(e: Expr) -> Expr:
    if e.type.id in ("BOOLEAN",):
        return e
    if e.type.id == "NULL":
        return cast(e, T.BOOLEAN)
    raise TypeError(f"condition must be BOOLEAN, got {e.type}")


def logic(func: str, args: list[Expr]) -> Call:
    """and/or (flattened to n-ary) and not."""
    flat: list[Expr] = []
    for a in args:
        a = _boolean(a)
        if func != "not" and isinstance(a, Call) and a.func == func:
            flat.extend(a.args)
        else:
            flat.append(a)
    return Call(func, flat, T.BOOLEAN)


# ---- conditionals and types --------------------------------------------------

def coalesce(args: list[Expr]) -> Call:
    if not args:
        raise TypeError("coalesce needs arguments")
    unified = unify(args, "COALESCE")
    return Call("coalesce", unified, unified[0].type)


class TypeofLiteral(Literal):
    """typeof(x): a constant, which still names its argument so that the
    binder can check x's columns where the query aggregates (DuckDB: typeof(r)
    of an ungrouped column r is an error, as r itself would be)."""

    def __init__(self, value, type, argument: Expr):
        super().__init__(value, type)
        self.argument = argument


def typeof(x: Expr) -> Literal:
    """The name of x's type, a constant (DuckDB spells the NULL type "NULL")."""
    return TypeofLiteral(str(x.type) if x.type.id != "NULL" else '"NULL"', T.VARCHAR, x)


def nullif(a: Expr, b: Expr) -> Expr:
    """CASE WHEN a = b THEN NULL ELSE a END, of a's type."""
    out = a.type if a.type.id != "NULL" else T.INTEGER
    test = comparison("eq", a, b)
    return Call("case", [test, Literal(None, out), cast(a, out)], out)


# ---- aggregates -------------------------------------------------------------

AGGREGATES = ("count", "sum", "avg", "min", "max")


def aggregate(func: str, arg: Expr | None, distinct: bool) -> AggregateCall:
    if arg is None:
        return AggregateCall("count_star", None, False, T.BIGINT)
    t = arg.type
    if func == "count":
        return AggregateCall("count", arg, distinct, T.BIGINT)
    if func == "sum":
        if t.is_decimal:
            return AggregateCall("sum", arg, distinct, T.DECIMAL(38, t.scale))
        if t.is_integer or t.id in ("BOOLEAN", "NULL"):
            return AggregateCall("sum", arg, distinct, T.HUGEINT)
        if t.is_float:
            return AggregateCall("sum", arg, distinct, T.DOUBLE)
        raise TypeError(f"sum of {t} is not defined")
    if func == "avg":
        if t.is_numeric or t.id == "NULL":
            return AggregateCall("avg", arg, distinct, T.DOUBLE)
        raise TypeError(f"avg of {t} is not defined")
    if func in ("min", "max"):
        return AggregateCall(func, arg, distinct, t)
    raise TypeError(f"unknown aggregate {func}")


def in_subquery_comparison(x: Expr, item: Expr) -> Call:
    """x = item for x IN (SELECT item ...): DuckDB types it with the common
    type of UNION / COALESCE (T.common_type), not the comparison rule, so
    1.5::DECIMAL(10,2) IN (SELECT 2::DECIMAL(38,0)) is true there (1.50
    rounds to 2 in DECIMAL(38,0)).  For planner/binder_subquery.py."""
    a, b = unify([x, item], "IN")
    if a.type.id == "NULL":
        a, b = cast(a, T.INTEGER), cast(b, T.INTEGER)
    return Call("eq", [a, b], T.BOOLEAN)
