"""A query run on cached footers of remote files whose validations may
still be on their way (engine/catalog.py ``confirm_files``).

A statement on files known from an earlier statement plans on their cached
footers while the files' validations (HEAD) travel in the background.
Waiting for them before the first data request costs a round trip per
statement on an object store, so a query runs at once and the files are
confirmed after the run: its result counts only when every file is
unchanged; when one changed, the run is discarded and the statement,
planned again on the new footers, runs instead.  A changed file cannot
mix versions into the run that is kept: range reads carry If-Match, and
old pages from the caches can only reach the discarded run.  Only queries
run so (no side effects); COPY, EXPLAIN and DESCRIBE confirm first.
"""

from __future__ import annotations

from engine.errors import QueryInterrupted


def run_before_confirmation(run_plan, confirm, plan, replan):
    """``run_plan(plan)``, kept when ``confirm()`` (True: every file
    unchanged) says so, else ``run_plan(replan())``.  A failed run is
    confirmed at once: its error stands unless a file changed.  An
    interrupted run is not confirmed (the next statement's confirmation
    takes its pending validations)."""
    try:
        result = run_plan(plan)
    except QueryInterrupted:
        raise
    except Exception as error:
        try:
            unchanged = confirm()
        except Exception:                   # noqa: BLE001 - the run's error first
            raise error from None
        if unchanged:
            raise
        return run_plan(replan())
    if confirm():
        return result
    return run_plan(replan())
