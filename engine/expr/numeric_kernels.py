"""Numba kernels for exact int64 arithmetic (overflow-checked), decimal
rescaling with round-half-away-from-zero, and number <-> text conversion.

Checked kernels take a ``valid`` bool mask (rows that are not NULL: gaps are
never checked) and return (result, first bad row or -1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

INT64_MIN = np.int64(-2**63)


@njit(nogil=True, cache=True)
def checked_add(a, b, valid):
    n = a.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        # unsigned arithmetic wraps by definition; signed overflow is UB to LLVM
        r = np.int64(np.uint64(a[i]) + np.uint64(b[i]))
        out[i] = r
        if valid[i] and ((a[i] ^ r) & (b[i] ^ r)) < 0:
            return out, i
    return out, -1


@njit(nogil=True, cache=True)
def checked_sub(a, b, valid):
    n = a.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        r = np.int64(np.uint64(a[i]) - np.uint64(b[i]))
        out[i] = r
        if valid[i] and ((a[i] ^ b[i]) & (a[i] ^ r)) < 0:
            return out, i
    return out, -1


@njit(nogil=True, cache=True)
def checked_mul(a, b, valid):
    n = a.shape[0]
    out = np.empty(n, np.int64)
    pos_limit = np.uint64(9223372036854775807)
    neg_limit = np.uint64(9223372036854775808)
    zero = np.uint64(0)
    for i in range(n):
        x = a[i]
        y = b[i]
        ux = np.uint64(x) if x >= 0 else zero - np.uint64(x)
        uy = np.uint64(y) if y >= 0 else zero - np.uint64(y)
        prod = ux * uy
        neg = (x < 0) != (y < 0)
        if valid[i] and ux != zero:
            limit = neg_limit if neg else pos_limit
            if uy > limit // ux:
                out[i] = 0
                return out, i
        out[i] = np.int64(zero - prod) if neg else np.int64(prod)
    return out, -1


@njit(nogil=True, cache=True)
def checked_bound(a, limit, valid):
    """First valid row with |a| >= limit (limit > 0), or -1."""
    for i in range(a.shape[0]):
        if valid[i] and (a[i] >= limit or a[i] <= -limit):
            return i
    return -1


@njit(nogil=True, cache=True)
def round_div_pow(a, p):
    """a / p rounded half away from zero (p > 0)."""
    n = a.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        x = a[i]
        t = x // p
        r = x - t * p
        if x >= 0:
            out[i] = t + 1 if 2 * r >= p else t
        elif r == 0:
            out[i] = t
        else:
            out[i] = t if 2 * (p - r) >= p else t + 1
    return out


# ---------------------------------------------------------------- text out
@njit(nogil=True, cache=True)
def format_scaled(values, scale):
    """Flat decimal text of int64 values with ``scale`` fraction digits
    (scale 0: plain integers), e.g. 5 @ 2 -> '0.05', -150 @ 2 -> '-1.50'."""
    n = values.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    buf = np.empty(n * 22, np.uint8)
    tmp = np.empty(24, np.uint8)
    pos = 0
    for i in range(n):
        v = values[i]
        neg = v < 0
        # work with the negative magnitude so INT64_MIN is safe
        m = v if neg else -v
        k = 0
        nd = 0
        while m != 0 or nd <= scale:
            q = m // 10
            r = m - q * 10
            if r != 0:
                q += 1
                r -= 10
            tmp[k] = 48 - r
            k += 1
            nd += 1
            m = q
            if nd == scale:
                tmp[k] = 46
                k += 1
        if neg:
            buf[pos] = 45
            pos += 1
        for j in range(k - 1, -1, -1):
            buf[pos] = tmp[j]
            pos += 1
        offsets[i + 1] = pos
    return offsets, buf[:pos].copy()


# ---------------------------------------------------------------- text in
@njit(nogil=True, cache=True)
def parse_scaled(offsets, data, scale):
    """Parse '[+-]digits[.digits]' (spaces around allowed) into int64 scaled
    by 10**scale, rounding half away from zero.  Returns (values, ok)."""
    n = offsets.shape[0] - 1
    out = np.zeros(n, np.int64)
    ok = np.zeros(n, np.bool_)
    limit = np.int64(922337203685477580)
    for i in range(n):
        p = offsets[i]
        e = offsets[i + 1]
        while p < e and (data[p] == 32 or data[p] == 9 or data[p] == 10):
            p += 1
        while e > p and (data[e - 1] == 32 or data[e - 1] == 9 or data[e - 1] == 10):
            e -= 1
        neg = False
        if p < e and (data[p] == 45 or data[p] == 43):
            neg = data[p] == 45
            p += 1
        v = np.int64(0)
        digits = 0
        good = True
        while p < e and 48 <= data[p] <= 57:
            dig = np.int64(data[p] - 48)
            if v < -limit or (v == -limit and dig > 8):
                good = False
                break
            v = v * 10 - dig     # negative accumulation
            digits += 1
            p += 1
        fd = 0
        round_up = False
        if good and p < e and data[p] == 46:
            p += 1
            while p < e and 48 <= data[p] <= 57:
                if fd < scale:
                    dig = np.int64(data[p] - 48)
                    if v < -limit or (v == -limit and dig > 8):
                        good = False
                        break
                    v = v * 10 - dig
                elif fd == scale:
                    round_up = data[p] >= 53
                fd += 1
                digits += 1
                p += 1
        if not good or digits == 0 or p != e:
            continue
        while fd < scale:
            if v < -limit:
                good = False
                break
            v = v * 10
            fd += 1
        if not good:
            continue
        if round_up:
            if v == INT64_MIN:
                continue
            v -= 1
        if not neg:
            if v == INT64_MIN:
                continue
            v = -v
        out[i] = v
        ok[i] = True
    return out, ok


@njit(nogil=True, cache=True)
def pad_fixed(offsets, data, width):
    """Strings copied into a zero-padded (n, width) byte matrix (for numpy's
    fixed-width bytes -> float conversion)."""
    n = offsets.shape[0] - 1
    out = np.zeros((n, width), np.uint8)
    for i in range(n):
        ln = min(offsets[i + 1] - offsets[i], width)
        out[i, :ln] = data[offsets[i]:offsets[i] + ln]
    return out


@njit(nogil=True, cache=True)
def scaled_int_op(op, x, fx, y, fy, limit, valid):
    """(x * fx) op (y * fy) for op 0 = add, 1 = sub, 2 = mul, every step
    overflow-checked, and |result| < limit when limit > 0 (decimal
    precision).  The fused fast path of exact int64 and narrow DECIMAL
    arithmetic: branch-free (the loops vectorize), so it only reports
    whether some valid row *may* fail (products are screened with a float
    estimate); the caller then reruns the exact general path, which decides
    and names the error.  Returns (result, 0 = all rows fine, else -1)."""
    n = x.shape[0]
    out = np.empty(n, np.int64)
    bad = False
    if fx != 1:
        xmax = np.int64(9223372036854775807) // fx
        for i in range(n):
            bad |= valid[i] & ((x[i] > xmax) | (x[i] < -xmax))
    if fy != 1:
        ymax = np.int64(9223372036854775807) // fy
        for i in range(n):
            bad |= valid[i] & ((y[i] > ymax) | (y[i] < -ymax))
    if bad:
        return out, np.int64(-1)
    ufx = np.uint64(fx)
    ufy = np.uint64(fy)
    for i in range(n):
        a = np.int64(np.uint64(x[i]) * ufx)
        b = np.int64(np.uint64(y[i]) * ufy)
        if op == 0:
            r = np.int64(np.uint64(a) + np.uint64(b))
            over = ((a ^ r) & (b ^ r)) < 0
        elif op == 1:
            r = np.int64(np.uint64(a) - np.uint64(b))
            over = ((a ^ b) & (a ^ r)) < 0
        else:
            r = np.int64(np.uint64(a) * np.uint64(b))
            over = abs(np.float64(a) * np.float64(b)) >= 9.0e18
        if limit > 0:
            over |= (r >= limit) | (r <= -limit)
        bad |= valid[i] & over
        out[i] = r
    return out, np.int64(-1) if bad else np.int64(0)


@njit(nogil=True, cache=True)
def checked_divmod(op, x, y, valid):
    """Truncating x // y (op 0) or x % y (op 1, the sign of x), as DuckDB
    and C compute them.  Returns (result, first bad row or -1, why: 1 =
    division by zero, 2 = INT64_MIN // -1 overflows).  INT64_MIN % -1 is 0."""
    n = x.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        a = x[i]
        b = y[i]
        if b == 0:
            out[i] = 0
            if valid[i]:
                return out, i, 1
            continue
        if b == -1:
            if op == 0 and a == INT64_MIN:
                out[i] = 0
                if valid[i]:
                    return out, i, 2
                continue
            out[i] = np.int64(0) - a if op == 0 else np.int64(0)
            continue
        q = a // b                      # floor
        r = a - q * b
        if r != 0 and (a < 0) != (b < 0):
            q += 1                      # floor -> truncation
            r -= b
        out[i] = q if op == 0 else r
    return out, -1, 0
