"""Cardinality estimates: rows out of every plan node, and what drove them.

``estimate_with_source(node)`` is an ``Estimate`` (planner/statistics.py):
the rows and the statistic behind them; ``estimate(node)`` is its value.
Estimates are memoized on the node (plan nodes are never changed once made).

With ``Scan.statistics`` (a TableStatistics from the catalog):
- a scan's rows are ``filtered_rows`` of all its conjuncts together;
- a column's distinct count is ``distinct`` under the scan's filters, capped
  by the rows of every node its values pass through (not counting the inner
  joins of a join region, so that a join's size depends only on the set of
  inputs it joins, not on their order: planner/rules/join_ordering.py
  relies on that);
- a key/foreign-key join (the key side's columns ``unique``) keeps
  1/rows(key table) of the product: the foreign-key side's rows times the
  fraction of key rows that survive the key side's filters; other
  equi-joins keep 1/max(ndv left, ndv right);
- GROUP BY gives the product of the groups' distinct counts, capped by a
  key among them and by the input rows;
- a semi join keeps the share of the left keys' domain that the right side's
  distinct keys cover, an anti join the rest.

A subplan that a query of this connection ran before with an estimate
that was off has its observed rows (planner/feedback.py, source
``feedback``); estimates above it build on them.

Without statistics (or where they answer None), estimates are footer row
counts and fixed defaults: each pushed-down conjunct keeps 20% of the rows
(an equality with a constant 10%); a table's first column is guessed to be
its key (ndv = rows of the table) and any other column has ndv = sqrt(rows);
a semi or anti join keeps half of its left input.

Equi-join conjuncts are grouped by the pair of tables their columns come
from.  Within a group only the most selective conjunct counts (unless the
statistics know the group's columns form a key): the columns of a composite
foreign key (TPC-H Q9's partkey and suppkey) are not independent, and
multiplying their selectivities made lineitem JOIN partsupp look 2,449 rows
large instead of 6M.  Groups of different table pairs multiply (cycles of
the join graph, TPC-H Q5), and each residual conjunct keeps half.
"""

from __future__ import annotations

import math

from planner.expressions import Call, ColumnRef, Expr, Literal, split_conjuncts
from planner.feedback import observed
from planner.logical import (Aggregate, Filter, Join, Limit, Node, OneRow, Project, Scan, Sort,
                             Union, Window)
from planner.statistics import Estimate

CONJUNCT_SELECTIVITY = 0.2
EQUALITY_SELECTIVITY = 0.1
RESIDUAL_SELECTIVITY = 0.5
SEMI_SELECTIVITY = 0.5
KEY_DISTINCT_SHARE = 0.95    # distinct/rows that makes a column a key when unique() is unknown
DEFAULT_ROWS = 1000.0


def conjunct_selectivity(pred: Expr) -> float:
    if isinstance(pred, Call) and pred.func == "eq" and any(isinstance(a, Literal) for a in pred.args):
        return EQUALITY_SELECTIVITY
    return CONJUNCT_SELECTIVITY


_RANGE = ("lt", "le", "gt", "ge")


def residual_selectivity(pred: Expr) -> float:
    """A join's residual conjunct: a range comparison keeps what a range
    filter keeps (20%; TPC-H Q11's HAVING against a scalar subquery kept
    3.3% at SF1, where the former 50% was 15x off), anything else half."""
    if isinstance(pred, Call) and pred.func in _RANGE:
        return CONJUNCT_SELECTIVITY
    return RESIDUAL_SELECTIVITY


def filter_selectivity(preds: list[Expr]) -> float:
    s = 1.0
    for p in preds:
        s *= conjunct_selectivity(p)
    return s


def estimate(node: Node) -> float:
    """Estimated output rows of node (at least 1)."""
    return estimate_with_source(node).value


