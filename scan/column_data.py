"""One column of one row group as scan hands it over: ``ColumnData``,
the conversion of decoded physical values to engine storage
(``to_storage``; the contract is scan/storage.py), and the errors of a
chunk being decoded (``chunk_errors``).  The flat reader (scan/reader.py)
and the nested one (scan/nested.py) both build their results here."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from scan.errors import FileFormatError, PqdbError
from scan.float16 import float16_views_to_float32
from scan.storage import SCAN_TYPE_IDS, STORAGE_DTYPES, intervals_from_bytes, uuids_from_bytes


class ColumnData:
    """One column of one row group in engine storage.

    ``values``: numpy array (see scan/storage.py); ``nulls``: None or uint8
    (1 = null); ``heap``: uint8 array long string views point into (strings
    and blobs only).  When dictionary ``codes`` were asked for and came, the
    string views are gathered from the dictionary only when ``values`` is
    first read: a filter on the codes (or a group-by) never needs them."""
    __slots__ = ("_values", "nulls", "heap", "num_rows", "column", "codes", "dictionary")

    def __init__(self, values, nulls, heap, num_rows, column, codes=None, dictionary=None):
        if values is None and (codes is None or dictionary is None):
            raise ValueError("ColumnData without values needs codes and a dictionary")
        self._values, self.nulls, self.heap = values, nulls, heap
        self.num_rows, self.column = num_rows, column
        self.codes, self.dictionary = codes, dictionary   # see read_column(codes=True)

    @property
    def values(self) -> np.ndarray:
        if self._values is None:
            from scan.encodings.dictionary import gather
            self._values = gather(self.dictionary, self.codes)
        return self._values

    def to_pylist(self) -> list:
        """Python values (bytes for strings/blobs, None for nulls); for tests."""
        if self.values.ndim == 2:
            from scan.views import views_to_pylist
            return views_to_pylist(self.values, self.heap, self.nulls)
        out = self.values.tolist()
        if self.nulls is not None:
            for i in np.flatnonzero(self.nulls).tolist():
                out[i] = None
        return out

    def __repr__(self) -> str:
        return f"ColumnData({self.column.name!r}, {self.num_rows} rows, {self.values.dtype})"


@contextmanager
def chunk_errors(ctx: dict):
    """Errors while decoding a column chunk, as FileFormatErrors that name
    the file, row group and column (``ctx``): pqdb errors keep their page,
    Python errors from malformed bytes become "corrupt column chunk"."""
    try:
        yield
    except Exception as e:
        err = chunk_error(e, ctx)
        if err is None:
            raise
        raise err from None


def chunk_error(e: Exception, ctx: dict) -> Exception | None:
    """The error to raise for ``e``, raised while decoding a chunk (see
    chunk_errors); None when ``e`` goes on unchanged."""
    if isinstance(e, FileFormatError):
        return FileFormatError(_bare(e), page=e.page, **ctx)
    if isinstance(e, PqdbError):
        return None
    if isinstance(e, (ValueError, IndexError, OverflowError, TypeError, MemoryError)):
        return FileFormatError(f"corrupt column chunk ({type(e).__name__}: {e})", **ctx)
    return None


def _bare(e: FileFormatError) -> str:
    text = str(e)
    if e.page is not None and text.endswith(f" (page {e.page})"):
        text = text[:-len(f" (page {e.page})")]
    return text


# narrow integers: INT32 values cast to their storage (scan/storage.py)
_INT_CASTS = {t: STORAGE_DTYPES[SCAN_TYPE_IDS[t]] for t in ("int8", "int16", "uint8", "uint16")}


def to_storage(values: np.ndarray, heap, col):
    """Physical values -> engine storage for ``col.type_name``; returns (values, heap)."""
    t = col.type_name
    if t in _INT_CASTS:
        return values.astype(_INT_CASTS[t]), None
    if t == "uint32":
        return values.view(np.uint32), None
    if t == "uint64":
        return values.view(np.uint64), None
    if t.startswith(("time", "timestamp")):
        if col.time_unit == "MILLIS":
            return values.astype(np.int64) * 1000, None
        if col.time_unit == "NANOS" and t in ("time_us", "timetz_us"):
            return values // 1000, None
        return values, None
    if t.startswith("decimal"):
        wide = col.precision > 18
        if col.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
            if values.ndim == 1 and not wide:   # decoded straight to int64 (is_fixed_decimal)
                return values, None
            from scan.views import decimal_from_be_bytes, decimal_from_be_bytes_wide
            fn = decimal_from_be_bytes_wide if wide else decimal_from_be_bytes
            return fn(values, heap, col.type_length), None
        if wide:
            out = np.empty(len(values), dtype=object)
            out[:] = values.tolist()
            return out, None
        return values.astype(np.int64, copy=False), None
    if t in ("uuid", "interval"):
        from scan.views import views_to_pylist
        raw = b"".join(views_to_pylist(values, heap)) if len(values) else b""
        n = len(values)
        width = 16 if t == "uuid" else 12
        if len(raw) != n * width:          # NULL gaps are empty: pad them
            raw = b"".join(v if len(v) == width else bytes(width)
                           for v in views_to_pylist(values, heap))
        return (uuids_from_bytes(raw, n) if t == "uuid" else intervals_from_bytes(raw, n)), None
    if t == "float32" and col.physical_type == "FIXED_LEN_BYTE_ARRAY":
        return float16_views_to_float32(values), None
    if col.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        return values, heap if heap is not None else np.zeros(0, np.uint8)
    return values, None


# a chunk without rows, by scan type name; int64 for names outside the table
# and for NULL-typed columns, which the engine never reads (it makes their
# vectors itself) and whose chunks come out in their physical type
_EMPTY_DTYPES = {t: STORAGE_DTYPES[i] for t, i in SCAN_TYPE_IDS.items() if i != "NULL"}


def empty_storage(col):
    """(values, nulls, heap) of a chunk of ``col`` without rows, in storage."""
    t = col.type_name
    if t in ("string", "blob"):
        return np.zeros((0, 2), np.uint64), None, np.zeros(0, np.uint8)
    if t.startswith("decimal") and col.precision > 18:
        return np.zeros(0, object), None, None
    return np.zeros(0, _EMPTY_DTYPES.get(t, np.int64)), None, None
