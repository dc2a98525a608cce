"""The nogil kernels behind group ids from dictionary codes
(engine.operators.aggregate.coded_group_ids) against their numpy meaning."""

from __future__ import annotations

import numpy as np

from engine.kernels.aggregates import fold_codes, gather_int64, mark_present


def test_fold_codes_mark_present_gather_match_numpy():
    rng = np.random.default_rng(5)
    sizes = [3, 1, 7, 2]
    codes = [rng.integers(0, s, 10_000).astype(np.int32) for s in sizes]
    codes[2] = codes[2][::2].copy()[:5000].repeat(2)       # strided source, equal length
    combined = np.empty(10_000, np.int64)
    for j, (c, s) in enumerate(zip(codes, sizes)):
        fold_codes(combined, c, s, j == 0)
    want = codes[0].astype(np.int64)
    for c, s in zip(codes[1:], sizes[1:]):
        want = want * s + c
    assert (combined == want).all()
    total = int(np.prod(sizes))
    seen = np.zeros(total, np.uint8)
    assert mark_present(combined, seen) == len(np.unique(want))
    assert (np.flatnonzero(seen) == np.flatnonzero(np.bincount(want, minlength=total))).all()
    lookup = rng.integers(-5, 1 << 40, total)
    out = np.empty(len(combined), np.int64)
    gather_int64(lookup, combined, out)
    assert (out == lookup[combined]).all()


def test_empty_block():
    combined = np.empty(0, np.int64)
    fold_codes(combined, np.empty(0, np.int32), 4, True)
    seen = np.zeros(4, np.uint8)
    assert mark_present(combined, seen) == 0 and not seen.any()
    out = np.empty(0, np.int64)
    gather_int64(np.arange(4, dtype=np.int64), combined, out)


def test_group_table_reserve_gives_the_same_groups():
    from engine.block import Vector
    from engine.kernels.hashing import normalize_keys
    from engine.kernels.hashtable import GroupTable
    from engine.operators.aggregate import key_layout
    from planner.types import BIGINT, VARCHAR
    rng = np.random.default_rng(3)
    words = [f"value-{i:06d}-long-enough".encode() if i % 3 else b"short" for i in range(3000)]
    from engine.expr.vectors import string_vector
    heap = np.frombuffer(b"".join(words), np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    strings = string_vector(VARCHAR, offsets, heap)
    ints = Vector(BIGINT, rng.integers(0, 50, len(words)), None)
    kw, ks = key_layout([BIGINT, VARCHAR])
    parts = [normalize_keys([ints, strings], len(words), null_word=True)]
    results = []
    for reserve in (False, True):
        t = GroupTable(kw, ks)
        if reserve:
            t.reserve(len(words), len(heap) * 2)
        ids = t.insert(parts[0])
        w, s, h = t.keys()
        results.append((ids, w.copy(), s.copy(), h.copy(), t.n_groups))
    a, b = results
    assert a[4] == b[4] and all((x == y).all() for x, y in zip(a[:4], b[:4]))
