"""Cardinality feedback: the rows a subplan really produced, reused as its
estimate when a later query plans the same subplan (in the spirit of DB2's
LEO and Oracle's cardinality feedback; the paper's "learn from every query").

After a query completes, engine/analyze.py hands ``record`` the actual rows
of every plan node (counted per block); nodes whose estimate was off
(q-error above ``RECORD_Q_ERROR``, or a ``default`` guess) are kept in the
connection's ``FeedbackStore`` (bounded, least recently used out) under the
subplan's canonical key.  planner/cardinality.py asks ``observed(node)``
first for every node (estimate source ``feedback``); the join orderer asks
``RegionFeedback`` for the sets of leaves it enumerates, and scales the
sets around an observed one by what the observation corrected.

The key says which rows a subplan computes, not how: it must be the same
for the plan the join orderer enumerates and the one that ran after later
rewrites.  So it is built from
- leaves: a scan is its files' identities (path, size, modification time /
  URL, ETag: a rewritten file makes new keys) and its filters; an
  aggregation, LIMIT, union or outer/mark join is a leaf over its inputs'
  keys;
- regions: inner and cross joins, filters, projections, sorts, windows and
  semi/anti joins (as a conjunct on their left input) flatten to the set of
  their leaves and the set of their conjuncts, with columns named by where
  they come from (not by position) and columns that equalities make equal
  named by one of them.  So join order, the place of a pushed-down semi
  join, projection pruning and the side a filter was written on do not
  change the key; literals do (another parameter is another subplan).
A region holding one leaf twice (a self-join of identical scans) has no key.
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import threading
from collections import OrderedDict

from planner.expressions import AggregateCall, Call, ColumnRef, Expr, Interval, Literal
from planner.logical import (Aggregate, Filter, Join, Limit, Node, OneRow, Project, Scan, Sort,
                             SortKey, Union, Window, WindowFunction)

SOURCE = "feedback"
RECORD_Q_ERROR = 2.0          # record a node whose estimate was further off than this
CAPACITY = 4096               # observations a connection keeps
MAX_REGION_CANDIDATES = 10    # leaves of a region whose subsets are looked up


class FeedbackStore:
    """Observed rows by canonical subplan key, least recently used out past
    ``capacity``; ``leaf_known`` says whether a join of several leaves with
    this leaf was observed (the join orderer looks up only such sets)."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._rows: OrderedDict = OrderedDict()     # key -> (rows, leaves)
        self._leaves: dict = {}                      # leaf key -> observations holding it
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: bytes) -> float | None:
        with self._lock:
            got = self._rows.get(key)
            if got is None:
                return None
            self._rows.move_to_end(key)
            return got[0]

    def put(self, key: bytes, rows: int, leaves: tuple = ()) -> None:
        leaves = tuple(leaves) if len(leaves) > 1 else ()
        with self._lock:
            old = self._rows.pop(key, None)
            if old is not None:
                self._forget(old[1])
            self._rows[key] = (float(rows), leaves)
            for leaf in leaves:
                self._leaves[leaf] = self._leaves.get(leaf, 0) + 1
            while len(self._rows) > self.capacity:
                _, (_, gone) = self._rows.popitem(last=False)
                self._forget(gone)

    def _forget(self, leaves: tuple) -> None:
        for leaf in leaves:
            n = self._leaves.get(leaf, 0) - 1
            if n > 0:
                self._leaves[leaf] = n
            else:
                self._leaves.pop(leaf, None)

    def leaf_known(self, leaf: bytes) -> bool:
        return leaf in self._leaves

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self._leaves.clear()


# ---- what the planner asks -------------------------------------------------------------

def store_of(node: Node) -> FeedbackStore | None:
    """The connection's store, reached through the statistics of a scan
    below node (None: statistics off, or no scan)."""
    memo = node.__dict__.get("_feedback_store", False)
    if memo is not False:
        return memo
    if isinstance(node, Scan):
        got = getattr(node.statistics, "feedback", None)
    else:
        got = None
        for c in node.children:
            got = store_of(c)
            if got is not None:
                break
    node.__dict__["_feedback_store"] = got
    return got


def observed(node: Node) -> float | None:
    """The rows node produced when a query ran it before, or None."""
    store = store_of(node)
    if store is None or not len(store):
        return None
    key = node_key(node)
    return None if key is None else store.get(key)


