"""What the binder needs to know about tables, as an interface.

planner/ may not import engine/, so the binder is handed an object with these
methods; engine/catalog.py implements it over scan/ and the buffer manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from planner.types import DataType


@dataclass
class TableInfo:
    files: list[str]                      # resolved paths/URLs, in order
    columns: list[tuple[str, DataType]]   # name and SQL type of every column
    row_count: int                        # sum of footer row counts


class Catalog(Protocol):
    def lookup_view(self, name: str):
        """The parsed query (a sqlglot expression) of view ``name``, or None.
        Names are case-insensitive."""

    def table_info(self, spec: str) -> TableInfo:
        """Resolve a table spec -- a path, a glob, a URL, or a list of those
        joined by the binder -- into files and their schema.  Several files
        form one table; their schemas must agree (BinderError otherwise).
        Raises PqdbIOError when nothing matches."""
