"""Binding of set operations: UNION [ALL], INTERSECT [ALL], EXCEPT [ALL],
with ORDER BY / LIMIT / OFFSET over the result.

Everything is built on the bag union node ``logical.Union``:

  UNION ALL       Union(left, right)
  UNION           Aggregate(groups = all columns) over the Union (DISTINCT)
  INTERSECT       each side tagged (left 1, right 2), Union, Aggregate over all
  EXCEPT          columns with min(tag) and max(tag); INTERSECT keeps groups
                  with min 1 and max 2, EXCEPT those with max 1
  INTERSECT ALL   as above, but the k-th copy of a row on each side is made
  EXCEPT ALL      distinct by row_number() OVER (PARTITION BY all columns,
                  tag) before grouping: the k-th copy survives INTERSECT ALL
                  when both sides have k copies, EXCEPT ALL when only the left
                  has (so min(l, r) and max(l - r, 0) copies)

Grouping treats NULLs as equal, as set operations must.  Column types are
unified per position with planner.types.common_type; names come from the left.
"""

from __future__ import annotations

from sqlglot import exp

from planner import functions as F
from planner import types as T
from planner.binder_scope import Scope, ScopeColumn
from planner.errors import UnsupportedFeatureError
from planner.expressions import AggregateCall, ColumnRef, Literal
from planner.logical import (Aggregate, Filter, Limit, Node, Project, Sort, SortKey, Union,
                             Window, WindowFunction)

_NAMES = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}


def bind_set_operation(qb, ast) -> Node:
    from planner.binder import QueryBinder
    name = _NAMES[type(ast)]
    if ast.args.get("by_name"):
        raise UnsupportedFeatureError(f"{name} BY NAME is not supported")
    if ast.args.get("side") or ast.args.get("kind") or ast.args.get("on"):
        raise UnsupportedFeatureError(f"{name} with a join side/ON is not supported")
    distinct = ast.args.get("distinct") is not False
    left = QueryBinder(qb.ctx, qb.ctes).bind_query(ast.this)
    right = QueryBinder(qb.ctx, qb.ctes).bind_query(ast.expression)
    ls, rs = left.schema, right.schema
    if len(ls) != len(rs):
        raise qb.ctx.error(f"{name}: the SELECT lists have {len(ls)} and {len(rs)} columns; "
                           "a set operation needs the same number on both sides", ast)
    names = [f.name for f in ls]
    types = [_unify(qb, a.type, b.type, name, ast) for a, b in zip(ls, rs)]
    left, right = _cast_to(left, types, names), _cast_to(right, types, names)
    refs = [ColumnRef(i, t, nm) for i, (t, nm) in enumerate(zip(types, names))]
    if name == "UNION":
        node: Node = Union([left, right], names)
        if distinct:
            node = Aggregate(node, refs, [], list(names), [])
    else:
        node = _intersect_except(name, distinct, left, right, types, names)
    return order_limit(qb, ast, node)


def _unify(qb, a: T.DataType, b: T.DataType, name: str, ast) -> T.DataType:
    try:
        t = T.common_type(a, b)
    except TypeError:
        if a.id == "VARCHAR" or b.id == "VARCHAR":
            t = T.VARCHAR
        else:
            raise qb.ctx.error(f"{name}: no common type for {a} and {b}", ast) from None
    return T.INTEGER if t.id == "NULL" else t


def _cast_to(node: Node, types, names) -> Node:
    schema = node.schema
    exprs = [F.cast(ColumnRef(i, f.type, f.name), t) for i, (f, t) in enumerate(zip(schema, types))]
    if all(f.type == t for f, t in zip(schema, types)) and [f.name for f in schema] == names:
        return node
    return Project(node, exprs, list(names))


def _tagged(node: Node, types, names, tag: int) -> Node:
    exprs = [ColumnRef(i, t, nm) for i, (t, nm) in enumerate(zip(types, names))]
    return Project(node, exprs + [Literal(tag, T.INTEGER)], list(names) + ["__side"])


def _intersect_except(name, distinct, left, right, types, names) -> Node:
    n = len(types)
    node: Node = Union([_tagged(left, types, names, 1), _tagged(right, types, names, 2)],
                       list(names) + ["__side"])
    refs = [ColumnRef(i, t, nm) for i, (t, nm) in enumerate(zip(types, names))]
    tag = ColumnRef(n, T.INTEGER, "__side")
    groups = list(refs)
    group_names = list(names)
    if not distinct:
        copy = WindowFunction("row_number", [], refs + [tag], [], None, T.BIGINT)
        node = Window(node, [copy], ["__copy"])
        groups.append(ColumnRef(n + 1, T.BIGINT, "__copy"))
        group_names.append("__copy")
    k = len(groups)
    aggs = [AggregateCall("min", tag, False, T.INTEGER), AggregateCall("max", tag, False, T.INTEGER)]
    node = Aggregate(node, groups, aggs, group_names, ["__min_side", "__max_side"])
    lo, hi = ColumnRef(k, T.INTEGER, "__min_side"), ColumnRef(k + 1, T.INTEGER, "__max_side")
    if name == "INTERSECT":
        pred = F.logic("and", [F.comparison("eq", lo, Literal(1, T.INTEGER)),
                               F.comparison("eq", hi, Literal(2, T.INTEGER))])
    else:
        pred = F.comparison("eq", hi, Literal(1, T.INTEGER))
    return Project(Filter(node, pred), refs, list(names))


def order_limit(qb, ast, node: Node) -> Node:
    """ORDER BY / LIMIT / OFFSET of ``ast`` (a set operation or a
    parenthesized query) over ``node``, by output names or positions."""
    from planner.binder_expressions import ExpressionBinder
    from planner.binder_select import is_all, limit_offset, ordinal
    order = ast.args.get("order")
    schema = node.schema
    if order is not None and len(order.expressions) == 1 and is_all(order.expressions[0].this):
        o = order.expressions[0]                       # ORDER BY ALL: every column
        node = Sort(node, [SortKey(ColumnRef(i, f.type, f.name), not o.args.get("desc"),
                                   bool(o.args.get("nulls_first")))
                           for i, f in enumerate(schema)])
        order = None
    if order is not None:
        scope = Scope([ScopeColumn(None, f.name, f.type) for f in schema])
        keys = []
        for o in order.expressions:
            e = o.this
            k = ordinal(e)
            if k is not None:
                if not 1 <= k <= len(schema):
                    raise qb.ctx.error(f"ORDER term out of range - should be between 1 and {len(schema)}", e)
                bound = ColumnRef(k - 1, schema[k - 1].type, schema[k - 1].name)
            else:
                bound = ExpressionBinder(qb.ctx, scope, "ORDER BY").bind(e)
            keys.append(SortKey(bound, not o.args.get("desc"), bool(o.args.get("nulls_first"))))
        node = Sort(node, keys)
    limit, offset = limit_offset(qb.ctx, ast)
    if limit is not None or offset:
        node = Limit(node, limit, offset)
    return node
