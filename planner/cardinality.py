"""Cardinality estimates for join ordering.

Until statistics (stats/estimates) are wired in, estimates use footer row
counts and fixed selectivity defaults: each pushed-down conjunct keeps 20% of
the rows (an equality with a constant 10%); an equi-join keeps
1/max(ndv(left key), ndv(right key)) of the cross product, where a table's
first column is guessed to be its key (ndv = row count) and any other column
has ndv = sqrt(row count).  A join on several key pairs takes the most
selective pair alone: the pairs of a composite foreign key (TPC-H Q9's
partkey and suppkey) are not independent, and multiplying their
selectivities made lineitem JOIN partsupp look 2,449 rows large instead of
6M, which put that 6M-row result on a build side.
"""

from __future__ import annotations

import math

from planner.expressions import Call, ColumnRef, Expr, Literal, split_conjuncts
from planner.logical import (Aggregate, Filter, Join, Limit, Node, OneRow, Project, Scan, Sort,
                             Union, Window)

CONJUNCT_SELECTIVITY = 0.2
EQUALITY_SELECTIVITY = 0.1
RESIDUAL_SELECTIVITY = 0.5


def conjunct_selectivity(pred: Expr) -> float:
    if isinstance(pred, Call) and pred.func == "eq" and any(isinstance(a, Literal) for a in pred.args):
        return EQUALITY_SELECTIVITY
    return CONJUNCT_SELECTIVITY


def filter_selectivity(preds: list[Expr]) -> float:
    s = 1.0
    for p in preds:
        s *= conjunct_selectivity(p)
    return s


def estimate(node: Node) -> float:
    """Estimated output rows of node (at least 1)."""
    if isinstance(node, Scan):
        return max(node.row_count * filter_selectivity(node.filters), 1.0)
    if isinstance(node, Filter):
        return max(estimate(node.child) * filter_selectivity(split_conjuncts(node.predicate)), 1.0)
    if isinstance(node, (Project, Sort)):
        return estimate(node.child)
    if isinstance(node, Limit):
        child = estimate(node.child)
        return child if node.limit is None else max(min(child, node.limit), 1.0)
    if isinstance(node, Aggregate):
        if not node.groups:
            return 1.0
        child = estimate(node.child)
        ndv = 1.0
        for g in node.groups:
            ndv *= column_ndv(node.child, g)
        return max(min(child, ndv), 1.0)
    if isinstance(node, Join):
        left, right = estimate(node.left), estimate(node.right)
        if node.kind in ("semi", "anti"):
            return max(left * 0.5, 1.0)
        if node.kind in ("mark", "mark_in", "single"):      # one row per left row
            return max(left, 1.0)
        out = left * right
        if node.left_keys:
            out *= min(equi_selectivity(node.left, lk, node.right, rk)
                       for lk, rk in zip(node.left_keys, node.right_keys))
        if node.residual is not None:
            out *= RESIDUAL_SELECTIVITY
        if node.kind in ("left", "full"):
            out = max(out, left)
        if node.kind in ("right", "full"):
            out = max(out, right)
        return max(out, 1.0)
    if isinstance(node, OneRow):
        return 1.0
    if isinstance(node, Union):
        return max(sum(estimate(c) for c in node.inputs), 1.0)
    if isinstance(node, Window):
        return estimate(node.child)
    return 1000.0


def equi_selectivity(left: Node, lkey: Expr, right: Node, rkey: Expr) -> float:
    return 1.0 / max(column_ndv(left, lkey), column_ndv(right, rkey), 1.0)


def column_ndv(node: Node, expr: Expr) -> float:
    """Guessed distinct count of expr over node's output."""
    if not isinstance(expr, ColumnRef):
        return max(math.sqrt(estimate(node)), 1.0)
    base = _base_column(node, expr.index)
    if base is None:
        return max(math.sqrt(estimate(node)), 1.0)
    scan, column = base
    rows = max(scan.row_count, 1)
    ndv = rows if column == 0 else math.sqrt(rows)
    return max(min(ndv, estimate(node) if column != 0 else ndv), 1.0)


def _base_column(node: Node, index: int):
    """The Scan and table column index an output column comes from, if any."""
    while True:
        if isinstance(node, Scan):
            return node, node.columns[index]
        if isinstance(node, (Filter, Sort, Limit)):
            node = node.child
        elif isinstance(node, Project):
            e = node.exprs[index]
            if not isinstance(e, ColumnRef):
                return None
            node, index = node.child, e.index
        elif isinstance(node, Join):
            n = len(node.left.schema)
            node, index = (node.left, index) if index < n else (node.right, index - n)
        elif isinstance(node, Aggregate) and index < len(node.groups):
            g = node.groups[index]
            if not isinstance(g, ColumnRef):
                return None
            node, index = node.child, g.index
        else:
            return None
