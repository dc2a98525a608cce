"""Typing of the string functions: substring(x, start[, length]) -> VARCHAR,
upper / lower -> VARCHAR, length -> BIGINT, trim / ltrim / rtrim (of ' ')
-> VARCHAR, and starts_with / contains -> BOOLEAN (bound as LIKE with the
needle escaped).  concat and || are operators (planner/functions.py)."""

from __future__ import annotations

from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, Expr, Literal
from planner.functions import cast, like


def substring(args: list[Expr]) -> Call:
    if not 2 <= len(args) <= 3:
        raise TypeError("substring takes 2 or 3 arguments")
    x, rest = args[0], args[1:]
    if not (x.type.is_string or x.type.id == "NULL"):
        raise TypeError(f"substring needs VARCHAR, got {x.type}")
    for r in rest:
        if not (r.type.is_integer or r.type.id == "NULL"):
            raise TypeError(f"substring positions must be integers, got {r.type}")
    return Call("substring", [cast(x, T.VARCHAR)] + [cast(r, T.BIGINT) for r in rest], T.VARCHAR)


def string_function(name: str, args: list[Expr]) -> Call:
    if len(args) != 1:
        raise TypeError(f"{name} takes 1 argument")
    x = args[0]
    if not (x.type.is_string or x.type.id == "NULL"):
        raise TypeError(f"{name} needs VARCHAR, got {x.type}")
    out = T.BIGINT if name == "length" else T.VARCHAR
    return Call(name, [cast(x, T.VARCHAR)], out)


def trim(func: str, x: Expr) -> Call:
    if not (x.type.is_string or x.type.id == "NULL"):
        raise TypeError(f"{func} needs VARCHAR, got {x.type}")
    return Call(func, [cast(x, T.VARCHAR)], T.VARCHAR)


def pattern_test(name: str, x: Expr, needle: Expr) -> Expr:
    """starts_with / contains as LIKE with the needle escaped."""
    if not (isinstance(needle, Literal) and needle.type.id in ("VARCHAR", "NULL")):
        raise UnsupportedFeatureError(f"{name}() with a non-constant second argument is not supported")
    if needle.value is None:
        return Literal(None, T.BOOLEAN)
    escaped = "".join("\\" + c if c in "%_\\" else c for c in needle.value)
    pattern = escaped + "%" if name == "starts_with" else "%" + escaped + "%"
    return like("like", x, Literal(pattern, T.VARCHAR), Literal("\\", T.VARCHAR))
