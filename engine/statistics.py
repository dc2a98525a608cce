"""The engine's side of adaptive statistics: one ``StatisticsService`` per
connection, kept by its catalog.

- It owns the connection's ``stats.tables.StatisticsStore``; files are
  known by identity (path, size, modification time in ns), so a rewritten
  file has no statistics.
- ``table_statistics(files)`` is what the binder hands the planner
  (``Scan.statistics``): a ``stats.estimates.TableEstimates`` over a
  snapshot of the store, with the three callables stats/ cannot have
  (it imports neither planner/ nor engine/): ``describe`` turns filter
  conjuncts into ``column op constant`` leaves through the filter-term
  model (engine/filtering/terms.py), ``evaluate`` runs them over the
  sample rows with the scan's ``Conjunction`` (engine/expr underneath),
  and ``estimate`` makes planner.statistics.Estimate values.
- It keeps the connection's cardinality feedback (planner.feedback.
  FeedbackStore, reached by the planner through ``TableEstimates.feedback``;
  engine/analyze.py records into it when a query completes).
- The scans collect (engine/operators/scan_stats.py) and publish into the
  store; ``statistics_table(spec)`` is the ``pqdb_statistics(...)``
  table function's content.
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal

import numpy as np

from engine.block import Block, Vector
from planner.expressions import ColumnRef, column_indexes, split_conjuncts
from planner.feedback import FeedbackStore
from planner.statistics import Estimate
from planner.types import BIGINT, BOOLEAN, VARCHAR
from stats.estimates import Conjunct, TableEstimates
from stats.tables import StatisticsStore, column_nbytes

STATISTICS_COLUMNS = [("column_name", VARCHAR), ("row_count", BIGINT),
                      ("distinct_estimate", BIGINT), ("null_count", BIGINT), ("min", VARCHAR),
                      ("max", VARCHAR), ("sample_rows", BIGINT), ("synopses", BIGINT),
                      ("key_guess", BOOLEAN), ("stats_bytes", BIGINT)]


class DeferredStatistics:
    """The statistics of a hive table whose files table_info left unopened:
    the TableEstimates is made on first use, for the files the scan has
    then -- ``for_files`` (called by planner/rules/partition_pruning.py)
    narrows them to the files its filters keep -- so planning opens no
    file a filter on the partition columns rules out."""

    def __init__(self, service: "StatisticsService", files: list[str]):
        self._service = service
        self.files = list(files)
        self._estimates = None

    def for_files(self, files: list[str]) -> "DeferredStatistics":
        return DeferredStatistics(self._service, files)

    def __getattr__(self, name):
        if self._estimates is None:
            self._estimates = self._service.table_statistics_now(self.files)
        return getattr(self._estimates, name)


class StatisticsService:
    def __init__(self, catalog):
        self.catalog = catalog
        self.store = StatisticsStore()
        self.feedback = FeedbackStore()        # observed rows of subplans (planner/feedback.py)

    @property
    def enabled(self) -> bool:
        return bool(self.catalog.config.statistics)

    def identities(self, files: list[str]) -> tuple:
        return tuple(self.catalog.file_identity(p) for p in files)

    def table_statistics(self, files: list[str]):
        """A TableEstimates for the table made of ``files`` (None when
        statistics are off); a DeferredStatistics while some of them are
        not open yet (a hive table's, until partition pruning)."""
        if not self.enabled or not files:
            return None
        if self.catalog.deferred(files):
            return DeferredStatistics(self, files)
        return self.table_statistics_now(files)

    def table_statistics_now(self, files: list[str]) -> TableEstimates:
        """The TableEstimates of ``files``, opening those not open yet."""
        from engine.catalog import table_columns
        self.catalog.open_at_once(files)
        ids = self.identities(files)
        names = [n for n, _ in table_columns(self.catalog.open_file(files[0]))]
        rows = sum(int(self.catalog.open_file(p).num_rows) for p in files)
        fstats = [self.store.file(i) for i in ids]
        return TableEstimates(self.store, ids, names, rows, fstats, self.store.sample(ids),
                              describe, evaluate_on_sample, Estimate, feedback=self.feedback)

    def clear(self) -> None:
        self.store.clear()
        self.feedback.clear()

    # ---- pqdb_statistics(...) ---------------------------------------------------
    def statistics_table(self, files: list[str]) -> tuple[list, list]:
        """(columns, rows) of pqdb_statistics: one row per column of the
        table made of ``files``."""
        from engine.catalog import table_columns
        est = self.table_statistics_now(files)
        columns = table_columns(self.catalog.open_file(files[0]))
        rows_total, fstats, sample = est.rows, est.files, est.sample
        known = [i for i, (n, _) in enumerate(columns) if est.column_statistics(n) is not None]
        guess = est.key_guess(known) or ()
        out = []
        for i, (name, typ) in enumerate(columns):
            cols = est.column_statistics(name)
            d = est.column_distinct(name) if cols is not None else None
            rng = est.value_range(i) if cols is not None else None
            out.append((
                name, rows_total,
                None if d is None else int(round(d)),
                None if cols is None else sum(c.null_count for c in cols),
                None if rng is None else format_value(rng[0], typ),
                None if rng is None else format_value(rng[1], typ),
                sample.size if sample is not None and name in sample.columns else 0,
                0 if cols is None else sum(f.synopses for f in fstats),
                i in guess,
                column_nbytes(name, fstats, sample)))
        return STATISTICS_COLUMNS, out


# ---- the callables stats/estimates.py is given ---------------------------------------

def describe(filters: list, columns: list[int]) -> list[Conjunct]:
    """Conjuncts of ``filters`` for TableEstimates (see stats/estimates.py)."""
    from engine.filtering.terms import Leaf, term_of
    from planner.explain import render
    out = []
    names = [f"t{c}" for c in columns]          # positions -> table columns
    for f in filters:
        for c in split_conjuncts(f):
            term = term_of(c)
            leaf = None
            if isinstance(term, Leaf) and term.column >= 0:
                leaf = _storage_leaf(term)
            out.append(Conjunct(c, render(c, names), frozenset(column_indexes(c)), leaf))
    return out


def _storage_leaf(term) -> tuple | None:
    """(position, op, values) with values in the column's storage form."""
    from engine.filtering.pruning import bloom_values
    if term.op in ("is_null", "is_not_null"):
        return term.column, term.op, ()
    if term.op in ("eq", "in"):
        vals = bloom_values(term) if term.casts else [v for v in term.values if v is not None]
        return None if vals is None else (term.column, term.op, tuple(vals))
    if term.op in ("lt", "le", "gt", "ge"):
        v = term.values[0]
        for w in reversed(term.casts):
            if w.kind in ("scale", "date_ts"):
                v = v / w.factor
        return term.column, term.op, (v,)
    return None


def evaluate_on_sample(filters: list, sample: dict):
    """Bool mask of the sample rows passing every filter (None when they
    cannot be evaluated there)."""
    from engine.filtering.conjunction import Conjunction
    if not sample:
        return None
    n = len(next(iter(sample.values())))
    types = {}
    for f in filters:
        _column_types(f, types)
    width = max(max(types, default=-1), max(sample, default=-1)) + 1
    vectors = []
    for p in range(width):
        col = sample.get(p)
        if col is None or p not in types:
            vectors.append(Vector(BOOLEAN, np.zeros(n, np.bool_)))
            continue
        values, nulls, heap = col.storage()
        vectors.append(Vector(types[p], values, nulls, heap))
    try:
        mask, _ = Conjunction(list(filters)).mask(Block(vectors, n))
    except Exception:            # e.g. a cast that fails on some sample value
        return None
    return mask


def _column_types(expr, out: dict) -> None:
    if isinstance(expr, ColumnRef):
        out[expr.index] = expr.type
        return
    for c in expr.children():
        _column_types(c, out)


# ---- printing bounds ------------------------------------------------------------------

_EPOCH = _dt.datetime(1970, 1, 1)


def format_value(v, typ) -> str | None:
    """A storage-form bound as text (pqdb_statistics' min / max)."""
    if v is None:
        return None
    try:
        if typ.is_string:
            return bytes(v).decode("utf-8", "replace") if typ.id == "VARCHAR" else bytes(v).hex()
        if typ.is_decimal:
            return str(Decimal(int(v)).scaleb(-typ.scale))
        if typ.id == "DATE":
            return (_dt.date(1970, 1, 1) + _dt.timedelta(days=int(v))).isoformat()
        if typ.id in ("TIMESTAMP", "TIMESTAMPTZ"):
            return (_EPOCH + _dt.timedelta(microseconds=int(v))).isoformat(sep=" ")
        if typ.id == "TIMESTAMP_NS":
            return (_EPOCH + _dt.timedelta(microseconds=int(v) // 1000)).isoformat(sep=" ")
        if typ.id == "BOOLEAN":
            return "true" if v else "false"
    except (OverflowError, ValueError):
        pass
    return str(v)
