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
    run, and the caller confirms them (``confirmed`` around its run); a
    failed planning is confirmed at once (the old footer may lack a column
    the new file has)."""
    from planner.optimizer import plan_query as _plan

    def plan():
        return _plan(ast, catalog, params, sql)
    if confirm:
        return confirmed(plan, plan, catalog)
    try:
        return plan()
    except Exception as error:
        def failed():
            raise error
        return confirmed(failed, plan, catalog)


def confirmed(first, again, catalog, passthrough: tuple = ()):
    """``first()``, and the catalog's background file validations settled
    after it (``catalog.confirm_files``): when a file changed, ``again()``
    (and the validations it started settled in turn) -- also when
    ``first()`` failed, as planning may on an old footer.  Otherwise
    ``first()``'s result, or its error, which wins over the validations'.
    An exception of a ``passthrough`` type leaves at once, unconfirmed
    (the next statement's confirmation takes the validations)."""
    confirm = getattr(catalog, "confirm_files", None)
    if confirm is None:
        return first()
    failed = None
    try:
        out = first()
    except passthrough:
        raise
    except Exception as error:
        out, failed = None, error
    try:
        unchanged = confirm()
    except Exception:               # noqa: BLE001 - first()'s error comes first
        if failed is not None:
            raise failed from None
        raise
    if unchanged:
        if failed is not None:
            raise failed
        return out
    out = again()
    confirm()
    return out


def parse_statements(sql: str):
    """planner.frontend.parse_statements (imported on first use)."""
    from planner.frontend import parse_statements as _parse
    return _parse(sql)


def bind_query(ast, catalog, params: list | None = None, sql: str | None = None):
    """The bound but unoptimized plan (for tests and EXPLAIN of the binder)."""
    from planner.optimizer import bind_only

    def bind():
        return bind_only(ast, catalog, params, sql)
    return confirmed(bind, bind, catalog)


__all__ = ["plan_query", "bind_query", "confirmed", "parse_statements"]
