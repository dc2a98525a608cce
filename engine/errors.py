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
      QueryInterrupted          the query was stopped (Ctrl-C, interrupt())
        QueryTimeout            query_timeout passed

The root and the file classes live in scan/errors.py because scan/, the lowest
room, raises them and may import nothing above it.
"""

from __future__ import annotations

from scan.errors import (AuthenticationError, FileFormatError, PqdbError,
                         PqdbIOError, UnsupportedFeatureError)
from planner.errors import BinderError, SQLError   # defined where they are raised


class ConfigError(PqdbError):
    """Unknown configuration option or invalid value."""


class ExecutionError(PqdbError):
    """A failure while running a plan."""


class MemoryLimitError(ExecutionError):
    """The memory_limit setting was exceeded."""


class ArithmeticOverflowError(ExecutionError):
    """Integer or decimal overflow, division by zero where SQL makes it an error."""


class QueryInterrupted(PqdbError):
    """The running query was stopped: Ctrl-C, Connection.interrupt(), or
    (QueryTimeout) query_timeout.  Its workers have stopped and its memory
    is released; the connection stays usable.  (DuckDB raises its
    InterruptException, a DatabaseError, for the same.)"""


class QueryTimeout(QueryInterrupted):
    """The query ran longer than query_timeout."""


__all__ = [
    "PqdbError", "PqdbIOError", "FileFormatError", "UnsupportedFeatureError",
    "AuthenticationError", "SQLError", "BinderError", "ConfigError",
    "ExecutionError", "MemoryLimitError", "ArithmeticOverflowError",
    "QueryInterrupted", "QueryTimeout",
]
