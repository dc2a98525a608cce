"""The common type of CASE / COALESCE / UNION branches, and comparison
typing, against DuckDB's typeof() for pairs of numeric types."""

import itertools

import duckdb
import pytest

import engine

TYPES = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "UBIGINT",
         "FLOAT", "DOUBLE", "DECIMAL(4,1)", "DECIMAL(9,4)", "DECIMAL(18,2)", "DECIMAL(18,18)",
         "DECIMAL(19,0)", "DECIMAL(20,5)", "DECIMAL(30,29)", "DECIMAL(38,0)", "DECIMAL(38,10)",
         "DECIMAL(38,37)", "DECIMAL(3,3)"]


@pytest.fixture(scope="module")
def cons():
    con, duck = engine.connect(":memory:"), duckdb.connect()
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("a", TYPES)
def test_common_type_as_duckdb(cons, a):
    con, duck = cons
    sel = ", ".join(f"typeof(coalesce(NULL::{a}, 1::{b})), "
                    f"typeof(CASE WHEN true THEN NULL::{a} ELSE 1::{b} END)" for b in TYPES)
    assert con.sql(f"SELECT {sel}").fetchall() == duck.execute(f"SELECT {sel}").fetchall()


def test_union_and_values(cons):
    con, duck = cons
    for sql in [
        "SELECT x, typeof(x) FROM (SELECT 0.4::DECIMAL(38,10) x UNION ALL SELECT 1::DECIMAL(38,0))",
        "SELECT coalesce(0.5::DECIMAL(38,10), 1::DECIMAL(38,0)), "
        "coalesce(1.5::DECIMAL(38,37), 1::DECIMAL(4,1))",
        # comparisons keep the larger scale; FLOAT with integers compares as FLOAT
        "SELECT 0.4::DECIMAL(38,10) = 0::DECIMAL(38,0), 0.4::DECIMAL(38,10) IN "
        "(0::DECIMAL(38,0), 5::DECIMAL(38,0)), 16777217 = 16777216::FLOAT, "
        "0.6::FLOAT IN (0.6::DOUBLE, 1.0), 0.6::FLOAT = 0.6::DOUBLE, CAST(0.6 AS FLOAT) = 0.6",
    ]:
        assert con.sql(sql).fetchall() == duck.execute(sql).fetchall(), sql


def test_pairs_are_symmetric():
    from planner import types as T
    ts = [T.from_sql_name(t.split("(")[0], tuple(int(x) for x in t[:-1].split("(")[1].split(",")))
          if "(" in t else T.from_sql_name(t) for t in TYPES]
    for a, b in itertools.product(ts, ts):
        assert T.common_type(a, b) == T.common_type(b, a)
        assert T.comparison_type(a, b) == T.comparison_type(b, a)
