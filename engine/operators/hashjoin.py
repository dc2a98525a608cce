"""Hash join: a build sink over Join.right and a probe operator over Join.left.

Kinds: inner, left, semi and anti stream through the probe; right and full
also emit the build rows no probe row matched (engine.executor appends them
after the probe pipeline via ``unmatched_build_block``).  Joins without
equality keys (cross, inequality and other conditions) run in
engine/operators/nljoin.py; a table without keys here only serves
mark_in's candidate search of an uncorrelated-but-for-the-residual IN.

Subquery kinds (planner.logical.Join documents them): ``mark`` appends a
BOOLEAN column "some partner exists"; ``mark_in`` is the three-valued IN
(key 0 is the IN comparison, a NULL on either side of it makes a missing
match NULL instead of FALSE); ``single`` is a left join that raises when a
probe row has more than one partner (a scalar subquery's rows).

The build runs in parallel.  HashBuildSink.consume (worker threads)
evaluates, normalizes and hashes each build block's keys and counts its rows
per hash partition; merge() concatenates the build columns and, on the same
workers, scatters the rows into partition order and chains each partition's
buckets apart (engine/kernels/join_partition.py).  Build rows are numbered
in morsel order and chains list them in ascending order, so a probe row
meets its partners in the same order for any thread count.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from engine.block import Block, Vector, empty_vector, null_vector, take_block
from engine.errors import ExecutionError, UnsupportedFeatureError
from engine.kernels.hashing import hash_keys, normalize_keys
from engine.kernels.hashtable import join_probe, join_probe_exists, table_size
from engine.kernels.join_partition import (FINE_BITS, MAX_ROWS, build_partitions,
                                           partition_bits, partition_histogram, partition_shift,
                                           scatter_part)
from engine.operators.collect import CollectSink, Holding, concat_column_counted, held_nbytes
from engine.operators.nljoin import every_pair
from engine.pipeline import Operator
from engine.scheduler import parallel_map
from planner.types import BOOLEAN
from scan.selection import compress_rows

SUPPORTED_KINDS = ("inner", "left", "right", "full", "semi", "anti", "cross",
                   "mark", "mark_in", "single", "right_semi", "right_anti")
# semi/anti joins run with the table on their left (outer) side: the probe
# only marks the build rows that have a partner (engine/executor.py then
# keeps the marked rows, or the unmarked ones)
BUILD_MARK_KINDS = ("right_semi", "right_anti")
_EXISTS_KINDS = ("semi", "anti", "mark")
SCALAR_SUBQUERY_ERROR = "More than one row returned by a subquery used as an expression"


def _evaluate_all(exprs, block: Block) -> list[Vector]:
    from engine.expr import evaluate
    from planner.expressions import ColumnRef
    return [block.columns[e.index] if isinstance(e, ColumnRef) else evaluate(e, block)
            for e in exprs]


class BuildKeys:
    """One build block's normalized join keys, hashes and partition histogram
    (computed in the sink's worker threads).  ``heaps`` holds each string key
    column's own heap and ``heap_offsets`` where normalize_keys put it in the
    block's key heap, so blocks sharing a row group's heap share it in the
    table's key heap too (the block's concatenation is only used to hash)."""

    def __init__(self, block: Block, key_exprs):
        vecs = _evaluate_all(key_exprs, block)
        n = block.n
        kc = normalize_keys(vecs, n, null_word=False)
        self.keys, self.kw, self.n = kc.keys, kc.kw, n
        strings = [v for v in vecs if v.type.is_string]
        if len(strings) == 1 or kc.compacted:    # one heap every string column points into
            self.heaps, self.heap_offsets = [kc.heap] * len(strings), [0] * len(strings)
        else:                                  # the layout of normalize_keys
            self.heaps, self.heap_offsets, base = [], [], 0
            for v in strings:
                heap = v.heap if v.heap is not None else _EMPTY_HEAP
                self.heaps.append(heap)
                self.heap_offsets.append(base)
                base += len(heap)
        self.has_skip = kc.any_null is not None
        self.skip = kc.any_null if self.has_skip else _NO_SKIP
        self.hashes = hash_keys(kc)
        self.hist = np.empty(1 << FINE_BITS, np.int32)
        partition_histogram(self.hashes, self.skip, self.has_skip, self.hist)

    @property
    def nbytes(self) -> int:
        return (self.keys.nbytes + self.hashes.nbytes + self.hist.nbytes
                + (self.n if self.has_skip else 0))


# Builds of fewer rows run on the calling thread: handing them to the pool
# costs more in thread wake-ups than the second thread saves (Q16's 30k-row
# part build took 1.0 ms alone and 1.1 ms on two threads).
PARALLEL_BUILD_ROWS = 65536

_NO_SKIP = np.zeros(1, np.uint8)
_EMPTY_HEAP = np.zeros(0, np.uint8)
_M64 = (1 << 64) - 1


class JoinTable:
    """The materialized build side plus a chained hash table over its keys,
    built radix-partitioned (engine/kernels/join_partition.py): ``b_hash``,
    ``b_keys`` (key words over ``b_heap``) and the chains ``nxt`` per build
    row, the bucket ``heads`` per hash partition.  A probe row meets its
    partners in build row (= morsel) order, whatever the partition count."""

    def __init__(self, block: Block, key_exprs, memory=None, reserved: int = 0,
                 threads: int = 1, parts: list | None = None, side_tasks: list = ()):
        """parts: the BuildKeys of the block's pieces, in order (computed
        here when None).  side_tasks: callables run on the worker threads
        along with the first build phase (the build sink fills the block's
        columns that way)."""
        self.block = block
        self.key_exprs = list(key_exprs)
        self.memory = memory
        self.reserved = reserved
        self.threads = threads
        self.matched = np.zeros(block.n, np.uint8)   # right/full: build rows that found a partner
        self.keyed = bool(key_exprs)
        if not self.keyed:
            parallel_map(_call, side_tasks, threads if block.n >= PARALLEL_BUILD_ROWS else 1)
            return
        if parts is None:
            parts = [BuildKeys(block, key_exprs)] if block.n else []
        self._build(parts, list(side_tasks))

    def _build(self, parts: list, side_tasks: list):
        nparts = len(parts)
        width = parts[0].keys.shape[1] if parts else 1
        rows = np.array([p.n for p in parts], np.int64)
        row_start = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
        fine = (np.stack([p.hist for p in parts]) if parts
                else np.zeros((0, 1 << FINE_BITS), np.int32))
        n_rows, n_valid = int(rows.sum()), int(fine.sum(dtype=np.int64))
        if n_rows > MAX_ROWS:
            raise ExecutionError(f"hash join build side of {n_rows} rows is too large "
                                 f"(at most {MAX_ROWS})")
        bits = partition_bits(n_valid)
        # rows of each part (block) per partition: fine partitions grouped by their top bits
        coarse = fine.reshape(nparts, 1 << bits, 1 << (FINE_BITS - bits)).sum(axis=2,
                                                                               dtype=np.int64)
        counts = coarse.sum(axis=0)
        row_off = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=row_off[1:])
        cursors = row_off[:-1] + np.cumsum(coarse, axis=0) - coarse      # each part's first slot
        # every partition gets the buckets of an average one: hashing spreads
        # distinct keys evenly, and equal keys share a bucket anyway
        size = table_size(-(-n_valid // len(counts)))
        bucket_bits = size.bit_length() - 1
        assert bits + bucket_bits <= 32                                  # n_rows <= MAX_ROWS
        self.bucket_shift = np.uint64(64 - bits - bucket_bits)
        self.b_heap, heap_rebase, heap_bytes = _key_heap(parts)
        kept = size * len(counts) * 4 + n_rows * (8 + 4 + 8 * width) + heap_bytes
        scratch = n_valid * 8
        if self.memory is not None:
            self.memory.reserve(kept + scratch, "hash join build table")
        self.reserved += kept
        entries = np.empty(n_valid, np.uint64)     # row << 32 | top hash bits, by partition
        self.b_hash = np.empty(n_rows, np.uint64)
        self.b_keys = np.empty((n_rows, width), np.uint64)
        self.heads = np.empty(size * len(counts), np.int32)
        self.nxt = np.empty(n_rows, np.int32)

        part_shift = partition_shift(bits)

        def scatter(start, stop):
            for j in range(start, stop):
                p = parts[j]
                scatter_part(p.hashes, p.keys, p.skip, p.has_skip, p.kw, heap_rebase[j],
                             part_shift, cursors[j].copy(), row_start[j], entries,
                             self.b_hash, self.b_keys)

        def build(start, stop):
            build_partitions(start, stop, row_off, np.uint64(bucket_bits),
                             np.uint64(32 - bits - bucket_bits), entries, self.heads, self.nxt)

        threads = self.threads if n_rows >= PARALLEL_BUILD_ROWS else 1
        tasks = 4 * threads if threads > 1 else 1
        try:
            parallel_map(_call, side_tasks + [partial(scatter, *span) for span in
                                              _spans_by_weight(rows, tasks)], threads)
            parallel_map(_call, [partial(build, *span) for span in
                                 _spans_by_weight(counts, tasks)], threads)
        finally:
            if self.memory is not None:
                self.memory.release(scratch)

    def release(self):
        """Give back the reservation and let go of the arrays with it: a
        profile or a pipeline may keep the table object until the query
        ends, its bytes must not stay with it."""
        for name in _TABLE_ARRAYS:
            if hasattr(self, name):
                setattr(self, name, None)
        if self.memory is not None:
            self.memory.release(self.reserved)
            self.reserved = 0


# what JoinTable.release lets go of
_TABLE_ARRAYS = ("block", "matched", "b_hash", "b_keys", "b_heap", "heads", "nxt")


def _call(task):
    return task()


def _spans_by_weight(weights: np.ndarray, tasks: int) -> list[tuple[int, int]]:
    """Cut 0..len(weights)-1 into at most ``tasks`` contiguous (start, stop)
    spans of about equal total weight."""
    n = len(weights)
    if n == 0:
        return []
    total = np.cumsum(weights)
    cuts = np.searchsorted(total, total[-1] * np.arange(1, tasks) / tasks, side="right")
    bounds = sorted({0, n, *(int(c) for c in cuts if 0 < c < n)})
    return list(zip(bounds[:-1], bounds[1:]))


def _key_heap(parts: list):
    """(heap, per-part rebase words, bytes newly allocated): the table's key
    heap holds every distinct string key heap once (by identity: blocks of
    one row group share theirs); rebase word s moves part's string column s
    from its block key heap offset to the table's (uint64, wrapping)."""
    index: dict[int, int] = {}
    heaps: list = []
    base = 0
    rebase = []
    for p in parts:
        words = np.zeros(max(len(p.heaps), 1), np.uint64)
        for s, (h, off) in enumerate(zip(p.heaps, p.heap_offsets)):
            if len(h) == 0:
                continue
            if id(h) not in index:
                index[id(h)] = base
                heaps.append(h)
                base += len(h)
            words[s] = np.uint64((index[id(h)] - off) & _M64)
        rebase.append(words)
    if not heaps:
        return _EMPTY_HEAP, rebase, 0
    if len(heaps) == 1:
        return np.ascontiguousarray(heaps[0], np.uint8), rebase, 0
    return np.concatenate([np.asarray(h, np.uint8) for h in heaps]), rebase, base


