"""Sort sink: multi-key ORDER BY (asc/desc, NULLS FIRST/LAST), stable, with
an optional top-N bound (ORDER BY ... LIMIT) that trims thread-local input."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector
from engine.kernels.sort import float_sort_keys, string_ranks
from engine.operators.collect import block_nbytes, concat_shared
from engine.operators.rows import take_block
from engine.pipeline import Sink
from planner.expressions import ColumnRef


def value_sort_key(vec: Vector, ascending: bool) -> np.ndarray:
    """An integer array whose order is the vector's value order (asc or desc)."""
    t = vec.type
    if t.is_string:
        key = string_ranks(vec.data, vec.heap)
        return key if ascending else -key
    dt = vec.data.dtype
    if dt == object:
        vals = np.array([0 if v is None else v for v in vec.data], dtype=object)
        key = np.unique(vals, return_inverse=True)[1].astype(np.int64).ravel()
        return key if ascending else -key
    if dt.kind == "f":
        key = float_sort_keys(vec.data)
    elif dt.kind == "u":
        key = vec.data.astype(np.uint64)
    else:
        key = vec.data.astype(np.int64)
    return key if ascending else ~key


def sort_order(block: Block, keys, tiebreak: list[np.ndarray] | None = None) -> np.ndarray:
    """Row order of block under the sort keys (stable; tiebreak arrays are
    least significant keys, most significant first)."""
    from engine.expr import evaluate
    lex: list[np.ndarray] = list(reversed(tiebreak)) if tiebreak else []
    for sk in reversed(keys):
        e = sk.expr
        vec = block.columns[e.index] if isinstance(e, ColumnRef) else evaluate(e, block)
        key = value_sort_key(vec, sk.ascending)
        if vec.nulls is not None and vec.nulls.any():
            isnull = vec.nulls.astype(bool)
            key = key.copy()
            key[isnull] = 0
            lex.append(key)
            lex.append(np.where(isnull, 0, 1) if sk.nulls_first else isnull.astype(np.int8))
        else:
            lex.append(key)
    if not lex:
        return np.arange(block.n)
    return np.lexsort(lex)


class _Local:
    def __init__(self):
        self.parts: list[tuple] = []      # (block, morsel, k, row positions)
        self.rows = 0
        self.nbytes = 0


class SortSink(Sink):
    def __init__(self, keys, types, limit: int | None = None, memory=None, block_rows=65536):
        self.keys, self.types = keys, types
        self.limit = limit                 # keep only the first `limit` rows (top-N)
        self.memory = memory
        self.trim_at = None if limit is None else max(2 * limit, block_rows, 4096)
        self.reserved = 0

    def make_local(self):
        return _Local()

    def consume(self, local, block, seq):
        m, k = seq
        tie = (np.full(block.n, m, np.int64), np.full(block.n, k, np.int64),
               np.arange(block.n, dtype=np.int64))
        local.parts.append((block, tie))
        local.rows += block.n
        nb = block_nbytes(block) + 24 * block.n
        if self.memory is not None:
            self.memory.reserve(nb, "sort input")
        local.nbytes += nb
        if self.trim_at is not None and local.rows > self.trim_at:
            self._trim(local)

    def _sorted(self, parts, limit):
        block = concat_shared([p[0] for p in parts], self.types)
        tie = [np.concatenate([p[1][j] for p in parts]) for j in range(3)]
        order = sort_order(block, self.keys, tie)
        if limit is not None:
            order = order[:limit]
        return take_block(block, order), [t[order] for t in tie]

    def _trim(self, local):
        block, tie = self._sorted(local.parts, self.limit)
        local.parts = [(block, tuple(tie))]
        local.rows = block.n
        nb = block_nbytes(block) + 24 * block.n
        if self.memory is not None:
            self.memory.release(local.nbytes - nb)
        local.nbytes = nb

    def merge(self, locals_):
        parts = [p for loc in locals_ for p in loc.parts]
        self.reserved = sum(loc.nbytes for loc in locals_)
        if not parts:
            return concat_shared([], self.types)
        block, _ = self._sorted(parts, self.limit)
        return block

    def release(self):
        if self.memory is not None:
            self.memory.release(self.reserved)
            self.reserved = 0
