"""Hash aggregation sink: GROUP BY any keys, count/sum/avg/min/max and their
DISTINCT forms.  Thread-local group tables and accumulators merge at the end."""

from __future__ import annotations

import math

import numpy as np

from engine.block import Block, Vector, take_vector
from engine.kernels.aggregates import (fold_codes, gather_int64, mark_present,
                                      prepend_group_ids, run_heads)
from engine.kernels.hashing import KeyColumns, hash_keys, normalize_keys
from engine.kernels.hashtable import GroupTable
from engine.kernels.heaps import HeapCache
from engine.kernels.partition import gather_remapped
from engine.operators.accumulators import make_accumulator, moved_out, share_state, state_bytes
from engine.operators.collect import concat_consumed
from engine.operators.group_results import finish_groups
from engine.operators.group_sizing import planned_rows, presize_groups
from engine.pipeline import Sink
from engine.scheduler import parallel_map
from planner.expressions import Call, ColumnRef, Literal, column_indexes

_M64 = (1 << 64) - 1

# below this many groups (summed over the thread-local tables) one sequential
# merge is cheaper than partitioning them (measured at 2 threads: about even
# at 50k integer keys, the sequential merge 1.5x faster at 38k string keys,
# the partitioned one 2x faster at 300k and beyond)
PARTITIONED_MERGE_GROUPS = 50_000
# two locals of at least this many groups each merge by lookup (_merge_by_lookup)
LOOKUP_MERGE_GROUPS = 4096
_LOOKUP_PIECE = 65536


def key_layout(types) -> tuple[int, int]:
    """(words, string columns) of normalized keys of these types (+ null word)."""
    kw = ks = 0
    for t in types:
        if t.is_string:
            ks += 1
        else:
            kw += 2 if t.numpy_dtype == object else 1
    return kw + 1, ks


class _Local:
    def __init__(self, sink):
        kw, ks = key_layout(sink.group_types)
        self.table = GroupTable(kw, ks, sink.memory) if sink.groups else None
        self.accs = [None if sink.aggs[i].distinct else make_accumulator(a, sink.arg_types[i])
                     for i, a in enumerate(sink.aggs)]
        self.distinct = {}          # agg index -> GroupTable over (group id, arg)
        self.distinct_extra = {}    # agg index -> per-group counts merged by lookup
        for i, a in enumerate(sink.aggs):
            if a.distinct:
                dkw, dks = key_layout([sink.arg_types[i]])
                self.distinct[i] = GroupTable(dkw + 1, dks, sink.memory)

        self.memory = sink.memory
        if self.table is not None:
            hint = presize_groups(sink.expected_groups, sink.threads, sink.memory)
            if hint:
                self.table.reserve(hint)
        # a DISTINCT's (group, value) pairs: at most the input's rows (SF10
        # Q16: 1.2M pairs grown in doubling steps took a twelfth of it)
        pairs = presize_groups(sink.expected_input, sink.threads, sink.memory)
        for table in self.distinct.values():
            if pairs:
                table.reserve(pairs)
        self.heap_cache = HeapCache(sink.memory, "group keys' string heaps")
        self.per_group = 24 * len(sink.aggs)    # accumulator bytes per group (estimate)
        self.accounted_groups = 0
        self.transient = 0          # old accumulator arrays while they grow

    @property
    def n_groups(self) -> int:
        return self.table.n_groups if self.table is not None else 1

    def account(self):
        """Reserve accumulator memory for the groups: in doubling steps, as
        the accumulator arrays grow (not a reservation per block).  A growth
        copies the old arrays into new ones, so the old ones are reserved
        too until settle()."""
        ng = self.n_groups
        if self.memory is not None and ng > self.accounted_groups:
            target = max(ng, 2 * self.accounted_groups)
            transient = self.accounted_groups * self.per_group
            self.memory.reserve((target - self.accounted_groups) * self.per_group + transient,
                                "aggregate accumulators")
            self.transient += transient
            self.accounted_groups = target

    def settle(self):
        """The accumulators grew: the old arrays are gone."""
        if self.transient:
            self.memory.release(self.transient)
            self.transient = 0

    def release(self):
        for t in [self.table, *self.distinct.values()]:
            if t is not None:
                t.release()
        self.heap_cache.clear()
        if self.memory is not None:
            self.settle()
            self.memory.release(self.accounted_groups * self.per_group)
            self.accounted_groups = 0

    def discard(self):
        """Release and drop the tables and states (a merge copied them)."""
        self.release()
        self.table, self.accs, self.distinct = None, [], {}


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


def _with_gid(gid: np.ndarray, rows: np.ndarray | None, keys: KeyColumns) -> KeyColumns:
    """(group id, value) keys: the group ids of ``rows`` (or all rows) in
    front of the value keys."""
    combined = np.empty((keys.n, keys.keys.shape[1] + 1), np.uint64)
    prepend_group_ids(gid, _ALL_ROWS if rows is None else rows, rows is not None, keys.keys,
                      combined)
    return KeyColumns(combined, keys.kw + 1, keys.heap, None, keys.n)


