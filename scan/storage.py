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
    INTERVAL                     object (Interval), only as literals
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
    "INTERVAL": object,
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
    "string": "VARCHAR", "blob": "BLOB",
    "null": "NULL",
}


def storage_dtype(type_id: str, precision: int = 0) -> np.dtype:
    """The storage dtype of SQL type ``type_id`` (DECIMAL: of ``precision``)."""
    if type_id == "DECIMAL":
        return np.dtype(np.int64) if precision <= 18 else np.dtype(object)
    return np.dtype(STORAGE_DTYPES[type_id])
