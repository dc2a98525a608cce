"""The result block of a hash aggregation: group keys decoded back into
vectors, accumulators finalized, HAVING applied.  The bytes the result
takes are reserved while it is made; with a HAVING over many groups it is
made a slice of groups at a time, so only the groups that pass are ever
held whole (Q18 at SF10 keeps 624 of 15M groups)."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector
from engine.operators.accumulators import make_accumulator, share_state, sliced_state
from engine.operators.collect import concat_consumed, held_nbytes
from engine.operators.filter import select_block

# groups finished at once when a HAVING filters them
FINISH_SLICE_GROUPS = 1 << 20


def decode_keys(types, words, strs, heap, null_word: bool) -> list[Vector]:
    """Vectors back from normalized keys (inverse of normalize_keys)."""
    out, w, s = [], 0, 0
    null_bits = words[:, -1] if null_word and words.shape[1] else None
    n = len(words)
    for j, t in enumerate(types):
        nulls = None
        if null_bits is not None:
            nb = ((null_bits >> np.uint64(j % 64)) & np.uint64(1)).astype(np.uint8)
            nulls = nb if nb.any() else None
        if t.is_string:
            out.append(Vector(t, np.ascontiguousarray(strs[:, 2 * s:2 * s + 2]), nulls, heap))
            s += 1
            continue
        dt = t.numpy_dtype
        if dt == object:
            lo, hi = words[:, w], words[:, w + 1].view(np.int64)
            vals = np.array([(int(h) << 64) | int(lw) for lw, h in zip(lo, hi)] or [], dtype=object)
            if nulls is not None:
                vals[nulls.astype(bool)] = 0
            w += 2
        elif dt.kind == "f":
            vals = words[:, w].view(np.float64).astype(dt)
            w += 1
        elif dt.kind == "u":
            vals = words[:, w].astype(dt)
            w += 1
        else:
            vals = words[:, w].view(np.int64).astype(dt)
            w += 1
        out.append(Vector(t, np.ascontiguousarray(vals), nulls))
    assert n == 0 or all(len(v) == n for v in out)
    return out


def result_bytes(types, groups: int, heap_bytes: int) -> int:
    """Bytes a result of ``groups`` rows of ``types`` takes while it is made:
    each value (object slots and string views 16), a null byte, and the
    key strings' heap; twice over, for the finalize temporaries."""
    width = sum(16 if t.is_string or t.numpy_dtype == object else t.numpy_dtype.itemsize
                for t in types) + len(types)
    return 2 * groups * width + heap_bytes


def finish_groups(sink, final, keep: np.ndarray | None = None) -> Block:
    """The result block of a merged (or the only) local of ``sink`` (an
    AggregateSink), only its groups where the bool mask ``keep`` is True
    when given, HAVING applied; releases the local."""
    ng = final.n_groups
    if (sink.having is not None and keep is None and final.table is not None
            and not final.distinct and ng > FINISH_SLICE_GROUPS):
        return _finish_in_slices(sink, final, ng)
    memory = final.memory
    heap = int(final.table.state[1]) if final.table is not None else 0
    making = result_bytes(sink.out_types, ng, heap) if memory is not None else 0
    try:
        if making:
            memory.reserve(making, "aggregate result")
        try:
            cols: list[Vector] = []
            if final.table is not None:
                w, s, h = final.table.keys()
                cols.extend(decode_keys(sink.group_types, w, s, h, null_word=True))
            block = Block(cols + aggregate_columns(sink, final, ng), ng)
        finally:
            final.release()
        if keep is not None:
            block = select_block(block, keep)
        sink.groups_made.append(block.n)        # (list.append: merges may run in parallel)
        return _having(sink, block)
    finally:
        if making:
            memory.release(making)


def _having(sink, block: Block) -> Block:
    if sink.having is None or block.n == 0:
        return block
    from engine.expr import evaluate_predicate
    mask = np.asarray(evaluate_predicate(sink.having, block), dtype=bool)
    return block if mask.all() else select_block(block, mask)


def _finish_in_slices(sink, final, ng: int) -> Block:
    """finish_groups for a HAVING over many groups: each slice of
    FINISH_SLICE_GROUPS groups is finished and filtered before the next,
    and only the rows that pass are kept (and reserved)."""
    memory = final.memory
    w, s, h = final.table.keys()
    accs = list(final.accs)
    for i, j in sink.alias.items():
        share_state(accs[i], accs[j])
    heap_share = len(h) * FINISH_SLICE_GROUPS // max(ng, 1)
    making = result_bytes(sink.out_types, FINISH_SLICE_GROUPS, heap_share) if memory else 0
    kept, held = [], 0
    try:
        if making:
            memory.reserve(making, "aggregate result")
        for lo in range(0, ng, FINISH_SLICE_GROUPS):
            hi = min(lo + FINISH_SLICE_GROUPS, ng)
            cols = decode_keys(sink.group_types, w[lo:hi], s[lo:hi], h, null_word=True)
            cols += [sliced_state(acc, lo, hi).finalize(hi - lo) for acc in accs]
            block = _having(sink, Block(cols, hi - lo))
            if block.n:
                if memory is not None:
                    nbytes = held_nbytes(block)
                    memory.reserve(nbytes, "aggregate result")
                    held += nbytes
                kept.append(block)
        sink.groups_made.append(ng)
        return concat_consumed(kept, sink.out_types)
    finally:
        final.release()
        if memory is not None:
            memory.release(making + held)


def aggregate_columns(sink, final, ng: int) -> list:
    """The aggregates' result vectors."""
    cols: list = []
    for i, a in enumerate(sink.aggs):
        acc = final.accs[i]
        if a.distinct and a.func == "count":    # entries are distinct non-NULL values
            w, _, _ = final.distinct[i].keys()
            counts = np.bincount(w[:, 0].view(np.int64), minlength=ng)
            extra = final.distinct_extra.get(i)
            if extra is not None:                # merged by lookup: the other's new ones
                counts[:len(extra)] += extra
            cols.append(Vector(a.type, counts[:ng].astype(a.type.numpy_dtype)))
            continue
        if a.distinct:
            w, s, h = final.distinct[i].keys()
            gid = np.ascontiguousarray(w[:, 0].view(np.int64))
            arg = decode_keys([sink.arg_types[i]], np.ascontiguousarray(w[:, 1:]), s, h,
                              null_word=True)[0]
            acc = make_accumulator(a, sink.arg_types[i])
            acc.update(gid, arg, ng)
        elif i in sink.alias:
            share_state(acc, final.accs[sink.alias[i]])
        cols.append(acc.finalize(ng))
    return cols
