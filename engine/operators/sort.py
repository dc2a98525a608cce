"""Sort sink: multi-key ORDER BY (ASC/DESC, NULLS FIRST/LAST), stable, run in
parallel, with an optional top-N bound (ORDER BY ... LIMIT) that trims
thread-local input.

The order is the sort keys, then the input order (morsel, block, row), so
the result is the same for any thread count and block size.  Rows become the
row matrix of engine/kernels/merge.py (SortWords): per key an optional NULL
flag and an order-preserving value word (floats: float_sort_keys, NaN
greatest; DECIMAL(38)/HUGEINT: ranks over all rows; strings: 8-byte prefix,
whole strings compared on ties; DESC: bitwise NOT), packed into as few
64-bit words as the value ranges allow.

Full sort: merge() puts the collected blocks in input order and concatenates
them, so a row's index is its input position.  The rows are cut into one
contiguous run per thread; the runs are encoded and sorted on the worker pool
(radix kernel), then cut at sampled splitter rows into key ranges that are
merged independently (k-way merge kernel), and the rows are gathered in
parallel.  Top-N: every block carries its (morsel, block) and row numbers as
two tiebreak arrays; workers keep only the first N rows of their input,
merge() sorts what is left the same way and merges only the first N rows.
"""

from __future__ import annotations

import numpy as np

from engine.block import Block, Int64WideVector, Vector, take_block, take_vector
from engine.context import check_cancel
from engine.kernels.merge import cut_runs, merge_runs, pack_rows, sort_run, word_ranges
from engine.kernels.sort import float_sort_keys, string_ranks
from engine.kernels.strings import as_heap, compare_views_const
from engine.operators.collect import (HeldBytes, Holding, concat_counted, concat_shared,
                                      held_nbytes, vector_nbytes)
from engine.pipeline import Sink
from engine.scheduler import parallel_map
from planner.expressions import ColumnRef

_SIGN = np.uint64(1 << 63)
_LOW32 = np.uint64(0xFFFFFFFF)
MIN_RUN_ROWS = 32768          # fewer rows per thread: one run, no merge
# Most rows one kernel call sorts or merges: a worker sees the query's stop
# request between calls (engine.context.CancelToken), so a call must end
# within a fraction of a second.  Sorting a run of strings ranks them by
# comparison: 3M l_comment rows took ~8 s in one call, 128k take ~0.2 s;
# integer words are radix-sorted (3M rows ~0.1 s).
MAX_RUN_ROWS = 1 << 21
MAX_STRING_RUN_ROWS = 1 << 17
MAX_MERGE_ROWS = 1 << 21
MAX_STRING_MERGE_ROWS = 1 << 18
_SAMPLES_PER_PART = 32        # splitter oversampling per key range and run
_GATHER_ROWS = 65536          # rows per parallel gather piece


def value_sort_key(vec: Vector, ascending: bool) -> np.ndarray:
    """An integer array whose order is the vector's value order (asc or desc),
    valid within this vector only (string and object keys are ranks)."""
    t = vec.type
    if t.is_string:
        key = string_ranks(vec.data, vec.heap)
        return key if ascending else -key
    if isinstance(vec, Int64WideVector):
        return vec.ints if ascending else ~vec.ints
    dt = vec.data.dtype
    if dt == object:
        key = _object_ranks(vec.data)
        return key if ascending else -key
    if dt.kind == "f":
        key = float_sort_keys(vec.data)
    elif dt.kind == "u":
        key = vec.data.astype(np.uint64)
    else:
        key = vec.data.astype(np.int64)
    return key if ascending else ~key


def _object_ranks(data: np.ndarray) -> np.ndarray:
    vals = np.array([0 if v is None else v for v in data], dtype=object)
    return np.unique(vals, return_inverse=True)[1].astype(np.int64).ravel()


