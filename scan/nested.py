"""Nested columns: the schema's LIST / MAP / STRUCT groups assembled from
repetition and definition levels (Dremel record shredding, undone).

``read_nested(pf, row_group, field)`` returns a tree for the top-level field:
- a flat leaf: ``ColumnData`` (values, nulls, heap) as ``read_column`` gives;
- ``StructData``: ``nulls`` (uint8, 1 = null, or None) and ``children`` by name;
- ``ListData``: ``offsets`` (int64, n + 1), ``nulls`` and one ``child`` whose
  rows are the concatenated list elements;
- ``MapData``: a ``ListData`` whose child is a ``StructData`` of key, value.

Schema interpretation follows the spec's backward-compatibility rules (as
Arrow does): a LIST group's single repeated child is the element when it is
a primitive, a group of several fields, or named ``array`` / ``<list>_tuple``
(the legacy two-level form); otherwise its one child is the element.  A
repeated field outside LIST/MAP is a required list of that field.  A MAP
whose key_value group has one field is a list of keys.

Levels: for a node nested under lists, a "slot" of the node is a level
position whose repetition level is at most the enclosing list's repetition
level and whose definition level reaches the enclosing list's entry level.
The numba kernels below walk the levels once per node."""

from __future__ import annotations

from copy import copy

import numpy as np
from numba import njit

from scan import thrift as T
from scan.codecs import check_codec
from scan.column_data import ColumnData, chunk_errors, to_storage
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.metadata import PLAIN_TYPE_NAMES, check_unlocked
from scan.nested_chunk import LeafLevels, decode_leaf_chunk
from scan.page_values import empty_values
from scan.pages import MAX_DICT_HEADER


# ---- result classes -----------------------------------------------------------

class StructData:
    __slots__ = ("children", "nulls", "num_rows", "name")

    def __init__(self, name, children: dict, nulls, num_rows):
        self.name, self.children, self.nulls, self.num_rows = name, children, nulls, num_rows

    @property
    def validity(self):
        return None if self.nulls is None else self.nulls == 0

    def to_pylist(self) -> list:
        cols = {k: c.to_pylist() for k, c in self.children.items()}
        out = [{k: cols[k][i] for k in cols} for i in range(self.num_rows)]
        return _null_out(out, self.nulls)

    def __repr__(self):
        return f"StructData({self.name!r}, {self.num_rows} rows, {list(self.children)})"


class ListData:
    __slots__ = ("child", "offsets", "nulls", "num_rows", "name")

    def __init__(self, name, child, offsets, nulls, num_rows):
        self.name, self.child, self.offsets = name, child, offsets
        self.nulls, self.num_rows = nulls, num_rows

    @property
    def validity(self):
        return None if self.nulls is None else self.nulls == 0

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def _items(self):
        return self.child.to_pylist()

    def to_pylist(self) -> list:
        items = self._items()
        o = self.offsets.tolist()
        out = [items[o[i]:o[i + 1]] for i in range(self.num_rows)]
        return _null_out(out, self.nulls)

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r}, {self.num_rows} rows)"


class MapData(ListData):
    """A list of struct(key, value); ``to_pylist`` gives lists of (key, value)
    tuples like pyarrow, ``to_pylist(as_dict=True)`` dicts."""
    __slots__ = ()

    @property
    def keys(self):
        return self.child.children["key"]

    @property
    def values(self):
        return self.child.children.get("value")

    def _items(self):
        keys = self.keys.to_pylist()
        vals = self.values.to_pylist() if self.values is not None else [None] * len(keys)
        return list(zip(keys, vals))

    def to_pylist(self, as_dict: bool = False) -> list:
        out = ListData.to_pylist(self)
        return [dict(v) if as_dict and v is not None else v for v in out]


def _null_out(out: list, nulls) -> list:
    if nulls is not None:
        for i in np.flatnonzero(nulls).tolist():
            out[i] = None
    return out


# ---- schema -> logical tree ------------------------------------------------------

class _Node:
    """One element of the Parquet schema tree with its cumulative levels."""
    __slots__ = ("name", "rep", "children", "leaf", "el", "def_level", "rep_level")

    def __init__(self, name, rep, el, def_level, rep_level):
        self.name, self.rep, self.el = name, rep, el
        self.def_level, self.rep_level = def_level, rep_level
        self.children: list = []
        self.leaf = None

    def annotation(self):
        lt = self.el.get("logicalType") or {}
        if "LIST" in lt:
            return "LIST"
        if "MAP" in lt:
            return "MAP"
        ct = self.el.get("converted_type")
        name = T.enum_name(T.CONVERTED_TYPES, ct, "ct") if ct is not None else None
        return {"LIST": "LIST", "MAP": "MAP", "MAP_KEY_VALUE": "MAP"}.get(name)


