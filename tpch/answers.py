"""Expected TPC-H answers (../shared/tpch-answers) and result comparison.

The answers come from dbgen data; tpchgen-cli writes the same keys, numbers
and dates but different comment/address text, so those columns (and Q13,
which filters o_comment) are validated against DuckDB instead (see the
SOURCE file next to the answers)."""

from __future__ import annotations

import csv
import datetime
import decimal
import math
import os
from pathlib import Path

# Columns whose text differs between dbgen and tpchgen-cli data.
TEXT_COLUMNS_DIFFER = {2: {"s_address", "s_comment"}, 10: {"c_address", "c_comment"},
                       15: {"s_address"}, 20: {"s_address"}}
ANSWERS_DIFFER = {13}


def answers_root() -> Path | None:
    """Where the answer files are: $PQDB_TPCH_ANSWERS, or shared/tpch-answers
    next to the repository."""
    env = os.environ.get("PQDB_TPCH_ANSWERS")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared" / "tpch-answers", here / "shared" / "tpch-answers"]
    for c in candidates:
        if c.is_dir():
            return c
    return None


def sf_name(sf: float) -> str:
    return f"sf{sf:g}"


def load_answer(sf: float, number: int) -> tuple[list[str], list[list[str]]] | None:
    root = answers_root()
    if root is None:
        return None
    path = root / sf_name(sf) / f"q{number:02d}.csv"
    if not path.exists():
        return None
    lines = path.read_text().splitlines()
    # '|'-separated, fields with double quotes where the writer quoted them
    # (the SF10 files quote c_name / s_name: "Customer#001237537")
    parsed = list(csv.reader(lines, delimiter="|", quotechar='"'))
    header = parsed[0]
    # an empty line is a row of one NULL when the query has one column (Q17 at SF0.01)
    rows = [fields if fields else [""] for line, fields in zip(lines[1:], parsed[1:])
            if line != "" or len(header) == 1]
    return header, rows


def _canonical(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, decimal.Decimal)):
        return decimal.Decimal(value)
    if isinstance(value, float):
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").rstrip()
    return str(value).rstrip()


def values_equal(got, expected_text: str | object, rel: float = 1e-9) -> bool:
    """Compare one result value with an expected value (answer-file text or a
    Python value from another engine)."""
    g = _canonical(got)
    if isinstance(expected_text, str) and not isinstance(got, str):
        e_text = expected_text
        if g is None:
            return e_text in ("", "NULL")
        if isinstance(g, (decimal.Decimal, float)):
            try:
                e = decimal.Decimal(e_text)
            except decimal.InvalidOperation:
                return False
            if isinstance(g, decimal.Decimal):
                return g == e          # decimals exactly, to the last digit
            gf, ef = float(g), float(e)
            return math.isclose(gf, ef, rel_tol=rel, abs_tol=1e-12)
        return str(g) == e_text.rstrip()
    e = _canonical(expected_text)
    if g is None or e is None:
        return g is None and e is None
    if isinstance(g, (decimal.Decimal, float)) and isinstance(e, (decimal.Decimal, float)):
        if isinstance(g, decimal.Decimal) and isinstance(e, decimal.Decimal):
            return g == e
        return math.isclose(float(g), float(e), rel_tol=rel, abs_tol=1e-12)
    return g == e


def compare_rows(got_rows: list[tuple], expected_rows: list, columns: list[str],
                 skip_columns: set[str] = frozenset(), ordered: bool = True) -> str | None:
    """None when equal, else a one-line description of the first difference."""
    if len(got_rows) != len(expected_rows):
        return f"row count {len(got_rows)} != expected {len(expected_rows)}"
    if not ordered:
        key = lambda r: tuple(str(_canonical(v)) for v in r)
        got_rows = sorted(got_rows, key=key)
        expected_rows = sorted(expected_rows, key=key)
    for i, (g, e) in enumerate(zip(got_rows, expected_rows)):
        if len(g) != len(e):
            return f"row {i}: {len(g)} columns != expected {len(e)}"
        for j, (gv, ev) in enumerate(zip(g, e)):
            name = columns[j] if j < len(columns) else str(j)
            if name.lower() in skip_columns:
                continue
            if not values_equal(gv, ev):
                return f"row {i} column {name}: got {gv!r}, expected {ev!r}"
    return None


def check_against_answers(number: int, sf: float, columns: list[str], rows: list[tuple]) -> str | None:
    """Validate against the answer file: None when it matches, else the difference.
    Raises LookupError when there is no usable answer for this query/scale."""
    if number in ANSWERS_DIFFER:
        raise LookupError(f"Q{number} answers differ on tpchgen-cli data")
    ans = load_answer(sf, number)
    if ans is None:
        raise LookupError(f"no answer file for Q{number} at {sf_name(sf)}")
    header, expected = ans
    return compare_rows(rows, expected, header, TEXT_COLUMNS_DIFFER.get(number, set()))