_ALL_ROWS = np.zeros(1, np.int64)


_MAX_CODE_COMBOS = 1 << 16


def coded_group_ids(table, key_vecs, n):
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
    total = math.prod(sizes)           # Python ints: exact, and no numpy call per block
    if not sizes or total > _MAX_CODE_COMBOS:
        return None
    combined = np.empty(n, np.int64)
    for j, (v, size) in enumerate(zip(key_vecs, sizes)):
        fold_codes(combined, v.codes, size, j == 0)
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


# a block whose rows form at most this share of runs of equal keys inserts
# one row per run (input clustered on the group keys: lineitem by orderkey)
RUN_SHARE = 0.5


def _insert_runs(local: _Local, keys: KeyColumns) -> np.ndarray:
    """Group ids of ``keys``' rows.  Rows sorted or clustered on the keys
    come in runs of equal keys (Q18's lineitem by l_orderkey, 4 rows per
    order): only each run's first row is looked up and inserted, and the
    run's rows take its group id -- a quarter of the hash table work
    there.  Other blocks are inserted row by row."""
    n = keys.n
    if n >= 64:
        probe = min(n, 256)             # unclustered blocks are told by their first rows
        if run_heads(keys.keys[:probe], np.empty(probe, np.int64)) > RUN_SHARE * probe:
            return local.table.insert(keys)
        heads = np.empty(n, np.int64)
        runs = run_heads(keys.keys, heads)
        if runs <= RUN_SHARE * n:
            heads = heads[:runs]
            firsts = KeyColumns(keys.keys[heads], keys.kw, keys.heap,
                                None if keys.any_null is None else keys.any_null[heads],
                                runs, None if keys.hashes is None else keys.hashes[heads],
                                keys.compacted)
            lengths = np.diff(np.append(heads, n))
            return np.repeat(local.table.insert(firsts), lengths)
    return local.table.insert(keys)


class _Scattered:
    """One thread-local state in partition order (partitioned merge): group
    keys, hashes and accumulator states moved so that partition p is the
    contiguous range offsets[p]:offsets[p+1]; DISTINCT (group id, value)
    entries likewise, by their group's partition, with the group id turned
    into the group's position.  The local gives up each array as soon as it
    was moved (its lookup slots first), so a local is never held twice; it
    is released at the end (the moved arrays share only its string heaps)."""

    def __init__(self, sink, loc: _Local, bits: int):
        table = loc.table
        ng = table.n_groups
        live = [acc if acc is not None and i not in sink.alias else None
                for i, acc in enumerate(loc.accs)]
        loc.accs = []                   # sum/avg aliases share the live states
        self.memory = sink.memory
        tables = [table, *loc.distinct.values()]
        self.nbytes = (16 * ng                                   # hash, group map
                       + sum((8 * t.g_keys.shape[1] + 8) * t.n_groups   # keys, dest
                             + int(t.state[1]) for t in tables)          # the shared heaps
                       + sum(state_bytes(acc, ng) for acc in live if acc is not None))
        if self.memory is not None:
            self.memory.reserve(self.nbytes, "aggregate merge partitions")
        try:
            dest, self.offsets, self.heap_bytes = table.partition(bits)
            by_group = table.hashes()
            d_parts = {i: dt.partition(bits, by_group=by_group)
                       for i, dt in loc.distinct.items()}
            del by_group
            self.keys, self.hashes = table.move_out(dest)
            self.accs = [None if acc is None else moved_out(acc, dest, ng) for acc in live]
            del live
            self.distinct = {}
            for i, dt in loc.distinct.items():
                d_dest, d_offsets, d_heap = d_parts.pop(i)
                self.distinct[i] = (dt.move_out(d_dest, remap=dest)[0], d_offsets, d_heap)
            self.gmap = np.empty(ng, np.int64)      # position -> partition group id
        except BaseException:
            self.release()
            raise
        finally:
            loc.discard()

    def size(self, p: int) -> int:
        return int(self.offsets[p + 1] - self.offsets[p])

    def rows(self, p: int) -> np.ndarray:
        return np.arange(self.offsets[p], self.offsets[p + 1], dtype=np.int64)

    def distinct_size(self, i: int, p: int) -> int:
        offsets = self.distinct[i][1]
        return int(offsets[p + 1] - offsets[p])

    def release(self):
        if self.memory is not None:
            self.memory.release(self.nbytes)
            self.nbytes = 0

    def drop(self):
        """Release, and let go of the moved arrays (all partitions merged)."""
        self.release()
        self.keys = self.hashes = self.gmap = None
        self.accs, self.distinct = [], {}


