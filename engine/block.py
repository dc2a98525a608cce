"""Vectors and blocks: the unit of data every operator consumes and produces.

A Vector is one column of a block:
  type   planner.types.DataType
  data   numpy array in the type's storage (planner/types.py); for VARCHAR and
         BLOB an (n, 2) uint64 array of 16-byte string views
  nulls  None (no NULLs) or a uint8 array of length n, 1 = NULL.  The value
         slot of a NULL row holds an arbitrary value (a gap), never read.
  heap   VARCHAR/BLOB only: the uint8 buffer long strings (> 12 bytes) point
         into; None otherwise

A Block is a list of Vectors of equal length ``n``.  Blocks have a fixed row
capacity (Config.block_rows); operators work on whole blocks, never rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.types import DataType


@dataclass
class Vector:
    type: DataType
    data: np.ndarray
    nulls: np.ndarray | None = None
    heap: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.data)

    def take(self, idx: np.ndarray) -> "Vector":
        """Rows at positions idx (int array) or where idx is True (bool array)."""
        nulls = None if self.nulls is None else self.nulls[idx]
        return Vector(self.type, self.data[idx], nulls, self.heap)

    def slice(self, start: int, stop: int) -> "Vector":
        nulls = None if self.nulls is None else self.nulls[start:stop]
        return Vector(self.type, self.data[start:stop], nulls, self.heap)


@dataclass
class Block:
    columns: list[Vector]
    n: int

    def take(self, idx: np.ndarray) -> "Block":
        cols = [c.take(idx) for c in self.columns]
        n = int(idx.sum()) if idx.dtype == np.bool_ else len(idx)
        return Block(cols, n)

    def slice(self, start: int, stop: int) -> "Block":
        stop = min(stop, self.n)
        return Block([c.slice(start, stop) for c in self.columns], max(stop - start, 0))


def concat_vectors(parts: list[Vector]) -> Vector:
    """One vector holding the rows of ``parts`` in order.  String heaps are
    concatenated and long-string offsets rebased (vectorized, no row loop)."""
    if not parts:
        raise ValueError("concat_vectors needs at least one vector")
    if len(parts) == 1:
        return parts[0]
    typ = parts[0].type
    nulls = None
    if any(p.nulls is not None for p in parts):
        nulls = np.concatenate([p.nulls if p.nulls is not None
                                else np.zeros(len(p), np.uint8) for p in parts])
    if not typ.is_string:
        return Vector(typ, np.concatenate([p.data for p in parts]), nulls)
    datas, heaps, base = [], [], 0
    for p in parts:
        d = p.data
        if p.heap is not None and len(p.heap) and base:
            long_rows = (d[:, 0] & np.uint64(0xFFFFFFFF)) > 12
            if long_rows.any():
                d = d.copy()
                d[long_rows, 1] += np.uint64(base)
        datas.append(d)
        if p.heap is not None and len(p.heap):
            heaps.append(p.heap)
            base += len(p.heap)
    heap = np.concatenate(heaps) if heaps else np.zeros(0, np.uint8)
    return Vector(typ, np.concatenate(datas).reshape(-1, 2), nulls, heap)


def concat_blocks(blocks: list[Block], types: list[DataType] | None = None) -> Block:
    """All rows of ``blocks`` as one block (empty blocks allowed)."""
    blocks = [b for b in blocks if b.n > 0] or blocks[:1]
    if not blocks:
        if types is None:
            return Block([], 0)
        return Block([empty_vector(t) for t in types], 0)
    cols = [concat_vectors([b.columns[i] for b in blocks]) for i in range(len(blocks[0].columns))]
    return Block(cols, sum(b.n for b in blocks))


def empty_vector(t: DataType) -> Vector:
    if t.is_string:
        return Vector(t, np.zeros((0, 2), np.uint64), None, np.zeros(0, np.uint8))
    return Vector(t, np.zeros(0, t.numpy_dtype))