def estimate_with_source(node: Node) -> Estimate:
    """Estimated output rows of node (at least 1) and the statistic behind them."""
    memo = node.__dict__.get("_estimate")
    if memo is None:
        memo = node.__dict__["_estimate"] = _estimate(node)
    return memo


def _rows(value: float, source: str) -> Estimate:
    return Estimate(max(float(value), 1.0), source)


def _estimate(node: Node) -> Estimate:
    seen = observed(node)
    if seen is not None:                 # a query ran this subplan before
        node.__dict__["_raw"] = seen
        return _rows(seen, "feedback")
    if isinstance(node, Scan):
        return _scan_rows(node)
    if isinstance(node, Filter):
        child = estimate_with_source(node.child)
        return _rows(child.value * filter_selectivity(split_conjuncts(node.predicate)), "default")
    if isinstance(node, (Project, Sort, Window)):
        return estimate_with_source(node.child)
    if isinstance(node, Limit):
        child = estimate_with_source(node.child)
        if node.limit is None:
            return child
        return _rows(min(child.value, node.limit), child.source)
    if isinstance(node, Aggregate):
        if not node.groups:
            return _rows(1.0, estimate_with_source(node.child).source)
        return group_count(node)
    if isinstance(node, Join):
        return _join_rows(node)
    if isinstance(node, OneRow):
        return _rows(1.0, "default")
    if isinstance(node, Union):
        parts = [estimate_with_source(c) for c in node.inputs]
        biggest = max(parts, key=lambda e: e.value)
        return _rows(sum(e.value for e in parts), biggest.source)
    return _rows(DEFAULT_ROWS, "default")


# ---- scans ---------------------------------------------------------------------------

def table_rows(scan: Scan) -> Estimate:
    """Rows of the scan's table, before its filters."""
    if scan.statistics is not None:
        got = scan.statistics.row_count()
        if got is not None:
            return got
    return Estimate(float(max(scan.row_count, 0)), "footer")


def _scan_rows(scan: Scan) -> Estimate:
    total = table_rows(scan)
    if not scan.filters:
        return _rows(total.value, total.source)
    if scan.statistics is not None:
        got = scan.statistics.filtered_rows(list(scan.filters), list(scan.columns))
        if got is not None:
            return _rows(got.value, got.source)
    return _rows(total.value * filter_selectivity(scan.filters), "default")


# ---- where a column comes from -------------------------------------------------------

def _region_internal(node: Node) -> bool:
    """An inner/cross join, or a Filter/Project over one: the inside of a join
    region, whose row count depends on the join order."""
    while isinstance(node, (Filter, Project)):
        node = node.child
    return isinstance(node, Join) and node.kind in ("inner", "cross")


class ColumnOrigin:
    """A column traced down to a scan: the table column, and the fewest rows
    of any node on the way (region joins not counted)."""
    __slots__ = ("scan", "column", "cap")

    def __init__(self, scan: Scan, column: int, cap: float):
        self.scan, self.column, self.cap = scan, column, cap


def column_origin(node: Node, index: int) -> ColumnOrigin | None:
    cap = math.inf
    while True:
        if not _region_internal(node):
            cap = min(cap, estimate(node))
        if isinstance(node, Scan):
            return ColumnOrigin(node, node.columns[index], cap)
        if isinstance(node, (Filter, Sort, Limit)):
            node = node.child
        elif isinstance(node, Window):
            if index >= len(node.child.schema):
                return None
            node = node.child
        elif isinstance(node, Project):
            e = node.exprs[index]
            if not isinstance(e, ColumnRef):
                return None
            node, index = node.child, e.index
        elif isinstance(node, Join):
            n = len(node.left.schema)
            if index < n:
                node = node.left
            elif node.kind in ("inner", "cross", "left", "right", "full", "single"):
                node, index = node.right, index - n
            else:                                   # a mark column
                return None
        elif isinstance(node, Aggregate) and index < len(node.groups):
            g = node.groups[index]
            if not isinstance(g, ColumnRef):
                return None
            node, index = node.child, g.index
        else:
            return None


