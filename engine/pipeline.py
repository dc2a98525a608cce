"""Pipelines: a source, a chain of streaming operators, and a sink.

A plan is cut at breakers (hash build, aggregation, sort, limit, final
collect); every piece is a Pipeline that engine.scheduler runs morsel by
morsel.  Interfaces:

    Source.morsels() -> list of morsel descriptors, in order
    Source.blocks(morsel) -> iterator of Blocks (at most block_rows rows)
    Operator.process(block) -> list of Blocks   (thread-safe, no per-thread state)
    Sink.make_local() -> state;  Sink.consume(state, block, seq);
    Sink.merge(states) -> result;  Sink.done() -> True to stop pulling input
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.block import Block


class Source:
    def morsels(self) -> list:
        raise NotImplementedError

    def blocks(self, morsel):
        raise NotImplementedError


class Operator:
    def process(self, block: Block) -> list[Block]:
        raise NotImplementedError


class Sink:
    # False: the rows' order is not observable (a plain file scan with
    # preserve_order off), so a sink may keep them in completion order.
    keep_order = True
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


class BlockSource(Source):
    """A materialized block cut into morsels of ``rows`` rows."""

    def __init__(self, block: Block, rows: int):
        self.block = block
        self.rows = max(int(rows), 1)

    def morsels(self) -> list:
        if self.block.n == 0:
            return []
        return list(range(0, self.block.n, self.rows))

    def blocks(self, morsel):
        yield self.block.slice(morsel, morsel + self.rows)


@dataclass
class Pipeline:
    source: Source
    operators: list[Operator] = field(default_factory=list)
    sink: Sink | None = None

    def run_morsel(self, morsel, morsel_index: int, sink: Sink, local) -> None:
        """Push one morsel's blocks through the operators into the sink."""
        k = 0
        for block in self.source.blocks(morsel):
            blocks = [block]
            for op in self.operators:
                out = []
                for b in blocks:
                    if b.n:
                        out.extend(op.process(b))
                blocks = out
            for b in blocks:
                if b.n:
                    sink.consume(local, b, (morsel_index, k))
                    k += 1