def record(plan: Node, rows_of: dict, estimate_of) -> int:
    """Keep the actual rows (``rows_of``: id(node) -> rows or None) of the
    nodes of a completed query whose estimate (``estimate_of(node)``: an
    Estimate) was off.  Nodes under a LIMIT that stopped its input early
    are skipped.  Returns the number of observations kept."""
    store = store_of(plan)
    if store is None:
        return 0
    kept = 0
    stack = [plan]
    while stack:
        node = stack.pop()
        rows = rows_of.get(id(node))
        if isinstance(node, Limit) and not isinstance(node.child, Sort) and \
                node.limit is not None and (rows is None or rows >= node.limit):
            continue                    # its input may have stopped early
        stack.extend(node.children)
        if rows is None:
            continue
        est = estimate_of(node)
        e, a = max(est.value, 1.0), max(float(rows), 1.0)
        if est.source != "default" and max(e / a, a / e) <= RECORD_Q_ERROR:
            continue
        key = node_key(node)
        if key is not None:
            flat = _flat(node)
            store.put(key, rows, flat.leaves if flat is not None else ())
            kept += 1
    return kept


def node_key(node: Node) -> bytes | None:
    """The canonical key of node's rows (None: it has none)."""
    memo = node.__dict__.get("_feedback_key", False)
    if memo is not False:
        return memo
    flat = _flat(node)
    try:
        key = None if flat is None else _region_key(flat.leaves, flat.conjuncts)
    except _Unkeyable:
        key = None
    node.__dict__["_feedback_key"] = key
    return key


class RegionFeedback:
    """Observations of the sets of leaves of a join region (a bit mask of
    leaf numbers), for planner/rules/join_ordering.py: ``leaves`` are its
    leaf nodes, ``colmaps`` (region column -> position in the leaf) place
    its columns, ``conjuncts`` are (expression over region columns, leaf
    numbers it reads), ``classes`` ({leaf: region column}) the columns
    equalities make equal."""

    def __init__(self, leaves: list, colmaps: list, conjuncts: list, classes: list):
        self.observed: dict[int, float] = {}
        store = next((s for s in map(store_of, leaves) if s is not None), None)
        if store is None or not len(store) or len(leaves) < 2:
            return
        flats = [_flat(leaf) for leaf in leaves]
        if any(f is None for f in flats):
            return
        known = [i for i, f in enumerate(flats) if all(store.leaf_known(x) for x in f.leaves)]
        if len(known) < 2 or len(known) > MAX_REGION_CANDIDATES:
            return
        width = 1 + max((g for colmap in colmaps for g in colmap), default=-1)
        ids: list = [None] * width
        for i, colmap in enumerate(colmaps):
            for g, p in colmap.items():
                ids[g] = flats[i].ids[p]
        try:
            conj = [(_expr(c, ids), sum(1 << i for i in ls)) for c, ls in conjuncts]
        except _Unkeyable:
            return
        eqs = [[(leaf, ids[g]) for leaf, g in sorted(members.items())] for members in classes]
        full = sum(1 << i for i in known)
        mask = full
        while mask:                        # every subset of the known leaves
            if mask & (mask - 1):
                key = self._key(mask, flats, conj, eqs)
                rows = None if key is None else store.get(key)
                if rows is not None:
                    self.observed[mask] = rows
            mask = (mask - 1) & full

    @staticmethod
    def _key(mask: int, flats, conj, eqs) -> bytes | None:
        leaves, conjuncts = [], []
        for i, f in enumerate(flats):
            if mask >> i & 1:
                leaves.extend(f.leaves)
                conjuncts.extend(f.conjuncts)
        conjuncts.extend(c for c, m in conj if m and m & mask == m)
        for members in eqs:
            inside = [x for leaf, x in members if mask >> leaf & 1]
            conjuncts.extend(_eq(a, b) for a, b in zip(inside, inside[1:]))
        try:
            return _region_key(leaves, conjuncts)
        except _Unkeyable:
            return None

    def card(self, card):
        """``card`` (mask -> estimated rows) with the observations: an
        observed set its rows, any other set scaled by what the
        observations of its largest disjoint observed subsets corrected."""
        if not self.observed:
            return card
        order = sorted(self.observed, key=lambda m: -bin(m).count("1"))
        memo: dict[int, float] = {}

        def corrected(mask: int) -> float:
            got = memo.get(mask)
            if got is not None:
                return got
            got = self.observed.get(mask)
            if got is None:
                got, used = card(mask), 0
                for m in order:
                    if m & mask == m and not m & used:
                        got *= self.observed[m] / max(card(m), 1.0)
                        used |= m
                got = max(got, 1.0)
            memo[mask] = got
            return got
        return corrected


# ---- canonical forms ---------------------------------------------------------------------

class _Unkeyable(Exception):
    pass