# ---------------------------------------------------------------- sort words
class SortWords:
    """n rows under the sort keys (plus tiebreak words) as the packed row
    matrix of engine/kernels/merge.py.

    Logical words: per key an optional NULL flag (0/1, NULLS FIRST: NULL is
    0) and an order-preserving value word (DESC inverted), then one word per
    tiebreak array.  ``encode(lo, hi)`` computes the logical words of rows
    lo..hi and their ranges; ``plan(ranges)`` packs runs of non-string words
    into 64-bit physical words, each stored as value - min in as few bits as
    the global range needs (constant words vanish); ``pack(lo, hi)`` writes
    the rows.  String words stay one physical word each (the kernels rank
    them within a run and merge them on prefix + full comparison)."""

    def __init__(self, vectors: list[Vector], keys, tiebreak, n: int):
        self.n = n
        self.specs = []           # (kind, data, ascending, nulls_first, null row)
        nulls, strings = [], []
        for vec, sk in zip(vectors, keys):
            nr = -1
            if vec.nulls is not None and vec.nulls.any():
                nr = len(nulls)
                nulls.append(vec.nulls.astype(bool))
                self.specs.append(("flag", None, True, sk.nulls_first, nr))
            kind, data = _key_kind(vec, None if nr < 0 else nulls[nr])
            if kind == "string":
                data = len(strings)
                strings.append(vec)
            self.specs.append((kind, data, sk.ascending, sk.nulls_first, nr))
        for tie in tiebreak or []:
            self.specs.append(("int", np.asarray(tie), True, False, -1))
        self.isnull = nulls
        self.nulls = np.stack(nulls).view(np.uint8) if nulls else np.zeros((0, n), np.uint8)
        self.null_of = np.array([nr if kind not in ("flag", "string") else -1
                                 for kind, _, _, _, nr in self.specs] or [-1], np.int64)
        self.words = np.zeros((len(self.specs), n), np.uint64)
        self.views, self.heap, copied = _stack_strings(strings, n)
        self.copied = copied + self.nulls.nbytes      # bytes of copied views, NULL masks
        self.rows = None

    def encode(self, lo: int, hi: int):
        for w, (kind, data, asc, nulls_first, nr) in enumerate(self.specs):
            out = self.words[w, lo:hi]
            if kind == "flag":
                np.not_equal(self.isnull[nr][lo:hi], nulls_first, out=out, casting="unsafe")
            elif kind == "int":
                flip = _SIGN if asc else ~_SIGN
                np.bitwise_xor(data[lo:hi].astype(np.int64, copy=False).view(np.uint64), flip,
                               out=out)
            elif kind in ("uint", "rank"):
                np.bitwise_xor(data[lo:hi].astype(np.uint64, copy=False),
                               np.uint64(0) if asc else ~np.uint64(0), out=out)
            elif kind == "float":
                out[:] = float_sort_keys(data[lo:hi])
                if not asc:
                    np.invert(out, out=out)
        return word_ranges(self.words, lo, hi, self.nulls, self.null_of)

    def plan(self, ranges) -> None:
        nwords = len(self.specs)
        mins = np.min([r[0] for r in ranges], axis=0)
        maxs = np.max([r[1] for r in ranges], axis=0)
        self.mins = np.where(maxs >= mins, mins, 0).astype(np.uint64)
        self.target = np.full(nwords, -1, np.int64)
        self.shifts = np.zeros(nwords, np.int64)
        string_col, string_desc, group, used = [], [], [], 0

        def close_group():
            nonlocal group, used
            if group:
                for w, bits in group:
                    used -= bits
                    self.target[w], self.shifts[w] = len(string_col), used
                string_col.append(-1)
                string_desc.append(False)
            group, used = [], 0

        for w, (kind, data, asc, _, _) in enumerate(self.specs):
            if kind == "string":
                close_group()
                string_col.append(data)
                string_desc.append(not asc)
                continue
            bits = int(maxs[w] - mins[w]).bit_length() if maxs[w] >= mins[w] else 0
            if bits == 0:
                continue
            if used + bits > 64:
                close_group()
            group.append((w, bits))
            used += bits
        close_group()
        if not string_col:                  # every key constant: one zero word
            string_col, string_desc = [-1], [False]
        self.string_col = np.array(string_col, np.int64)
        self.string_desc = np.array(string_desc, np.bool_)
        self.rows = np.empty((self.n, len(string_col) + 1), np.uint64)

    def pack(self, lo: int, hi: int) -> None:
        pack_rows(self.words, lo, hi, self.nulls, self.null_of, self.mins, self.target,
                  self.shifts, self.rows)

    def kernel_args(self):
        return self.rows, self.string_col, self.string_desc, self.views, self.heap


def _key_kind(vec: Vector, isnull):
    """(kind, data) of a key vector: how its value word is made."""
    if vec.type.is_string:
        return "string", None
    if isinstance(vec, Int64WideVector):
        return "int", vec.ints
    data = vec.data
    kind = data.dtype.kind
    if kind == "O":
        vals = data if isnull is None else np.where(isnull, 0, data)
        return "rank", _object_ranks(vals)
    if kind == "f":
        return "float", data
    if kind in "ub":
        return "uint", data
    return "int", data


