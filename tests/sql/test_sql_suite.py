r"""The SQL suite: every ``*.test`` file in this directory holds records in a
sqllogictest-like format, run on pqdb over the tables of tables.py (TPC-H
SF0.01 as lineitem, orders, ...; the small t1, t2 and big written out there).

Records are separated by blank lines; a line starting with ``#`` is a comment.

    statement ok
    <sql>
        Runs on pqdb and on DuckDB and must succeed on both.

    statement error
    <sql>
    ----
    <text>
        pqdb must raise an engine.Error (PqdbError) whose message contains
        <text> (a case-sensitive substring).  Without ---- and <text>, any
        engine.Error will do.

    query <types> [rowsort|nosort]
    <sql>
    ----
    <rows>
        pqdb's result must be these rows.  <types> has one letter per column,
        from the column's SQL type: I an integer type, N DECIMAL, R DOUBLE or
        FLOAT, T VARCHAR, B BOOLEAN, D DATE, S TIMESTAMP.  One row per line,
        its values separated by one tab, each written as
            NULL              SQL NULL
            true, false       booleans
            42, -7            integers
            1.50, -3.75       decimals, with every digit of the scale
            2.5, 2.0, 1e+16   doubles as Python's repr (the shortest text that
                              reads back as the same double; nan, inf, -inf);
                              pqdb's double may differ by 1e-9 relative.
            apple             strings as they are (spaces count), (empty) for
                              '', and \t \n \\ for tab, newline and backslash
            2024-01-15        dates; timestamps as 2024-01-15 10:30:00
        ---- with no line below it: the query returns no rows.

    query [rowsort|nosort]
    <sql>
        No ----: the query runs on pqdb and on DuckDB, whose result must be
        the same: column types equal, doubles within 1e-9 relative, other
        values equal (integers and decimals by value).  For results too
        large to write out, or that depend on the TPC-H data.

Row order: ``rowsort`` compares the rows sorted (by their text, value by
value), ``nosort`` in the order they come; with neither, in order when the
outermost query has ORDER BY, else sorted.  Rows compared sorted may be
written in any order; fill_expected writes them sorted.

A mismatch fails the record with a diff of expected and pqdb's rows as text.
Expected rows are best written by DuckDB, then read and checked by a person:
``python -m tests.sql.fill_expected FILE:LINE ...`` (see that module).
test_sql_suite_parallel.py runs the same records with 8 threads.
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

import pytest

import engine
from tests.connections import duckdb_with_views, pqdb_with_views

from .records import Record, expected_rows_problem, is_ordered, parse_file

HERE = Path(__file__).resolve().parent


def all_records() -> list[Record]:
    return [rec for path in sorted(HERE.glob("*.test")) for rec in parse_file(path)]


RECORDS = all_records()


def open_engines(tables: dict[str, str], **options):
    """(pqdb connection with ``options``, DuckDB connection), both with a
    view per table."""
    return pqdb_with_views(tables, **options), duckdb_with_views(tables)


@pytest.fixture(scope="session")
def engines(sql_tables):
    con, duck = open_engines(sql_tables)
    yield con, duck
    con.close()
    duck.close()


# ---------------------------------------------------------------- against DuckDB

def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        try:
            fa, fb = float(a), float(b)
        except (TypeError, ValueError):
            return False
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb or abs(fa - fb) <= 1e-9 * max(abs(fa), abs(fb))
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a) == Decimal(b) if not isinstance(a, (str, bool)) and \
            not isinstance(b, (str, bool)) else False
    return type(a) is type(b) and a == b or (isinstance(a, int) and isinstance(b, int) and a == b)


def _sort_key(row):
    def k(v):
        if v is None:
            return (0, "")
        if isinstance(v, float):
            return (1, round(v, 6) if math.isfinite(v) else v)
        if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            return (1, float(v))
        return (2, str(v))
    return tuple(k(v) for v in row)


def duckdb_problem(got_types: list[str], got: list[tuple], duck_result,
                   ordered: bool) -> str | None:
    """None when pqdb's result is DuckDB's, else what differs."""
    want_types = [str(d[1]) for d in duck_result.description]
    if got_types != want_types:
        return f"column types {got_types}, DuckDB has {want_types}"
    want = duck_result.fetchall()
    if len(got) != len(want):
        return f"{len(got)} rows, DuckDB has {len(want)}:\n got {got[:10]}\nwant {want[:10]}"
    if not ordered:
        got, want = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    for i, (g, w) in enumerate(zip(got, want)):
        if len(g) != len(w) or not all(_same(a, b) for a, b in zip(g, w)):
            return f"row {i}: got {g!r}, DuckDB {w!r}"
    return None


# ---------------------------------------------------------------- the records

@pytest.mark.parametrize("record", RECORDS, ids=[r.id for r in RECORDS])
def test_sql(record: Record, engines):
    con, duck = engines
    if record.kind == "statement ok":
        con.sql(record.sql)
        duck.execute(record.sql)
        return
    if record.kind == "statement error":
        with pytest.raises(engine.Error) as info:
            con.sql(record.sql)
        if record.expected and record.expected[0] not in str(info.value):
            pytest.fail(f"{record.id}\n{record.sql}\nthe message lacks "
                        f"{record.expected[0]!r}:\n{info.value}", pytrace=False)
        return
    result = con.sql(record.sql)
    ordered = is_ordered(record)
    if record.expected is not None:
        problem = expected_rows_problem(record, result.types, result.fetchall(), ordered)
    else:
        problem = duckdb_problem(result.types, result.fetchall(), duck.execute(record.sql),
                                 ordered)
    if problem is not None:
        pytest.fail(f"{record.id}\n{record.sql}\n{problem}", pytrace=False)


def test_suite_is_large_enough():
    assert sum(r.kind == "query" for r in RECORDS) >= 100
