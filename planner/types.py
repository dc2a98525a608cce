"""SQL data types and the typing rules.

The binder (planner/) must type every expression, and the engine stores values
by type, so the type system lives here, in the lower of the two rooms; the
engine imports it.  Typing rules follow DuckDB's so that results compare equal
to DuckDB's.

Storage: every type's numpy form in engine blocks (the block storage
contract, string views, nested storage) is scan/storage.py's, since scan
produces it; ``DataType.numpy_dtype`` reads it there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from scan.storage import NESTED_IDS, SCAN_TYPE_IDS, storage_dtype


@dataclass(frozen=True)
class DataType:
    id: str                 # one of the names in scan.storage.STORAGE_DTYPES
    precision: int = 0      # DECIMAL only
    scale: int = 0          # DECIMAL only
    # LIST: (("element", T),); MAP: (("key", K), ("value", V)); STRUCT: the fields
    children: tuple = ()

    # ---- storage -------------------------------------------------------
    @property
    def numpy_dtype(self) -> np.dtype:
        return storage_dtype(self.id, self.precision)

    @property
    def is_string(self) -> bool:
        return self.id in ("VARCHAR", "BLOB")

    @property
    def is_decimal(self) -> bool:
        return self.id == "DECIMAL"

    @property
    def is_wide_decimal(self) -> bool:
        return self.id == "DECIMAL" and self.precision > 18

    @property
    def is_integer(self) -> bool:
        return self.id in INTEGER_IDS

    @property
    def is_float(self) -> bool:
        return self.id in ("FLOAT", "DOUBLE")

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self.is_float or self.is_decimal

    @property
    def is_nested(self) -> bool:
        return self.id in NESTED_IDS

    def field(self, name: str) -> "tuple[int, DataType] | None":
        """STRUCT: (position, type) of field ``name`` (exact, else
        case-insensitive), or None."""
        for i, (n, t) in enumerate(self.children):
            if n == name:
                return i, t
        low = name.lower()
        for i, (n, t) in enumerate(self.children):
            if n.lower() == low:
                return i, t
        return None

    @property
    def is_temporal(self) -> bool:
        return self.id in TEMPORAL_IDS

    def __str__(self) -> str:
        if self.id in _SPELLED:
            return _SPELLED[self.id]
        if self.id == "DECIMAL":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.id == "LIST":
            inner = str(self.children[0][1])
            return f'"{inner}"[]' if inner == "NULL" else f"{inner}[]"
        if self.id == "MAP":
            return f"MAP({self.children[0][1]}, {self.children[1][1]})"
        if self.id == "STRUCT":
            return "STRUCT(" + ", ".join(f"{_quote_field(n)} {t}" for n, t in self.children) + ")"
        return self.id

    __repr__ = __str__


# DuckDB's names (typeof, DESCRIBE) of the types whose id is shorter
_SPELLED = {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE", "TIMETZ": "TIME WITH TIME ZONE"}
TIME_IDS = ("TIME", "TIME_NS", "TIMETZ")
TIMESTAMP_IDS = ("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP_NS", "TIMESTAMPTZ_NS")
TEMPORAL_IDS = ("DATE",) + TIME_IDS + TIMESTAMP_IDS


def _quote_field(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def LIST(element: "DataType") -> "DataType":
    return DataType("LIST", children=(("element", element),))


def MAP(key: "DataType", value: "DataType") -> "DataType":
    return DataType("MAP", children=(("key", key), ("value", value)))


def STRUCT(fields) -> "DataType":
    return DataType("STRUCT", children=tuple((str(n), t) for n, t in fields))

INTEGER_IDS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
               "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")

BOOLEAN = DataType("BOOLEAN")
TINYINT = DataType("TINYINT")
SMALLINT = DataType("SMALLINT")
INTEGER = DataType("INTEGER")
BIGINT = DataType("BIGINT")
HUGEINT = DataType("HUGEINT")
UTINYINT = DataType("UTINYINT")
USMALLINT = DataType("USMALLINT")
UINTEGER = DataType("UINTEGER")
UBIGINT = DataType("UBIGINT")
FLOAT = DataType("FLOAT")
DOUBLE = DataType("DOUBLE")
DATE = DataType("DATE")
TIME = DataType("TIME")
TIMESTAMP = DataType("TIMESTAMP")
TIMESTAMPTZ = DataType("TIMESTAMPTZ")
TIMESTAMP_NS = DataType("TIMESTAMP_NS")
TIMESTAMPTZ_NS = DataType("TIMESTAMPTZ_NS")
TIME_NS = DataType("TIME_NS")
TIMETZ = DataType("TIMETZ")
INTERVAL = DataType("INTERVAL")
UUID = DataType("UUID")
VARCHAR = DataType("VARCHAR")
BLOB = DataType("BLOB")
NULL = DataType("NULL")


def DECIMAL(precision: int, scale: int) -> DataType:
    return DataType("DECIMAL", precision, scale)


# Integer widths as decimal precision (DuckDB's rule for int -> decimal).
INTEGER_DECIMAL_PRECISION = {
    "TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19, "HUGEINT": 38,
    "UTINYINT": 3, "USMALLINT": 5, "UINTEGER": 10, "UBIGINT": 20,
}

_INT_RANK = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"]
_UINT_RANK = ["UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"]


def from_scan_type_name(name: str) -> DataType:
    """Map scan/'s column type names (ColumnInfo.type_name) to SQL types."""
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", name)
    if m:
        return DECIMAL(int(m.group(1)), int(m.group(2)))
    try:
        return _SCAN_NAMES[name]
    except KeyError:
        from scan.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"column type {name!r} is not supported") from None


