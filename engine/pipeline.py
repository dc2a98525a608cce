"""Pipelines: a source, a chain of streaming operators, and a sink.

A plan is cut at breakers (hash build, aggregation, sort, limit, final
collect); every piece is a Pipeline that engine.scheduler runs morsel by
morsel.  Interfaces:

    Source.morsels() -> list of morsel descriptors, in order
    Source.blocks(morsel) -> iterator of Blocks (at most block_rows rows)
    Operator.process(block) -> iterable of Blocks (thread-safe, no per-thread
        state; a generator when one input block can make many output blocks:
        a join's fan-out, a cross product)
    Sink.make_local() -> state;  Sink.consume(state, block, seq);
    Sink.merge(states) -> result;  Sink.done() -> True to stop pulling input

Blocks go through the operators depth first: each output block of an
operator goes on to the next operator and the sink before the operator makes
its next one, so what one morsel holds in flight is a block per operator,
however many rows its joins emit.  Between blocks the worker checks the
query's stop request (engine.context.CancelToken).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.block import Block, concat_blocks
from engine.context import current_cancel
from engine.errors import MemoryLimitError


class Source:
    def morsels(self) -> list:
        raise NotImplementedError

    def blocks(self, morsel):
        raise NotImplementedError


class Operator:
    def process(self, block: Block) -> list[Block]:
        raise NotImplementedError

    def release(self) -> None:
        """Let go of the reservations of what the operator holds (a join's
        table), once its pipeline ran."""


class Sink:
    # False: the rows' order is not observable (a plain file scan with
    # preserve_order off), so a sink may keep them in completion order.
    keep_order = True
    # True: the sink's result does not depend on how its input is cut into
    # blocks (an aggregation): a worker may gather the small blocks a
    # selective scan leaves into one (SmallBlocks) before the operators.
    takes_batches = False
    # worker threads of the run (set by engine.scheduler.run_pipeline); a
    # merge may spread work over them with engine.scheduler.parallel_map
    threads = 1

    def make_local(self):
        return []

    def consume(self, local, block: Block, seq: tuple) -> None:
        raise NotImplementedError

    def merge(self, locals_: list):
        raise NotImplementedError

    def done(self) -> bool:
        return False

    def enough(self, morsel_index: int) -> bool:
        """True when no later row of morsel ``morsel_index`` can change the
        result (a LIMIT holding enough rows of the morsels up to it): the
        worker stops pushing that morsel's blocks."""
        return False


class _MorselDone(Exception):
    """The sink needs no more rows of the current morsel."""


class BlockSource(Source):
    """A materialized block -- or a list of them, read one after another (a
    UNION ALL's inputs, never concatenated) -- cut into morsels of ``rows``
    rows.  ``hold`` reserves the blocks' bytes against the query's memory
    until ``release``: the block of a breaker is held while the pipeline
    that reads it runs (engine.executor releases it after)."""

    def __init__(self, block, rows: int):
        self.parts = [b for b in block if b.n] if isinstance(block, list) else [block]
        self.block = self.parts[0] if self.parts else Block([], 0)
        self.rows = max(int(rows), 1)
        self.memory = None
        self.reserved = 0

    def hold(self, memory, nbytes: int) -> "BlockSource":
        if memory is not None and nbytes:
            memory.reserve(nbytes, "materialized intermediate")
            self.memory, self.reserved = memory, self.reserved + nbytes
        return self

    def release(self) -> None:
        self.parts, self.block = [], None      # the pipeline ran: its blocks may go
        if self.memory is not None:
            self.memory.release(self.reserved)
        self.reserved = 0

    def morsels(self) -> list:
        return [(k, start) for k, b in enumerate(self.parts)
                for start in range(0, b.n, self.rows)]

    def blocks(self, morsel):
        k, start = morsel
        yield self.parts[k].slice(start, start + self.rows)