class _Flat:
    """A node's rows as a region: leaf keys, conjuncts (canonical, columns
    as ("$c", id)), and the id of each output column."""
    __slots__ = ("leaves", "conjuncts", "ids")

    def __init__(self, leaves: tuple, conjuncts: tuple, ids: list):
        self.leaves, self.conjuncts, self.ids = leaves, conjuncts, ids


def _digest(x) -> bytes:
    return hashlib.blake2b(repr(x).encode(), digest_size=16).digest()


def _flat(node: Node) -> _Flat | None:
    memo = node.__dict__.get("_feedback_flat", False)
    if memo is not False:
        return memo
    try:
        got = _flatten(node)
    except _Unkeyable:
        got = None
    node.__dict__["_feedback_flat"] = got
    return got


def _need(node: Node) -> _Flat:
    got = _flat(node)
    if got is None:
        raise _Unkeyable()
    return got


def _leaf(key_parts, ids_of) -> _Flat:
    key = _digest(key_parts)
    return _Flat((key,), (), ids_of(key))


def _flatten(node: Node) -> _Flat:
    if isinstance(node, Scan):
        ident = getattr(node.statistics, "identities", None)
        if ident is None:
            raise _Unkeyable()
        tcols = [("t", c) for c in node.columns]
        filters = sorted(repr(_expr(f, tcols)) for f in node.filters)
        return _leaf(("scan", tuple(ident), tuple(filters)),
                     lambda k: [("col", k, c) for c in node.columns])
    if isinstance(node, OneRow):
        return _leaf(("onerow",), lambda k: [])
    if isinstance(node, (Sort,)):
        return _need(node.child)
    if isinstance(node, Filter):
        child = _need(node.child)
        conj = _conjuncts(node.predicate, child.ids)
        return _Flat(child.leaves, child.conjuncts + conj, child.ids)
    if isinstance(node, Project):
        child = _need(node.child)
        ids = [child.ids[e.index] if isinstance(e, ColumnRef) else ("x", _expr(e, child.ids))
               for e in node.exprs]
        return _Flat(child.leaves, child.conjuncts, ids)
    if isinstance(node, Window):
        child = _need(node.child)
        base = _region_key(child.leaves, child.conjuncts)
        ids = child.ids + [("w", base, _expr(f, child.ids)) for f in node.functions]
        return _Flat(child.leaves, child.conjuncts, ids)
    if isinstance(node, Aggregate):
        child = _need(node.child)
        base = _region_key(child.leaves, child.conjuncts)
        groups = [_expr(g, child.ids) for g in node.groups]
        parts = ("agg", base, tuple(sorted(map(repr, groups))))
        return _leaf(parts, lambda k: [("g", k, g) for g in groups] +
                     [("v", k, _expr(a, child.ids)) for a in node.aggregates])
    if isinstance(node, Limit):
        child = _need(node.child)
        base = _region_key(child.leaves, child.conjuncts)
        order = _expr(node.child.keys, child.ids) if isinstance(node.child, Sort) else None
        return _leaf(("limit", base, node.limit, node.offset, order),
                     lambda k: [("l", k, x) for x in child.ids])
    if isinstance(node, Union):
        inputs = [_need(c) for c in node.inputs]
        parts = ("union", tuple(_region_key(f.leaves, f.conjuncts) for f in inputs))
        return _leaf(parts, lambda k: [("u", k, i) for i in range(len(node.names))])
    if isinstance(node, Join):
        return _join(node)
    raise _Unkeyable()          # DependentJoin, Unnest, table functions: no key


def _join(node: Join) -> _Flat:
    left = _need(node.left)
    right = _need(node.right)
    if node.kind in ("inner", "cross"):
        ids = left.ids + right.ids
        conj = tuple(_eq(_expr(lk, left.ids), _expr(rk, right.ids))
                     for lk, rk in zip(node.left_keys, node.right_keys))
        if node.residual is not None:
            conj += _conjuncts(node.residual, ids)
        return _Flat(left.leaves + right.leaves, left.conjuncts + right.conjuncts + conj, ids)
    rkey = _region_key(right.leaves, right.conjuncts)
    rids = [("r", x) for x in right.ids]
    cond = (tuple(sorted(((_expr(lk, left.ids), _expr(rk, rids))
                          for lk, rk in zip(node.left_keys, node.right_keys)), key=repr)),
            None if node.residual is None else
            tuple(sorted(_conjuncts(node.residual, left.ids + rids), key=repr)))
    if node.kind in ("semi", "anti"):
        return _Flat(left.leaves, left.conjuncts + ((node.kind, rkey) + cond,), left.ids)
    lkey = _region_key(left.leaves, left.conjuncts)
    parts = ("join", node.kind, lkey, rkey) + cond
    if node.kind in ("mark", "mark_in"):
        return _leaf(parts, lambda k: left.ids + [("m", k)])
    if node.kind in ("left", "single"):
        return _leaf(parts, lambda k: left.ids + [("o", k, x) for x in right.ids])
    return _leaf(parts, lambda k: [("o", k, x) for x in left.ids + right.ids])


