"""What the planner asks of a table's statistics.

``TableEstimates`` answers planner/statistics.py's ``TableStatistics``
protocol by duck typing (stats/ imports neither planner/ nor engine/):
``row_count``, ``filtered_rows``, ``distinct``, ``unique``, and
``value_range`` besides.  It reads one consistent snapshot of the store
(stats/tables.py), taken when the catalog makes it for a query.

The seam.  Filters are planner expressions, which only the engine can
evaluate, so the engine injects three callables (engine/statistics.py):

- ``describe(filters, columns) -> [Conjunct]``: per conjunct its
  expression, its ``key`` (a text naming it over table columns, for
  memoizing), the scan-schema ``positions`` it reads, and
  ``leaf``: ``(position, op, values)`` when it is ``column op constant``
  (op eq lt le gt ge in is_null is_not_null, values in the column's
  storage form), else None;
- ``evaluate(filters, sample) -> bool mask``: the conjuncts ANDed over
  the sample rows (None when they cannot be evaluated there); ``sample``
  maps a scan-schema position to the SampleColumn of its column
  (stats/sample.py);
- ``estimate(value, source)``: the Estimate to return
  (planner.statistics.Estimate; by default a plain ``Estimate`` here).

Filtered rows: all conjuncts together on the sample rows (correlated
predicates are estimated jointly).  When fewer than ``MIN_HITS`` sample
rows pass, each conjunct is estimated alone -- on the sample when enough
of its rows pass, else from the synopses (a ``column op constant`` range
against each synopsis' min/max, interpolated inside it; an equality
keeps 1/distinct when some synopsis holds the value) -- the product is
capped by what the sample allows (fewer than k + 1 of n rows), and never
under one row.  Without a sample of a filter column, leaves are
estimated from synopses, and None is the answer when some conjunct is
not a leaf.

Distinct counts: the HyperLogLog estimate of the table (registers of
all files merged), capped by the non-NULL rows; under filters, the
column's own conjuncts keep their share of the values (a range on a
column keeps that share of its values), the others pick rows at random,
which keep d * (1 - (1 - s) ** (rows per value)) values.

Keys: stats/keys.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from stats import keys as K
from stats.columns import STRING
from stats.tables import FileStatistics, StatisticsStore, TableSample, pair_key

MIN_HITS = 3        # fewer sample rows passing: conjuncts are estimated one by one


@dataclass(frozen=True)
class Estimate:
    value: float
    source: str


@dataclass(frozen=True, eq=False)
class Conjunct:
    expr: object                    # the filter conjunct (opaque here)
    key: str                        # names it (memo key)
    positions: frozenset            # scan-schema positions it reads
    leaf: tuple | None = None       # (position, op, values)


class TableEstimates:
    def __init__(self, store: StatisticsStore, identities: tuple, names: list[str],
                 footer_rows: int, files: list, sample: TableSample | None,
                 describe: Callable, evaluate: Callable, estimate: Callable = Estimate,
                 feedback=None):
        self.store = store
        self.feedback = feedback       # the connection's cardinality feedback (planner's)
        self.identities = tuple(identities)
        self.names = list(names)
        self.rows = int(footer_rows)
        self.files: list[FileStatistics | None] = list(files)
        self.sample = sample
        self._describe = describe
        self._evaluate = evaluate
        self._estimate = estimate
        self._hits: dict = {}          # conjunct keys -> sample rows passing
        self._distinct: dict = {}

    # ---- protocol ----------------------------------------------------------------
    def row_count(self):
        return self._estimate(float(self.rows), "footer")

    def filtered_rows(self, filters: list, columns: list[int]):
        if not filters:
            return self.row_count()
        got = self._selectivity(self._describe(filters, columns), columns)
        if got is None:
            return None
        sel, source = got
        return self._estimate(max(1.0, self.rows * sel), source)

    def distinct(self, column: int, filters: list, columns: list[int]):
        name = self.names[column]
        d = self.column_distinct(name)
        if d is None:
            return None
        if not filters or self.rows == 0:
            return self._estimate(max(d, 1.0), "hll")
        conjuncts = self._describe(filters, columns)
        pos = columns.index(column) if column in columns else -1
        own = [c for c in conjuncts if c.positions and c.positions <= {pos}]
        other = [c for c in conjuncts if c not in own]
        total = self._selectivity(conjuncts, columns)
        s_own = self._selectivity(own, columns) if own else (1.0, "hll")
        if total is None or s_own is None:
            return self._estimate(max(d, 1.0), "hll")
        s_all, s_own = total[0], max(s_own[0], 1e-12)
        s_other = min(1.0, s_all / s_own) if other else 1.0
        d1 = max(d * s_own, 1.0)
        per_value = self.rows * s_own / d1
        d2 = d1 * (1.0 - (1.0 - s_other) ** per_value) if s_other < 1.0 else d1
        return self._estimate(max(1.0, min(d2, self.rows * s_all)), "hll")

    def unique(self, table_columns: tuple):
        cols = tuple(table_columns)
        if len(cols) == 1:
            return self._single_key(self.names[cols[0]])
        if len(cols) != 2:
            if any(self._single_key(self.names[c]) for c in cols):
                return True
            return None
        a, b = (self.names[c] for c in cols)
        if self._single_key(a) or self._single_key(b):
            return True
        got = K.pair_is_key(self.store.table_pair_distinct(self.identities, (a, b), self.files),
                            self.rows, self.column_distinct(a), self.column_distinct(b),
                            self._sample_pairs(a, b))
        if got is None:
            self.store.want_pair(self.identities, pair_key(a, b))
        return got

    # ---- more than the protocol --------------------------------------------------
    def value_range(self, column: int) -> tuple | None:
        """(min, max) of a column over the table (storage form), or None."""
        name = self.names[column]
        lo = hi = None
        for f in self.files:
            c = None if f is None else f.columns.get(name)
            if c is None:
                return None
            for s in range(len(c.synopses.null_counts)):
                a, b = c.synopses.bounds_of(s)
                if a is None:
                    continue
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
        return None if lo is None else (lo, hi)

    def key_guess(self, candidates: list[int]) -> tuple | None:
        """The paper's key guess among table columns ``candidates`` (in
        ordinal order)."""
        return K.key_guess(sorted(candidates),
                           lambda c: self._single_key(self.names[c]) is True,
                           lambda a, b: self.unique((a, b)) is True)

    # ---- pieces ------------------------------------------------------------------
    def column_statistics(self, name: str) -> list | None:
        out = [None if f is None else f.columns.get(name) for f in self.files]
        return None if not out or any(c is None for c in out) else out

    def column_distinct(self, name: str) -> float | None:
        if name in self._distinct:
            return self._distinct[name]
        d = self.store.table_distinct(self.identities, name, self.files)
        if d is not None:
            cols = self.column_statistics(name)
            nonnull = sum(c.rows - c.null_count for c in cols)
            d = min(d, float(nonnull))
        self._distinct[name] = d
        return d

    def _null_count(self, name: str) -> int | None:
        cols = self.column_statistics(name)
        return None if cols is None else sum(c.null_count for c in cols)

    def _single_key(self, name: str) -> bool | None:
        nulls = self._null_count(name)
        if nulls is None:
            return None
        return K.column_is_key(self.column_distinct(name), self.rows, nulls)

    def _sample_pairs(self, a: str, b: str) -> tuple | None:
        s = self.sample
        if s is None or a not in s.columns or b not in s.columns:
            return None
        return s.columns[a].python_values(), s.columns[b].python_values()

    def _sample_of(self, positions, columns: list[int]) -> dict | None:
        if self.sample is None or self.sample.size == 0:
            return None
        out = {}
        for p in positions:
            col = self.sample.columns.get(self.names[columns[p]])
            if col is None:
                return None
            out[p] = col
        return out

    def _hits_of(self, conjuncts: list[Conjunct], sample: dict) -> int | None:
        """Sample rows passing every conjunct (None: cannot evaluate)."""
        key = tuple(sorted(c.key for c in conjuncts))
        if key not in self._hits:
            mask = self._evaluate([c.expr for c in conjuncts], sample)
            self._hits[key] = None if mask is None else int(np.count_nonzero(mask))
        return self._hits[key]

    def _selectivity(self, conjuncts: list[Conjunct], columns: list[int]) -> tuple | None:
        """(share of the rows passing every conjunct, source), or None."""
        if not conjuncts:
            return 1.0, "sample"
        positions = set().union(*[c.positions for c in conjuncts])
        sample = self._sample_of(positions, columns)
        k = None if sample is None else self._hits_of(conjuncts, sample)
        if k is None:
            sel = 1.0
            for c in conjuncts:
                s = self._leaf_selectivity(c.leaf, columns)
                if s is None:
                    return None
                sel *= s
            return sel, "synopses"
        n = self.sample.size
        if k >= MIN_HITS or n >= self.rows:
            return k / n, "sample"
        sel, source = 1.0, "sample"
        for c in conjuncts:
            kc = self._hits_of([c], sample)
            kc = k if kc is None else kc
            s = kc / n if kc >= MIN_HITS else None
            if s is None:
                s = self._leaf_selectivity(c.leaf, columns)
                if s is not None:
                    source = "synopses"
                    s = min(s, (kc + 1) / n)
                else:
                    s = max(kc, 0.5) / n
            sel *= s
        return min(sel, (k + 1) / n), source

    def _leaf_selectivity(self, leaf, columns: list[int]) -> float | None:
        """The share of rows a ``column op constant`` leaf keeps, from the
        synopses; None when unknown."""
        if leaf is None or self.rows == 0:
            return None
        pos, op, values = leaf
        name = self.names[columns[pos]]
        cols = self.column_statistics(name)
        if cols is None:
            return None
        nulls = sum(c.null_count for c in cols)
        if op == "is_null":
            return nulls / self.rows
        if op == "is_not_null":
            return 1.0 - nulls / self.rows
        values = [v for v in values if v is not None]
        if not values:
            return 0.0
        kind = cols[0].kind
        if op in ("eq", "in"):
            d = self.column_distinct(name) or 1.0
            held = sum(1 for v in values if any(_holds(c, v) for c in cols))
            return min(1.0, held / d) * (1.0 - nulls / self.rows)
        kept = sum(_range_rows(c, np.diff(f.bounds), op, values[0], kind)
                   for f, c in zip(self.files, cols))
        return min(1.0, kept / self.rows)


def _holds(col, v) -> bool:
    syn = col.synopses
    for s in range(len(syn.null_counts)):
        lo, hi = syn.bounds_of(s)
        try:
            if lo is not None and lo <= v <= hi:
                return True
        except TypeError:
            return True
    return False


def _as_number(v, kind):
    if kind == STRING:
        return float(int.from_bytes(bytes(v[:8]).ljust(8, b"\0"), "big"))
    return float(v)


def _range_rows(col, rows: np.ndarray, op: str, v, kind: str) -> float:
    """Rows of one file's column estimated to satisfy ``column op v``:
    per synopsis (``rows`` per synopsis), its non-NULL rows times the
    share of [min, max] the range covers (uniform inside)."""
    syn = col.synopses
    try:
        x = _as_number(v, kind)
    except (TypeError, ValueError):
        return float(col.rows - col.null_count) * 0.5
    total = 0.0
    for s in range(len(syn.null_counts)):
        nonnull = int(rows[s]) - int(syn.null_counts[s])
        if nonnull <= 0:
            continue
        lo, hi = syn.bounds_of(s)
        if lo is None:
            total += 0.5 * nonnull
            continue
        a, b = _as_number(lo, kind), _as_number(hi, kind)
        if b <= a:                              # one value
            keep = {"lt": x > a, "le": x >= a, "gt": x < a, "ge": x <= a}[op]
            share = 1.0 if keep else 0.0
        else:
            below = min(max((x - a) / (b - a), 0.0), 1.0)
            share = below if op in ("lt", "le") else 1.0 - below
        total += share * nonnull
    return total