_SCAN_NAMES = {name: DataType(type_id) for name, type_id in SCAN_TYPE_IDS.items()}


_NAMED = {
    "BOOLEAN": BOOLEAN, "BOOL": BOOLEAN,
    "TINYINT": TINYINT, "INT1": TINYINT, "SMALLINT": SMALLINT, "INT2": SMALLINT,
    "INTEGER": INTEGER, "INT": INTEGER, "INT4": INTEGER, "BIGINT": BIGINT, "INT8": BIGINT,
    "HUGEINT": HUGEINT, "INT128": HUGEINT,
    "UTINYINT": UTINYINT, "USMALLINT": USMALLINT, "UINTEGER": UINTEGER, "UBIGINT": UBIGINT,
    "FLOAT": FLOAT, "REAL": FLOAT, "FLOAT4": FLOAT,
    "DOUBLE": DOUBLE, "FLOAT8": DOUBLE, "DOUBLE PRECISION": DOUBLE,
    "DATE": DATE, "TIME": TIME, "TIMESTAMP": TIMESTAMP, "DATETIME": TIMESTAMP,
    "TIMESTAMPTZ": TIMESTAMPTZ, "TIMESTAMP WITH TIME ZONE": TIMESTAMPTZ,
    "TIMESTAMP_NS": TIMESTAMP_NS, "TIMESTAMPTZ_NS": TIMESTAMPTZ_NS, "TIME_NS": TIME_NS,
    "TIMETZ": TIMETZ, "TIME WITH TIME ZONE": TIMETZ, "INTERVAL": INTERVAL, "UUID": UUID,
    "VARCHAR": VARCHAR, "TEXT": VARCHAR, "STRING": VARCHAR, "CHAR": VARCHAR, "BPCHAR": VARCHAR,
    "BLOB": BLOB, "BYTEA": BLOB, "BINARY": BLOB, "VARBINARY": BLOB,
}


