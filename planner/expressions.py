"""Bound, typed expressions: what the binder produces and the engine evaluates.

An expression is evaluated against the output columns of the plan node below
it; ``ColumnRef.index`` is a position in that node's ``schema``.

Function names of ``Call`` (the engine's evaluator implements each; the binder
types each).  Operands are already converted to the types the function needs
by explicit ``cast`` calls inserted by the binder, except where noted:

  arithmetic   add sub mul div intdiv mod neg        (decimal operands may
               differ in scale: the evaluator rescales to the result scale)
  comparison   eq ne lt le gt ge                     (both args same type)
  logic        and or not                            (SQL three-valued logic,
               and/or take 2+ args)
  null tests   is_null is_not_null
  sets         in_list(x, v1, v2, ...)               (all args same type;
               NULLs per SQL: no match and a NULL in the list -> NULL)
  patterns     like(x, pattern[, escape]) ilike(...) (pattern usually a Literal)
  conditional  case(when1, then1, when2, then2, ..., else)
               (``else`` always present: the binder adds a NULL literal),
               coalesce(a, b, ...)
  conversion   cast(x)                               (target = Call.type)
  dates        extract(part_literal, x)              part: year month day ...
               date_add(x, interval_literal) date_sub(x, interval_literal)
  strings      concat(a, b, ...) substring(x, start[, length]) upper lower
               length
  math         abs round(x[, digits])

A ``Literal`` holds its value in storage form: ints for integers and scaled
decimals, days for DATE, microseconds for TIMESTAMP, ``str`` for VARCHAR,
``bytes`` for BLOB, ``Interval`` for INTERVAL, ``None`` for NULL.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.types import DataType

# each comparison with its operands swapped: ``a op b`` is ``b MIRRORED_COMPARISON[op] a``
MIRRORED_COMPARISON = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


class Expr:
    type: DataType

    def children(self) -> list["Expr"]:
        return []


@dataclass(frozen=True)
class Interval:
    months: int = 0
    days: int = 0
    micros: int = 0

    # ordered as DuckDB orders intervals (30-day months): a literal meets
    # INTERVAL column values (scan.storage.IntervalValue) and the engine's
    # NULL gaps (ints) in comparisons; equality stays field by field
    def __int__(self) -> int:
        return (self.months * 30 + self.days) * 86_400_000_000 + self.micros

    def __lt__(self, other):
        return int(self) < int(other)

    def __le__(self, other):
        return int(self) <= int(other)

    def __gt__(self, other):
        return int(self) > int(other)

    def __ge__(self, other):
        return int(self) >= int(other)


@dataclass(eq=False)
class ColumnRef(Expr):
    index: int
    type: DataType
    name: str = ""

    def __repr__(self) -> str:
        return f"#{self.index}{'(' + self.name + ')' if self.name else ''}"


@dataclass(eq=False)
class OuterRef(Expr):
    """A correlated reference from a subquery to column ``index`` of the
    left input of the DependentJoin numbered ``corr_id``.  Only exists
    between binding and planner.rules.decorrelation."""
    corr_id: int
    index: int
    type: DataType
    name: str = ""

    def __repr__(self) -> str:
        return f"outer{self.corr_id}#{self.index}{'(' + self.name + ')' if self.name else ''}"


@dataclass(eq=False)
class Literal(Expr):
    value: object
    type: DataType

    def __repr__(self) -> str:
        return f"{self.value!r}::{self.type}"


@dataclass(eq=False)
class Call(Expr):
    func: str
    args: list[Expr]
    type: DataType

    def children(self) -> list[Expr]:
        return self.args

    def __repr__(self) -> str:
        return f"{self.func}({', '.join(map(repr, self.args))})"


@dataclass(eq=False)
class Parameter(Expr):
    """A `?` placeholder; replaced by a Literal before planning finishes."""
    index: int
    type: DataType


@dataclass(eq=False)
class AggregateCall:
    """One aggregate of an Aggregate node.

    func: count_star | count | sum | avg | min | max
    arg: None for count_star, else an expression over the Aggregate's input.
    distinct: count(DISTINCT x) and friends.
    type: result type (count -> BIGINT, avg -> DOUBLE, sum(DECIMAL(p,s)) ->
    DECIMAL(38,s), sum(integer) -> HUGEINT, sum(float) -> DOUBLE, min/max ->
    type of arg).
    """
    func: str
    arg: Expr | None
    distinct: bool
    type: DataType

    def __repr__(self) -> str:
        inner = "*" if self.arg is None else repr(self.arg)
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{inner})"


def walk(expr: Expr):
    """Yield expr and every sub-expression, parents first."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(e.children()))


def column_indexes(expr: Expr) -> set[int]:
    return {e.index for e in walk(expr) if isinstance(e, ColumnRef)}


def remap_columns(expr: Expr, mapping: dict[int, int]) -> Expr:
    """A copy of expr with every ColumnRef index i replaced by mapping[i]."""
    if isinstance(expr, ColumnRef):
        return ColumnRef(mapping[expr.index], expr.type, expr.name)
    if isinstance(expr, Call):
        return Call(expr.func, [remap_columns(a, mapping) for a in expr.args], expr.type)
    return expr


def split_conjuncts(expr: Expr | None) -> list[Expr]:
    if expr is None:
        return []
    if isinstance(expr, Call) and expr.func == "and":
        out: list[Expr] = []
        for a in expr.args:
            out.extend(split_conjuncts(a))
        return out
    return [expr]


def conjunction(exprs: list[Expr]) -> Expr | None:
    from planner.types import BOOLEAN
    if not exprs:
        return None
    if len(exprs) == 1:
        return exprs[0]
    return Call("and", list(exprs), BOOLEAN)
