"""plan_query: bind (constants folded), then apply the rewrite rules.

The optimizer is the list ``RULES``: functions ``rule(plan) -> plan``, one
per module of planner/rules/, each named after its module and applied in
order by ``optimize``.  Some rules run more than once, because a later rule
gives an earlier one more to do:

- OR factoring runs again after predicate pushdown and join-key extraction
  have moved WHERE conjuncts into join residuals: it derives the implied
  single-input filters of those residuals, which pushdown then moves down.
- partition pruning runs before join ordering (whose estimates would open
  every file of a hive table) and again after the rules that push more
  filters down.
- pushdown and key extraction run again after join ordering, for
  conjuncts it would leave above the joins it builds.  As written it puts
  every conjunct that reads a column into its joins itself, so these two
  runs change no plan today (no TPC-H plan, no plan of the records in
  tests/planner/fixtures/).
"""

from __future__ import annotations

from planner.binder import bind_statement
from planner.frontend import parse_query
from planner.logical import Node
from planner.rules.decorrelation import decorrelation
from planner.rules.eager_aggregation import eager_aggregation
from planner.rules.partition_pruning import partition_pruning
from planner.rules.join_extraction import join_extraction
from planner.rules.join_ordering import join_ordering
from planner.rules.or_factoring import or_factoring
from planner.rules.predicate_pushdown import predicate_pushdown
from planner.rules.projection_pruning import projection_pruning
from planner.rules.semijoin_pushdown import semijoin_pushdown
from planner.rules.semijoin_reduction import semijoin_reduction

RULES = (
    decorrelation,          # dependent joins (subqueries) -> joins
    or_factoring,           # shared conjuncts leave ORs
    predicate_pushdown,
    join_extraction,        # equalities across a join -> hash keys
    or_factoring,           # implied per-input filters of join residuals
    predicate_pushdown,     # ... moved down
    partition_pruning,      # before join ordering asks the scans' statistics
    join_ordering,
    predicate_pushdown,     # (a safeguard: see above)
    join_extraction,
    semijoin_reduction,
    semijoin_pushdown,
    eager_aggregation,      # GROUP BY over a join: one input aggregated first
    partition_pruning,      # filters on hive partition columns drop files
    projection_pruning,
)


def _ast_of(ast, sql):
    if isinstance(ast, str):
        sql = sql if sql is not None else ast
        return parse_query(ast.strip().rstrip(";")), sql
    return ast, sql


def bind_only(ast, catalog, params=None, sql=None) -> Node:
    """The bound plan, before any rewrite (constants are already folded)."""
    ast, sql = _ast_of(ast, sql)
    return bind_statement(ast, catalog, params, sql)


def optimize(plan: Node, rules=RULES) -> Node:
    """Apply ``rules`` in order."""
    for rule in rules:
        plan = rule(plan)
    return plan


def plan_query(ast, catalog, params=None, sql=None) -> Node:
    # RULES is read at call time, not bound as optimize's default was, so a
    # test can run the product path without a rule by patching it here.
    return optimize(bind_only(ast, catalog, params, sql), RULES)