def from_scan_logical(lg, columns) -> DataType:
    """The SQL type of a top-level Parquet field: ``lg`` is scan.nested's
    logical tree of the field (kind leaf / struct / list / map), ``columns``
    the file's leaf ColumnInfos.  Leaves typed NULL (UNKNOWN) become NULL."""
    if lg.kind == "leaf":
        return from_scan_type_name(columns[lg.leaf].type_name)
    kids = [from_scan_logical(c, columns) for c in lg.children]
    if lg.kind == "struct":
        return STRUCT([(c.name, t) for c, t in zip(lg.children, kids)])
    if lg.kind == "map":
        entry = kids[0]
        if entry.id == "STRUCT" and len(entry.children) == 2:
            return MAP(entry.children[0][1], entry.children[1][1])
        return LIST(entry)              # a map without values: a list of keys
    return LIST(kids[0])


def from_sql_name(name: str, params: tuple[int, ...] = ()) -> DataType:
    """Type named in SQL (CAST targets).  DECIMAL defaults to (18, 3) like DuckDB."""
    key = name.upper().strip()
    if key in ("DECIMAL", "NUMERIC", "DEC"):
        p = params[0] if params else 18
        s = params[1] if len(params) > 1 else (0 if params else 3)
        if not (1 <= p <= 38 and 0 <= s <= p):
            from scan.errors import UnsupportedFeatureError
            raise UnsupportedFeatureError(f"DECIMAL({p},{s}) is not a valid decimal type")
        return DECIMAL(p, s)
    try:
        return _NAMED[key]
    except KeyError:
        from scan.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError(f"type {name} is not supported") from None


def decimal_of(t: DataType) -> DataType:
    """The decimal a numeric type converts to in decimal arithmetic."""
    if t.is_decimal:
        return t
    if t.is_integer:
        return DECIMAL(INTEGER_DECIMAL_PRECISION[t.id], 0)
    raise TypeError(f"{t} has no decimal form")


def max_integer(a: DataType, b: DataType) -> DataType:
    """Common integer type of two integer types (DuckDB: widen to hold both)."""
    if a == b:
        return a
    sa, sb = a.id in _INT_RANK, b.id in _INT_RANK
    if sa and sb:
        return a if _INT_RANK.index(a.id) >= _INT_RANK.index(b.id) else b
    if not sa and not sb:
        return a if _UINT_RANK.index(a.id) >= _UINT_RANK.index(b.id) else b
    signed, unsigned = (a, b) if sa else (b, a)
    # a signed type strictly wider than the unsigned one
    need = _UINT_RANK.index(unsigned.id) + 1
    rank = max(_INT_RANK.index(signed.id), need)
    return DataType(_INT_RANK[min(rank, len(_INT_RANK) - 1)])


def common_type(a: DataType, b: DataType) -> DataType:
    """The type both sides of a CASE, COALESCE or UNION convert to (DuckDB's
    MaxLogicalType).  Raises TypeError when there is none.

    Numbers: FLOAT with any number but DOUBLE stays FLOAT.  Two decimals
    take the larger whole part and the larger scale; when that needs more
    than 38 digits the scale gives way (DECIMAL(38,10) and DECIMAL(38,0)
    make DECIMAL(38,0)).  An integer with a decimal keeps the decimal's
    scale, the width capped at 38."""
    return _common(a, b, comparison=False)


def comparison_type(a: DataType, b: DataType) -> DataType:
    """The type both sides of a comparison or an IN list convert to (DuckDB's
    BindComparison): as common_type, but decimals keep the larger scale and
    only the width is capped at 38 (pqdb compares their values exactly)."""
    return _common(a, b, comparison=True)


