"""Join enumeration: the cheapest bushy join tree over a join graph.

The input is a graph and a cardinality function, nothing of the plan:
relations are 0..n-1, a set of relations is an int bit mask, ``edges`` are
the pairs of relations that an equality connects, and ``card(mask)`` is the
estimated size of the join of a set (planner/rules/join_ordering.py builds
both from a join region, planner/cardinality.py supplies the sizes).

Cost is C_out: the sum of the sizes of all joins of the tree (leaves cost
nothing); between trees of equal C_out (key/foreign-key joins often keep
the foreign-key side's size, so ties are common) the one whose hash tables
hold fewer rows in all wins.  Each connected component of the graph gets its cheapest bushy
tree without cross products from DPccp (Moerkotte and Neumann, "Analysis of
two existing and one new dynamic programming algorithm for the generation
of optimal bushy join trees without cross products", VLDB 2006), which
enumerates exactly the pairs of disjoint connected sets that are connected
to each other.  A component of more than ``max_relations`` relations, or
with more than ``max_pairs`` such pairs, is ordered greedily instead (GOO:
repeatedly join the connected pair with the smallest result).  The greedy
tree is also where every component starts: the DP's tree replaces it only
when it is strictly cheaper, so that among trees of equal cost the plan
stays the one greedy ordering gave before the DP existed (with default
estimates, ties are common).  Components are joined last by cross
products, the two smallest first, as before.

Every join puts its smaller input (by card) on the right, the hash join's
build side; C_out does not depend on that choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

MAX_RELATIONS = 12
MAX_PAIRS = 10_000


@dataclass(frozen=True)
class Tree:
    """A join tree: a leaf (one relation, ``left`` and ``right`` None) or a
    join of ``left`` and ``right`` (the build side, never the larger card)."""
    mask: int
    card: float
    cost: float
    left: "Tree | None" = None
    right: "Tree | None" = None
    build: float = 0.0          # the sum of the build sides' cards: breaks ties of cost

    def cheaper(self, other: "Tree") -> bool:
        """Lower C_out; at equal C_out (within rounding), smaller builds."""
        tol = 1e-9 * max(self.cost, other.cost, 1.0)
        if abs(self.cost - other.cost) > tol:
            return self.cost < other.cost
        return self.build < other.build - 1e-9 * max(self.build, other.build, 1.0)

    @property
    def relation(self) -> int:
        """The relation of a leaf."""
        return self.mask.bit_length() - 1

    def __str__(self) -> str:
        if self.left is None:
            return str(self.relation)
        return f"({self.left} {self.right})"


def bits(mask: int) -> list[int]:
    """The members of a set, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def neighbor_masks(n: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    nbr = [0] * n
    for a, b in edges:
        if a != b:
            nbr[a] |= 1 << b
            nbr[b] |= 1 << a
    return nbr


def components(n: int, nbr: list[int]) -> list[int]:
    """The connected components, each a mask, by their lowest relation."""
    seen, out = 0, []
    for i in range(n):
        if seen >> i & 1:
            continue
        comp, frontier = 1 << i, 1 << i
        while frontier:
            grow = 0
            for j in bits(frontier):
                grow |= nbr[j]
            frontier = grow & ~comp
            comp |= frontier
        seen |= comp
        out.append(comp)
    return out


class JoinGraph:
    def __init__(self, nbr: list[int], card: Callable[[int], float]):
        self.nbr = nbr
        self._card = card
        self._cards: dict[int, float] = {}
        self._nbrs: dict[int, int] = {}

    def card(self, mask: int) -> float:
        got = self._cards.get(mask)
        if got is None:
            got = self._cards[mask] = float(self._card(mask))
        return got

    def neighborhood(self, mask: int) -> int:
        got = self._nbrs.get(mask)
        if got is None:
            got = 0
            for i in bits(mask):
                got |= self.nbr[i]
            got = self._nbrs[mask] = got & ~mask
        return got

    def leaf(self, i: int) -> Tree:
        return Tree(1 << i, self.card(1 << i), 0.0)

    def join(self, a: Tree, b: Tree) -> Tree:
        left, right = (a, b) if a.card >= b.card else (b, a)
        mask = a.mask | b.mask
        card = self.card(mask)
        return Tree(mask, card, card + a.cost + b.cost, left, right,
                    right.card + a.build + b.build)


def _subsets(mask: int):
    """Non-empty subsets of mask, in increasing order."""
    sub = 0
    while True:
        sub = (sub - mask) & mask
        if not sub:
            return
        yield sub


class _TooManyPairs(Exception):
    pass


def csg_cmp_pairs(g: JoinGraph, within: int, limit: float = float("inf")) -> list[tuple[int, int]]:
    """Every pair (S1, S2) of disjoint connected subsets of ``within`` with an
    edge between them, each unordered pair once (DPccp's EnumerateCsg and
    EnumerateCmp); raises _TooManyPairs past ``limit``."""
    members = bits(within)
    pairs: list[tuple[int, int]] = []

    def below(i: int) -> int:               # B_i: the members numbered <= i
        return within & ((1 << (i + 1)) - 1)

    def csg_rec(s: int, x: int, out):
        n = g.neighborhood(s) & ~x & within
        if not n:
            return
        for sub in _subsets(n):
            out(s | sub)
        for sub in _subsets(n):
            csg_rec(s | sub, x | n, out)

    def cmp_of(s1: int):
        low = (s1 & -s1).bit_length() - 1
        x = below(low) | s1
        n = g.neighborhood(s1) & ~x & within
        for i in reversed(bits(n)):
            emit_pair(s1, 1 << i)
            csg_rec(1 << i, x | (below(i) & n), lambda s2: emit_pair(s1, s2))

    def emit_pair(s1: int, s2: int):
        pairs.append((s1, s2))
        if len(pairs) > limit:
            raise _TooManyPairs

    def emit_csg(s1: int):
        cmp_of(s1)

    for i in reversed(members):
        emit_csg(1 << i)
        csg_rec(1 << i, below(i), emit_csg)
    return pairs


def dpccp(g: JoinGraph, within: int, max_pairs: float = MAX_PAIRS) -> Tree | None:
    """The cheapest tree (C_out) over the connected set ``within``; None when
    it has more than max_pairs csg-cmp pairs."""
    try:
        pairs = csg_cmp_pairs(g, within, max_pairs)
    except _TooManyPairs:
        return None
    best: dict[int, Tree] = {1 << i: g.leaf(i) for i in bits(within)}
    # every split of a set comes before the set: process by the joined size
    pairs.sort(key=lambda p: (p[0] | p[1]).bit_count())
    for s1, s2 in pairs:
        tree = g.join(best[s1], best[s2])
        old = best.get(tree.mask)
        if old is None or tree.cheaper(old):
            best[tree.mask] = tree
    return best[within]


def goo(g: JoinGraph, within: int) -> Tree:
    """Greedy operator ordering: join the connected pair with the smallest
    result until none is left, then cross the two smallest."""
    trees = [g.leaf(i) for i in bits(within)]
    while len(trees) > 1:
        best = None
        for i in range(len(trees)):
            for j in range(i + 1, len(trees)):
                a, b = trees[i], trees[j]
                if not g.neighborhood(a.mask) & b.mask:
                    continue
                card = g.card(a.mask | b.mask)
                if best is None or card < best[0]:
                    best = (card, i, j)
        if best is None:
            order = sorted(range(len(trees)), key=lambda k: trees[k].card)
            best = (None, order[0], order[1])
        _, i, j = best
        joined = g.join(trees[i], trees[j])
        trees = [t for k, t in enumerate(trees) if k not in (i, j)] + [joined]
    return trees[0]


def best_tree(n: int, edges: Iterable[tuple[int, int]], card: Callable[[int], float], *,
              max_relations: int = MAX_RELATIONS, max_pairs: float = MAX_PAIRS) -> Tree:
    """The join tree for relations 0..n-1 (see the module docstring)."""
    nbr = neighbor_masks(n, edges)
    g = JoinGraph(nbr, card)
    trees = []
    for comp in components(n, nbr):
        tree = goo(g, comp)
        if comp.bit_count() <= max_relations:
            best = dpccp(g, comp, max_pairs)
            if best is not None and best.cheaper(tree):
                tree = best
        trees.append(tree)
    while len(trees) > 1:                    # cross products: the two smallest first
        trees.sort(key=lambda t: t.card)
        trees = [g.join(trees[0], trees[1])] + trees[2:]
    return trees[0]
