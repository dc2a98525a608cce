"""Name scopes of the binder: the columns visible in a FROM clause, and the
context (SQL text, parameters, CTEs) shared by one query's binding."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.errors import BinderError, position_of
from planner.types import DataType


@dataclass
class ScopeColumn:
    table: str | None       # alias/table name, for qualified references and t.*
    name: str
    type: DataType
    hidden: bool = False    # the right-hand copy of a USING column


@dataclass
class Scope:
    """Columns of a relation, aligned with its plan node's output positions."""
    columns: list[ScopeColumn] = field(default_factory=list)

    def concat(self, other: "Scope") -> "Scope":
        return Scope(self.columns + other.columns)

    def has_table(self, table: str) -> bool:
        t = table.lower()
        return any(c.table is not None and c.table.lower() == t for c in self.columns)

    def find(self, name: str, table: str | None = None) -> list[int]:
        """Indexes of visible columns matching name (and table)."""
        n = name.lower()
        t = table.lower() if table else None
        hits = [i for i, c in enumerate(self.columns)
                if c.name.lower() == n and (t is None or (c.table or "").lower() == t)]
        if t is None and len(hits) > 1:
            visible = [i for i in hits if not self.columns[i].hidden]
            hits = visible or hits
        return hits


class BindContext:
    """Shared by all parts of one statement's binding."""

    def __init__(self, catalog, params, sql: str | None):
        self.catalog = catalog
        self.params = params
        self.sql = sql
        self.placeholders: dict[int, object] = {}  # id(sqlglot node) -> param number or name
        self.view_depth = 0

    # ---- errors with positions ------------------------------------------
    def position(self, node) -> tuple[int | None, int | None]:
        if self.sql is None or node is None or self.view_depth:
            return None, None
        for n in _preorder(node):
            meta = getattr(n, "_meta", None) or {}
            if "start" in meta:
                return position_of(self.sql, meta["start"])
        return None, None

    def error(self, message: str, node=None) -> BinderError:
        line, col = self.position(node)
        return BinderError(message, line, col, sql=self.sql)


def _preorder(node):
    yield node
    if hasattr(node, "iter_expressions"):
        for child in node.iter_expressions():
            yield from _preorder(child)
