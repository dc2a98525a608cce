"""Filter operator: keep the rows where the predicate is TRUE."""

from __future__ import annotations

import numpy as np

from engine.block import Block, take_vector
from engine.pipeline import Operator


# a vector's rows by bool mask or by positions: the one implementation is
# engine.block.take_vector (masks through the branchless
# compress_rows kernel, positions through np.take; CodedVectors keep codes)
select_vector = take_vector


def select_block(block: Block, mask: np.ndarray) -> Block:
    """Rows of block where the bool mask is True."""
    n = int(np.count_nonzero(mask))
    return Block([select_vector(c, mask, n) for c in block.columns], n)


class FilterOperator(Operator):
    def __init__(self, predicate):
        from engine.filtering.conjunction import Conjunction
        self.predicate = predicate
        self.conjunction = Conjunction([predicate])

    def process(self, block: Block) -> list[Block]:
        mask, kept = self.conjunction.mask(block)
        if kept == block.n:
            return [block]
        if kept == 0:
            return []
        return [Block([select_vector(c, mask, kept) for c in block.columns], kept)]