class AggregateSink(Sink):
    """Aggregate node as a pipeline sink; merge() returns the result Block."""
    takes_batches = True

    def __init__(self, node, memory=None, having=None):
        """having: a predicate over the output (a Filter right above the
        Aggregate), applied to each merged partition before the partitions
        are concatenated."""
        self.node = node
        self.having = having
        self.groups_made: list[int] = []   # each finished partition's groups, before HAVING
        planned = node.child is not None        # (a sink made without a plan below it)
        self.expected_groups = planned_rows(node) if planned and node.groups else 0
        self.expected_input = planned_rows(node.child) \
            if planned and any(a.distinct for a in node.aggregates) else 0
        self.out_types = [f.type for f in node.schema]
        self.groups = node.groups
        self.aggs = node.aggregates
        self.memory = memory
        self.group_types = [g.type for g in self.groups]
        self.arg_types = [a.arg.type if a.arg is not None else None for a in self.aggs]
        self.arg_exprs = [a.arg for a in self.aggs if a.arg is not None]
        width = 1 + max([i for e in self.groups + self.arg_exprs for i in column_indexes(e)],
                        default=-1)
        self.eval_args = SharedEvaluator(self.arg_exprs, width)
        self.counts_only = not self.groups and bool(self.aggs) and \
            all(a.func == "count_star" and not a.distinct for a in self.aggs)
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
        if self.counts_only:
            # count(*) alone, no groups: only the row count (a cross join's
            # count(*) arrives as many placeholder blocks)
            local.account()
            for acc in local.accs:
                acc.counts[0] += n
            return
        if local.table is not None:
            key_vecs = _eval(self.groups, block)
            gid = coded_group_ids(local.table, key_vecs, n)
            if gid is None:
                gid = _insert_runs(local, normalize_keys(key_vecs, n, null_word=True,
                                                         heap_cache=local.heap_cache))
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
            rows = None                         # NULLs are not counted
            if vec.nulls is not None:
                rows = np.flatnonzero(vec.nulls == 0)
                if len(rows) == 0:
                    continue
                vec = take_vector(vec, rows)
            dkeys = normalize_keys([vec], len(vec), null_word=True)
            local.distinct[i].insert(_with_gid(gid, rows, dkeys))
        local.settle()

    def merge(self, locals_: list) -> Block:
        try:
            if len(locals_) == 1:               # one thread: its table is the result
                return self._finish(locals_[0])
            if (len(locals_) == 2 and self.groups
                    and all(a.func == "count" for a in self.aggs if a.distinct)
                    and min(loc.n_groups for loc in locals_) >= LOOKUP_MERGE_GROUPS):
                return self._merge_by_lookup(*locals_)
            if (self.groups and self.threads > 1
                    and sum(loc.n_groups for loc in locals_) >= PARTITIONED_MERGE_GROUPS):
                return self._merge_partitioned(locals_)
            return self._finish(self._merge_sequential(locals_))
        finally:
            for loc in locals_:
                loc.release()

    def _merge_sequential(self, locals_: list) -> _Local:
        """The other locals inserted into the biggest one (few groups)."""
        def size(loc):
            return loc.n_groups + sum(d.n_groups for d in loc.distinct.values())
        final = max(locals_, key=size)
        try:
            if final.table is not None:         # at most the sum of the inputs
                tables = [loc.table for loc in locals_]
                final.table.reserve(sum(t.n_groups for t in tables),
                                    sum(int(t.state[1]) for t in tables))
            for i, table in final.distinct.items():
                tables = [loc.distinct[i] for loc in locals_]
                table.reserve(sum(t.n_groups for t in tables),
                              sum(int(t.state[1]) for t in tables))
            for loc in locals_:
                if loc is final:
                    continue
                if loc.table is not None:
                    mapping = final.table.insert(loc.table.key_view(), loc.table.hashes())
                else:
                    mapping = np.zeros(1, np.int64)
                ng = final.n_groups
                final.account()
                for i, acc in enumerate(final.accs):
                    if acc is not None and i not in self.alias:
                        acc.absorb(loc.accs[i], mapping, ng)
                final.settle()
                for i, dt in loc.distinct.items():
                    src = dt.key_view()
                    if src.n:
                        keys = np.empty_like(src.keys)
                        gather_remapped(src.keys, np.arange(src.n, dtype=np.int64), mapping, keys)
                        final.distinct[i].insert(KeyColumns(keys, src.kw, src.heap, None, src.n))
                loc.release()
        except BaseException:
            final.release()
            raise
        return final

    def _merge_by_lookup(self, base: _Local, other: _Local) -> Block:
        """Two locals (two threads): the other's groups are looked up in the
        base's table (read only, in pieces on the worker threads); the ones
        found are folded into the base's accumulators, and both locals are
        finished side by side, the other's for its remaining groups only.
        Nothing is re-inserted, so when the threads saw mostly different keys
        (keys clustered by morsel: Q18's 1.5M l_orderkey groups) the merge
        is little more than the two finishes.  merge() releases both locals
        whatever happens."""
        if other.n_groups > base.n_groups:
            base, other = other, base
        keys, hashes = other.table.key_view(), other.table.hashes()
        n = keys.n

        def find(lo):
            hi = min(lo + _LOOKUP_PIECE, n)
            piece = KeyColumns(keys.keys[lo:hi], keys.kw, keys.heap, None, hi - lo)
            return base.table.find(piece, hashes[lo:hi])
        gids = np.concatenate(parallel_map(find, range(0, n, _LOOKUP_PIECE), self.threads))
        for i, table in other.distinct.items():
            base.distinct_extra[i] = self._new_distinct_counts(base.distinct[i], table, gids,
                                                               base.n_groups)
        found = gids >= 0
        rest = None
        if found.any():
            rows = np.flatnonzero(found)
            for i, acc in enumerate(base.accs):
                if acc is not None and i not in self.alias:
                    acc.absorb(other.accs[i], gids, base.n_groups, rows)
            rest = ~found
        parts = parallel_map(lambda job: self._finish(*job), [(base, None), (other, rest)],
                             self.threads)
        return concat_consumed(parts, self.out_types)

    def _new_distinct_counts(self, base_table, other_table, gids, ng: int):
        """COUNT(DISTINCT) merged by lookup: per base group, how many of the
        other local's (group, value) entries whose group the base also has
        are not among the base's entries (looked up read only, in pieces on
        the pool).  None when there are none."""
        keys = other_table.key_view()
        if keys.n == 0:
            return None
        bg = gids[keys.keys[:, 0].view(np.int64)]
        sel = np.flatnonzero(bg >= 0)
        if len(sel) == 0:
            return None
        moved = keys.keys[sel]
        bg = bg[sel]
        moved[:, 0] = bg.view(np.uint64)            # the entries under the base's group ids

        def find(lo):
            hi = min(lo + _LOOKUP_PIECE, len(sel))
            piece = KeyColumns(moved[lo:hi], keys.kw, keys.heap, None, hi - lo)
            return base_table.find(piece, hash_keys(piece))
        hit = np.concatenate(parallel_map(find, range(0, len(sel), _LOOKUP_PIECE),
                                          self.threads))
        return np.bincount(bg[hit < 0], minlength=ng)

    def _merge_partitioned(self, locals_: list) -> Block:
        """Many groups: each local's groups are scattered into 2**bits
        partitions by the top bits of their hash (on the worker threads, one
        local each); then each partition of all locals merges into its own
        table and is finished into a block, HAVING applied (on the worker
        threads, one partition each); the blocks are concatenated."""
        bits = max(4, (4 * self.threads - 1).bit_length())   # >= 16, >= 4 per thread
        made: list[_Scattered] = []

        def scatter(loc):
            sc = _Scattered(self, loc, bits)
            made.append(sc)
            return sc
        try:
            split = parallel_map(scatter, locals_, self.threads)
            parts = parallel_map(lambda p: self._merge_partition(p, split),
                                 range(1 << bits), self.threads)
        finally:
            for sc in made:
                sc.drop()
        return concat_consumed(parts, self.out_types)

    def _merge_partition(self, p: int, split: list):
        """Partition p of every local merged into one table, finished."""
        part = _Local(self)
        try:
            part.table.reserve(sum(sc.size(p) for sc in split),
                               sum(int(sc.heap_bytes[p]) for sc in split))
            for sc in split:
                rows = sc.rows(p)
                if len(rows) == 0:
                    continue
                part.table.insert_rows(sc.keys, sc.hashes, rows, sc.gmap)
                ng = part.n_groups
                part.account()
                for i, acc in enumerate(part.accs):
                    if sc.accs[i] is not None:
                        acc.absorb(sc.accs[i], sc.gmap, ng, rows)
                part.settle()
            for i, table in part.distinct.items():
                table.reserve(sum(sc.distinct_size(i, p) for sc in split),
                              sum(int(sc.distinct[i][2][p]) for sc in split))
                for sc in split:
                    keys, offsets, _ = sc.distinct[i]
                    sel = np.arange(offsets[p], offsets[p + 1], dtype=np.int64)
                    if len(sel):
                        moved = np.empty((len(sel), keys.keys.shape[1]), np.uint64)
                        gather_remapped(keys.keys, sel, sc.gmap, moved)
                        table.insert(KeyColumns(moved, keys.kw, keys.heap, None, len(sel)))
        except BaseException:
            part.release()
            raise
        return self._finish(part)

    def _finish(self, final: _Local, keep: np.ndarray | None = None) -> Block:
        return finish_groups(self, final, keep)
