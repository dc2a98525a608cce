"""Typing of the number functions (DuckDB's rules, checked with typeof()):
abs(x) -> type of x; round(x) -> type of x, DECIMAL(p,0) of DECIMAL(p,s);
round(x, constant digits) -> DECIMAL(p, min(digits, s)) of a decimal, else
type of x; floor/ceil(DECIMAL(p,s)) -> DECIMAL(p,0), of FLOAT -> FLOAT, of integers
and DOUBLE -> DOUBLE."""

from __future__ import annotations

from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, Expr, Literal
from planner.functions import cast


def abs_(args: list[Expr]) -> Call:
    if len(args) != 1 or not args[0].type.is_numeric:
        raise TypeError("abs takes one numeric argument")
    return Call("abs", args, args[0].type)


def round_(args: list[Expr]) -> Call:
    if not 1 <= len(args) <= 2 or not args[0].type.is_numeric:
        raise TypeError("round takes a numeric argument and optional digits")
    x = args[0]
    if len(args) == 1:
        out = x.type if not x.type.is_decimal else T.DECIMAL(x.type.precision, 0)
        return Call("round", [x], out)
    from planner.folding import fold
    digits = fold(args[1])                  # round(x, -1): -1 is neg(1) until folded
    if not isinstance(digits, Literal) or not digits.type.is_integer:
        raise UnsupportedFeatureError("round() with non-constant digits is not supported")
    digits = Literal(digits.value, T.INTEGER)
    if x.type.is_decimal:
        scale = min(max(digits.value, 0), x.type.scale)
        return Call("round", [x, digits], T.DECIMAL(x.type.precision, scale))
    return Call("round", [x, digits], x.type)


def floor_ceil(func: str, x: Expr) -> Expr:
    t = x.type
    if t.is_decimal:
        return Call(func, [x], T.DECIMAL(t.precision, 0)) if t.scale else x
    if t.id == "FLOAT":                         # DuckDB: FLOAT stays FLOAT
        return Call(func, [x], T.FLOAT)
    if t.is_numeric or t.id == "NULL":
        return Call(func, [cast(x, T.DOUBLE)], T.DOUBLE)
    raise TypeError(f"{func} needs a number, got {t}")
