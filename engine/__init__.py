"""pqdb: an embedded SQL engine over raw Parquet files.

    import engine
    con = engine.connect()                  # or connect("meta_dir", threads=2)
    con.sql("SELECT count(*) FROM 'lineitem.parquet'").fetchall()

PEP 249 module attributes and error classes live here too.
"""

from engine.api import Connection, Cursor, Result, connect, sql  # noqa: F401
from engine.config import Config  # noqa: F401
from engine.errors import (ArithmeticOverflowError, AuthenticationError,  # noqa: F401
                           BinderError, ConfigError, DatabaseError, DataError, Error,
                           ExecutionError, FileFormatError, IntegrityError, InterfaceError,
                           InternalError, MemoryLimitError, NotSupportedError,
                           OperationalError, PqdbError, PqdbIOError, ProgrammingError,
                           QueryInterrupted, QueryTimeout, SQLError, UnsupportedFeatureError, Warning)

import engine.kernel_cache  # noqa: E402

engine.kernel_cache.install()       # kernels load from numba's cache without its refresh

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"

__all__ = [
    "connect", "sql", "Connection", "Cursor", "Result", "Config",
    "apilevel", "threadsafety", "paramstyle",
    "Error", "Warning", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "PqdbError", "PqdbIOError", "FileFormatError", "UnsupportedFeatureError",
    "AuthenticationError", "SQLError", "BinderError", "ConfigError", "ExecutionError",
    "MemoryLimitError", "ArithmeticOverflowError", "QueryInterrupted", "QueryTimeout",
]