def schema_tree(schema: list) -> _Node:
    """The schema list (depth-first) as a tree; leaves numbered in order."""
    root = _Node(schema[0].get("name", ""), T.REQUIRED, schema[0], 0, 0)
    pos, leaf = 1, 0

    def walk(parent, n):
        nonlocal pos, leaf
        for _ in range(n):
            el = schema[pos]
            pos += 1
            rep = el.get("repetition_type", T.REQUIRED)
            node = _Node(el["name"], rep, el,
                         parent.def_level + (rep != T.REQUIRED),
                         parent.rep_level + (rep == T.REPEATED))
            parent.children.append(node)
            kids = el.get("num_children") or 0
            if kids > 0 or "type" not in el:
                walk(node, kids)
            else:
                node.leaf = leaf
                leaf += 1

    walk(root, root.el.get("num_children") or 0)
    return root


class _Logical:
    """kind: leaf / struct / list / map.  ``valid_def``: definition level at
    which a slot of this node is non-null.  Lists: ``rep`` and ``entry_def``
    of the repeated node.  ``ctx``: (rep, def) of the enclosing list entry."""
    __slots__ = ("kind", "name", "valid_def", "rep", "entry_def", "children", "leaf", "ctx")

    def __init__(self, kind, name, valid_def, ctx, children=(), leaf=None, rep=0, entry_def=0):
        self.kind, self.name, self.valid_def, self.ctx = kind, name, valid_def, ctx
        self.children, self.leaf, self.rep, self.entry_def = list(children), leaf, rep, entry_def

    def first_leaf(self) -> int:
        return self.leaf if self.kind == "leaf" else self.children[0].first_leaf()


def _list_of(node: _Node, repeated: _Node, element, ctx, name, kind="list"):
    return _Logical(kind, name, node.def_level, ctx, [element], rep=repeated.rep_level,
                    entry_def=repeated.def_level)


def logical(node: _Node, ctx=(0, 0), _depth=0) -> _Logical:
    """The logical type of ``node`` (a schema element not yet known to be a
    list element)."""
    if _depth > 200:
        raise FileFormatError("schema nesting too deep")
    if node.rep == T.REPEATED:            # unannotated repeated field: required list
        inner = (node.rep_level, node.def_level)
        elem = _element(node, inner, _depth)
        return _Logical("list", node.name, node.def_level - 1, ctx, [elem], rep=node.rep_level,
                        entry_def=node.def_level)
    ann = node.annotation() if node.leaf is None else None
    if ann == "LIST":
        if len(node.children) != 1 or node.children[0].rep != T.REPEATED:
            raise UnsupportedFeatureError(f"LIST group {node.name!r} without exactly one "
                                          f"repeated child")
        rep_child = node.children[0]
        inner = (rep_child.rep_level, rep_child.def_level)
        two_level = rep_child.leaf is not None or len(rep_child.children) > 1 or \
            rep_child.name in ("array", node.name + "_tuple")
        if two_level:
            elem = _element(rep_child, inner, _depth)
        else:
            elem = logical(rep_child.children[0], inner, _depth + 1)
        return _list_of(node, rep_child, elem, ctx, node.name)
    if ann == "MAP":
        if len(node.children) != 1 or node.children[0].rep != T.REPEATED \
                or node.children[0].leaf is not None:
            raise UnsupportedFeatureError(f"MAP group {node.name!r} without one repeated "
                                          f"key_value group")
        kv = node.children[0]
        inner = (kv.rep_level, kv.def_level)
        if len(kv.children) == 1:          # a map without values: list of keys (as Arrow)
            return _list_of(node, kv, logical(kv.children[0], inner, _depth + 1), ctx, node.name)
        if len(kv.children) != 2:
            raise UnsupportedFeatureError(f"MAP group {node.name!r} whose key_value has "
                                          f"{len(kv.children)} fields")
        key = logical(kv.children[0], inner, _depth + 1)
        value = logical(kv.children[1], inner, _depth + 1)
        key.name, value.name = "key", "value"
        entry = _Logical("struct", kv.name, kv.def_level, inner, [key, value])
        return _list_of(node, kv, entry, ctx, node.name, kind="map")
    if node.leaf is not None:
        return _Logical("leaf", node.name, node.def_level, ctx, leaf=node.leaf)
    if not node.children:
        raise UnsupportedFeatureError(f"empty group {node.name!r}")
    kids = [logical(c, ctx, _depth + 1) for c in node.children]
    return _Logical("struct", node.name, node.def_level, ctx, kids)


