"""A conjunction of restrictions evaluated block by block into one bool mask
(the scan's filters, a Filter operator's predicate).

Three kinds of conjuncts are checked by the kernels of
engine/kernels/predicates.py, each ANDing into the mask in place:
comparisons of a column with a constant, or of two columns, whose values
order like their int32/int64 storage (integers, dates, times, timestamps,
decimals of one scale); ORs of constant ranges on one such column (a
value in one of several closed intervals: Q19's quantity bands); and
comparisons, IN lists and LIKE patterns on one dictionary-coded string
column, evaluated once per dictionary entry and gathered by code.  The
other conjuncts go through the expression evaluator.  Per block that is
one kernel call per conjunct instead of a result array, an AND and an
any() per comparison: less Python per morsel, and fewer points where a
worker gives up the GIL and must take it back from the other one."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Int64WideVector, Vector
from engine.expr.vectors import coded_dictionary, literal_vector
from engine.filtering.terms import comparison_operands
from engine.kernels.predicates import (OPS, and_compare_columns, and_compare_const,
                                       and_in_ranges, and_lookup, and_not_null)
from planner.expressions import Call, ColumnRef, Expr, Literal, remap_columns, split_conjuncts

# types whose values order like their integer storage
_ORDERED_STORAGE = frozenset({"INTEGER", "BIGINT", "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ",
                              "TIMESTAMP_NS", "DECIMAL"})
_KERNEL_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _comparable(ta, tb) -> bool:
    """Values of the two types compare like their storage integers."""
    if ta.id not in _ORDERED_STORAGE or tb.id not in _ORDERED_STORAGE:
        return False
    if ta.is_decimal or tb.is_decimal:
        return (ta.is_decimal and tb.is_decimal and ta.scale == tb.scale
                and not ta.is_wide_decimal and not tb.is_wide_decimal)
    if ta.id == tb.id:
        return True
    return ta.id in ("INTEGER", "BIGINT") and tb.id in ("INTEGER", "BIGINT")


def _leaf(e: Expr):
    """(expr, column, other column or -1, op code, constant) of a comparison
    the kernels can check, else None."""
    operands = comparison_operands(e)
    if operands is None:
        return None
    a, op, b = operands
    if not isinstance(a, ColumnRef) or not _comparable(a.type, b.type):
        return None
    if isinstance(b, ColumnRef):
        return (e, a.index, b.index, OPS[op], 0)
    if not isinstance(b, Literal) or b.value is None:
        return None
    data = literal_vector(b.value, b.type, 1).data
    if data.dtype not in _KERNEL_DTYPES:
        return None
    return (e, a.index, -1, OPS[op], int(data[0]))


def _plain(vec) -> bool:
    """The vector's values are a 1-d int32/int64 array the kernels can read."""
    if isinstance(vec, Int64WideVector):
        return False
    data = vec.data
    return isinstance(data, np.ndarray) and data.ndim == 1 and data.dtype in _KERNEL_DTYPES


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _ranges(e: Expr):
    """(expr, column, los, his) when ``e`` is an OR whose every branch
    compares one column with constants (an AND of comparisons, none of them
    <>): the column must lie in one of the closed intervals.  Else None."""
    if not (isinstance(e, Call) and e.func == "or"):
        return None
    column, los, his = None, [], []
    for branch in e.args:
        lo, hi = _INT64_MIN, _INT64_MAX
        for c in split_conjuncts(branch):
            leaf = _leaf(c)
            if leaf is None or leaf[2] >= 0 or (column is not None and leaf[1] != column):
                return None
            column, op, v = leaf[1], leaf[3], leaf[4]
            if op == OPS["ne"]:
                return None
            if op in (OPS["eq"], OPS["ge"], OPS["gt"]):
                lo = max(lo, v + (op == OPS["gt"]))
            if op in (OPS["eq"], OPS["le"], OPS["lt"]):
                hi = min(hi, v - (op == OPS["lt"]))
        if lo <= hi:
            los.append(lo)
            his.append(hi)
    return e, column, np.array(los, np.int64), np.array(his, np.int64)


# predicates over one string column that are evaluated once per dictionary
# entry (none of them can fail on a value no row of the block holds)
_DICTIONARY_FUNCS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "in_list", "like", "ilike",
                               "not", "and", "or"})


