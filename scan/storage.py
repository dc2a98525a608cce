"""The block storage contract: the numpy form a column of each SQL type
takes in engine blocks (docs/design.md "Block").  scan produces it (the values of
``ColumnData``, converted by scan/column_data.to_storage), the engine
computes in it, and planner/types.py gives every ``DataType`` its dtype from
here (``DataType.numpy_dtype``).  It lives in scan/, the lowest room, so
that the room producing the storage and the rooms reading it share one
table.

Storage (one numpy array per vector):

    BOOLEAN                      bool_
    TINYINT..BIGINT              int8 / int16 / int32 / int64
    UTINYINT..UBIGINT            uint8 / uint16 / uint32 / uint64
    HUGEINT                      object (Python int)    -- rare, exact
    FLOAT / DOUBLE               float32 / float64
    DECIMAL(p, s), p <= 18       int64, value * 10**s
    DECIMAL(p, s), p  > 18       object (Python int, value * 10**s)
    DATE                         int32 days since 1970-01-01
    TIME                         int64 microseconds since midnight
    TIMETZ                       int64 microseconds since midnight UTC
                                 (the offset is +00: Parquet's UTC-adjusted TIME)
    TIME_NS                      int64 nanoseconds since midnight
    TIMESTAMP / TIMESTAMPTZ      int64 microseconds since the epoch (UTC)
    TIMESTAMP_NS / TIMESTAMPTZ_NS  int64 nanoseconds since the epoch (UTC)
    INTERVAL                     object: literals hold planner.expressions.Interval,
                                 Parquet columns IntervalValue (below)
    UUID                         object (Python int: the 16 bytes big endian
                                 less 2**127, DuckDB's hugeint form: signed
                                 128-bit, ordered as the bytes)
    VARCHAR / BLOB               (n, 2) uint64 string views + a uint8 heap
    NULL                         type of an untyped NULL literal; bool_ storage

String view (16 bytes, little endian, after Umbra):
    word 0 = length (low 32 bits) | first 4 bytes, zero padded (high 32 bits)
    word 1 = bytes 4..11 zero padded when length <= 12,
             else the byte offset of the whole string in the heap.

Nested storage (engine/block.py): LIST and MAP rows are (n, 2) int64
(start, length) into the child vectors (LIST: the elements; MAP: keys and
values, aligned); STRUCT rows are int64 row indexes into the aligned field
vectors.  Taking or filtering rows never copies the children.

A Parquet column's SQL type follows from its scan type name
(``ColumnInfo.type_name``, scan/metadata.py) by ``SCAN_TYPE_IDS``;
``decimal(p,s)`` names are DECIMAL(p, s).
"""

from __future__ import annotations

import numpy as np

# SQL type id -> storage dtype (DECIMAL: storage_dtype, by precision)
STORAGE_DTYPES = {
    "BOOLEAN": np.bool_,
    "TINYINT": np.int8, "SMALLINT": np.int16, "INTEGER": np.int32, "BIGINT": np.int64,
    "UTINYINT": np.uint8, "USMALLINT": np.uint16, "UINTEGER": np.uint32, "UBIGINT": np.uint64,
    "HUGEINT": object,
    "FLOAT": np.float32, "DOUBLE": np.float64,
    "DATE": np.int32, "TIME": np.int64, "TIMETZ": np.int64, "TIME_NS": np.int64,
    "TIMESTAMP": np.int64, "TIMESTAMPTZ": np.int64, "TIMESTAMP_NS": np.int64,
    "TIMESTAMPTZ_NS": np.int64,
    "INTERVAL": object, "UUID": object,
    "VARCHAR": np.uint64, "BLOB": np.uint64,
    "NULL": np.bool_,
    "LIST": np.int64, "MAP": np.int64, "STRUCT": np.int64,
}

NESTED_IDS = ("LIST", "MAP", "STRUCT")

