"""Binding of one SELECT block: WHERE, GROUP BY, aggregates, HAVING, the
select list, DISTINCT, ORDER BY and LIMIT/OFFSET.

Plan shape: FROM tree -> Filter(where) -> Aggregate -> Filter(having) ->
Project -> [Aggregate for DISTINCT] -> Sort -> Limit -> [Project dropping
ORDER BY-only columns].
"""

from __future__ import annotations

from sqlglot import exp

from planner.binder_expressions import (AggregateCollector, AggregateRef,
                                        ExpressionBinder, expr_key, output_name)
from planner.binder_subquery import enter_query, leave_query, plan_conditions, plan_values
from planner.binder_nested import UnnestCollector, windows_used
from planner.binder_star import expand as expand_star, is_star_item
from planner.binder_window import WindowCollector
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, ColumnRef, Expr, Literal, walk
from planner.functions import TypeofLiteral
from planner.logical import Aggregate, Limit, Node, Project, Sort, SortKey


class _Item:
    """One output column of the select list."""

    def __init__(self, name: str, node, expr: Expr, alias: bool):
        self.name = name
        self.node = node
        self.expr = expr
        self.alias = alias


def bind_select(qb, select: exp.Select) -> Node:
    ctx = qb.ctx
    enter_query(ctx, qb)          # subqueries of this block see its CTEs
    _reject_unsupported(select)
    rel = qb.bind_from(select)
    node, scope = rel.node, rel.scope

    where = select.args.get("where")
    if where is not None:
        pred = ExpressionBinder(ctx, scope, "WHERE").bind(where.this)
        _require_boolean(ctx, pred, where.this, "WHERE")
        node = plan_conditions(node, pred)

    collector = AggregateCollector()
    windows = WindowCollector()
    unnests = UnnestCollector(len(scope.columns))
    items = _bind_select_list(ctx, scope, select, collector, windows, unnests)
    if unnests.exprs:
        if select.args.get("group") is not None or collector.aggregates or windows_used(windows):
            raise UnsupportedFeatureError("unnest() together with GROUP BY, aggregates or "
                                          "window functions")
        node = unnests.attach(node)

    group = select.args.get("group")
    groups, group_names = _bind_groups(ctx, scope, group, items) if group is not None else ([], [])

    having_node = select.args.get("having")
    having = None
    if having_node is not None:
        having = ExpressionBinder(ctx, scope, "HAVING", collector).bind(having_node.this)
        _require_boolean(ctx, having, having_node.this, "HAVING")

    order = _bind_order(ctx, scope, select.args.get("order"), items, collector)

    if group is not None or collector.aggregates or having is not None:
        ngroups = len(groups)
        keys = {expr_key(g): i for i, g in enumerate(groups)}

        def rewrite(e: Expr, where_node) -> Expr:
            return _to_aggregate_output(ctx, e, keys, ngroups, groups, group_names,
                                        collector.names, where_node)

        node = Aggregate(node, groups, list(collector.aggregates), group_names,
                         list(collector.names))
        for it in items:
            it.expr = rewrite(it.expr, it.node)
        windows.rewrite(lambda e: rewrite(e, None))
        if having is not None:
            node = plan_conditions(node, rewrite(having, having_node), aggregated=True)
        for o in order:
            if o[0] == "expr":
                o[1] = rewrite(o[1], o[4])
    else:
        for it in items:
            if any(isinstance(e, AggregateRef) for e in walk(it.expr)):
                raise ctx.error("aggregate outside an aggregating query", it.node)

    node = windows.attach(node, items)
    exprs = [it.expr for it in items]
    names = [it.name for it in items]
    sort_keys: list[SortKey] = []
    hidden = 0
    item_keys = {}
    for i, e in enumerate(exprs):
        item_keys.setdefault(expr_key(e), i)
    for kind, value, asc, nulls_first, onode in order:
        if kind == "output":
            idx = value
        else:
            idx = item_keys.get(expr_key(value))
            if idx is None:
                if select.args.get("distinct") is not None:
                    raise ctx.error("ORDER BY expression must appear in the select list "
                                    "of a SELECT DISTINCT", onode)
                idx = len(exprs)
                exprs.append(value)
                names.append(f"__order{hidden}")
                item_keys[expr_key(value)] = idx
                hidden += 1
        sort_keys.append(SortKey(ColumnRef(idx, exprs[idx].type, names[idx]), asc, nulls_first))

    node, exprs = plan_values(node, exprs, aggregated=group is not None
                              or bool(collector.aggregates) or having is not None)
    node = Project(node, exprs, names)
    if select.args.get("distinct") is not None:
        refs = [ColumnRef(i, e.type, n) for i, (e, n) in enumerate(zip(exprs, names))]
        node = Aggregate(node, refs, [], list(names), [])
    if sort_keys:
        node = Sort(node, sort_keys)
    limit, offset = limit_offset(ctx, select)
    if limit is not None or offset:
        node = Limit(node, limit, offset)
    if hidden:
        n = len(items)
        node = Project(node, [ColumnRef(i, exprs[i].type, names[i]) for i in range(n)], names[:n])
    leave_query(ctx)
    return node


