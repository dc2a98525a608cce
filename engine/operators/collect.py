"""Collect sink: every block, in morsel order (in completion order when the
sink's keep_order is off), as one Block."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Int64WideVector, Vector, concat_vectors, empty_vector
from engine.kernels.strings import concat_rebased
from engine.pipeline import Sink


class CollectSink(Sink):
    def __init__(self, types, memory=None, what="materialized intermediate"):
        self.types = types
        self.memory = memory
        self.what = what
        self.reserved = 0

    def consume(self, local, block: Block, seq: tuple) -> None:
        if self.memory is not None:
            nb = block_nbytes(block)
            self.memory.reserve(nb, self.what)
            local.append((seq, block, nb))
        else:
            local.append((seq, block, 0))

    def merge(self, locals_: list) -> Block:
        parts = [p for loc in locals_ for p in loc]
        if self.keep_order:
            parts.sort(key=lambda p: p[0])
        self.reserved = sum(p[2] for p in parts)
        return concat_shared([p[1] for p in parts], self.types)

    def release(self):
        if self.memory is not None:
            self.memory.release(self.reserved)
            self.reserved = 0


def block_nbytes(block: Block) -> int:
    """Bytes of a block's value and null arrays (heaps shared with the file
    cache are not counted)."""
    total = 0
    for c in block.columns:
        if isinstance(c, Int64WideVector):
            total += c.ints.nbytes
        else:
            total += c.data.nbytes if c.data.dtype != object else 16 * len(c.data)
        if c.nulls is not None:
            total += c.nulls.nbytes
    return total


def concat_shared(blocks: list[Block], types) -> Block:
    """concat_blocks, but string columns whose parts share one heap object
    (slices of one row group) keep a single copy of that heap."""
    blocks = [b for b in blocks if b.n > 0]
    if not blocks:
        return Block([empty_vector(t) for t in types], 0)
    if len(blocks) == 1:
        return blocks[0]
    cols = []
    for i in range(len(blocks[0].columns)):
        parts = [b.columns[i] for b in blocks]
        cols.append(_concat_strings(parts) if parts[0].type.is_string else concat_vectors(parts))
    return Block(cols, sum(b.n for b in blocks))


def _concat_strings(parts: list[Vector]) -> Vector:
    bases, heaps, base = {}, [], 0
    datas = []
    for p in parts:
        heap = p.heap if p.heap is not None else None
        d = p.data
        if heap is not None and len(heap):
            key = id(heap)
            if key not in bases:
                bases[key] = base
                heaps.append(heap)
                base += len(heap)
            off = bases[key]
            if off:
                long_rows = (d[:, 0] & np.uint64(0xFFFFFFFF)) > 12
                if long_rows.any():
                    d = d.copy()
                    d[long_rows, 1] += np.uint64(off)
        datas.append(d)
    nulls = None
    if any(p.nulls is not None for p in parts):
        nulls = np.concatenate([p.nulls if p.nulls is not None else np.zeros(len(p), np.uint8)
                                for p in parts])
    heap = (heaps[0] if len(heaps) == 1 else np.concatenate(heaps)) if heaps \
        else np.zeros(0, np.uint8)
    return Vector(parts[0].type, np.concatenate(datas).reshape(-1, 2), nulls, heap)


def concat_consumed(blocks: list[Block], types) -> Block:
    """One block from ``blocks`` (which it empties), column by column: each
    column's parts are dropped once concatenated, so the parts and the
    result are never both held whole.  String columns whose parts share
    their heaps (a partition's key columns) share one concatenated heap."""
    blocks = [b for b in blocks if b.n]
    if len(blocks) <= 1:
        return blocks[0] if blocks else concat_shared([], types)
    shared: list = []            # (the parts' heaps, their concatenation, bases)
    cols = []
    for i, t in enumerate(types):
        parts = [b.columns[i] for b in blocks]
        if t.is_string:
            cols.append(_concat_strings_sharing(parts, shared))
        else:
            cols.append(concat_vectors(parts))
        del parts
        for b in blocks:
            b.columns[i] = None
    return Block(cols, sum(b.n for b in blocks))


def _concat_strings_sharing(parts: list[Vector], shared: list) -> Vector:
    heaps = [p.heap if p.heap is not None else _NO_HEAP for p in parts]
    for seen, heap, bases in shared:
        if all(a is b for a, b in zip(seen, heaps)):
            break
    else:
        bases = np.cumsum([0] + [len(h) for h in heaps[:-1]])
        heap = np.concatenate(heaps)
        shared.append((heaps, heap, bases))
    views = concat_rebased([p.data for p in parts], [int(b) for b in bases])
    nulls = None
    if any(p.nulls is not None for p in parts):
        nulls = np.concatenate([p.nulls if p.nulls is not None else np.zeros(len(p), np.uint8)
                                for p in parts])
    return Vector(parts[0].type, views, nulls, heap)


_NO_HEAP = np.zeros(0, np.uint8)