def _is_key(scan: Scan, columns: tuple[int, ...]) -> tuple[bool, str]:
    """Whether table columns of scan form a key, and the source of the
    answer: the statistics' key guess (or a distinct count near the row
    count), else the default guess that a table's first column is its key."""
    st = scan.statistics
    if st is not None:
        got = st.unique(columns)
        if got is not None:
            return bool(got), "key"
        if len(columns) == 1:
            d = st.distinct(columns[0], [], list(scan.columns))
            if d is not None:
                return d.value >= KEY_DISTINCT_SHARE * table_rows(scan).value, d.source
    return columns == (0,), "default"


def _distinct(origin: ColumnOrigin) -> Estimate:
    """Distinct values of the traced column among the rows that reach the
    end of the trace (capped by origin.cap)."""
    scan = origin.scan
    total = table_rows(scan).value
    st = scan.statistics
    if st is not None:
        got = st.distinct(origin.column, list(scan.filters), list(scan.columns))
        if got is not None:
            return _rows(min(got.value, origin.cap), got.source)
    key, source = _is_key(scan, (origin.column,))
    if key:
        return _rows(min(total, origin.cap), source)
    return _rows(min(math.sqrt(max(total, 1.0)), origin.cap), "default")


def _domain(origin: ColumnOrigin) -> Estimate:
    """The column's distinct values in its whole table (for a key: the
    table's rows, which is what a key/foreign-key join divides by)."""
    scan = origin.scan
    total = table_rows(scan).value
    key, source = _is_key(scan, (origin.column,))
    if key:
        return _rows(total, source)
    st = scan.statistics
    if st is not None:
        got = st.distinct(origin.column, [], list(scan.columns))
        if got is not None:
            return _rows(got.value, got.source)
    return _rows(min(math.sqrt(max(total, 1.0)), origin.cap), "default")


def column_ndv(node: Node, expr: Expr) -> float:
    """Guessed distinct count of expr over node's output."""
    origin = column_origin(node, expr.index) if isinstance(expr, ColumnRef) else None
    if origin is None:
        got = aggregate_ndv(node, expr)
        return got.value if got is not None else max(math.sqrt(estimate(node)), 1.0)
    return _distinct(origin).value


_VALUE_AGGREGATES = ("sum", "avg", "min", "max")


def aggregate_ndv(node: Node, expr: Expr) -> Estimate | None:
    """Distinct values of an aggregate's sum / avg / min / max column
    (through projections, filters and sorts): about one per group, as the
    values of different groups rarely coincide (TPC-H Q15 joins a per-
    supplier revenue with its maximum: the default sqrt(rows) made the
    join 100x too big at SF1).  None for other columns (count's values
    repeat)."""
    if not isinstance(expr, ColumnRef):
        return None
    cap = estimate(node)
    index = expr.index
    while True:
        if isinstance(node, (Filter, Sort, Limit)):
            node = node.child
        elif isinstance(node, Project):
            e = node.exprs[index]
            if not isinstance(e, ColumnRef):
                return None
            node, index = node.child, e.index
        elif isinstance(node, Aggregate) and node.groups and index >= len(node.groups):
            a = node.aggregates[index - len(node.groups)]
            if a.func not in _VALUE_AGGREGATES:
                return None
            groups = estimate_with_source(node)
            return _rows(min(groups.value, cap), groups.source)
        else:
            return None
        cap = min(cap, estimate(node))


# ---- joins ---------------------------------------------------------------------------

