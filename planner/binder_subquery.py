"""Binding of subqueries: EXISTS, IN (subquery), scalar subqueries, and the
correlated references from a subquery to the columns of enclosing queries.

A subquery inside an expression first binds to a ``SubqueryExpr`` (its own
plan, with ``OuterRef``s where it reads columns of the enclosing query).
Once the clause is bound, ``plan_conditions`` / ``plan_values`` turn every
SubqueryExpr into a ``DependentJoin`` over the clause's input and replace it
by a reference to the join's output (a mark or value column), or, for
EXISTS / NOT EXISTS / IN conjuncts of a WHERE, by a semi / anti join.
planner.rules.decorrelation then unnests the dependent joins.  Nothing here
evaluates a subquery per row.
"""

from __future__ import annotations

import itertools

from sqlglot import exp

from planner import functions as F
from planner import types as T
from planner.errors import UnsupportedFeatureError
from planner.expressions import (Call, ColumnRef, Expr, OuterRef, conjunction,
                                 split_conjuncts, walk)
from planner.logical import DependentJoin, Filter, Join, Node, Project

# clauses whose subqueries are planned (others raise UnsupportedFeatureError)
_ALLOWED_CLAUSES = ("WHERE", "SELECT", "HAVING", "ORDER BY", "JOIN condition")
_IDS = itertools.count(1)


class SubqueryExpr(Expr):
    """A subquery inside an expression, until plan_conditions/plan_values.

    kind: exists | in | scalar.  probe: the left operand of IN.
    correlated: the plan references the enclosing query (OuterRef corr_id).
    """

    def __init__(self, kind: str, plan: Node, corr_id: int, correlated: bool,
                 type_: T.DataType, probe: Expr | None = None, name: str = ""):
        self.kind = kind
        self.plan = plan
        self.corr_id = corr_id
        self.correlated = correlated
        self.type = type_
        self.probe = probe
        self.name = name

    def children(self) -> list[Expr]:
        return [self.probe] if self.probe is not None else []

    def __repr__(self) -> str:
        return f"subquery{self.corr_id}:{self.kind}"


# ---- binding ---------------------------------------------------------------

def _stack(ctx, name: str) -> list:
    stack = getattr(ctx, name, None)
    if stack is None:
        stack = []
        setattr(ctx, name, stack)
    return stack


def enter_query(ctx, query_binder) -> None:
    """bind_select calls this for each SELECT block (subqueries see its CTEs)."""
    _stack(ctx, "subquery_query_binders").append(query_binder)


def leave_query(ctx) -> None:
    _stack(ctx, "subquery_query_binders").pop()


def resolve_outer(ctx, name: str, table: str | None, node) -> OuterRef | None:
    """A column of an enclosing query, innermost first; None when none has it."""
    for scope, corr_id in reversed(_stack(ctx, "subquery_outer_scopes")):
        hits = scope.find(name, table)
        if not hits:
            continue
        if len(hits) > 1:
            full = f"{table}.{name}" if table else name
            raise ctx.error(f"column reference {full} is ambiguous", node)
        col = scope.columns[hits[0]]
        _stack(ctx, "subquery_used_ids").append(corr_id)
        return OuterRef(corr_id, hits[0], col.type, col.name)
    return None


def bind_subquery_expression(binder, node) -> Expr:
    """Bind EXISTS (...), x IN (...) or a scalar (...) found by ExpressionBinder."""
    ctx = binder.ctx
    if binder.clause not in _ALLOWED_CLAUSES:
        raise UnsupportedFeatureError(f"subquery in {binder.clause} is not supported")
    if isinstance(node, exp.Exists):
        kind, query, probe = "exists", node.this, None
    elif isinstance(node, exp.In):
        kind, query, probe = "in", node.args["query"], node.this
    else:
        kind, query, probe = "scalar", node, None
    if isinstance(query, exp.Subquery) and not query.args.get("alias") and not any(
            query.args.get(k) for k in ("order", "limit", "offset")):
        query = query.this
    corr_id = next(_IDS)
    plan = _bind_plan(ctx, binder.scope, corr_id, query)
    correlated = corr_id in _stack(ctx, "subquery_used_ids")
    if kind == "exists":
        return SubqueryExpr(kind, plan, corr_id, correlated, T.BOOLEAN)
    width = len(plan.schema)
    if width != 1:
        raise ctx.error(f"subquery returns {width} columns, expected 1", node)
    column = plan.schema[0]
    if kind == "scalar":
        return SubqueryExpr(kind, plan, corr_id, correlated, column.type, name=column.name)
    if node.args.get("unnest") is not None or node.args.get("field") is not None:
        raise UnsupportedFeatureError("IN with UNNEST is not supported")
    left = binder._bind(probe)
    cmp = F.in_subquery_comparison(left, ColumnRef(0, column.type, column.name))
    left, right = cmp.args
    if not (isinstance(right, ColumnRef) and right.index == 0):
        plan = Project(plan, [right], [column.name])
    return SubqueryExpr(kind, plan, corr_id, correlated, T.BOOLEAN, probe=left)


