"""planner.types.arithmetic_type against DuckDB's typeof() for every pair of
numeric operand types and every arithmetic operator."""

from __future__ import annotations

import pytest

from planner import types as T

_TYPES = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
          "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL(4,1)", "DECIMAL(18,2)",
          "DECIMAL(38,3)"]
_OPS = [("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"), ("intdiv", "//"), ("mod", "%")]


def _planner_type(name: str) -> T.DataType:
    if "(" in name:
        base, rest = name.split("(")
        return T.from_sql_name(base, tuple(int(x) for x in rest.rstrip(")").split(",")))
    return T.from_sql_name(name)


@pytest.mark.parametrize("op, symbol", _OPS, ids=[o for o, _ in _OPS])
def test_arithmetic_types_match_duckdb(op, symbol):
    import duckdb
    con = duckdb.connect()
    wrong = []
    for a in _TYPES:
        for b in _TYPES:
            want = con.execute(f"SELECT typeof(1::{a} {symbol} 1::{b})").fetchone()[0]
            got = str(T.arithmetic_type(op, _planner_type(a), _planner_type(b)))
            if got != want:
                wrong.append((a, b, got, want))
    assert not wrong, wrong
