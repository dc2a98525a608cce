"""The root of pqdb's one exception hierarchy, and PEP 249's classes.

scan/ is the lowest room and may import nothing of ours, yet its errors must
belong to the same hierarchy as SQL and execution errors.  So the root, the
PEP 249 classes every pqdb class derives from, and the file/I-O classes live
here; planner/errors.py adds the SQL classes and engine/errors.py the
execution and API ones (the whole tree is drawn there).  Users import
everything from ``engine.errors`` (or ``engine``).
"""

from __future__ import annotations

import builtins


# ---- PEP 249 ------------------------------------------------------------------

class Warning(builtins.Exception):      # noqa: A001 - the PEP 249 name
    """PEP 249 Warning (pqdb raises none)."""


class PqdbError(builtins.Exception):
    """Base class of every error pqdb raises (PEP 249 ``Error``)."""


Error = PqdbError


class InterfaceError(PqdbError):
    """Misuse of the API rather than of the database: a closed connection or
    cursor, fetching without a result."""


class DatabaseError(PqdbError):
    """An error of the database itself (every class below)."""


class DataError(DatabaseError):
    """Bad data: malformed files, values out of range, failed conversions."""


class OperationalError(DatabaseError):
    """The database's operation failed: I/O, memory, resources."""


class IntegrityError(DatabaseError):
    """PEP 249 IntegrityError (pqdb is read-only and raises none)."""


class InternalError(DatabaseError):
    """A bug in pqdb: an exception it did not expect.  The message names the
    original exception's type; the original is the ``__cause__``."""


class ProgrammingError(DatabaseError):
    """Bad SQL, unknown names, bad parameters or options."""


class NotSupportedError(DatabaseError):
    """Something pqdb does not implement."""


# ---- pqdb's classes ------------------------------------------------------------

class PqdbIOError(OperationalError):
    """Reading bytes failed: missing file, short read, broken server.

    ``url`` and ``byte_range`` (start, end) name what was being read; a
    read of the last n bytes of a file of unknown size is (-n, None)."""

    def __init__(self, message: str, url: str | None = None,
                 byte_range: tuple[int, int] | None = None):
        parts = [message]
        if url is not None:
            parts.append(f"url={url}")
        if byte_range is not None and byte_range[1] is None:
            parts.append(f"range=last {-byte_range[0]} bytes")
        elif byte_range is not None:
            parts.append(f"range={byte_range[0]}-{byte_range[1]}")
        super().__init__(" ".join(parts) if len(parts) > 1 else message)
        self.url = url
        self.byte_range = byte_range


def with_place(message: str, **where) -> str:
    """``message (file f, row group 3, column c, page 2)``: the parts of
    ``where`` that are known, in the order given, named with spaces."""
    known = [f"{name.replace('_', ' ')} {value}" for name, value in where.items()
             if value is not None]
    return message if not known else f"{message} ({', '.join(known)})"


class FileFormatError(DataError):
    """A Parquet file is malformed.  Names file, row group, column and page
    where known."""

    def __init__(self, message: str, file: str | None = None,
                 row_group: int | None = None, column: str | None = None,
                 page: int | None = None):
        super().__init__(with_place(message, file=file, row_group=row_group,
                                    column=column, page=page))
        self.file = file
        self.row_group = row_group
        self.column = column
        self.page = page


class UnsupportedFeatureError(NotSupportedError):
    """A feature pqdb does not implement (yet); the message names it."""


class AuthenticationError(OperationalError):
    """An encrypted file could not be authenticated or decrypted: a wrong or
    missing key, tampered, truncated or misplaced data.  Names the file, the
    module (footer, data page, column index...), row group, column and page
    where known; never a key."""

    def __init__(self, message: str, file: str | None = None, module: str | None = None,
                 row_group: int | None = None, column: str | None = None,
                 page: int | None = None):
        super().__init__(with_place(message, file=file, module=module,
                                    row_group=row_group, column=column, page=page))
        self.message = message
        self.file = file
        self.module = module
        self.row_group = row_group
        self.column = column
        self.page = page

    def again(self, **where) -> "AuthenticationError":
        """A fresh error of the same message and place (``where`` overrides)."""
        args = dict(file=self.file, module=self.module, row_group=self.row_group,
                    column=self.column, page=self.page)
        args.update(where)
        return AuthenticationError(self.message, **args)