def _raw(node: Node) -> float:
    """Rows of a node, not rounded up to 1 inside a join region: a region's
    joins multiply their leaves' rows and selectivities and round up only
    their own results, so that a join's estimate is a function of the set of
    leaves it joins (the one planner/rules/join_ordering.py optimizes)."""
    if isinstance(node, (Project, Filter)) and _region_internal(node):
        estimate_with_source(node)
        seen = node.__dict__.get("_raw")        # its own observed rows (feedback)
        if seen is not None:                    # (a Project passing on its child's has none)
            return seen
        raw = _raw(node.child)
        if isinstance(node, Filter):
            raw *= filter_selectivity(split_conjuncts(node.predicate))
        return raw
    if isinstance(node, Join) and node.kind in ("inner", "cross"):
        estimate_with_source(node)
        return node.__dict__["_raw"]
    return estimate(node)


def _join_rows(node: Join) -> Estimate:
    left, right = estimate_with_source(node.left), estimate_with_source(node.right)
    if node.kind in ("semi", "anti"):
        return _semi_rows(node, left)
    if node.kind in ("mark", "mark_in", "single"):      # one row per left row
        return left
    if node.kind in ("inner", "cross"):
        out = _raw(node.left) * _raw(node.right)
    else:
        out = left.value * right.value
    source = max((left, right), key=lambda e: e.value).source
    if node.left_keys:
        sel = join_selectivity(node.left, node.right, node.left_keys, node.right_keys)
        out *= sel.value
        source = sel.source
    residuals = split_conjuncts(node.residual)
    if residuals:
        for r in residuals:
            out *= residual_selectivity(r)
        if not node.left_keys:
            source = "default"
    if node.kind in ("left", "full"):
        out = max(out, left.value)
    if node.kind in ("right", "full"):
        out = max(out, right.value)
    node.__dict__["_raw"] = out
    return _rows(out, source)


def join_selectivity(left: Node, right: Node, left_keys: list[Expr],
                     right_keys: list[Expr]) -> Estimate:
    """The share of left x right that left_keys[i] = right_keys[i] (for all
    i) keeps; see the module docstring."""
    groups: dict[tuple, list] = {}
    for i, (lk, rk) in enumerate(zip(left_keys, right_keys)):
        lo = column_origin(left, lk.index) if isinstance(lk, ColumnRef) else None
        ro = column_origin(right, rk.index) if isinstance(rk, ColumnRef) else None
        key = (id(lo.scan), id(ro.scan)) if lo is not None and ro is not None else ("pair", i)
        groups.setdefault(key, []).append((lk, rk, lo, ro))
    sel, source = 1.0, "default"
    best = None
    for pairs in groups.values():
        g = _group_selectivity(left, right, pairs)
        sel *= g.value
        if best is None or g.value < best:
            best, source = g.value, g.source
    return Estimate(sel, source)


def _group_selectivity(left: Node, right: Node, pairs: list) -> Estimate:
    lo, ro = pairs[0][2], pairs[0][3]
    if len(pairs) > 1 and lo is not None and ro is not None:
        # a composite key known to the statistics
        for origin, cols in ((ro, tuple(p[3].column for p in pairs)),
                             (lo, tuple(p[2].column for p in pairs))):
            if origin.scan.statistics is not None and origin.scan.statistics.unique(cols):
                return Estimate(1.0 / max(table_rows(origin.scan).value, 1.0), "key")
    best = None
    for lk, rk, lo, ro in pairs:
        nl = _pair_ndv(left, lk, lo)
        nr = _pair_ndv(right, rk, ro)
        top = nr if nr.value > nl.value or (nr.value == nl.value and nr.source == "key") \
            else nl
        s = Estimate(1.0 / top.value, top.source)
        if best is None or s.value < best.value:
            best = s
    return best


def key_ndv(node: Node, key: Expr) -> Estimate:
    """The distinct count that an equi-join on ``key`` (over node's output)
    divides by: for a key column the rows of its table, else its distinct
    values (see join_selectivity)."""
    origin = column_origin(node, key.index) if isinstance(key, ColumnRef) else None
    return _pair_ndv(node, key, origin)