@dataclass
class Pipeline:
    source: Source
    operators: list[Operator] = field(default_factory=list)
    sink: Sink | None = None

    def release(self) -> None:
        """Let go of what the source holds (a BlockSource's reservation) and
        the operators' tables: the pipeline ran, nothing probes them now."""
        release = getattr(self.source, "release", None)
        if release is not None:
            release()
        for op in self.operators:
            op.release()

    def run_morsel(self, morsel, morsel_index: int, sink: Sink, local,
                   small: "StageBatches | None" = None) -> None:
        """Push one morsel's blocks through the operators into the sink;
        with ``small`` (the worker's, for a sink that takes_batches), blocks
        of fewer than BATCH_ROWS rows -- from the source or out of any
        operator -- wait there for others (flush_small)."""
        k = 0
        try:
            for block in self.source.blocks(morsel):
                k = self.push(block, sink, local, morsel_index, k, small)
        except _MorselDone:
            pass

    def push(self, block: Block, sink: Sink, local, morsel_index: int, k: int,
             small: "StageBatches | None" = None, stage: int = 0,
             batched: bool = False) -> int:
        """One block through operators[stage:] into the sink; the next k.
        Before each operator and the sink, small blocks wait in ``small``
        (``batched``: the block is a batch of stage ``stage`` already, and
        does not wait there again).  Raises _MorselDone when the sink needs
        no more of this morsel (run_morsel stops it)."""
        state = [k, current_cancel()]
        self._through(stage, [block], sink, local, morsel_index, state, small, batched)
        return state[0]

    def _through(self, j: int, blocks: list, sink: Sink, local, morsel_index: int,
                 state: list, small, batched: bool) -> None:
        """``blocks`` in front of operators[j] (j == len: the sink), each
        output block pushed on before the next is made (depth first)."""
        if small is not None and not batched:
            blocks = small.gather(j, blocks)
        ops = self.operators
        token = state[1]
        if j == len(ops):
            for b in blocks:
                if b.n:
                    if token is not None:
                        token.check()
                    sink.consume(local, b, (morsel_index, state[0]))
                    state[0] += 1
                    if morsel_index >= 0 and sink.enough(morsel_index):
                        raise _MorselDone
            return
        op = ops[j]
        for b in blocks:
            if b.n:
                for out in op.process(b):
                    if out.n:
                        self._through(j + 1, [out], sink, local, morsel_index, state,
                                      small, False)

    def small_blocks(self, sink: Sink) -> "StageBatches | None":
        """A worker's StageBatches for this pipeline, when its sink takes
        batches."""
        if not sink.takes_batches:
            return None
        ctx = getattr(self.source, "ctx", None)
        return StageBatches(len(self.operators) + 1, getattr(ctx, "memory", None))

    @staticmethod
    def drop_small(small: "StageBatches | None") -> None:
        """A failed run: the waiting blocks go, and their reservation."""
        if small is not None:
            small.drop()

    def flush_small(self, small: "StageBatches | None", sink: Sink, local) -> None:
        """The worker's waiting small blocks, once it has no morsel left:
        each stage's batch goes on through the operators after it (later
        stages may gather from it, so they are flushed after)."""
        if small is None:
            return
        for j in range(len(small.stages)):
            block = small.stages[j].take()
            if block is not None:
                self.push(block, sink, local, -1, 0, small, j, batched=True)


# Blocks a selective scan leaves (Q6, Q14, Q19: 1-3% of a row group) carry
# the whole per-block Python of the operators and the sink for a few
# thousand rows.  A worker gathers those below BATCH_ROWS rows from its
# morsels until they reach it (for sinks that take_batches): the operators
# then run once per batch.  Q14 at 1 / 2 threads: see docs/performance-notes.md.
BATCH_ROWS = 16384


class SmallBlocks:
    """One worker's small blocks waiting to be pushed as one; their bytes
    count against ``memory`` (the query's tracker, when given) while they
    wait."""

    def __init__(self, memory=None):
        self.memory = memory
        self.blocks: list[Block] = []
        self.rows = 0
        self.held = 0

    def add(self, block: Block) -> Block | None:
        """Keep ``block``; the gathered batch once it reaches BATCH_ROWS."""
        if block.n == 0:
            return None
        if self.memory is not None:
            nbytes = _held_bytes(block)
            try:
                self.memory.reserve(nbytes, "small blocks gathered into a batch")
            except MemoryLimitError:        # no room to wait: the block goes on alone
                return block
            self.held += nbytes
        self.blocks.append(block)
        self.rows += block.n
        return self.take() if self.rows >= BATCH_ROWS else None

    def take(self) -> Block | None:
        if self.memory is not None and self.held:
            self.memory.release(self.held)
        self.held = 0
        if not self.blocks:
            return None
        blocks, self.blocks, self.rows = self.blocks, [], 0
        return blocks[0] if len(blocks) == 1 else concat_blocks(blocks)


class StageBatches:
    """A worker's SmallBlocks before each operator of a pipeline and before
    its sink (stage j waits in front of operators[j]; the last stage in
    front of the sink).  A selective join leaves a few hundred rows of a
    50k-row morsel (Q2, Q11, Q20 over partsupp): the operators after it and
    the sink then run once per batch instead of once per block."""

    def __init__(self, stages: int, memory=None):
        self.stages = [SmallBlocks(memory) for _ in range(stages)]

    def gather(self, stage: int, blocks: list) -> list:
        """The blocks that go on now: the large ones, and a batch when the
        stage's waiting rows reach BATCH_ROWS."""
        out = []
        wait = self.stages[stage]
        for b in blocks:
            if b.n >= BATCH_ROWS:
                out.append(b)
            elif b.n:
                got = wait.add(b)
                if got is not None:
                    out.append(got)
        return out

    def drop(self) -> None:
        for wait in self.stages:
            wait.take()


def _held_bytes(block: Block) -> int:
    """Bytes of a block's arrays (a scan's coded strings: their codes).
    Not engine.operators.collect.block_nbytes: that one reads ``data``,
    which gathers a coded column's views, in the worker on purpose."""
    total = 0
    for c in block.columns:
        arr = getattr(c, "codes", None)
        if arr is None:
            arr = getattr(c, "ints", None)
        if arr is None:
            arr = c.data
        total += arr.nbytes if arr.dtype != object else 16 * len(arr)
        if c.nulls is not None:
            total += c.nulls.nbytes
    return total
