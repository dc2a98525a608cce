"""Rule: semi-join reduction of grouped join inputs ("magic sets").

A join whose one side is an aggregation grouped by the join key needs only
the groups whose key the other side has: all other groups are dropped by
the join (inner, semi), or never looked at (left, anti, mark, single: they
keep or mark rows of the other side only).  Whole groups drop out, so the
kept groups' aggregates are unchanged, and the aggregation's input can be
filtered first:

    Join left (ps_partkey = k)                 Join left (ps_partkey = k)
      L                                          L
      Aggregate [k := l_partkey] sum(...)   ->   Aggregate [k := l_partkey] sum(...)
        C                                          Join semi l_partkey = p_partkey
                                                     C
                                                     Project p_partkey
                                                       Scan part (filtered)

The filter's key set comes from a cheap, selective source of the other
side's key values: the key column is followed down through projections,
filters and joins (an inner or semi join's key also equals its partner key
on the other input) to a filtered scan; that scan (with its filters and
projections) is read a second time.  Every non-NULL key value of the other
side is among the source's values, so no group that could join is removed
(NULL keys never join).

The rule fires only when the source scan is selective (its filters keep at
most half of its rows, by the planner's estimates) and clearly smaller than
the aggregation input, so the engine builds the semi join's table on the
source.  It never fires through LIMIT, window functions, set operations or
ungrouped aggregates on the aggregated side, nor for right/full joins and
IN-with-NULL (mark_in) joins, where unmatched rows of that side matter.
"""

from __future__ import annotations

from planner.cardinality import estimate, table_rows
from planner.expressions import ColumnRef, Expr
from planner.logical import (Aggregate, Filter, Join, Limit, Node, Project, Scan, Sort,
                             Window)

# join kinds for which rows of the right input without a partner on the
# left are never output and never change a left row's result
RIGHT_REDUCIBLE = ("inner", "left", "semi", "anti", "mark", "single")
# ... and rows of the left input without a partner on the right
LEFT_REDUCIBLE = ("inner", "semi")
# the source's filters keep at most this share of its scan's rows
MAX_SOURCE_SELECTIVITY = 0.5
# the source has at most this share of the aggregation input's rows
MAX_SOURCE_SHARE = 0.25


def semijoin_reduction(node: Node) -> Node:
    """The rule: every join of the plan, bottom-up."""
    children = [semijoin_reduction(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if not isinstance(node, Join) or not node.left_keys:
        return node
    if node.kind in RIGHT_REDUCIBLE:
        right = _reduced(node.right, node.right_keys, node.left, node.left_keys)
        if right is not None:
            node = Join(node.left, right, node.kind, node.left_keys, node.right_keys,
                        node.residual)
    if node.kind in LEFT_REDUCIBLE:
        left = _reduced(node.left, node.left_keys, node.right, node.right_keys)
        if left is not None:
            node = Join(left, node.right, node.kind, node.left_keys, node.right_keys,
                        node.residual)
    return node


def _reduced(side: Node, side_keys: list[Expr], other: Node, other_keys: list[Expr]):
    """``side`` with its aggregation's input semi-joined to sources of the
    other input's key values; None when there is nothing to reduce."""
    if isinstance(side, (Project, Filter)):
        if isinstance(side, Project):
            keys = [side.exprs[k.index] if isinstance(k, ColumnRef) else None
                    for k in side_keys]
        else:
            keys = side_keys
        child = _reduced(side.child, keys, other, other_keys)
        return None if child is None else side.replace_children([child])
    if not isinstance(side, Aggregate) or not side.groups:
        return None
    child = side.child
    for key, other_key in zip(side_keys, other_keys):
        if not (isinstance(key, ColumnRef) and key.index < len(side.groups)):
            continue
        group = side.groups[key.index]
        source = _best_source(other, other_key, group, estimate(child))
        if source is not None:
            child = Join(child, source, "semi", [group], [ColumnRef(0, group.type)])
    if child is side.child:
        return None
    return side.replace_children([child])


def _best_source(node: Node, expr: Expr, group: Expr, input_rows: float):
    """A Project(key) over a copy of the most selective filtered scan whose
    key values include every value of ``expr`` over ``node``; None when no
    source is selective and small enough."""
    best = None
    for top, key in _sources(node, expr):
        if key.type != group.type:
            continue
        scan = _scan_of(top)
        if scan is None:
            continue
        rows = estimate(top)
        if rows > MAX_SOURCE_SELECTIVITY * max(table_rows(scan).value, 1) or \
                rows > MAX_SOURCE_SHARE * input_rows:
            continue
        if best is None or rows < best[0]:
            best = (rows, top, key)
    if best is None:
        return None
    _, top, key = best
    name = top.schema[key.index].name if isinstance(key, ColumnRef) else "key"
    return Project(_copy_chain(top), [key], [name])


def _sources(node: Node, expr: Expr):
    """(node', expr') pairs such that every non-NULL value of ``expr`` over
    node's rows is a value of expr' over the rows of node' (a subtree)."""
    yield node, expr
    if not isinstance(expr, ColumnRef):
        return
    i = expr.index
    if isinstance(node, (Filter, Sort, Limit)):
        yield from _sources(node.child, expr)
    elif isinstance(node, Project):
        yield from _sources(node.child, node.exprs[i])
    elif isinstance(node, Window) and i < len(node.child.schema):
        yield from _sources(node.child, expr)
    elif isinstance(node, Aggregate) and i < len(node.groups):
        yield from _sources(node.child, node.groups[i])
    elif isinstance(node, Join):
        yield from _join_sources(node, i)


def _join_sources(node: Join, i: int):
    nleft = len(node.left.schema)
    if i < nleft:
        side, keys, partner, partner_keys, col = (node.left, node.left_keys, node.right,
                                                  node.right_keys, i)
    elif node.kind in ("inner", "left", "right", "full", "single", "cross"):
        side, keys, partner, partner_keys, col = (node.right, node.right_keys, node.left,
                                                  node.left_keys, i - nleft)
    else:                                       # a mark column
        return
    yield from _sources(side, ColumnRef(col, side.schema[col].type))
    # the non-NULL values of this side's columns come from rows that have a
    # partner with equal keys on the other side
    if node.kind == "inner" or (node.kind in ("semi", "right") and side is node.left) or \
            (node.kind in ("left", "single") and side is node.right):
        for k, pk in zip(keys, partner_keys):
            if isinstance(k, ColumnRef) and k.index == col and pk.type == k.type:
                yield from _sources(partner, pk)


def _scan_of(node: Node) -> Scan | None:
    """The scan under a chain of projections and filters, else None."""
    while isinstance(node, (Project, Filter)):
        node = node.child
    return node if isinstance(node, Scan) else None


def _copy_chain(node: Node) -> Node:
    """A copy of a chain of projections and filters over a scan (the plan
    stays a tree)."""
    if isinstance(node, Scan):
        return Scan(node.files, node.table_columns, list(node.columns), list(node.filters),
                    node.row_count, node.alias, node.statistics, node.partitions)
    return node.replace_children([_copy_chain(node.child)])
