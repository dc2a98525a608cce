"""Rule: reorder each region of inner/cross joins.

A region is a maximal tree of inner/cross Joins (and Filters between them);
its leaves are the other nodes.  The join graph's edges are the equality
conjuncts between two leaves; every other conjunct is a residual of the
first join that covers its leaves.  planner/joinorder.py picks the tree:
the cheapest bushy tree by C_out (DPccp, greedy past 12 leaves or 10,000
pairs), with the smaller input on Join.right (the hash build side);
components that no equality connects are joined last, smallest first.
Sets of leaves that an earlier query ran (planner/feedback.py) are sized
by what it observed, and the sets around them scaled by its correction.  A
Project on top restores the region's original column order.
"""

from __future__ import annotations

from planner import cardinality
from planner.expressions import (Call, ColumnRef, Expr, column_indexes, conjunction,
                                 remap_columns, split_conjuncts)
from planner.feedback import RegionFeedback
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

    classes, pending = _equivalence_classes(comps, owner, pending)
    edges, card = _graph(comps, pending, classes)
    seen = RegionFeedback([c.node for c in comps], [c.colmap for c in comps], pending,
                          [cl.members for cl in classes])
    tree = best_tree(len(comps), edges, seen.card(card))
    final, pending = _build(tree, comps, pending, classes)
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


class _Class:
    """Columns that equalities make equal, one per leaf (leaf -> region
    column), with the distinct count a join on each divides by."""

    def __init__(self, members: dict[int, int], ndv: dict[int, float]):
        self.members = members
        self.ndv = ndv
        self.mask = sum(1 << leaf for leaf in members)

    def selectivity(self, mask: int) -> float:
        """What the class's equalities keep of the product of the leaves of
        mask: every member but the one with the fewest distinct values
        divides by its distinct count (for two members: 1/max(ndv))."""
        ds = sorted(self.ndv[leaf] for leaf in bits(mask & self.mask))
        out = 1.0
        for d in ds[1:]:
            out /= max(d, 1.0)
        return out

    def pair(self, left: frozenset, right: frozenset, affinity) -> tuple[int, int] | None:
        """The members (leaves) of left and right to join on: the pair that
        shares most other equalities (a composite key stays together, and
        planner.cardinality sees it whole), else the fewest distinct values
        on each side (then the join's estimate divides by what the class's
        selectivity does)."""
        ls = [leaf for leaf in self.members if leaf in left]
        rs = [leaf for leaf in self.members if leaf in right]
        if not ls or not rs:
            return None
        return min(((i, j) for i in ls for j in rs),
                   key=lambda p: (-affinity(*p), self.ndv[p[0]] + self.ndv[p[1]], p))


def _ref(comp: _Component, g: int) -> ColumnRef:
    i = comp.colmap[g]
    return ColumnRef(i, comp.node.schema[i].type)


def _equivalence_classes(comps: list[_Component], owner: dict[int, int], pending):
    """Equalities of plain columns of different leaves, closed under
    transitivity: c_nationkey = s_nationkey and s_nationkey = n_nationkey
    also join customer with nation (TPC-H Q5).  A class of three or more
    leaves (each with one of its columns, all of one type) replaces its
    equalities: every join of the region whose inputs both hold members
    takes one of them as a key, which makes all members equal.

    Only where statistics give every member's distinct count: the class's
    selectivity (see _Class) is only as good as those, and the default
    guesses (sqrt(rows) for a foreign key, the rows of its table for the
    key it references) make a join of two foreign keys look 1/sqrt(rows)
    selective where the class assumes 1/rows, so plans without statistics
    keep the equalities as written.  Other equalities stay as they are."""
    parent: dict[int, int] = {}

    def find(g):
        while parent.setdefault(g, g) != g:
            g = parent[g]
        return g

    simple = []
    for c, ls in pending:
        if len(ls) == 2 and isinstance(c, Call) and c.func == "eq" and \
                all(isinstance(a, ColumnRef) for a in c.args) and \
                c.args[0].type == c.args[1].type:
            a, b = c.args[0].index, c.args[1].index
            parent[find(a)] = find(b)
            simple.append(c)
    groups: dict[int, list[int]] = {}
    for g in parent:
        groups.setdefault(find(g), []).append(g)
    classes, taken = [], set()
    for cols in groups.values():
        leaves = [owner[g] for g in cols]
        types = {str(comps[owner[g]].node.schema[comps[owner[g]].colmap[g]].type) for g in cols}
        if len(cols) < 3 or len(set(leaves)) != len(leaves) or len(types) != 1:
            continue
        members = {owner[g]: g for g in sorted(cols)}
        ndv = {}
        for leaf, g in members.items():
            est = cardinality.key_ndv(comps[leaf].node, _ref(comps[leaf], g))
            ndv[leaf] = est.value
            if est.source == "default":
                break
        else:
            classes.append(_Class(members, ndv))
            taken.update(cols)
    if not classes:
        return [], pending
    simple_ids = {id(c) for c in simple}
    rest = [(c, ls) for c, ls in pending
            if not (id(c) in simple_ids and c.args[0].index in taken)]
    return classes, rest