def _reject_unsupported(select: exp.Select) -> None:
    for arg, what in (("qualify", "QUALIFY"), ("windows", "WINDOW clause"),
                      ("laterals", "LATERAL"), ("sample", "SAMPLE"), ("pivots", "PIVOT"),
                      ("into", "SELECT INTO"), ("connect", "CONNECT BY")):
        if select.args.get(arg):
            raise UnsupportedFeatureError(f"{what} is not supported")
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise UnsupportedFeatureError("DISTINCT ON is not supported")


def _require_boolean(ctx, e: Expr, node, clause: str) -> None:
    if e.type.id not in ("BOOLEAN", "NULL"):
        raise ctx.error(f"{clause} condition must be BOOLEAN, got {e.type}", node)


def _bind_select_list(ctx, scope, select, collector, windows=None, unnests=None) -> list[_Item]:
    def binder() -> ExpressionBinder:
        b = ExpressionBinder(ctx, scope, "SELECT", collector, windows)
        b.unnests = unnests
        return b

    items: list[_Item] = []
    for e in select.expressions:
        if is_star_item(e):
            items.extend(_Item(it.name, e, it.expr, it.alias)
                         for it in expand_star(ctx, scope, e, lambda n: binder().bind(n)))
            continue
        bound = binder().bind(e)
        name = output_name(e)
        if isinstance(e, exp.Column) and isinstance(bound, ColumnRef):
            name = bound.name          # the table's spelling, like DuckDB
        items.append(_Item(name, e, bound, isinstance(e, exp.Alias)))
    if not items:
        raise ctx.error("SELECT list is empty", select)
    return items


def ordinal(node) -> int | None:
    """n of a positional reference (GROUP BY 2, ORDER BY 1, also -1 or (1),
    which DuckDB reads as out-of-range positions), else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    sign = 1
    if isinstance(node, exp.Neg):
        node, sign = node.this, -1
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return sign * int(node.this)
    return None


def _is_constant_literal(node) -> bool:
    """A literal that is no position: 'x', 1.5, -1.5, NULL (DuckDB: ORDER BY
    such a literal "has no effect" and is an error)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, (exp.Literal, exp.Null, exp.Boolean))


def _position_error(ctx, clause: str, n: int, node):
    return ctx.error(f"{clause} term out of range - should be between 1 and {n}", node)


def _alias_target(node, items: list[_Item], scope, prefer_scope: bool) -> int | None:
    """Select-list position named by a bare identifier (alias or output name)."""
    if not isinstance(node, exp.Column) or node.table or isinstance(node.this, exp.Star):
        return None
    name = node.name.lower()
    if prefer_scope and scope.find(name):
        return None
    for i, it in enumerate(items):
        if it.alias and it.name.lower() == name:
            return i
    return None


def _bind_groups(ctx, scope, group, items):
    for arg in ("rollup", "cube", "grouping_sets"):
        if group.args.get(arg):
            raise UnsupportedFeatureError(f"GROUP BY {arg.upper().replace('_', ' ')} is not supported")
    groups: list[Expr] = []
    names: list[str] = []
    nodes = list(group.expressions)
    if group.args.get("all"):
        for it in items:
            if not any(isinstance(e, AggregateRef) for e in walk(it.expr)):
                groups.append(it.expr)
                names.append(it.name)
        return _dedupe(groups, names)
    for g in nodes:
        k = ordinal(g)
        if k is not None:
            if not 1 <= k <= len(items):
                raise _position_error(ctx, "GROUP BY", len(items), g)
            expr, name = items[k - 1].expr, items[k - 1].name
        else:
            idx = _alias_target(g, items, scope, prefer_scope=True)
            if idx is not None:
                expr, name = items[idx].expr, items[idx].name
            else:
                expr, name = ExpressionBinder(ctx, scope, "GROUP BY").bind(g), output_name(g)
        if any(isinstance(e, AggregateRef) for e in walk(expr)):
            raise ctx.error("aggregate functions are not allowed in GROUP BY", g)
        groups.append(expr)
        names.append(name)
    return _dedupe(groups, names)


