"""Run a logical plan: cut it into pipelines at breakers, run each with the
morsel scheduler, return the result rows as one Block."""

from __future__ import annotations

import traceback

import numpy as np

from engine.block import Block, take_block
from engine.context import ExecutionContext, set_current_cancel
from engine.errors import MemoryLimitError, QueryInterrupted, UnsupportedFeatureError
from engine.operators.chunk_wants import want_plan_chunks
from engine.operators.collect import CollectSink, concat_shared, held_nbytes
from engine.operators.project import ProjectOperator
from engine.pipeline import BlockSource, Pipeline, Sink
from engine.scheduler import release_free_memory, run_pipeline, run_pipelines
from planner import logical as L
from planner.binder_nested import Unnest, reject_nested_keys
from planner.cardinality import builds_on_left
from planner.expressions import ColumnRef, column_indexes, remap_columns


# breakers whose result materialize computes once per query when the plan
# repeats their subtree
_SHAREABLE = (L.Aggregate, L.Sort, L.Limit, L.Window, L.Union)


class _DiscardSink(Sink):
    """Takes a probe pipeline that only marks build rows (it emits none)."""
    takes_batches = True          # marks do not depend on how rows are cut

    def make_local(self):
        return None

    def consume(self, local, block, seq) -> None:
        pass

    def merge(self, locals_: list):
        return None


def execute(plan: L.Node, ctx: ExecutionContext) -> Block:
    """All result rows of ``plan`` as one Block (columns in plan.schema order).

    The query's CancelToken (ctx.cancel) is this thread's while it runs, and
    every worker's (engine.scheduler).  A stop -- Ctrl-C here (the
    KeyboardInterrupt), interrupt() from another thread, query_timeout --
    raises QueryInterrupted / QueryTimeout once no thread works for the
    query any more; as DuckDB's Python client does, Ctrl-C becomes the
    query's interrupted error.  A stopped query's or a MemoryLimitError's
    reservations are released and the frames of its traceback cleared, so
    the memory it held goes even while the caller keeps the exception."""
    token = ctx.cancel
    previous = set_current_cancel(token)
    ex = _Executor(ctx)
    try:
        ex.find_repeated_subplans(plan)
        want_plan_chunks(plan, ctx)
        return ex.materialize(plan)
    except KeyboardInterrupt:
        token.cancel("interrupted")
        failure = token.error()
        failure.__cause__ = KeyboardInterrupt()
    except (QueryInterrupted, MemoryLimitError) as e:
        failure = e
    finally:
        if token.reason is not None:
            _wait_for_workers(token)
        ex.memory.close()
        ex = None
        set_current_cancel(previous)
    if failure.__traceback__ is not None:
        traceback.clear_frames(failure.__traceback__)
    release_free_memory()
    raise failure


def _wait_for_workers(token) -> None:
    """Block until no thread works for the stopped query (they stop within
    a second); a Ctrl-C meanwhile does not cut the wait short."""
    while True:
        try:
            token.wait_idle(30.0)
            return
        except KeyboardInterrupt:
            continue


class _MorselBlocks(Sink):
    """One morsel's result blocks, in order (run_streaming)."""

    def consume(self, local, block, seq) -> None:
        local.append(block)

    def merge(self, locals_: list):
        return None


def run_streaming(plan: L.Node, ctx: ExecutionContext, on_morsel, stop=None) -> int:
    """Run ``plan`` without gathering its result: the breakers below the last
    pipeline run as in execute(), then each morsel of that pipeline, on the
    thread that ran it, calls ``on_morsel(i, blocks)`` with its result blocks
    (morsels are numbered in result order; they finish in any order).
    ``stop()`` true: no further morsel starts.  Returns the morsel count.
    COPY ... TO writes the blocks as they come (engine/copy.py)."""
    from engine.scheduler import parallel_map
    ex = _Executor(ctx)
    ex.find_repeated_subplans(plan)
    try:
        pipeline = ex.pipeline(plan)
        morsels = pipeline.source.morsels()
        sink = _MorselBlocks()
        failed = []                      # a morsel failed: start no other

        def run(i):
            if failed or (stop is not None and stop()):
                return
            local: list = []
            try:
                pipeline.run_morsel(morsels[i], i, sink, local)
                on_morsel(i, local)
            except BaseException:
                failed.append(i)
                raise

        parallel_map(run, range(len(morsels)), ex.threads)
        return len(morsels)
    finally:
        ex.memory.close()


