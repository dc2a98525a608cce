"""Per-aggregate accumulators over dense group ids (flat numpy arrays).

Each accumulator supports update(gid, vector, n_groups), absorb(other,
mapping, n_groups, rows) to merge a thread-local one (group g of other, for
g in rows or all of them, goes into group mapping[g]; a partitioned merge
passes one partition's groups), and finalize(n_groups) -> Vector of the
AggregateCall's type.
"""

from __future__ import annotations

import copy

import numpy as np

from engine.block import Int64WideVector, Vector
from engine.errors import ArithmeticOverflowError, UnsupportedFeatureError
from engine.kernels import aggregates as K
from engine.kernels.sort import float_from_sort_keys, float_sort_keys, gather_strings


def _grow(a: np.ndarray, n: int, fill=0) -> np.ndarray:
    if len(a) >= n:
        return a
    out = np.full((max(n, 2 * len(a)),) + a.shape[1:], fill, a.dtype)
    out[:len(a)] = a
    return out


_NO_NULLS = np.zeros(1, np.uint8)


def _rows(mapping: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """The other accumulator's groups to absorb: rows, or all it has."""
    return np.arange(len(mapping), dtype=np.int64) if rows is None else rows


def _null_arg(vec: Vector | None) -> tuple[np.ndarray, bool]:
    """(nulls, has_nulls) for the *_update kernels that skip the mask when
    there are no NULLs (no per-block allocation)."""
    if vec is None or vec.nulls is None:
        return _NO_NULLS, False
    return np.ascontiguousarray(vec.nulls, dtype=np.uint8), True


def _nulls(vec: Vector | None, n: int) -> np.ndarray:
    if vec is None or vec.nulls is None:
        return np.zeros(n, np.uint8)
    return np.ascontiguousarray(vec.nulls, dtype=np.uint8)


class CountAcc:
    """count(*) (vector None) and count(x)."""
    STATE = ("counts",)

    def __init__(self, call):
        self.call = call
        self.counts = np.zeros(16, np.int64)

    def update(self, gid, vec, ng):
        self.counts = _grow(self.counts, ng)
        nulls, has_nulls = _null_arg(vec)
        K.count_rows_update(gid, nulls, has_nulls, self.counts)

    def absorb(self, other, mapping, ng, rows=None):
        self.counts = _grow(self.counts, ng)
        K.absorb_counts(self.counts, mapping, _rows(mapping, rows), other.counts)

    def finalize(self, ng):
        return Vector(self.call.type, self.counts[:ng].astype(self.call.type.numpy_dtype))


class SumIntAcc:
    """sum/avg of integers and decimals: exact (int64 plus a 2**64 carry)."""
    STATE = ("acc", "carry", "cnt")

    def __init__(self, call, arg_type):
        self.call, self.arg_type = call, arg_type
        self.acc = np.zeros(16, np.int64)
        self.carry = np.zeros(16, np.int64)
        self.cnt = np.zeros(16, np.int64)

    def _ensure(self, ng):
        self.acc = _grow(self.acc, ng)
        self.carry = _grow(self.carry, ng)
        self.cnt = _grow(self.cnt, ng)

    def update(self, gid, vec, ng):
        self._ensure(ng)
        nulls, has_nulls = _null_arg(vec)
        K.sum_count_int_update(gid, np.ascontiguousarray(vec.data, dtype=np.int64), nulls,
                               has_nulls, self.acc, self.carry, self.cnt)

    def absorb(self, other, mapping, ng, rows=None):
        self._ensure(ng)
        K.absorb_sum_count_int(self.acc, self.carry, self.cnt, mapping, _rows(mapping, rows),
                               other.acc, other.carry, other.cnt)

    def exact(self, ng) -> np.ndarray:
        """Exact sums as an object array of Python ints."""
        acc = self.acc[:ng].astype(object)
        carry = self.carry[:ng]
        if carry.any():
            acc = acc + carry.astype(object) * (1 << 64)
        return acc

    def finalize(self, ng):
        t = self.call.type
        cnt = self.cnt[:ng]
        nulls = (cnt == 0).astype(np.uint8)
        if self.call.func == "avg":
            scale = 10.0 ** self.arg_type.scale if self.arg_type.is_decimal else 1.0
            if not self.carry[:ng].any() and np.abs(self.acc[:ng]).max(initial=0) < 2 ** 53:
                total = self.acc[:ng].astype(np.float64)
            else:
                total = np.array([float(v) for v in self.exact(ng)], np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                vals = total / np.maximum(cnt, 1) / scale
            return Vector(t, vals.astype(t.numpy_dtype), nulls if nulls.any() else None)
        if t.numpy_dtype == object:
            if not self.carry[:ng].any():        # every sum fits int64: no Python ints
                vals = self.acc[:ng].copy()
                vals[cnt == 0] = 0
                return Int64WideVector(t, vals, nulls if nulls.any() else None)
            vals = self.exact(ng)
            vals[cnt == 0] = 0          # NULL slots hold a gap value
        else:
            if self.carry[:ng].any():
                raise ArithmeticOverflowError(f"{self.call!r} overflows {t}")
            vals = self.acc[:ng].astype(t.numpy_dtype)
        return Vector(t, vals, nulls if nulls.any() else None)


def share_state(acc, primary) -> None:
    """Make ``acc`` (sum or avg) see the state ``primary`` accumulated for
    the same argument: sum(x) and avg(x) keep the same sums and counts."""
    for name in primary.STATE:
        setattr(acc, name, getattr(primary, name))


class SumFloatAcc:
    STATE = ("acc", "cnt")

    def __init__(self, call):
        self.call = call
        self.acc = np.zeros(16, np.float64)
        self.cnt = np.zeros(16, np.int64)

    def update(self, gid, vec, ng):
        self.acc = _grow(self.acc, ng)
        self.cnt = _grow(self.cnt, ng)
        nulls, has_nulls = _null_arg(vec)
        K.sum_count_float_update(gid, np.ascontiguousarray(vec.data, dtype=np.float64), nulls,
                                 has_nulls, self.acc, self.cnt)

    def absorb(self, other, mapping, ng, rows=None):
        self.acc = _grow(self.acc, ng)
        self.cnt = _grow(self.cnt, ng)
        K.absorb_sum_count_float(self.acc, self.cnt, mapping, _rows(mapping, rows), other.acc,
                                 other.cnt)

    def finalize(self, ng):
        cnt = self.cnt[:ng]
        vals = self.acc[:ng].copy()
        if self.call.func == "avg":
            vals = vals / np.maximum(cnt, 1)
        nulls = (cnt == 0).astype(np.uint8)
        return Vector(self.call.type, vals.astype(self.call.type.numpy_dtype),
                      nulls if nulls.any() else None)


class SumObjectAcc:
    """sum/avg over HUGEINT, wide decimals or UBIGINT: exact.  Values held as
    int64 (an Int64WideVector: wide-decimal arithmetic whose results fit,
    Q9's ``amount``) are summed by the int64 kernel with a 2**64 carry, as
    SumIntAcc does; only values held as Python ints go through Python."""
    STATE = ("acc", "cnt", "iacc", "icarry")

    def __init__(self, call, arg_type):
        self.call, self.arg_type = call, arg_type
        self.acc = np.zeros(16, object)         # sums of Python-int inputs
        self.cnt = np.zeros(16, np.int64)
        self.iacc = np.zeros(16, np.int64)      # sums of int64 inputs, and their carries
        self.icarry = np.zeros(16, np.int64)

    def _ensure(self, ng):
        self.acc = _grow(self.acc, ng, 0)
        self.cnt = _grow(self.cnt, ng)
        self.iacc = _grow(self.iacc, ng)
        self.icarry = _grow(self.icarry, ng)

    def update(self, gid, vec, ng):
        self._ensure(ng)
        if isinstance(vec, Int64WideVector):
            nulls, has_nulls = _null_arg(vec)
            K.sum_count_int_update(gid, np.ascontiguousarray(vec.ints, dtype=np.int64), nulls,
                                   has_nulls, self.iacc, self.icarry, self.cnt)
            return
        keep = _nulls(vec, len(gid)) == 0
        g = gid[keep]
        np.add.at(self.acc, g, np.array([int(v) for v in vec.data[keep]], dtype=object))
        np.add.at(self.cnt, g, 1)

    def absorb(self, other, mapping, ng, rows=None):
        self._ensure(ng)
        rows = _rows(mapping, rows)
        np.add.at(self.acc, mapping[rows], other.acc[rows])
        K.absorb_sum_count_int(self.iacc, self.icarry, self.cnt, mapping, rows,
                               other.iacc, other.icarry, other.cnt)

    def _int_sums(self, ng):
        """The int64 inputs' sums, exact (Python ints only when carried)."""
        carry = self.icarry[:ng]
        if not carry.any():
            return self.iacc[:ng]
        return self.iacc[:ng].astype(object) + carry.astype(object) * (1 << 64)

    def finalize(self, ng):
        cnt = self.cnt[:ng]
        nulls = (cnt == 0).astype(np.uint8)
        t = self.call.type
        ints = self._int_sums(ng)
        python = self.acc[:ng]
        if ints.dtype != object and not python.any():      # no Python int anywhere
            if self.call.func == "avg":
                scale = 10.0 ** self.arg_type.scale if self.arg_type.is_decimal else 1.0
                with np.errstate(invalid="ignore", divide="ignore"):
                    vals = ints.astype(np.float64) / np.maximum(cnt, 1) / scale
                return Vector(t, vals, nulls if nulls.any() else None)
            if t.numpy_dtype == object:
                vals = ints.copy()
                vals[cnt == 0] = 0
                return Int64WideVector(t, vals, nulls if nulls.any() else None)
        total = python + ints.astype(object)
        check_total(self.call, self.arg_type, total, cnt)
        if self.call.func == "avg":
            scale = 10 ** self.arg_type.scale if self.arg_type.is_decimal else 1
            vals = np.array([float(a) / c / scale if c else 0.0
                             for a, c in zip(total, cnt)], np.float64)
            return Vector(t, vals, nulls if nulls.any() else None)
        vals = total.copy()
        vals[cnt == 0] = 0
        if t.numpy_dtype != object:
            vals = np.array(list(vals)).astype(t.numpy_dtype)
        return Vector(t, vals, nulls if nulls.any() else None)


def check_total(call, arg_type, total, cnt) -> None:
    """DuckDB's overflow errors of exact sums held as Python ints: a decimal
    sum past DECIMAL(38), a HUGEINT sum past 128 bits, and avg of decimals
    or HUGEINT, which DuckDB adds up in a HUGEINT."""
    t = call.type
    if call.func == "sum":
        limit = 10 ** 38 if t.is_decimal else 2 ** 127 if t.id == "HUGEINT" else None
    else:
        limit = 2 ** 127 if arg_type.is_decimal or arg_type.id == "HUGEINT" else None
    if limit is None or not len(total):
        return
    live = total[cnt > 0]
    if len(live) and (live.max() >= limit or live.min() <= -limit):
        raise ArithmeticOverflowError(f"Overflow in {call.func.upper()} of {arg_type}: the "
                                      f"result does not fit in {t if call.func == 'sum' else 'HUGEINT'}")


class MinMaxAcc:
    """min/max of fixed-width values via order-preserving int64/uint64 keys."""
    STATE = ("acc", "has")

    def __init__(self, call, arg_type):
        self.call, self.arg_type = call, arg_type
        self.is_max = call.func == "max"
        dt = arg_type.numpy_dtype
        self.kind = "f" if dt.kind == "f" else ("u" if dt == np.uint64 else "i")
        self.acc = np.zeros(16, np.uint64 if self.kind in "fu" else np.int64)
        self.has = np.zeros(16, np.uint8)

    def _keys(self, data):
        if self.kind == "f":
            return float_sort_keys(data)
        if self.kind == "u":
            return np.ascontiguousarray(data, dtype=np.uint64)
        return np.ascontiguousarray(data, dtype=np.int64)

    def _apply(self, gid, keys, nulls, ng):
        self.acc = _grow(self.acc, ng)
        self.has = _grow(self.has, ng)
        if self.kind == "i":
            K.minmax_int_update(gid, keys, nulls, self.acc, self.has, self.is_max)
        else:
            K.minmax_uint_update(gid, keys, nulls, self.acc, self.has, self.is_max)

    def update(self, gid, vec, ng):
        self._apply(gid, self._keys(vec.data), _nulls(vec, len(gid)), ng)

    def absorb(self, other, mapping, ng, rows=None):
        self.acc = _grow(self.acc, ng)
        self.has = _grow(self.has, ng)
        K.absorb_minmax(self.acc, self.has, mapping, _rows(mapping, rows), other.acc, other.has,
                        self.is_max)

    def finalize(self, ng):
        t = self.call.type
        keys = self.acc[:ng]
        vals = float_from_sort_keys(keys) if self.kind == "f" else keys
        nulls = (self.has[:ng] == 0).astype(np.uint8)
        return Vector(t, vals.astype(t.numpy_dtype), nulls if nulls.any() else None)


class MinMaxStringAcc:
    """min/max of strings: best views per group over an owned heap."""
    STATE = ("views", "has")

    def __init__(self, call):
        self.call = call
        self.is_max = call.func == "max"
        self.views = np.zeros((16, 2), np.uint64)
        self.heap = np.zeros(0, np.uint8)
        self.has = np.zeros(16, np.uint8)

    def _offer(self, groups, cviews, cheap, ng):
        """Candidates (group, string) -> replace where better."""
        self.views = _grow(self.views, ng)
        self.has = _grow(self.has, ng)
        if len(groups) == 0:
            return
        rep = np.empty(len(groups), np.uint8)
        K.string_replace_mask(groups, cviews, cheap, self.views, self.heap, self.has,
                              self.is_max, rep)
        sel = np.flatnonzero(rep)
        if len(sel) == 0:
            return
        nv, nh = gather_strings(cviews, cheap, sel)
        long_rows = (nv[:, 0] & np.uint64(0xFFFFFFFF)) > 12
        nv[long_rows, 1] += np.uint64(len(self.heap))
        self.heap = np.concatenate([self.heap, nh]) if len(nh) else self.heap
        self.views[groups[sel]] = nv
        self.has[groups[sel]] = 1
        if len(self.heap) > (1 << 20):
            self._compact(ng)

    def _compact(self, ng):
        idx = np.arange(ng, dtype=np.int64)
        v, h = gather_strings(self.views[:ng], self.heap, idx)
        self.views[:ng] = v
        self.heap = h

    def update(self, gid, vec, ng):
        best = np.full(ng, -1, np.int64)
        views = np.ascontiguousarray(vec.data, dtype=np.uint64).reshape(-1, 2)
        heap = vec.heap if vec.heap is not None else np.zeros(0, np.uint8)
        K.best_string_rows(gid, views, heap, _nulls(vec, len(gid)), best, self.is_max)
        groups = np.flatnonzero(best >= 0).astype(np.int64)
        self._offer(groups, np.ascontiguousarray(views[best[groups]]), heap, ng)

    def absorb(self, other, mapping, ng, rows=None):
        rows = _rows(mapping, rows)
        have = rows[other.has[rows] != 0]
        self._offer(mapping[have].astype(np.int64),
                    np.ascontiguousarray(other.views[have]), other.heap, ng)

    def finalize(self, ng):
        self.views = _grow(self.views, ng)
        self.has = _grow(self.has, ng)
        v, h = gather_strings(self.views[:ng], self.heap, np.arange(ng, dtype=np.int64))
        nulls = (self.has[:ng] == 0).astype(np.uint8)
        return Vector(self.call.type, v, nulls if nulls.any() else None, h)


class MinMaxObjectAcc:
    """min/max over object storage (HUGEINT, wide decimals): Python (rare)."""
    STATE = ("acc",)

    def __init__(self, call):
        self.call = call
        self.is_max = call.func == "max"
        self.acc = np.full(16, None, object)

    def update(self, gid, vec, ng):
        self.acc = _grow(self.acc, ng, None)
        nulls = _nulls(vec, len(gid))
        pick = max if self.is_max else min
        if isinstance(vec, Int64WideVector):        # reduce per group on int64 first
            keep = nulls == 0
            g, v = gid[keep], vec.ints[keep]
            groups = np.unique(g)
            best = np.zeros(ng, np.int64)
            best[g] = v                                 # some value of each group
            (np.maximum if self.is_max else np.minimum).at(best, g, v)
            for gg, val in zip(groups.tolist(), best[groups].tolist()):
                cur = self.acc[gg]
                self.acc[gg] = val if cur is None else pick(cur, val)
            return
        for g, v, isnull in zip(gid, vec.data, nulls):
            if not isnull:
                cur = self.acc[g]
                self.acc[g] = v if cur is None else pick(cur, v)

    def absorb(self, other, mapping, ng, rows=None):
        self.acc = _grow(self.acc, ng, None)
        pick = max if self.is_max else min
        rows = _rows(mapping, rows)
        for g, v in zip(mapping[rows], other.acc[rows]):
            if v is not None:
                cur = self.acc[g]
                self.acc[g] = v if cur is None else pick(cur, v)

    def finalize(self, ng):
        vals = self.acc[:ng].copy()
        nulls = np.array([v is None for v in vals], np.uint8)
        vals[nulls.astype(bool)] = 0
        return Vector(self.call.type, vals, nulls if nulls.any() else None)


def moved_out(acc, dest: np.ndarray, n: int):
    """An accumulator whose group dest[g] holds the state of acc's group g
    (g < n): one local's states in partition order (a partitioned merge).
    ``acc`` gives up each state array as soon as it was moved (it is
    unusable afterwards), so the states are never held twice."""
    out = copy.copy(acc)
    for name in acc.STATE:
        a = getattr(acc, name)
        moved = np.empty((n,) + a.shape[1:], a.dtype)
        moved[dest] = a[:n]
        setattr(out, name, moved)
        setattr(acc, name, None)
        del a
    return out


def sliced_state(acc, lo: int, hi: int):
    """An accumulator over acc's groups lo..hi-1 (as 0..hi-lo-1), sharing
    its state arrays (views): one slice of a result finished apart."""
    out = copy.copy(acc)
    for name in acc.STATE:
        setattr(out, name, getattr(acc, name)[lo:hi])
    return out


def state_bytes(acc, n: int) -> int:
    """Bytes of ``n`` groups' state (object slots count 8)."""
    return n * sum(getattr(acc, name).dtype.itemsize * int(np.prod(getattr(acc, name).shape[1:]))
                   for name in acc.STATE)


def make_accumulator(call, arg_type):
    """The accumulator for one AggregateCall (arg_type None for count_star)."""
    f = call.func
    if f in ("count_star", "count"):
        return CountAcc(call)
    if f in ("sum", "avg"):
        if arg_type.is_float:
            return SumFloatAcc(call)
        if arg_type.numpy_dtype == object or arg_type.id == "UBIGINT":
            return SumObjectAcc(call, arg_type)
        if arg_type.is_integer or arg_type.is_decimal or arg_type.id == "BOOLEAN":
            return SumIntAcc(call, arg_type)
        raise UnsupportedFeatureError(f"{f} over {arg_type}")
    if f in ("min", "max"):
        if arg_type.is_string:
            return MinMaxStringAcc(call)
        if arg_type.numpy_dtype == object:
            return MinMaxObjectAcc(call)
        return MinMaxAcc(call, arg_type)
    raise UnsupportedFeatureError(f"aggregate function {f!r}")
