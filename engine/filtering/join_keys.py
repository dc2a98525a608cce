"""Join key filters: sideways information passing from a hash join's build
side into the scan that feeds its probe side.

Once an inner or semi join's table is built, a row of the probe side whose
key is not among the build keys cannot produce output.  The scan under the
probe (reached through projections, filters and other probing joins, with
the key column unchanged) tests the key column right after its restricted
columns and decodes the other columns only for rows that pass, so TPC-H
Q3 at SF10 decodes and probes ~0.3M of 32M lineitem rows.  The filter is
the key range [min, max] of the build side, and a bitmap over that range
when it is at most BITS_PER_KEY bits per build key (dense keys, the usual
case for surrogate keys), else an exact hash set of the keys (Q18's 57
order keys spread over the whole range); integer-like keys only
(integers, dates, timestamps, decimals held as int64).  A filter that lets most rows through
turns itself off: it costs a pass per block and saves nothing then."""

from __future__ import annotations

import threading

import numpy as np

from engine.errors import MemoryLimitError
from engine.kernels.join_filter import (BITMAP, KEY_SET, RANGE_ONLY, and_key_member,
                                        fill_key_bitmap, fill_key_set)
from planner import logical as L
from planner.expressions import ColumnRef

BITS_PER_KEY = 256           # a bitmap of at most this many bits per build key
MAX_BITMAP_BITS = 1 << 32    # 512 MiB: larger ranges get a hash set
MAX_SET_KEYS = 1 << 24       # more build rows than this: the min/max test only
TAG_BITS_PER_SLOT_LOG2 = 3   # a key set's tag bitmap: 8 bits per slot
# after this many rows tested, a filter keeping more than KEEP_TO_DISABLE
# of them turns off
TRIAL_ROWS = 1 << 18
KEEP_TO_DISABLE = 0.85
_INT_KINDS = "iu"
_NO_BITS = np.zeros(1, np.uint64)          # placeholders of the modes not in use
_NO_SLOTS = np.zeros(1, np.int64)
_NO_USED = np.zeros(1, np.uint8)
_NO_NULLS = np.zeros(1, np.uint8)