# scan type name (ColumnInfo.type_name) -> the SQL type id its column is
SCAN_TYPE_IDS = {
    "boolean": "BOOLEAN",
    "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
    "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT",
    "float32": "FLOAT", "float64": "DOUBLE",
    "date": "DATE", "time_us": "TIME", "timetz_us": "TIMETZ", "time_ns": "TIME_NS",
    "timestamp_us": "TIMESTAMP", "timestamptz_us": "TIMESTAMPTZ",
    "timestamp_ns": "TIMESTAMP_NS", "timestamptz_ns": "TIMESTAMPTZ_NS",
    "string": "VARCHAR", "blob": "BLOB", "uuid": "UUID", "interval": "INTERVAL",
    "null": "NULL",
}


MICROS_PER_DAY = 86_400_000_000


class IntervalValue:
    """One INTERVAL value of a column (months, days, microseconds), kept
    as written (DuckDB prints the fields as they are) but equal, hashed and
    ordered as DuckDB compares intervals: by the total with 30-day months
    and 24-hour days.  ``int(v)`` is that total (the engine hashes object
    values by their int)."""
    __slots__ = ("months", "days", "micros")

    def __init__(self, months: int, days: int, micros: int):
        self.months, self.days, self.micros = months, days, micros

    def __int__(self) -> int:
        return (self.months * 30 + self.days) * MICROS_PER_DAY + self.micros

    @staticmethod
    def _key(other):
        if isinstance(other, (IntervalValue, int)):      # ints: the engine's NULL gaps
            return int(other)
        return (other.months * 30 + other.days) * MICROS_PER_DAY + other.micros

    def __eq__(self, other):
        try:
            return int(self) == self._key(other)
        except (AttributeError, TypeError):
            return NotImplemented

    def __lt__(self, other):
        return int(self) < self._key(other)

    def __le__(self, other):
        return int(self) <= self._key(other)

    def __gt__(self, other):
        return int(self) > self._key(other)

    def __ge__(self, other):
        return int(self) >= self._key(other)

    def __hash__(self):
        return hash(int(self))

    def __repr__(self) -> str:
        return f"IntervalValue({self.months}, {self.days}, {self.micros})"


def intervals_from_bytes(raw: bytes, n: int) -> np.ndarray:
    """Parquet INTERVAL values (FIXED_LEN_BYTE_ARRAY(12): little-endian
    uint32 months, days, milliseconds) -> an object array of IntervalValue."""
    # signed, as DuckDB reads them (the format says unsigned)
    words = np.frombuffer(raw, "<i4", count=3 * n).reshape(n, 3).tolist()
    out = np.empty(n, object)
    out[:] = [IntervalValue(m, d, ms * 1000) for m, d, ms in words]
    return out


UUID_BIAS = 1 << 127


def uuids_from_bytes(raw: bytes, n: int) -> np.ndarray:
    """UUIDs (FIXED_LEN_BYTE_ARRAY(16)) -> an object array of their
    storage ints (big endian, less UUID_BIAS)."""
    out = np.empty(n, object)
    out[:] = [int.from_bytes(raw[16 * i:16 * i + 16], "big") - UUID_BIAS for i in range(n)]
    return out


def interval_fields(v) -> tuple[int, int, int]:
    """(months, days, micros) of an INTERVAL storage value: an IntervalValue
    or a literal Interval as it is, an int (a value rebuilt from its hash
    words, e.g. a GROUP BY key) in the normalized form (30-day months)."""
    if hasattr(v, "months"):
        return v.months, v.days, v.micros
    total = int(v)
    months, rest = divmod(total, 30 * MICROS_PER_DAY)
    days, micros = divmod(rest, MICROS_PER_DAY)
    return months, days, micros


def storage_dtype(type_id: str, precision: int = 0) -> np.dtype:
    """The storage dtype of SQL type ``type_id`` (DECIMAL: of ``precision``)."""
    if type_id == "DECIMAL":
        return np.dtype(np.int64) if precision <= 18 else np.dtype(object)
    return np.dtype(STORAGE_DTYPES[type_id])
