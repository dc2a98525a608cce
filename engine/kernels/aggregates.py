"""Aggregate update kernels over group ids and flat accumulator arrays."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.strings import compare_strings


@njit(nogil=True, cache=True)
def sum_int_update(gid, vals, nulls, acc, carry):
    """acc[g] + carry[g] * 2**64 += vals (exact: wrap-around goes to carry)."""
    for i in range(gid.shape[0]):
        if nulls[i]:
            continue
        g = gid[i]
        a = acc[g]
        v = vals[i]
        r = a + v
        if ((a ^ r) & (v ^ r)) < 0:
            carry[g] += 1 if v > 0 else -1
        acc[g] = r


@njit(nogil=True, cache=True)
def sum_count_int_update(gid, vals, nulls, has_nulls, acc, carry, cnt):
    """sum_int_update and count_update in one pass; nulls is read only when
    has_nulls (pass any uint8 array otherwise)."""
    for i in range(gid.shape[0]):
        if has_nulls and nulls[i]:
            continue
        g = gid[i]
        a = acc[g]
        v = vals[i]
        r = np.int64(np.uint64(a) + np.uint64(v))
        if ((a ^ r) & (v ^ r)) < 0:
            carry[g] += 1 if v > 0 else -1
        acc[g] = r
        cnt[g] += 1


@njit(nogil=True, cache=True)
def sum_count_float_update(gid, vals, nulls, has_nulls, acc, cnt):
    for i in range(gid.shape[0]):
        if has_nulls and nulls[i]:
            continue
        g = gid[i]
        acc[g] += vals[i]
        cnt[g] += 1


@njit(nogil=True, cache=True)
def count_rows_update(gid, nulls, has_nulls, counts):
    """counts[g] += rows of group g (non-NULL rows when has_nulls)."""
    for i in range(gid.shape[0]):
        if not (has_nulls and nulls[i]):
            counts[gid[i]] += 1


@njit(nogil=True, cache=True)
def count_update(gid, nulls, counts):
    for i in range(gid.shape[0]):
        if not nulls[i]:
            counts[gid[i]] += 1


@njit(nogil=True, cache=True)
def sum_float_update(gid, vals, nulls, acc):
    for i in range(gid.shape[0]):
        if not nulls[i]:
            acc[gid[i]] += vals[i]


@njit(nogil=True, cache=True)
def minmax_int_update(gid, vals, nulls, acc, has, is_max):
    """Min or max of int64 (or uint64) values per group; has[g] = 1 once a
    value was seen.  (The fold is written out here and in absorb_minmax: as
    a shared @njit helper, even inlined, it made this loop ~10x slower.)"""
    for i in range(gid.shape[0]):
        if nulls[i]:
            continue
        g = gid[i]
        v = vals[i]
        if not has[g]:
            acc[g] = v
            has[g] = 1
        elif is_max:
            if v > acc[g]:
                acc[g] = v
        elif v < acc[g]:
            acc[g] = v


# uint64 values (also float sort keys): the same kernel, compiled for uint64
minmax_uint_update = minmax_int_update


@njit(nogil=True, cache=True)
def best_string_rows(gid, views, heap, nulls, best, is_max):
    """best[g] = row index of the min (max) string of group g in this block,
    or -1 when the group has no non-NULL value here."""
    for i in range(gid.shape[0]):
        if nulls[i]:
            continue
        g = gid[i]
        b = best[g]
        if b < 0:
            best[g] = i
            continue
        c = compare_strings(views[i, 0], views[i, 1], heap, views[b, 0], views[b, 1], heap)
        if (is_max and c > 0) or ((not is_max) and c < 0):
            best[g] = i


@njit(nogil=True, cache=True)
def string_replace_mask(groups, cand_views, cand_heap, acc_views, acc_heap, has,
                        is_max, out):
    """out[k] = 1 when candidate k beats the accumulator of groups[k]."""
    for k in range(groups.shape[0]):
        g = groups[k]
        if not has[g]:
            out[k] = 1
            continue
        c = compare_strings(cand_views[k, 0], cand_views[k, 1], cand_heap,
                            acc_views[g, 0], acc_views[g, 1], acc_heap)
        out[k] = 1 if ((is_max and c > 0) or ((not is_max) and c < 0)) else 0



@njit(nogil=True, cache=True)
def fold_codes(combined, codes, size, first):
    """combined = codes (first) or combined * size + codes, row by row: the
    mixed-radix code of several dictionary-code columns."""
    if first:
        for i in range(codes.shape[0]):
            combined[i] = codes[i]
    else:
        for i in range(codes.shape[0]):
            combined[i] = combined[i] * size + codes[i]


@njit(nogil=True, cache=True)
def mark_present(combined, seen):
    """seen[c] = 1 for every code c in combined; returns how many distinct."""
    count = 0
    for i in range(combined.shape[0]):
        c = combined[i]
        if not seen[c]:
            seen[c] = 1
            count += 1
    return count


@njit(nogil=True, cache=True)
def prepend_group_ids(gid, rows, use_rows, keys, out):
    """out[k] = (gid[rows[k]] or gid[k], keys[k]...): (group id, value) keys."""
    width = keys.shape[1]
    for k in range(keys.shape[0]):
        out[k, 0] = np.uint64(gid[rows[k]] if use_rows else gid[k])
        for c in range(width):
            out[k, c + 1] = keys[k, c]


@njit(nogil=True, cache=True)
def gather_int64(table, index, out):
    """out[i] = table[index[i]]."""
    for i in range(index.shape[0]):
        out[i] = table[index[i]]


# ---------------------------------------------- merging thread-local states
# absorb_*: for every k, state of group rows[k] of another accumulator is
# added into group mapping[rows[k]] of this one (rows: a subset of its groups)

@njit(nogil=True, cache=True)
def absorb_counts(counts, mapping, rows, o_counts):
    for k in range(rows.shape[0]):
        r = rows[k]
        counts[mapping[r]] += o_counts[r]


@njit(nogil=True, cache=True)
def absorb_sum_count_int(acc, carry, cnt, mapping, rows, o_acc, o_carry, o_cnt):
    """Exact sums (int64 plus a 2**64 carry) and counts."""
    for k in range(rows.shape[0]):
        r = rows[k]
        g = mapping[r]
        a = acc[g]
        v = o_acc[r]
        s = np.int64(np.uint64(a) + np.uint64(v))
        if ((a ^ s) & (v ^ s)) < 0:
            carry[g] += 1 if v > 0 else -1
        acc[g] = s
        carry[g] += o_carry[r]
        cnt[g] += o_cnt[r]


@njit(nogil=True, cache=True)
def absorb_sum_count_float(acc, cnt, mapping, rows, o_acc, o_cnt):
    for k in range(rows.shape[0]):
        r = rows[k]
        g = mapping[r]
        acc[g] += o_acc[r]
        cnt[g] += o_cnt[r]


@njit(nogil=True, cache=True)
def absorb_minmax(acc, has, mapping, rows, o_acc, o_has, is_max):
    """Min or max keys (int64, or uint64: compiled for both)."""
    for k in range(rows.shape[0]):
        r = rows[k]
        if not o_has[r]:
            continue
        g = mapping[r]
        v = o_acc[r]
        if not has[g]:
            acc[g] = v
            has[g] = 1
        elif is_max:
            if v > acc[g]:
                acc[g] = v
        elif v < acc[g]:
            acc[g] = v


@njit(nogil=True, cache=True)
def run_heads(keys, heads):
    """Rows of ``keys`` (n x w normalized key words) that differ from the
    row before: heads[:count] (row 0 always); returns count.  Equal words
    are equal keys (string views of one heap: the same bytes), so a run
    of equal rows is one group; unequal words may still be one group (the
    hash table finds it)."""
    n, w = keys.shape
    if n == 0:
        return 0
    heads[0] = 0
    count = 1
    for i in range(1, n):
        for j in range(w):
            if keys[i, j] != keys[i - 1, j]:
                heads[count] = i
                count += 1
                break
    return count
