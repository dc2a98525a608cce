"""Nested values (LIST / MAP / STRUCT, engine/block.py): building vectors from
the scan's assembled trees, and the nested functions of the evaluator.

    struct_extract(s, field_position_literal)   s.a, s['a']
    list_length(l)                              len / array_length / length
    list_extract(l, i)                          l[i], 1-based, negative from the end
    map_extract(m, k)                           m[k], element_at: value or NULL

Every function works on whole vectors: a child is gathered with one take of
the positions the parent's (start, length) / row-index data point at."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector, empty_vector, null_vector, take_block, take_vector
from engine.errors import UnsupportedFeatureError
from planner.types import BIGINT, DataType


# ---------------------------------------------------------------- scan trees
def vector_from_scan(tree, typ: DataType) -> Vector:
    """A Vector of type ``typ`` from scan.nested's tree (ColumnData,
    StructData, ListData, MapData) of one row group."""
    nulls = _nulls(getattr(tree, "nulls", None))
    if typ.id == "STRUCT":
        kids = [vector_from_scan(tree.children[name], t) for name, t in typ.children]
        return Vector(typ, np.arange(tree.num_rows, dtype=np.int64), nulls, children=kids)
    if typ.id in ("LIST", "MAP"):
        off = np.asarray(tree.offsets, np.int64)
        data = np.empty((tree.num_rows, 2), np.int64)
        data[:, 0] = off[:-1]
        data[:, 1] = off[1:] - off[:-1]
        if typ.id == "MAP":
            kv = tree.child
            kids = [vector_from_scan(kv.children["key"], typ.children[0][1]),
                    vector_from_scan(kv.children["value"], typ.children[1][1])]
        else:
            kids = [vector_from_scan(tree.child, typ.children[0][1])]
        return Vector(typ, data, nulls, children=kids)
    n = tree.num_rows
    if typ.id == "NULL":
        return Vector(typ, np.zeros(n, np.bool_), np.ones(n, np.uint8))
    if typ.is_string:
        heap = tree.heap if tree.heap is not None else np.zeros(0, np.uint8)
        return Vector(typ, tree.values, nulls, heap)
    return Vector(typ, tree.values, nulls)


def _nulls(nulls):
    if nulls is None:
        return None
    nulls = nulls.view(np.uint8) if nulls.dtype == np.bool_ else nulls.astype(np.uint8, copy=False)
    return nulls if nulls.any() else None


def null_nested_vector(typ: DataType, n: int) -> Vector:
    """n NULLs of a nested type (empty children)."""
    shape = (n,) if typ.id == "STRUCT" else (n, 2)
    kids = empty_vector(typ).children
    return Vector(typ, np.zeros(shape, np.int64), np.ones(n, np.uint8), children=kids)


# ---------------------------------------------------------------- helpers
def _or_nulls(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def gather(child: Vector, positions: np.ndarray, valid: np.ndarray | None) -> Vector:
    """child rows at ``positions``; rows where ``valid`` is False are NULL."""
    if valid is not None and not valid.all():
        if len(child) == 0:
            return null_nested_vector(child.type, len(positions)) if child.type.is_nested \
                else null_vector(child.type, len(positions))
        positions = np.where(valid, positions, 0)
    out = take_vector(child, positions)
    if valid is not None and not valid.all():
        out.nulls = _or_nulls(out.nulls, (~valid).astype(np.uint8))
    return out


def entry_rows(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For LIST/MAP data (n, 2): (row of each entry, child position of each
    entry), entries of row 0 first."""
    lengths = data[:, 1]
    total = int(lengths.sum())
    rows = np.repeat(np.arange(len(data), dtype=np.int64), lengths)
    if total == 0:
        return rows, np.zeros(0, np.int64)
    firsts = np.cumsum(lengths) - lengths                 # first entry index of each row
    pos = np.arange(total, dtype=np.int64) - firsts[rows] + data[rows, 0]
    return rows, pos


