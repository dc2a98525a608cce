"""Set operations in the engine: the bag union of materialized inputs.

UNION (distinct), INTERSECT and EXCEPT are planned as aggregations over a
Union (planner/binder_setops.py), so the hash aggregation does the matching
with NULLs treated as equal; only the concatenation is needed here.
"""

from __future__ import annotations

from engine.block import Block
from engine.operators.collect import concat_counted, concat_shared


def union_all(blocks: list[Block], types, memory=None, held: int = 0):
    """All rows of every block, in input order (schemas already unified).
    With ``memory`` (``held``: the bytes reserved for the blocks): (the
    block, the bytes reserved for it), concatenated column by column with
    each column counted (the inputs are emptied)."""
    blocks = [b for b in blocks if b.n]
    if memory is None:
        return concat_shared(blocks, types)
    return concat_counted(blocks, types, memory, held, "union")
