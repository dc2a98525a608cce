"""Key normalization and row hashing for hash joins and hash aggregation.

Key columns of any type are normalized into a ``KeyColumns``: fixed-width
values as uint64 words (one row of ``words`` per input row), strings as their
16-byte views (two words per string column in ``strs``) over one shared
``heap``.  Equal SQL values give equal normalized keys, so hashing and
equality tests are word compares plus a byte compare for long strings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from engine.block import Int64WideVector, Vector
from engine.kernels.heaps import (COMPACT_MIN_BYTES, HeapCache, compact_views, distinct_heaps,
                                  long_bytes, should_compact)
from scan.memops import load8

_LOW32 = np.uint64(0xFFFFFFFF)
_M64 = (1 << 64) - 1


@dataclass
class KeyColumns:
    keys: np.ndarray           # (n, kw + 2 * ks) uint64, C-contiguous: words, then views
    kw: int                    # number of fixed-width words per row
    heap: np.ndarray           # uint8 heap of every string column
    any_null: np.ndarray | None  # uint8 (n,), 1 = some key is NULL
    n: int
    hashes: np.ndarray | None = None   # hash_rows of keys, when made along with them
    compacted: bool = False    # heap holds only the rows' long strings (every column's)

    @property
    def words(self) -> np.ndarray:
        return self.keys[:, :self.kw]

    @property
    def strs(self) -> np.ndarray:
        return self.keys[:, self.kw:]


def value_words(vec: Vector) -> list[np.ndarray]:
    """Fixed-width vector -> list of uint64 word arrays (1, or 2 for object ints)."""
    if isinstance(vec, Int64WideVector):        # the words of the same Python ints
        return [vec.ints.view(np.uint64), (vec.ints >> 63).view(np.uint64)]
    data = vec.data
    kind = data.dtype.kind
    if kind == "O":
        vals = [0 if v is None else int(v) for v in data]   # rare exact path
        lo = np.array([v & _M64 for v in vals], dtype=np.uint64)
        hi = np.array([(v >> 64) & _M64 for v in vals], dtype=np.uint64)
        return [lo, hi]
    if kind == "f":
        f = data.astype(np.float64) + 0.0          # -0.0 -> 0.0
        f[np.isnan(f)] = np.nan                    # one NaN bit pattern
        return [f.view(np.uint64)]
    if kind == "u":
        return [data.astype(np.uint64)]
    return [data.astype(np.int64).view(np.uint64)]


def normalize_keys(vectors: list[Vector], n: int, null_word: bool,
                   heap_cache: HeapCache | None = None) -> KeyColumns:
    """Normalize key vectors.  With ``null_word`` a bit mask of NULL keys is
    appended as one extra word (grouping: NULL is a value); NULL slots are
    zeroed either way.  ``heap_cache``: the caller's cache of the string
    heaps its blocks keep pointing into (engine/kernels/heaps.py)."""
    ks = sum(1 for v in vectors if v.type.is_string)
    kw = sum(0 if v.type.is_string else
             (2 if isinstance(v, Int64WideVector) or v.data.dtype == object else 1)
             for v in vectors) + (1 if null_word else 0)
    keys = np.empty((n, kw + 2 * ks), np.uint64)
    words = keys[:, :kw]
    heaps: list[np.ndarray] = []
    any_null = None
    if null_word:
        _zero_column(keys, kw - 1)
    w = s = base = 0
    hashes = None
    strings = [v for v in vectors if v.type.is_string]
    bases = None                # {id(heap): its offset in the one heap}
    if heap_cache is not None and len(strings) > 1:
        distinct = distinct_heaps([v.heap for v in strings])
        if len(distinct) > 1 and sum(len(h) for h in distinct) >= COMPACT_MIN_BYTES:
            bases = heap_cache.bases_for(distinct)
            if bases is not None:
                heaps.append(heap_cache.heap)
    compact = bases is None and len(strings) > 1 and should_compact(
        [v.data for v in strings], [v.heap for v in strings],
        [None if v.nulls is None else v.nulls.view(np.bool_) for v in strings])
    if bases is None and not compact:
        bases = {}              # each distinct heap once, at the end of the others
    if compact:                 # rows of a big table: copy the strings they use
        used = 0
        for v in strings:
            isnull = _NO_NULLS if v.nulls is None else v.nulls.view(np.bool_)
            used += long_bytes(np.ascontiguousarray(v.data, np.uint64), isnull,
                               v.nulls is not None)
        heaps.append(np.empty(used, np.uint8))
    for j, vec in enumerate(vectors):
        isnull = None
        if vec.nulls is not None and vec.nulls.any():
            isnull = vec.nulls.astype(bool)
            any_null = isnull.copy() if any_null is None else (any_null | isnull)
            if null_word:
                words[:, kw - 1] |= isnull.astype(np.uint64) << np.uint64(j % 64)
        if vec.type.is_string and compact:
            base = compact_views(np.ascontiguousarray(vec.data, dtype=np.uint64),
                                 _EMPTY_HEAP if vec.heap is None else np.ascontiguousarray(vec.heap, np.uint8),
                                 _NO_NULLS if isnull is None else isnull, isnull is not None,
                                 keys, kw + 2 * s, heaps[0], np.int64(base))
            s += 1
        elif vec.type.is_string:
            heap = vec.heap
            start = 0
            if heap is not None and len(heap):
                start = bases.get(id(heap))
                if start is None:               # (never for a cached set)
                    start = bases[id(heap)] = base
                    heaps.append(heap)
                    base += len(heap)
            _put_views(keys, kw + 2 * s, np.ascontiguousarray(vec.data, dtype=np.uint64),
                       np.uint64(start), _NO_NULLS if isnull is None else isnull,
                       isnull is not None)
            s += 1
        elif not isinstance(vec, Int64WideVector) and vec.data.dtype.kind in "iub" \
                and vec.data.dtype != np.uint64:
            if len(vectors) == 1:       # one integer key: hashed in the same pass
                hashes = np.empty(n, np.uint64)
                _put_ints_hashed(keys, w, np.ascontiguousarray(vec.data),
                                 _NO_NULLS if isnull is None else isnull, isnull is not None,
                                 hashes)
            else:
                _put_ints(keys, w, np.ascontiguousarray(vec.data),
                          _NO_NULLS if isnull is None else isnull, isnull is not None)
            w += 1
        else:
            for part in value_words(vec):
                words[:, w] = part
                if isnull is not None:
                    words[isnull, w] = 0
                w += 1
    if len(heaps) == 1:
        heap = np.ascontiguousarray(heaps[0], dtype=np.uint8)
    elif heaps:
        heap = np.concatenate([np.asarray(h, np.uint8) for h in heaps])
    else:
        heap = np.zeros(0, np.uint8)
    if any_null is not None:
        any_null = any_null.astype(np.uint8)
    return KeyColumns(keys, kw, heap, any_null, n, hashes, compact)


# ------------------------------------------------------------------ kernels

_NO_NULLS = np.zeros(1, np.bool_)
_EMPTY_HEAP = np.zeros(0, np.uint8)


@njit(nogil=True, cache=True)
def _put_views(keys, col, views, base, isnull, has_nulls):
    """keys[:, col:col+2] = string views, long-string offsets moved by base
    (the column's heap starts at base in the shared key heap); NULL rows 0."""
    for i in range(views.shape[0]):
        if has_nulls and isnull[i]:
            keys[i, col] = 0
            keys[i, col + 1] = 0
            continue
        w0 = views[i, 0]
        w1 = views[i, 1]
        if base != 0 and (w0 & np.uint64(0xFFFFFFFF)) > np.uint64(12):
            w1 += base
        keys[i, col] = w0
        keys[i, col + 1] = w1


@njit(nogil=True, cache=True)
def _zero_column(keys, col):
    for i in range(keys.shape[0]):
        keys[i, col] = 0


@njit(nogil=True, cache=True)
def _put_ints(keys, col, vals, isnull, has_nulls):
    """keys[:, col] = integer values sign-extended to 64 bits; NULL rows 0."""
    for i in range(vals.shape[0]):
        if has_nulls and isnull[i]:
            keys[i, col] = 0
        else:
            keys[i, col] = np.uint64(np.int64(vals[i]))


@njit(nogil=True, cache=True)
def _put_ints_hashed(keys, col, vals, isnull, has_nulls, out):
    """_put_ints, and out[i] = hash_rows of row i, for keys whose every
    other word is already written and that hold no strings."""
    kw = keys.shape[1]
    for i in range(vals.shape[0]):
        if has_nulls and isnull[i]:
            keys[i, col] = 0
        else:
            keys[i, col] = np.uint64(np.int64(vals[i]))
        out[i] = _fmix(_hash_words(keys, i, kw))


@njit(nogil=True, cache=True, inline="always")
def _mix(h, w):
    h ^= w
    h *= np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    return h


@njit(nogil=True, cache=True, inline="always")
def _fmix(h):
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@njit(nogil=True, cache=True, inline="always")
def _hash_words(keys, i, kw):
    """The hash state after row i's kw fixed-width key words."""
    h = np.uint64(0x243F6A8885A308D3)
    for j in range(kw):
        h = _mix(h, keys[i, j])
    return h


@njit(nogil=True, cache=True)
def hash_rows(keys, kw, heap, out):
    """out[i] = hash of row i's normalized key (words, then string bytes)."""
    n = keys.shape[0]
    width = keys.shape[1]
    for i in range(n):
        h = _hash_words(keys, i, kw)
        for c in range(kw, width, 2):
            w0 = keys[i, c]
            w1 = keys[i, c + 1]
            length = np.int64(w0 & np.uint64(0xFFFFFFFF))
            h = _mix(h, w0)
            if length <= 12:
                h = _mix(h, w1)
            else:
                h = _mix_string_tail(h, heap, np.int64(w1), length)
        out[i] = _fmix(h)


@njit(nogil=True, cache=True, inline="always")
def _mix_string_tail(h, heap, off, length):
    """Mix bytes 4.. of the long string heap[off:off + length] into h, eight
    little-endian bytes per word (the last word zero-padded): one unaligned
    load per word wherever eight bytes of the heap remain."""
    k = 4
    room = heap.shape[0] - 8
    while k < length:
        m = length - k
        p = off + k
        if p <= room:
            acc = load8(heap, p)
            if m < 8:
                acc &= (np.uint64(1) << np.uint64(8 * m)) - np.uint64(1)
        else:
            acc = np.uint64(0)
            if m > 8:
                m = 8
            for b in range(m):
                acc |= np.uint64(heap[p + b]) << np.uint64(8 * b)
        h = _mix(h, acc)
        k += 8
    return h


@njit(nogil=True, cache=True, inline="always")
def keys_equal(ka, ha, i, kb, hb, j, kw, width):
    """Row i of flat keys ka (heap ha) equals row j of kb (heap hb); ka/kb
    are (n, width) key arrays reshaped to 1-D (faster in numba)."""
    a = i * width
    b = j * width
    for c in range(kw):
        if ka[a + c] != kb[b + c]:
            return False
    for c in range(kw, width, 2):
        a0 = ka[a + c]
        if a0 != kb[b + c]:
            return False
        length = np.int64(a0 & np.uint64(0xFFFFFFFF))
        a1 = ka[a + c + 1]
        b1 = kb[b + c + 1]
        if length <= 12:
            if a1 != b1:
                return False
        else:
            oa = np.int64(a1)
            ob = np.int64(b1)
            k = 4
            while k + 8 <= length:                  # (inside both strings)
                if load8(ha, oa + k) != load8(hb, ob + k):
                    return False
                k += 8
            while k < length:
                if ha[oa + k] != hb[ob + k]:
                    return False
                k += 1
    return True


def hash_keys(keys: KeyColumns) -> np.ndarray:
    """The hash of every key row (made by normalize_keys when it could)."""
    if keys.hashes is not None:
        return keys.hashes
    out = np.empty(keys.n, np.uint64)
    hash_rows(keys.keys, keys.kw, keys.heap, out)
    return out
