"""The root of pqdb's one exception hierarchy.

scan/ is the lowest room and may import nothing of ours, yet its errors must
belong to the same hierarchy as SQL and execution errors.  So the root and the
file/I-O classes live here; engine/errors.py re-exports them and adds the
classes that speak SQL.  Users import everything from ``engine.errors``.
"""

from __future__ import annotations


class PqdbError(Exception):
    """Base class of every error pqdb raises on purpose."""


class PqdbIOError(PqdbError):
    """Reading bytes failed: missing file, short read, broken server.

    ``url`` and ``byte_range`` (start, end) name what was being read."""

    def __init__(self, message: str, url: str | None = None,
                 byte_range: tuple[int, int] | None = None):
        parts = [message]
        if url is not None:
            parts.append(f"url={url}")
        if byte_range is not None:
            parts.append(f"range={byte_range[0]}-{byte_range[1]}")
        super().__init__(" ".join(parts) if len(parts) > 1 else message)
        self.url = url
        self.byte_range = byte_range


class FileFormatError(PqdbError):
    """A Parquet file is malformed.  Names file, row group, column and page
    where known."""

    def __init__(self, message: str, file: str | None = None,
                 row_group: int | None = None, column: str | None = None,
                 page: int | None = None):
        where = []
        if file is not None:
            where.append(f"file {file}")
        if row_group is not None:
            where.append(f"row group {row_group}")
        if column is not None:
            where.append(f"column {column}")
        if page is not None:
            where.append(f"page {page}")
        text = message if not where else f"{message} ({', '.join(where)})"
        super().__init__(text)
        self.file = file
        self.row_group = row_group
        self.column = column
        self.page = page


class UnsupportedFeatureError(PqdbError):
    """A feature pqdb does not implement (yet); the message names it."""


class AuthenticationError(PqdbError):
    """An encrypted file could not be authenticated or decrypted (wrong key,
    tampered data)."""
