"""EXPLAIN and EXPLAIN ANALYZE: run a query while counting what each
logical plan node did, then print the plan with it (planner/explain.py).

Rows are counted per logical node, where the executor produces them
(engine/executor.py hands the profile every piece it builds):

- a streaming node (Scan, Filter, Project, Unnest, a probing join, a
  UNION ALL read input after input): a counter after its last operator
  (its source for a Scan) counts the rows it emits;
- a breaker (Aggregate, Sort, Limit, Window, Union, outer and keyless
  joins, a semi/anti join built on its outer rows): the rows of the block
  it materializes;
- fused nodes: a Sort under a LIMIT (top-N) reports the rows it sorted
  (its input's); an Aggregate under a HAVING Filter the groups it made
  before HAVING (the Filter reports the rows HAVING kept);
- a breaker computed once for an identical subplan used twice (a CTE)
  reports its rows at every use; the reused subtree repeats the first
  one's counts and times, noted ``shared``.

Under a LIMIT without ORDER BY the input stops early: its nodes report
the rows they produced before the stop, as PostgreSQL's ANALYZE does.

Time is wall time in a node's own pieces (its source, operators and sink,
not its inputs'), summed over the threads that ran them: with 2 threads
a node's time may reach twice the elapsed time.  Clocks run only when
the query is analyzed; with statistics on, every other query counts rows
alone (``QueryProfile(timed=False)``: a counter per block, no measurable
cost) and, once complete, leaves them for cardinality feedback
(``record_feedback``, planner/feedback.py); with statistics off nothing
of this runs (ExecutionContext.profile is None).  An analyzed run is a
real run: it collects statistics and feedback as any other run does.
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from time import perf_counter

from engine.pipeline import Operator
from planner import logical as L
from planner.explain import OperatorRun, explain, explain_tree


class NodeRun:
    """What one plan node did: rows out, seconds, skipped data (scans)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = 0
        self.counted = False          # rows known (a counter or a block)
        self.materialized = False     # rows set from the node's block: no counter after
        self.time_s = 0.0
        self.pruning = None           # engine.context.PruningCounters of a Scan
        self.note = ""

    def add_rows(self, n: int) -> None:
        with self.lock:
            self.rows += n

    def add_time(self, seconds: float) -> None:
        with self.lock:
            self.time_s += seconds


class TimedOperator(Operator):
    """An operator whose process() time goes to a plan node; with
    ``counts``, the rows it emits are that node's rows."""

    def __init__(self, op, run: NodeRun, counts: bool):
        self.op, self.run, self.counts = op, run, counts

    def process(self, block):
        run = self.run
        t0 = perf_counter()
        it = iter(self.op.process(block))
        while True:
            try:
                out = next(it)
            except StopIteration:
                run.add_time(perf_counter() - t0)
                return
            run.add_time(perf_counter() - t0)
            if self.counts:
                run.add_rows(out.n)
            yield out
            t0 = perf_counter()


class RowCounter(Operator):
    """Counts the rows passing by as a plan node's rows."""

    def __init__(self, run: NodeRun):
        self.run = run

    def process(self, block):
        self.run.add_rows(block.n)
        return (block,)


def _timed_blocks(blocks, run: NodeRun, counts: bool):
    """A source's ``blocks(morsel)`` whose time (and rows) go to ``run``."""
    def timed(morsel):
        it = blocks(morsel)
        try:
            while True:
                t0 = perf_counter()
                try:
                    b = next(it)
                except StopIteration:
                    run.add_time(perf_counter() - t0)
                    return
                run.add_time(perf_counter() - t0)
                if counts:
                    run.add_rows(b.n)
                yield b
        finally:
            it.close()          # a stopped morsel: the source's own cleanup runs now
    return timed


def _timed_call(fn, run: NodeRun):
    def timed(*args):
        t0 = perf_counter()
        try:
            return fn(*args)
        finally:
            run.add_time(perf_counter() - t0)
    return timed


