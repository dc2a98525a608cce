"""The binder: sqlglot query ASTs -> logical plans with resolved names/types.

This module binds queries and FROM clauses (tables, views, CTEs, joins);
binder_select.py binds the clauses of one SELECT block and
binder_expressions.py the expressions.
"""

from __future__ import annotations

import os

from sqlglot import exp

from planner import functions as F
from planner.binder_coverage import check_tree
from planner.binder_expressions import ExpressionBinder
from planner.binder_params import number_placeholders
from planner.binder_scope import BindContext, Scope, ScopeColumn
from planner.catalog import TableInfo, table_statistics
from planner.errors import UnsupportedFeatureError
from planner.expressions import conjunction
from planner.logical import Field, Join, Node, OneRow, Project, Scan

_SET_OPS = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}
_PARQUET_FUNCTIONS = ("read_parquet", "parquet_scan")
# read_parquet(..., name = value) options bound (the rest are refused by name)
_PARQUET_OPTIONS = {"hive_partitioning": "boolean", "encryption_config": "encryption"}


class Relation:
    """A bound FROM item: its plan and the names visible from it."""

    def __init__(self, node: Node, scope: Scope):
        self.node = node
        self.scope = scope


def bind_statement(ast, catalog, params: list | None = None, sql: str | None = None) -> Node:
    """Bind a query AST; the root's schema names are the output column names."""
    check_tree(ast)                  # every part of the tree is bound or refused by name
    ctx = BindContext(catalog, params, sql)
    # (a walk of the whole tree: skipped when the text cannot hold a ? or $n)
    maybe = sql is None or "?" in sql or "$" in sql
    placeholders = ([n for n in _textual_order(ast) if isinstance(n, exp.Placeholder)]
                    if maybe and ast.find(exp.Placeholder) is not None else [])
    ctx.placeholders.update(number_placeholders(placeholders, params))
    return QueryBinder(ctx, {}).bind_query(ast)


