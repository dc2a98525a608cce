"""Set operations in the engine: the bag union of materialized inputs.

UNION (distinct), INTERSECT and EXCEPT are planned as aggregations over a
Union (planner/binder_setops.py), so the hash aggregation does the matching
with NULLs treated as equal; only the concatenation is needed here.
"""

from __future__ import annotations

from engine.block import Block
from engine.operators.collect import concat_shared


def union_all(blocks: list[Block], types) -> Block:
    """All rows of every block, in input order (schemas already unified)."""
    return concat_shared([b for b in blocks if b.n], types)
