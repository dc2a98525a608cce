"""How large a GROUP BY's hash tables start (engine/operators/aggregate.py):
at each thread's share of the planner's estimate, when statistics or
feedback made it, within a share of the memory limit."""

from __future__ import annotations


# a GROUP BY the statistics expect this many groups of starts each thread's
# table at its share of them (no doubling steps from 256 groups: Q18's 1.5M
# order keys took 12, a tenth of the aggregation); a share the memory limit
# cannot hold many times over starts small as before
PRESIZE_MIN_GROUPS = 1 << 14
PRESIZE_LIMIT_SHARE = 1 / 32
_PRESIZE_BYTES_PER_GROUP = 48      # slots, hash and one key word, doubled capacity


def presize_groups(expected: int, threads: int, memory) -> int:
    """Groups to reserve in one thread's table up front: its share of the
    planner's estimate (0: grow from small)."""
    hint = expected // max(threads, 1)
    if hint < PRESIZE_MIN_GROUPS:
        return 0
    limit = getattr(getattr(memory, "parent", memory), "limit", None)
    if limit is not None and hint * _PRESIZE_BYTES_PER_GROUP > limit * PRESIZE_LIMIT_SHARE:
        return 0
    return hint


def planned_rows(node) -> int:
    """The planner's estimate of ``node``'s rows unless it is a default
    guess (0 then)."""
    from planner.cardinality import estimate_with_source
    est = estimate_with_source(node)
    return 0 if est.source == "default" else int(est.value)
