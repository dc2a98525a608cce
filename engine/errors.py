"""pqdb's exception hierarchy (docs/design.md "Errors"), on PEP 249's classes.

    Warning                       (PEP 249; pqdb raises none)
    PqdbError = Error             every exception that leaves the API
      InterfaceError              closed connection or cursor, fetch without a result
      DatabaseError
        DataError
          FileFormatError         malformed Parquet (file, row group, column, page)
          ArithmeticOverflowError overflow where SQL makes it an error   (+ ExecutionError)
        OperationalError
          PqdbIOError             reading bytes failed (url, byte range)
          AuthenticationError     encrypted file: wrong key or tampered data
          MemoryLimitError        memory_limit exceeded                  (+ ExecutionError)
          QueryInterrupted        the query was stopped (Ctrl-C, interrupt())
            QueryTimeout          query_timeout passed
        ProgrammingError
          SQLError                bad SQL text; carries line/column of the problem
            BinderError           unknown table/column/function, type mismatch, parameters
          ConfigError             unknown option or bad option value
        NotSupportedError
          UnsupportedFeatureError a named feature pqdb does not implement
        InternalError             a bug: an unexpected exception, converted at the API
        IntegrityError            (PEP 249; pqdb is read-only and raises none)
        ExecutionError            other failures while running a plan

The root, the PEP 249 classes and the file classes live in scan/errors.py
because scan/, the lowest room, raises them and may import nothing above it;
the SQL classes live in planner/errors.py.
"""

from __future__ import annotations

from scan.errors import (AuthenticationError, DatabaseError, DataError, Error,  # noqa: F401
                         FileFormatError, IntegrityError, InterfaceError, InternalError,
                         NotSupportedError, OperationalError, PqdbError, PqdbIOError,
                         ProgrammingError, UnsupportedFeatureError, Warning)
from planner.errors import BinderError, SQLError   # defined where they are raised


class ConfigError(ProgrammingError):
    """Unknown configuration option or invalid value."""


class ExecutionError(DatabaseError):
    """A failure while running a plan."""


class MemoryLimitError(ExecutionError, OperationalError):
    """The memory_limit setting was exceeded."""


class ArithmeticOverflowError(ExecutionError, DataError):
    """Integer or decimal overflow, division by zero where SQL makes it an error."""


def internal_error(exc: BaseException) -> InternalError:
    """The InternalError standing for an unexpected exception (a bug); raise
    it ``from exc`` so that the original stays the ``__cause__``."""
    text = " ".join(str(exc).split())
    name = type(exc).__name__
    return InternalError(f"internal error (a bug in pqdb): {name}: {text}" if text
                         else f"internal error (a bug in pqdb): {name}")


class QueryInterrupted(OperationalError):
    """The running query was stopped: Ctrl-C, Connection.interrupt(), or
    (QueryTimeout) query_timeout.  Its workers have stopped and its memory
    is released; the connection stays usable.  (DuckDB raises its
    InterruptException, a DatabaseError, for the same.)"""


class QueryTimeout(QueryInterrupted):
    """The query ran longer than query_timeout."""


__all__ = [
    "Error", "Warning", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "PqdbError", "PqdbIOError", "FileFormatError", "UnsupportedFeatureError",
    "AuthenticationError", "SQLError", "BinderError", "ConfigError",
    "ExecutionError", "MemoryLimitError", "ArithmeticOverflowError", "internal_error",
    "QueryInterrupted", "QueryTimeout",
]
