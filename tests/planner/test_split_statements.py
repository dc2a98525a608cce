"""split_statements: a text without an inner ';' is one statement without
tokenizing; it must give what the tokenizer's split gives (the statement
parses to the same tree)."""

from __future__ import annotations

import pytest
import sqlglot

from planner.frontend import DIALECT, parse_statements, split_statements


def _tokenized(sql: str) -> list[str]:
    tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(sql)
    pieces, start = [], 0
    for tok in tokens:
        if tok.token_type == sqlglot.TokenType.SEMICOLON:
            pieces.append(sql[start:tok.start])
            start = tok.end + 1
    pieces.append(sql[start:])
    return [p.strip() for p in pieces if p.strip()]


@pytest.mark.parametrize("sql", [
    "SELECT 1", "SELECT 1;", "  SELECT 1 ;  \n", ";", "", "   ", "SELECT 1 -- note;",
    "SELECT ';'", "SELECT 1; SELECT 2", "SELECT 1;;", "/* ; */ SELECT 1", "SELECT 'a;b';",
])
def test_same_statements_as_the_tokenizer(sql):
    fast = split_statements(sql)
    slow = _tokenized(sql)
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow):
        assert sqlglot.parse_one(a, read=DIALECT) == sqlglot.parse_one(b, read=DIALECT)


def test_unterminated_string_is_a_syntax_error():
    from planner.errors import SQLError
    with pytest.raises(SQLError, match="syntax error"):
        parse_statements("SELECT 'abc;")
