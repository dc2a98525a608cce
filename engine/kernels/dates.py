"""Calendar kernels (numba): days <-> civil dates (Howard Hinnant's
algorithms), month arithmetic with end-of-month clamping, date parts, and
date/timestamp text formatting and parsing.

DATE is int32 days since 1970-01-01; TIMESTAMP int64 microseconds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MICROS_PER_DAY = 86_400_000_000


@njit(nogil=True, cache=True, inline="always")
def _civil(z):
    """days since epoch -> (year, month, day)."""
    z = z + 719468
    era = z // 146097                     # numba's // floors, as Python's
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    if m <= 2:
        y += 1
    return y, m, d


@njit(nogil=True, cache=True, inline="always")
def _days(y, m, d):
    """(year, month, day) -> days since epoch."""
    if m <= 2:
        y -= 1
    era = y // 400
    yoe = y - era * 400
    mp = m + 9 if m <= 2 else m - 3
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(nogil=True, cache=True, inline="always")
def _is_leap(y):
    return (y % 4 == 0 and y % 100 != 0) or y % 400 == 0


@njit(nogil=True, cache=True, inline="always")
def _month_days(y, m):
    if m == 2:
        return 29 if _is_leap(y) else 28
    if m == 4 or m == 6 or m == 9 or m == 11:
        return 30
    return 31


@njit(nogil=True, cache=True)
def civil_from_days(days):
    """int64 days -> (year, month, day) int64 arrays."""
    n = days.shape[0]
    ys = np.empty(n, np.int64)
    ms = np.empty(n, np.int64)
    ds = np.empty(n, np.int64)
    for i in range(n):
        y, m, d = _civil(np.int64(days[i]))
        ys[i] = y
        ms[i] = m
        ds[i] = d
    return ys, ms, ds


@njit(nogil=True, cache=True)
def days_from_civil(ys, ms, ds):
    n = ys.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = _days(np.int64(ys[i]), np.int64(ms[i]), np.int64(ds[i]))
    return out


@njit(nogil=True, cache=True)
def add_months(days, months):
    """days + months, clamping the day to the end of the target month."""
    n = days.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        y, m, d = _civil(np.int64(days[i]))
        t = y * 12 + (m - 1) + months
        ny = t // 12
        nm = t % 12 + 1
        md = _month_days(ny, nm)
        out[i] = _days(ny, nm, min(d, md))
    return out


@njit(nogil=True, cache=True)
def date_part(days, part):
    """Calendar part of each day: 0 year 1 month 2 day 3 quarter
    4 dayofweek (Sunday 0) 5 dayofyear 6 ISO week 7 isodow (Monday 1)
    8 ISO year 9 decade 10 century 11 millennium."""
    n = days.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        z = np.int64(days[i])
        y, m, d = _civil(z)
        if part == 0:
            v = y
        elif part == 1:
            v = m
        elif part == 2:
            v = d
        elif part == 3:
            v = (m - 1) // 3 + 1
        elif part == 4:
            v = (z + 4) % 7          # 1970-01-01 was a Thursday
        elif part == 5:
            v = z - _days(y, 1, 1) + 1
        elif part == 7:
            v = (z + 3) % 7 + 1
        elif part == 6 or part == 8:
            wd = (z + 3) % 7         # Monday 0
            thursday = z - wd + 3
            ty, tm, td = _civil(thursday)
            if part == 8:
                v = ty
            else:
                v = (thursday - _days(ty, 1, 1)) // 7 + 1
        elif part == 9:
            v = y // 10
        elif part == 10:
            v = (y - 1) // 100 + 1 if y > 0 else y // 100 - 1
        else:
            v = (y - 1) // 1000 + 1 if y > 0 else y // 1000 - 1
        out[i] = v
    return out


# ---------------------------------------------------------------- text
@njit(nogil=True, cache=True, inline="always")
def _put_int(buf, pos, v, width):
    for k in range(width - 1, -1, -1):
        buf[pos + k] = 48 + v % 10
        v //= 10


DATE_INFINITY = 2**31 - 1
TIMESTAMP_INFINITY = 2**63 - 1
# format_temporal kinds
KIND_DATE, KIND_TIMESTAMP, KIND_TIMESTAMP_NS, KIND_TIME, KIND_TIME_NS = range(5)


@njit(nogil=True, cache=True, inline="always")
def _put_year(buf, pos, y):
    """Year >= 0 with at least four digits; returns the position after it."""
    width = 4
    v = y // 10000
    while v > 0:
        width += 1
        v //= 10
    _put_int(buf, pos, y, width)
    return pos + width


@njit(nogil=True, cache=True, inline="always")
def _put_word(buf, pos, word):
    for k in range(len(word)):
        buf[pos + k] = word[k]
    return pos + len(word)


_INF = np.frombuffer(b"infinity", np.uint8).copy()
_BC = np.frombuffer(b" (BC)", np.uint8).copy()


@njit(nogil=True, cache=True)
def format_temporal(values, kind, inf, bc):
    """DuckDB's text of every value (planner/temporal.py's forms): kind
    KIND_DATE (days), KIND_TIMESTAMP / _NS (micro/nanoseconds since the
    epoch), KIND_TIME / _NS (since midnight; a whole day is 24:00:00).
    Years past 9999 in full, years before 1 as ``(BC)``, the infinities as
    ``infinity``; fractions without trailing zeros.  Returns flat strings."""
    n = values.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    buf = np.empty(n * 48, np.uint8)
    pos = 0
    nanos = kind == KIND_TIMESTAMP_NS or kind == KIND_TIME_NS
    unit = np.int64(1000000000) if nanos else np.int64(1000000)
    per_day = unit * 86400
    digits = 9 if nanos else 6
    for i in range(n):
        v = np.int64(values[i])
        is_time = kind == KIND_TIME or kind == KIND_TIME_NS
        if not is_time:
            big = DATE_INFINITY if kind == KIND_DATE else TIMESTAMP_INFINITY
            if v == big or v == -big:
                if v < 0:
                    buf[pos] = 45
                    pos += 1
                pos = _put_word(buf, pos, inf)
                offsets[i + 1] = pos
                continue
        if kind == KIND_DATE:
            z = v
            tod = np.int64(0)
        elif is_time:
            z = np.int64(0)
            tod = v
        else:
            z = v // per_day
            tod = v - z * per_day
        if not is_time:
            y, m, d = _civil(z)
            pos = _put_year(buf, pos, y if y > 0 else 1 - y)
            buf[pos] = 45
            _put_int(buf, pos + 1, m, 2)
            buf[pos + 3] = 45
            _put_int(buf, pos + 4, d, 2)
            pos += 6
            if y <= 0:
                pos = _put_word(buf, pos, bc)
            if kind == KIND_DATE:
                offsets[i + 1] = pos
                continue
            buf[pos] = 32
            pos += 1
        secs = tod // unit
        frac = tod % unit
        _put_int(buf, pos, secs // 3600, 2)
        buf[pos + 2] = 58
        _put_int(buf, pos + 3, (secs // 60) % 60, 2)
        buf[pos + 5] = 58
        _put_int(buf, pos + 6, secs % 60, 2)
        pos += 8
        if frac:
            buf[pos] = 46
            _put_int(buf, pos + 1, frac, digits)
            k = digits
            while buf[pos + k] == 48:
                k -= 1
            pos += k + 1
        offsets[i + 1] = pos
    return offsets, buf[:pos].copy()


def format_values(values, kind):
    """format_temporal with its word tables."""
    return format_temporal(np.ascontiguousarray(values, np.int64), kind, _INF, _BC)


def format_dates(days, micros, with_time):
    """'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS[.ffffff]' (format_temporal)."""
    if with_time:
        return format_values(micros, KIND_TIMESTAMP)
    return format_values(days, KIND_DATE)


@njit(nogil=True, cache=True, inline="always")
def _digits(data, p, e, maxd):
    """Parse 1..maxd digits at p; returns (value, new position) or (-1, p)."""
    v = 0
    q = p
    while q < e and q - p < maxd and 48 <= data[q] <= 57:
        v = v * 10 + (data[q] - 48)
        q += 1
    if q == p:
        return -1, p
    return v, q


@njit(nogil=True, cache=True)
def parse_datetimes(offsets, data, want_time, nanos=False):
    """Parse 'YYYY-MM-DD' and optionally ' HH:MM[:SS[.ffffff]]' (or 'T'
    separator, trailing 'Z' / '+00' / '+00:00').  Returns (values, ok):
    days (want_time False) or micros since the epoch (``nanos``:
    nanoseconds, nine fractional digits, values outside int64 not ok).
    Fractional digits past the unit are dropped, as DuckDB does."""
    n = offsets.shape[0] - 1
    out = np.zeros(n, np.int64)
    ok = np.zeros(n, np.bool_)
    for i in range(n):
        p = offsets[i]
        e = offsets[i + 1]
        while p < e and (data[p] == 32 or data[p] == 9):
            p += 1
        while e > p and (data[e - 1] == 32 or data[e - 1] == 9):
            e -= 1
        y, p = _digits(data, p, e, 6)
        if y < 0 or p >= e or data[p] != 45:
            continue
        m, p = _digits(data, p + 1, e, 2)
        if m < 1 or m > 12 or p >= e or data[p] != 45:
            continue
        d, p = _digits(data, p + 1, e, 2)
        if d < 1 or d > _month_days(y, m):
            continue
        z = _days(y, m, d)
        tod = 0
        tod_s = 0
        frac = 0
        good = True
        if p < e:
            if not want_time:
                good = False
            elif data[p] != 32 and data[p] != 84:
                good = False
            else:
                hh, p = _digits(data, p + 1, e, 2)
                if hh < 0 or hh > 23 or p >= e or data[p] != 58:
                    continue
                mi, p = _digits(data, p + 1, e, 2)
                if mi < 0 or mi > 59:
                    continue
                ss = 0
                frac = 0
                if p < e and data[p] == 58:
                    ss, p = _digits(data, p + 1, e, 2)
                    if ss < 0 or ss > 59:
                        continue
                    if p < e and data[p] == 46:
                        q = p + 1
                        scale = 100000000 if nanos else 100000
                        while q < e and 48 <= data[q] <= 57:
                            frac += (data[q] - 48) * scale
                            scale //= 10
                            q += 1
                        p = q
                if p < e and data[p] == 90:
                    p += 1
                elif p + 3 <= e and data[p] == 43 and data[p + 1] == 48 and data[p + 2] == 48:
                    p += 3
                    if p + 3 <= e and data[p] == 58 and data[p + 1] == 48 and data[p + 2] == 48:
                        p += 3
                if p != e:
                    good = False
                tod_s = (hh * 60 + mi) * 60 + ss
                tod = tod_s * 1000000 + frac
        if not good:
            continue
        if nanos:
            secs = z * 86400 + tod_s
            # int64 nanoseconds span 1677-09-21 00:12:43.145224192
            # .. 2262-04-11 23:47:16.854775807
            if secs > 9223372036 or secs < -9223372037 or \
                    (secs == 9223372036 and frac > 854775807) or \
                    (secs == -9223372037 and frac < 145224192):
                continue
            if secs < 0:
                out[i] = (secs + 1) * 1000000000 + (frac - 1000000000)
            else:
                out[i] = secs * 1000000000 + frac
            ok[i] = True
            continue
        out[i] = z * 86400000000 + tod if want_time else z
        ok[i] = True
    return out, ok
