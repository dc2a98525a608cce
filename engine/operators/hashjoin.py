"""Hash join: a build sink over Join.right and a probe operator over Join.left.

Kinds: inner, left, semi, anti and cross stream through the probe; right and
full also emit the build rows no probe row matched (engine.executor appends
them after the probe pipeline via ``unmatched_build_block``).  Joins without
equality keys compare every pair (nested loop), batched.

Subquery kinds (planner.logical.Join documents them): ``mark`` appends a
BOOLEAN column "some partner exists"; ``mark_in`` is the three-valued IN
(key 0 is the IN comparison, a NULL on either side of it makes a missing
match NULL instead of FALSE); ``single`` is a left join that raises when a
probe row has more than one partner (a scalar subquery's rows).
"""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector
from engine.errors import ExecutionError, UnsupportedFeatureError
from engine.kernels.hashing import hash_keys, normalize_keys
from engine.kernels.hashtable import join_build, join_probe, join_probe_exists, table_size
from engine.operators.collect import CollectSink
from engine.operators.rows import take_block
from engine.pipeline import Operator
from planner.types import BOOLEAN

SUPPORTED_KINDS = ("inner", "left", "right", "full", "semi", "anti", "cross",
                   "mark", "mark_in", "single")
_EXISTS_KINDS = ("semi", "anti", "mark")
SCALAR_SUBQUERY_ERROR = "More than one row returned by a subquery used as an expression"


def null_vector(t, n: int) -> Vector:
    """n NULLs of type t."""
    nulls = np.ones(n, np.uint8)
    if t.is_string:
        return Vector(t, np.zeros((n, 2), np.uint64), nulls, np.zeros(0, np.uint8))
    if t.numpy_dtype == object:
        return Vector(t, np.full(n, 0, dtype=object), nulls)
    return Vector(t, np.zeros(n, t.numpy_dtype), nulls)


def _evaluate_all(exprs, block: Block) -> list[Vector]:
    from engine.expr import evaluate
    from planner.expressions import ColumnRef
    return [block.columns[e.index] if isinstance(e, ColumnRef) else evaluate(e, block)
            for e in exprs]


class JoinTable:
    """The materialized build side plus a chained hash table over its keys."""

    def __init__(self, block: Block, key_exprs, memory=None, reserved: int = 0):
        self.block = block
        self.key_exprs = list(key_exprs)
        self.memory = memory
        self.reserved = reserved
        n = block.n
        self.matched = np.zeros(n, np.uint8)    # right/full: build rows that found a partner
        self.keyed = bool(key_exprs)
        if not self.keyed:
            return
        self.keys = normalize_keys(_evaluate_all(key_exprs, block), n, null_word=False)
        self.hashes = hash_keys(self.keys)
        skip = self.keys.any_null if self.keys.any_null is not None else np.zeros(n, np.uint8)
        size = table_size(n)
        extra = size * 8 + n * 8 + self.hashes.nbytes + self.keys.keys.nbytes
        if memory is not None:
            memory.reserve(extra, "hash join build table")
        self.reserved += extra
        self.heads = np.full(size, -1, np.int64)
        self.nxt = np.full(n, -1, np.int64)
        join_build(self.hashes, skip, self.heads, self.nxt)

    def release(self):
        if self.memory is not None:
            self.memory.release(self.reserved)
            self.reserved = 0


class HashBuildSink(CollectSink):
    """Collects the build side; merge() returns a JoinTable."""

    def __init__(self, types, key_exprs, memory=None):
        super().__init__(types, memory, "hash join build side")
        self.key_exprs = key_exprs

    def merge(self, locals_: list) -> JoinTable:
        block = super().merge(locals_)
        return JoinTable(block, self.key_exprs, self.memory, self.reserved)


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

    def _init_mark_in(self):
        """Key 0's NULLs on the build side, and (when the IN is correlated) a
        table over the other keys that finds each probe row's candidates."""
        t = self.table
        self.build_rows = t.block.n
        key0 = _evaluate_all(t.key_exprs[:1], t.block)[0] if t.block.n else None
        self.build_null0 = (np.zeros(t.block.n, np.uint8) if key0 is None or key0.nulls is None
                            else key0.nulls.astype(np.uint8))
        self.correlated = len(self.left_keys) > 1 or self.residual is not None
        self.candidates = JoinTable(t.block, t.key_exprs[1:]) if self.correlated else None

    # -- candidate pairs ---------------------------------------------------
    def _pairs(self, block: Block, table: JoinTable = None, left_keys=None, exists: bool = True):
        t = self.table if table is None else table
        left_keys = self.left_keys if left_keys is None else left_keys
        m = t.block.n
        if m == 0:
            return
        if not t.keyed:
            per = max(1, self.batch // m)
            for i0 in range(0, block.n, per):
                i1 = min(i0 + per, block.n)
                yield (np.repeat(np.arange(i0, i1, dtype=np.int64), m),
                       np.tile(np.arange(m, dtype=np.int64), i1 - i0))
            return
        keys = normalize_keys(_evaluate_all(left_keys, block), block.n, null_word=False)
        hashes = hash_keys(keys)
        skip = keys.any_null if keys.any_null is not None else np.zeros(block.n, np.uint8)
        if exists and self.kind in _EXISTS_KINDS + ("mark_in",) and self.residual is None:
            matched = np.empty(block.n, np.uint8)
            join_probe_exists(hashes, keys.keys, keys.heap, skip, t.hashes, t.keys.keys,
                              t.keys.heap, keys.kw, t.heads, t.nxt, matched)
            yield matched
            return
        resume = np.array([0, -1], np.int64)
        out_p = np.empty(self.batch, np.int64)
        out_b = np.empty(self.batch, np.int64)
        while resume[0] < block.n:
            cnt = join_probe(hashes, keys.keys, keys.heap, skip, t.hashes, t.keys.keys,
                             t.keys.heap, keys.kw, t.heads, t.nxt, resume, out_p, out_b)
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
            if self.residual is not None or self.kind not in _EXISTS_KINDS + ("mark_in",):
                joined = Block(take_block(block, p).columns + take_block(table.block, b).columns,
                               len(p))
            if self.residual is not None:
                mask = np.asarray(evaluate_predicate(self.residual, joined), dtype=bool)
                if not mask.all():
                    p, b = p[mask], b[mask]
                    joined = take_block(joined, mask)
            yield (p, b), joined

    def process(self, block: Block) -> list[Block]:
        kind = self.kind
        if kind == "mark_in":
            return [self._mark_in(block)]
        t = self.table
        out: list[Block] = []
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
                out.append(joined)
        if kind == "semi":
            keep = matched.astype(bool)
            return [take_block(block, keep)] if keep.any() else []
        if kind == "anti":
            keep = ~matched.astype(bool)
            return [take_block(block, keep)] if keep.any() else []
        if kind == "mark":
            return [Block(block.columns + [Vector(BOOLEAN, matched.astype(np.bool_))], block.n)]
        if kind in ("left", "full", "single"):
            rest = ~matched.astype(bool)
            if rest.any():
                lb = take_block(block, rest)
                out.append(Block(lb.columns + [null_vector(ty, lb.n) for ty in self.build_types],
                                 lb.n))
        return out

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
