"""pqdb's exception hierarchy (DESIGN.md "Errors").

    PqdbError
      PqdbIOError               reading bytes failed (url, byte range)
      FileFormatError           malformed Parquet (file, row group, column, page)
      UnsupportedFeatureError   a named feature pqdb does not implement
      AuthenticationError       encrypted file: wrong key or tampered data
      SQLError                  bad SQL text; carries line/column of the problem
        BinderError             unknown table/column/function, type mismatch
      ConfigError               unknown option or bad option value
      ExecutionError            a failure while running a plan
        MemoryLimitError        memory_limit exceeded
        ArithmeticOverflowError overflow where SQL makes it an error

The root and the file classes live in scan/errors.py because scan/, the lowest
room, raises them and may import nothing above it.
"""

from __future__ import annotations

from scan.errors import (AuthenticationError, FileFormatError, PqdbError,
                         PqdbIOError, UnsupportedFeatureError)


class SQLError(PqdbError):
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


class ConfigError(PqdbError):
    """Unknown configuration option or invalid value."""


class ExecutionError(PqdbError):
    """A failure while running a plan."""


class MemoryLimitError(ExecutionError):
    """The memory_limit setting was exceeded."""


class ArithmeticOverflowError(ExecutionError):
    """Integer or decimal overflow, division by zero where SQL makes it an error."""


__all__ = [
    "PqdbError", "PqdbIOError", "FileFormatError", "UnsupportedFeatureError",
    "AuthenticationError", "SQLError", "BinderError", "ConfigError",
    "ExecutionError", "MemoryLimitError", "ArithmeticOverflowError",
]
