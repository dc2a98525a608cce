"""Concatenating string columns whose rows point into different heaps
(engine/kernels/strings.py: rebase_views, concat_rebased;
engine/operators/collect.py: concat_consumed), against Python strings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from engine.block import Block
from engine.convert import strings_to_vector, vector_to_pylist
from engine.kernels.strings import concat_rebased, rebase_views
from engine.operators.collect import concat_consumed
from planner import types as T

_texts = st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=40)


@settings(max_examples=80, deadline=None)
@given(st.lists(_texts, min_size=1, max_size=5))
def test_concat_consumed_keeps_every_string(parts):
    vecs = [strings_to_vector(p, T.VARCHAR) for p in parts]
    blocks = [Block([v], len(p)) for v, p in zip(vecs, parts)]
    out = concat_consumed(blocks, [T.VARCHAR])
    assert vector_to_pylist(out.columns[0]) == [x for p in parts for x in p]


def test_rebase_moves_only_long_strings():
    long, short = strings_to_vector(["a" * 20, "b" * 13], T.VARCHAR), \
        strings_to_vector(["short", "x" * 12], T.VARCHAR)
    moved = rebase_views(long.data, 100)
    assert np.array_equal(moved[:, 1], long.data[:, 1] + np.uint64(100))
    assert np.array_equal(moved[:, 0], long.data[:, 0])
    assert np.array_equal(rebase_views(short.data, 100), short.data)
    both = concat_rebased([short.data, long.data], [0, 7])
    assert np.array_equal(both[:2], short.data)
    assert np.array_equal(both[2:, 1], long.data[:, 1] + np.uint64(7))