class HashBuildSink(CollectSink):
    """Collects the build side; the key columns are normalized, hashed and
    counted per partition as blocks arrive (worker threads); merge() builds
    the partitioned JoinTable with the run's threads."""

    def __init__(self, types, key_exprs, memory=None):
        super().__init__(types, memory, "hash join build side")
        self.key_exprs = key_exprs

    def consume(self, local, block: Block, seq: tuple) -> None:
        keys = BuildKeys(block, self.key_exprs) if self.key_exprs else None
        nb = 0
        if self.memory is not None:
            nb = self.held.block(block)
            self.memory.reserve(nb + (keys.nbytes if keys is not None else 0), self.what)
        local.append((seq, block, nb, keys))

    def merge(self, locals_: list) -> JoinTable:
        parts = [p for loc in locals_ for p in loc]
        if self.keep_order:
            parts.sort(key=lambda p: p[0])
        for loc in locals_:            # the parts go as their columns are concatenated
            loc.clear()
        held = sum(p[2] for p in parts)
        key_bytes = (sum(p[3].nbytes for p in parts)
                     if self.memory is not None and self.key_exprs else 0)
        blocks = [p[1] for p in parts if p[1].n]
        keys = [p[3] for p in parts] if self.key_exprs else None
        del parts
        self.held.clear()
        holding = Holding(self.memory, held, self.what) if self.memory is not None else None
        # the block's columns are concatenated on the workers, beside the build
        block = Block([None] * len(self.types), sum(b.n for b in blocks))
        concat = [partial(_concat_column, block, blocks, self.types, i, holding)
                  for i in range(len(self.types))]
        try:
            table = JoinTable(block, self.key_exprs, self.memory, 0, self.threads, keys, concat)
        finally:
            keys = concat = None          # the key parts go before their bytes are released
            if self.memory is not None:
                self.memory.release(key_bytes)
        if holding is not None:           # the table holds the payload's reservation
            table.reserved += holding.settle(held_nbytes(table.block))
        self.reserved = 0
        return table


