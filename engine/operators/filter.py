"""Filter operator: keep the rows where the predicate is TRUE."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Int64WideVector, Vector
from scan.selection import compress_rows
from engine.pipeline import Operator


def select_vector(vec: Vector, mask: np.ndarray, kept: int | None = None) -> Vector:
    """Rows of vec where the bool mask is True (``kept``: their count, when
    known), or at the int64 positions ``mask`` (a scan's CodedVector keeps
    its codes either way).  Masks go through the branchless compress_rows
    kernel; positions through fancy indexing, the (n, 2) string views as a
    16-byte complex view (one element per row)."""
    if isinstance(vec, Int64WideVector):
        vec = vec.take(mask)
        if vec.nulls is not None and not vec.nulls.any():
            vec.nulls = None
        return vec
    if getattr(vec, "codes", None) is not None:     # a scan's CodedVector: codes only
        vec = vec.take(mask)
        if vec.nulls is not None and not vec.nulls.any():
            vec.nulls = None
        return vec
    data = vec.data
    if mask.dtype == np.bool_:
        if kept is None:
            kept = int(np.count_nonzero(mask))
        out = compress_rows(data, mask, kept)
        nulls = None
        if vec.nulls is not None:
            nulls = compress_rows(vec.nulls, mask, kept)
            if not nulls.any():
                nulls = None
        return Vector(vec.type, out, nulls, vec.heap, children=vec.children)
    if data.ndim == 2 and data.dtype == np.uint64 and data.shape[1] == 2 \
            and data.flags.c_contiguous:
        out = data.view(np.complex128).reshape(-1)[mask].view(np.uint64).reshape(-1, 2)
    elif data.ndim == 1:
        out = data[mask]
    else:
        out = np.take(data, mask, axis=0)
    nulls = None
    if vec.nulls is not None:
        nulls = vec.nulls[mask]
        if not nulls.any():
            nulls = None
    return Vector(vec.type, out, nulls, vec.heap, children=vec.children)


def select_block(block: Block, mask: np.ndarray) -> Block:
    """Rows of block where the bool mask is True."""
    n = int(np.count_nonzero(mask))
    return Block([select_vector(c, mask, n) for c in block.columns], n)


class FilterOperator(Operator):
    def __init__(self, predicate):
        from engine.operators.conjunction import Conjunction
        self.predicate = predicate
        self.conjunction = Conjunction([predicate])

    def process(self, block: Block) -> list[Block]:
        mask, kept = self.conjunction.mask(block)
        if kept == block.n:
            return [block]
        if kept == 0:
            return []
        return [Block([select_vector(c, mask, kept) for c in block.columns], kept)]
