"""What the collectors read, and the compact forms they keep.

``ColumnBlock`` is one decoded column of a morsel as the scan hands it
over: numpy arrays in the block storage of scan/storage.py, so stats/
needs no engine class.  ``kind_of`` sorts a storage dtype into the kinds
the collectors know; columns of other storage (HUGEINT and DECIMAL wider
than 18 digits as Python ints, nested types) get no statistics.

``PackedBytes`` keeps a list of byte strings (or None) as one buffer plus
int32 offsets: string sample values and string synopsis bounds, a few
bytes of overhead per value instead of a Python object each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# kinds of columns statistics are collected for
INT, UINT, FLOAT, STRING, BOOL = "int", "uint", "float", "string", "bool"


@dataclass
class ColumnBlock:
    """One column of a morsel: ``values`` in block storage (strings: (n, 2)
    uint64 views over ``heap``), ``nulls`` a uint8 mask (1 = NULL) or None.
    Dictionary-coded strings may come as ``codes`` (int32, no NULLs) into
    ``dictionary`` (views over ``heap``) with ``values`` None.  Numbers may
    come with ``entries``: every non-NULL value is one of them (the column
    chunk's dictionary), and the distinct count hashes those instead."""
    values: np.ndarray | None
    nulls: np.ndarray | None = None
    heap: np.ndarray | None = None
    codes: np.ndarray | None = None
    dictionary: np.ndarray | None = None
    entries: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.codes) if self.values is None else len(self.values)

    def string_views(self) -> np.ndarray:
        """The rows' views (gathered from the dictionary for coded rows)."""
        if self.values is not None:
            return self.values
        return np.take(self.dictionary, self.codes, axis=0)


def kind_of(dtype: np.dtype, is_string: bool = False) -> str | None:
    """The collector kind of a storage dtype, or None (no statistics)."""
    if is_string:
        return STRING
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return BOOL
    if dtype.kind == "i":
        return INT
    if dtype.kind == "u":
        return UINT
    if dtype.kind == "f":
        return FLOAT
    return None


class PackedBytes:
    """Byte strings (or None) in one buffer: value i is
    ``data[offsets[i]:offsets[i + 1]]``, None where ``missing[i]``."""

    __slots__ = ("data", "offsets", "missing")

    def __init__(self, data: bytes, offsets: np.ndarray, missing: np.ndarray | None):
        self.data = data
        self.offsets = offsets
        self.missing = missing

    @classmethod
    def from_list(cls, values: list) -> "PackedBytes":
        missing = np.array([v is None for v in values], np.bool_)
        parts = [b"" if v is None else bytes(v) for v in values]
        offsets = np.zeros(len(parts) + 1, np.int32)
        if parts:
            np.cumsum([len(p) for p in parts], out=offsets[1:])
        return cls(b"".join(parts), offsets, missing if missing.any() else None)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int):
        if self.missing is not None and self.missing[i]:
            return None
        return self.data[self.offsets[i]:self.offsets[i + 1]]

    def to_list(self) -> list:
        return [self[i] for i in range(len(self))]

    def views(self) -> tuple[np.ndarray, np.ndarray]:
        """(views, heap) of the values (scan/views.py); None values are empty."""
        from scan.views import views_from_offsets
        heap = np.frombuffer(self.data, np.uint8) if self.data else np.zeros(1, np.uint8)
        views = np.empty((len(self), 2), np.uint64)
        views_from_offsets(heap, self.offsets.astype(np.int64), views)
        return views, heap

    @property
    def nbytes(self) -> int:
        missing = 0 if self.missing is None else self.missing.nbytes
        return len(self.data) + self.offsets.nbytes + missing


def views_as_bytes(views: np.ndarray, heap: np.ndarray | None, rows: np.ndarray) -> list:
    """The bytes of the views at ``rows`` (a few rows: samples, bounds).
    Only those strings are copied (never the whole heap: a block's heap
    can be a whole chunk's strings)."""
    out = []
    limit = 0 if heap is None else len(heap)
    for r in np.asarray(rows).tolist():
        w0, w1 = int(views[r, 0]), int(views[r, 1])
        n = w0 & 0xFFFFFFFF
        if n <= 12:
            out.append(((w0 >> 32) | (w1 << 32)).to_bytes(12, "little")[:n])
            continue
        if w1 + n > limit:
            from scan.errors import FileFormatError
            raise FileFormatError(f"string view {r} points past its heap")
        out.append(heap[w1:w1 + n].tobytes())
    return out


def views_bytes(views: np.ndarray, heap: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(data uint8, offsets int64) of the strings of ``views``: value i is
    ``data[offsets[i]:offsets[i + 1]]`` (one kernel, no Python per value)."""
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(-1, 2)
    lengths = (views[:, 0] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    offsets = np.zeros(len(views) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    long = lengths > 12
    if long.any():
        ends = views[long, 1].astype(np.int64) + lengths[long]
        if heap is None or int(ends.max()) > len(heap):
            from scan.errors import FileFormatError
            raise FileFormatError("a string view points past its heap")
    from stats.byte_kernels import copy_view_bytes      # numba: loaded when used
    data = np.empty(int(offsets[-1]), np.uint8)
    copy_view_bytes(views, heap if heap is not None and len(heap) else np.zeros(1, np.uint8),
                     offsets, data)
    return data, offsets


def scatter_bytes(pieces: list, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets) of ``size`` values assembled from ``pieces``:
    (slots, data, offsets) each, value i of a piece going to slot slots[i];
    slots no piece has are empty."""
    lengths = np.zeros(size, np.int64)
    for slots, _, offs in pieces:
        lengths[slots] = np.diff(offs)
    offsets = np.zeros(size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    from stats.byte_kernels import scatter_value_bytes  # numba: loaded when used
    data = np.empty(int(offsets[-1]), np.uint8)
    for slots, d, offs in pieces:
        scatter_value_bytes(d, offs, np.ascontiguousarray(slots, dtype=np.int64), offsets, data)
    return data, offsets
