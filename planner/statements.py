"""Parsed statements: what planner.frontend.parse_statements returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class QueryStatement:
    ast: object          # sqlglot expression of a SELECT / set operation
    sql: str             # the statement's own text (for error positions)


@dataclass
class ExplainStatement:
    """EXPLAIN [ANALYZE] query / EXPLAIN (ANALYZE, FORMAT JSON) query."""
    ast: object
    sql: str
    analyze: bool = False    # run the query, print what each operator did
    format: str = "text"     # "text" or "json"


@dataclass
class DescribeStatement:
    ast: object          # the query whose result columns are described
    sql: str


@dataclass
class CreateViewStatement:
    name: str
    ast: object          # the view's query
    replace: bool
    sql: str


@dataclass
class DropViewStatement:
    name: str
    if_exists: bool
    sql: str


@dataclass
class SetStatement:
    name: str
    value: object        # int, float, str or bool
    sql: str


@dataclass
class CopyStatement:
    """COPY (query) TO 'path' (options) / COPY table_or_view TO 'path'."""
    ast: object          # the query whose rows are written (a table: SELECT * FROM it)
    path: str
    options: dict        # option name (lower case) -> value: str, int, float, bool, list, dict
    sql: str


@dataclass
class PragmaStatement:
    """PRAGMA name(args...): ``add_parquet_key('name', 'key')``.  Its text is
    not kept (it may hold a key): repr shows the name and argument count."""
    name: str
    args: tuple = ()

    def __repr__(self) -> str:
        return f"PragmaStatement({self.name!r}, {len(self.args)} arguments)"


Statement = (QueryStatement | CopyStatement | ExplainStatement | DescribeStatement
             | CreateViewStatement | DropViewStatement | SetStatement | PragmaStatement)
