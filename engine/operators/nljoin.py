"""Joins without equality keys: cross joins, inequality and band joins, and
joins on any other condition, in bounded memory.

The build side (Join.right) is materialized, counted against memory_limit
(a build side that does not fit is a MemoryLimitError), and the probe side
streams through ``NestedLoopJoin`` block by block, as a hash join's does.
For each probe block the candidate pairs are made by a kernel that stops
after ``block_rows`` pairs (engine/kernels/range_join.py), so what a worker
holds is one output block at a time, however many rows the join emits; a
count(*) over a cross join makes no pairs at all, only row counts.

Inequalities between the two sides (``a.x < b.y``, ``<=``, ``>``, ``>=``,
BETWEEN and other two-sided bands) become a sort-based range join: the
build rows are sorted on one inequality's build-side key, and each probe
row's range of partners is found by binary search.  A second inequality on
the same key narrows the range (a band); on another key it is checked per
candidate inside the kernel, and the range is narrowed by the widest gap
between the two keys over the build rows (an interval join: ``a.x BETWEEN
b.lo AND b.hi`` looks only at b.lo in [a.x - max(b.hi - b.lo), a.x]).  Any
other condition is applied to the joined pairs afterwards.  Comparisons are
made on int64 order keys (integers, decimals of one scale, dates, times,
timestamps; floats mapped so that -0.0 = 0.0 and NaN is greater than every
other value and equal to itself, as in DuckDB); anything else (strings,
mixed scales) stays in the residual, and the join compares every pair.

Kinds: inner and cross emit pairs; left and single also the probe rows
without a partner (single fails on a second partner); semi, anti and mark
decide per probe row (without a residual from the ranges alone); right and
full mark the build rows that found a partner and the executor appends the
others (``unmatched_build_block``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.block import Block, Int64WideVector, Vector, empty_vector, null_vector, take_vector
from engine.context import check_cancel, current_cancel
from engine.errors import ExecutionError
from engine.kernels.range_join import (GE, GT, LE, LT, NONE, probe_ranges, range_exists,
                                       range_pairs, widths)
from engine.operators.collect import held_nbytes
from engine.pipeline import Operator
from planner.expressions import Call, column_indexes, conjunction, remap_columns, split_conjuncts
from planner.types import BOOLEAN

NL_KINDS = ("inner", "cross", "left", "right", "full", "semi", "anti", "mark", "single")
_EXISTS_KINDS = ("semi", "anti", "mark")
SCALAR_SUBQUERY_ERROR = "More than one row returned by a subquery used as an expression"
# candidates a kernel call looks at before it returns to Python (which checks
# the query's stop request): a few milliseconds of work
WORK_BUDGET = 1 << 22
# a build side of at most this many rows is not sorted into a range index:
# every probe row is paired with each build row and the conditions are
# evaluated as expressions (Q11's one-row threshold compared a DECIMAL(38,12)
# order key made row by row in Python; the comparison itself is vectorized)
INDEX_MIN_ROWS = 4
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min

# a comparison `probe OP build` bounds the build key: build MIRROR(OP) probe
_BOUND_OF_PROBE_OP = {"lt": GT, "le": GE, "gt": LT, "ge": LE}
_BOUND_OF_BUILD_OP = {"lt": LT, "le": LE, "gt": GT, "ge": GE}


# ---------------------------------------------------------------- planning
@dataclass
class Inequality:
    """``build CODE probe``: probe over the probe (left) schema, build over
    the build (right) schema; code one of GT, GE, LT, LE."""
    probe: object
    build: object
    code: int

    @property
    def lower(self) -> bool:
        return self.code in (GT, GE)


@dataclass
class RangePlan:
    """How a join without keys finds its pairs: ``first`` (sorted on its
    build key) and ``second`` inequalities, or neither (every pair);
    ``rest``: the other conjuncts, checked on joined pairs; ``residual``:
    the whole condition (for probe blocks whose keys cannot be ordered)."""
    first: Inequality | None = None
    second: Inequality | None = None
    same_key: bool = False
    rest: object = None
    residual: object = None


def key_domain(t):
    """Types whose values compare as the int64 order keys of ``order_keys``
    compare (equal domains: comparable); None: not a range-join key."""
    if t.is_integer or t.id == "BOOLEAN":
        return ("int", 0)
    if t.is_decimal:
        return ("int", t.scale)
    if t.is_float:
        return ("float",)
    if t.id in ("DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP_NS"):
        return (t.id,)
    return None


def plan_range(residual, nleft: int, nright: int) -> RangePlan:
    """Pick the inequalities of ``residual`` (over left + right columns) that
    the range join uses: the first one, and a second one bounding the build
    side the other way (a band: preferably on the same build key), else one
    more in the same direction (checked per candidate)."""
    found, rest = [], []
    shift = {i: i - nleft for i in range(nleft, nleft + nright)}
    for conj in split_conjuncts(residual):
        ineq = _inequality(conj, nleft, shift)
        (found if ineq is not None else rest).append((conj, ineq))
    plan = RangePlan(residual=residual)
    if not found:
        plan.rest = residual
        return plan
    first_conj, plan.first = found[0]
    used = {id(first_conj)}
    others = found[1:]
    pick = None
    for want_same in (True, False):
        for conj, ineq in others:
            if ineq.lower != plan.first.lower and \
                    (_same(ineq.build, plan.first.build) or not want_same):
                pick = (conj, ineq)
                break
        if pick:
            break
    if pick is None and others:
        pick = others[0]
    if pick is not None:
        used.add(id(pick[0]))
        plan.second = pick[1]
        plan.same_key = _same(pick[1].build, plan.first.build)
    plan.rest = conjunction([c for c in split_conjuncts(residual) if id(c) not in used])
    return plan


def _same(a, b) -> bool:
    return repr(a) == repr(b) and a.type == b.type


def _inequality(pred, nleft: int, shift: dict) -> Inequality | None:
    if not (isinstance(pred, Call) and pred.func in _BOUND_OF_PROBE_OP):
        return None
    a, b = pred.args
    ca, cb = column_indexes(a), column_indexes(b)
    if not ca or not cb:
        return None
    da, db = key_domain(a.type), key_domain(b.type)
    if da is None or da != db:
        return None
    if max(ca) < nleft <= min(cb):
        return Inequality(a, remap_columns(b, shift), _BOUND_OF_PROBE_OP[pred.func])
    if max(cb) < nleft <= min(ca):
        return Inequality(b, remap_columns(a, shift), _BOUND_OF_BUILD_OP[pred.func])
    return None


# ---------------------------------------------------------------- order keys
def order_keys(vec: Vector):
    """(int64 keys ordered like the values, NULL mask or None), or None when
    the values have no such keys (strings, integers past int64)."""
    nulls = vec.nulls
    if isinstance(vec, Int64WideVector):
        return np.ascontiguousarray(vec.ints, np.int64), nulls
    if vec.type.is_string or vec.type.is_nested:
        return None
    data = vec.data
    kind = data.dtype.kind
    if kind in "ib":
        return np.ascontiguousarray(data, np.int64), nulls
    if kind == "u":
        if data.dtype.itemsize == 8 and len(data):
            vals = data if nulls is None else data[nulls == 0]
            if len(vals) and int(vals.max()) > _INT64_MAX:
                return None
            return np.ascontiguousarray(data).view(np.int64), nulls
        return data.astype(np.int64), nulls
    if kind == "f":
        x = data.astype(np.float64)          # a copy
        x[x == 0] = 0.0                       # -0.0 = 0.0
        x[np.isnan(x)] = np.nan               # one NaN, above +inf
        bits = x.view(np.int64)
        return np.where(bits < 0, bits ^ np.int64(_INT64_MAX), bits), nulls
    if kind == "O":
        try:
            vals = [0 if v is None else int(v) for v in data]
            return np.array(vals, np.int64), nulls
        except (OverflowError, TypeError, ValueError):
            return None
    return None


def _sat_add(v: np.ndarray, d: int) -> np.ndarray:
    """v + d, saturated to int64 (|d| < 2^63)."""
    if d == 0:
        return v
    if d > 0:
        return np.where(v > _INT64_MAX - d, _INT64_MAX, v + np.int64(d))
    return np.where(v < _INT64_MIN - d, _INT64_MIN, v + np.int64(d))


def _sat_sub(v: np.ndarray, d: int) -> np.ndarray:
    """v - d, saturated to int64 (|d| < 2^63)."""
    return _sat_add(v, -d)


def _evaluate(expr, block: Block) -> Vector:
    from engine.expr import evaluate
    from planner.expressions import ColumnRef
    return block.columns[expr.index] if isinstance(expr, ColumnRef) else evaluate(expr, block)


# ---------------------------------------------------------------- the build side
class NestedLoopTable:
    """The materialized build side, and when the join has inequalities its
    rows with non-NULL keys sorted on the first one's key (``sorted1``, and
    ``order``: their rows; ``k2``: the second key in that order).  ``matched``
    marks build rows that found a partner (right/full joins)."""

    def __init__(self, block: Block, plan: RangePlan, memory=None, reserved: int = 0,
                 outer: bool = False):
        self.block = block
        self.plan = plan
        self.memory = memory
        self.reserved = reserved
        self.matched = np.zeros(block.n, np.uint8) if outer else None
        self.indexed = False
        if plan.first is not None and block.n > INDEX_MIN_ROWS:
            self._index()

    def _hold(self, nbytes: int, what: str):
        if self.memory is not None:
            self.memory.reserve(nbytes, what)
        self.reserved += nbytes

    def _unhold(self, nbytes: int):
        if self.memory is not None:
            self.memory.release(nbytes)
        self.reserved -= nbytes

    def _index(self):
        plan, block = self.plan, self.block
        m = block.n
        second = plan.second is not None and not plan.same_key
        # the key arrays, the sort order, and the sorted keys while they are made
        transient = 8 * m * (3 + 2 * second)
        self._hold(transient, "range join index")
        try:
            k1, valid = self._keys(plan.first.build)
            if k1 is None:
                return
            k2 = None
            if second:
                k2, valid2 = self._keys(plan.second.build)
                if k2 is None:
                    return
                if valid2 is not None:
                    valid = valid2 if valid is None else valid & valid2
            if valid is None:
                order = np.argsort(k1, kind="stable")
            else:
                rows = np.flatnonzero(valid)
                order = rows[np.argsort(k1[rows], kind="stable")]
                del rows
            self.order = order
            self.sorted1 = k1[order]
            del k1
            self.k2 = _EMPTY
            self.up = self.down = 0
            self.narrow = False
            if second:
                self.k2 = k2[order]
                del k2
                up, down, ok = widths(self.sorted1, self.k2)
                self.up, self.down, self.narrow = int(up), int(down), bool(ok)
            self.indexed = True
        finally:
            kept = (self.order.nbytes + self.sorted1.nbytes + self.k2.nbytes) if self.indexed else 0
            self._unhold(transient - kept)

    def _keys(self, expr):
        """(int64 order keys of expr over the build rows, non-NULL mask or
        None), evaluated a block at a time (an expression's temporaries stay
        block-sized); (None, None) when the values have no order keys."""
        block = self.block
        m = block.n
        keys = np.empty(m, np.int64)
        valid = None
        step = 1 << 17
        for start in range(0, m, step):
            check_cancel()
            part = block.slice(start, start + step)
            got = order_keys(_evaluate(expr, part))
            if got is None:
                return None, None
            keys[start:start + part.n] = got[0]
            if got[1] is not None:
                if valid is None:
                    valid = np.ones(m, np.bool_)
                valid[start:start + part.n] = got[1] == 0
        return keys, valid

    def release(self):
        if self.memory is not None:
            self.memory.release(self.reserved)
        self.reserved = 0


_EMPTY = np.zeros(0, np.int64)
_NO_SKIP = np.zeros(1, np.uint8)


# ---------------------------------------------------------------- the probe
class NestedLoopJoin(Operator):
    """Joins each probe block with the NestedLoopTable; a generator of
    blocks of at most ``batch_rows`` rows.  ``needed``: the output columns
    the operators above read (None: all); the others come out as zero-stride
    placeholders, so a count(*) over a cross join copies no column."""

    def __init__(self, kind: str, table: NestedLoopTable, left_types, batch_rows: int,
                 needed=None, memory=None):
        self.kind = kind
        self.memory = memory
        self.table = table
        self.plan = table.plan
        self.left_types = list(left_types)
        self.build_types = [v.type for v in table.block.columns]
        self.batch = max(int(batch_rows), 1024)
        self.needed = None if needed is None else set(needed)

    def release(self) -> None:
        self.table.release()

    # -- candidate ranges of one probe block ---------------------------
    def _ranges(self, block: Block):
        """(lo, hi, perm or None (identity), k2, v2, code2, residual) of a
        probe block."""
        t, plan, n = self.table, self.plan, block.n
        if t.indexed:
            got = self._probe_keys(block)
            if got is not None:
                return got
        lo = np.zeros(n, np.int64)
        hi = np.full(n, t.block.n, np.int64)
        return lo, hi, None, _EMPTY, _EMPTY, NONE, plan.residual

    def _probe_keys(self, block: Block):
        t, plan, n = self.table, self.plan, block.n
        first = order_keys(_evaluate(plan.first.probe, block))
        if first is None:
            return None
        va, nulls = first
        valid = np.ones(n, np.uint8) if nulls is None else (nulls == 0).view(np.uint8)
        vb, code_b = _EMPTY, NONE
        v2, code2 = _EMPTY, NONE
        if plan.second is not None:
            second = order_keys(_evaluate(plan.second.probe, block))
            if second is None:
                return None
            vals, nulls2 = second
            if nulls2 is not None:
                valid = valid & (nulls2 == 0).view(np.uint8)
            if plan.same_key:
                vb, code_b = vals, plan.second.code
            else:
                v2, code2 = vals, plan.second.code
                if t.narrow:
                    # k2 >= v  =>  k1 >= v - max(k2 - k1);  k2 <= v  =>  k1 <= v + max(k1 - k2)
                    if plan.second.lower:
                        vb, code_b = _sat_sub(vals, t.up), GE
                    else:
                        vb, code_b = _sat_add(vals, t.down), LE
        lo = np.empty(n, np.int64)
        hi = np.empty(n, np.int64)
        probe_ranges(t.sorted1, va, plan.first.code, vb if code_b else va, code_b,
                     np.ascontiguousarray(valid, np.uint8), lo, hi)
        return lo, hi, t.order, t.k2, v2 if code2 else _EMPTY, code2, plan.rest

    # -- output -----------------------------------------------------------
    def process(self, block: Block):
        kind = self.kind
        token = current_cancel()
        n = block.n
        t = self.table
        if t.block.n == 0:
            yield from self._no_partners(block)
            return
        lo, hi, perm, k2, v2, code2, residual = self._ranges(block)
        identity = perm is None
        if identity:
            perm = _EMPTY
        if kind in _EXISTS_KINDS:
            matched = np.zeros(n, np.uint8)
            if residual is None:
                state = np.array([0, -1], np.int64)
                while not range_exists(lo, hi, k2, v2, code2, state, matched, WORK_BUDGET):
                    if token is not None:
                        token.check()
            else:
                cols = column_indexes(residual)
                for p, b in self._pairs(lo, hi, perm, identity, k2, v2, code2, token, matched):
                    joined = self._joined(block, p, b, cols)
                    mask = self._residual_mask(residual, joined)
                    matched[p[mask]] = 1
            yield from self._exists_output(block, matched)
            return
        needed = self.needed
        if residual is None and needed is not None and not needed and kind in ("inner", "cross"):
            yield from self._counts_only(lo, hi, k2, v2, code2, token)
            return
        matched = np.zeros(n, np.uint8) if kind in ("left", "full", "single") else None
        counts = np.zeros(n, np.int64) if kind == "single" else None
        cols = None if needed is None else needed | (column_indexes(residual) if residual is not None
                                                    else set())
        for p, b in self._pairs(lo, hi, perm, identity, k2, v2, code2, token, None):
            joined = self._joined(block, p, b, cols)
            if residual is not None:
                mask = self._residual_mask(residual, joined)
                if not mask.all():
                    p, b = p[mask], b[mask]
                    joined = self._take(joined, mask, cols)
                if not len(p):
                    continue
            if matched is not None:
                matched[p] = 1
            if counts is not None:
                counts += np.bincount(p, minlength=n)
                if counts.max() > 1:
                    raise ExecutionError(SCALAR_SUBQUERY_ERROR)
            if t.matched is not None:
                t.matched[b] = 1
            yield from self._emit(joined)
        if matched is not None:
            rest = matched == 0
            if rest.any():
                lb = _take_rows(block, rest)
                yield from self._emit(Block(lb.columns + [null_vector(ty, lb.n)
                                                          for ty in self.build_types], lb.n))

    def _emit(self, block: Block):
        """Yield an output block, its bytes reserved until the operators
        above and the sink are done with it (the generator resumes)."""
        if self.memory is None:
            yield block
            return
        nbytes = held_nbytes(block)
        self.memory.reserve(nbytes, "join output block")
        try:
            yield block
        finally:
            self.memory.release(nbytes)

    def _no_partners(self, block: Block):
        """An empty build side: nothing joins."""
        kind = self.kind
        if kind in _EXISTS_KINDS:
            yield from self._exists_output(block, np.zeros(block.n, np.uint8))
        elif kind in ("left", "full", "single"):
            yield Block(block.columns + [null_vector(ty, block.n) for ty in self.build_types],
                        block.n)

    def _exists_output(self, block: Block, matched: np.ndarray):
        kind = self.kind
        if kind == "mark":
            yield Block(block.columns + [Vector(BOOLEAN, matched.astype(np.bool_))], block.n)
            return
        keep = matched != 0 if kind == "semi" else matched == 0
        if keep.all():
            yield block
        elif keep.any():
            yield _take_rows(block, keep)

    def _pairs(self, lo, hi, perm, identity, k2, v2, code2, token, skip):
        """(probe rows, build rows) in blocks of at most ``batch`` pairs."""
        state = np.array([0, -1], np.int64)
        out_p = np.empty(self.batch, np.int64)
        out_b = np.empty(self.batch, np.int64)
        has_skip = skip is not None
        skip = skip if has_skip else _NO_SKIP
        n = len(lo)
        while state[0] < n:
            if token is not None:
                token.check()
            cnt = range_pairs(lo, hi, perm, identity, k2, v2, code2, skip, has_skip, state,
                              out_p, out_b, True, WORK_BUDGET)
            if cnt:
                yield out_p[:cnt].copy(), out_b[:cnt].copy()

    def _counts_only(self, lo, hi, k2, v2, code2, token):
        """Placeholder blocks as many rows as the join has (nothing reads a
        column): no pair is made."""
        types = self.left_types + self.build_types
        state = np.array([0, -1], np.int64)
        n = len(lo)
        pending = 0
        while state[0] < n:
            if token is not None:
                token.check()
            pending += int(range_pairs(lo, hi, _EMPTY, True, k2, v2, code2, _NO_SKIP, False,
                                       state, _EMPTY, _EMPTY, False, WORK_BUDGET))
            while pending >= self.batch:
                if token is not None:
                    token.check()
                yield _placeholder_block(types, self.batch)
                pending -= self.batch
        if pending:
            yield _placeholder_block(types, pending)

    def _joined(self, block: Block, p: np.ndarray, b: np.ndarray, cols) -> Block:
        nl = len(block.columns)
        out = []
        for i, c in enumerate(block.columns):
            out.append(take_vector(c, p) if cols is None or i in cols
                       else _placeholder(c.type, len(p)))
        for j, c in enumerate(self.table.block.columns):
            out.append(take_vector(c, b) if cols is None or nl + j in cols
                       else _placeholder(c.type, len(b)))
        return Block(out, len(p))

    @staticmethod
    def _residual_mask(residual, joined: Block) -> np.ndarray:
        from engine.expr import evaluate_predicate
        return np.asarray(evaluate_predicate(residual, joined), dtype=bool)

    @staticmethod
    def _take(joined: Block, mask: np.ndarray, cols) -> Block:
        kept = int(np.count_nonzero(mask))
        return Block([take_vector(c, mask, kept) if cols is None or i in cols
                      else _placeholder(c.type, kept)
                      for i, c in enumerate(joined.columns)], kept)


def every_pair(n: int, m: int, batch: int):
    """Every (probe row, build row) of n x m, probe row by probe row, as
    index arrays of at most ``batch`` pairs."""
    lo = np.zeros(n, np.int64)
    hi = np.full(n, m, np.int64)
    state = np.array([0, -1], np.int64)
    out_p = np.empty(batch, np.int64)
    out_b = np.empty(batch, np.int64)
    token = current_cancel()
    while state[0] < n:
        if token is not None:
            token.check()
        cnt = range_pairs(lo, hi, _EMPTY, True, _EMPTY, _EMPTY, NONE, _NO_SKIP, False, state,
                          out_p, out_b, True, WORK_BUDGET)
        if cnt:
            yield out_p[:cnt].copy(), out_b[:cnt].copy()


def _take_rows(block: Block, keep: np.ndarray) -> Block:
    kept = int(np.count_nonzero(keep))
    return Block([take_vector(c, keep, kept) for c in block.columns], kept)


_ZERO = {}


def _placeholder(t, n: int) -> Vector:
    """n rows of type t that nothing reads: a zero-stride view of one zero
    value (no memory), never NULL."""
    if t.is_nested:
        one = np.zeros(1, np.int64) if t.id == "STRUCT" else np.zeros((1, 2), np.int64)
        return Vector(t, np.broadcast_to(one, (n,) + one.shape[1:]), None, None,
                      children=[empty_vector(ct) for _, ct in t.children])
    if t.is_string:
        return Vector(t, np.broadcast_to(np.zeros((1, 2), np.uint64), (n, 2)), None,
                      np.zeros(0, np.uint8))
    dtype = t.numpy_dtype
    zero = _ZERO.get(dtype)
    if zero is None:
        zero = _ZERO[dtype] = np.zeros(1, dtype)
    return Vector(t, np.broadcast_to(zero, (n,)))


def _placeholder_block(types, n: int) -> Block:
    return Block([_placeholder(t, n) for t in types], n)


def unmatched_build_block(table: NestedLoopTable, left_types) -> Block:
    """Right/full join tail: build rows never matched, NULLs on the left."""
    rest = table.matched == 0
    rb = _take_rows(table.block, rest)
    return Block([null_vector(t, rb.n) for t in left_types] + rb.columns, rb.n)
