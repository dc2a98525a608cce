"""Scan source: Parquet row groups -> blocks, with pushed-down filters and
row-group pruning by footer min/max."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.block import Block, Vector
from engine.errors import FileFormatError
from engine.operators.filter import select_vector
from engine.pipeline import Source
from planner.expressions import Call, ColumnRef, Literal, column_indexes, remap_columns
from planner.logical import Scan

_FLIP = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


@dataclass
class CodedVector(Vector):
    """A string Vector that also carries the dictionary codes it was decoded
    from (int32 per row) and the dictionary's views (over ``heap``), so
    operators can work on codes (group-by).  ``data`` holds the decoded
    views as usual; anything that builds a new plain Vector simply drops the
    codes."""
    codes: np.ndarray | None = None
    dictionary: np.ndarray | None = None

    def slice(self, start: int, stop: int) -> "CodedVector":
        nulls = None if self.nulls is None else self.nulls[start:stop]
        return CodedVector(self.type, self.data[start:stop], nulls, self.heap,
                           self.codes[start:stop], self.dictionary)


def column_vector(pf, rg: int, file_col: int, typ, rows=None) -> Vector:
    """One column chunk of a row group as a Vector (only the rows where the
    bool mask ``rows`` is True, when given); string columns stored as
    dictionary pages come as CodedVectors."""
    if typ.is_string:
        cd = pf.read_column(rg, file_col, rows, codes=True)
        if cd.codes is not None and cd.nulls is None:
            return CodedVector(typ, cd.values, None, cd.heap, cd.codes, cd.dictionary)
    else:
        cd = pf.read_column(rg, file_col) if rows is None else pf.read_column(rg, file_col, rows)
    nulls = cd.nulls
    if nulls is not None:
        nulls = nulls.view(np.uint8) if nulls.dtype == np.bool_ else nulls.astype(np.uint8, copy=False)
        if not nulls.any():
            nulls = None
    heap = cd.heap if typ.is_string else None
    if typ.is_string and heap is None:
        heap = np.zeros(0, np.uint8)
    return Vector(typ, cd.values, nulls, heap)


def _comparable(col_type, lit_type) -> bool:
    if col_type.is_integer and lit_type.is_integer:
        return True
    if col_type.is_decimal and lit_type.is_decimal:
        return col_type.scale == lit_type.scale
    if col_type.is_string and lit_type.is_string:
        return True
    return col_type == lit_type


def _norm(value):
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def prunable_conjuncts(filters) -> list[tuple[int, str, object]]:
    """(schema index, op, literal value) of every conjunct `col op literal`."""
    out = []
    for f in filters:
        if not (isinstance(f, Call) and f.func in _FLIP and len(f.args) == 2):
            continue
        a, b = f.args
        op = f.func
        if isinstance(b, ColumnRef) and isinstance(a, Literal):
            a, b, op = b, a, _FLIP[op]
        if isinstance(a, ColumnRef) and isinstance(b, Literal) and _comparable(a.type, b.type):
            out.append((a.index, op, b.value))
    return out


def row_group_may_match(rg_meta, conjuncts, file_cols, types) -> bool:
    """False only when footer statistics prove no row satisfies some conjunct."""
    num_rows = rg_meta.num_rows
    for idx, op, value in conjuncts:
        if value is None:
            return False                     # comparison with NULL is never true
        try:
            st = rg_meta.columns[file_cols[idx]]
        except (IndexError, AttributeError):
            continue
        nc = getattr(st, "null_count", None)
        if nc is not None and num_rows > 0 and nc >= num_rows:
            return False                     # all NULL: no comparison is true
        lo, hi = getattr(st, "stats_min", None), getattr(st, "stats_max", None)
        if lo is None or hi is None:
            continue
        lo, hi, v = _norm(lo), _norm(hi), _norm(value)
        if types[idx].is_float:
            if isinstance(lo, float) and (np.isnan(lo) or np.isnan(hi)):
                continue
            if isinstance(v, float) and np.isnan(v):
                continue
        try:
            if op == "eq" and (v < lo or v > hi):
                return False
            if op == "lt" and not lo < v:
                return False
            if op == "le" and not lo <= v:
                return False
            if op == "gt" and not hi > v:
                return False
            if op == "ge" and not hi >= v:
                return False
        except TypeError:
            continue
    return True


class ScanSource(Source):
    """Morsel = one row group of one file; blocks are cut to block_rows."""

    def __init__(self, node: Scan, ctx):
        from engine.expr import evaluate_predicate
        self._evaluate_predicate = evaluate_predicate
        self.node, self.ctx = node, ctx
        self.block_rows = ctx.config.block_rows
        self.types = [f.type for f in node.schema]
        self.filters = list(node.filters)
        self.filter_cols = sorted(set().union(*[column_indexes(f) for f in self.filters])) \
            if self.filters else []
        remap = {c: i for i, c in enumerate(self.filter_cols)}
        self.compact_filters = [remap_columns(f, remap) for f in self.filters]
        self.conjuncts = prunable_conjuncts(self.filters)
        self.rows_pruned = 0
        self.row_groups_pruned = 0

    def _file_columns(self, path, pf) -> list[int]:
        by_name = {c.name: i for i, c in enumerate(pf.columns)}
        lower = {c.name.lower(): i for i, c in enumerate(pf.columns)}
        out = []
        for f in self.node.schema:
            i = by_name.get(f.name, lower.get(f.name.lower()))
            if i is None:
                raise FileFormatError(f"file lacks column {f.name!r} of the table",
                                      file=path, column=f.name)
            out.append(i)
        return out

    def morsels(self) -> list:
        out = []
        for path in self.node.files:
            pf = self.ctx.open_file(path)
            cols = self._file_columns(path, pf)
            for rg, meta in enumerate(pf.row_groups):
                if meta.num_rows == 0:
                    continue
                if self.conjuncts and not row_group_may_match(meta, self.conjuncts, cols, self.types):
                    self.row_groups_pruned += 1
                    continue
                out.append((path, rg, cols, meta.num_rows))
        return out

    def blocks(self, morsel):
        path, rg, cols, num_rows = morsel
        pf = self.ctx.open_file(path)
        br = self.block_rows
        if not self.filters:
            vecs = [column_vector(pf, rg, cols[i], t) for i, t in enumerate(self.types)]
            n = len(vecs[0]) if vecs else num_rows
            full = Block(vecs, n)
            for start in range(0, n, br):
                yield full.slice(start, start + br)
            return
        # restricted columns first; other columns only when rows survive
        fvecs = [column_vector(pf, rg, cols[c], self.types[c]) for c in self.filter_cols]
        n = len(fvecs[0]) if fvecs else num_rows
        fblock = Block(fvecs, n)
        masks = []
        for start in range(0, n, br):
            part = fblock.slice(start, start + br)
            mask = None
            for f in self.compact_filters:
                m = np.asarray(self._evaluate_predicate(f, part), dtype=bool)
                mask = m if mask is None else (mask & m)
                if not mask.any():
                    break
            masks.append(mask)
        if not any(m.any() for m in masks):
            return
        rows = masks[0] if len(masks) == 1 else np.concatenate(masks)
        if rows.all():
            rows = None
        # the other columns decode only the surviving rows
        have = dict(zip(self.filter_cols, fvecs))
        vecs = [(have[i] if rows is None else select_vector(have[i], rows)) if i in have
                else column_vector(pf, rg, cols[i], t, rows)
                for i, t in enumerate(self.types)]
        kept = n if rows is None else int(np.count_nonzero(rows))
        full = Block(vecs, kept)
        for start in range(0, kept, br):
            yield full.slice(start, start + br)
