"""What the binder needs to know about tables, as an interface.

planner/ may not import engine/, so the binder is handed an object with these
methods; engine/catalog.py implements it over scan/ and the buffer manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from planner.statistics import TableStatistics
from planner.types import DataType


@dataclass
class TableInfo:
    files: list[str]                      # resolved paths/URLs, in order
    columns: list[tuple[str, DataType]]   # name and SQL type of every column
    row_count: int                        # sum of footer row counts
    # hive partitioning: {file: {partition column: value in engine storage}}
    # (the columns are also in ``columns``, after the files' own); None if none
    partitions: dict | None = None


class Catalog(Protocol):
    def lookup_view(self, name: str):
        """The parsed query (a sqlglot expression) of view ``name``, or None.
        Names are case-insensitive."""

    def table_info(self, spec: str) -> TableInfo:
        """Resolve a table spec -- a path, a glob, a URL, or a list of those
        joined by the binder -- into files and their schema.  Several files
        form one table; their schemas must agree (BinderError otherwise).
        Raises PqdbIOError when nothing matches.  read_parquet's options
        (``hive_partitioning``, ``encryption_config``) come as keyword arguments, and then ``spec``
        may be the whole list."""

    # takes_lists = True: optional; table_info then gets a read_parquet list
    # whole also without options (one hive detection and schema check over
    # all its files), else the binder resolves the list one spec at a time.

    def confirm_files(self) -> bool:
        """After binding: wait for the file validations table_info started
        in the background; False when a file changed (plan again).
        Optional."""
        return True

    def table_statistics(self, files: list[str]) -> TableStatistics | None:
        """Statistics of the table made of ``files`` (as resolved by
        table_info), or None when nothing is known; the planner then
        estimates from footer row counts and defaults."""
        return None

    def statistics_table(self, spec: str) -> tuple[list, list]:
        """pqdb_statistics(spec): ([(column name, SQL type)], rows), one row
        per column of the table ``spec`` names.  Optional: the binder
        refuses pqdb_statistics() for a catalog without it."""


def table_statistics(catalog, files: list[str]) -> TableStatistics | None:
    """``catalog.table_statistics(files)``; None for a catalog without the
    method (the protocol's default: catalogs need not inherit from it)."""
    method = getattr(catalog, "table_statistics", None)
    return None if method is None else method(list(files))
