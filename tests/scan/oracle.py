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
    if t in ("string", "blob"):
        return [v.encode() if isinstance(v, str) else v for v in arr.to_pylist()]
    if t.startswith("decimal"):
        return [None if v is None else _decimal_to_int(v, col.scale) for v in arr.to_pylist()]
    if t == "date":
        return arr.cast(pa.int32()).to_pylist()
    if t in ("time_us", "timestamp_us", "timestamptz_us"):
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
