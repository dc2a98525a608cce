"""Filter operator: keep the rows where the predicate is TRUE."""

from __future__ import annotations

import numpy as np

from engine.block import Block
from engine.operators.rows import take_block
from engine.pipeline import Operator


class FilterOperator(Operator):
    def __init__(self, predicate):
        from engine.expr import evaluate_predicate
        self._evaluate_predicate = evaluate_predicate
        self.predicate = predicate

    def process(self, block: Block) -> list[Block]:
        mask = np.asarray(self._evaluate_predicate(self.predicate, block), dtype=bool)
        if mask.all():
            return [block]
        if not mask.any():
            return []
        return [take_block(block, mask)]
