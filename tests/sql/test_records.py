"""The .test record format (records.py): reading records, values as text, and
the comparison that fails a record with a diff of its rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from tests.sql.records import expected_rows_problem, format_value, parse_file


def _records(tmp_path, text: str):
    path = tmp_path / "x.test"
    path.write_text(text)
    return parse_file(path)


def test_records_with_rows_messages_and_neither(tmp_path):
    q, err, duck, bare = _records(tmp_path, (
        "# a comment\n"
        "query IT rowsort\n"
        "SELECT a, s\n"
        "FROM t1\n"
        "----\n"
        "1\t  x \n"
        "NULL\t(empty)\n"
        "\n"
        "statement error\n"
        "SELECT nope FROM t1\n"
        "----\n"
        "column nope not found\n"
        "\n"
        "query\n"
        "SELECT 1;\n"
        "\n"
        "statement error\n"
        "SELECT 1 +\n"))
    assert (q.kind, q.types, q.sort, q.line, q.last) == ("query", "IT", "rowsort", 2, 7)
    assert q.sql == "SELECT a, s\nFROM t1"
    assert q.expected == ["1\t  x ", "NULL\t(empty)"]            # spaces kept
    assert (err.kind, err.expected) == ("statement error", ["column nope not found"])
    assert (duck.kind, duck.sql, duck.types, duck.expected) == ("query", "SELECT 1", "", None)
    assert (bare.kind, bare.expected) == ("statement error", None)


def test_a_query_without_rows_below_the_line_expects_none(tmp_path):
    (q,) = _records(tmp_path, "query I\nSELECT 1 WHERE false\n----\n\n")
    assert q.expected == []


@pytest.mark.parametrize("text, complaint", [
    ("query\nSELECT 1\n----\n1\n", "names its column types"),
    ("query II\nSELECT 1, 2\n----\n1 2\n", "row 1 has 1 tab-separated values"),
    ("query I\nSELECT 1\n", "column types go with expected rows"),
    ("query I sorted\nSELECT 1\n----\n1\n", "unknown word 'sorted'"),
    ("statement error not found\nSELECT nope\n", "goes after a ---- line"),
    ("statement error\nSELECT 1 +\n----\none\ntwo\n", "one line of message"),
    ("statement ok\nSELECT 1\n----\n1\n", "nothing after ----"),
    ("select 1\n", "unknown record"),
])
def test_malformed_records_are_named(tmp_path, text, complaint):
    with pytest.raises(ValueError, match=complaint):
        _records(tmp_path, text)


@pytest.mark.parametrize("value, text", [
    (None, "NULL"), (True, "true"), (False, "false"), (-7, "-7"), (2**70, str(2**70)),
    (Decimal("1.50"), "1.50"), (Decimal("-3.75"), "-3.75"), (Decimal("1E+2"), "100"),
    (2.5, "2.5"), (2.0, "2.0"), (1e16, "1e+16"), (-0.0, "-0.0"), (float("nan"), "nan"),
    ("apple", "apple"), ("", "(empty)"), ("a\tb\nc\\", "a\\tb\\nc\\\\"), (" x ", " x "),
    (dt.date(2024, 2, 29), "2024-02-29"), (dt.datetime(2024, 1, 15, 10, 30), "2024-01-15 10:30:00"),
])
def test_values_as_text(value, text):
    assert format_value(value) == text


def _query(tmp_path, header: str, rows: list[str]):
    (q,) = _records(tmp_path, f"{header}\nSELECT x\n----\n" + "".join(r + "\n" for r in rows))
    return q


def test_rows_match_sorted_or_in_order(tmp_path):
    q = _query(tmp_path, "query IT rowsort", ["1\ta", "2\tNULL"])
    assert expected_rows_problem(q, ["INTEGER", "VARCHAR"], [(2, None), (1, "a")], False) is None
    problem = expected_rows_problem(q, ["INTEGER", "VARCHAR"], [(2, None), (1, "a")], True)
    assert problem.splitlines()[0] == "rows differ (2 from pqdb, 2 expected):"


def test_a_wrong_row_fails_with_a_diff(tmp_path):
    q = _query(tmp_path, "query IN rowsort", ["1\t1.50", "2\t2.25", "3\tNULL"])
    got = [(1, Decimal("1.50")), (2, Decimal("2.20")), (3, None)]
    problem = expected_rows_problem(q, ["INTEGER", "DECIMAL(10,2)"], got, False)
    assert problem.splitlines() == [
        "rows differ (3 from pqdb, 3 expected, both sorted):",
        "--- expected", "+++ pqdb", "@@ -1,3 +1,3 @@",
        " 1\t1.50", "-2\t2.25", "+2\t2.20", " 3\tNULL"]


def test_missing_rows_and_wrong_types_fail(tmp_path):
    q = _query(tmp_path, "query I", ["1", "2"])
    assert "1 from pqdb, 2 expected" in expected_rows_problem(q, ["BIGINT"], [(1,)], True)
    assert "column types N (DECIMAL(10,0)), the record says I" in \
        expected_rows_problem(q, ["DECIMAL(10,0)"], [(Decimal(1),), (Decimal(2),)], True)


def test_doubles_within_the_tolerance_match(tmp_path):
    q = _query(tmp_path, "query RI", ["0.3\t1"])
    assert expected_rows_problem(q, ["DOUBLE", "INTEGER"], [(0.1 + 0.2, 1)], True) is None
    assert expected_rows_problem(q, ["DOUBLE", "INTEGER"], [(0.3000001, 1)], True) is not None
    # an integer column is compared as text, without tolerance
    q = _query(tmp_path, "query I", ["3"])
    assert expected_rows_problem(q, ["INTEGER"], [(3.0,)], True) is not None
