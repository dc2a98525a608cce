"""The Parquet schema of written files, and column values from block storage
(scan/storage.py) into their physical form.

Types are written as DuckDB writes them (so DuckDB and pyarrow read back
the types pqdb wrote): integers with converted types INT_8..UINT_64,
DECIMAL on INT32 / INT64 / FIXED_LEN_BYTE_ARRAY(16) by precision, DATE,
TIME / TIMESTAMP with their logical types (isAdjustedToUTC for the WITH
TIME ZONE types, NANOS for the _NS ones), INTERVAL as
FIXED_LEN_BYTE_ARRAY(12), UUID as FIXED_LEN_BYTE_ARRAY(16), VARCHAR as
UTF8 byte arrays, BLOB as plain byte arrays, HUGEINT as DOUBLE (as DuckDB
does), the NULL type as INT32 of logical type UNKNOWN; LIST as the
three-level list (``list`` / ``element``), MAP as ``key_value`` with a
required key, STRUCT as a group.  Every column, group and element is
OPTIONAL (a query's columns may hold NULLs anywhere).

A column type is any object with ``id`` (a scan.storage type id),
``precision``, ``scale`` and ``children`` (``((name, type), ...)``), as
planner.types.DataType; ``ColumnType`` is such a class for callers without
the planner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scan import thrift as T
from scan.errors import UnsupportedFeatureError
from scan.storage import UUID_BIAS, interval_fields

PHYSICAL = {name: i for i, name in enumerate(T.PHYSICAL_TYPES)}
CONVERTED = {name: i for i, name in enumerate(T.CONVERTED_TYPES)}


@dataclass(frozen=True)
class ColumnType:
    """A column type for ``scan.writer`` callers that have no planner.types."""
    id: str
    precision: int = 0
    scale: int = 0
    children: tuple = ()


@dataclass
class Leaf:
    """One leaf column as written."""
    index: int
    path: tuple
    type: object                   # the leaf's column type (id, precision, scale)
    physical: str
    type_length: int
    max_def: int
    max_rep: int
    required: bool = False         # a MAP key: no definition level of its own
    # the order min/max follow: signed, unsigned, float, bytes, none
    order: str = "signed"


_INTS = {"TINYINT": "INT_8", "SMALLINT": "INT_16", "INTEGER": "INT_32", "BIGINT": "INT_64",
         "UTINYINT": "UINT_8", "USMALLINT": "UINT_16", "UINTEGER": "UINT_32", "UBIGINT": "UINT_64"}
_TIMES = {"TIME": ("TIME", False, "MICROS"), "TIMETZ": ("TIME", True, "MICROS"),
          "TIME_NS": ("TIME", False, "NANOS"),
          "TIMESTAMP": ("TIMESTAMP", False, "MICROS"), "TIMESTAMPTZ": ("TIMESTAMP", True, "MICROS"),
          "TIMESTAMP_NS": ("TIMESTAMP", False, "NANOS"),
          "TIMESTAMPTZ_NS": ("TIMESTAMP", True, "NANOS")}


def _leaf_element(name: str, t, rep: int) -> tuple[dict, str, int, str]:
    """(SchemaElement, physical type, type length, sort order) of a leaf."""
    el = {"name": name, "repetition_type": rep}
    tid = t.id
    length = 0
    order = "signed"
    if tid == "BOOLEAN":
        physical = "BOOLEAN"
    elif tid in _INTS:
        physical = "INT64" if tid in ("BIGINT", "UBIGINT") else "INT32"
        el["converted_type"] = CONVERTED[_INTS[tid]]
        if tid.startswith("U"):
            order = "unsigned"
    elif tid in ("FLOAT", "DOUBLE", "HUGEINT"):
        physical = "FLOAT" if tid == "FLOAT" else "DOUBLE"
        order = "float"
    elif tid == "DECIMAL":
        p, s = t.precision, t.scale
        if p <= 9:
            physical = "INT32"
        elif p <= 18:
            physical = "INT64"
        else:
            physical, length, order = "FIXED_LEN_BYTE_ARRAY", 16, "decimal"
        el.update(converted_type=CONVERTED["DECIMAL"], scale=s, precision=p,
                  logicalType={"DECIMAL": {"scale": s, "precision": p}})
    elif tid == "DATE":
        physical = "INT32"
        el["converted_type"] = CONVERTED["DATE"]
    elif tid in _TIMES:
        kind, utc, unit = _TIMES[tid]
        physical = "INT64"
        if unit == "MICROS":
            el["converted_type"] = CONVERTED[f"{kind}_MICROS"]
        el["logicalType"] = {kind: {"isAdjustedToUTC": utc, "unit": {unit: {}}}}
    elif tid == "INTERVAL":
        physical, length, order = "FIXED_LEN_BYTE_ARRAY", 12, "none"
        el["converted_type"] = CONVERTED["INTERVAL"]
    elif tid == "UUID":
        physical, length, order = "FIXED_LEN_BYTE_ARRAY", 16, "bytes"
        el["logicalType"] = {"UUID": {}}
    elif tid in ("VARCHAR", "BLOB"):
        physical, order = "BYTE_ARRAY", "bytes"
        if tid == "VARCHAR":
            el["converted_type"] = CONVERTED["UTF8"]
    elif tid == "NULL":
        physical, order = "INT32", "none"
        el["logicalType"] = {"UNKNOWN": {}}
    else:
        raise UnsupportedFeatureError(f"writing a column of type {tid} to Parquet")
    el["type"] = PHYSICAL[physical]
    if length:
        el["type_length"] = length
    return el, physical, length, order


def build_schema(names: list, types: list) -> tuple[list, list]:
    """(SchemaElement dicts, leaves) of a file with top-level columns
    ``names`` of ``types``."""
    elements = [{"name": "schema", "num_children": len(names), "repetition_type": T.REQUIRED}]
    leaves: list[Leaf] = []

    def add(name, t, path, d, r, rep=T.OPTIONAL):
        d = d + (1 if rep != T.REQUIRED else 0)
        if t.id == "STRUCT":
            elements.append({"name": name, "repetition_type": rep,
                             "num_children": len(t.children)})
            for cname, ct in t.children:
                add(cname, ct, path + (cname,), d, r)
        elif t.id == "LIST":
            elements.append({"name": name, "repetition_type": rep, "num_children": 1,
                             "converted_type": CONVERTED["LIST"]})
            elements.append({"name": "list", "repetition_type": T.REPEATED, "num_children": 1})
            add("element", t.children[0][1], path + ("list", "element"), d + 1, r + 1)
        elif t.id == "MAP":
            elements.append({"name": name, "repetition_type": rep, "num_children": 1,
                             "converted_type": CONVERTED["MAP"]})
            elements.append({"name": "key_value", "repetition_type": T.REPEATED,
                             "num_children": 2})
            add("key", t.children[0][1], path + ("key_value", "key"), d + 1, r + 1, T.REQUIRED)
            add("value", t.children[1][1], path + ("key_value", "value"), d + 1, r + 1)
        else:
            el, physical, length, order = _leaf_element(name, t, rep)
            elements.append(el)
            leaves.append(Leaf(len(leaves), path, t, physical, length, d, r,
                               rep == T.REQUIRED, order))

    for name, t in zip(names, types):
        add(str(name), t, (str(name),), 0, 0)
    return elements, leaves


# ---- values -> physical form ----------------------------------------------------

def _be16(ints: np.ndarray) -> np.ndarray:
    """int64 values as 16-byte big-endian two's complement, (n, 16) uint8."""
    out = np.empty((len(ints), 2), ">i8")
    out[:, 0] = np.where(ints < 0, -1, 0)
    out[:, 1] = ints
    return out.view(np.uint8).reshape(len(ints), 16)