def _stack_strings(strings: list[Vector], n: int):
    """(S, n, 2) views (NULL rows as empty strings) over one heap, and the
    bytes copied to make them."""
    if not strings:
        return np.zeros((0, n, 2), np.uint64), np.zeros(0, np.uint8), 0
    views, heaps, base, copied = [], [], 0, 0
    for vec in strings:
        v = np.ascontiguousarray(vec.data, dtype=np.uint64).reshape(-1, 2)
        heap = vec.heap if vec.heap is not None else np.zeros(0, np.uint8)
        nulls = vec.nulls is not None and vec.nulls.any()
        long_rows = (v[:, 0] & _LOW32) > 12 if base and len(heap) else None
        if nulls or long_rows is not None:
            v = v.copy()                  # never write into the column itself
            copied += v.nbytes
        if long_rows is not None:
            v[long_rows, 1] += np.uint64(base)
        if nulls:
            v[vec.nulls.astype(bool)] = 0
        views.append(v)
        heaps.append(heap)
        base += len(heap)
    if len(views) == 1:
        return views[0].reshape(1, n, 2), np.ascontiguousarray(heaps[0], np.uint8), copied
    heap = np.concatenate(heaps)
    return np.stack(views), heap, copied + 16 * n * len(views) + heap.nbytes


# ---------------------------------------------------------------- ordering
def key_vectors(block: Block, keys) -> list[Vector]:
    from engine.expr import evaluate
    return [block.columns[sk.expr.index] if isinstance(sk.expr, ColumnRef)
            else evaluate(sk.expr, block) for sk in keys]


