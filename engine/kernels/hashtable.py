"""Hash tables in flat numpy arrays: group ids (aggregation) and a chained
join table (hash join).  Kernels are numba, nogil; Python only grows arrays."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.errors import ExecutionError
from engine.kernels.hashing import KeyColumns, hash_keys, keys_equal
from engine.kernels.partition import partition_entries, scatter_keys
from scan.memops import copy_bytes

_LOW32 = np.uint64(0xFFFFFFFF)
_NO_REMAP = np.zeros(1, np.int64)


# ------------------------------------------------------------ group table

@njit(nogil=True, cache=True)
def _group_lookup(hashes, keys, kw, heap, slots, g_hash, g_keys, g_heap, out_gid, miss_rows):
    """Group id of every row whose key is in the table (read only: the fast
    path); the other rows are listed in miss_rows.  Returns their number."""
    mask = np.uint64(slots.shape[0] - 1)
    width = keys.shape[1]
    kf = keys.reshape(-1)
    gf = g_keys.reshape(-1)
    misses = 0
    for i in range(hashes.shape[0]):
        h = hashes[i]
        pos = h & mask
        while True:
            g = slots[pos]
            if g < 0:
                miss_rows[misses] = i
                misses += 1
                break
            if g_hash[g] == h and keys_equal(kf, heap, i, gf, g_heap, g, kw, width):
                out_gid[i] = g
                break
            pos = (pos + np.uint64(1)) & mask
    return misses


@njit(nogil=True, cache=True)
def _group_insert(hashes, keys, kw, heap, rows, start, slots, g_hash, g_keys, g_heap,
                  state, out_gid):
    """Assign a group id to rows[start:] of the input; new keys are copied
    into g_keys/g_heap.  state = [n_groups, heap_used].  Returns the position
    in rows where it stopped for lack of room (len(rows) when done)."""
    mask = np.uint64(slots.shape[0] - 1)
    ng = state[0]
    hu = state[1]
    cap_groups = g_keys.shape[0]
    limit = slots.shape[0] // 2
    width = keys.shape[1]
    kf = keys.reshape(-1)
    gf = g_keys.reshape(-1)
    for r in range(start, rows.shape[0]):
        i = rows[r]
        h = hashes[i]
        pos = h & mask
        while True:
            g = slots[pos]
            if g < 0:
                if ng >= cap_groups or ng >= limit:
                    state[0] = ng
                    state[1] = hu
                    return r
                need = 0
                for c in range(kw, width, 2):
                    ln = np.int64(kf[i * width + c] & np.uint64(0xFFFFFFFF))
                    if ln > 12:
                        need += ln
                if hu + need > g_heap.shape[0]:
                    state[0] = ng
                    state[1] = hu
                    return r
                for c in range(width):
                    gf[ng * width + c] = kf[i * width + c]
                for c in range(kw, width, 2):
                    ln = np.int64(kf[i * width + c] & np.uint64(0xFFFFFFFF))
                    if ln > 12:
                        off = np.int64(kf[i * width + c + 1])
                        copy_bytes(g_heap, hu, heap, off, ln)
                        gf[ng * width + c + 1] = np.uint64(hu)
                        hu += ln
                g_hash[ng] = h
                slots[pos] = np.int32(ng)
                out_gid[i] = ng
                ng += 1
                break
            if g_hash[g] == h and keys_equal(kf, heap, i, gf, g_heap, g, kw, width):
                out_gid[i] = g
                break
            pos = (pos + np.uint64(1)) & mask
    state[0] = ng
    state[1] = hu
    return rows.shape[0]


@njit(nogil=True, cache=True)
def _rehash(g_hash, ng, slots):
    mask = np.uint64(slots.shape[0] - 1)
    for g in range(ng):
        pos = g_hash[g] & mask
        while slots[pos] >= 0:
            pos = (pos + np.uint64(1)) & mask
        slots[pos] = np.int32(g)


class GroupTable:
    """Distinct normalized keys -> dense group ids 0..n_groups-1."""

    def __init__(self, kw: int, ks: int, memory=None):
        self.kw, self.ks = kw, ks
        self.memory = memory
        self.slots = _empty_slots(1024)
        self.g_hash = np.zeros(256, np.uint64)
        self.g_keys = np.zeros((256, kw + 2 * ks), np.uint64)
        self.g_heap = np.zeros(4096 if ks else 0, np.uint8)
        self.state = np.zeros(2, np.int64)
        self._reserved = 0
        self._account()

    @property
    def n_groups(self) -> int:
        return int(self.state[0])

    def nbytes(self) -> int:
        return self.slots.nbytes + self.g_hash.nbytes + self.g_keys.nbytes + self.g_heap.nbytes

    def _account(self, transient: int = 0):
        """Reserve what the table holds now, plus ``transient`` bytes about
        to be allocated next to it (a growth holds the old arrays and the new
        ones at once: reserved before allocating, given back by the next
        call)."""
        if self.memory is not None:
            now = self.nbytes() + transient
            self.memory.reserve(now - self._reserved, "hash aggregation table")
            self._reserved = now

    def _growth_bytes(self, cap: int, slots: int, heap: int) -> int:
        """Bytes a growth to ``cap`` groups, ``slots`` slots and ``heap``
        heap bytes allocates (the arrays it replaces stay until copied)."""
        out = 0
        if cap > len(self.g_hash):
            out += cap * (self.g_hash.itemsize + self.g_keys.shape[1] * self.g_keys.itemsize)
        if slots > len(self.slots):
            out += slots * self.slots.itemsize
        if heap > len(self.g_heap):
            out += heap
        return out

    def release(self):
        if self.memory is not None:
            self.memory.release(self._reserved)
            self._reserved = 0

    def insert(self, keys: KeyColumns, hashes: np.ndarray | None = None) -> np.ndarray:
        """Group id of every row of ``keys`` (new groups are added): a
        read-only lookup pass, then the rows it missed are inserted."""
        if hashes is None:
            hashes = hash_keys(keys)
        out = np.empty(keys.n, np.int64)
        miss_rows = np.empty(keys.n, np.int64)
        misses = _group_lookup(hashes, keys.keys, keys.kw, keys.heap, self.slots,
                               self.g_hash, self.g_keys, self.g_heap, out, miss_rows)
        if misses:
            self.insert_rows(keys, hashes, miss_rows[:misses], out)
        return out

    def find(self, keys: KeyColumns, hashes: np.ndarray) -> np.ndarray:
        """Group id of every row of ``keys``, -1 where the key is not in the
        table.  Read only: threads may look up concurrently."""
        out = np.full(keys.n, -1, np.int64)
        _group_lookup(hashes, keys.keys, keys.kw, keys.heap, self.slots, self.g_hash,
                      self.g_keys, self.g_heap, out, np.empty(keys.n, np.int64))
        return out

    def insert_rows(self, keys: KeyColumns, hashes: np.ndarray, rows: np.ndarray,
                    out: np.ndarray) -> None:
        """out[r] = group id of row r of ``keys`` for every r in ``rows``
        (new groups are added; other entries of out are left alone)."""
        start = 0
        while True:
            start = _group_insert(hashes, keys.keys, keys.kw, keys.heap, rows, start,
                                  self.slots, self.g_hash, self.g_keys, self.g_heap,
                                  self.state, out)
            if start >= len(rows):
                return
            self._grow(keys, int(rows[start]))

    def reserve(self, groups: int, heap_bytes: int = 0) -> None:
        """Make room for ``groups`` groups (and ``heap_bytes`` of long string
        keys) at once, so inserting up to that many never grows the table
        step by step (a merge knows its upper bound: the sum of its inputs)."""
        ng = self.n_groups
        cap = len(self.g_hash)
        while cap <= groups:
            cap *= 2
        size = len(self.slots)
        while size // 2 <= groups:
            size *= 2
        heap = heap_bytes if self.ks else 0
        self._account(self._growth_bytes(cap, size, heap))
        if cap > len(self.g_hash):
            self.g_hash = _grown(self.g_hash[:ng], cap)
            self.g_keys = _grown(self.g_keys[:ng], cap)
        if size > len(self.slots):
            self.slots = _empty_slots(size)
            _rehash(self.g_hash, ng, self.slots)
        if self.ks and heap_bytes > len(self.g_heap):
            self.g_heap = _grown(self.g_heap[:int(self.state[1])], heap_bytes)
        self._account()

    def _grow(self, keys: KeyColumns, start: int):
        ng = self.n_groups
        cap = 2 * len(self.g_hash) if ng >= len(self.g_hash) else len(self.g_hash)
        size = 2 * len(self.slots) if ng >= len(self.slots) // 2 else len(self.slots)
        heap = 0
        if self.ks:
            lens = (keys.strs[start, 0::2] & _LOW32).astype(np.int64)
            need = int(lens[lens > 12].sum()) + int(self.state[1])
            if need > len(self.g_heap):
                heap = max(need, 2 * len(self.g_heap))
        self._account(self._growth_bytes(cap, size, heap))
        if cap > len(self.g_hash):
            self.g_hash = _grown(self.g_hash, cap)
            self.g_keys = _grown(self.g_keys, cap)
        if size > len(self.slots):
            self.slots = _empty_slots(size)
            _rehash(self.g_hash, ng, self.slots)
        if heap:
            self.g_heap = _grown(self.g_heap, heap)
        self._account()

    def keys(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(words, strs, heap) of the groups, in group id order."""
        ng = self.n_groups
        k = self.g_keys[:ng]
        return k[:, :self.kw], k[:, self.kw:], self.g_heap[:int(self.state[1])]

    def key_view(self) -> KeyColumns:
        """The groups' keys as KeyColumns without a copy (read only; valid
        until the next insert)."""
        ng = self.n_groups
        return KeyColumns(self.g_keys[:ng], self.kw, self.g_heap[:int(self.state[1])], None, ng)

    def hashes(self) -> np.ndarray:
        """Hash of every group's key, in group id order (a view)."""
        return self.g_hash[:self.n_groups]

    def partition(self, bits: int, by_group: np.ndarray | None = None):
        """(dest, offsets, heap_bytes): the groups counting-sorted into
        2**bits partitions by the top ``bits`` bits of their hash; group g
        goes to position dest[g], partition p holds offsets[p]:offsets[p+1]
        and heap_bytes[p] bytes of long string keys.  With ``by_group`` (the
        hashes of another table) the entries are (group id, value) keys
        partitioned by their group's hash."""
        ng = self.n_groups
        dest = np.empty(ng, np.int64)
        offsets = np.empty((1 << bits) + 1, np.int64)
        heap_bytes = np.empty(1 << bits, np.int64)
        hashes = self.g_hash if by_group is None else by_group
        partition_entries(hashes, self.g_keys, self.kw, ng, by_group is not None, 64 - bits,
                          dest, offsets, heap_bytes)
        return dest, offsets, heap_bytes

    def move_out(self, dest: np.ndarray, remap: np.ndarray | None = None):
        """(KeyColumns, hashes) of the groups moved to positions dest (the
        heap is shared).  With ``remap`` word 0 of every key (a group id of
        another table) becomes remap[word 0], and hashes is None (they
        change).  The table's own arrays are dropped as soon as they were
        copied, so a merge never holds a table twice; the table can only be
        released afterwards."""
        ng = self.n_groups
        self.slots = None                       # no more lookups
        keys = np.empty((ng, self.g_keys.shape[1]), np.uint64)
        scatter_keys(self.g_keys, ng, dest, _NO_REMAP if remap is None else remap,
                     remap is not None, keys)
        self.g_keys = None
        hashes = None
        if remap is None:
            hashes = np.empty(ng, np.uint64)
            hashes[dest] = self.g_hash[:ng]
        self.g_hash = None
        return KeyColumns(keys, self.kw, self.g_heap[:int(self.state[1])], None, ng), hashes

    def key_columns(self) -> KeyColumns:
        ng = self.n_groups
        return KeyColumns(self.g_keys[:ng].copy(), self.kw, self.g_heap[:int(self.state[1])],
                          None, ng)