class _Executor:
    def __init__(self, ctx: ExecutionContext):
        self.ctx = ctx
        self.threads = ctx.config.effective_threads
        self.block_rows = ctx.config.block_rows
        self.memory = ctx.memory.child()
        self._fingerprints: dict = {}     # planner.fingerprint memo
        self._repeats: dict = {}          # fingerprint -> uses left, of repeated subplans
        self._computed: dict = {}         # fingerprint -> Block, until its last use
        self._prebuilt: dict = {}         # id(Join) -> its JoinTable, built with its chain's
        self._through_aggregate: dict = {}    # id(Aggregate) -> join filter for its scan
        self.profile = ctx.profile        # engine.analyze.QueryProfile: EXPLAIN ANALYZE only
        self._first_use: dict = {}        # fingerprint -> the node computed (profiled runs)

    def find_repeated_subplans(self, plan: L.Node) -> None:
        """Breakers whose subtree the plan holds more than once (a CTE
        referenced twice): materialize computes them once."""
        from planner.fingerprint import fingerprint
        breakers, stack = [], [plan]
        while stack:
            node = stack.pop()
            if isinstance(node, _SHAREABLE):
                breakers.append(node)
            stack.extend(node.children)
        # only breakers of one kind and output schema can repeat each other:
        # the (costlier) fingerprints are computed for those alone
        shapes: dict = {}
        for node in breakers:
            shape = (type(node), tuple((f.name, f.type) for f in node.schema))
            shapes.setdefault(shape, []).append(node)
        breakers = [n for group in shapes.values() if len(group) > 1 for n in group]
        if len(breakers) < 2:           # nothing can repeat: no fingerprints to compute
            return
        counts: dict = {}
        for node in breakers:
            fp = fingerprint(node, self._fingerprints)
            counts[fp] = counts.get(fp, 0) + 1
        self._repeats = {fp: n for fp, n in counts.items() if n > 1}

    def _types(self, node):
        return [f.type for f in node.schema]

    def run(self, node: L.Node, sink: Sink, needed=None, join_filter=None, above=None):
        """Run the pipeline ending at ``node`` into ``sink`` (``needed``: the
        columns of node's rows the sink reads; None: all).  ``join_filter``:
        (node's key columns, build keys, table) of a join above the sink's
        node ``above`` whose filter the scan applies
        (_filter_through_aggregate)."""
        pipeline = self.pipeline(node, needed)
        pipeline.sink = sink
        if join_filter is not None:
            from engine.filtering.join_keys import attach_join_filter    # kernels: when used
            keys, build_keys, table = join_filter
            before = len(getattr(pipeline.source, "join_filters", ()))
            filtered = attach_join_filter(node, keys, build_keys, table, pipeline.source,
                                          self._probes, self.memory)
            if self.profile is not None and \
                    len(getattr(pipeline.source, "join_filters", ())) > before:
                self.profile.after_join_filter([above] + filtered)
        if not isinstance(pipeline.source, BlockSource) and not self.ctx.config.preserve_order:
            from engine.operators.scan import ScanSource     # kernels: imported when used
            if isinstance(pipeline.source, ScanSource):
                sink.keep_order = False      # file order of a plain scan is not required
        result = run_pipeline(pipeline, self.threads)
        pipeline.release()
        return result

    def materialize(self, node: L.Node) -> Block:
        if self._repeats and isinstance(node, _SHAREABLE):
            from planner.fingerprint import fingerprint
            fp = fingerprint(node, self._fingerprints)
            left = self._repeats.get(fp)
            if left is not None:
                block = self._computed.get(fp)
                if block is None:
                    block = self._computed[fp] = self._materialize(node)
                    self._first_use[fp] = node
                elif self.profile is not None:
                    self.profile.reused(node, self._first_use[fp])
                if self.profile is not None:
                    self.profile.materialized(node, block)
                self._repeats[fp] = left - 1
                if left == 1:               # its last use: let it go
                    del self._computed[fp]
                return block
        block = self._materialize(node)
        if self.profile is not None:
            self.profile.materialized(node, block)
        return block

    def _own(self, piece, node):
        """``piece`` (a sink or operator made for ``node`` outside its
        stream) with its time counted for node when analyzing."""
        return piece if self.profile is None else self.profile.own(piece, node)

    def _materialize(self, node: L.Node) -> Block:
        reject_nested_keys(node)
        if isinstance(node, L.Aggregate) and _counts_rows_only(node):
            return self._count_from_footers(node)
        if isinstance(node, L.Aggregate):
            from engine.operators.aggregate import AggregateSink
            return self.run(node.child, self._own(AggregateSink(node, self.memory), node),
                            _aggregate_reads(node), self._through_aggregate.pop(id(node), None),
                            node)
        if isinstance(node, (L.Sort, L.Limit)):
            from engine.operators.sort import SortSink
        if isinstance(node, L.Sort):
            sink = SortSink(node.keys, self._types(node), None, self.memory, self.block_rows)
            sink = self._own(sink, node)
            return self._release_after(self.run(node.child, sink), sink)
        if isinstance(node, L.Limit):
            child = node.child
            if node.limit is not None and isinstance(child, L.Sort):     # top-N
                sink = SortSink(child.keys, self._types(child), node.offset + node.limit,
                                self.memory, self.block_rows)
                sink = self._own(sink, node)
                block = self._release_after(self.run(child.child, sink), sink)
                return block.slice(node.offset, node.offset + node.limit)
            from engine.operators.limit import LimitSink
            sink = self._own(LimitSink(self._types(node), node.limit, node.offset, self.memory),
                             node)
            return self._release_after(self.run(child, sink), sink)
        if _keyless(node) and node.kind in ("right", "full"):
            return self._nl_outer_join(node)
        if isinstance(node, L.Join) and node.kind in ("right", "full"):
            return self._outer_join(node)
        if isinstance(node, L.Union):
            from engine.operators.setops import union_all
            blocks, held = self._union_inputs(node)
            block, reserved = union_all(blocks, self._types(node), self.memory, held)
            self.memory.release(reserved)       # held by whoever reads it from here
            return block
        if isinstance(node, L.Window):
            from engine.operators.window import compute_windows
            child = self.materialize(node.child)
            with (self.profile.timing(node) if self.profile is not None else _no_timing()):
                return compute_windows(node, child, self.memory, self.threads)
        sink = CollectSink(self._types(node), self.memory)
        return self._release_after(self.run(node, sink), sink)

    def _count_from_footers(self, node: L.Aggregate) -> Block:
        """count(*) of a whole table: the row groups' row counts in the
        files' footers (as DuckDB answers it), nothing decoded."""
        from engine.block import Vector
        scan = node.child
        self.ctx.open_together(scan.files)
        rows = sum(meta.num_rows for path in scan.files
                   for meta in self.ctx.open_file(path).row_groups)
        if self.profile is not None:
            self.profile.materialized(scan, Block([], rows))
        return Block([Vector(f.type, np.array([rows], f.type.numpy_dtype)) for f in node.schema], 1)

    @staticmethod
    def _release_after(block, sink):
        sink.release()
        return block

    def _outer_join(self, node: L.Join) -> Block:
        from engine.operators.hashjoin import ProbeOperator, unmatched_build_block
        table = self._build(node)
        source, ops = self._streaming(node.left)
        ops.append(self._own(ProbeOperator(node.kind, table, node.left_keys, node.residual,
                                           self.block_rows), node))
        sink = CollectSink(self._types(node), self.memory)
        pipeline = Pipeline(source, ops, sink)
        probed = run_pipeline(pipeline, self.threads)
        tail = unmatched_build_block(table, self._types(node.left))
        pipeline.release()
        table.release()
        sink.release()
        return concat_shared([probed, tail], self._types(node))

    def _nl_table(self, node: L.Join, outer: bool = False) -> NestedLoopTable:
        """The build side of a join without equality keys, materialized (it
        must fit memory_limit) and indexed on its inequality, if any."""
        from engine.operators.nljoin import NestedLoopTable, plan_range
        plan = plan_range(node.residual, len(node.left.schema), len(node.right.schema))
        sink = self._own(CollectSink(self._types(node.right), self.memory,
                                     "nested loop join build side"), node)
        block = self.run(node.right, sink)
        return NestedLoopTable(block, plan, self.memory, sink.reserved, outer)

    def _nl_outer_join(self, node: L.Join) -> Block:
        from engine.operators.nljoin import NestedLoopJoin
        from engine.operators.nljoin import unmatched_build_block as unmatched_nl_build_block
        table = self._nl_table(node, outer=True)
        source, ops = self._streaming(node.left)
        ops.append(self._own(NestedLoopJoin(node.kind, table, self._types(node.left),
                                            self.block_rows, None, self.memory), node))
        sink = CollectSink(self._types(node), self.memory)
        pipeline = Pipeline(source, ops, sink)
        probed = run_pipeline(pipeline, self.threads)
        tail = unmatched_nl_build_block(table, self._types(node.left))
        pipeline.release()
        table.release()
        sink.release()
        return concat_shared([probed, tail], self._types(node))

    def _semi_on_left(self, node: L.Join) -> Block:
        """A semi/anti join whose subquery side is the bigger one: the table
        is built on the left (outer) rows, the right side probes it and marks
        the rows that have a partner; the result is the marked left rows
        (semi) or the others (anti), in left input order.  Left rows with a
        NULL key are never in the table, so they are never marked."""
        from engine.operators.hashjoin import HashBuildSink, ProbeOperator
        table = self.run(node.left, self._own(HashBuildSink(self._types(node.left),
                                                            node.left_keys, self.memory), node))
        residual = node.residual
        if residual is not None:      # probe rows now come first in a joined row
            nl, nr = len(node.left.schema), len(node.right.schema)
            remap = {i: nr + i for i in range(nl)}
            remap.update({nl + j: j for j in range(nr)})
            residual = remap_columns(residual, remap)
        source, ops = self._streaming(node.right)
        self._join_filter(node.right, node.right_keys, node.left_keys, table, source)
        ops.append(self._own(ProbeOperator("right_" + node.kind, table, node.right_keys,
                                           residual, self.block_rows), node))
        pipeline = Pipeline(source, ops, _DiscardSink())
        run_pipeline(pipeline, self.threads)
        keep = table.matched.astype(bool)
        out = take_block(table.block, keep if node.kind == "semi" else ~keep)
        pipeline.release()
        table.release()
        return out

    def _join_filter(self, probe, probe_keys, build_keys, table, source) -> None:
        """The scan under ``probe`` drops rows without a partner in
        ``table`` (engine/filtering/join_keys.py), unless switched off."""
        if self.ctx.config.join_filters:
            from engine.filtering.join_keys import attach_join_filter    # kernels: when used
            filtered = attach_join_filter(probe, probe_keys, build_keys, table, source,
                                          self._probes, self.memory)
            if filtered and self.profile is not None:
                self.profile.after_join_filter(filtered)

    def _filter_through_aggregate(self, node: L.Join, table) -> None:
        """An inner or semi join probing with a GROUP BY's rows (eager
        aggregation's pre-aggregation, planner/rules/eager_aggregation.py):
        a group whose key has no partner yields nothing, so the scan under
        the GROUP BY drops the rows of such keys before they are
        aggregated (Q10: 114k of lineitem's 1.48M returned items reach the
        pre-aggregation).  Only probe keys that are plain group columns,
        and not for a GROUP BY another part of the plan reads too."""
        agg = node.left
        if not isinstance(agg, L.Aggregate) or not self.ctx.config.join_filters or \
                (self._repeats and self._shared(agg)):
            return
        child_keys, build_keys = [], []
        for lk, rk in zip(node.left_keys, node.right_keys):
            if isinstance(lk, ColumnRef) and lk.index < len(agg.groups) and \
                    isinstance(agg.groups[lk.index], ColumnRef):
                child_keys.append(agg.groups[lk.index])
                build_keys.append(rk)
        if child_keys:
            self._through_aggregate[id(agg)] = (child_keys, build_keys, table)

    def _build(self, node: L.Join):
        from engine.operators.hashjoin import HashBuildSink
        sink = HashBuildSink(self._types(node.right), node.right_keys, self.memory)
        return self.run(node.right, self._own(sink, node))

    def _probe_table(self, node: L.Join):
        """The JoinTable ``node`` probes.  The first join of a probe chain
        (joins stacked on one left input, through filters and projections)
        builds the tables of the whole chain at once (run_pipelines): the
        build sides are independent, and building them together keeps the
        threads busy when some are small."""
        from engine.operators.hashjoin import HashBuildSink
        from engine.operators.scan import ScanSource
        table = self._prebuilt.pop(id(node), None)
        if table is not None:
            return table
        chain = []
        cur = node
        while True:
            if isinstance(cur, L.Join) and self._probes(cur):
                chain.append(cur)
                cur = cur.left
            elif isinstance(cur, (L.Project, Unnest)) or \
                    (isinstance(cur, L.Filter) and not isinstance(cur.child, L.Aggregate)):
                cur = cur.child
            else:
                break
        if len(chain) == 1 or self.threads == 1:
            return self._build(node)
        pipelines = []
        for join in chain:
            pipeline = self.pipeline(join.right)
            pipeline.sink = self._own(HashBuildSink(self._types(join.right), join.right_keys,
                                                    self.memory), join)
            if isinstance(pipeline.source, ScanSource) and not self.ctx.config.preserve_order:
                pipeline.sink.keep_order = False
            pipelines.append(pipeline)
        tables = run_pipelines(pipelines, self.threads)
        for pipeline in pipelines:
            pipeline.release()
        for join, table in zip(chain[1:], tables[1:]):
            self._prebuilt[id(join)] = table
        return tables[0]

    @staticmethod
    def _probes(node: L.Join) -> bool:
        """The join streams its left input through a probe of a table built
        on its right input (_streaming's inner/left/semi/anti/mark path)."""
        from engine.operators.hashjoin import SUPPORTED_KINDS
        if node.kind in ("right", "full") or node.kind not in SUPPORTED_KINDS or _keyless(node):
            return False
        return not _Executor._builds_on_left(node)

    @staticmethod
    def _builds_on_left(node: L.Join) -> bool:
        """A semi/anti join whose subquery side is estimated bigger: its
        table is built on the outer rows (_semi_on_left)."""
        return bool(node.left_keys) and builds_on_left(node)

    def _source(self, block: Block) -> BlockSource:
        """A BlockSource over a breaker's block, holding its bytes until the
        pipeline reading it ends (its collector let them go)."""
        return BlockSource(block, self.block_rows).hold(self.memory, held_nbytes(block))

    def _union_inputs(self, node: L.Union):
        """(each input's block, the bytes reserved for them).  The blocks
        are new Block objects over the inputs' columns: concatenating them
        empties those, never a block a repeated subplan keeps."""
        blocks, held = [], 0
        for child in node.inputs:
            block = self.materialize(child)
            nb = held_nbytes(block)
            self.memory.reserve(nb, "union input")
            held += nb
            blocks.append(Block(list(block.columns), block.n))
        return blocks, held

    def _shared(self, node) -> bool:
        from planner.fingerprint import fingerprint
        return fingerprint(node, self._fingerprints) in self._repeats

    def pipeline(self, node: L.Node, needed=None) -> Pipeline:
        source, ops = self._streaming(node, needed)
        return Pipeline(source, ops)

    def _streaming(self, node: L.Node, needed=None):
        """(source, operators) producing node's rows as a stream.  ``needed``:
        the columns of node's rows read above (None: all); a join without
        keys leaves the others as placeholders."""
        source, ops = self._stream_node(node, needed)
        if self.profile is not None:        # EXPLAIN ANALYZE: node's rows and time
            source, ops = self.profile.stream(node, source, ops)
        return source, ops

    def _stream_node(self, node: L.Node, needed=None):
        reject_nested_keys(node)
        if isinstance(node, L.Scan):
            from engine.operators.scan import ScanSource      # kernels: imported when used
            return ScanSource(node, self.ctx), []
        if isinstance(node, L.OneRow):
            return BlockSource(Block([], 1), 1), []
        if isinstance(node, L.Filter) and isinstance(node.child, L.Aggregate):
            # HAVING: applied to each merged partition of the aggregation
            reject_nested_keys(node.child)
            from engine.operators.aggregate import AggregateSink
            sink = self._own(AggregateSink(node.child, self.memory, having=node.predicate),
                             node.child)
            return self._source(self.run(node.child.child, sink)), []
        if isinstance(node, L.Filter):
            below = None if needed is None else set(needed) | column_indexes(node.predicate)
            source, ops = self._streaming(node.child, below)
            from engine.operators.filter import FilterOperator
            return source, ops + [FilterOperator(node.predicate)]
        if isinstance(node, L.Project):
            below = None
            if needed is not None:
                below = set()
                for i in needed:
                    below |= column_indexes(node.exprs[i])
            source, ops = self._streaming(node.child, below)
            return source, ops + [ProjectOperator(node.exprs)]
        if isinstance(node, Unnest):
            from engine.operators.unnest import UnnestOperator
            source, ops = self._streaming(node.child)
            return source, ops + [UnnestOperator(node)]
        if _keyless(node) and node.kind not in ("right", "full"):
            from engine.operators.nljoin import NestedLoopJoin
            table = self._nl_table(node)
            source, ops = self._streaming(node.left)
            return source, ops + [NestedLoopJoin(node.kind, table, self._types(node.left),
                                                 self.block_rows, needed, self.memory)]
        if isinstance(node, L.Join) and self._builds_on_left(node):
            return self._source(self._semi_on_left(node)), []
        if isinstance(node, L.Join) and node.kind not in ("right", "full"):
            from engine.operators.hashjoin import SUPPORTED_KINDS, ProbeOperator
            if node.kind not in SUPPORTED_KINDS:
                raise UnsupportedFeatureError(f"join kind {node.kind!r} is not supported")
            table = self._probe_table(node)
            if node.kind in ("inner", "semi"):
                self._filter_through_aggregate(node, table)
            source, ops = self._streaming(node.left)
            if node.kind in ("inner", "semi"):
                self._join_filter(node.left, node.left_keys, node.right_keys, table, source)
            return source, ops + [ProbeOperator(node.kind, table, node.left_keys,
                                                node.residual, self.block_rows)]
        if isinstance(node, L.Union) and not (self._repeats and self._shared(node)):
            blocks, held = self._union_inputs(node)     # read one after another, not concatenated
            source = BlockSource(blocks, self.block_rows)
            source.memory, source.reserved = self.memory, held
            return source, []
        if isinstance(node, (L.Aggregate, L.Sort, L.Limit, L.Join, L.Union, L.Window)):
            return self._source(self.materialize(node)), []
        raise UnsupportedFeatureError(f"plan node {type(node).__name__} is not supported "
                                      "by the executor")


def _no_timing():
    import contextlib
    return contextlib.nullcontext()


def _counts_rows_only(node: L.Aggregate) -> bool:
    """count(*) alone (any number of times), no GROUP BY, straight over a
    scan without filters: the footers know the answer."""
    return (not node.groups and bool(node.aggregates)
            and all(a.func == "count_star" and not a.distinct for a in node.aggregates)
            and isinstance(node.child, L.Scan) and not node.child.filters)


def _keyless(node) -> bool:
    """A join without equality keys: engine/operators/nljoin.py runs it."""
    if not isinstance(node, L.Join) or node.left_keys:
        return False
    from engine.operators.nljoin import NL_KINDS
    return node.kind in NL_KINDS


def _aggregate_reads(node: L.Aggregate) -> set:
    """The input columns an aggregation reads (its groups and arguments)."""
    cols: set = set()
    for g in node.groups:
        cols |= column_indexes(g)
    for a in node.aggregates:
        if a.arg is not None:
            cols |= column_indexes(a.arg)
    return cols