class QueryProfile:
    """The per-node runs of one analyzed query (ExecutionContext.profile).
    ``timed=False``: rows only (a counter per block after each node's last
    operator, no clocks): what every query with statistics on counts for
    cardinality feedback (record_feedback)."""

    def __init__(self, timed: bool = True):
        self.timed = timed
        self.runs: dict[int, NodeRun] = {}
        self._keep: list = []          # the nodes whose ids key runs
        # id -> weak reference of the pieces seen: weak, so a released
        # operator's table (and a sink's rows) go when the pipeline drops it,
        # not when the query ends (an id reused by a later piece is told
        # apart by its dead reference)
        self._wrapped: dict[int, object] = {}
        self._reused: list = []        # (node, the node computed first)
        self._having: list = []        # (Aggregate, its HAVING sink's groups_made list)

    def run_of(self, node) -> NodeRun:
        run = self.runs.get(id(node))
        if run is None:
            run = self.runs[id(node)] = NodeRun()
            self._keep.append(node)
        return run

    def _mark(self, piece) -> bool:
        """True the first time ``piece`` is seen (it belongs to the node asking)."""
        seen = self._wrapped.get(id(piece))
        if seen is not None and seen() is piece:
            return False
        self._wrapped[id(piece)] = weakref.ref(piece)
        return True

    # ---- what the executor calls
    def stream(self, node, source, ops):
        """(source, ops) of ``node``'s stream, the pieces it added (the ops
        at the end, or the source) timed for it, and its rows counted where
        they leave its last piece -- unless its block was counted already
        (a breaker read back as a stream)."""
        run = self.run_of(node)
        count = not run.materialized
        new_ops = [i for i, op in enumerate(ops) if self._mark(op)]
        ops = list(ops)
        if not self.timed:
            if self._mark(source) and isinstance(node, L.Scan):
                run.pruning = getattr(source, "pruning", None)
            if count:                          # the node's pieces are at the end
                ops.append(RowCounter(run))
                self._mark(ops[-1])
            run.counted = run.counted or count
            return source, ops
        if self._mark(source):
            if isinstance(node, L.Scan):
                run.pruning = getattr(source, "pruning", None)
            source.blocks = _timed_blocks(source.blocks, run, count and not new_ops)
            source.morsels = _timed_call(source.morsels, run)
        elif count and not new_ops:          # (every node adds a piece; kept for safety)
            ops.append(RowCounter(run))
            self._mark(ops[-1])
        for i in new_ops:
            ops[i] = TimedOperator(ops[i], run, count and i == len(ops) - 1)
            self._mark(ops[i])
        run.counted = run.counted or count
        return source, ops

    def after_join_filter(self, nodes) -> None:
        """``nodes`` stream from a scan that drops rows without a partner in
        a join above them (engine/filtering/join_keys.py): their rows are
        the ones left, fewer than their subplan's alone."""
        for node in nodes:
            self.run_of(node).note = "after a join filter"

    def materialized(self, node, block) -> None:
        run = self.run_of(node)
        run.rows, run.counted, run.materialized = block.n, True, True

    def reused(self, node, first) -> None:
        self._reused.append((node, first))

    def own(self, piece, node):
        """A sink or operator made for ``node`` outside its stream (a hash
        build, an aggregation, a probe of a join that builds on its left):
        its time goes to ``node``."""
        run = self.run_of(node)
        self._mark(piece)
        if not self.timed:
            if getattr(piece, "having", None) is not None and isinstance(node, L.Aggregate):
                self._having.append((node, piece.groups_made))
            return piece
        if isinstance(piece, Operator):
            timed = TimedOperator(piece, run, False)
            self._mark(timed)
            return timed
        piece.consume = _timed_call(piece.consume, run)
        piece.merge = _timed_call(piece.merge, run)
        if getattr(piece, "having", None) is not None and isinstance(node, L.Aggregate):
            self._having.append((node, piece.groups_made))
        return piece

    def timing(self, node):
        """A context whose time goes to ``node`` (a window computation)."""
        run = self.run_of(node)
        if not self.timed:
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def timed():
            t0 = perf_counter()
            try:
                yield
            finally:
                run.add_time(perf_counter() - t0)
        return timed()

    # ---- after the run
    def operator_runs(self, plan) -> dict:
        """id(node) -> planner.explain.OperatorRun for every node of ``plan``."""
        for node, groups_made in self._having:
            run = self.run_of(node)
            run.rows, run.counted = sum(groups_made), True
            run.note = "before HAVING"
        out: dict = {}
        self._fill(plan, None, out)
        for node, first in self._reused:
            self._copy_shared(first, node, out, top=True)
        return out

    def _fill(self, node, parent, out: dict) -> None:
        for c in node.children:
            self._fill(c, node, out)
        run = self.runs.get(id(node))
        rows = run.rows if run is not None and run.counted else None
        time_s = run.time_s if run is not None else 0.0
        note = run.note if run is not None else ""
        skipped = run.pruning.by_source() if run is not None and run.pruning is not None else {}
        if rows is not None and isinstance(node, L.Scan) and run.pruning is not None:
            rows += run.pruning.rows_join_filtered     # they passed the scan's own filters
        if rows is None and isinstance(node, L.Sort) and isinstance(parent, L.Limit):
            child = out.get(id(node.child))
            rows = child.rows if child is not None else None
            note = "top-N: the rows it sorted"
        out[id(node)] = OperatorRun(rows, time_s, skipped, note)

    def _copy_shared(self, first, node, out: dict, top: bool) -> None:
        if top:
            got = out[id(node)]
            out[id(node)] = OperatorRun(got.rows, got.time_s, got.skipped,
                                        "reused: computed once for an identical subplan")
        else:
            got = out.get(id(first))
            if got is not None:
                out[id(node)] = OperatorRun(got.rows, got.time_s, got.skipped, "shared")
        for a, b in zip(first.children, node.children):
            self._copy_shared(a, b, out, top=False)