def _common(a: DataType, b: DataType, comparison: bool) -> DataType:
    if a == b:
        return a
    if a.id == "NULL":
        return b
    if b.id == "NULL":
        return a
    if a.is_integer and b.is_integer:
        return max_integer(a, b)
    if a.is_numeric and b.is_numeric:
        if a.is_float or b.is_float:
            return DOUBLE if DOUBLE in (a, b) else FLOAT
        da, db = decimal_of(a), decimal_of(b)
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        if whole + scale > 38 and a.is_decimal and b.is_decimal and not comparison:
            return DECIMAL(38, 38 - whole)
        return DECIMAL(min(whole + scale, 38), scale)
    for chain in _TIMESTAMP_CHAINS:      # DuckDB: TIMESTAMP_NS and TIMESTAMPTZ do not mix
        if a.id in chain and b.id in chain:
            return a if chain.index(a.id) >= chain.index(b.id) else b
    if a.id == "VARCHAR" and (b.is_temporal or b.id == "UUID"):
        return b
    if b.id == "VARCHAR" and (a.is_temporal or a.id == "UUID"):
        return a
    if a.is_string and b.is_string:
        return BLOB
    raise TypeError(f"no common type for {a} and {b}")


_TIMESTAMP_CHAINS = (("DATE", "TIMESTAMP", "TIMESTAMP_NS"),
                     ("DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPTZ_NS"))


def arithmetic_type(op: str, a: DataType, b: DataType) -> DataType:
    """Result type of a binary arithmetic operator, as DuckDB types it.

    op is one of add, sub, mul, div (the `/` operator), intdiv (`//`), mod.
    Raises TypeError when the operands do not fit."""
    if a.id == "NULL":
        a = b if b.id != "NULL" else INTEGER
    if b.id == "NULL":
        b = a
    if not (a.is_numeric and b.is_numeric):
        raise TypeError(f"cannot apply {op} to {a} and {b}")
    if a.is_float or b.is_float:
        # FLOAT with FLOAT, integers or decimals stays FLOAT; DOUBLE wins
        return DOUBLE if DOUBLE in (a, b) else a if a.is_float else b
    if op == "div":
        return DOUBLE
    if a.is_integer and b.is_integer:
        return _arithmetic_integer(a, b)
    if op in ("intdiv", "mod"):
        if op == "intdiv":
            return DOUBLE
        da, db = decimal_of(a), decimal_of(b)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return DOUBLE if whole + max(da.scale, db.scale) > 38 else common_type(a, b)
    da, db = decimal_of(a), decimal_of(b)
    if op in ("add", "sub"):
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return DECIMAL(min(whole + scale + 1, 38), scale)
    # mul
    scale = da.scale + db.scale
    precision = da.precision + db.precision
    if precision > 18 and da.precision <= 18 and db.precision <= 18:
        precision = 18
    if scale > 38:
        raise TypeError(f"decimal multiplication scale {scale} exceeds 38")
    return DECIMAL(min(max(precision, scale), 38), scale)


def _arithmetic_integer(a: DataType, b: DataType) -> DataType:
    """DuckDB: a signed and an unsigned operand where the signed one is not
    wider compute in BIGINT (HUGEINT with UBIGINT)."""
    sa, sb = a.id in _INT_RANK, b.id in _INT_RANK
    if sa != sb:
        signed, unsigned = (a, b) if sa else (b, a)
        if unsigned.id == "UBIGINT":
            return HUGEINT
        if _INT_RANK.index(signed.id) <= _UINT_RANK.index(unsigned.id):
            return BIGINT
    return max_integer(a, b)


def integer_literal_type(value: int) -> DataType:
    """DuckDB types an integer literal as the smallest of INTEGER/BIGINT/HUGEINT."""
    if -2**31 <= value < 2**31:
        return INTEGER
    if -2**63 <= value < 2**63:
        return BIGINT
    return HUGEINT


def decimal_literal_type(text: str) -> DataType:
    """DuckDB types `1.25` as DECIMAL(3,2) and `0.0001` as DECIMAL(5,4):
    precision counts the digits before the point (at least one) and after."""
    t = text.lstrip("+-")
    whole, _, frac = t.partition(".")
    whole = whole.lstrip("0") or "0"
    scale = len(frac)
    precision = max(len(whole) + scale, scale, 1)
    if precision > 38:
        return DOUBLE
    return DECIMAL(precision, scale)
