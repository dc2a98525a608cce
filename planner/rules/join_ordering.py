"""Rule: reorder each region of inner/cross joins.

A region is a maximal tree of inner/cross Joins (and Filters between them);
its leaves are the other nodes.  The join graph's edges are the equality
conjuncts between leaves.  Greedy operator ordering (GOO): repeatedly join
the two connected components whose join has the smallest estimated result,
with the smaller input on Join.right (the hash build side); components that
no equality connects are joined last, smallest first.  A Project on top
restores the region's original column order.
"""

from __future__ import annotations

from planner import cardinality
from planner.expressions import (Call, ColumnRef, Expr, column_indexes, conjunction,
                                 remap_columns, split_conjuncts)
from planner.logical import Filter, Join, Node, Project
from planner.rules.join_extraction import key_pair
from planner.types import BOOLEAN


class _Component:
    def __init__(self, node: Node, leaves: frozenset, colmap: dict[int, int]):
        self.node = node
        self.leaves = leaves
        self.colmap = colmap          # region column index -> position in node.schema
        self.card = cardinality.estimate(node)


def join_ordering(node: Node) -> Node:
    if _is_region_join(node) or (isinstance(node, Filter) and _is_region_join(node.child)):
        return _order_region(node)
    children = [join_ordering(c) for c in node.children]
    return node.replace_children(children) if children else node


def _is_region_join(node: Node) -> bool:
    return isinstance(node, Join) and node.kind in ("inner", "cross")


def _flatten(node: Node, offset: int, leaves: list, conjuncts: list) -> None:
    if _is_region_join(node):
        nleft = len(node.left.schema)
        _flatten(node.left, offset, leaves, conjuncts)
        _flatten(node.right, offset + nleft, leaves, conjuncts)
        shift_l = _shift_map(node.left.schema, offset)
        shift_r = _shift_map(node.right.schema, offset + nleft)
        for lk, rk in zip(node.left_keys, node.right_keys):
            a, b = remap_columns(lk, shift_l), remap_columns(rk, shift_r)
            conjuncts.append(Call("eq", [a, b], BOOLEAN))
        if node.residual is not None:
            both = _shift_map(node.schema, offset)
            conjuncts.extend(remap_columns(p, both) for p in split_conjuncts(node.residual))
    elif isinstance(node, Filter) and _is_region_join(node.child):
        _flatten(node.child, offset, leaves, conjuncts)
        m = _shift_map(node.schema, offset)
        conjuncts.extend(remap_columns(p, m) for p in split_conjuncts(node.predicate))
    else:
        leaves.append((join_ordering(node), offset))


def _shift_map(schema, offset: int) -> dict[int, int]:
    return {i: i + offset for i in range(len(schema))}


def _order_region(root: Node) -> Node:
    leaves: list = []
    conjuncts: list[Expr] = []
    _flatten(root, 0, leaves, conjuncts)
    width = len(root.schema)
    owner: dict[int, int] = {}
    comps: list[_Component] = []
    for i, (leaf, offset) in enumerate(leaves):
        n = len(leaf.schema)
        for j in range(n):
            owner[offset + j] = i
        comps.append(_Component(leaf, frozenset([i]), {offset + j: j for j in range(n)}))
    pending = [(c, frozenset(owner[k] for k in column_indexes(c))) for c in conjuncts]
    top: list[Expr] = [c for c, ls in pending if not ls]
    pending = [(c, ls) for c, ls in pending if ls]

    while len(comps) > 1:
        best = None
        for i in range(len(comps)):
            for j in range(i + 1, len(comps)):
                a, b = comps[i], comps[j]
                sel = _connecting_selectivity(a, b, pending)
                if sel is None:
                    continue
                est = a.card * b.card * sel
                if best is None or est < best[0]:
                    best = (est, i, j)
        if best is None:      # no edge: cross product of the two smallest
            order = sorted(range(len(comps)), key=lambda k: comps[k].card)
            best = (None, order[0], order[1])
        _, i, j = best
        a, b = comps[i], comps[j]
        left, right = (a, b) if a.card >= b.card else (b, a)
        joined, pending = _join(left, right, pending)
        comps = [c for k, c in enumerate(comps) if k not in (i, j)] + [joined]

    final = comps[0]
    node = final.node
    rest = [c for c, _ in pending] + top
    if rest:
        node = Filter(node, conjunction([remap_columns(c, final.colmap) for c in rest]))
    schema = root.schema
    identity = all(final.colmap[g] == g for g in range(width))
    if identity:
        return node
    out = node.schema
    exprs = [ColumnRef(final.colmap[g], out[final.colmap[g]].type, schema[g].name)
             for g in range(width)]
    return Project(node, exprs, [f.name for f in schema])


def _connecting_selectivity(a: _Component, b: _Component, pending) -> float | None:
    """Selectivity of the equalities between a and b (as
    planner.cardinality estimates their join), None when none exist."""
    lkeys, rkeys = [], []
    for c, ls in pending:
        if not ls <= (a.leaves | b.leaves) or ls <= a.leaves or ls <= b.leaves:
            continue
        local = _local(c, a, b)
        pair = key_pair(local, len(a.node.schema), len(b.node.schema))
        if pair is not None:
            lkeys.append(pair[0])
            rkeys.append(pair[1])
    if not lkeys:
        return None
    return cardinality.join_selectivity(a.node, b.node, lkeys, rkeys).value


def _local(c: Expr, left: _Component, right: _Component) -> Expr:
    nleft = len(left.node.schema)
    m = dict(left.colmap)
    m.update({g: p + nleft for g, p in right.colmap.items()})
    return remap_columns(c, m)


def _join(left: _Component, right: _Component, pending):
    nleft = len(left.node.schema)
    covered = left.leaves | right.leaves
    lkeys, rkeys, residual, remaining = [], [], [], []
    for c, ls in pending:
        if not ls <= covered:
            remaining.append((c, ls))
            continue
        local = _local(c, left, right)
        pair = key_pair(local, nleft, len(right.node.schema))
        if pair is not None:
            lkeys.append(pair[0])
            rkeys.append(pair[1])
        else:
            residual.append(local)
    kind = "inner" if (lkeys or residual) else "cross"
    node = Join(left.node, right.node, kind, lkeys, rkeys, conjunction(residual))
    colmap = dict(left.colmap)
    colmap.update({g: p + nleft for g, p in right.colmap.items()})
    comp = _Component(node, covered, colmap)
    return comp, remaining