def sorted_rows(block: Block, keys, tiebreak=None, threads: int = 1,
                limit: int | None = None, memory=None) -> np.ndarray:
    """Row order (int64) of block under the keys, then the tiebreak arrays
    (most significant first), then row index; only the first ``limit`` rows
    when given.  With threads > 1 runs are sorted and merged on the pool."""
    n = block.n
    words = SortWords(key_vectors(block, keys), keys, tiebreak, n)
    strings = any(spec[0] == "string" for spec in words.specs)
    nruns = max(1, min(int(threads), n // MIN_RUN_ROWS),
                -(-n // (MAX_STRING_RUN_ROWS if strings else MAX_RUN_ROWS)))
    held = 0

    def hold(nbytes):
        nonlocal held
        if memory is not None:
            memory.reserve(nbytes, "sort keys")
            held += nbytes

    try:
        hold(words.words.nbytes + words.copied)
        bounds = [int(b) for b in np.linspace(0, n, nruns + 1)]
        spans = list(zip(bounds[:-1], bounds[1:]))
        words.plan(parallel_map(lambda span: words.encode(*span), spans, threads))
        hold(2 * words.rows.nbytes + 8 * n)      # rows, radix buffer, merged order

        def sorted_run(span):
            words.pack(*span)
            sort_run(*words.kernel_args(), *span)

        parallel_map(sorted_run, spans, threads)
        check_cancel()
        words.words = None
        if nruns == 1:
            order = words.rows[:, -1].view(np.int64)
            return order.copy() if limit is None else order[:limit].copy()
        return _merge(words.kernel_args(), np.array(bounds, np.int64), threads, limit,
                      MAX_STRING_MERGE_ROWS if strings else MAX_MERGE_ROWS)
    finally:
        if memory is not None:
            memory.release(held)


def _merge(args, bounds, threads, limit, max_part_rows=MAX_MERGE_ROWS):
    """Parallel k-way merge: sampled splitter rows cut every run into key
    ranges (binary search); each range is merged on its own."""
    rows = args[0]
    n = len(rows)
    total = n if limit is None else min(limit, n)
    nparts = max(4 * threads, -(-total // max_part_rows))
    positions, sample_bounds = [], [0]
    for r in range(len(bounds) - 1):
        lo, hi = bounds[r], bounds[r + 1]
        pos = np.unique(np.linspace(lo, hi - 1, min(hi - lo, _SAMPLES_PER_PART * nparts))
                        .astype(np.int64))
        positions.append(pos)
        sample_bounds.append(sample_bounds[-1] + len(pos))
    samples = rows[np.concatenate(positions)]
    sample_bounds = np.array(sample_bounds, np.int64)
    ordered = np.empty(len(samples), np.int64)
    merge_runs(samples, *args[1:], sample_bounds[:-1].copy(), sample_bounds[1:].copy(),
               ordered, False)
    picks = np.unique((np.arange(1, nparts) * len(ordered)) // nparts)
    cuts = cut_runs(*args, bounds, np.ascontiguousarray(samples[ordered[picks]]))
    sizes = (cuts[:, 1:] - cuts[:, :-1]).sum(axis=0)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    out = np.empty(total, np.int64)
    parts = [j for j in range(len(sizes)) if sizes[j] and offsets[j] < total]

    def merge_part(j):
        piece = out[offsets[j]:min(offsets[j + 1], total)]
        merge_runs(*args, cuts[:, j].copy(), cuts[:, j + 1].copy(), piece, True)

    parallel_map(merge_part, parts, threads)
    return out


def sort_order(block: Block, keys, tiebreak: list[np.ndarray] | None = None) -> np.ndarray:
    """Row order of block under the sort keys (stable; tiebreak arrays are
    least significant keys, most significant first)."""
    return sorted_rows(block, keys, tiebreak)


def take_rows(block: Block, order: np.ndarray, threads: int, holding=None) -> Block:
    """take_block, gathering row ranges on the worker pool.  With
    ``holding`` (a collect.Holding of the block's bytes) column by column:
    each output column is reserved, gathered, and the input column dropped
    (the block's columns become None), so input and output are never both
    held whole."""
    n = len(order)
    cols = []
    for i, c in enumerate(block.columns):
        check_cancel()
        nb = 0
        if holding is not None:
            nb = vector_nbytes(c, None)            # data and NULLs; the heap is kept
            holding.grow(nb)
        cols.append(_take_column(c, order, threads))
        if holding is not None:
            block.columns[i] = None
            del c
            holding.shrink(nb)
    return Block(cols, n)


def _take_column(c: Vector, order: np.ndarray, threads: int) -> Vector:
    n = len(order)
    if threads <= 1 or n < 2 * _GATHER_ROWS:
        return take_vector(c, order)
    nulls = None
    if c.nulls is not None and c.nulls.any():
        nulls = np.empty(n, c.nulls.dtype)
    src = c.ints if isinstance(c, Int64WideVector) else c.data
    data = np.empty((n,) + src.shape[1:], src.dtype)

    def gather(lo):
        idx = order[lo:lo + _GATHER_ROWS]
        np.take(src, idx, axis=0, out=data[lo:lo + len(idx)], mode="clip")
        if nulls is not None:
            np.take(c.nulls, idx, out=nulls[lo:lo + len(idx)], mode="clip")

    parallel_map(gather, range(0, n, _GATHER_ROWS), threads)
    if nulls is not None and not nulls.any():
        nulls = None
    if isinstance(c, Int64WideVector):
        return Int64WideVector(c.type, data, nulls)
    return Vector(c.type, data, nulls, c.heap, children=c.children)


# ---------------------------------------------------------------- top-N bound
def _key_signs(vec: Vector, sk, bound: Vector) -> np.ndarray:
    """int8 per row: the sign of (row - bound row) in this key's order."""
    n = len(vec)
    isnull = vec.nulls.astype(bool) if vec.nulls is not None else np.zeros(n, np.bool_)
    bound_null = bound.nulls is not None and bool(bound.nulls[0])
    data = vec.data
    if vec.type.is_string:
        views = np.ascontiguousarray(data, np.uint64).reshape(-1, 2)
        if isnull.any():
            views = views.copy()
            views[isnull] = 0            # NULL slots are gaps: never read them
        if bound_null:
            c = np.zeros(n, np.int8)
        else:
            b = np.ascontiguousarray(bound.data, np.uint64).reshape(-1, 2)
            c = compare_views_const(views, as_heap(vec.heap), b[0, 0], b[0, 1],
                                    as_heap(bound.heap))
    elif bound_null:
        c = np.zeros(n, np.int8)
    else:
        if data.dtype == object:
            vals, b = np.where(isnull, 0, data), bound.data[0]
        elif data.dtype.kind == "f":
            vals, b = float_sort_keys(data), float_sort_keys(bound.data)[0]
        else:
            vals, b = data, bound.data[0]
        c = (vals > b).astype(np.int8) - (vals < b).astype(np.int8)
    if not sk.ascending:
        c = -c
    nulls_sign = -1 if sk.nulls_first else 1     # a NULL row against a value
    if bound_null:
        return np.where(isnull, 0, -nulls_sign).astype(np.int8)
    return np.where(isnull, nulls_sign, c).astype(np.int8)


def before_bound(block: Block, keys, bound: list[Vector]) -> np.ndarray:
    """True for rows whose keys sort strictly before the bound row's."""
    signs = np.zeros(block.n, np.int8)
    for vec, sk, b in zip(reversed(key_vectors(block, keys)), reversed(keys), reversed(bound)):
        c = _key_signs(vec, sk, b)
        signs = np.where(c != 0, c, signs)
    return signs < 0


# ---------------------------------------------------------------- sink
class _Local:
    def __init__(self):
        self.parts: list[tuple] = []      # (seq, block, tie arrays or None)
        self.rows = 0
        self.nbytes = 0
        self.bound: list[Vector] | None = None   # top-N: keys of the N-th row so far


class SortSink(Sink):
    def __init__(self, keys, types, limit: int | None = None, memory=None, block_rows=65536):
        self.keys, self.types = keys, types
        self.limit = limit                 # keep only the first `limit` rows (top-N)
        self.memory = memory
        self.trim_at = None if limit is None else max(2 * limit, block_rows, 4096)
        self.reserved = 0
        self.held = HeldBytes()

    def make_local(self):
        return _Local()

    def consume(self, local, block, seq):
        tie = None
        if self.limit is not None:        # top-N: rows carry their input position
            m, k = seq
            rows = np.arange(block.n, dtype=np.int64)
            if local.bound is not None:
                # this worker already holds N rows before the bound; a later
                # row that does not sort strictly before it cannot be in the top N
                keep = before_bound(block, self.keys, local.bound)
                if not keep.all():
                    block, rows = take_block(block, keep), rows[keep]
                    if block.n == 0:
                        return
            tie = (np.full(block.n, (m << 32) | k, np.int64), rows)
        # a top-N sink drops blocks as it trims: each counts its own heaps
        nb = (self.held.block(block) if tie is None else held_nbytes(block) + 16 * block.n)
        if self.memory is not None:
            self.memory.reserve(nb, "sort input")
        local.parts.append((seq, block, tie))
        local.rows += block.n
        local.nbytes += nb
        if self.trim_at is not None and local.rows > self.trim_at:
            self._trim(local)

    def _top(self, parts, threads):
        block = concat_shared([p[1] for p in parts], self.types)
        tie = [np.concatenate([p[2][j] for p in parts]) for j in range(2)]
        order = sorted_rows(block, self.keys, tie, threads, self.limit, self.memory)
        return take_block(block, order), [t[order] for t in tie]

    def _trim(self, local):
        block, tie = self._top(local.parts, 1)
        local.parts = [(None, block, tuple(tie))]
        local.rows = block.n
        nb = held_nbytes(block) + 16 * block.n
        if self.memory is not None:
            self.memory.release(local.nbytes - nb)
        local.nbytes = nb
        if self.limit and block.n >= self.limit:
            last = block.slice(self.limit - 1, self.limit)
            local.bound = key_vectors(last, self.keys)

    def merge(self, locals_):
        parts = [p for loc in locals_ for p in loc.parts if p[1].n]
        self.reserved = sum(loc.nbytes for loc in locals_)
        for loc in locals_:            # the parts go as their columns are concatenated
            loc.parts = []
        self.held.clear()
        if not parts:
            return concat_shared([], self.types)
        threads = max(1, int(self.threads))
        if self.limit is not None:
            return self._top(parts, threads)[0]
        parts.sort(key=lambda p: p[0])       # input order: the row index breaks ties
        blocks = [p[1] for p in parts]
        del parts
        if self.memory is None:
            block = concat_shared(blocks, self.types)
            return take_rows(block, sorted_rows(block, self.keys, None, threads), threads)
        block, held = concat_counted(blocks, self.types, self.memory, self.reserved, "sort input")
        del blocks
        holding = Holding(self.memory, held, "sort output")
        self.reserved = held
        order = sorted_rows(block, self.keys, None, threads, None, self.memory)
        out = take_rows(block, order, threads, holding)
        self.reserved = holding.held
        return out

    def release(self):
        if self.memory is not None:
            self.memory.release(self.reserved)
            self.reserved = 0