# group ids are int32 in the slots; a table holds at most half as many
# groups as it has slots
MAX_SLOTS = 1 << 32


def _empty_slots(size: int) -> np.ndarray:
    if size > MAX_SLOTS:
        raise ExecutionError(f"hash aggregation with more than {MAX_SLOTS // 2} groups "
                             "is not supported")
    return np.full(size, -1, np.int32)


def _grown(a: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros((cap,) + a.shape[1:], a.dtype)
    out[:len(a)] = a
    return out


# ------------------------------------------------------------- join table
# The table is built by engine/kernels/join_partition.py: b_hash, b_keys and
# the chains nxt are per build row; the bucket of a hash is its top bits,
# ``h >> bucket_shift``, whose leading bits are its partition (the heads of
# a partition are contiguous and were built apart).  Chains hold int32
# build rows in ascending order (-1 ends them).


@njit(nogil=True, cache=True)
def join_probe(p_hash, p_keys, p_heap, p_skip, kw, bucket_shift, heads, nxt, b_hash, b_keys,
               b_heap, resume, out_p, out_b):
    """Emit (probe row, build row) pairs with equal keys into out_p/out_b.
    resume = [probe row, next build candidate or -1]; updated when the
    output is full.  Returns the number of pairs written."""
    width = p_keys.shape[1]
    pf = p_keys.reshape(-1)
    bf = b_keys.reshape(-1)
    cap = out_p.shape[0]
    cnt = 0
    i = resume[0]
    cand = resume[1]
    n = p_hash.shape[0]
    while i < n:
        if p_skip[i]:
            i += 1
            cand = -1
            continue
        h = p_hash[i]
        if cand < 0:
            cand = np.int64(heads[h >> bucket_shift])
        while cand >= 0:
            if cnt >= cap:
                resume[0] = i
                resume[1] = cand
                return cnt
            if b_hash[cand] == h and keys_equal(pf, p_heap, i, bf, b_heap, cand, kw, width):
                out_p[cnt] = i
                out_b[cnt] = cand
                cnt += 1
            cand = np.int64(nxt[cand])
        i += 1
        cand = -1
    resume[0] = n
    resume[1] = -1
    return cnt


@njit(nogil=True, cache=True)
def join_probe_exists(p_hash, p_keys, p_heap, p_skip, kw, bucket_shift, heads, nxt, b_hash,
                      b_keys, b_heap, matched):
    """matched[i] = 1 when probe row i has at least one equal build key."""
    width = p_keys.shape[1]
    pf = p_keys.reshape(-1)
    bf = b_keys.reshape(-1)
    for i in range(p_hash.shape[0]):
        matched[i] = 0
        if p_skip[i]:
            continue
        h = p_hash[i]
        cand = np.int64(heads[h >> bucket_shift])
        while cand >= 0:
            if b_hash[cand] == h and keys_equal(pf, p_heap, i, bf, b_heap, cand, kw, width):
                matched[i] = 1
                break
            cand = np.int64(nxt[cand])


def table_size(n: int) -> int:
    """Power of two >= 2n (at least 16)."""
    size = 16
    while size < 2 * n:
        size *= 2
    return size
