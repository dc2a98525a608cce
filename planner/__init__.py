"""SQL text -> optimized plan.  Imports stats/ and scan/ (schemas).

Public entry points:
    planner.frontend.parse_statements(sql) -> list[Statement]
    planner.plan_query(ast, catalog, params=None, sql=None) -> logical.Node
Heavy modules (sqlglot, the binder) are imported on first use so that
``import planner.errors`` stays cheap.
"""

from __future__ import annotations


def plan_query(ast, catalog, params: list | None = None, sql: str | None = None):
    """Bind ``ast`` (a sqlglot query expression, or SQL text), fold constants,
    apply the rewrite rules and order joins.  Returns the optimized logical
    plan; its root schema names are the output column names.

    A catalog may validate files in the background while it is bound
    (``catalog.confirm_files()``, engine/catalog.py): when a file turns out
    to have changed, the statement is planned once more, on its new
    footer."""
    from planner.optimizer import plan_query as _plan
    confirm = getattr(catalog, "confirm_files", None)
    try:
        plan = _plan(ast, catalog, params, sql)
    except BaseException:
        if confirm is not None:
            confirm_quietly(confirm)
        raise
    if confirm is None or confirm():
        return plan
    plan = _plan(ast, catalog, params, sql)
    confirm()
    return plan


def confirm_quietly(confirm) -> None:
    """Settle a failed planning's background validations (their errors
    give way to the planning's own)."""
    try:
        confirm()
    except Exception:           # noqa: BLE001 - the planning error is raised instead
        pass


def parse_statements(sql: str):
    """planner.frontend.parse_statements (imported on first use)."""
    from planner.frontend import parse_statements as _parse
    return _parse(sql)


def bind_query(ast, catalog, params: list | None = None, sql: str | None = None):
    """The bound but unoptimized plan (for tests and EXPLAIN of the binder)."""
    from planner.optimizer import bind_only
    return bind_only(ast, catalog, params, sql)


__all__ = ["plan_query", "bind_query", "parse_statements"]
