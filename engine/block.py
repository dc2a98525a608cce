"""Vectors and blocks: the unit of data every operator consumes and produces.

A Vector is one column of a block:
  type   planner.types.DataType
  data   numpy array in the type's storage (planner/types.py); for VARCHAR and
         BLOB an (n, 2) uint64 array of 16-byte string views
  nulls  None (no NULLs) or a uint8 array of length n, 1 = NULL.  The value
         slot of a NULL row holds an arbitrary value (a gap), never read.
  heap   VARCHAR/BLOB only: the uint8 buffer long strings (> 12 bytes) point
         into; None otherwise
  children  LIST / MAP / STRUCT only (planner/types.py "Nested storage"):
         LIST [elements], MAP [keys, values], STRUCT [one per field].  ``data``
         points into them like string views point into a heap: LIST/MAP rows
         are (n, 2) int64 (start, length), STRUCT rows int64 child row
         indexes; NULL rows hold (0, 0) / 0.  take/slice/filter copy no child.

A Block is a list of Vectors of equal length ``n``.  Blocks have a fixed row
capacity (Config.block_rows); operators work on whole blocks, never rows.

Row selection for operators and expressions: ``take_vector`` / ``take_block``
(bool masks through the branchless scan.selection.compress_rows, positions
through np.take along axis 0, several times faster than fancy indexing on
the (n, 2) string views); ``null_vector`` makes n NULLs of a flat type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.types import DataType


@dataclass
class Vector:
    type: DataType
    data: np.ndarray
    nulls: np.ndarray | None = None
    heap: np.ndarray | None = None
    children: list | None = field(default=None, kw_only=True)   # keyword: CodedVector adds fields

    def __len__(self) -> int:
        return len(self.data)

    def take(self, idx: np.ndarray, kept: int | None = None) -> "Vector":
        """Rows at positions idx (int array) or where idx is True (bool array
        keeping ``kept`` rows, counted when not given)."""
        data, nulls = rows_of([self.data, self.nulls], idx, kept)
        return Vector(self.type, data, nulls, self.heap, children=self.children)

    def slice(self, start: int, stop: int) -> "Vector":
        nulls = None if self.nulls is None else self.nulls[start:stop]
        return Vector(self.type, self.data[start:stop], nulls, self.heap, children=self.children)


class Int64WideVector(Vector):
    """A vector of a type stored as Python ints (DECIMAL wider than 18
    digits, HUGEINT) whose values all fit in int64, held as the int64 array
    ``ints``.  Sums of DECIMAL columns are such vectors: their type is
    DECIMAL(38, s) but nearly always their values are small.

    Code that knows this class works on ``ints`` (comparisons, sort keys,
    row selection, concatenation, +-*, casts): no Python int is made.  Any
    other code reads ``data`` as usual and gets the object array, built on
    first use and read-only, so a stale ``ints`` can never disagree with it.
    NULL slots hold some int64 (a gap, as in every vector)."""

    def __init__(self, type: DataType, ints: np.ndarray, nulls: np.ndarray | None = None):
        self.type = type
        self.ints = ints
        self.nulls = nulls
        self.heap = None
        self.children = None
        self._objects = None

    @property
    def data(self) -> np.ndarray:
        if self._objects is None:
            objects = self.ints.astype(object)
            objects.flags.writeable = False
            self._objects = objects
        return self._objects

    def __len__(self) -> int:
        return len(self.ints)

    def take(self, idx: np.ndarray, kept: int | None = None) -> "Int64WideVector":
        """Rows idx (positions, or a bool mask keeping ``kept`` rows)."""
        return Int64WideVector(self.type, *rows_of([self.ints, self.nulls], idx, kept))

    def slice(self, start: int, stop: int) -> "Int64WideVector":
        nulls = None if self.nulls is None else self.nulls[start:stop]
        return Int64WideVector(self.type, self.ints[start:stop], nulls)


def rows_of(arrays: list, idx: np.ndarray, kept: int | None = None) -> list:
    """Each array (or None) at rows idx: positions, or a bool mask (through
    the branchless scan.selection.compress_rows; ``kept``: its count)."""
    if idx.dtype == np.bool_:
        if kept is None:
            kept = int(np.count_nonzero(idx))
        from scan.selection import compress_rows        # numba: loaded on first use
        return [None if a is None else compress_rows(a, idx, kept) for a in arrays]
    return [None if a is None else a[idx] for a in arrays]


def int64_values(vec: Vector) -> np.ndarray | None:
    """The vector's values as an int64-compatible integer array without
    building Python ints: ``ints`` of an Int64WideVector, or the data of a
    fixed-width signed integer (or narrow DECIMAL) vector; None otherwise."""
    if isinstance(vec, Int64WideVector):
        return vec.ints
    data = vec.data
    return data if data.dtype.kind == "i" else None


@dataclass
class Block:
    columns: list[Vector]
    n: int

    def take(self, idx: np.ndarray) -> "Block":
        n = int(np.count_nonzero(idx)) if idx.dtype == np.bool_ else len(idx)
        return Block([c.take(idx, n) for c in self.columns], n)

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
    if typ.is_nested:
        return _concat_nested(typ, parts, nulls)
    if all(isinstance(p, Int64WideVector) for p in parts):
        return Int64WideVector(typ, np.concatenate([p.ints for p in parts]), nulls)
    if not typ.is_string:
        return Vector(typ, np.concatenate([p.data for p in parts]), nulls)
    views, heap = concat_views(parts)
    return Vector(typ, views, nulls, heap)


def concat_views(parts: list[Vector]) -> tuple[np.ndarray, np.ndarray]:
    """(views, heap) of string vectors' rows in order: each distinct heap
    (by identity) once, long-string offsets rebased; when the parts point
    into several heaps far larger than the strings they use (rows taken
    from a big table), only the used strings are copied
    (engine/kernels/heaps.py)."""
    from engine.kernels.heaps import compacted, should_compact
    views = [p.data for p in parts]
    nulls = [None if p.nulls is None else p.nulls.view(np.bool_) for p in parts]
    heaps = [p.heap for p in parts]
    if should_compact(views, heaps, nulls):
        datas, heap = compacted(views, heaps, nulls)
        return np.concatenate(datas).reshape(-1, 2), heap
    datas, bases, distinct, base = [], {}, [], 0
    for p in parts:
        d = p.data
        heap = p.heap
        if heap is not None and len(heap):
            if id(heap) not in bases:
                bases[id(heap)] = base
                distinct.append(heap)
                base += len(heap)
            off = bases[id(heap)]
            if off:
                long_rows = (d[:, 0] & np.uint64(0xFFFFFFFF)) > 12
                if long_rows.any():
                    d = d.copy()
                    d[long_rows, 1] += np.uint64(off)
        datas.append(d)
    heap = (distinct[0] if len(distinct) == 1 else np.concatenate(distinct)) if distinct \
        else np.zeros(0, np.uint8)
    return np.concatenate(datas).reshape(-1, 2), heap


def _concat_nested(typ: DataType, parts: list[Vector], nulls) -> Vector:
    """Nested rows: children concatenated, starts / row indexes rebased."""
    datas, base = [], 0
    for p in parts:
        d = p.data
        if base:
            d = d.copy()
            if typ.id == "STRUCT":
                d += base
            else:
                d[:, 0] += base
        datas.append(d)
        base += len(p.children[0]) if p.children else 0
    kids = [concat_vectors([p.children[k] for p in parts]) for k in range(len(parts[0].children))]
    data = np.concatenate(datas)
    if typ.id != "STRUCT":
        data = data.reshape(-1, 2)
    return Vector(typ, data, nulls, None, children=kids)


def concat_blocks(blocks: list[Block], types: list[DataType] | None = None) -> Block:
    """All rows of ``blocks`` as one block (empty blocks allowed)."""
    blocks = [b for b in blocks if b.n > 0] or blocks[:1]
    if not blocks:
        if types is None:
            return Block([], 0)
        return Block([empty_vector(t) for t in types], 0)
    cols = [concat_vectors([b.columns[i] for b in blocks]) for i in range(len(blocks[0].columns))]
    return Block(cols, sum(b.n for b in blocks))


def null_vector(t, n: int) -> Vector:
    """n NULLs of type t."""
    nulls = np.ones(n, np.uint8)
    if t.is_string:
        return Vector(t, np.zeros((n, 2), np.uint64), nulls, np.zeros(0, np.uint8))
    if t.numpy_dtype == object:
        return Vector(t, np.full(n, 0, dtype=object), nulls)
    return Vector(t, np.zeros(n, t.numpy_dtype), nulls)


def empty_vector(t: DataType) -> Vector:
    if t.is_nested:
        shape = (0,) if t.id == "STRUCT" else (0, 2)
        return Vector(t, np.zeros(shape, np.int64), None, None,
                      children=[empty_vector(ct) for _, ct in t.children])
    if t.is_string:
        return Vector(t, np.zeros((0, 2), np.uint64), None, np.zeros(0, np.uint8))
    return Vector(t, np.zeros(0, t.numpy_dtype))


def take_vector(vec: Vector, idx: np.ndarray, kept: int | None = None) -> Vector:
    """Rows idx (int array) or where idx is True (bool array; ``kept``: its
    count, when known).  A scan's CodedVector takes its codes only."""
    if isinstance(vec, Int64WideVector) or getattr(vec, "codes", None) is not None:
        vec = vec.take(idx, kept)
        if vec.nulls is not None and not vec.nulls.any():
            vec.nulls = None
        return vec
    if idx.dtype == np.bool_:
        if kept is None:
            kept = int(np.count_nonzero(idx))
        from scan.selection import compress_rows
        data = compress_rows(vec.data, idx, kept)
        nulls = None if vec.nulls is None else compress_rows(vec.nulls, idx, kept)
    else:
        data = np.take(vec.data, idx, axis=0)
        nulls = None if vec.nulls is None else np.take(vec.nulls, idx)
    if nulls is not None and not nulls.any():
        nulls = None
    return Vector(vec.type, data, nulls, vec.heap, children=vec.children)


def take_block(block: Block, idx: np.ndarray) -> Block:
    n = int(np.count_nonzero(idx)) if idx.dtype == np.bool_ else len(idx)
    return Block([take_vector(c, idx, n) for c in block.columns], n)
