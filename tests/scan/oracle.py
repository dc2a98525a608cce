"""pyarrow as the oracle for scan/ tests: pyarrow values -> pqdb storage form."""

from __future__ import annotations

import math

import pyarrow as pa


def _decimal_to_int(v, scale: int) -> int:
    sign, digits, exp = v.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    shift = exp + scale
    n = n * 10 ** shift if shift >= 0 else n // 10 ** (-shift)
    return -n if sign else n


_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def _temporal_ints(arr: pa.Array, want_per_second: int) -> list:
    unit = getattr(arr.type, "unit", "s")
    have = _UNIT_PER_SECOND[unit]
    if pa.types.is_time32(arr.type):
        arr = arr.cast(pa.int32())
    raw = arr.cast(pa.int64()).to_pylist()
    if have == want_per_second:
        return raw
    if have < want_per_second:
        f = want_per_second // have
        return [None if v is None else v * f for v in raw]
    f = have // want_per_second
    return [None if v is None else v // f for v in raw]


def expected_storage(arr, col) -> list:
    """A pyarrow column as a list in pqdb storage form (None for nulls)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    t = col.type_name
    if pa.types.is_float16(arr.type):
        arr = arr.cast(pa.float32())
    if t in ("string", "blob"):
        return [v.encode() if isinstance(v, str) else v for v in arr.to_pylist()]
    if t.startswith("decimal"):
        return [None if v is None else _decimal_to_int(v, col.scale) for v in arr.to_pylist()]
    if t == "date":
        return arr.cast(pa.int32()).to_pylist()
    if t in ("time_us", "timetz_us", "timestamp_us", "timestamptz_us"):
        return _temporal_ints(arr, 1_000_000)
    if t in ("timestamp_ns", "timestamptz_ns"):
        return _temporal_ints(arr, 1_000_000_000)
    return arr.to_pylist()


def same_values(ours: list, theirs: list) -> bool:
    """Element-wise equality treating NaN == NaN and None == None."""
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if a is None or b is None:
            if a is not b:
                return False
        elif isinstance(a, float) and isinstance(b, float) and math.isnan(a):
            if not math.isnan(b):
                return False
        elif a != b:
            return False
    return True


def first_difference(ours: list, theirs: list) -> str:
    if len(ours) != len(theirs):
        return f"length {len(ours)} != {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if not same_values([a], [b]):
            return f"row {i}: ours {a!r} != pyarrow {b!r}"
    return "equal"


def compare_file(path: str, verify_checksums: bool = True, skip: dict | None = None) -> list:
    """Read every flat column of every row group with pqdb and pyarrow and
    assert equality.  Returns the names of the compared columns."""
    import pyarrow.parquet as pq

    from scan import open_parquet
    skip = skip or {}
    ours = open_parquet(path, verify_checksums=verify_checksums)
    compared = []
    theirs = None
    for rg in range(len(ours.row_groups)):
        for col in ours.columns:
            if col.name in skip or "*" in skip:
                continue
            cd = ours.read_column(rg, col.index)
            theirs = theirs or pq.ParquetFile(path)
            exp = expected_storage(theirs.read_row_group(rg, columns=[col.name]).column(0), col)
            got = cd.to_pylist()
            assert same_values(got, exp), f"{path} rg {rg} {col.name}: {first_difference(got, exp)}"
            assert cd.num_rows == ours.row_groups[rg].num_rows
            compared.append(col.name)
    return sorted(set(compared))


def expected_nested(arr, ours) -> list:
    """A pyarrow (possibly nested) array as the python list that ``ours``
    (a scan.nested tree of the same shape) gives from ``to_pylist``: leaves
    in pqdb storage form, maps as lists of (key, value) tuples."""
    from scan.nested import ListData, MapData, StructData
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    valid = arr.is_valid().to_pylist()
    if isinstance(ours, StructData):
        assert pa.types.is_struct(arr.type), arr.type
        cols = {}
        for i in range(arr.type.num_fields):
            name = arr.type.field(i).name
            cols[name] = expected_nested(arr.field(i), ours.children[name])
        out = [{k: cols[k][r] for k in ours.children} for r in range(len(arr))]
    elif isinstance(ours, (ListData, MapData)):
        offsets = arr.offsets.to_pylist()
        if pa.types.is_map(arr.type):
            keys = expected_nested(arr.keys, ours.child.children["key"])
            vals = expected_nested(arr.items, ours.child.children["value"])
            items = list(zip(keys, vals))
        else:
            items = expected_nested(arr.values, ours.child)
        out = [items[offsets[r]:offsets[r + 1]] for r in range(len(arr))]
    else:
        return expected_storage(arr, ours.column)
    return [v if ok else None for v, ok in zip(out, valid)]


def compare_nested_field(path: str, pf, row_group: int, field: str, theirs=None) -> None:
    """Assert scan.nested reads ``field`` of ``row_group`` as pyarrow does."""
    import pyarrow.parquet as pq
    theirs = theirs or pq.ParquetFile(path)
    ours = pf.read_nested(row_group, field)
    exp = expected_nested(theirs.read_row_group(row_group, columns=[field]).column(0), ours)
    got = ours.to_pylist()
    assert _deep_same(got, exp), f"{path} rg {row_group} {field}: ours {got!r:.400} != " \
                                 f"pyarrow {exp!r:.400}"


def _deep_same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_deep_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_deep_same(a[k], b[k]) for k in a)
    return same_values([a], [b])
