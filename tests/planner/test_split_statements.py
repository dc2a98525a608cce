"""split_statements: a text without an inner ';' is one statement without
tokenizing; it must give what the tokenizer's split gives (the statement
parses to the same tree)."""

from __future__ import annotations

import pytest
import sqlglot

from planner.frontend import DIALECT, parse_statements, split_by_tokens, split_statements


@pytest.mark.parametrize("sql", [
    "SELECT 1", "SELECT 1;", "  SELECT 1 ;  \n", ";", "", "   ", "SELECT 1 -- note;",
    "SELECT ';'", "SELECT 1; SELECT 2", "SELECT 1;;", "/* ; */ SELECT 1", "SELECT 'a;b';",
])
def test_same_statements_as_the_tokenizer(sql):
    fast = split_statements(sql)
    slow = split_by_tokens(sql)
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow):
        assert sqlglot.parse_one(a, read=DIALECT) == sqlglot.parse_one(b, read=DIALECT)


def test_unterminated_string_is_a_syntax_error():
    from planner.errors import SQLError
    with pytest.raises(SQLError, match="syntax error"):
        parse_statements("SELECT 'abc;")
