"""The records of tests/sql/*.test: reading them, writing result values as
text, and comparing pqdb's rows with a record's expected rows.  The format
is described at the top of test_sql_suite.py (and in README.md here)."""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

SORT_MODES = ("rowsort", "nosort")
# one letter per result column, from the column's SQL type
TYPE_LETTERS = {"I": "integer", "N": "DECIMAL", "R": "DOUBLE or FLOAT", "T": "VARCHAR",
                "B": "BOOLEAN", "D": "DATE", "S": "TIMESTAMP"}
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
             "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
REL_TOL = 1e-9                      # doubles: relative tolerance


@dataclass
class Record:
    path: Path
    line: int                       # of the record's first line
    kind: str                       # "statement ok", "statement error" or "query"
    sql: str
    types: str = ""                 # query: column type letters ("" = not given)
    sort: str = ""                  # query: "rowsort", "nosort" or "" (from ORDER BY)
    expected: list[str] | None = field(default=None)  # lines after ----, None without ----
    last: int = 0                   # the number of the record's last line

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"


def parse_file(path: Path) -> list[Record]:
    """The records of one .test file (ValueError for a malformed one)."""
    lines = path.read_text().split("\n")
    records: list[Record] = []
    i = 0
    while i < len(lines):
        raw = lines[i].strip()
        if not raw or raw.startswith("#"):
            i += 1
            continue
        where = f"{path.name}:{i + 1}"
        rec = _header(path, i + 1, raw.split(), where)
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
            body.append(lines[i])
            i += 1
        rec.sql = "\n".join(body).strip().rstrip(";")
        if not rec.sql:
            raise ValueError(f"{where}: record without SQL")
        if i < len(lines) and lines[i].strip() == "----":
            i += 1
            rec.expected = []
            while i < len(lines) and lines[i].strip():
                rec.expected.append(lines[i])          # as written: spaces count
                i += 1
        rec.last = i
        _validate(rec, where)
        records.append(rec)
    return records


def _header(path: Path, line: int, words: list[str], where: str) -> Record:
    if words[:2] == ["statement", "ok"] and len(words) == 2:
        return Record(path, line, "statement ok", "")
    if words[:2] == ["statement", "error"]:
        if len(words) > 2:
            raise ValueError(f"{where}: the expected message goes after a ---- line "
                             f"below the SQL, not on the statement line")
        return Record(path, line, "statement error", "")
    if words[0] == "query":
        rec = Record(path, line, "query", "")
        for word in words[1:]:
            if word in SORT_MODES and not rec.sort:
                rec.sort = word
            elif re.fullmatch(f"[{''.join(TYPE_LETTERS)}]+", word) and not rec.types:
                rec.types = word
            else:
                raise ValueError(f"{where}: unknown word {word!r} after query "
                                 f"(column types from {''.join(TYPE_LETTERS)}, or "
                                 f"{' / '.join(SORT_MODES)})")
        return rec
    raise ValueError(f"{where}: unknown record {' '.join(words)!r}")


def _validate(rec: Record, where: str) -> None:
    if rec.kind == "statement ok" and rec.expected is not None:
        raise ValueError(f"{where}: statement ok has nothing after ----")
    if rec.kind == "statement error" and rec.expected is not None and len(rec.expected) != 1:
        raise ValueError(f"{where}: statement error takes one line of message after ----")
    if rec.kind == "query" and rec.types and rec.expected is None:
        raise ValueError(f"{where}: column types go with expected rows (after ----)")
    if rec.kind == "query" and rec.expected is not None:
        if not rec.types:
            raise ValueError(f"{where}: a query with expected rows names its column "
                             f"types, one letter per column (query IT ...)")
        for n, row in enumerate(rec.expected, 1):
            if len(row.split("\t")) != len(rec.types):
                raise ValueError(f"{where}: expected row {n} has {len(row.split(chr(9)))} "
                                 f"tab-separated values, the types name {len(rec.types)}")


# ---------------------------------------------------------------- values as text

def type_letter(sql_type: str) -> str:
    """The letter of a result column's SQL type name (KeyError: no letter)."""
    name = sql_type.upper()
    if name in _INTEGERS:
        return "I"
    if name.startswith("DECIMAL"):
        return "N"
    if name in ("DOUBLE", "FLOAT"):
        return "R"
    if name == "VARCHAR":
        return "T"
    if name == "BOOLEAN":
        return "B"
    if name == "DATE":
        return "D"
    if name.startswith("TIMESTAMP"):
        return "S"
    raise KeyError(f"no type letter for {sql_type}")


def format_value(v) -> str:
    """One value as the text of an expected row."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        if v == "":
            return "(empty)"
        return v.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, dt.date):
        return v.isoformat()
    raise TypeError(f"no text form for {type(v).__name__} {v!r}")


def format_rows(rows: list[tuple]) -> list[str]:
    return ["\t".join(format_value(v) for v in row) for row in rows]


def has_order_by(sql: str) -> bool:
    """Whether the outermost query of sql has an ORDER BY."""
    import sqlglot
    return sqlglot.parse_one(sql, read="duckdb").args.get("order") is not None


def is_ordered(rec: Record) -> bool:
    """Rows compared in order: nosort, or no sort mode and an outer ORDER BY."""
    return rec.sort == "nosort" or (not rec.sort and has_order_by(rec.sql))


def sort_rows(lines: list[str]) -> list[str]:
    return sorted(lines, key=lambda line: line.split("\t"))


def _same_line(got: str, want: str, types: str) -> bool:
    if got == want:
        return True
    gs, ws = got.split("\t"), want.split("\t")
    if len(gs) != len(ws):
        return False
    for g, w, letter in zip(gs, ws, types):
        if g == w:
            continue
        if letter != "R":
            return False
        try:
            fg, fw = float(g), float(w)
        except ValueError:
            return False
        if not (math.isnan(fg) and math.isnan(fw) or
                math.isclose(fg, fw, rel_tol=REL_TOL, abs_tol=0.0)):
            return False
    return True


def expected_rows_problem(rec: Record, got_types: list[str], got_rows: list[tuple],
                          ordered: bool) -> str | None:
    """None when pqdb's result matches the record's types and rows, else a
    readable account of the difference (a diff of the rows as text)."""
    try:
        letters = "".join(type_letter(t) for t in got_types)
    except KeyError as e:
        return f"result types {got_types}: {e}"
    if letters != rec.types:
        return f"column types {letters} ({', '.join(got_types)}), the record says {rec.types}"
    got = format_rows(got_rows)
    want = list(rec.expected)
    if not ordered:
        got, want = sort_rows(got), sort_rows(want)
    if len(got) == len(want) and all(_same_line(g, w, rec.types) for g, w in zip(got, want)):
        return None
    diff = difflib.unified_diff(want, got, "expected", "pqdb", lineterm="", n=2)
    return (f"rows differ ({len(got)} from pqdb, {len(want)} expected"
            f"{'' if ordered else ', both sorted'}):\n" + "\n".join(diff))
