"""Logical plan nodes.

Every node has ``schema``: the list of output Fields, in order.  Expressions
held by a node are bound against the output schema of its input (for Join:
left schema followed by right schema).  The engine turns this tree into
pipelines (engine/pipeline.py); the planner's rules rewrite it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from planner.expressions import AggregateCall, Expr
from planner.types import BOOLEAN, DataType

if TYPE_CHECKING:
    from planner.statistics import TableStatistics


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
    statistics: the table's statistics (planner.statistics.TableStatistics)
        from the catalog, or None; read by planner/cardinality.py only.  Not
        part of the plan's meaning: fingerprints skip it (compare=False).
    partitions: hive partitioning: {file: {column name: value}} (the values of
        the partition columns, constant per file; engine/hive.py), or None.
        planner/rules/partition_pruning.py drops the files a filter rules out.
    """
    files: list[str]
    table_columns: list[Field]
    columns: list[int]
    filters: list[Expr] = field(default_factory=list)
    row_count: int = 0
    alias: str | None = None
    statistics: "TableStatistics | None" = field(default=None, compare=False, repr=False)
    partitions: dict | None = field(default=None, compare=False, repr=False)

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
        memo = self.__dict__.get("_schema")       # (plan nodes are not changed once made)
        if memo is None:
            memo = self.__dict__["_schema"] = [Field(n, e.type)
                                               for n, e in zip(self.names, self.exprs)]
        return list(memo)

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


JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti", "cross",
              "mark", "mark_in", "single")
MARK_KINDS = ("mark", "mark_in")


@dataclass(eq=False)
class Join(Node):
    """Equi-join on left_keys[i] = right_keys[i] (over each side's schema),
    plus an optional residual predicate over left.schema + right.schema.
    Output: left columns then right columns (semi/anti: left only).

    Subquery kinds (made by planner.rules.decorrelation):
    mark:    left columns + one BOOLEAN ``mark``: some build row has equal
             keys and satisfies the residual (never NULL).
    mark_in: like mark, but left_keys[0] = right_keys[0] is an IN comparison
             with SQL NULL semantics: the mark is NULL when no candidate (a
             build row with the other keys equal and the residual true)
             matches and some candidate's or the probe's key 0 is NULL.
    single:  a left join that fails when a left row has more than one
             partner (scalar subqueries)."""
    left: Node
    right: Node
    kind: str
    left_keys: list[Expr]
    right_keys: list[Expr]
    residual: Expr | None = None

    @property
    def schema(self):
        memo = self.__dict__.get("_schema")       # (plan nodes are not changed once made)
        if memo is None:
            if self.kind in ("semi", "anti"):
                memo = self.left.schema
            elif self.kind in MARK_KINDS:
                memo = self.left.schema + [Field("mark", BOOLEAN)]
            else:
                memo = self.left.schema + self.right.schema
            self.__dict__["_schema"] = memo
        return list(memo)

    @property
    def children(self):
        return [self.left, self.right]

    def replace_children(self, children):
        return Join(children[0], children[1], self.kind, self.left_keys,
                    self.right_keys, self.residual)


DEPENDENT_JOIN_KINDS = ("semi", "anti", "mark", "mark_in", "single")


@dataclass(eq=False)
class DependentJoin(Node):
    """A subquery applied to every row of ``left`` (Neumann & Kemper's
    dependent join).  ``right`` may reference left's columns through
    ``OuterRef(corr_id, i)``.  Made by the binder, replaced by ordinary joins
    in planner.rules.decorrelation; the engine never sees it.

    kind: semi / anti (EXISTS, NOT EXISTS, IN in a conjunctive WHERE: ``probe``
          = right's first column for IN), mark (EXISTS as a value), mark_in
          (IN as a value: ``probe`` compared with right's first column),
          single (a scalar subquery: one value column, NULL when empty).
    Output: left columns, plus ``mark`` (mark kinds) or right's one column
    (single).
    """
    left: Node
    right: Node
    kind: str
    corr_id: int
    probe: Expr | None = None

    @property
    def schema(self):
        if self.kind in ("semi", "anti"):
            return self.left.schema
        if self.kind in MARK_KINDS:
            return self.left.schema + [Field("mark", BOOLEAN)]
        return self.left.schema + [self.right.schema[0]]

    @property
    def children(self):
        return [self.left, self.right]

    def replace_children(self, children):
        return DependentJoin(children[0], children[1], self.kind, self.corr_id, self.probe)


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


@dataclass(eq=False)
class Union(Node):
    """UNION ALL (bag union) of inputs whose schemas have the same types, in
    order; column names from ``names``.  UNION/INTERSECT/EXCEPT are built on
    it by planner/binder_setops.py (an Aggregate over tagged inputs)."""
    inputs: list[Node]
    names: list[str]

    @property
    def schema(self):
        return [Field(n, f.type) for n, f in zip(self.names, self.inputs[0].schema)]

    @property
    def children(self):
        return list(self.inputs)

    def replace_children(self, children):
        return Union(list(children), self.names)


@dataclass
class WindowFrame:
    """ROWS or RANGE frame.  Bounds are (kind, offset) with kind one of
    unbounded_preceding, preceding, current, following, unbounded_following;
    offset is a non-negative int (RANGE over DECIMAL: scaled; DATE: days) or
    float, None for the offset-free kinds."""
    mode: str                      # rows | range
    start: tuple
    end: tuple


@dataclass(eq=False)
class WindowFunction:
    """One window function call.

    func: row_number rank dense_rank lag lead first_value last_value
          count_star count sum avg min max
    args: over the Window's input schema (lag/lead: value, offset literal,
          default already cast to ``type``)
    frame: None for the ranking and offset functions.
    """
    func: str
    args: list[Expr]
    partition: list[Expr]
    order: list[SortKey]
    frame: WindowFrame | None
    type: DataType

    def exprs(self) -> list[Expr]:
        return list(self.args) + list(self.partition) + [k.expr for k in self.order]

    def __repr__(self) -> str:
        return (f"{self.func}({', '.join(map(repr, self.args))}) OVER (partition={self.partition!r}"
                f" order={[(k.expr, k.ascending) for k in self.order]!r} frame={self.frame})")


@dataclass(eq=False)
class Window(Node):
    """Input columns followed by one column per window function."""
    child: Node
    functions: list[WindowFunction]
    names: list[str]

    @property
    def schema(self):
        return self.child.schema + [Field(n, f.type) for n, f in zip(self.names, self.functions)]

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Window(children[0], self.functions, self.names)
