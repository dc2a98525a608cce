"""Project operator: evaluate one expression per output column."""

from __future__ import annotations

from engine.block import Block
from engine.pipeline import Operator
from planner.expressions import ColumnRef


class ProjectOperator(Operator):
    def __init__(self, exprs):
        from engine.expr import evaluate
        self._evaluate = evaluate
        self.exprs = exprs

    def process(self, block: Block) -> list[Block]:
        cols = [block.columns[e.index] if isinstance(e, ColumnRef) else self._evaluate(e, block)
                for e in self.exprs]
        return [Block(cols, block.n)]