def _object_bytes(values, width: int, convert) -> np.ndarray:
    raw = b"".join(convert(v) for v in values.tolist())
    return np.frombuffer(raw, np.uint8).reshape(len(values), width)


def physical_values(leaf: Leaf, vec, rows):
    """The values of ``vec`` (a block vector: data, nulls, heap) at ``rows``
    (an int64 array, or None for every row) in the leaf's physical form: a
    numpy array (BOOLEAN, INT32, INT64, FLOAT, DOUBLE), ``(offsets,
    bytes)`` (BYTE_ARRAY) or an (n, width) uint8 array
    (FIXED_LEN_BYTE_ARRAY)."""
    from scan.encodings.encode import gather_views
    tid = leaf.type.id
    if tid in ("VARCHAR", "BLOB"):
        if rows is None:
            rows = np.arange(len(vec.data), dtype=np.int64)
        return gather_views(vec.data, vec.heap, rows)
    if tid == "NULL":
        return np.zeros(0 if rows is None else len(rows), np.int32)
    ints = getattr(vec, "ints", None)
    data = vec.data if ints is None else ints
    if rows is not None:
        data = data[rows]
    if tid == "DECIMAL" and leaf.physical == "FIXED_LEN_BYTE_ARRAY":
        if data.dtype != object:
            return _be16(data.astype(np.int64, copy=False))
        return _object_bytes(data, 16, lambda v: int(v).to_bytes(16, "big", signed=True))
    if tid == "UUID":
        return _object_bytes(data, 16, lambda v: (int(v) + UUID_BIAS).to_bytes(16, "big"))
    if tid == "INTERVAL":
        fields = np.array([interval_fields(v) for v in data.tolist()], np.int64).reshape(-1, 3)
        out = np.empty((len(fields), 3), "<i4")
        out[:, 0] = fields[:, 0]
        out[:, 1] = fields[:, 1]
        out[:, 2] = fields[:, 2] // 1000
        return out.view(np.uint8).reshape(len(fields), 12)
    if tid == "HUGEINT":
        return data.astype(np.float64)
    if leaf.physical == "INT32":
        if data.dtype == np.uint32:
            return data.view(np.int32)
        return data.astype(np.int32, copy=False)
    if leaf.physical == "INT64":
        if data.dtype == np.uint64:
            return data.view(np.int64)
        return data.astype(np.int64, copy=False)
    if leaf.physical == "FLOAT":
        return data.astype(np.float32, copy=False)
    if leaf.physical == "DOUBLE":
        return data.astype(np.float64, copy=False)
    return data.astype(np.bool_, copy=False)
