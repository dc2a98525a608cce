"""A decoded dictionary kept with its cached chunk (scan/required_chunk.py)
in fewer bytes: one of more than NARROW_DICTIONARY_MIN entries is stored as
offsets from its minimum in the narrowest unsigned type (uint16, uint32)
that holds them -- keys and prices of a row group span far less than their
int64: l_partkey and l_extendedprice keep 4 of 8 bytes per entry -- and
widened on each read, a pass over the entries, a tenth of the time
decompressing them took."""

from __future__ import annotations

import numpy as np
from numba import njit

NARROW_DICTIONARY_MIN = 1024


def narrowed(flat: np.ndarray):
    """(array kept, base or None): ``flat`` itself, or its entries minus
    ``base`` in uint16/uint32 when their span fits."""
    if len(flat) <= NARROW_DICTIONARY_MIN:
        return flat, None
    lo, hi = int(flat.min()), int(flat.max())
    span = hi - lo
    for dt in (np.uint16, np.uint32):       # (distinct entries: a span of more than 255)
        if span <= np.iinfo(dt).max and np.dtype(dt).itemsize < flat.itemsize:
            out = np.empty(len(flat), dt)
            _narrow(flat, lo, out)
            return out, lo
    return flat, None


@njit(nogil=True, cache=True)
def _narrow(values, base, out):
    """out[i] = values[i] - base, in out's narrower type (one pass: numpy's
    astype, subtract, astype made two temporaries and three passes, 5% of
    SF10 Q5, whose dictionaries are re-decoded on every read)."""
    for i in range(len(values)):
        out[i] = np.int64(values[i]) - base


def widened(kept: np.ndarray, base, dtype) -> np.ndarray:
    """A kept dictionary (``narrowed``'s pair) as ``dtype`` kernel values."""
    if base is None:
        return kept
    out = np.empty(len(kept), dtype)
    _widen(kept, base, out)
    return out


@njit(nogil=True, cache=True)
def _widen(offsets, base, out):
    """out[i] = base + offsets[i] (numpy's mixed-type add holds the GIL)."""
    for i in range(len(offsets)):
        out[i] = base + np.int64(offsets[i])
