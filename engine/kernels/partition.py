"""Counting-sort partitioning of hash-table entries by the high bits of their
hash, for partitioned merges (each partition merges on its own thread).

The partition is ``hash >> shift`` (the top bits); hash tables index their
slots with the low bits, so a partition's table does not cluster.  Entries
are scattered into partition order once (sequential reads, one write stream
per partition), so each partition then reads one contiguous range."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True, inline="always")
def _long_bytes(keys, r, kw):
    """Bytes of row r's long (> 12 byte) string keys (they live in a heap)."""
    need = 0
    for c in range(kw, keys.shape[1], 2):
        ln = np.int64(keys[r, c] & np.uint64(0xFFFFFFFF))
        if ln > 12:
            need += ln
    return need


@njit(nogil=True, cache=True)
def partition_entries(hashes, keys, kw, n, by_group, shift, dest, offsets, heap_bytes):
    """Counting sort of entries 0..n-1 into offsets.shape[0] - 1 partitions
    by ``hashes[r] >> shift``, or with by_group by the hash of the group id in
    key word 0 (``hashes[keys[r, 0]] >> shift``): dest[r] = position of entry
    r in partition order (stable), partition p holds positions
    offsets[p]:offsets[p+1], and heap_bytes[p] = the long-string key bytes
    of its entries."""
    parts = offsets.shape[0] - 1
    sh = np.uint64(shift)
    if by_group:                   # dest holds the partitions for a moment
        for r in range(n):
            dest[r] = np.int64(hashes[np.int64(keys[r, 0])] >> sh)
    else:
        for r in range(n):
            dest[r] = np.int64(hashes[r] >> sh)
    cursor = np.zeros(parts, np.int64)
    for r in range(n):
        cursor[dest[r]] += 1
    for p in range(parts):
        heap_bytes[p] = 0
    if kw < keys.shape[1]:
        for r in range(n):
            heap_bytes[dest[r]] += _long_bytes(keys, r, kw)
    total = 0
    for p in range(parts):
        offsets[p] = total
        c = cursor[p]
        cursor[p] = total
        total += c
    offsets[parts] = total
    for r in range(n):
        p = dest[r]
        dest[r] = cursor[p]
        cursor[p] += 1


@njit(nogil=True, cache=True)
def scatter_keys(src, n, dest, remap, has_remap, out):
    """out[dest[r]] = src[r] for r < n; with has_remap word 0 (a group id)
    becomes remap[word 0]."""
    width = src.shape[1]
    for r in range(n):
        d = dest[r]
        for c in range(width):
            out[d, c] = src[r, c]
        if has_remap:
            out[d, 0] = np.uint64(remap[np.int64(src[r, 0])])


@njit(nogil=True, cache=True)
def gather_remapped(src, rows, gmap, out):
    """out[k] = src[rows[k]] with word 0 (a group id) replaced by
    gmap[word 0]: (group id, value) keys moved to another table's ids."""
    width = src.shape[1]
    for k in range(rows.shape[0]):
        r = rows[k]
        out[k, 0] = np.uint64(gmap[np.int64(src[r, 0])])
        for c in range(1, width):
            out[k, c] = src[r, c]
