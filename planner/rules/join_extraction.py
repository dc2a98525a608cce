"""Rule: turn equalities between the two sides of a join's residual into
hash-join keys; a cross join with keys becomes an inner join."""

from __future__ import annotations

from planner.expressions import (Call, Expr, column_indexes, conjunction, remap_columns,
                                 split_conjuncts)
from planner.logical import Join, Node


def join_extraction(node: Node) -> Node:
    children = [join_extraction(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if not isinstance(node, Join) or node.residual is None:
        return node
    nleft = len(node.left.schema)
    lkeys, rkeys = list(node.left_keys), list(node.right_keys)
    rest: list[Expr] = []
    for p in split_conjuncts(node.residual):
        pair = key_pair(p, nleft, len(node.right.schema))
        if pair is None:
            rest.append(p)
        else:
            lkeys.append(pair[0])
            rkeys.append(pair[1])
    kind = node.kind
    if kind == "cross" and (lkeys or rest):
        kind = "inner"
    return Join(node.left, node.right, kind, lkeys, rkeys, conjunction(rest))


def key_pair(pred: Expr, nleft: int, nright: int):
    """(left key, right key over the right schema) when pred is an equality
    with one side over the left input and the other over the right."""
    if not (isinstance(pred, Call) and pred.func == "eq"):
        return None
    a, b = pred.args
    ca, cb = column_indexes(a), column_indexes(b)
    if not ca or not cb:
        return None
    shift = {i: i - nleft for i in range(nleft, nleft + nright)}
    if max(ca) < nleft and min(cb) >= nleft:
        return a, remap_columns(b, shift)
    if max(cb) < nleft and min(ca) >= nleft:
        return b, remap_columns(a, shift)
    return None