def _concat_column(block: Block, blocks: list[Block], types, i: int, holding) -> None:
    """block.columns[i] = column i of ``blocks`` concatenated, counted, the
    parts' columns dropped (concat_column_counted)."""
    block.columns[i] = (concat_column_counted(blocks, i, types[i], holding) if blocks
                        else empty_vector(types[i]))


class ProbeOperator(Operator):
    """Probes the JoinTable with each block of the left input."""

    def __init__(self, kind: str, table: JoinTable, left_keys, residual, batch_rows: int):
        if kind not in SUPPORTED_KINDS:
            raise UnsupportedFeatureError(f"join kind {kind!r} is not supported")
        self.kind, self.table = kind, table
        self.left_keys = left_keys
        self.residual = residual
        self.batch = max(int(batch_rows), 1024)
        self.build_types = [v.type for v in table.block.columns]
        if kind == "mark_in":
            self._init_mark_in()

    def release(self) -> None:
        self.build_null0 = self.candidates = None
        self.table.release()

    def _init_mark_in(self):
        """Key 0's NULLs on the build side, and (when the IN is correlated) a
        table over the other keys that finds each probe row's candidates."""
        t = self.table
        self.build_rows = t.block.n
        key0 = _evaluate_all(t.key_exprs[:1], t.block)[0] if t.block.n else None
        self.build_null0 = (np.zeros(t.block.n, np.uint8) if key0 is None or key0.nulls is None
                            else key0.nulls.astype(np.uint8))
        self.correlated = len(self.left_keys) > 1 or self.residual is not None
        self.candidates = (JoinTable(t.block, t.key_exprs[1:], threads=t.threads)
                           if self.correlated else None)

    # -- candidate pairs ---------------------------------------------------
    def _pairs(self, block: Block, table: JoinTable = None, left_keys=None, exists: bool = True):
        t = self.table if table is None else table
        left_keys = self.left_keys if left_keys is None else left_keys
        m = t.block.n
        if m == 0:
            return
        if not t.keyed:               # mark_in's candidates when key 0 is the only key
            yield from every_pair(block.n, m, self.batch)
            return
        keys = normalize_keys(_evaluate_all(left_keys, block), block.n, null_word=False)
        hashes = hash_keys(keys)
        skip = keys.any_null if keys.any_null is not None else np.zeros(block.n, np.uint8)
        if exists and self.kind in _EXISTS_KINDS + ("mark_in",) and self.residual is None:
            matched = np.empty(block.n, np.uint8)
            join_probe_exists(hashes, keys.keys, keys.heap, skip, keys.kw, t.bucket_shift,
                              t.heads, t.nxt, t.b_hash, t.b_keys, t.b_heap, matched)
            yield matched
            return
        resume = np.array([0, -1], np.int64)
        out_p = np.empty(self.batch, np.int64)
        out_b = np.empty(self.batch, np.int64)
        while resume[0] < block.n:
            cnt = join_probe(hashes, keys.keys, keys.heap, skip, keys.kw, t.bucket_shift,
                             t.heads, t.nxt, t.b_hash, t.b_keys, t.b_heap, resume, out_p, out_b)
            if cnt:
                yield out_p[:cnt].copy(), out_b[:cnt].copy()

    def _matching_pairs(self, block: Block, table: JoinTable, left_keys, exists: bool):
        """Pairs (or an existence mask) that also satisfy the residual, with
        the joined block when it was needed for the residual."""
        from engine.expr import evaluate_predicate
        for pair in self._pairs(block, table, left_keys, exists):
            if isinstance(pair, np.ndarray):
                yield pair, None
                return
            p, b = pair
            joined = None
            if self.residual is not None or \
                    self.kind not in _EXISTS_KINDS + ("mark_in",) + BUILD_MARK_KINDS:
                joined = Block(take_block(block, p).columns + take_block(table.block, b).columns,
                               len(p))
            if self.residual is not None:
                mask = np.asarray(evaluate_predicate(self.residual, joined), dtype=bool)
                if not mask.all():
                    kept = int(np.count_nonzero(mask))
                    p, b = compress_rows(p, mask, kept), compress_rows(b, mask, kept)
                    joined = take_block(joined, mask)
            yield (p, b), joined

    def process(self, block: Block):
        """The joined blocks of one probe block, as they are made (a
        generator: a probe block whose rows have many partners comes out as
        many blocks of at most ``batch`` rows, never as one list)."""
        kind = self.kind
        if kind == "mark_in":
            yield self._mark_in(block)
            return
        t = self.table
        if kind in BUILD_MARK_KINDS:
            for (_, b), _ in self._matching_pairs(block, t, self.left_keys, False):
                t.matched[b] = 1
            return
        matched = (np.zeros(block.n, np.uint8)
                   if kind in ("left", "full", "semi", "anti", "mark", "single") else None)
        counts = np.zeros(block.n, np.int64) if kind == "single" else None
        for pair, joined in self._matching_pairs(block, t, self.left_keys, True):
            if isinstance(pair, np.ndarray):          # existence mask
                matched = pair
                break
            p, b = pair
            if matched is not None:
                matched[p] = 1
            if counts is not None and len(p):
                counts += np.bincount(p, minlength=block.n)
                if counts.max() > 1:
                    raise ExecutionError(SCALAR_SUBQUERY_ERROR)
            if kind in ("right", "full"):
                t.matched[b] = 1
            if kind not in _EXISTS_KINDS and joined.n:
                yield joined
        if kind == "semi":
            keep = matched.astype(bool)
            if keep.any():
                yield take_block(block, keep)
        elif kind == "anti":
            keep = ~matched.astype(bool)
            if keep.any():
                yield take_block(block, keep)
        elif kind == "mark":
            yield Block(block.columns + [Vector(BOOLEAN, matched.astype(np.bool_))], block.n)
        elif kind in ("left", "full", "single"):
            rest = ~matched.astype(bool)
            if rest.any():
                lb = take_block(block, rest)
                yield Block(lb.columns + [null_vector(ty, lb.n) for ty in self.build_types],
                            lb.n)

    def _mark_in(self, block: Block) -> Block:
        """x IN (subquery) per probe row: TRUE, FALSE or NULL."""
        n = block.n
        matched = np.zeros(n, np.uint8)
        for pair, _ in self._matching_pairs(block, self.table, self.left_keys, True):
            if isinstance(pair, np.ndarray):
                matched = pair
                break
            matched[pair[0]] = 1
        probe0 = _evaluate_all(self.left_keys[:1], block)[0]
        probe_null = (np.zeros(n, np.bool_) if probe0.nulls is None
                      else probe0.nulls.astype(np.bool_))
        if not self.correlated:
            unknown = probe_null | bool(self.build_null0.any())
            unknown &= self.build_rows > 0
        else:
            unknown = np.zeros(n, np.bool_)
            rest = ~matched.astype(bool)
            if rest.any() and (probe_null[rest].any() or self.build_null0.any()):
                # a candidate (other keys equal, residual true) with a NULL key 0
                for pair, _ in self._matching_pairs(block, self.candidates,
                                                    self.left_keys[1:], False):
                    p, b = pair
                    hit = probe_null[p] | self.build_null0[b].astype(np.bool_)
                    unknown[p[hit]] = True
        unknown &= ~matched.astype(bool)
        mark = Vector(BOOLEAN, matched.astype(np.bool_),
                      unknown.astype(np.uint8) if unknown.any() else None)
        return Block(block.columns + [mark], n)


def unmatched_build_block(table: JoinTable, left_types) -> Block:
    """Right/full join tail: build rows never matched, NULLs on the left."""
    rest = ~table.matched.astype(bool)
    rb = take_block(table.block, rest)
    return Block([null_vector(t, rb.n) for t in left_types] + rb.columns, rb.n)
