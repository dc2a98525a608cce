"""Write a query record's expected rows from DuckDB's result, to be read
and checked by a person before committing (test_sql_suite.py has the format):

    python -m tests.sql.fill_expected joins.test:7 dates.test:31 ...

Each named record (file name in tests/sql, line of its ``query`` line) gets
its column types on the query line, ``rowsort`` when it has no sort mode, no
outer ORDER BY and more than one row, and DuckDB's rows below ``----``
(replacing rows it had).
--data DIR: where the TPC-H SF0.01 tables are or are generated (default: a
folder under the system's temp directory, kept for the next run)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tests.connections import duckdb_with_views
from tests.sql.records import (Record, format_rows, is_ordered, parse_file, sort_rows,
                               type_letter)
from tests.sql.tables import write_tables

HERE = Path(__file__).resolve().parent


def filled(rec: Record, lines: list[str], duck) -> list[str]:
    """The record's lines (``lines``, as in the file) with DuckDB's column
    types and rows."""
    result = duck.execute(rec.sql)
    letters = "".join(type_letter(str(d[1])) for d in result.description)
    ordered = is_ordered(rec)
    rows = format_rows(result.fetchall())
    sort = rec.sort or ("" if ordered or len(rows) < 2 else "rowsort")
    sql_end = next((k for k, line in enumerate(lines) if line.strip() == "----"), len(lines))
    sql = lines[1:sql_end]
    head = " ".join(w for w in ("query", letters, sort) if w)
    return [head, *sql, "----", *(rows if ordered else sort_rows(rows))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+", help="FILE.test:LINE of a query record")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "pqdb_sql_tables"))
    args = ap.parse_args(argv)
    from tpch.generate import generate
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    duck = duckdb_with_views(write_tables(generate(0.01, str(data / "tpch")), data))
    wanted: dict[str, set[int]] = {}
    for name in args.records:
        file, _, line = name.partition(":")
        wanted.setdefault(file, set()).add(int(line))
    for file, lines in sorted(wanted.items()):
        path = HERE / file
        text = path.read_text().split("\n")
        records = {r.line: r for r in parse_file(path)}
        missing = lines - {n for n, r in records.items() if r.kind == "query"}
        if missing:
            print(f"{file}: no query record starts at line(s) {sorted(missing)}", file=sys.stderr)
            return 1
        for n in sorted(lines, reverse=True):              # bottom up: line numbers hold
            rec = records[n]
            text[rec.line - 1:rec.last] = filled(rec, text[rec.line - 1:rec.last], duck)
        path.write_text("\n".join(text))
        print(f"{file}: {len(lines)} record(s) filled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
