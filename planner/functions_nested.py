"""Typing of the nested-value functions (planner/expressions.py names):

    struct_extract(s, Literal(field position))   -> the field's type
    list_length(l)                               -> BIGINT
    list_extract(l, i BIGINT)                    -> the element type (1-based)
    map_extract(m, k of the key type)            -> the value type (or NULL)
    map_extract_list(m, k)                       -> LIST of the value ([] if absent)
    nested_is_null(x) / nested_is_not_null(x)    -> BOOLEAN (IS [NOT] NULL of a
                                                    nested value; not a pruning term)

Operations that would need to compare, hash or order nested values raise
UnsupportedFeatureError naming the operation and the type."""

from __future__ import annotations

from planner import functions as F
from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, Expr, Literal


def reject_nested(what: str, *exprs) -> None:
    """UnsupportedFeatureError when one of ``exprs`` has a nested type,
    e.g. "GROUP BY on a LIST column is not supported"."""
    for e in exprs:
        t = e.type if hasattr(e, "type") else e
        if t is not None and t.is_nested:
            raise UnsupportedFeatureError(f"{what} on a {t.id} value ({t}) is not supported")


def struct_extract(s: Expr, field: str) -> Expr:
    if s.type.id != "STRUCT":
        raise TypeError(f"cannot extract field {field!r} from {s.type}")
    hit = s.type.field(field)
    if hit is None:
        names = ", ".join(n for n, _ in s.type.children)
        raise ValueError(f"struct has no field {field!r} (fields: {names})")
    pos, typ = hit
    return Call("struct_extract", [s, Literal(pos, T.INTEGER)], typ)


def list_length(x: Expr, name: str = "len") -> Expr:
    """len / array_length / length of a LIST; cardinality also of a MAP."""
    allowed = ("LIST", "MAP") if name == "cardinality" else ("LIST",)
    if x.type.id not in allowed:
        raise TypeError(f"{name}() needs a LIST, got {x.type}")
    return Call("list_length", [x], T.BIGINT)


def list_extract(x: Expr, index: Expr) -> Expr:
    if x.type.id != "LIST":
        raise TypeError(f"list index on {x.type}")
    if not (index.type.is_integer or index.type.id == "NULL"):
        raise TypeError(f"list index must be an integer, got {index.type}")
    if index.type != T.BIGINT:
        index = F.cast(index, T.BIGINT)
    return Call("list_extract", [x, index], x.type.children[0][1])


def map_extract(m: Expr, key: Expr, as_list: bool = False) -> Expr:
    """m[k] / map_extract_value: the value or NULL; element_at / map_extract
    (as_list): a list of the value, [] when the key is missing (DuckDB)."""
    if m.type.id != "MAP":
        raise TypeError(f"map access on {m.type}")
    key_type, value_type = m.type.children[0][1], m.type.children[1][1]
    reject_nested("map lookup by a nested key", key_type)
    if key.type != key_type:
        try:
            T.common_type(key.type, key_type)
        except TypeError:
            raise TypeError(f"map key must be {key_type}, got {key.type}") from None
        key = F.cast(key, key_type)
    if as_list:
        return Call("map_extract_list", [m, key], T.LIST(value_type))
    return Call("map_extract", [m, key], value_type)


def is_null(x: Expr, negate: bool) -> Expr:
    return Call("nested_is_not_null" if negate else "nested_is_null", [x], T.BOOLEAN)