def _element(rep_node: _Node, inner, depth) -> _Logical:
    """The element of a list whose repeated node is ``rep_node`` itself."""
    if rep_node.leaf is not None:
        return _Logical("leaf", rep_node.name, rep_node.def_level, inner, leaf=rep_node.leaf)
    ann = rep_node.annotation()
    if ann is not None:                    # e.g. repeated group array (LIST)
        fake = _Node(rep_node.name, T.REQUIRED, rep_node.el, rep_node.def_level,
                     rep_node.rep_level)
        fake.children = rep_node.children
        return logical(fake, inner, depth + 1)
    kids = [logical(c, inner, depth + 1) for c in rep_node.children]
    if not kids:
        raise UnsupportedFeatureError(f"empty group {rep_node.name!r}")
    return _Logical("struct", rep_node.name, rep_node.def_level, inner, kids)


# ---- level kernels ------------------------------------------------------------------

@njit(nogil=True, cache=True)
def _slots_kernel(defs, reps, ctx_rep, ctx_def, valid_def, nulls):
    """Mark the slots of a node: nulls[k] = 1 when slot k is null.  Returns
    the number of slots."""
    k = 0
    for j in range(defs.shape[0]):
        if reps[j] <= ctx_rep and defs[j] >= ctx_def:
            nulls[k] = 1 if defs[j] < valid_def else 0
            k += 1
    return k


@njit(nogil=True, cache=True)
def _list_kernel(defs, reps, ctx_rep, ctx_def, valid_def, rep, entry_def, offsets, nulls):
    """Offsets and nulls of a list node's slots; returns the slot count."""
    k = 0
    entries = 0
    for j in range(defs.shape[0]):
        d = defs[j]
        r = reps[j]
        if r <= ctx_rep and d >= ctx_def:
            offsets[k] = entries
            nulls[k] = 1 if d < valid_def else 0
            k += 1
        if r <= rep and d >= entry_def:
            entries += 1
    offsets[k] = entries
    return k


@njit(nogil=True, cache=True)
def _scatter_leaf_kernel(defs, reps, ctx_rep, ctx_def, max_def, slot_of_value):
    """For each present value (def == max_def) the slot it lands in."""
    k = 0
    v = 0
    for j in range(defs.shape[0]):
        if reps[j] <= ctx_rep and defs[j] >= ctx_def:
            if defs[j] == max_def:
                slot_of_value[v] = k
                v += 1
            k += 1
    return v


# ---- assembly -----------------------------------------------------------------------

def _assemble(lg: _Logical, leaves: dict, cols):
    lv = leaves[lg.first_leaf()]
    defs, reps = lv.defs, lv.reps
    ctx_rep, ctx_def = lg.ctx
    n = len(defs)
    if lg.kind == "leaf":
        col = cols[lg.leaf]
        nulls = np.empty(n, np.uint8)
        count = _slots_kernel(defs, reps, ctx_rep, ctx_def, lg.valid_def, nulls)
        nulls = nulls[:count]
        values, heap = to_storage(lv.values, lv.heap, _storage_col(col))
        slot = np.empty(len(values), np.int64)
        got = _scatter_leaf_kernel(defs, reps, ctx_rep, ctx_def, col.max_def_level, slot)
        if got != len(values):
            raise FileFormatError(f"leaf {col.name!r} has {len(values)} values for {got} "
                                  f"present slots")
        if got == count:
            out = values
        else:
            shape = (count,) + values.shape[1:]
            out = np.zeros(shape, values.dtype) if values.dtype != object else \
                np.full(shape, 0, object)
            out[slot] = values
        has_nulls = bool(nulls.any())
        return ColumnData(out, nulls if has_nulls else None, heap, count, col)
    if lg.kind == "struct":
        nulls = np.empty(n, np.uint8)
        count = _slots_kernel(defs, reps, ctx_rep, ctx_def, lg.valid_def, nulls)
        children = {}
        for c in lg.children:
            child = _assemble(c, leaves, cols)
            if child.num_rows != count:
                raise FileFormatError(f"struct {lg.name!r}: field {c.name!r} has "
                                      f"{child.num_rows} rows, struct has {count}")
            children[c.name] = child
        nulls = nulls[:count]
        return StructData(lg.name, children, nulls if nulls.any() else None, count)
    offsets = np.empty(n + 1, np.int64)
    nulls = np.empty(n, np.uint8)
    count = _list_kernel(defs, reps, ctx_rep, ctx_def, lg.valid_def, lg.rep, lg.entry_def,
                         offsets, nulls)
    offsets, nulls = offsets[:count + 1], nulls[:count]
    child = _assemble(lg.children[0], leaves, cols)
    if child.num_rows != offsets[-1]:
        raise FileFormatError(f"list {lg.name!r} has {offsets[-1]} elements, its element "
                              f"column {child.num_rows}")
    cls = MapData if lg.kind == "map" else ListData
    return cls(lg.name, child, offsets, nulls if nulls.any() else None, count)


