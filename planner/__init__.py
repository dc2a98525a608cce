"""SQL text -> optimized plan.  Imports stats/ and scan/ (schemas).

Public entry points:
    planner.frontend.parse_statements(sql) -> list[Statement]
    planner.plan_query(ast, catalog, params=None, sql=None) -> logical.Node
Heavy modules (sqlglot, the binder) are imported on first use so that
``import planner.errors`` stays cheap.
"""

from __future__ import annotations


def plan_query(ast, catalog, params: list | None = None, sql: str | None = None,
               confirm: bool = True):
    """Bind ``ast`` (a sqlglot query expression, or SQL text), fold constants,
    apply the rewrite rules and order joins.  Returns the optimized logical
    plan; its root schema names are the output column names.

    A catalog may validate files in the background while it is bound
    (``catalog.confirm_files()``, engine/catalog.py): when a file turns out
    to have changed, the statement is planned once more, on its new
    footer.  ``confirm=False``: the plan is returned while they may still
    run, and the caller confirms them (planned_before_confirmation)."""
    from planner.optimizer import plan_query as _plan

    def plan():
        return _plan(ast, catalog, params, sql)
    if confirm:
        return planned_with_confirmed_files(plan, catalog)
    return planned_before_confirmation(plan, catalog)


def planned_before_confirmation(plan, catalog):
    """``plan()`` on the footers at hand, the catalog's background file
    validations perhaps still running: the caller runs the plan and then
    calls ``catalog.confirm_files()``, and discards what it ran when a file
    changed.  A failed planning is confirmed at once: when a file changed
    (the old footer may lack a column the new file has) the statement is
    planned again (planned_with_confirmed_files), else its error stands."""
    try:
        return plan()
    except Exception as error:
        confirm = getattr(catalog, "confirm_files", None)
        if confirm is None:
            raise
        try:
            unchanged = confirm()
        except Exception:           # noqa: BLE001 - the planning error comes first
            raise error from None
        if unchanged:
            raise
    return planned_with_confirmed_files(plan, catalog)


def planned_with_confirmed_files(plan, catalog):
    """``plan()``, and the catalog's background file validations settled
    after it (``catalog.confirm_files``): when a file changed, ``plan()``
    once more -- also when the first planning failed, as it may on the
    old footer (a column the new file added).  Otherwise a failed
    planning's error wins over theirs."""
    confirm = getattr(catalog, "confirm_files", None)
    if confirm is None:
        return plan()
    failed = None
    try:
        out = plan()
    except Exception as error:
        out, failed = None, error
    try:
        unchanged = confirm()
    except Exception:               # noqa: BLE001 - the planning error comes first
        if failed is not None:
            raise failed from None
        raise
    if unchanged:
        if failed is not None:
            raise failed
        return out
    out = plan()
    confirm()
    return out


def parse_statements(sql: str):
    """planner.frontend.parse_statements (imported on first use)."""
    from planner.frontend import parse_statements as _parse
    return _parse(sql)


def bind_query(ast, catalog, params: list | None = None, sql: str | None = None):
    """The bound but unoptimized plan (for tests and EXPLAIN of the binder)."""
    from planner.optimizer import bind_only
    return planned_with_confirmed_files(lambda: bind_only(ast, catalog, params, sql), catalog)


__all__ = ["plan_query", "bind_query", "parse_statements"]
