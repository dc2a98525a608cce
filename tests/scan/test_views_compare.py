"""compare_strings (scan/views.py), 8 bytes at a time after the prefix,
against Python's byte order: inline and heap strings, shared prefixes,
zero bytes, every length around the 4/12 byte boundaries."""

import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

from scan.views import compare_strings, views_from_pylist


@njit(cache=False)
def _compare_all(views, heap, out):
    n = views.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = compare_strings(views[i, 0], views[i, 1], heap,
                                        views[j, 0], views[j, 1], heap)


def _expected(values):
    return np.array([[(a > b) - (a < b) for b in values] for a in values], np.int64)


def _check(values):
    views, heap, _ = views_from_pylist(values)
    out = np.empty((len(values), len(values)), np.int64)
    _compare_all(views, heap if len(heap) else np.zeros(1, np.uint8), out)
    np.testing.assert_array_equal(out, _expected(values))


def test_lengths_around_inline_and_word_boundaries():
    base = bytes(range(1, 40))
    values = []
    for n in range(0, 30):
        s = base[:n]
        values.append(s)
        if n:
            values.append(s[:-1] + b"\x00")            # zero byte last
            values.append(s[:-1] + b"\xff")
            values.append(s[:n // 2] + b"\x00" + s[n // 2 + 1:])
    values += [b"Customer#000000001", b"Customer#000000010", b"Customer#00000001",
               b"Customer#0000000100", b"\x00" * 13, b"\x00" * 12, b""]
    _check(values)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=3), min_size=1, max_size=8),
       st.lists(st.binary(max_size=30), min_size=1, max_size=25))
def test_against_python_byte_order(prefixes, tails):
    # shared prefixes make most comparisons go past the first 4 bytes
    values = [prefixes[i % len(prefixes)] * 4 + t for i, t in enumerate(tails)]
    _check(values)
