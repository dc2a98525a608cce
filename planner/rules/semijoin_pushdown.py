"""Rule: push semi and anti joins down to the input that holds their keys.

A semi (anti) join keeps the rows of its left input that have (have no)
partner on its right.  When its keys and residual read only columns that
one input of a join below it provides, the decision is the same for every
row that input contributes, so the semi join can filter that input before
the join instead of the join's output after it:

    Join semi o_orderkey = k                   Join inner l_orderkey = o_orderkey
      Join inner l_orderkey = o_orderkey   ->    Scan lineitem
        Scan lineitem                            Join semi o_orderkey = k
        Scan orders                                Scan orders
      S                                            S

(TPC-H Q18: the join with lineitem then builds on 57 orders, not 1.5M.)
It moves through projections of plain columns, filters, inner and cross
joins, the preserved side of left and right joins, and the left side of
other semi and anti joins; never through aggregations, LIMIT, sorts,
windows or set operations, nor into the NULL-padded side of an outer join.

It moves only a join whose subquery side S is estimated no larger than its
left input, and only as deep as S stays no larger than the new left input:
the engine keeps building its table on S.  When S is the bigger side (TPC-H
Q4, Q21, Q22) the engine builds the table on the left rows instead, and
moving the join to a larger input would make that table grow.
"""

from __future__ import annotations

from planner.cardinality import estimate
from planner.expressions import ColumnRef, column_indexes, remap_columns
from planner.logical import Filter, Join, Node, Project

PUSHED_KINDS = ("semi", "anti")


def semijoin_pushdown(node: Node) -> Node:
    """The rule: every semi and anti join of the plan, bottom-up."""
    children = [semijoin_pushdown(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if isinstance(node, Join) and node.kind in PUSHED_KINDS and node.left_keys:
        right_rows = estimate(node.right)
        if right_rows > estimate(node.left):
            return node             # the engine builds on the left rows: keep them few
        pushed = _below(node.left, node, node.left_keys, node.residual, right_rows)
        if pushed is not None:
            return pushed
    return node


def _below(target: Node, join: Join, keys, residual, right_rows: float):
    """``target`` with ``join`` (keys and residual rewritten over target's
    schema) applied below it, as deep as allowed; None when it cannot go
    below ``target``."""
    width = len(target.schema)
    used = set()
    for k in keys:
        used |= column_indexes(k)
    if residual is not None:
        used |= {i for i in column_indexes(residual) if i < width}
    step = _step(target, used) if used else None
    if step is None:
        return None
    pos, mapping = step
    child = target.children[pos]
    shift = len(child.schema) - width
    keys = [remap_columns(k, mapping) for k in keys]
    if residual is not None:
        both = dict(mapping)
        both.update({width + j: width + j + shift for j in range(len(join.right.schema))})
        residual = remap_columns(residual, both)
    deeper = _below(child, join, keys, residual, right_rows)
    if deeper is None:
        if right_rows > estimate(child):
            return None
        deeper = Join(child, join.right, join.kind, keys, join.right_keys, residual)
    children = list(target.children)
    children[pos] = deeper
    return target.replace_children(children)


def _step(node: Node, used: set[int]):
    """(child position, column map node -> child) when every used column of
    node's output comes unchanged from one child whose rows a semi join may
    filter first; else None."""
    if isinstance(node, Filter):
        return 0, {i: i for i in used}
    if isinstance(node, Project):
        if all(isinstance(node.exprs[i], ColumnRef) for i in used):
            return 0, {i: node.exprs[i].index for i in used}
        return None
    if not isinstance(node, Join):
        return None
    nleft = len(node.left.schema)
    if max(used) < nleft and node.kind in ("inner", "cross", "left", "semi", "anti"):
        return 0, {i: i for i in used}
    if min(used) >= nleft and node.kind in ("inner", "cross", "right"):
        return 1, {i: i - nleft for i in used}
    return None