class JoinKeyFilter:
    """The build keys of one join, tested against a probe column's values:
    the range [lo, hi] alone (RANGE_ONLY), a bitmap over it (BITMAP) or an
    open-addressing set (KEY_SET, ``shift`` = 64 - log2 of its slots) with
    a bitmap of the keys' hash tags in ``bits`` (8 bits a slot: most keys
    not in the set are told by one bit, without probing it)."""

    def __init__(self, lo: int, hi: int, mode: int = RANGE_ONLY, bits=_NO_BITS, shift: int = 0,
                 slots=_NO_SLOTS, used=_NO_USED, memory=None, reserved: int = 0,
                 tag_shift: int = 0):
        self.lo, self.hi, self.mode = lo, hi, mode
        self.bits, self.shift, self.slots, self.used = bits, shift, slots, used
        self.tag_shift = tag_shift
        self.memory = memory
        self.reserved = reserved if memory is not None else 0
        self.active = True
        self.tested = 0
        self.kept = 0
        self._lock = threading.Lock()

    @classmethod
    def from_keys(cls, vec, memory=None) -> "JoinKeyFilter | None":
        """The filter of a build key vector, or None when its values are not
        plain integers."""
        data = _int_values(vec)
        if data is None:
            return None
        nulls = vec.nulls
        valid = data if nulls is None else data[nulls == 0]
        if len(valid) == 0:
            return cls(1, 0)                        # no key: no probe row passes
        lo, hi = int(valid.min()), int(valid.max())
        span = hi - lo + 1
        has_nulls = nulls is not None
        nulls = nulls if has_nulls else _NO_NULLS
        if span <= min(BITS_PER_KEY * len(valid) + (1 << 20), MAX_BITMAP_BITS):
            nbytes = 8 * ((span + 63) // 64)
            if not _reserve(memory, nbytes):
                return cls(lo, hi)
            bits = np.zeros((span + 63) // 64, np.uint64)
            fill_key_bitmap(data, nulls, has_nulls, lo, bits)
            return cls(lo, hi, BITMAP, bits=bits, memory=memory, reserved=nbytes)
        if len(valid) > MAX_SET_KEYS:
            return cls(lo, hi)
        size_bits = max(int(2 * len(valid) - 1).bit_length(), 4)     # >= 2 slots per key
        tag_bits = size_bits + TAG_BITS_PER_SLOT_LOG2
        nbytes = (9 << size_bits) + (1 << tag_bits) // 8
        if not _reserve(memory, nbytes):
            return cls(lo, hi)
        slots = np.zeros(1 << size_bits, np.int64)
        used = np.zeros(1 << size_bits, np.uint8)
        tags = np.zeros((1 << tag_bits) // 64, np.uint64)
        fill_key_set(data, nulls, has_nulls, 64 - size_bits, slots, used, tags, 64 - tag_bits)
        return cls(lo, hi, KEY_SET, bits=tags, shift=64 - size_bits, slots=slots, used=used,
                   memory=memory, reserved=nbytes, tag_shift=64 - tag_bits)

    def and_into(self, vec, mask: np.ndarray, first: bool) -> int | None:
        """AND "the key may have a partner" into the bool ``mask`` (all rows
        when ``first``); the rows left, or None when the vector's values are
        not plain integers (nothing done)."""
        data = _int_values(vec)
        if data is None:
            return None
        nulls = vec.nulls
        before = len(mask) if first else int(np.count_nonzero(mask))
        kept = and_key_member(data, _NO_NULLS if nulls is None else nulls, nulls is not None,
                              self.lo, self.hi, self.mode, self.bits, self.shift, self.slots,
                              self.used, self.tag_shift, mask, first)
        with self._lock:
            self.tested += before
            self.kept += kept
            if self.tested >= TRIAL_ROWS and self.kept > KEEP_TO_DISABLE * self.tested:
                self.active = False
        return kept

    def release(self) -> None:
        if self.reserved:
            self.memory.release(self.reserved)
            self.reserved = 0
        self.mode, self.bits, self.slots, self.used = RANGE_ONLY, _NO_BITS, _NO_SLOTS, _NO_USED


def _int_values(vec) -> np.ndarray | None:
    """The vector's values when they are a plain 1-d signed (or narrow
    unsigned) integer array the kernels compare as int64, else None."""
    data = vec.data
    if not isinstance(data, np.ndarray) or data.ndim != 1 or data.dtype.kind not in _INT_KINDS \
            or data.dtype == np.uint64:
        return None
    return data


def _reserve(memory, nbytes: int) -> bool:
    """Reserve a filter's bytes; False when they do not fit (no filter)."""
    if memory is None:
        return True
    try:
        memory.reserve(nbytes, "join key filter")
        return True
    except MemoryLimitError:
        return False


def scan_column(node: L.Node, index: int, scan: L.Scan, streams, path: list | None = None):
    """The column of ``scan`` that column ``index`` of ``node`` is, unchanged,
    when node's rows stream from that scan (through projections of plain
    columns, filters and joins ``streams(join)`` says probe their left
    input); None otherwise.  ``path`` gets the nodes passed (node included,
    the scan not)."""
    while node is not scan:
        if path is not None:
            path.append(node)
        if isinstance(node, L.Project):
            expr = node.exprs[index]
            if not isinstance(expr, ColumnRef):
                return None
            index, node = expr.index, node.child
        elif isinstance(node, L.Filter) and not isinstance(node.child, L.Aggregate):
            node = node.child
        elif isinstance(node, L.Join) and streams(node) and index < len(node.left.schema):
            node = node.left
        else:
            return None
    return index


def attach_join_filter(probe: L.Node, probe_keys, build_keys, table, source, streams,
                       memory=None) -> list:
    """Give the scan under a join's probe input ``probe`` (``source``, when
    it is a ScanSource) a filter of the built ``table``'s keys on every
    probe key that reads a scan column unchanged and has its build key's
    integer type (Q9's lineitem: l_suppkey keeps every row and turns off,
    l_partkey keeps 5%).  Only for joins where a probe row without a partner
    yields nothing: inner and semi joins, and semi/anti joins built on
    their outer rows (the subquery's rows probe).  Returns the plan nodes
    between the join and the scan (their rows are fewer now: EXPLAIN
    ANALYZE says so), empty when no filter was attached."""
    from engine.expr import evaluate
    from engine.operators.scan import ScanSource
    if not isinstance(source, ScanSource):
        return []
    out: list = []
    for left, right in zip(probe_keys, build_keys):
        if not isinstance(left, ColumnRef):
            continue
        path: list = []
        col = scan_column(probe, left.index, source.node, streams, path)
        if col is None or source.types[col] != right.type:
            continue
        f = JoinKeyFilter.from_keys(evaluate(right, table.block), memory)
        if f is not None:               # every key: the ones that keep most rows turn off
            source.add_join_filter(col, f)
            out = path
    return out
