"""pqdb: an embedded SQL engine over raw Parquet files.

    import engine
    con = engine.connect()                  # or connect("meta_dir", threads=2)
    con.sql("SELECT count(*) FROM 'lineitem.parquet'").fetchall()

PEP 249 module attributes and error classes live here too.
"""

from engine.api import (Connection, Cursor, InterfaceError, Result, Warning,  # noqa: F401
                        connect, sql)
from engine.config import Config  # noqa: F401
from engine.errors import (ArithmeticOverflowError, AuthenticationError,  # noqa: F401
                           BinderError, ConfigError, ExecutionError, FileFormatError,
                           MemoryLimitError, PqdbError, PqdbIOError, QueryInterrupted,
                           QueryTimeout, SQLError, UnsupportedFeatureError)

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"

# PEP 249 exception names, mapped onto pqdb's one hierarchy
Error = PqdbError
DatabaseError = PqdbError
ProgrammingError = SQLError
NotSupportedError = UnsupportedFeatureError
OperationalError = PqdbIOError
DataError = FileFormatError
InternalError = ExecutionError
IntegrityError = ExecutionError

__all__ = [
    "connect", "sql", "Connection", "Cursor", "Result", "Config",
    "apilevel", "threadsafety", "paramstyle",
    "Error", "Warning", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "PqdbError", "PqdbIOError", "FileFormatError", "UnsupportedFeatureError",
    "AuthenticationError", "SQLError", "BinderError", "ConfigError", "ExecutionError",
    "MemoryLimitError", "ArithmeticOverflowError", "QueryInterrupted", "QueryTimeout",
]
