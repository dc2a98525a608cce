"""Primary-key guesses (the paper's Sect. 3.3).

Parquet files declare no keys, yet the planner sizes key/foreign-key
joins by them.  A single column is a key when its distinct estimate
(HyperLogLog) is close to the row count and it holds no NULL; a pair of
columns when the distinct estimate of the pair (a sketch of the pair's
combined hashes, collected for pairs that joins asked about) is.  The
paper checks pairs on the row sample instead; a sample of 1,024 rows out
of millions holds no repeated pair for most pairs of many-valued columns,
so here the sample only refutes (a repeated pair, or too few values
between the two columns to make every row distinct) and the pair sketch
confirms.

``key_guess`` is the paper's heuristic over candidate columns in ordinal
order (the columns a query joins on): the first single-column key, else
the first pair.
"""

from __future__ import annotations

# distinct / rows above which a column (or pair) is taken for a key: the
# HLL estimate of a true key lies within +-2.5% of the rows (p = 14)
KEY_SHARE = 0.95


def column_is_key(distinct: float | None, rows: int, null_count: int) -> bool | None:
    if distinct is None or rows <= 0:
        return None
    return bool(null_count == 0 and distinct >= KEY_SHARE * rows)


def pair_is_key(pair_distinct: float | None, rows: int, distinct_a: float | None,
                distinct_b: float | None, sample_pairs: tuple | None) -> bool | None:
    """``sample_pairs``: (values of a, values of b) on the sample rows
    (Python lists, None for NULL), or None when the sample lacks them."""
    if rows <= 0:
        return None
    if distinct_a is not None and distinct_b is not None \
            and distinct_a * distinct_b < KEY_SHARE * rows:
        return False                   # too few combinations for every row to differ
    if sample_pairs is not None:
        a, b = sample_pairs
        if any(x is None or y is None for x, y in zip(a, b)):
            return False               # a key holds no NULL
        if len(set(zip(a, b))) < len(a):
            return False               # a pair repeats
    if pair_distinct is None:
        return None
    return bool(pair_distinct >= KEY_SHARE * rows)


def key_guess(candidates: list, single, pair) -> tuple | None:
    """The paper's guess: among ``candidates`` (column ids in ordinal
    order), the first with ``single(c)`` True, else the first pair (in
    ordinal order) with ``pair(a, b)`` True; None when neither."""
    for c in candidates:
        if single(c):
            return (c,)
    for i, a in enumerate(candidates):
        for b in candidates[i + 1:]:
            if pair(a, b):
                return (a, b)
    return None


def sample_distinct(values: list) -> int:
    """Distinct non-NULL values among sample values."""
    return len({v for v in values if v is not None})