# ---------------------------------------------------------------- functions
def _struct_extract(call, block: Block) -> Vector:
    from engine.expr.evaluate import evaluate
    s = evaluate(call.args[0], block)
    k = int(call.args[1].value)
    out = gather(s.children[k], s.data, None)
    if s.nulls is not None:
        out = Vector(out.type, out.data, _or_nulls(out.nulls, s.nulls), out.heap,
                     children=out.children)
    return out


def _list_length(call, block: Block) -> Vector:
    from engine.expr.evaluate import evaluate
    v = evaluate(call.args[0], block)
    return Vector(BIGINT, v.data[:, 1].astype(np.int64), v.nulls)


def _list_extract(call, block: Block) -> Vector:
    from engine.expr.evaluate import evaluate
    v = evaluate(call.args[0], block)
    idx = evaluate(call.args[1], block)
    i = idx.data.astype(np.int64)
    start, length = v.data[:, 0], v.data[:, 1]
    pos = np.where(i > 0, start + i - 1, start + length + i)
    valid = (i != 0) & (np.abs(i) <= length)
    if v.nulls is not None:
        valid &= v.nulls == 0
    if idx.nulls is not None:
        valid &= idx.nulls == 0
    return gather(v.children[0], pos, valid)


def _map_extract(call, block: Block) -> Vector:
    m, found, at = _map_lookup(call, block)
    if call.func == "map_extract":
        return gather(m.children[1], at, found)
    data = np.stack([at, found.astype(np.int64)], axis=1)
    return Vector(call.type, data, m.nulls, children=[m.children[1]])


def _map_lookup(call, block: Block):
    """(map vector, key found per row, child position of its value)."""
    from engine.expr import arith
    from engine.expr.evaluate import evaluate
    m = evaluate(call.args[0], block)
    key = evaluate(call.args[1], block)
    n = block.n
    rows, pos = entry_rows(m.data if m.nulls is None else
                           np.where((m.nulls != 0)[:, None], 0, m.data))
    keys, values = m.children
    found = np.zeros(n, np.bool_)
    at = np.zeros(n, np.int64)
    if len(pos):
        eq = arith.compare("eq", take_vector(keys, pos), take_vector(key, rows), None)
        hit = eq.data.astype(np.bool_)
        if eq.nulls is not None:
            hit &= eq.nulls == 0
        hit_rows = rows[hit]
        # the first matching entry of each row (entries are in row order)
        first = np.ones(len(hit_rows), np.bool_)
        first[1:] = hit_rows[1:] != hit_rows[:-1]
        found[hit_rows[first]] = True
        at[hit_rows[first]] = pos[hit][first]
    return m, found, at


FUNCS = {"struct_extract": _struct_extract, "list_length": _list_length,
         "list_extract": _list_extract, "map_extract": _map_extract,
         "map_extract_list": _map_extract}


def reject_nested(vectors, what: str) -> None:
    """UnsupportedFeatureError when an operation meets a nested value."""
    for v in vectors:
        if v.type.is_nested:
            raise UnsupportedFeatureError(f"{what} on a {v.type.id} column")


# ---------------------------------------------------------------- unnest
def unnest_block(block: Block, list_col: int, out_type: DataType) -> Block:
    """Each row repeated once per element of its list in column ``list_col``
    (NULL and empty lists give no rows), followed by the element column."""
    v = block.columns[list_col]
    data = v.data if v.nulls is None else np.where((v.nulls != 0)[:, None], 0, v.data)
    rows, pos = entry_rows(data)
    base = take_block(block, rows)
    elem = take_vector(v.children[0], pos) if len(pos) else _empty_of(v.children[0])
    return Block(base.columns + [elem], len(rows))


def _empty_of(child: Vector) -> Vector:
    return empty_vector(child.type)


def _nested_is_null(call, block: Block) -> Vector:
    from engine.expr.evaluate import evaluate
    from planner.types import BOOLEAN
    v = evaluate(call.args[0], block)
    nb = np.zeros(block.n, np.bool_) if v.nulls is None else v.nulls.astype(np.bool_)
    return Vector(BOOLEAN, nb if call.func == "nested_is_null" else ~nb)


FUNCS.update({"nested_is_null": _nested_is_null, "nested_is_not_null": _nested_is_null})
