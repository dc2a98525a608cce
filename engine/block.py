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