def _conjuncts(pred: Expr, ids: list) -> tuple:
    from planner.expressions import split_conjuncts
    return tuple(_expr(c, ids) for c in split_conjuncts(pred))


def _eq(a, b) -> tuple:
    return ("call", "eq", "BOOLEAN", (a, b))


_VALUES = (str, int, float, bool, bytes, type(None), decimal.Decimal, datetime.date,
           datetime.time, datetime.timedelta, Interval)


def _expr(x, ids: list):
    """x (an expression, aggregate, sort key, window function or list of
    them) with column references as ("$c", the column's id)."""
    if isinstance(x, ColumnRef):
        if not 0 <= x.index < len(ids):
            raise _Unkeyable()
        return ("$c", ids[x.index])
    if isinstance(x, Literal):
        return ("lit", str(x.type), _value(x.value))
    if isinstance(x, Call):
        return ("call", x.func, str(x.type), tuple(_expr(a, ids) for a in x.args))
    if isinstance(x, AggregateCall):
        return ("agg", x.func, x.distinct, str(x.type),
                None if x.arg is None else _expr(x.arg, ids))
    if isinstance(x, SortKey):
        return ("key", _expr(x.expr, ids), x.ascending, x.nulls_first)
    if isinstance(x, WindowFunction):
        return ("win", x.func, str(x.type), _expr(x.args, ids), _expr(x.partition, ids),
                _expr(x.order, ids), repr(x.frame))
    if isinstance(x, (list, tuple)):
        return tuple(_expr(v, ids) for v in x)
    raise _Unkeyable()          # parameters, outer references, unknown expressions


def _value(v):
    if isinstance(v, _VALUES):
        return (type(v).__name__, repr(v))
    if isinstance(v, (list, tuple)):
        return tuple(_value(x) for x in v)
    raise _Unkeyable()


def _region_key(leaves, conjuncts) -> bytes:
    """The key of a region: its leaves (each once, else no key) and its
    conjuncts, with the columns of each equality class named by one."""
    if len(set(leaves)) != len(leaves):
        raise _Unkeyable()
    if len(leaves) == 1 and not conjuncts:
        return leaves[0]
    parent: dict = {}
    rest = []
    for c in conjuncts:
        if c[0] == "call" and c[1] == "eq" and all(a[0] == "$c" for a in c[3]):
            a, b = _find(parent, c[3][0][1]), _find(parent, c[3][1][1])
            if a != b:
                if repr(b) < repr(a):
                    a, b = b, a
                parent[b] = a
        elif not (c[0] == "call" and not _has_column(c)):     # constants: left out
            rest.append(c)
    classes: dict = {}
    for x in list(parent):
        classes.setdefault(_find(parent, x), []).append(x)
    for root, members in classes.items():
        members.append(root)
    eq_classes = sorted(repr(sorted(set(map(repr, m)))) for m in classes.values())
    others = sorted(set(repr(_ordered(_named(c, parent))) for c in rest))
    return _digest(("region", tuple(sorted(leaves)), tuple(eq_classes), tuple(others)))


def _find(parent: dict, x):
    """The root of x's equality class (x itself when it has none)."""
    while parent.get(x, x) != x:
        x = parent[x]
    return x


def _named(t, parent: dict):
    """``t`` with each column ("$c", id) named by its class's root.  (Module
    functions, not closures: a recursive closure is a reference cycle, and
    every query's feedback keys left dozens for the collector.)"""
    if isinstance(t, tuple):
        if len(t) == 2 and t[0] == "$c":
            return ("$c", _find(parent, t[1]))
        return tuple(_named(v, parent) for v in t)
    return t


def _ordered(c):
    """An equality or inequality with its two sides in a fixed order."""
    if c[0] == "call" and c[1] in ("eq", "ne") and len(c[3]) == 2:
        return (c[0], c[1], "BOOLEAN", tuple(sorted(c[3], key=repr)))
    return c


def _has_column(t) -> bool:
    if isinstance(t, tuple):
        if len(t) == 2 and t[0] == "$c":
            return True
        return any(_has_column(v) for v in t)
    return False
