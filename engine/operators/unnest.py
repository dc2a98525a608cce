"""Unnest operator: each row repeated once per element of a LIST value
(planner.binder_nested.Unnest); NULL and empty lists produce no rows, as in
DuckDB.  Per block: one np.repeat of row numbers and one gather of the
elements (engine/expr/nested.py), no per-row Python."""

from __future__ import annotations

from engine.block import Block
from engine.pipeline import Operator


class UnnestOperator(Operator):
    def __init__(self, node):
        from engine.expr import evaluate
        self._evaluate = evaluate
        self.expr = node.expr
        self.element_type = node.expr.type.children[0][1]

    def process(self, block: Block) -> list[Block]:
        from engine.expr.nested import unnest_block
        lists = self._evaluate(self.expr, block)
        width = len(block.columns)
        out = unnest_block(Block(block.columns + [lists], block.n), width, self.element_type)
        # drop the evaluated list column; keep the input columns and the elements
        cols = out.columns[:width] + out.columns[width + 1:]
        return [Block(cols, out.n)] if out.n else []