def _pair_ndv(node: Node, key: Expr, origin: ColumnOrigin | None) -> Estimate:
    """A join key's distinct count as the join divides by it: a key column
    counts all rows of its table (uncapped: the key/foreign-key rule)."""
    if origin is None:
        got = aggregate_ndv(node, key)
        return got if got is not None else _rows(math.sqrt(estimate(node)), "default")
    key_col, source = _is_key(origin.scan, (origin.column,))
    if key_col:
        return _rows(table_rows(origin.scan).value, source)
    return _distinct(origin)


def key_coverage(left: Node, left_keys: list[Expr], right: Node,
                 right_keys: list[Expr]) -> Estimate | None:
    """The share of left's rows whose key right's keys cover, assuming
    right's distinct keys are spread over the left key's whole domain (the
    tightest key pair); None without statistics on both sides."""
    frac = None
    for lk, rk in zip(left_keys, right_keys):
        lo = column_origin(left, lk.index) if isinstance(lk, ColumnRef) else None
        ro = column_origin(right, rk.index) if isinstance(rk, ColumnRef) else None
        if lo is None or ro is None or lo.scan.statistics is None or \
                ro.scan.statistics is None:
            continue
        covered = _distinct(ro)
        domain = _domain(lo)
        f = min(covered.value / max(domain.value, covered.value), 1.0)
        if frac is None or f < frac.value:
            frac = Estimate(f, covered.source)
    return frac


def _semi_rows(node: Join, left: Estimate) -> Estimate:
    """Semi join: the left rows whose key the right side's keys cover
    (key_coverage); anti join: the other left rows."""
    frac = None
    if node.left_keys:
        frac = key_coverage(node.left, node.left_keys, node.right, node.right_keys)
    if frac is None:
        return _rows(left.value * SEMI_SELECTIVITY, "default")
    share = frac.value * RESIDUAL_SELECTIVITY ** len(split_conjuncts(node.residual))
    if node.kind == "anti":
        share = 1.0 - share
    return _rows(left.value * share, frac.source)


def builds_on_left(node: Join) -> bool:
    """Semi and anti joins can build their hash table on either input (the
    engine's right_semi/right_anti probe with the subquery side and mark the
    outer rows); the smaller estimated input is built.  Other kinds build on
    the right (mark joins have no build-left form)."""
    return node.kind in ("semi", "anti") and estimate(node.right) > estimate(node.left)


# ---- GROUP BY ------------------------------------------------------------------------

def group_count(node: Aggregate) -> Estimate:
    """Groups of a GROUP BY: the product of the groups' distinct counts, the
    product of one table's columns capped by a key among them, all capped by
    the input rows."""
    child = estimate_with_source(node.child)
    by_scan: dict[int, list[ColumnOrigin]] = {}
    ndv, sources = 1.0, []
    for g in node.groups:
        origin = column_origin(node.child, g.index) if isinstance(g, ColumnRef) else None
        if origin is None:
            ndv *= max(math.sqrt(child.value), 1.0)
            sources.append("default")
            continue
        origin.cap = min(origin.cap, child.value)
        by_scan.setdefault(id(origin.scan), []).append(origin)
    for origins in by_scan.values():
        scan = origins[0].scan
        product, key_cap, key_source = 1.0, math.inf, None
        for o in origins:
            d = _distinct(o)
            product *= d.value
            sources.append(d.source)
            if scan.statistics is not None and _is_key(scan, (o.column,))[0] \
                    and d.value < key_cap:
                key_cap, key_source = d.value, "key"
        if scan.statistics is not None and len(origins) > 1 and key_source is None and \
                scan.statistics.unique(tuple(o.column for o in origins)):
            key_cap, key_source = min(o.cap for o in origins), "key"
        if product > key_cap:
            product = key_cap
            sources.append(key_source)
        ndv *= product
    if ndv >= child.value:
        return child
    if "key" in sources:
        source = "key"
    elif "default" in sources:
        source = "default"
    else:
        source = sources[0]
    return _rows(ndv, source)
