"""SQL error classes.

They live in planner/ (which raises them) and are re-exported by
engine/errors.py, where users import every pqdb error from.
"""

from __future__ import annotations

from scan.errors import PqdbError, ProgrammingError, UnsupportedFeatureError


class SQLError(ProgrammingError):
    """Bad SQL: parse errors and semantic errors.  ``line``/``column`` are
    1-based positions in the statement text when known."""

    def __init__(self, message: str, line: int | None = None,
                 column: int | None = None, sql: str | None = None):
        self.line = line
        self.column = column
        self.sql = sql
        self.bare_message = message
        if line is not None and column is not None:
            message = f"{message} (line {line}, column {column})"
        super().__init__(message)

    def pointer(self) -> str | None:
        """The offending line of SQL with a caret under the position."""
        if self.sql is None or self.line is None or self.column is None:
            return None
        lines = self.sql.splitlines() or [""]
        if not 1 <= self.line <= len(lines):
            return None
        return lines[self.line - 1] + "\n" + " " * max(self.column - 1, 0) + "^"


class BinderError(SQLError):
    """Names and types: unknown table, column or function; bad operand types."""


def position_of(sql: str | None, offset: int | None) -> tuple[int | None, int | None]:
    """1-based (line, column) of a 0-based character offset in sql."""
    if sql is None or offset is None or offset < 0:
        return None, None
    before = sql[:offset]
    line = before.count("\n") + 1
    column = offset - (before.rfind("\n") + 1) + 1
    return line, column


__all__ = ["SQLError", "BinderError", "UnsupportedFeatureError", "PqdbError", "position_of"]