def _graph(comps: list[_Component], pending, classes: list[_Class]):
    """The join graph of a region's leaves: the edges (leaf pairs that an
    equality connects, directly or through a class) and the estimated size
    of the join of any set of leaves (a mask): the leaves' rows times the
    selectivity of the equalities between each pair of leaves (planner.
    cardinality.join_selectivity, the same numbers its estimate of a Join
    uses), each class's selectivity, and RESIDUAL_SELECTIVITY for every
    other conjunct the set covers."""
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
    edges = set(pairs)
    shared: dict[tuple[int, int], list[_Class]] = {}
    for cl in classes:
        leaves = sorted(cl.members)
        for x in range(len(leaves)):
            for y in range(x + 1, len(leaves)):
                edges.add((leaves[x], leaves[y]))
                shared.setdefault((leaves[x], leaves[y]), []).append(cl)
    factors = []
    for (i, j) in sorted(set(pairs) | {p for p, cls in shared.items()
                                       if len(cls) + len(pairs.get(p, ([],))[0]) > 1}):
        lk, rk = (list(x) for x in pairs.get((i, j), ([], [])))
        alone = 1.0
        for cl in shared.get((i, j), []):
            # the pair's equalities are judged together (a composite key);
            # the class's own share (1/max ndv of the two) is divided out
            lk.append(_ref(comps[i], cl.members[i]))
            rk.append(_ref(comps[j], cl.members[j]))
            alone /= max(cl.ndv[i], cl.ndv[j], 1.0)
        sel = cardinality.join_selectivity(comps[i].node, comps[j].node, lk, rk).value
        factors.append((1 << i | 1 << j, sel / alone))
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
        for cl in classes:
            if (cl.mask & mask) & ((cl.mask & mask) - 1):
                out *= cl.selectivity(mask)
        return max(out, 1.0)

    return sorted(edges), card


def _build(tree: Tree, comps: list[_Component], pending, classes=()):
    """The region's join tree as Join nodes, each taking the conjuncts it
    covers (and one equality of every class both inputs hold members of);
    tree.right is the build side."""
    if tree.left is None:
        return comps[tree.relation], pending
    left, pending = _build(tree.left, comps, pending, classes)
    right, pending = _build(tree.right, comps, pending, classes)
    return _join(left, right, pending, classes)


def _local(c: Expr, left: _Component, right: _Component) -> Expr:
    nleft = len(left.node.schema)
    m = dict(left.colmap)
    m.update({g: p + nleft for g, p in right.colmap.items()})
    return remap_columns(c, m)


def _join(left: _Component, right: _Component, pending, classes=()):
    nleft = len(left.node.schema)
    covered = left.leaves | right.leaves
    lkeys, rkeys, residual, remaining = [], [], [], []

    def affinity(i: int, j: int) -> int:
        pair = {i, j}
        return sum(1 for c, ls in pending if ls == pair) + \
            sum(1 for cl in classes if i in cl.members and j in cl.members)

    implied = []
    for cl in classes:
        chosen = cl.pair(left.leaves, right.leaves, affinity)
        if chosen is not None:
            gl, gr = cl.members[chosen[0]], cl.members[chosen[1]]
            eq = Call("eq", [ColumnRef(gl, left.node.schema[left.colmap[gl]].type),
                             ColumnRef(gr, right.node.schema[right.colmap[gr]].type)], BOOLEAN)
            implied.append((eq, frozenset(chosen)))
    pending = list(pending) + implied
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
