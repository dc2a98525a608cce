"""Rule: reorder each region of inner/cross joins.

A region is a maximal tree of inner/cross Joins (and Filters between them);
its leaves are the other nodes.  The join graph's edges are the equality
conjuncts between two leaves; every other conjunct is a residual of the
first join that covers its leaves.  planner/joinorder.py picks the tree:
the cheapest bushy tree by C_out (DPccp, greedy past 12 leaves or 10,000
pairs), with the smaller input on Join.right (the hash build side);
components that no equality connects are joined last, smallest first.  A
Project on top restores the region's original column order.
"""

from __future__ import annotations

from planner import cardinality
from planner.expressions import (Call, ColumnRef, Expr, column_indexes, conjunction,
                                 remap_columns, split_conjuncts)
from planner.joinorder import Tree, best_tree, bits
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

    tree = best_tree(len(comps), *_graph(comps, pending))
    final, pending = _build(tree, comps, pending)
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


def _graph(comps: list[_Component], pending):
    """The join graph of a region's leaves: the edges (leaf pairs that an
    equality connects) and the estimated size of the join of any set of
    leaves (a mask): the leaves' rows times the selectivity of the
    equalities between each pair of leaves (planner.cardinality.
    join_selectivity, the same numbers its estimate of a Join uses) and
    RESIDUAL_SELECTIVITY for every other conjunct the set covers."""
    pairs: dict[tuple[int, int], tuple[list, list]] = {}
    others: list[int] = []
    for c, ls in pending:
        if len(ls) == 2:
            i, j = sorted(ls)
            pair = key_pair(_local(c, comps[i], comps[j]), len(comps[i].node.schema),
                            len(comps[j].node.schema))
            if pair is not None:
                keys = pairs.setdefault((i, j), ([], []))
                keys[0].append(pair[0])
                keys[1].append(pair[1])
                continue
        others.append(sum(1 << k for k in ls))
    factors = [(1 << i | 1 << j, cardinality.join_selectivity(
        comps[i].node, comps[j].node, lk, rk).value) for (i, j), (lk, rk) in pairs.items()]
    factors += [(mask, cardinality.RESIDUAL_SELECTIVITY) for mask in others]
    rows = [c.card for c in comps]
    # (rows below 1 are kept inside the region, as planner.cardinality does)

    def card(mask: int) -> float:
        if not mask & (mask - 1):               # a leaf: its own estimate
            return rows[mask.bit_length() - 1]
        out = 1.0
        for i in bits(mask):
            out *= rows[i]
        for m, sel in factors:
            if m & mask == m:
                out *= sel
        return max(out, 1.0)

    return list(pairs), card


def _build(tree: Tree, comps: list[_Component], pending):
    """The region's join tree as Join nodes, each taking the conjuncts it
    covers; tree.right is the build side."""
    if tree.left is None:
        return comps[tree.relation], pending
    left, pending = _build(tree.left, comps, pending)
    right, pending = _build(tree.right, comps, pending)
    return _join(left, right, pending)


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
