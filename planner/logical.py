"""Logical plan nodes.

Every node has ``schema``: the list of output Fields, in order.  Expressions
held by a node are bound against the output schema of its input (for Join:
left schema followed by right schema).  The engine turns this tree into
pipelines (engine/pipeline.py); the planner's rules rewrite it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.expressions import AggregateCall, Expr
from planner.types import DataType


@dataclass
class Field:
    name: str
    type: DataType
    table: str | None = None      # the alias/table it came from, for name lookup

    def __repr__(self) -> str:
        prefix = f"{self.table}." if self.table else ""
        return f"{prefix}{self.name}:{self.type}"


class Node:
    schema: list[Field]

    @property
    def children(self) -> list["Node"]:
        return []

    def replace_children(self, children: list["Node"]) -> "Node":
        raise NotImplementedError


@dataclass(eq=False)
class Scan(Node):
    """Read Parquet files as one table.

    files: resolved paths/URLs (a glob already expanded), in order.
    table_columns: every column of the table (from the first file's schema).
    columns: indexes into table_columns that are read; ``schema`` is those.
    filters: conjuncts over ``schema`` pushed into the scan; the scan must
        apply all of them (it may also use them to skip row groups).
    row_count: total rows in the files (from the footers).
    """
    files: list[str]
    table_columns: list[Field]
    columns: list[int]
    filters: list[Expr] = field(default_factory=list)
    row_count: int = 0
    alias: str | None = None

    @property
    def schema(self) -> list[Field]:
        return [self.table_columns[i] for i in self.columns]

    def replace_children(self, children):
        return self


@dataclass(eq=False)
class OneRow(Node):
    """SELECT without FROM: one row, no columns."""

    @property
    def schema(self) -> list[Field]:
        return []

    def replace_children(self, children):
        return self


@dataclass(eq=False)
class Filter(Node):
    child: Node
    predicate: Expr

    @property
    def schema(self):
        return self.child.schema

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Filter(children[0], self.predicate)


@dataclass(eq=False)
class Project(Node):
    child: Node
    exprs: list[Expr]
    names: list[str]

    @property
    def schema(self):
        return [Field(n, e.type) for n, e in zip(self.names, self.exprs)]

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Project(children[0], self.exprs, self.names)


@dataclass(eq=False)
class Aggregate(Node):
    """GROUP BY groups; output is the group values then the aggregates.
    No aggregates = DISTINCT over groups.  No groups = one output row
    (even on empty input)."""
    child: Node
    groups: list[Expr]
    aggregates: list[AggregateCall]
    group_names: list[str] = field(default_factory=list)
    aggregate_names: list[str] = field(default_factory=list)

    @property
    def schema(self):
        gn = self.group_names or [f"group{i}" for i in range(len(self.groups))]
        an = self.aggregate_names or [f"agg{i}" for i in range(len(self.aggregates))]
        return ([Field(n, g.type) for n, g in zip(gn, self.groups)]
                + [Field(n, a.type) for n, a in zip(an, self.aggregates)])

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Aggregate(children[0], self.groups, self.aggregates,
                         self.group_names, self.aggregate_names)


JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti", "cross")


@dataclass(eq=False)
class Join(Node):
    """Equi-join on left_keys[i] = right_keys[i] (over each side's schema),
    plus an optional residual predicate over left.schema + right.schema.
    Output: left columns then right columns (semi/anti: left only)."""
    left: Node
    right: Node
    kind: str
    left_keys: list[Expr]
    right_keys: list[Expr]
    residual: Expr | None = None

    @property
    def schema(self):
        if self.kind in ("semi", "anti"):
            return self.left.schema
        return self.left.schema + self.right.schema

    @property
    def children(self):
        return [self.left, self.right]

    def replace_children(self, children):
        return Join(children[0], children[1], self.kind, self.left_keys,
                    self.right_keys, self.residual)


@dataclass
class SortKey:
    expr: Expr
    ascending: bool = True
    nulls_first: bool = False     # DuckDB default: NULLS LAST for ASC and DESC


@dataclass(eq=False)
class Sort(Node):
    child: Node
    keys: list[SortKey]

    @property
    def schema(self):
        return self.child.schema

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Sort(children[0], self.keys)


@dataclass(eq=False)
class Limit(Node):
    child: Node
    limit: int | None
    offset: int = 0

    @property
    def schema(self):
        return self.child.schema

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Limit(children[0], self.limit, self.offset)


def explain(node: Node, indent: int = 0) -> str:
    """A readable tree of the plan (EXPLAIN output)."""
    pad = "  " * indent
    name = type(node).__name__
    if isinstance(node, Scan):
        cols = ", ".join(f.name for f in node.schema)
        text = f"{pad}Scan {node.alias or ''} files={len(node.files)} rows={node.row_count} [{cols}]"
        if node.filters:
            text += f" filters={node.filters}"
    elif isinstance(node, Filter):
        text = f"{pad}Filter {node.predicate!r}"
    elif isinstance(node, Project):
        text = f"{pad}Project {node.exprs!r}"
    elif isinstance(node, Aggregate):
        text = f"{pad}Aggregate groups={node.groups!r} aggs={node.aggregates!r}"
    elif isinstance(node, Join):
        text = (f"{pad}Join {node.kind} {node.left_keys!r} = {node.right_keys!r}"
                + (f" residual={node.residual!r}" if node.residual is not None else ""))
    elif isinstance(node, Sort):
        text = f"{pad}Sort {[(k.expr, 'asc' if k.ascending else 'desc') for k in node.keys]!r}"
    elif isinstance(node, Limit):
        text = f"{pad}Limit {node.limit} offset {node.offset}"
    else:
        text = f"{pad}{name}"
    return "\n".join([text] + [explain(c, indent + 1) for c in node.children])