def record_feedback(plan, profile: QueryProfile) -> int:
    """Keep the observed rows of the nodes of a completed query whose
    estimate was off (planner/feedback.py); returns how many."""
    from planner.cardinality import estimate_with_source
    from planner.feedback import record
    # a node between a scan and a join whose filter made the scan drop rows
    # saw fewer rows than its subplan has: not an observation of it
    rows = {k: r.rows for k, r in profile.operator_runs(plan).items()
            if r.note != "after a join filter"}
    return record(plan, rows, estimate_with_source)


def run_explain(connection, stmt, params):
    """The Result of an EXPLAIN statement: one VARCHAR cell, the plan as
    text or JSON; with ANALYZE the query runs first (its error is raised),
    and the io counters and total time are the statement's, planning
    included."""
    from engine.api import text_result
    from planner import plan_query
    catalog = connection.catalog
    before = catalog.io.snapshot()       # the io line is the statement's (Result.io)
    t0 = perf_counter()
    plan = plan_query(stmt.ast, catalog, params=params, sql=stmt.sql)
    if not stmt.analyze:
        if stmt.format == "json":
            return text_result("explain", json.dumps(explain_tree(plan), indent=2))
        return text_result("explain", explain(plan))
    profile = QueryProfile()
    connection.run_plan(plan, profile=profile)
    total = perf_counter() - t0
    io = catalog.io.since(before)
    runs = profile.operator_runs(plan)
    if stmt.format == "json":
        tree = explain_tree(plan, runs)
        tree["io"] = io
        tree["total_time_s"] = round(total, 6)
        return text_result("explain", json.dumps(tree, indent=2))
    return text_result("explain", explain(plan, runs, io=io, total_s=total))
