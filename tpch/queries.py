"""The 22 TPC-H queries (qualification parameters) as SQL over views named
after the tables (lineitem, orders, ...)."""

from __future__ import annotations

from importlib import resources

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")


def query_numbers() -> list[int]:
    return list(range(1, 23))


def parse_query_list(text: str | None) -> list[int]:
    """"1,3,5-7" -> [1, 3, 5, 6, 7]; empty or None: all 22."""
    if not text or not text.strip():
        return query_numbers()
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def query_text(number: int) -> str:
    if not 1 <= number <= 22:
        raise ValueError(f"TPC-H has queries 1..22, not {number}")
    return resources.files("tpch").joinpath(f"queries/q{number:02d}.sql").read_text()


def table_path(data_dir: str, table: str) -> str:
    """The Parquet file(s) of one table in a data directory: either
    DIR/table.parquet or DIR/table/*.parquet (several parts)."""
    import os
    single = os.path.join(data_dir, f"{table}.parquet")
    if os.path.exists(single):
        return single
    return os.path.join(data_dir, table, "*.parquet")


def view_statements(data_dir: str) -> list[str]:
    """CREATE VIEW statements that name every table of a data directory; the
    same text works in pqdb and DuckDB."""
    return [f"CREATE OR REPLACE VIEW {t} AS SELECT * FROM read_parquet('{table_path(data_dir, t)}')"
            for t in TABLES]