def _storage_col(col):
    """Leaves typed NULL (UNKNOWN) hold no values: read them as physical."""
    if col.type_name == "null":
        col = copy(col)
        col.type_name = PLAIN_TYPE_NAMES[col.physical_type]
    return col


def _leaves_of(lg: _Logical, out: list) -> list:
    if lg.kind == "leaf":
        out.append(lg.leaf)
    for c in lg.children:
        _leaves_of(c, out)
    return out


def top_level_fields(pf) -> list:
    return [c.name for c in schema_tree(pf.metadata.schema).children]


def logical_field(pf, field: str) -> _Logical:
    root = schema_tree(pf.metadata.schema)
    for node in root.children:
        if node.name == field:
            return logical(node)
    raise ValueError(f"no top-level field {field!r} in {pf.path}")


def read_nested(pf, row_group: int, field: str):
    """Assemble top-level field ``field`` of one row group (see module doc)."""
    if not 0 <= row_group < len(pf.row_groups):
        raise ValueError(f"row group {row_group} out of range (file has {len(pf.row_groups)})")
    lg = logical_field(pf, field)
    rg = pf.row_groups[row_group]
    leaves = {}
    for i in _leaves_of(lg, []):
        col, chunk = pf.columns[i], rg.columns[i]
        ctx = dict(file=pf.path, row_group=row_group, column=col.name)
        if col.type_name.startswith("unsupported:"):
            raise UnsupportedFeatureError(col.type_name[len("unsupported:"):]
                                          + f" (column {col.name!r})")
        if chunk.encrypted:
            check_unlocked(chunk)
        if chunk.file_path:
            raise UnsupportedFeatureError(f"column chunk in external file {chunk.file_path!r}")
        check_codec(chunk.codec)
        leaves[i] = _read_leaf(pf, rg, col, chunk, ctx)
    try:
        out = _assemble(lg, leaves, pf.columns)
    except FileFormatError as e:
        raise FileFormatError(str(e), file=pf.path, row_group=row_group, column=field) from None
    if out.num_rows != rg.num_rows:
        raise FileFormatError(f"field assembles to {out.num_rows} rows, row group has "
                              f"{rg.num_rows}", file=pf.path, row_group=row_group, column=field)
    return out


def _read_leaf(pf, rg, col, chunk, ctx):
    if rg.num_rows == 0:
        z = np.zeros(0, np.int32)
        return LeafLevels(z, z, empty_values(col.physical_type), np.zeros(0, np.uint8), 0)
    if chunk.start < 4 or chunk.length <= 0 or chunk.start + chunk.length > pf._data_end:
        raise FileFormatError(f"column chunk byte range {chunk.start}+{chunk.length} lies "
                              f"outside the data region 4..{pf._data_end}", **ctx)
    length = chunk.length
    if pf._pads_chunks:
        length = min(length + MAX_DICT_HEADER, pf._data_end - chunk.start)
    buf = pf.chunk_buffer(chunk, length)
    with chunk_errors(ctx):
        lv = decode_leaf_chunk(buf, col, chunk, pf.verify_checksums)
        if lv.num_levels != chunk.num_values and chunk.num_values >= 0:
            raise FileFormatError(f"column chunk has {lv.num_levels} levels, metadata says "
                                  f"{chunk.num_values}")
        records = int(np.count_nonzero(lv.reps == 0))
        if records != rg.num_rows:
            raise FileFormatError(f"column chunk holds {records} records, row group has "
                                  f"{rg.num_rows} rows")
        return lv
