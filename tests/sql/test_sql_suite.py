"""A sqllogictest-style suite: every ``*.test`` file in this directory holds
records, each run on pqdb and on DuckDB over the same Parquet files.

Record forms (records are separated by blank lines; ``#`` starts a comment):

    statement ok            run on both engines (CREATE VIEW ...); must succeed
    <sql>

    statement error [text]  pqdb must raise a PqdbError (whose message contains
    <sql>                   ``text`` when given)

    query                   run on both; rows must match: in order when the
    <sql>                   outermost query has ORDER BY, else as multisets;
                            doubles within 1e-9 relative, everything else exact

The data: TPC-H SF0.01 views (lineitem, orders, ...) and the small inline
tables of ``_INLINE`` (written as Parquet by DuckDB in a fixture).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# small tables with NULLs, duplicates, strings, decimals and dates
_INLINE = {
    "t1": """SELECT * FROM (VALUES
        (1, 'apple', 1.50::DECIMAL(10,2), DATE '2024-01-15', 1.5::DOUBLE, 10),
        (2, 'banana', 2.25::DECIMAL(10,2), DATE '2024-02-29', 2.5::DOUBLE, 10),
        (3, NULL, NULL, NULL, NULL, 20),
        (4, 'cherry', -3.75::DECIMAL(10,2), DATE '2023-12-31', -0.5::DOUBLE, 20),
        (5, 'apple', 1.50::DECIMAL(10,2), DATE '2024-01-15', 1.5::DOUBLE, NULL),
        (6, 'Durian%_x', 100.00::DECIMAL(10,2), DATE '2020-06-30', 1e10::DOUBLE, 30),
        (NULL, 'elder', 0.01::DECIMAL(10,2), DATE '1999-03-01', 0.0::DOUBLE, 30),
        (8, '  padded  ', 7.00::DECIMAL(10,2), DATE '2024-03-31', 7.25::DOUBLE, 30)
        ) AS t(a, s, d, dt, f, g)""",
    "t2": """SELECT * FROM (VALUES
        (1, 'apple', 10, DATE '2024-01-15'),
        (1, 'apricot', 11, DATE '2024-01-16'),
        (3, 'cherry', 30, NULL),
        (4, NULL, 40, DATE '2023-12-31'),
        (9, 'fig', 90, DATE '2025-01-01'),
        (NULL, 'grape', 100, DATE '2024-01-15')
        ) AS t(a, s, v, dt)""",
    # sums past 2^63: DECIMAL(15,2) values near 1e13 (SF10 magnitudes)
    "big": """SELECT (9999999999999.99 - (i % 7))::DECIMAL(15,2) AS x, i % 3 AS k
              FROM range(20000) r(i)""",
}


class Record:
    def __init__(self, path: Path, line: int, kind: str, arg: str, sql: str):
        self.path, self.line, self.kind, self.arg, self.sql = path, line, kind, arg, sql

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"


def parse_file(path: Path) -> list[Record]:
    records: list[Record] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        raw = lines[i].strip()
        if not raw or raw.startswith("#"):
            i += 1
            continue
        head = raw.split(None, 2)
        start = i + 1
        if head[0] == "query":
            kind, arg = "query", ""
        elif head[0] == "statement" and len(head) >= 2 and head[1] in ("ok", "error"):
            kind, arg = f"statement {head[1]}", head[2] if len(head) > 2 else ""
        else:
            raise ValueError(f"{path.name}:{start}: unknown record {raw!r}")
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
            body.append(lines[i])
            i += 1
        while i < len(lines) and lines[i].strip() == "----":
            i += 1
        records.append(Record(path, start, kind, arg, "\n".join(body).strip().rstrip(";")))
    return records


def _all_records() -> list[Record]:
    out = []
    for path in sorted(HERE.glob("*.test")):
        out.extend(parse_file(path))
    return out


_RECORDS = _all_records()


@pytest.fixture(scope="session")
def engines(tpch_sf001, tmp_path_factory):
    """(pqdb connection, duckdb connection) with the same views."""
    import duckdb

    import engine
    from tpch.queries import view_statements
    folder = tmp_path_factory.mktemp("sql_inline")
    duck = duckdb.connect()
    statements = list(view_statements(tpch_sf001))
    for name, select in _INLINE.items():
        path = folder / f"{name}.parquet"
        duck.execute(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
        statements.append(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    con = engine.connect(":memory:")
    for s in statements:
        con.sql(s)
        duck.execute(s)
    yield con, duck
    con.close()
    duck.close()


def _has_order_by(sql: str) -> bool:
    import sqlglot
    from sqlglot import exp
    tree = sqlglot.parse_one(sql, read="duckdb")
    return tree.args.get("order") is not None


def _norm(v):
    if isinstance(v, float):
        return ("f", v)
    if isinstance(v, Decimal):
        return ("d", v)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, (dt.date, dt.datetime)):
        return ("t", v)
    return ("o", v)


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


def _compare(got: list[tuple], want: list[tuple], ordered: bool) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} rows, DuckDB has {len(want)}:\n got {got[:10]}\nwant {want[:10]}"
    if not ordered:
        got, want = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    for i, (g, w) in enumerate(zip(got, want)):
        if len(g) != len(w) or not all(_same(a, b) for a, b in zip(g, w)):
            return f"row {i}: got {g!r}, DuckDB {w!r}"
    return None


@pytest.mark.parametrize("record", _RECORDS, ids=[r.id for r in _RECORDS])
def test_sql(record: Record, engines):
    from engine.errors import PqdbError
    con, duck = engines
    if record.kind == "statement ok":
        con.sql(record.sql)
        duck.execute(record.sql)
        return
    if record.kind == "statement error":
        with pytest.raises(PqdbError) as info:
            con.sql(record.sql)
        if record.arg:
            assert record.arg.lower() in str(info.value).lower()
        return
    want = duck.execute(record.sql).fetchall()
    got = con.sql(record.sql).fetchall()
    problem = _compare(got, want, _has_order_by(record.sql))
    assert problem is None, f"{record.id}\n{record.sql}\n{problem}"


def test_suite_is_large_enough():
    assert sum(r.kind == "query" for r in _RECORDS) >= 100
