"""Hash aggregation sink: GROUP BY any keys, count/sum/avg/min/max and their
DISTINCT forms.  Thread-local group tables and accumulators merge at the end."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector
from engine.kernels.hashing import KeyColumns, normalize_keys
from engine.kernels.hashtable import GroupTable
from engine.operators.accumulators import make_accumulator
from engine.operators.rows import take_vector
from engine.pipeline import Sink
from planner.expressions import ColumnRef

_M64 = (1 << 64) - 1


def key_layout(types) -> tuple[int, int]:
    """(words, string columns) of normalized keys of these types (+ null word)."""
    kw = ks = 0
    for t in types:
        if t.is_string:
            ks += 1
        else:
            kw += 2 if t.numpy_dtype == object else 1
    return kw + 1, ks


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


class _Local:
    def __init__(self, sink):
        kw, ks = key_layout(sink.group_types)
        self.table = GroupTable(kw, ks, sink.memory) if sink.groups else None
        self.accs = [None if sink.aggs[i].distinct else make_accumulator(a, sink.arg_types[i])
                     for i, a in enumerate(sink.aggs)]
        self.distinct = {}          # agg index -> GroupTable over (group id, arg)
        for i, a in enumerate(sink.aggs):
            if a.distinct:
                dkw, dks = key_layout([sink.arg_types[i]])
                self.distinct[i] = GroupTable(dkw + 1, dks, sink.memory)

        self.memory = sink.memory
        self.per_group = 24 * len(sink.aggs)    # accumulator bytes per group (estimate)
        self.accounted_groups = 0

    @property
    def n_groups(self) -> int:
        return self.table.n_groups if self.table is not None else 1

    def account(self):
        """Reserve accumulator memory for groups added since the last call."""
        ng = self.n_groups
        if self.memory is not None and ng > self.accounted_groups:
            self.memory.reserve((ng - self.accounted_groups) * self.per_group,
                                "aggregate accumulators")
            self.accounted_groups = ng

    def release(self):
        for t in [self.table, *self.distinct.values()]:
            if t is not None:
                t.release()
        if self.memory is not None:
            self.memory.release(self.accounted_groups * self.per_group)
            self.accounted_groups = 0


def _eval(exprs, block):
    from engine.expr import evaluate
    return [block.columns[e.index] if isinstance(e, ColumnRef) else evaluate(e, block)
            for e in exprs]


def _with_gid(gid: np.ndarray, keys: KeyColumns) -> KeyColumns:
    combined = np.empty((keys.n, keys.keys.shape[1] + 1), np.uint64)
    combined[:, 0] = gid.astype(np.int64).view(np.uint64)
    combined[:, 1:] = keys.keys
    return KeyColumns(combined, keys.kw + 1, keys.heap, None, keys.n)


class AggregateSink(Sink):
    """Aggregate node as a pipeline sink; merge() returns the result Block."""

    def __init__(self, node, memory=None):
        self.node = node
        self.groups = node.groups
        self.aggs = node.aggregates
        self.memory = memory
        self.group_types = [g.type for g in self.groups]
        self.arg_types = [a.arg.type if a.arg is not None else None for a in self.aggs]
        self.arg_exprs = [a.arg for a in self.aggs if a.arg is not None]

    def make_local(self):
        return _Local(self)

    def consume(self, local: _Local, block: Block, seq: tuple) -> None:
        n = block.n
        if local.table is not None:
            keys = normalize_keys(_eval(self.groups, block), n, null_word=True)
            gid = local.table.insert(keys)
        else:
            gid = np.zeros(n, np.int64)
        ng = local.n_groups
        local.account()
        args = _eval(self.arg_exprs, block)
        k = 0
        for i, a in enumerate(self.aggs):
            vec = None
            if a.arg is not None:
                vec = args[k]
                k += 1
            if not a.distinct:
                local.accs[i].update(gid, vec, ng)
                continue
            keep = np.ones(n, bool) if vec.nulls is None else vec.nulls == 0
            if not keep.any():
                continue
            v = vec if keep.all() else take_vector(vec, keep)
            dkeys = normalize_keys([v], len(v), null_word=True)
            local.distinct[i].insert(_with_gid(gid[keep], dkeys))

    def merge(self, locals_: list) -> Block:
        final = _Local(self)
        for loc in locals_:
            if loc.table is not None:
                mapping = final.table.insert(loc.table.key_columns())
            else:
                mapping = np.zeros(1, np.int64)
            ng = final.n_groups
            final.account()
            for i, acc in enumerate(final.accs):
                if acc is not None:
                    acc.absorb(loc.accs[i], mapping, ng)
            for i, dt in loc.distinct.items():
                kc = dt.key_columns()
                if kc.n:
                    kc.keys[:, 0] = mapping[kc.keys[:, 0].view(np.int64)].view(np.uint64)
                    final.distinct[i].insert(kc)
            loc.release()
        ng = final.n_groups
        cols: list[Vector] = []
        if final.table is not None:
            w, s, h = final.table.keys()
            cols.extend(decode_keys(self.group_types, w, s, h, null_word=True))
        for i, a in enumerate(self.aggs):
            if not a.distinct:
                cols.append(final.accs[i].finalize(ng))
                continue
            w, s, h = final.distinct[i].keys()
            gid = np.ascontiguousarray(w[:, 0].view(np.int64))
            arg = decode_keys([self.arg_types[i]], np.ascontiguousarray(w[:, 1:]), s, h,
                              null_word=True)[0]
            acc = make_accumulator(a, self.arg_types[i])
            acc.update(gid, arg, ng)
            cols.append(acc.finalize(ng))
        final.release()
        return Block(cols, ng)
