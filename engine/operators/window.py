"""Window operator: computes every function of a logical.Window over its
materialized input and appends one column per function.

Per distinct (PARTITION BY, ORDER BY) the input is sorted once
(engine.operators.sort.sort_order); partition and peer-group boundaries come
from comparing adjacent sorted keys (vectorized); every function then works
on frame bounds [start, end) per sorted row:

  row_number/rank/dense_rank   arithmetic on partition and peer starts
  lag/lead                     gathers at row -/+ offset inside the partition
  first_value/last_value       gathers at the frame ends
  count/sum/avg                prefix sums (exact int64 or split 2x32-bit for
                               integers and decimals; floats summed directly
                               for short frames, prefix sums otherwise)
  min/max                      monotonic-deque sliding extreme (numba)

Results are computed in sorted order and permuted back to input order.
"""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector, empty_vector, take_vector
from engine.context import check_cancel
from engine.errors import UnsupportedFeatureError
from engine.operators.sort import sorted_rows, value_sort_key
from planner.logical import SortKey, Window, WindowFunction

_SAFE_SUM = 1 << 62


# working bytes per input row: a layout (sort order and its inverse, the
# partition and peer bounds, row numbers, boundary flags and what makes them)
# and one function at a time (frame bounds, the sorted argument, prefix
# sums or gathers, the result before and after it is put back in input order)
LAYOUT_BYTES_PER_ROW = 88
FUNCTION_BYTES_PER_ROW = 96
RESULT_BYTES_PER_ROW = 16


def compute_windows(node: Window, block: Block, memory=None, threads: int = 1) -> Block:
    """The input block plus one column per window function.  With
    ``memory``: the input (whose collector let it go), a layout, one
    function's working arrays and the results count against memory_limit
    while they are computed (the sort's own arrays through sorted_rows)."""
    if block.n == 0:
        return Block(list(block.columns) + [empty_vector(f.type) for f in node.functions], 0)
    n = block.n
    specs: dict[tuple, list[int]] = {}
    for i, f in enumerate(node.functions):
        key = (repr(f.partition), repr([(k.expr, k.ascending, k.nulls_first) for k in f.order]))
        specs.setdefault(key, []).append(i)
    held = 0
    if memory is not None:
        from engine.operators.collect import held_nbytes
        held = held_nbytes(block) + n * (LAYOUT_BYTES_PER_ROW + FUNCTION_BYTES_PER_ROW
                                         + RESULT_BYTES_PER_ROW * len(node.functions))
        memory.reserve(held, "window functions")
    try:
        results: list[Vector | None] = [None] * len(node.functions)
        for idxs in specs.values():
            first = node.functions[idxs[0]]
            check_cancel()
            layout = _Layout(block, first.partition, first.order, memory, threads)
            for i in idxs:
                check_cancel()
                results[i] = take_vector(_compute(node.functions[i], layout, block),
                                         layout.inverse)
            del layout
        return Block(list(block.columns) + results, block.n)
    finally:
        if memory is not None:
            memory.release(held)


def _evaluate(expr, block: Block) -> Vector:
    from engine.expr import evaluate
    return evaluate(expr, block)


def equality_key(vec: Vector) -> np.ndarray:
    """int64 keys, equal exactly where the values are equal, ordered like the
    values (NULL rows hold 0; callers check nulls separately)."""
    key = value_sort_key(vec, True)
    if key.dtype == np.uint64:
        key = (key ^ np.uint64(1 << 63)).view(np.int64)
    key = np.asarray(key, dtype=np.int64)
    if vec.nulls is not None:
        key = np.where(vec.nulls.astype(bool), 0, key)
    return key


def _changes(vec: Vector, perm: np.ndarray) -> np.ndarray:
    """True at sorted rows whose value differs from the previous row's."""
    n = len(perm)
    key = equality_key(vec)[perm]
    out = np.zeros(n, np.bool_)
    out[1:] = key[1:] != key[:-1]
    if vec.nulls is not None:
        nl = vec.nulls[perm]
        out[1:] |= nl[1:] != nl[:-1]
    return out


def _segments(new: np.ndarray, n: int):
    starts = np.flatnonzero(new).astype(np.int64)
    ends = np.append(starts[1:], n).astype(np.int64)
    seg = np.cumsum(new) - 1
    return starts[seg], ends[seg]


