"""Small vector helpers shared by the evaluator modules: null masks, constant
vectors, string vectors from flat buffers, object-array hygiene."""

from __future__ import annotations

import datetime
import functools

import numpy as np

from engine.block import Int64WideVector, Vector
from planner.types import DataType

_EPOCH = datetime.date(1970, 1, 1)


def merge_nulls(*masks):
    """Union of null masks (uint8 or None); None when no input has nulls."""
    out = None
    for m in masks:
        if m is None:
            continue
        out = m.copy() if out is None else np.maximum(out, m)
    return out


def null_bool(nulls, n):
    """Null mask as a bool array (all False when None)."""
    return np.zeros(n, np.bool_) if nulls is None else nulls.view(np.bool_) if nulls.dtype == np.uint8 else nulls.astype(np.bool_)


def as_nulls(mask: np.ndarray):
    """bool mask -> uint8 null mask, or None when nothing is NULL."""
    return mask.astype(np.uint8) if mask.any() else None


def string_vector(typ: DataType, offsets, data, nulls=None) -> Vector:
    from engine.kernels import strings as sk
    views = sk.views_from_flat(offsets, data)
    return Vector(typ, views, nulls, data)


def flat(vec: Vector):
    from engine.kernels import strings as sk
    return sk.flatten(vec.data, vec.heap)


def clean_object(vec: Vector) -> np.ndarray:
    """An object (Python int) array with NULL gaps replaced by 0."""
    data = vec.data
    if data.dtype != object:
        return data.astype(object)
    data = data.copy()
    if vec.nulls is not None:
        data[vec.nulls.astype(bool)] = 0
    mask = np.equal(data, None)
    if mask.any():
        data[mask] = 0
    return data


def _storage_value(value, typ: DataType):
    if typ.id == "DATE" and isinstance(value, datetime.date):
        return (value - _EPOCH).days
    if typ.id in ("TIMESTAMP", "TIMESTAMPTZ") and isinstance(value, datetime.datetime):
        delta = value.replace(tzinfo=None) - datetime.datetime(1970, 1, 1)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return value


def literal_vector(value, typ: DataType, n: int) -> Vector:
    """A constant (storage-form value) broadcast to n rows; None -> all NULL."""
    if typ.is_string:
        if value is None:
            return Vector(typ, np.zeros((n, 2), np.uint64), np.ones(n, np.uint8),
                          np.zeros(0, np.uint8))
        c0, c1, heap = const_view(value)
        views = np.empty((n, 2), np.uint64)
        views[:, 0] = c0
        views[:, 1] = c1
        return Vector(typ, views, None, heap)
    dtype = typ.numpy_dtype
    if value is None:
        if dtype == object:
            data = np.zeros(n, object)
            data[:] = 0
        else:
            data = np.zeros(n, dtype)
        return Vector(typ, data, np.ones(n, np.uint8))
    value = _storage_value(value, typ)
    if dtype == object and (typ.is_decimal or typ.id == "HUGEINT") and isinstance(value, int) \
            and -(1 << 63) <= value < (1 << 63):
        return Int64WideVector(typ, np.full(n, value, np.int64))
    if dtype == object:
        data = np.empty(n, object)
        data[:] = [value] * n if n else []
        return Vector(typ, data)
    return Vector(typ, np.full(n, value, dtype))


def coded_dictionary(vec) -> np.ndarray | None:
    """The dictionary of a NULL-free string vector that carries dictionary
    codes (a scan's CodedVector: data[i] == dictionary[codes[i]], one heap),
    when it is small against the rows: a predicate on a constant is then
    evaluated once per dictionary entry and gathered by code.  Else None."""
    codes = getattr(vec, "codes", None)
    if codes is None or vec.nulls is not None:
        return None
    dictionary = vec.dictionary
    return dictionary if 4 * len(dictionary) < len(codes) else None


def const_view(value) -> tuple[np.uint64, np.uint64, np.ndarray]:
    """One string constant as (word0, word1, heap) for the *_const kernels
    (remembered: predicates ask for the same constants on every block)."""
    return _const_view(type(value), value)


@functools.lru_cache(maxsize=4096)
def _const_view(kind, value):
    """The view layout of engine/kernels/strings.py, built here without a
    kernel: a query of constants needs no numba."""
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    n = len(data)
    word0 = n | (int.from_bytes(data[:4].ljust(4, b"\0"), "little") << 32)
    word1 = 0 if n > 12 else int.from_bytes(data[4:12].ljust(8, b"\0"), "little")
    return np.uint64(word0), np.uint64(word1), np.frombuffer(data, np.uint8).copy()


def scatter(typ: DataType, n: int, parts) -> Vector:
    """Assemble a vector of n rows from [(row indexes, Vector)] pieces; rows
    no piece covers are NULL."""
    from engine.kernels import strings as sk
    nulls = np.ones(n, np.uint8)
    if typ.is_string:
        views = np.zeros((n, 2), np.uint64)
        rebased, heap = sk.unify_heaps([(v.data, v.heap) for _, v in parts])
        for (idx, v), d in zip(parts, rebased):
            views[idx] = d
            nulls[idx] = 0 if v.nulls is None else v.nulls
        return Vector(typ, views, as_nulls(nulls.astype(bool)), heap)
    dtype = typ.numpy_dtype
    data = np.zeros(n, dtype)
    if dtype == object:
        data[:] = 0
    for idx, v in parts:
        src = v.data
        if src.dtype != dtype:
            src = src.astype(dtype)
        data[idx] = src
        nulls[idx] = 0 if v.nulls is None else v.nulls
    return Vector(typ, data, as_nulls(nulls.astype(bool)))
