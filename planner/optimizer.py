"""plan_query: bind, fold, rewrite, order joins.

Rule order: decorrelation (subqueries -> joins) -> OR factoring -> predicate pushdown -> join key extraction ->
OR factoring again (implied per-input filters of join residuals) -> join
ordering -> pushdown and key extraction again (ordering can leave conjuncts
above joins) -> semi-join reduction of grouped join inputs -> semi/anti join
pushdown to the input holding their keys -> projection pruning.
"""

from __future__ import annotations

from planner.logical import Node


def _ast_of(ast, sql):
    if isinstance(ast, str):
        from planner.frontend import parse_query
        sql = sql if sql is not None else ast
        return parse_query(ast.strip().rstrip(";")), sql
    return ast, sql


def bind_only(ast, catalog, params=None, sql=None) -> Node:
    """The bound plan, before any rewrite (constants are already folded)."""
    from planner.binder import bind_statement
    ast, sql = _ast_of(ast, sql)
    return bind_statement(ast, catalog, params, sql)


def optimize(node: Node) -> Node:
    """Apply the rewrite rules in order."""
    from planner.rules.decorrelation import decorrelate
    from planner.rules.join_extraction import extract_join_keys
    from planner.rules.join_ordering import order_joins
    from planner.rules.or_factoring import factor_disjunctions
    from planner.rules.predicate_pushdown import push_down_predicates
    from planner.rules.projection_pruning import prune_columns
    from planner.rules.semijoin_pushdown import push_down_semijoins
    from planner.rules.semijoin_reduction import add_semijoin_reductions
    node = decorrelate(node)
    node = factor_disjunctions(node)
    node = push_down_predicates(node)
    node = extract_join_keys(node)
    node = push_down_predicates(factor_disjunctions(node))
    node = order_joins(node)
    node = push_down_predicates(node)
    node = extract_join_keys(node)
    node = add_semijoin_reductions(node)
    node = push_down_semijoins(node)
    return prune_columns(node)


def plan_query(ast, catalog, params=None, sql=None) -> Node:
    return optimize(bind_only(ast, catalog, params, sql))
