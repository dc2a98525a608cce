"""The fuzzer's data: small tables full of edge values (NULLs, NaN, -0.0,
infinities, empty and non-ASCII strings, DECIMAL(38) extremes, INT64_MIN /
MAX, dates at the ends of years 1-9999), written as Parquet by DuckDB, and
the TPC-H SF0.01 tables.  Both engines get the same views."""

from __future__ import annotations

import random
from pathlib import Path

# column -> (SQL type, value pool); values are SQL literals
_POOLS = {
    "k": ("INTEGER", ["0", "1", "2", "3", "4", "NULL"]),
    "i": ("INTEGER", ["0", "1", "-1", "7", "-13", "100", "2147483647", "-2147483648", "NULL"]),
    "ti": ("TINYINT", ["0", "1", "-1", "127", "-128", "5", "NULL"]),
    "b": ("BIGINT", ["0", "1", "-1", "9223372036854775807", "-9223372036854775808",
                     "4294967296", "-77", "NULL"]),
    "d": ("DECIMAL(10,2)", ["0.00", "1.50", "-2.25", "99999999.99", "-99999999.99", "0.01",
                            "3.00", "NULL"]),
    "w": ("DECIMAL(38,10)", ["0", "1.5", "-0.0000000001", "9999999999999999999999999999.9999999999",
                             "-9999999999999999999999999999.9999999999", "12345678901234567.89",
                             "NULL"]),
    "f": ("DOUBLE", ["0.0", "-0.0", "1.5", "-2.25", "'nan'", "'inf'", "'-inf'", "1e10", "0.125",
                     "NULL"]),
    "s": ("VARCHAR", ["''", "'a'", "'abc'", "'ABC'", "'straße'", "'İx'", "'a%b_c'",
                      "'  pad  '", "'a longer string past twelve bytes'", "'Ω≈ç'", "NULL"]),
    "dt": ("DATE", ["DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1970-01-01'",
                    "DATE '1969-12-31'", "DATE '2000-02-29'", "DATE '2024-01-15'", "NULL"]),
    # dates in a middle range: the only ones date arithmetic is applied to
    "dm": ("DATE", ["DATE '1995-03-15'", "DATE '2000-02-29'", "DATE '2024-12-31'",
                    "DATE '1970-01-01'", "DATE '1992-01-01'", "NULL"]),
    "ts": ("TIMESTAMP", ["TIMESTAMP '1995-03-15 10:20:30'", "TIMESTAMP '2000-02-29 00:00:00'",
                         "TIMESTAMP '1969-12-31 23:59:59.999999'", "NULL"]),
    "bo": ("BOOLEAN", ["true", "false", "NULL"]),
    "sm": ("SMALLINT", ["0", "-32768", "32767", "5", "-5", "NULL"]),
    "r": ("FLOAT", ["0.125", "-1.5", "3.4e38", "1e-40", "'nan'", "16777217", "NULL"]),
    "ub": ("UINTEGER", ["0", "1", "4294967295", "7", "NULL"]),
}

# name -> number of rows (t0 is empty: aggregates and joins over no rows)
SMALL = {"t1": 24, "t2": 16, "t3": 9, "t0": 0}
TPCH = ("nation", "region", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


def _small_select(name: str, rows: int) -> str:
    rng = random.Random(f"pqdb-fuzz-{name}")         # fixed data, whatever the seed
    cols = list(_POOLS)
    if rows == 0:
        casts = ", ".join(f"NULL::{_POOLS[c][0]} AS {c}" for c in cols)
        return f"SELECT 1 AS id, {casts} LIMIT 0"
    lines = []
    for r in range(rows):
        vals = [str(r + 1)] + [f"CAST({rng.choice(_POOLS[c][1])} AS {_POOLS[c][0]})" for c in cols]
        lines.append("(" + ", ".join(vals) + ")")
    return (f"SELECT * FROM (VALUES {', '.join(lines)}) AS v(id, {', '.join(cols)})")


def setup(folder: Path, tpch_dir: str | None, pqdb_con, duck_con) -> dict:
    """Write the small tables, create the views on both connections and
    return the schema: {table: [(column, DuckDB type name)]}."""
    folder.mkdir(parents=True, exist_ok=True)
    statements = []
    for name, rows in SMALL.items():
        path = folder / f"{name}.parquet"
        duck_con.execute(f"COPY ({_small_select(name, rows)}) TO '{path}' (FORMAT parquet)")
        statements.append(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    if tpch_dir is not None:
        for t in TPCH:
            statements.append(f"CREATE OR REPLACE VIEW {t} AS SELECT * FROM "
                              f"read_parquet('{tpch_dir}/{t}.parquet')")
    for s in statements:
        duck_con.execute(s)
        pqdb_con.sql(s)
    schema = {}
    for name in list(SMALL) + (list(TPCH) if tpch_dir is not None else []):
        schema[name] = [(r[0], r[1]) for r in duck_con.execute(f"DESCRIBE {name}").fetchall()]
    return schema