def _bind_plan(ctx, scope, corr_id: int, query) -> Node:
    from planner.binder import QueryBinder
    binders = _stack(ctx, "subquery_query_binders")
    ctes = binders[-1].ctes if binders else {}
    outer = _stack(ctx, "subquery_outer_scopes")
    outer.append((scope, corr_id))
    try:
        return QueryBinder(ctx, ctes).bind_query(query)
    finally:
        outer.pop()


# ---- planning: SubqueryExpr -> DependentJoin ---------------------------------

def has_subquery(expr: Expr | None) -> bool:
    return expr is not None and any(isinstance(e, SubqueryExpr) for e in walk(expr))


def plan_conditions(node: Node, pred: Expr, aggregated: bool = False) -> Node:
    """Filter ``node`` by ``pred`` (WHERE or HAVING).  Conjuncts without
    subqueries filter first; EXISTS / NOT EXISTS / IN conjuncts become semi
    and anti joins; the rest reference mark/value columns of dependent joins
    and filter last.  The output keeps node's columns first (extras after)."""
    conjuncts = split_conjuncts(pred)
    plain = [c for c in conjuncts if not has_subquery(c)]
    if plain:
        node = Filter(node, conjunction(plain))
    late: list[Expr] = []
    for c in conjuncts:
        if not has_subquery(c):
            continue
        negated = isinstance(c, Call) and c.func == "not"
        inner = c.args[0] if negated else c
        if isinstance(inner, SubqueryExpr) and (
                inner.kind == "exists" or (inner.kind == "in" and not negated)):
            _check_position(inner, aggregated)
            node = DependentJoin(node, inner.plan, "anti" if negated else "semi",
                                 inner.corr_id, inner.probe)
            continue
        node, (c,) = plan_values(node, [c], aggregated)
        late.append(c)
    if late:
        node = Filter(node, conjunction(late))
    return node


def plan_join_condition(left: Node, right: Node, kind: str, pred: Expr) -> Node:
    """An inner join whose ON condition has subqueries: a cross join filtered
    by the condition (as WHERE), trimmed back to the two inputs' columns."""
    if kind != "inner":
        raise UnsupportedFeatureError(f"subquery in the ON condition of a {kind.upper()} JOIN "
                                      "is not supported")
    node = plan_conditions(Join(left, right, "cross", [], []), pred)
    schema = left.schema + right.schema
    return Project(node, [ColumnRef(i, f.type, f.name) for i, f in enumerate(schema)],
                   [f.name for f in schema])


def plan_values(node: Node, exprs: list[Expr], aggregated: bool = False):
    """(node', exprs') where every SubqueryExpr in exprs became a column of a
    dependent join appended to node's output."""
    out = []
    for e in exprs:
        node, e = _replace(node, e, aggregated)
        out.append(e)
    return node, out


def _replace(node: Node, e: Expr, aggregated: bool):
    if isinstance(e, SubqueryExpr):
        _check_position(e, aggregated)
        probe = e.probe
        if probe is not None:
            node, probe = _replace(node, probe, aggregated)
        position = len(node.schema)
        kind = {"exists": "mark", "in": "mark_in", "scalar": "single"}[e.kind]
        node = DependentJoin(node, e.plan, kind, e.corr_id, probe)
        return node, ColumnRef(position, e.type, e.name or "subquery")
    if isinstance(e, Call):
        args = []
        for a in e.args:
            node, a = _replace(node, a, aggregated)
            args.append(a)
        return node, Call(e.func, args, e.type)
    return node, e


def _check_position(e: SubqueryExpr, aggregated: bool) -> None:
    if aggregated and (e.correlated or e.probe is not None):
        what = "correlated subquery" if e.correlated else "IN (subquery)"
        raise UnsupportedFeatureError(f"{what} after GROUP BY/aggregation (in HAVING or an "
                                      "aggregating SELECT) is not supported")
