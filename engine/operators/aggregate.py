"""Hash aggregation sink: GROUP BY any keys, count/sum/avg/min/max and their
DISTINCT forms.  Thread-local group tables and accumulators merge at the end."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector
from engine.kernels.aggregates import fold_codes, gather_int64, mark_present
from engine.kernels.hashing import KeyColumns, normalize_keys
from engine.kernels.hashtable import GroupTable
from engine.operators.accumulators import make_accumulator, share_state
from engine.operators.rows import take_vector
from engine.pipeline import Sink
from planner.expressions import Call, ColumnRef, Literal, column_indexes

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


# functions whose common subtrees are evaluated once per block: deterministic,
# and evaluated on every row (no CASE/COALESCE/AND/OR branches above them)
_SHAREABLE = frozenset(("add", "sub", "mul", "div", "intdiv", "mod", "neg", "abs", "round",
                        "cast", "extract", "date_add", "date_sub", "eq", "ne", "lt", "le",
                        "gt", "ge", "concat", "substring", "upper", "lower", "length"))


def _shape(e):
    """Structural key of an expression (Expr nodes compare by identity)."""
    if isinstance(e, ColumnRef):
        return ("col", e.index)
    if isinstance(e, Literal):
        return ("lit", type(e.value).__name__, repr(e.value), repr(e.type))
    if isinstance(e, Call):
        return ("call", e.func, repr(e.type), tuple(_shape(a) for a in e.args))
    return ("other", id(e))


def _pure(e) -> bool:
    if isinstance(e, (ColumnRef, Literal)):
        return True
    return isinstance(e, Call) and e.func in _SHAREABLE and all(_pure(a) for a in e.args)


class SharedEvaluator:
    """Evaluates a list of expressions over a block, computing every common
    subexpression (e.g. ``l_extendedprice * (1 - l_discount)`` in TPC-H Q1)
    once: shared subtrees become extra columns appended to the block."""

    def __init__(self, exprs, width: int):
        counts: dict = {}

        def count(e):
            if isinstance(e, Call) and e.func in _SHAREABLE:
                if _pure(e):
                    counts[_shape(e)] = counts.get(_shape(e), 0) + 1
                for a in e.args:
                    count(a)
        for e in exprs:
            count(e)
        self.width = width
        self.temps: list = []          # rewritten shared subtrees, inner first
        slots: dict = {}

        def rewrite(e):
            if not isinstance(e, Call):
                return e
            key = _shape(e) if counts.get(_shape(e), 0) > 1 else None
            if key is not None and key in slots:
                return slots[key]
            out = Call(e.func, [rewrite(a) for a in e.args], e.type)
            if key is not None:
                self.temps.append(out)
                slots[key] = ColumnRef(width + len(self.temps) - 1, e.type)
                return slots[key]
            return out
        self.exprs = [rewrite(e) for e in exprs]

    def __call__(self, block: Block) -> list[Vector]:
        if not self.temps:
            return _eval(self.exprs, block)
        from engine.expr import evaluate
        ext = Block(list(block.columns[:self.width]), block.n)
        for t in self.temps:
            ext.columns.append(evaluate(t, ext))
        return _eval(self.exprs, ext)


def _with_gid(gid: np.ndarray, keys: KeyColumns) -> KeyColumns:
    combined = np.empty((keys.n, keys.keys.shape[1] + 1), np.uint64)
    combined[:, 0] = gid.astype(np.int64).view(np.uint64)
    combined[:, 1:] = keys.keys
    return KeyColumns(combined, keys.kw + 1, keys.heap, None, keys.n)


_MAX_CODE_COMBOS = 1 << 16


def _coded_group_ids(table, key_vecs, n):
    """Group ids from dictionary codes when every key is a NULL-free string
    column that carries them (scan CodedVector) and the code combinations
    are few: only the combinations present in the block are normalized,
    hashed and looked up, then a table maps each row's combined code to its
    group.  None when the general path must run."""
    sizes = []
    for v in key_vecs:
        codes = getattr(v, "codes", None)
        if codes is None or v.nulls is not None or len(codes) != n:
            return None
        sizes.append(len(v.dictionary))
    if not sizes or int(np.prod(sizes, dtype=np.float64)) > _MAX_CODE_COMBOS:
        return None
    combined = np.empty(n, np.int64)
    for j, (v, size) in enumerate(zip(key_vecs, sizes)):
        fold_codes(combined, v.codes, size, j == 0)
    total = int(np.prod(sizes))
    seen = np.zeros(total, np.uint8)
    mark_present(combined, seen)
    present = np.flatnonzero(seen)
    # the key values of each present combination, column by column
    combo_vecs, rest = [], present
    for v, size in zip(reversed(key_vecs), reversed(sizes)):
        code = rest % size
        rest = rest // size
        combo_vecs.append(Vector(v.type, np.ascontiguousarray(v.dictionary[code]), None, v.heap))
    combo_vecs.reverse()
    combo_gid = table.insert(normalize_keys(combo_vecs, len(present), null_word=True))
    lookup = np.empty(total, np.int64)
    lookup[present] = combo_gid
    gid = np.empty(n, np.int64)
    gather_int64(lookup, combined, gid)
    return gid


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
        width = 1 + max([i for e in self.groups + self.arg_exprs for i in column_indexes(e)],
                        default=-1)
        self.eval_args = SharedEvaluator(self.arg_exprs, width)
        # sum(x) and avg(x) of the same x keep one state (sums and counts)
        self.alias: dict[int, int] = {}
        first: dict = {}
        for i, a in enumerate(self.aggs):
            if a.distinct or a.func not in ("sum", "avg") or a.arg is None:
                continue
            self.alias[i] = first.setdefault(_shape(a.arg), i)
            if self.alias[i] == i:
                del self.alias[i]

    def make_local(self):
        return _Local(self)

    def consume(self, local: _Local, block: Block, seq: tuple) -> None:
        n = block.n
        if local.table is not None:
            key_vecs = _eval(self.groups, block)
            gid = _coded_group_ids(local.table, key_vecs, n)
            if gid is None:
                gid = local.table.insert(normalize_keys(key_vecs, n, null_word=True))
        else:
            gid = np.zeros(n, np.int64)
        ng = local.n_groups
        local.account()
        args = self.eval_args(block)
        k = 0
        for i, a in enumerate(self.aggs):
            vec = None
            if a.arg is not None:
                vec = args[k]
                k += 1
            if not a.distinct:
                if i not in self.alias:
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
        if final.table is not None and len(locals_) > 1:    # at most the sum of the inputs
            tables = [loc.table for loc in locals_]
            final.table.reserve(sum(t.n_groups for t in tables),
                                sum(int(t.state[1]) for t in tables))
        for loc in locals_:
            if loc.table is not None:
                mapping = final.table.insert(loc.table.key_columns())
            else:
                mapping = np.zeros(1, np.int64)
            ng = final.n_groups
            final.account()
            for i, acc in enumerate(final.accs):
                if acc is not None and i not in self.alias:
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
                if i in self.alias:
                    share_state(final.accs[i], final.accs[self.alias[i]])
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
