"""The row sample of a table: the values of its columns at (by default)
1024 row positions, drawn once.

Positions index the table's rows over all its files in order (file 0's
rows first).  They are drawn without replacement by a generator seeded
from the files' identities (path, size, modification time), and sorted:
the same files give the same sample in every process, and a rewritten
file gives another.  A table of no more rows than the sample size is its
own sample.

Each morsel of a scan knows its row range, so it finds the positions
inside it (``positions_in``) and fills their slots for the columns it
decodes: no two morsels write the same slot, and the sample is the same
whatever the thread count.  A column joins the sample when a scan first
reads it; the positions stay.
"""

from __future__ import annotations

import numpy as np
import xxhash

from stats.columns import STRING, ColumnBlock, PackedBytes, scatter_bytes, views_bytes

SAMPLE_SIZE = 1024


def table_seed(identities) -> int:
    """A 64-bit seed from the files' identities (path, size, mtime)."""
    return xxhash.xxh64_intdigest(repr(tuple(tuple(i) for i in identities)).encode())


def sample_positions(total_rows: int, size: int, seed: int) -> np.ndarray:
    """``size`` distinct row positions in [0, total_rows), sorted (all rows
    when there are no more)."""
    if total_rows <= size:
        return np.arange(total_rows, dtype=np.int64)
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.sort(rng.choice(total_rows, size=size, replace=False).astype(np.int64))


def positions_in(positions: np.ndarray, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(sample slots, row offsets from ``start``) of the positions in
    [start, start + count)."""
    a = int(np.searchsorted(positions, start, side="left"))
    b = int(np.searchsorted(positions, start + count, side="left"))
    slots = np.arange(a, b, dtype=np.int64)
    return slots, positions[a:b] - start


class SampleColumn:
    """One column of a sample: ``values`` (a storage-dtype array, or
    PackedBytes for strings) and ``nulls`` (uint8, 1 = NULL) or None."""

    __slots__ = ("kind", "values", "nulls")

    def __init__(self, kind: str, values, nulls: np.ndarray | None):
        self.kind = kind
        self.values = values
        self.nulls = nulls

    def __len__(self) -> int:
        return len(self.values)

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + (0 if self.nulls is None else self.nulls.nbytes)

    def storage(self) -> tuple:
        """(values, nulls, heap) in block storage: strings as views + heap."""
        if self.kind == STRING:
            views, heap = self.values.views()
            return views, self.nulls, heap
        return self.values, self.nulls, None

    def python_values(self) -> list:
        """The values as Python objects (None for NULL); strings as bytes."""
        if self.kind == STRING:
            out = self.values.to_list()
        else:
            out = self.values.tolist()
        if self.nulls is not None:
            out = [None if n else v for v, n in zip(out, self.nulls)]
        return out


class SampleFill:
    """A column's sample while scans fill it (thread-safe: morsels write
    disjoint slots).  String values are copied per morsel into a piece of
    their own (bytes + offsets, by a kernel), assembled in slot order by
    ``finish``: no Python object per value."""

    def __init__(self, kind: str, size: int, dtype):
        self.kind = kind
        self.size = size
        self.nulls = np.zeros(size, np.uint8)
        self.filled = np.zeros(size, np.bool_)
        if kind == STRING:
            self.pieces: list = []                # (slots, data, offsets) per fill
        else:
            self.values = np.zeros(size, dtype)

    def fill(self, slots: np.ndarray, rows: np.ndarray, block: ColumnBlock) -> None:
        if len(slots) == 0:
            return
        nulls = None if block.nulls is None else block.nulls[rows]
        if self.kind == STRING:
            if block.values is None:
                views = np.take(block.dictionary, block.codes[rows], axis=0)
            else:
                views = np.take(block.values, rows, axis=0)
            if nulls is not None:
                views[nulls != 0] = 0                     # NULL: empty
            data, offsets = views_bytes(views, block.heap)
            self.pieces.append((slots, data, offsets))    # (list.append: atomic)
        else:
            self.values[slots] = block.values[rows]
        if nulls is not None:
            self.nulls[slots] = nulls
        self.filled[slots] = True

    def complete(self) -> bool:
        return bool(self.filled.all())

    def finish(self) -> SampleColumn:
        if self.kind == STRING:
            data, offsets = scatter_bytes(self.pieces, self.size)
            values = PackedBytes(data.tobytes(), offsets.astype(np.int32), None)
        else:
            values = self.values
        if self.kind != STRING and self.nulls.any():
            values = values.copy()
            values[self.nulls.astype(bool)] = 0           # gaps hold a fixed value
        return SampleColumn(self.kind, values, self.nulls if self.nulls.any() else None)