class QueryBinder:
    """Binds one query level; ``ctes`` maps visible CTE names to their ASTs."""

    def __init__(self, ctx: BindContext, ctes: dict):
        self.ctx = ctx
        self.ctes = dict(ctes)

    def bind_query(self, ast) -> Node:
        with_ = ast.args.get("with_")
        binder = self
        if with_ is not None:
            if with_.args.get("recursive"):
                raise UnsupportedFeatureError("WITH RECURSIVE is not supported")
            binder = QueryBinder(self.ctx, self.ctes)
            for cte in with_.expressions:
                binder.ctes[cte.alias_or_name.lower()] = (cte.this, cte.args.get("alias"),
                                                          dict(binder.ctes))
        return binder._bind_body(ast)

    def _bind_body(self, ast) -> Node:
        if isinstance(ast, exp.Subquery):
            return self.subquery_modifiers(ast, self._bind_body_with(ast.this))
        if isinstance(ast, tuple(_SET_OPS)):
            from planner.binder_setops import bind_set_operation
            return bind_set_operation(self, ast)
        if not isinstance(ast, exp.Select):
            raise UnsupportedFeatureError(f"{type(ast).__name__} as a query is not supported")
        from planner.binder_select import bind_select
        return bind_select(self, ast)

    def _bind_body_with(self, ast) -> Node:
        return self.bind_query(ast)

    def subquery_modifiers(self, sub: exp.Subquery, node: Node) -> Node:
        """ORDER BY / LIMIT / OFFSET written after a parenthesized query,
        ``(SELECT ...) ORDER BY a LIMIT 1``, over its bound plan."""
        if not any(sub.args.get(k) for k in ("order", "limit", "offset")):
            return node
        from planner.binder_setops import order_limit
        return order_limit(self, sub, node)

    # ---- FROM ----------------------------------------------------------------
    def bind_from(self, select: exp.Select) -> Relation:
        from_ = select.args.get("from_")
        if from_ is None:
            if select.args.get("joins"):
                raise self.ctx.error("JOIN without FROM", select)
            return Relation(OneRow(), Scope())
        self._check_duplicate_aliases(select)
        rel = self.bind_table_item(from_.this)
        for join in select.args.get("joins") or []:
            rel = self._bind_join(rel, join)
        return rel

    def _check_duplicate_aliases(self, select) -> None:
        from_ = select.args.get("from_")
        items = [from_.this] + [j.this for j in select.args.get("joins") or []]
        names: dict[str, object] = {}
        for item in items:
            alias = item.alias_or_name if isinstance(item, exp.Table) else item.alias
            if isinstance(item, exp.Table) and not item.alias and not isinstance(item.this, exp.Identifier):
                continue            # table functions: DuckDB names them after the function
            if isinstance(item, exp.Table) and not item.alias and isinstance(item.this, exp.Identifier) \
                    and item.this.quoted:
                alias = os.path.splitext(os.path.basename(item.name.rstrip("/")))[0].split(".")[0]
            key = (alias or "").lower()
            if key and key in names:
                raise self.ctx.error(f"duplicate table name or alias {alias!r} in FROM", item)
            names[key] = item

    def _bind_join(self, left: Relation, join: exp.Join) -> Relation:
        right = self.bind_table_item(join.this)
        side = (join.args.get("side") or "").upper()
        kind = (join.args.get("kind") or "").upper()
        if join.args.get("method") or kind in ("SEMI", "ANTI", "ASOF", "POSITIONAL"):
            raise UnsupportedFeatureError(f"{kind or join.args.get('method')} JOIN is not supported")
        if kind == "OUTER" and not side:
            side = "FULL"
        join_kind = {"": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}.get(side)
        if join_kind is None:
            raise UnsupportedFeatureError(f"{side} JOIN is not supported")
        on, using = join.args.get("on"), join.args.get("using")
        scope = left.scope.concat(right.scope)
        if on is None and not using:
            if join_kind != "inner" or kind not in ("", "CROSS"):
                raise self.ctx.error(f"{side or kind} JOIN needs ON or USING", join)
            node = Join(left.node, right.node, "cross", [], [])
            return Relation(node, scope)
        if using:
            predicate, scope = self._using(left, right, using, join_kind, join)
        else:
            predicate = ExpressionBinder(self.ctx, scope, "JOIN condition").bind(on)
            if predicate.type.id != "BOOLEAN":
                raise self.ctx.error("JOIN condition must be BOOLEAN", on)
        from planner.binder_subquery import has_subquery, plan_join_condition
        if has_subquery(predicate):
            return Relation(plan_join_condition(left.node, right.node, join_kind, predicate), scope)
        # keys are extracted by planner.rules.join_extraction
        return Relation(Join(left.node, right.node, join_kind, [], [], predicate), scope)

    def _using(self, left: Relation, right: Relation, using, join_kind: str, join):
        conds = []
        columns = list(left.scope.columns) + list(right.scope.columns)
        nleft = len(left.scope.columns)
        for ident in using:
            name = ident.name
            lh, rh = left.scope.find(name), right.scope.find(name)
            if len(lh) != 1 or len(rh) != 1:
                side = "left" if len(lh) != 1 else "right"
                what = "not found" if not (lh if side == "left" else rh) else "ambiguous"
                raise self.ctx.error(f"USING column {name} {what} on the {side} side", ident)
            lcol, rcol = left.scope.columns[lh[0]], right.scope.columns[rh[0]]
            from planner.expressions import ColumnRef
            conds.append(F.comparison("eq", ColumnRef(lh[0], lcol.type, lcol.name),
                                      ColumnRef(nleft + rh[0], rcol.type, rcol.name)))
            if join_kind in ("inner", "left"):
                c = columns[nleft + rh[0]]
                columns[nleft + rh[0]] = ScopeColumn(c.table, c.name, c.type, hidden=True)
            elif join_kind == "right":
                c = columns[lh[0]]
                columns[lh[0]] = ScopeColumn(c.table, c.name, c.type, hidden=True)
            else:
                raise UnsupportedFeatureError("FULL JOIN ... USING is not supported")
        return conjunction(conds), Scope(columns)

    def bind_table_item(self, item) -> Relation:
        for arg, what in (("sample", "TABLESAMPLE"), ("pivots", "PIVOT"),
                          ("joins", "nested JOIN"), ("laterals", "LATERAL"),
                          ("when", "time travel"), ("version", "time travel")):
            if item.args.get(arg):
                raise UnsupportedFeatureError(f"{what} is not supported")
        alias_node = item.args.get("alias")
        alias = alias_node.name if alias_node is not None and alias_node.name else None
        col_aliases = [c.name for c in alias_node.columns] if alias_node is not None else []
        if isinstance(item, exp.Subquery):
            binder = QueryBinder(self.ctx, self.ctes)
            node = binder.subquery_modifiers(item, binder.bind_query(item.this))
            return self._named(node, alias, col_aliases, item)
        if isinstance(item, exp.Table):
            return self._bind_table(item, alias, col_aliases)
        if isinstance(item, (exp.Lateral, exp.Unnest)):
            raise UnsupportedFeatureError(f"{type(item).__name__.upper()} in FROM is not supported")
        if isinstance(item, exp.Values):
            raise UnsupportedFeatureError("VALUES in FROM is not supported")
        raise UnsupportedFeatureError(f"{type(item).__name__} in FROM is not supported")

    def _bind_table(self, table: exp.Table, alias, col_aliases) -> Relation:
        target = table.this
        if isinstance(target, (exp.ReadParquet, exp.Anonymous)) or (
                isinstance(target, exp.Func) and not isinstance(target, exp.Identifier)):
            return self._table_function(target, alias, col_aliases, table)
        name = table.name
        qualified = bool(table.args.get("db") or table.args.get("catalog"))
        quoted = isinstance(target, exp.Identifier) and target.quoted
        if not qualified:
            cte = self.ctes.get(name.lower())
            if cte is not None:
                body, cte_alias, visible = cte
                node = QueryBinder(self.ctx, visible).bind_query(body)
                names = [c.name for c in cte_alias.columns] if cte_alias is not None else []
                return self._named(node, alias or name, col_aliases or names, table)
            view = self.ctx.catalog.lookup_view(name) if self.ctx.catalog is not None else None
            if view is not None:
                check_tree(view)
                self.ctx.view_depth += 1
                try:
                    node = QueryBinder(self.ctx, {}).bind_query(view)
                finally:
                    self.ctx.view_depth -= 1
                return self._named(node, alias or name, col_aliases, table)
        if qualified or quoted or any(ch in name for ch in "./*:"):
            spec = ".".join(p.name for p in table.parts) if qualified and not quoted else name
            default = os.path.splitext(os.path.basename(spec.rstrip("/")))[0] or spec
            return self._scan([spec], alias or default.split(".")[0], col_aliases, table)
        raise self.ctx.error(f"table {name} does not exist (not a view, CTE or file)", table)

    def _table_function(self, func, alias, col_aliases, table) -> Relation:
        name = func.name.lower() if isinstance(func, exp.Anonymous) else func.sql_name().lower()
        if name == "pqdb_statistics":
            return self._statistics_table(func, alias, col_aliases, table)
        if name not in _PARQUET_FUNCTIONS:
            raise UnsupportedFeatureError(f"table function {name}() is not supported")
        args = func.expressions
        specs: list[str] = []
        options: dict = {}
        for arg in args:
            if isinstance(arg, exp.EQ):          # named options
                opt = arg.this.name.lower()
                if opt not in _PARQUET_OPTIONS:
                    raise UnsupportedFeatureError(f"{name}() option {opt} is not supported")
                options[opt] = self._option_value(name, opt, arg.expression)
                continue
            if isinstance(arg, exp.Literal) and arg.is_string:
                specs.append(arg.this)
            elif isinstance(arg, exp.Array) and all(
                    isinstance(a, exp.Literal) and a.is_string for a in arg.expressions):
                specs.extend(a.this for a in arg.expressions)
            else:
                raise self.ctx.error(f"{name}() takes a string or a list of strings", arg)
        if not specs:
            raise self.ctx.error(f"{name}() needs a file name", table)
        return self._scan(specs, alias or name, col_aliases, table, options)

    def _statistics_table(self, func, alias, col_aliases, table) -> Relation:
        """pqdb_statistics('path or glob'): what the connection's statistics
        know of a table, one row per column (catalog.statistics_table), as
        a UNION ALL of constant rows."""
        from planner.expressions import Literal
        from planner.logical import Filter, Union
        from planner.types import BOOLEAN
        args = func.expressions
        if len(args) != 1 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
            raise self.ctx.error("pqdb_statistics() takes one file name, glob or directory",
                                 table)
        method = getattr(self.ctx.catalog, "statistics_table", None)
        if method is None:
            raise UnsupportedFeatureError("pqdb_statistics() needs a catalog with statistics")
        columns, rows = method(args[0].this)
        names = [n for n, _ in columns]

        def row(values):
            return Project(OneRow(), [Literal(v, t) for v, (_, t) in zip(values, columns)], names)
        if not rows:
            node = Filter(row([None] * len(columns)), Literal(False, BOOLEAN))
        elif len(rows) == 1:
            node = row(rows[0])
        else:
            node = Union([row(r) for r in rows], names)
        return self._named(node, alias or "pqdb_statistics", col_aliases, table)

    def _option_value(self, func: str, opt: str, node):
        if _PARQUET_OPTIONS[opt] == "encryption":
            from planner.binder_options import encryption_config
            return encryption_config(self.ctx, func, node)
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Literal) and not node.is_string and node.this in ("0", "1"):
            return node.this == "1"
        if isinstance(node, exp.Literal) and node.is_string and \
                node.this.lower() in ("true", "false"):
            return node.this.lower() == "true"
        raise self.ctx.error(f"{func}() option {opt} takes a boolean", node)

    def _scan(self, specs: list[str], alias: str, col_aliases, where,
              options: dict | None = None) -> Relation:
        info = self._table_info(specs, where, options or {})
        fields = [Field(n, t, alias) for n, t in info.columns]
        node = Scan(list(info.files), fields, list(range(len(fields))), [], info.row_count, alias,
                    table_statistics(self.ctx.catalog, info.files), info.partitions)
        return self._named(node, alias, col_aliases, where, scan=True)

    def _table_info(self, specs: list[str], where, options: dict) -> TableInfo:
        if self.ctx.catalog is None:
            raise self.ctx.error("no catalog to resolve tables", where)
        if options or (len(specs) > 1 and getattr(self.ctx.catalog, "takes_lists", False)):
            # the catalog sees the whole list: one hive detection and partition
            # typing, one schema check, the files opened together
            return self.ctx.catalog.table_info(specs if len(specs) > 1 else specs[0], **options)
        infos = [self.ctx.catalog.table_info(s) for s in specs]
        first = infos[0]
        for spec, info in zip(specs[1:], infos[1:]):
            if [(n.lower(), t) for n, t in info.columns] != [(n.lower(), t) for n, t in first.columns]:
                raise self.ctx.error(f"schema of {spec} differs from {specs[0]}", where)
        partitions = None
        if any(i.partitions for i in infos):
            partitions = {f: v for i in infos for f, v in (i.partitions or {}).items()}
        return TableInfo([f for i in infos for f in i.files], list(first.columns),
                         sum(i.row_count for i in infos), partitions)

    def _named(self, node: Node, alias, col_aliases, where, scan: bool = False) -> Relation:
        schema = node.schema
        if len(col_aliases) > len(schema):
            raise self.ctx.error(f"{alias} has {len(schema)} columns but {len(col_aliases)} "
                                 "aliases were given", where)
        names = list(col_aliases) + [f.name for f in schema[len(col_aliases):]]
        if col_aliases and scan:
            node = Project(node, _refs(schema), names)
        elif col_aliases and isinstance(node, Project):
            node = Project(node.child, node.exprs, names)
        elif col_aliases:
            node = Project(node, _refs(schema), names)
        scope = Scope([ScopeColumn(alias, n, f.type) for n, f in zip(names, schema)])
        return Relation(node, scope)


def _textual_order(node):
    """Nodes in source order (arguments in their grammar order)."""
    yield node
    for key in type(node).arg_types:
        value = node.args.get(key)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, exp.Expression):
                yield from _textual_order(child)


def _refs(schema: list[Field]):
    from planner.expressions import ColumnRef
    return [ColumnRef(i, f.type, f.name) for i, f in enumerate(schema)]
