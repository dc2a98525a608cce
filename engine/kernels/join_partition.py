"""Radix-partitioned build of the hash join table (engine/operators/hashjoin.py).

The table proper is in build row order, like the input: ``b_hash`` and
``b_keys`` per row, and chains ``nxt[row]`` (int32 rows, ascending, -1 ends
a chain).  A hash's bucket is its top bits, ``heads[h >> bucket_shift]``;
the leading ``bits`` of those are its partition and the next ``bucket_bits``
its bucket inside the partition, so the two never share bits and partition
p owns heads[p << bucket_bits:(p + 1) << bucket_bits].  To chain one
partition without touching the others' heads, the rows with a non-NULL key
are first scattered as 64-bit entries (row << 32 | top 32 hash bits) into
partition order (build row order inside a partition); the entries are
dropped after the build.  Probes keep the locality of build row order
(sorted or clustered keys) and find a bucket with one shift.

Phases, all numba nogil:
  partition_histogram   per build block, in the sink's worker threads: rows
                        per partition at FINE_BITS resolution
  scatter_part          per block (parallel): entries to partition order,
                        hashes and key words to b_hash/b_keys
  build_partitions      per range of partitions (parallel): chain the rows

bits + bucket_bits <= 32 (at most 32 partitions of at most 2**27 buckets
for MAX_ROWS rows), so the entries' 32 hash bits hold a bucket.  A
partition of ``bits`` bits is ``(h >> 1) >> (63 - bits)``: for bits = 0 that
is 0 without a shift by 64 (undefined in LLVM).
"""

from __future__ import annotations

import numpy as np
from numba import njit

FINE_BITS = 5                  # at most 1 << FINE_BITS partitions (block histograms too)
_FINE_SHIFT = np.uint64(64 - FINE_BITS)
PARTITION_ROWS = 1 << 16       # target rows per partition
MAX_ROWS = (1 << 31) - 1       # heads and nxt hold int32 build rows
_LOW32 = np.uint64(0xFFFFFFFF)


def partition_bits(rows: int) -> int:
    """Partition bits for a build of ``rows`` rows: partitions of about
    PARTITION_ROWS rows, at most 1 << FINE_BITS of them (0 bits: one).

    Measured on this design (6M-row builds, 2-core VM with a large L3):
    32 partitions give the threads enough pieces while each partition's
    chain stores (nxt by build row) stay close together; with hundreds of
    cache-sized partitions the scatter and the scattered nxt stores cost
    more than the cache-resident heads save."""
    bits = 0
    while bits < FINE_BITS and (rows >> bits) > PARTITION_ROWS:
        bits += 1
    return bits


def partition_shift(bits: int) -> np.uint64:
    """The second shift of ``(h >> 1) >> shift`` that yields a ``bits``-bit partition."""
    return np.uint64(63 - bits)


@njit(nogil=True, cache=True)
def partition_histogram(hashes, skip, has_skip, hist):
    """hist[p] = number of rows (not marked in skip) whose hash has top
    FINE_BITS bits p.  hist has 1 << FINE_BITS entries and is overwritten."""
    for p in range(hist.shape[0]):
        hist[p] = 0
    for i in range(hashes.shape[0]):
        if has_skip and skip[i]:
            continue
        hist[hashes[i] >> _FINE_SHIFT] += 1


@njit(nogil=True, cache=True)
def scatter_part(hashes, keys, skip, has_skip, kw, heap_rebase, shift, cursor, row_start,
                 entries, b_hash, b_keys):
    """One build block (build rows row_start...): b_hash/b_keys of its rows,
    long string views of string column s moved by heap_rebase[s] (wrapping
    uint64: the table's key heap offset minus the block's); every row not
    marked in skip also gets entries[d] = row << 32 | top 32 hash bits at
    the next free position d = cursor[p] of its partition p = (h >> 1) >>
    shift (cursor advanced)."""
    width = keys.shape[1]
    for i in range(hashes.shape[0]):
        r = row_start + i
        h = hashes[i]
        b_hash[r] = h
        for c in range(kw):
            b_keys[r, c] = keys[i, c]
        s = 0
        for c in range(kw, width, 2):
            w0 = keys[i, c]
            w1 = keys[i, c + 1]
            if (w0 & _LOW32) > np.uint64(12):
                w1 += heap_rebase[s]
            b_keys[r, c] = w0
            b_keys[r, c + 1] = w1
            s += 1
        if has_skip and skip[i]:
            continue
        p = (h >> np.uint64(1)) >> shift
        d = cursor[p]
        cursor[p] = d + 1
        entries[d] = (np.uint64(r) << np.uint64(32)) | (h >> np.uint64(32))


@njit(nogil=True, cache=True)
def build_partitions(p0, p1, row_off, bucket_bits, entry_shift, entries, heads, nxt):
    """Chains of partitions p0..p1-1: partition p's entries are
    entries[row_off[p]:row_off[p+1]] (ascending rows), its buckets
    heads[p << bucket_bits:(p + 1) << bucket_bits]; an entry's bucket is
    its 32 hash bits >> entry_shift (= bucket_shift - 32)."""
    size = np.int64(1) << np.int64(bucket_bits)
    for p in range(p0, p1):
        for b in range(p * size, (p + 1) * size):
            heads[b] = -1
        for d in range(row_off[p + 1] - 1, row_off[p] - 1, -1):
            e = entries[d]
            b = np.int64((e & _LOW32) >> entry_shift)
            r = np.int64(e >> np.uint64(32))
            nxt[r] = heads[b]
            heads[b] = np.int32(r)