def _dictionary_predicate(e: Expr):
    """(expr, column, expr over column 0) when ``e`` is built only of
    _DICTIONARY_FUNCS over one string column and constants.  Else None."""
    columns = set()

    def ok(x) -> bool:
        if isinstance(x, ColumnRef):
            columns.add(x.index)
            return x.type.is_string
        if isinstance(x, Literal):
            return True
        return (isinstance(x, Call) and x.func in _DICTIONARY_FUNCS
                and all(ok(a) for a in x.args))
    if not isinstance(e, Call) or not ok(e) or len(columns) != 1:
        return None
    (column,) = columns
    return e, column, remap_columns(e, {column: 0})


class Conjunction:
    """Restrictions that must all be TRUE (NULL and FALSE drop a row).

    Kernel conjuncts, checked first: comparisons (column vs constant or
    column), ORs of constant ranges on one column (Q19's quantity bands),
    and predicates on one dictionary-coded string column (evaluated per
    dictionary entry, gathered by code in the same pass that ANDs)."""

    def __init__(self, exprs: list[Expr]):
        from engine.expr import evaluate_predicate
        self._evaluate_predicate = evaluate_predicate
        self.leaves = []            # comparisons for the kernels, in the given order
        self.ranges = []            # (expr, column, los, his)
        self.coded = []             # (expr, column, expr over column 0)
        self.rest = []              # the other conjuncts, evaluated after them
        for e in exprs:
            for c in split_conjuncts(e):
                leaf = _leaf(c)
                if leaf is not None:
                    self.leaves.append(leaf)
                    continue
                ranges = _ranges(c)
                if ranges is not None:
                    self.ranges.append(ranges)
                    continue
                coded = _dictionary_predicate(c)
                if coded is not None:
                    self.coded.append(coded)
                else:
                    self.rest.append(c)

    def mask(self, block: Block) -> tuple[np.ndarray, int]:
        """(bool mask of the rows where every restriction holds, their count)."""
        n = block.n
        mask = np.empty(n, np.bool_)
        kept, first = n, True
        cols = block.columns
        for expr, i, j, op, c in self.leaves:
            a = cols[i]
            b = cols[j] if j >= 0 else None
            if not _plain(a) or (b is not None and not _plain(b)):
                kept = self._and_evaluated(expr, block, mask, first)
            else:
                if b is None:
                    kept = and_compare_const(a.data, op, c, mask, first)
                else:
                    kept = and_compare_columns(a.data, b.data, op, mask, first)
                kept = _and_not_null(kept, mask, a, b)
            first = False
            if kept == 0:
                return mask, 0
        for expr, i, los, his in self.ranges:
            a = cols[i]
            if not _plain(a):
                kept = self._and_evaluated(expr, block, mask, first)
            else:
                kept = _and_not_null(and_in_ranges(a.data, los, his, mask, first), mask, a)
            first = False
            if kept == 0:
                return mask, 0
        for expr, i, on_entries in self.coded:
            vec = cols[i]
            dictionary = coded_dictionary(vec)
            if dictionary is None:
                kept = self._and_evaluated(expr, block, mask, first)
            else:
                entries = Block([Vector(vec.type, dictionary, None, vec.heap)], len(dictionary))
                hit = np.asarray(self._evaluate_predicate(on_entries, entries), dtype=bool)
                kept = and_lookup(vec.codes, hit, mask, first)
            first = False
            if kept == 0:
                return mask, 0
        for expr in self.rest:
            kept = self._and_evaluated(expr, block, mask, first)
            first = False
            if kept == 0:
                return mask, 0
        if first:
            mask[:] = True
        return mask, kept

    def _and_evaluated(self, expr, block, mask, first) -> int:
        m = np.asarray(self._evaluate_predicate(expr, block), dtype=bool)
        if first:
            mask[:] = m
        else:
            np.logical_and(mask, m, out=mask)
        return int(np.count_nonzero(mask))


def _and_not_null(kept: int, mask, *vectors) -> int:
    """Rows where a compared vector is NULL dropped from the mask."""
    for v in vectors:
        if v is not None and v.nulls is not None and kept:
            kept = and_not_null(v.nulls, mask)
    return kept