class _Layout:
    """Sort order plus partition and peer boundaries of one window spec."""

    def __init__(self, block: Block, partition, order, memory=None, threads: int = 1):
        n = block.n
        keys = [SortKey(p, True, False) for p in partition] + list(order)
        self.n = n
        self.order = list(order)
        self.perm = (sorted_rows(block, keys, None, threads, None, memory).astype(np.int64)
                     if keys else np.arange(n, dtype=np.int64))
        self.inverse = np.empty(n, np.int64)
        self.inverse[self.perm] = np.arange(n, dtype=np.int64)
        new_part = np.zeros(n, np.bool_)
        new_part[0] = True
        for p in partition:
            new_part |= _changes(_evaluate(p, block), self.perm)
        new_peer = new_part.copy()
        for k in order:
            new_peer |= _changes(_evaluate(k.expr, block), self.perm)
        self.new_peer = new_peer
        self.pstart, self.pend = _segments(new_part, n)
        self.peer_start, self.peer_end = _segments(new_peer, n)
        self.rows = np.arange(n, dtype=np.int64)

    def sorted_vector(self, expr, block: Block) -> Vector:
        return take_vector(_evaluate(expr, block), self.perm)


def _frame(f: WindowFunction, lay: _Layout, block: Block):
    frame = f.frame
    i = lay.rows

    def bound(b, is_start: bool) -> np.ndarray:
        kind, off = b
        if kind == "unbounded_preceding":
            return lay.pstart
        if kind == "unbounded_following":
            return lay.pend
        if frame.mode == "rows":
            if kind == "current":
                return i if is_start else i + 1
            pos = i - off if kind == "preceding" else i + off
            return np.clip(pos if is_start else pos + 1, lay.pstart, lay.pend)
        if kind == "current":
            return lay.peer_start if is_start else lay.peer_end
        return _range_bound(lay, block, -off if kind == "preceding" else off, is_start)

    start = np.asarray(bound(frame.start, True), np.int64)
    end = np.maximum(np.asarray(bound(frame.end, False), np.int64), start)
    return start, end


def _range_bound(lay: _Layout, block: Block, delta, is_start: bool) -> np.ndarray:
    from engine.kernels.window import range_offset_bounds
    key = lay.order[0]
    vec = lay.sorted_vector(key.expr, block)
    if vec.data.dtype == object or vec.type.is_string:
        raise UnsupportedFeatureError(f"RANGE frames over {vec.type} are not supported")
    as_float = vec.data.dtype.kind == "f" or isinstance(delta, float)
    vals = vec.data.astype(np.float64 if as_float else np.int64)
    if not key.ascending:
        vals = -vals
    valid = np.ones(lay.n, np.uint8) if vec.nulls is None else (1 - vec.nulls).astype(np.uint8)
    cs = np.concatenate([[0], np.cumsum(valid, dtype=np.int64)])
    count = cs[lay.pend] - cs[lay.pstart]
    if key.nulls_first:
        lo, hi = lay.pend - count, lay.pend
    else:
        lo, hi = lay.pstart, lay.pstart + count
    out = np.empty(lay.n, np.int64)
    delta = float(delta) if as_float else int(delta)
    range_offset_bounds(vals, valid, np.ascontiguousarray(lo), np.ascontiguousarray(hi),
                        lay.peer_start, lay.peer_end, delta, is_start, out)
    return out


def _gather(t, n: int, rows: np.ndarray, vec: Vector, idx: np.ndarray) -> Vector:
    """n rows of type t: vec[idx[k]] at rows[k], NULL elsewhere."""
    from engine.expr.vectors import scatter
    if len(rows) == n:
        return take_vector(vec, idx)
    return scatter(t, n, [(rows, take_vector(vec, idx))])


