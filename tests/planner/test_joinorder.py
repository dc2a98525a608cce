"""The join enumerator (planner/joinorder.py) on its own: graphs and
cardinality functions in, trees out, checked against brute force."""

from __future__ import annotations

import functools
import math
import random

import pytest

from planner.joinorder import (JoinGraph, best_tree, bits, components, csg_cmp_pairs, goo,
                               neighbor_masks)


def _chain(n):
    return [(i, i + 1) for i in range(n - 1)]


def _star(n):
    return [(0, i) for i in range(1, n)]


def _cycle(n):
    return _chain(n) + [(n - 1, 0)]


def _clique(n):
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


# the number of csg-cmp pairs of each graph shape (Moerkotte and Neumann 2006, Sect. 2.3)
SHAPES = {
    "chain": (_chain, lambda n: (n ** 3 - n) // 6),
    "star": (_star, lambda n: (n - 1) * 2 ** (n - 2)),
    "cycle": (_cycle, lambda n: (n ** 3 - 2 * n * n + n) // 2),
    "clique": (_clique, lambda n: (3 ** n - 2 ** (n + 1) + 1) // 2),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_dpccp_enumerates_each_csg_cmp_pair_once(shape):
    make, count = SHAPES[shape]
    for n in range(3 if shape == "cycle" else 2, 10):
        edges = make(n)
        g = JoinGraph(neighbor_masks(n, edges), lambda m: 1.0)
        pairs = csg_cmp_pairs(g, (1 << n) - 1)
        assert len(pairs) == count(n), (shape, n)
        assert len({frozenset(p) for p in pairs}) == len(pairs)
        for s1, s2 in pairs:
            assert not s1 & s2
            assert _connected(g, s1) and _connected(g, s2)
            assert g.neighborhood(s1) & s2


def _connected(g, mask) -> bool:
    start = mask & -mask
    seen, frontier = start, start
    while frontier:
        grow = 0
        for i in bits(frontier):
            grow |= g.nbr[i]
        frontier = grow & mask & ~seen
        seen |= frontier
    return seen == mask


# ---- random graphs and a set cardinality function -------------------------------------

def _random_case(rnd: random.Random, n: int, extra_edges: int):
    """A connected random graph (a random tree plus extra edges) and the
    usual cardinality function: leaf rows times the selectivity of every edge
    inside the set."""
    edges = set()
    for i in range(1, n):
        edges.add((rnd.randrange(i), i))
    for _ in range(extra_edges):
        a, b = rnd.sample(range(n), 2)
        edges.add((min(a, b), max(a, b)))
    rows = [10 ** rnd.uniform(0, 6) for _ in range(n)]
    sel = {e: 10 ** -rnd.uniform(0, 5) for e in edges}

    def card(mask: int) -> float:
        out = 1.0
        for i in bits(mask):
            out *= rows[i]
        for (a, b), s in sel.items():
            if mask >> a & 1 and mask >> b & 1:
                out *= s
        return max(out, 1.0)

    return sorted(edges), card


def _all_trees(g, mask):
    """Every bushy tree without cross products over the set (as C_out costs),
    enumerated one by one."""
    if not mask & (mask - 1):
        yield 0.0
        return
    low = mask & -mask
    sub = (mask - 1) & mask
    while sub:
        if sub & low:               # each unordered split once: the side holding the lowest relation
            other = mask & ~sub
            if _connected(g, sub) and _connected(g, other) and g.neighborhood(sub) & other:
                for a in _all_trees(g, sub):
                    for b in _all_trees(g, other):
                        yield g.card(mask) + a + b
        sub = (sub - 1) & mask


def _exhaustive(g, mask):
    """The cheapest C_out over all splits of every subset (memoized
    exhaustive search, for sizes where listing every tree is too slow)."""
    @functools.lru_cache(maxsize=None)
    def best(m):
        if not m & (m - 1):
            return 0.0
        out = math.inf
        low = m & -m
        sub = (m - 1) & m
        while sub:
            other = m & ~sub
            if sub & low and _connected(g, sub) and _connected(g, other) and \
                    g.neighborhood(sub) & other:
                out = min(out, g.card(m) + best(sub) + best(other))
            sub = (sub - 1) & m
        return out
    return best(mask)


def _check_tree(tree, nbr, card):
    """Every join of a connected graph's tree joins connected sides, puts the
    smaller side on the right, and the costs add up."""
    if tree.left is None:
        assert tree.cost == 0.0
        return
    left, right = tree.left, tree.right
    assert left.mask | right.mask == tree.mask and not left.mask & right.mask
    assert any(nbr[i] & right.mask for i in bits(left.mask)), "a cross product"
    assert right.card <= left.card
    assert tree.card == card(tree.mask)
    assert math.isclose(tree.cost, tree.card + left.cost + right.cost)
    _check_tree(left, nbr, card)
    _check_tree(right, nbr, card)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7])
def test_dpccp_finds_the_cheapest_bushy_tree(n):
    rnd = random.Random(1000 + n)
    for trial in range(40 if n < 7 else 15):
        edges, card = _random_case(rnd, n, rnd.randrange(0, n * (n - 1) // 2 - n + 2))
        nbr = neighbor_masks(n, edges)
        tree = best_tree(n, edges, card)
        g = JoinGraph(nbr, card)
        full = (1 << n) - 1
        want = min(_all_trees(g, full)) if n <= 6 else _exhaustive(g, full)
        assert math.isclose(tree.cost, want, rel_tol=1e-9), (edges, tree.cost, want)
        _check_tree(tree, nbr, card)
        # and the greedy tree is never cheaper
        assert goo(g, full).cost >= tree.cost * (1 - 1e-9)


def test_listing_and_exhaustive_search_agree():
    rnd = random.Random(7)
    for n in (4, 5, 6):
        edges, card = _random_case(rnd, n, 3)
        g = JoinGraph(neighbor_masks(n, edges), card)
        full = (1 << n) - 1
        assert math.isclose(min(_all_trees(g, full)), _exhaustive(g, full))


def test_bushy_beats_left_deep():
    # two selective pairs at the ends of a chain: (0 1) and (2 3) first, then
    # their join; any left-deep order carries a big intermediate result
    rows = [1e6, 10, 10, 1e6]
    edges = [(0, 1), (1, 2), (2, 3)]
    sel = {(0, 1): 1e-6, (1, 2): 1.0, (2, 3): 1e-6}

    def card(mask):
        out = math.prod(rows[i] for i in bits(mask))
        for (a, b), s in sel.items():
            if mask >> a & 1 and mask >> b & 1:
                out *= s
        return max(out, 1.0)

    tree = best_tree(4, edges, card)
    assert {tree.left.mask, tree.right.mask} == {0b0011, 0b1100}
    assert tree.cost == 10 + 10 + 100


def test_disconnected_components_are_crossed_last_smallest_first():
    rows = {0: 1000, 1: 10, 2: 50, 3: 7, 4: 3}
    edges = [(0, 1), (2, 3)]                 # components {0,1}, {2,3}, {4}

    def card(mask):
        out = math.prod(rows[i] for i in bits(mask))
        if mask & 0b11 == 0b11:
            out /= 1000
        if mask & 0b1100 == 0b1100:
            out /= 50
        return max(out, 1.0)

    tree = best_tree(5, edges, card)
    assert [c for c in components(5, neighbor_masks(5, edges))] == [0b11, 0b1100, 0b10000]
    # {4} (3 rows) x {2,3} (7 rows) first, then that (21) x {0,1} (10)
    assert tree.mask == 0b11111
    assert {tree.left.mask, tree.right.mask} == {0b11100, 0b00011}
    inner = tree.left if tree.left.mask == 0b11100 else tree.right
    assert {inner.left.mask, inner.right.mask} == {0b01100, 0b10000}


def test_greedy_past_the_limits():
    rnd = random.Random(3)
    edges, card = _random_case(rnd, 8, 10)
    g = JoinGraph(neighbor_masks(8, edges), card)
    greedy = goo(g, (1 << 8) - 1)
    assert best_tree(8, edges, card, max_pairs=5).cost == greedy.cost
    assert best_tree(8, edges, card, max_relations=7).cost == greedy.cost
    assert best_tree(8, edges, card).cost <= greedy.cost
    # 13 relations in a star: more than 12, so greedy, and quick
    edges13 = _star(13)
    tree = best_tree(13, edges13, lambda m: float(bin(m).count("1")))
    assert tree.mask == (1 << 13) - 1


def test_equal_costs_prefer_smaller_builds():
    # a star of key/foreign-key joins that all keep the fact table's 1000
    # rows: every tree costs the same; the chosen one builds the dimensions
    # (10 rows each), never a 1000-row intermediate
    rows = [1000, 10, 10, 10]

    def card(mask):
        return 1000.0 if mask & 1 else float(math.prod(rows[i] for i in bits(mask)))

    tree = best_tree(4, _star(4), card)
    node = tree
    while node.left is not None:
        assert node.right.card == 10
        node = node.left
    assert node.mask == 1


def test_dp_is_fast_enough():
    import time
    rnd = random.Random(5)
    edges, card = _random_case(rnd, 10, 12)
    start = time.perf_counter()
    best_tree(10, edges, card)
    assert time.perf_counter() - start < 2.0
