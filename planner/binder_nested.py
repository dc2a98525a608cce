"""Binding nested-value SQL: struct field access (``s.a``, ``t.s.a``,
``s['a']``, ``struct_extract``), list length and indexing (``len``,
``array_length``, ``length``, ``l[i]``, ``list_extract``), map lookup
(``m[k]``, ``element_at``, ``map_extract``) and ``unnest(list)`` in the
SELECT list (an ``Unnest`` plan node).

The hooks in binder_expressions.py call ``bind_nested_node`` for the sqlglot
node classes in ``NESTED_NODES``; it returns None when the node is not about
a nested value, and the ordinary binding goes on."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from planner import functions_nested as FN
from planner.errors import UnsupportedFeatureError
from planner.expressions import ColumnRef, Expr
from planner.logical import Field, Node

NESTED_NODES = (exp.Bracket, exp.StructExtract, exp.Length, exp.ArraySize, exp.Explode,
                exp.Unnest, exp.Dot, exp.Anonymous)

_LENGTH_NAMES = ("len", "array_length", "list_length", "length", "cardinality")
_FUNCTION_NAMES = _LENGTH_NAMES + ("list_extract", "list_element", "array_extract",
                                   "element_at", "map_extract", "map_extract_value", "struct_extract",
                                   "unnest")


@dataclass(eq=False)
class Unnest(Node):
    """Each input row repeated once per element of the LIST ``expr`` (NULL
    and empty lists give no row); output = the input columns, then the
    element column ``name``."""
    child: Node
    expr: Expr
    name: str

    @property
    def schema(self):
        return self.child.schema + [Field(self.name, self.expr.type.children[0][1])]

    @property
    def children(self):
        return [self.child]

    def replace_children(self, children):
        return Unnest(children[0], self.expr, self.name)


class UnnestCollector:
    """The unnest() of one SELECT list (one per block is supported)."""

    def __init__(self, base_width: int):
        self.base_width = base_width
        self.exprs: list[Expr] = []
        self.names: list[str] = []

    def add(self, arg: Expr, name: str) -> ColumnRef:
        if self.exprs:
            raise UnsupportedFeatureError("more than one unnest() in a SELECT list")
        self.exprs.append(arg)
        self.names.append(name)
        return ColumnRef(self.base_width, arg.type.children[0][1], name)

    def attach(self, node: Node) -> Node:
        return Unnest(node, self.exprs[0], self.names[0]) if self.exprs else node


def bind_nested_node(binder, node):
    """A bound expression for a nested-value node, or None (not nested)."""
    cls = type(node)
    if cls is exp.Anonymous:
        name = node.name.lower()
        if name not in _FUNCTION_NAMES:
            return None
        return _function(binder, node, name, node.expressions)
    if cls is exp.StructExtract:
        key = node.expression
        base = binder._bind(node.this)
        if not (isinstance(key, exp.Literal) and key.is_string):
            raise binder.ctx.error("struct_extract needs a constant field name", node)
        return FN.struct_extract(base, key.this)
    if cls in (exp.Length, exp.ArraySize):
        arg = binder._bind(node.this)
        name = "length" if cls is exp.Length else "array_length"
        if arg.type.is_nested or cls is exp.ArraySize:
            return FN.list_length(arg, name)
        return None
    if cls in (exp.Explode, exp.Unnest):
        args = [node.this] if cls is exp.Explode else node.expressions
        return _unnest(binder, node, args)
    if cls is exp.Dot:
        base = binder._bind(node.this)
        return FN.struct_extract(base, node.expression.name)
    if cls is exp.Bracket:
        return _bracket(binder, node)
    return None


def _function(binder, node, name, args):
    if name == "unnest":
        return _unnest(binder, node, args)
    bound = [binder._bind(a) for a in args]
    if name in _LENGTH_NAMES:
        if len(bound) != 1:
            raise binder.ctx.error(f"{name}() takes one argument", node)
        if not bound[0].type.is_nested and name == "length":
            return None
        return FN.list_length(bound[0], name)
    if len(bound) != 2:
        raise binder.ctx.error(f"{name}() takes two arguments", node)
    base, key = bound
    if name == "struct_extract":
        if not (isinstance(args[1], exp.Literal) and args[1].is_string):
            raise binder.ctx.error("struct_extract needs a constant field name", node)
        return FN.struct_extract(base, args[1].this)
    if base.type.id == "MAP":
        return FN.map_extract(base, key, as_list=name in ("element_at", "map_extract"))
    return FN.list_extract(base, key)


def _bracket(binder, node: exp.Bracket):
    if len(node.expressions) != 1 or isinstance(node.expressions[0], exp.Slice):
        raise UnsupportedFeatureError("list slices (l[a:b]) are not supported")
    base = binder._bind(node.this)
    t = base.type
    if t.id == "STRUCT":
        key = node.expressions[0]
        if not (isinstance(key, exp.Literal) and key.is_string):
            raise binder.ctx.error("a struct field must be named by a constant string", node)
        return FN.struct_extract(base, key.this)
    # sqlglot shifts integer-typed indexes to 0-based; undo it (SQL is 1-based)
    from sqlglot.expressions.builders import apply_index_offset
    index_node = apply_index_offset(node.this, [node.expressions[0].copy()], 1,
                                    dialect="duckdb")[0]
    if t.id == "MAP":
        return FN.map_extract(base, binder._bind(index_node))
    if t.id == "LIST":
        return FN.list_extract(base, binder._bind(index_node))
    raise TypeError(f"cannot index a value of type {t}")


def _unnest(binder, node, args):
    collector = getattr(binder, "unnests", None)
    if collector is None:
        raise UnsupportedFeatureError(f"unnest() in {binder.clause} (only in the SELECT list)")
    if len(args) != 1:
        raise UnsupportedFeatureError("unnest() of several lists")
    arg = binder._bind(args[0])
    if arg.type.id != "LIST":
        raise TypeError(f"unnest() needs a LIST, got {arg.type}")
    from planner.binder_expressions import output_name
    return collector.add(arg, output_name(node))


def resolve_struct_column(binder, node: exp.Column):
    """``s.a`` / ``t.s.a`` / ``s.a.b``: struct field access written as a
    qualified column, or None when the parts do not name a struct column."""
    parts = [p.name for p in node.parts]
    scope = binder.scope
    for k in (2, 1):                      # table.column.fields..., then column.fields...
        if len(parts) <= k:
            continue
        table = parts[0] if k == 2 else None
        col = parts[k - 1]
        if table is not None and not scope.has_table(table):
            continue
        hits = scope.find(col, table)
        if len(hits) != 1:
            continue
        c = scope.columns[hits[0]]
        if c.type.id != "STRUCT":
            continue
        expr = ColumnRef(hits[0], c.type, c.name)
        for field in parts[k:]:
            expr = FN.struct_extract(expr, field)
        return expr
    return None


def windows_used(windows) -> bool:
    return bool(windows is not None and getattr(windows, "functions", None))


def reject_nested_keys(node) -> None:
    """The engine's guard: hashing, grouping, sorting and joining on nested
    values raise UnsupportedFeatureError naming the operation (whichever
    binder path built the node)."""
    from planner import logical as L
    reject = FN.reject_nested
    if isinstance(node, L.Aggregate):
        what = "GROUP BY" if node.aggregates or not node.groups else "GROUP BY / DISTINCT"
        reject(what, *node.groups)
        for a in node.aggregates:
            if a.arg is not None and (a.distinct or a.func in ("min", "max", "sum", "avg")):
                reject(f"{a.func}({'DISTINCT ' if a.distinct else ''}...)", a.arg)
    elif isinstance(node, L.Sort):
        reject("ORDER BY", *[k.expr for k in node.keys])
    elif isinstance(node, L.Join):
        reject("join key", *node.left_keys, *node.right_keys)
    elif isinstance(node, L.Limit) and isinstance(node.child, L.Sort):
        reject("ORDER BY", *[k.expr for k in node.child.keys])