def _compute(f: WindowFunction, lay: _Layout, block: Block) -> Vector:
    n, i = lay.n, lay.rows
    func = f.func
    if func == "row_number":
        return Vector(f.type, i - lay.pstart + 1)
    if func == "rank":
        return Vector(f.type, lay.peer_start - lay.pstart + 1)
    if func == "dense_rank":
        c = np.cumsum(lay.new_peer, dtype=np.int64)
        return Vector(f.type, c - c[lay.pstart] + 1)
    if func in ("lag", "lead"):
        return _offset(f, lay, block)
    start, end = _frame(f, lay, block)
    if func == "count_star":
        return Vector(f.type, end - start)
    x = lay.sorted_vector(f.args[0], block)
    if func in ("first_value", "last_value"):
        rows = np.flatnonzero(end > start)
        idx = start[rows] if func == "first_value" else end[rows] - 1
        return _gather(f.type, n, rows, x, idx)
    valid = np.ones(n, np.bool_) if x.nulls is None else ~x.nulls.astype(bool)
    cs = np.concatenate([[0], np.cumsum(valid, dtype=np.int64)])
    count = cs[end] - cs[start]
    if func == "count":
        return Vector(f.type, count)
    if func in ("min", "max"):
        from engine.kernels.window import sliding_extreme
        keys = equality_key(x)
        idx = np.empty(n, np.int64)
        sliding_extreme(keys, valid.astype(np.uint8), start, end, func == "max", idx)
        rows = np.flatnonzero(idx >= 0)
        return _gather(f.type, n, rows, x, idx[rows])
    if func in ("sum", "avg"):
        return _sum_avg(f, x, valid, start, end, count)
    raise UnsupportedFeatureError(f"window function {func}")


def _offset(f: WindowFunction, lay: _Layout, block: Block) -> Vector:
    from engine.expr.vectors import scatter
    n = lay.n
    k = f.args[1].value
    default = lay.sorted_vector(f.args[2], block)
    if k is None:
        return scatter(f.type, n, [])
    j = lay.rows - k if f.func == "lag" else lay.rows + k
    ok = (j >= lay.pstart) & (j < lay.pend)
    x = lay.sorted_vector(f.args[0], block)
    inside, outside = np.flatnonzero(ok), np.flatnonzero(~ok)
    return scatter(f.type, n, [(inside, take_vector(x, j[inside])),
                               (outside, take_vector(default, outside))])


def _sum_avg(f: WindowFunction, x: Vector, valid, start, end, count) -> Vector:
    from engine.kernels.window import segment_sums
    n = len(start)
    t = x.type
    empty = count == 0
    nulls = empty.astype(np.uint8) if empty.any() else None
    if x.data.dtype.kind == "f":
        vals = np.where(valid, x.data.astype(np.float64), 0.0)
        sums = np.empty(n, np.float64)
        segment_sums(vals, start, end, sums)
        if f.func == "avg":
            with np.errstate(invalid="ignore", divide="ignore"):
                return Vector(f.type, sums / np.maximum(count, 1), nulls)
        return Vector(f.type, sums, nulls)
    sums = _exact_sums(x, valid, start, end)
    if sums.dtype == object:                # DuckDB's overflow errors (DECIMAL(38), HUGEINT)
        from engine.operators.accumulators import check_total
        check_total(f, t, sums, count)
    if f.func == "avg":
        scale = 10.0 ** t.scale if t.is_decimal else 1.0
        avg = np.asarray(sums, dtype=np.float64) / np.maximum(count, 1) / scale
        return Vector(f.type, avg, nulls)
    dtype = f.type.numpy_dtype
    return Vector(f.type, np.asarray(sums).astype(dtype), nulls)


def _exact_sums(x: Vector, valid, start, end) -> np.ndarray:
    """Exact integer frame sums: int64 when no prefix can overflow, else
    Python ints from two 32-bit halves summed in int64."""
    if x.data.dtype == object:
        vals = np.where(valid, x.data, 0).astype(object)
        prefix = np.concatenate([np.array([0], dtype=object), np.cumsum(vals)])
        return prefix[end] - prefix[start]
    vals = np.where(valid, x.data.astype(np.int64), 0)
    # Python ints: np.abs(INT64_MIN) is INT64_MIN, a negative bound
    bound = max(int(vals.max()), -int(vals.min())) if len(vals) else 0
    if bound * len(vals) < _SAFE_SUM:
        prefix = np.concatenate([[0], np.cumsum(vals, dtype=np.int64)])
        return prefix[end] - prefix[start]
    hi, lo = vals >> 32, vals & np.int64(0xFFFFFFFF)
    ph = np.concatenate([[0], np.cumsum(hi, dtype=np.int64)])
    pl = np.concatenate([[0], np.cumsum(lo, dtype=np.int64)])
    sh, sl = ph[end] - ph[start], pl[end] - pl[start]
    return sh.astype(object) * (1 << 32) + sl.astype(object)
