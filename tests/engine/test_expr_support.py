"""Helpers for the expression tests: blocks from Python values, the same
values as a DuckDB relation, and vectors back to Python values."""

from __future__ import annotations

import datetime
import decimal

import duckdb
import numpy as np

from engine.block import Block, Vector
from engine.expr import evaluate
from engine.kernels.strings import views_from_pylist, views_to_pylist
from planner.expressions import Call, ColumnRef, Literal
from planner.types import DataType

EPOCH = datetime.date(1970, 1, 1)
EPOCH_TS = datetime.datetime(1970, 1, 1)


def to_storage(value, t: DataType):
    if value is None:
        return None
    if t.is_decimal:
        return int(decimal.Decimal(value).scaleb(t.scale).to_integral_value())
    if t.id == "DATE":
        return (value - EPOCH).days
    if t.id == "TIMESTAMP":
        d = value - EPOCH_TS
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    return value


def make_vector(values: list, t: DataType) -> Vector:
    if t.is_string:
        views, heap, nulls = views_from_pylist(values)
        return Vector(t, views, nulls, heap)
    nulls = np.array([v is None for v in values], np.uint8)
    stored = [to_storage(v, t) for v in values]
    dtype = t.numpy_dtype
    if dtype == object:
        data = np.array([0 if v is None else v for v in stored], dtype=object)
    else:
        data = np.array([0 if v is None else v for v in stored], dtype=dtype)
    return Vector(t, data, nulls if nulls.any() else None)


def make_block(columns: list[tuple[list, DataType]]) -> Block:
    vecs = [make_vector(v, t) for v, t in columns]
    return Block(vecs, len(columns[0][0]))


def to_python(vec: Vector) -> list:
    t = vec.type
    n = len(vec.data)
    nulls = np.zeros(n, bool) if vec.nulls is None else vec.nulls.astype(bool)
    if t.is_string:
        return views_to_pylist(vec.data, vec.heap, vec.nulls, decode_utf8=t.id == "VARCHAR")
    out = []
    for i in range(n):
        if nulls[i]:
            out.append(None)
            continue
        v = vec.data[i]
        if t.is_decimal:
            out.append(decimal.Decimal(int(v)).scaleb(-t.scale))
        elif t.id == "DATE":
            out.append(EPOCH + datetime.timedelta(days=int(v)))
        elif t.id == "TIMESTAMP":
            out.append(EPOCH_TS + datetime.timedelta(microseconds=int(v)))
        elif t.is_float:
            out.append(float(v))
        elif t.id == "BOOLEAN":
            out.append(bool(v))
        else:
            out.append(int(v))
    return out


def sql_literal(value, t: DataType) -> str:
    if value is None:
        return f"CAST(NULL AS {t})"
    if t.is_string:
        if isinstance(value, bytes):
            return "'" + "".join(f"\\x{b:02X}" for b in value) + "'::BLOB"
        return "'" + value.replace("'", "''") + f"'::{t}"
    if t.id in ("DATE", "TIMESTAMP"):
        return f"{t} '{value}'"
    if t.is_float:
        return f"CAST('{value!r}' AS {t})"
    return f"CAST('{value}' AS {t})"


def duck_eval(sql_expr: str, columns: list[tuple[list, DataType]]) -> list:
    """Evaluate sql_expr (columns named c0, c1, ...) over the rows in DuckDB."""
    n = len(columns[0][0])
    rows = []
    for i in range(n):
        rows.append("(" + ", ".join(sql_literal(vals[i], t) for vals, t in columns) + ")")
    names = ", ".join(f"c{j}" for j in range(len(columns)))
    q = (f"SELECT {sql_expr} FROM (VALUES {', '.join(rows)}) AS t({names})")
    return [r[0] for r in duckdb.sql(q).fetchall()]


def col(i: int, t: DataType) -> ColumnRef:
    return ColumnRef(i, t, f"c{i}")


def lit(v, t: DataType) -> Literal:
    return Literal(v, t)


def call(func: str, args: list, t: DataType) -> Call:
    return Call(func, list(args), t)


def run(expr, columns) -> list:
    block = make_block(columns)
    v = evaluate(expr, block)
    assert len(v.data) == block.n
    assert v.type == expr.type
    return to_python(v)
