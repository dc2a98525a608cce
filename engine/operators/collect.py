"""Collect sink: every block, in morsel order (in completion order when the
sink's keep_order is off), as one Block.

Memory: a held block counts its value and NULL arrays, and the string heaps
and nested children it points into once each (blocks of one row group share
their heap: ``HeldBytes``).  The merge concatenates column by column, and
each column's parts are dropped as soon as the column is made
(``concat_counted``): the transient is one column, and it is reserved."""

from __future__ import annotations

import threading

import numpy as np

from engine.block import (Block, Int64WideVector, Vector, concat_vectors, concat_views,
                          empty_vector)
from engine.context import check_cancel
from engine.pipeline import Sink

# bytes of one Python int of an object column (DECIMAL(38), HUGEINT values)
_OBJECT_BYTES = 40


class HeldBytes:
    """Counts what held blocks keep alive: arrays, and each heap and nested
    child (by identity) once.  Thread-safe; the sink holding the blocks
    keeps the objects whose ids it remembers alive."""

    def __init__(self):
        self.seen: set[int] = set()
        self._lock = threading.Lock()

    def block(self, block: Block) -> int:
        with self._lock:
            return sum(vector_nbytes(c, self.seen) for c in block.columns)

    def vector(self, vec: Vector) -> int:
        with self._lock:
            return vector_nbytes(vec, self.seen)

    def clear(self) -> None:
        with self._lock:
            self.seen.clear()


def vector_nbytes(c: Vector, seen: set | None = None) -> int:
    """Bytes of a vector's arrays; with ``seen`` (ids counted already) also
    its heap and children not in it (added to it)."""
    if isinstance(c, Int64WideVector):
        total = c.ints.nbytes
    else:
        data = c.data
        if data.ndim and data.strides[0] == 0:
            total = 0                  # a zero-stride placeholder holds one value
        else:
            total = data.nbytes if data.dtype != object else _OBJECT_BYTES * len(data)
    codes = getattr(c, "codes", None)        # a scan's CodedVector keeps its codes too
    if codes is not None:
        total += codes.nbytes
    if c.nulls is not None:
        total += c.nulls.nbytes
    if seen is not None:
        heap = c.heap
        if heap is not None and len(heap) and id(heap) not in seen:
            seen.add(id(heap))
            total += heap.nbytes
        for child in c.children or ():
            if id(child) not in seen:
                seen.add(id(child))
                total += vector_nbytes(child, seen)
    return total


def held_nbytes(block: Block) -> int:
    """Bytes a block keeps alive: its arrays, heaps and children."""
    seen: set = set()
    return sum(vector_nbytes(c, seen) for c in block.columns)


class CollectSink(Sink):
    def __init__(self, types, memory=None, what="materialized intermediate"):
        self.types = types
        self.memory = memory
        self.what = what
        self.reserved = 0
        self.held = HeldBytes()

    def consume(self, local, block: Block, seq: tuple) -> None:
        if self.memory is not None:
            nb = self.held.block(block)
            self.memory.reserve(nb, self.what)
            local.append((seq, block, nb))
        else:
            local.append((seq, block, 0))

    def merge(self, locals_: list) -> Block:
        parts = [p for loc in locals_ for p in loc]
        if self.keep_order:
            parts.sort(key=lambda p: p[0])
        for loc in locals_:            # the parts go as their columns are concatenated
            loc.clear()
        held = sum(p[2] for p in parts)
        blocks = [p[1] for p in parts]
        del parts
        self.held.clear()
        block, self.reserved = concat_counted(blocks, self.types, self.memory, held, self.what)
        return block

    def release(self):
        if self.memory is not None:
            self.memory.release(self.reserved)
            self.reserved = 0


def block_nbytes(block: Block) -> int:
    """Bytes of a block's value and null arrays (heaps and children not
    counted: see HeldBytes for what a held block keeps alive)."""
    return sum(vector_nbytes(c, None) for c in block.columns)


class Holding:
    """A reservation of ``memory`` that grows and shrinks (never below zero:
    it cannot give back another operator's bytes).  Thread-safe."""

    def __init__(self, memory, held: int, what: str):
        self.memory, self.held, self.what = memory, held, what
        self._lock = threading.Lock()

    def grow(self, nbytes: int) -> None:
        if nbytes > 0:
            self.memory.reserve(nbytes, self.what)
            with self._lock:
                self.held += nbytes

    def shrink(self, nbytes: int) -> None:
        with self._lock:
            nbytes = min(max(nbytes, 0), self.held)
            self.held -= nbytes
        self.memory.release(nbytes)

    def settle(self, target: int) -> int:
        """Make the reservation ``target`` bytes; returns it."""
        if target > self.held:
            self.grow(target - self.held)
        else:
            self.shrink(self.held - target)
        return target


def concat_column_counted(blocks: list[Block], i: int, t, holding: Holding | None) -> Vector:
    """Column i of ``blocks`` concatenated, its bytes reserved first, the
    parts' columns dropped after (the blocks' column i becomes None).  A
    string column whose parts share one heap keeps it (no copy)."""
    parts = [b.columns[i] for b in blocks]
    if len(parts) == 1:
        return parts[0]
    check_cancel()
    seen: set = set()
    before = sum(vector_nbytes(p, seen) for p in parts)     # each heap once
    shared = 0
    if t.is_string:
        heap = parts[0].heap
        if heap is not None and len(heap) and all(p.heap is heap for p in parts):
            shared = heap.nbytes
    if holding is not None:
        holding.grow(before - shared)                       # what the concatenation allocates
    col = _concat_strings(parts) if t.is_string else concat_vectors(parts)
    del parts
    for b in blocks:
        b.columns[i] = None
    if holding is not None:
        holding.shrink(before - shared)                     # the parts' arrays, gone now
    return col


def concat_counted(blocks: list[Block], types, memory, held: int, what: str):
    """(one block of ``blocks``' rows, the bytes reserved for it).  ``held``:
    what the blocks are reserved for now; that reservation becomes the
    result's.  Column by column (concat_column_counted), so the parts and
    the result are never both held whole."""
    blocks = [b for b in blocks if b.n]
    if memory is None:
        return concat_shared(blocks, types), 0
    holding = Holding(memory, held, what)
    if len(blocks) <= 1:
        out = concat_shared(blocks, types)
    else:
        out = Block([concat_column_counted(blocks, i, t, holding) for i, t in enumerate(types)],
                    sum(b.n for b in blocks))
    return out, holding.settle(held_nbytes(out))


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
    nulls = None
    if any(p.nulls is not None for p in parts):
        nulls = np.concatenate([p.nulls if p.nulls is not None else np.zeros(len(p), np.uint8)
                                for p in parts])
    views, heap = concat_views(parts)
    return Vector(parts[0].type, views, nulls, heap)


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
    from engine.kernels.strings import concat_rebased
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