def _dedupe(groups, names):
    seen, g2, n2 = set(), [], []
    for g, n in zip(groups, names):
        k = expr_key(g)
        if k not in seen:
            seen.add(k)
            g2.append(g)
            n2.append(n)
    return g2, n2


def is_all(e) -> bool:
    """The ALL of GROUP BY ALL / ORDER BY ALL."""
    return isinstance(e, exp.Var) and e.name.upper() == "ALL"


def _bind_order(ctx, scope, order, items, collector) -> list[list]:
    """Each entry: [kind, value, ascending, nulls_first, node] where kind is
    'output' (value = select-list position) or 'expr' (value = bound expr)."""
    out: list[list] = []
    if order is None:
        return out
    if len(order.expressions) == 1 and is_all(order.expressions[0].this):
        # ORDER BY ALL (DuckDB): every select-list column, left to right
        o = order.expressions[0]
        asc, nulls_first = not o.args.get("desc"), bool(o.args.get("nulls_first"))
        return [["output", i, asc, nulls_first, o] for i in range(len(items))]
    for o in order.expressions:
        e = o.this
        asc = not o.args.get("desc")
        nulls_first = bool(o.args.get("nulls_first"))
        k = ordinal(e)
        if k is not None:
            if not 1 <= k <= len(items):
                raise _position_error(ctx, "ORDER", len(items), e)
            out.append(["output", k - 1, asc, nulls_first, o])
            continue
        if _is_constant_literal(e):
            raise ctx.error("ORDER BY non-integer literal has no effect", e)
        idx = _alias_target(e, items, scope, prefer_scope=False)
        if idx is not None:
            out.append(["output", idx, asc, nulls_first, o])
            continue
        bound = ExpressionBinder(ctx, scope, "ORDER BY", collector).bind(e)
        out.append(["expr", bound, asc, nulls_first, o])
    return out


def _to_aggregate_output(ctx, e: Expr, keys, ngroups, groups, group_names, agg_names,
                         where_node) -> Expr:
    k = expr_key(e)
    if k in keys:
        i = keys[k]
        return ColumnRef(i, groups[i].type, group_names[i])
    if isinstance(e, AggregateRef):
        return ColumnRef(ngroups + e.slot, e.type, agg_names[e.slot])
    if isinstance(e, ColumnRef):
        node = where_node
        if where_node is not None:
            for c in where_node.find_all(exp.Column):
                if c.name.lower() == e.name.lower():
                    node = c
                    break
        raise ctx.error(f"column {e.name} must appear in the GROUP BY clause or be used "
                        "in an aggregate function", node)
    if isinstance(e, Call):
        return Call(e.func, [_to_aggregate_output(ctx, a, keys, ngroups, groups, group_names,
                                                  agg_names, where_node) for a in e.args], e.type)
    if isinstance(e, TypeofLiteral):       # its argument must be valid here too
        _to_aggregate_output(ctx, e.argument, keys, ngroups, groups, group_names, agg_names,
                             where_node)
    return e


def limit_offset(ctx, select) -> tuple[int | None, int]:
    """(LIMIT or None, OFFSET or 0) of a query, constants checked."""
    def value(node, what):
        if node is None:
            return None
        target = node.args.get("expression") or node.this
        from planner.binder_scope import Scope
        bound = ExpressionBinder(ctx, Scope(), what).bind(target)
        if not isinstance(bound, Literal) or not (bound.type.is_integer or bound.type.id == "NULL"):
            raise ctx.error(f"{what} must be a constant integer", target)
        if bound.value is not None and bound.value < 0:
            raise ctx.error(f"{what} must not be negative", target)
        return bound.value

    limit = select.args.get("limit")
    if limit is not None and not isinstance(limit, exp.Limit):
        raise UnsupportedFeatureError(f"{type(limit).__name__} is not supported")
    return value(limit, "LIMIT"), value(select.args.get("offset"), "OFFSET") or 0
