"""Rule: push filter conjuncts down the plan.

Conjuncts move through Projects (by substituting the projected expressions),
Sorts, Aggregates (those over group columns only) and into Joins: an inner
join's conjuncts over one side go into that side, those over both become the
join's residual; outer joins only accept what keeps their semantics.  Conjuncts
reaching a Scan become Scan.filters.
"""

from __future__ import annotations

from planner.expressions import (Call, ColumnRef, Expr, column_indexes, conjunction,
                                 remap_columns, split_conjuncts)
from planner.logical import Aggregate, Filter, Join, Node, Project, Scan, Sort


# joins whose output rows are left rows (plus columns): left-only conjuncts
# above them and right-only conjuncts of their condition may move down
_LEFT_PRESERVING = ("left", "semi", "anti", "mark", "mark_in", "single")


def predicate_pushdown(node: Node) -> Node:
    return _push(node, [])


def _wrap(node: Node, preds: list[Expr]) -> Node:
    pred = conjunction(preds)
    return node if pred is None else Filter(node, pred)


def _push(node: Node, preds: list[Expr]) -> Node:
    if isinstance(node, Filter):
        return _push(node.child, preds + split_conjuncts(node.predicate))
    if isinstance(node, Scan):
        if not preds:
            return node
        return Scan(node.files, node.table_columns, node.columns, node.filters + preds,
                    node.row_count, node.alias, node.statistics, node.partitions)
    if isinstance(node, Project):
        return Project(_push(node.child, [substitute(p, node.exprs) for p in preds]),
                       node.exprs, node.names)
    if isinstance(node, Sort):
        return Sort(_push(node.child, preds), node.keys)
    if isinstance(node, Aggregate):
        n = len(node.groups)
        down, stay = [], []
        for p in preds:
            cols = column_indexes(p)
            (down if cols and max(cols) < n else stay).append(p)
        child = _push(node.child, [substitute(p, node.groups) for p in down])
        return _wrap(node.replace_children([child]), stay)
    if isinstance(node, Join):
        return _push_join(node, preds)
    children = [_push(c, []) for c in node.children]
    return _wrap(node.replace_children(children) if children else node, preds)


def substitute(expr: Expr, exprs: list[Expr]) -> Expr:
    """expr with every ColumnRef i replaced by exprs[i]."""
    if isinstance(expr, ColumnRef):
        return exprs[expr.index]
    if isinstance(expr, Call):
        return Call(expr.func, [substitute(a, exprs) for a in expr.args], expr.type)
    return expr


def _push_join(node: Join, preds: list[Expr]) -> Node:
    nleft = len(node.left.schema)
    nright = len(node.right.schema)
    left, right, both, stay = [], [], [], []
    shift = {i: i - nleft for i in range(nleft, nleft + nright)}

    def side(p):
        cols = column_indexes(p)
        if not cols:
            return "none"
        if max(cols) < nleft:
            return "left"
        if min(cols) >= nleft:
            return "right"
        return "both"

    kind = node.kind
    on = split_conjuncts(node.residual)
    if kind in ("inner", "cross"):
        for p in preds + on:
            s = side(p)
            if s == "left":
                left.append(p)
            elif s == "right":
                right.append(remap_columns(p, shift))
            elif s == "both":
                both.append(p)
            else:
                stay.append(p)
        residual = conjunction(both)
        kind = "inner" if (residual is not None or node.left_keys) else "cross"
    else:
        residual_parts = []
        for p in preds:
            s = side(p)
            if s == "left" and kind in _LEFT_PRESERVING:
                left.append(p)
            elif s == "right" and kind == "right":
                right.append(remap_columns(p, shift))
            else:
                stay.append(p)
        for p in on:
            s = side(p)
            if s == "right" and kind in _LEFT_PRESERVING:
                right.append(remap_columns(p, shift))
            elif s == "left" and kind == "right":
                left.append(p)
            else:
                residual_parts.append(p)
        residual = conjunction(residual_parts)
    out = Join(_push(node.left, left), _push(node.right, right), kind,
               node.left_keys, node.right_keys, residual)
    return _wrap(out, stay)
