"""String functions: like/ilike, concat, substring, upper, lower, length,
trim/ltrim/rtrim."""

from __future__ import annotations

import numpy as np

from engine.block import Vector
from engine.errors import ExecutionError
from engine.expr import casemap
from engine.expr.vectors import flat, merge_nulls, string_vector
from engine.kernels import like as like_kernels
from engine.kernels import strings as sk
from planner.types import BIGINT, BOOLEAN, DataType


def _pattern_shape(pat: bytes, esc: int):
    """Classify a LIKE pattern: ('exact'|'prefix'|'suffix'|'contains', literal),
    ('pieces', literal pieces between the '%'s) when it has no '_' and no
    escape, else ('general', None)."""
    if esc >= 0 and bytes([esc]) in pat:
        return "general", None
    if b"_" in pat:
        return "general", None
    core = pat.strip(b"%")
    if b"%" in core:
        return "pieces", pat.split(b"%")
    lead = pat.startswith(b"%")
    trail = pat.endswith(b"%") and len(pat) > len(core)
    if not lead and not trail:
        return "exact", core
    if not lead:
        return "prefix", core
    if not trail:
        return "suffix", core
    return "contains", core


def _escape_byte(esc_value) -> int:
    if esc_value is None:
        return -1
    b = esc_value.encode() if isinstance(esc_value, str) else bytes(esc_value)
    if len(b) == 0:
        return -1
    if len(b) != 1:
        raise ExecutionError("Invalid escape string. Escape string must be empty or one character.")
    return b[0]


def like(x: Vector, pattern: Vector, pattern_const, esc_value, case_insensitive: bool) -> Vector:
    """x LIKE pattern; ``pattern_const`` is the pattern's Python value when it
    is a literal (fast paths), else None."""
    if case_insensitive:
        x = change_case(x, upper=False)
        if pattern_const is not None:
            pattern_const = casemap.to_lower(pattern_const) if isinstance(pattern_const, str) \
                else bytes(pattern_const).lower()
        else:
            pattern = change_case(pattern, upper=False)
    esc = _escape_byte(esc_value)
    nulls = merge_nulls(x.nulls, pattern.nulls)
    views = np.ascontiguousarray(x.data)
    heap = sk.as_heap(x.heap)
    if pattern_const is not None:
        pat = pattern_const.encode() if isinstance(pattern_const, str) else bytes(pattern_const)
        kind, lit = _pattern_shape(pat, esc)
        lit_arr = np.frombuffer(lit or b"", np.uint8) if kind != "pieces" else None
        if kind == "exact":
            w, h, _ = sk.views_from_pylist([lit])
            res = sk.equal_views_const(views, heap, w[0, 0], w[0, 1], h)
        elif kind == "prefix":
            res = like_kernels.affix_const(views, heap, lit_arr, False)
        elif kind == "suffix":
            res = like_kernels.affix_const(views, heap, lit_arr, True)
        elif kind in ("contains", "pieces"):      # on the views: no flattening
            pieces = [b"", lit, b""] if kind == "contains" else lit
            bounds = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
            res = like_kernels.like_pieces(views, heap, np.frombuffer(b"".join(pieces) or b"\0", np.uint8),
                                 bounds)
        else:
            offsets, data = flat(x)
            res = like_kernels.like_const(offsets, data, np.frombuffer(pat, np.uint8), esc)
        return Vector(BOOLEAN, res, nulls)
    offsets, data = flat(x)
    poff, pdata = flat(pattern)
    return Vector(BOOLEAN, like_kernels.like_rows(offsets, data, poff, pdata, esc), nulls)


def concat(args: list[Vector], out_type: DataType) -> Vector:
    """a || b || ...: NULL when any argument is NULL."""
    nulls = merge_nulls(*[a.nulls for a in args])
    offsets, data = flat(args[0])
    for a in args[1:]:
        o2, d2 = flat(a)
        offsets, data = sk.concat_flat(offsets, data, o2, d2)
    return string_vector(out_type, offsets, data, nulls)


def substring(x: Vector, start: Vector, length: Vector | None, out_type: DataType) -> Vector:
    nulls = merge_nulls(x.nulls, start.nulls, None if length is None else length.nulls)
    offsets, data = flat(x)
    n = len(x.data)
    starts = _as_int64(start, n)
    lens = _as_int64(length, n) if length is not None else np.zeros(n, np.int64)
    o, d = sk.substring_flat(offsets, data, starts, lens, length is not None)
    return string_vector(out_type, o, d, nulls)


def _as_int64(v: Vector, n: int) -> np.ndarray:
    data = v.data
    if data.dtype == object:
        data = np.array([0 if e is None else int(e) for e in data], np.int64)
    data = data.astype(np.int64)
    if v.nulls is not None:
        data = np.where(v.nulls.astype(bool), 0, data)
    return data


def change_case(x: Vector, upper: bool) -> Vector:
    """upper/lower: ASCII kernel; non-ASCII text goes through Python."""
    offsets, data = flat(x)
    if len(data) == 0 or int(data.max()) < 0x80:
        return string_vector(x.type, offsets, sk.ascii_case(data, upper), x.nulls)
    texts = sk.views_to_pylist(x.data, x.heap, None)
    fn = casemap.to_upper if upper else casemap.to_lower       # DuckDB: code point by code point
    out = [fn(t) for t in texts]
    views, heap, _ = sk.views_from_pylist(out)
    return Vector(x.type, views, x.nulls, heap)


def length(x: Vector, out_type: DataType) -> Vector:
    if x.type.id == "BLOB":
        res = (x.data[:, 0] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    else:
        offsets, data = flat(x)
        res = sk.char_lengths(offsets, data)
    return Vector(out_type if out_type.is_integer else BIGINT, res.astype(out_type.numpy_dtype), x.nulls)


def trim(x: Vector, left: bool, right: bool, out_type: DataType) -> Vector:
    """trim (both sides), ltrim (``left``) or rtrim (``right``) of ' ' bytes."""
    from engine.kernels.string_trim import trim_flat
    offsets, data = flat(x)
    o, d = trim_flat(offsets, data, left, right)
    return string_vector(out_type, o, d, x.nulls)
