"""BYTE_STREAM_SPLIT: byte k of value i is stored at ``k * n + i`` (n values
of width w, w streams back to back).  Vectorized with numpy."""

from __future__ import annotations

import numpy as np

from scan.errors import FileFormatError
from scan.views import views_from_offsets

_WIDTH = {"INT32": ("<i4", 4), "INT64": ("<i8", 8), "FLOAT": ("<f4", 4),
          "DOUBLE": ("<f8", 8)}


def _unsplit(buf: np.ndarray, pos: int, end: int, count: int, width: int,
             what: str) -> np.ndarray:
    need = count * width
    if pos < 0 or pos + need > min(end, len(buf)):
        raise FileFormatError(
            f"BYTE_STREAM_SPLIT {what} data truncated: {count} values need {need} bytes, "
            f"the page has {max(min(end, len(buf)) - pos, 0)}")
    return np.ascontiguousarray(buf[pos:pos + need].reshape(width, count).T)


def decode_byte_stream_split(buf: np.ndarray, pos: int, end: int, physical_type: str,
                             count: int) -> tuple[np.ndarray, int]:
    """``count`` values of INT32/INT64/FLOAT/DOUBLE -> (values, new_pos)."""
    pos, end, count = int(pos), int(end), int(count)
    if physical_type not in _WIDTH:
        raise FileFormatError(f"BYTE_STREAM_SPLIT is not defined for {physical_type}")
    dtype, width = _WIDTH[physical_type]
    rows = _unsplit(buf, pos, end, count, width, physical_type)
    values = rows.reshape(-1).view(dtype).astype(np.dtype(dtype).newbyteorder("="))
    return values, pos + count * width


def decode_byte_stream_split_fixed(buf: np.ndarray, pos: int, end: int, count: int,
                                   type_length: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``count`` FIXED_LEN_BYTE_ARRAY values -> (views, heap, new_pos); the
    heap is new (the bytes are re-interleaved)."""
    pos, end, count, type_length = int(pos), int(end), int(count), int(type_length)
    if type_length < 0:
        raise FileFormatError(f"invalid FIXED_LEN_BYTE_ARRAY type_length {type_length}")
    heap = _unsplit(buf, pos, end, count, type_length, "FIXED_LEN_BYTE_ARRAY").reshape(-1)
    offsets = np.arange(count + 1, dtype=np.int64) * type_length
    views = np.empty((count, 2), np.uint64)
    views_from_offsets(heap, offsets, views)
    return views, heap, pos + count * type_length
