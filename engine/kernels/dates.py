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
    era = (z if z >= 0 else z - 146096) // 146097
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
    era = (y if y >= 0 else y - 399) // 400
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


@njit(nogil=True, cache=True)
def format_dates(days, micros, with_time):
    """'YYYY-MM-DD' (years 0..9999) or 'YYYY-MM-DD HH:MM:SS[.ffffff]' with
    trailing fractional zeros dropped, as DuckDB prints.  Returns flat strings;
    ``days`` is used when with_time is False, ``micros`` otherwise."""
    n = days.shape[0] if not with_time else micros.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    buf = np.empty(n * 26, np.uint8)
    pos = 0
    for i in range(n):
        if with_time:
            t = np.int64(micros[i])
            z = t // 86400000000
            tod = t - z * 86400000000
        else:
            z = np.int64(days[i])
            tod = 0
        y, m, d = _civil(z)
        if y < 0 or y > 9999:
            y = max(0, min(y, 9999))
        _put_int(buf, pos, y, 4)
        buf[pos + 4] = 45
        _put_int(buf, pos + 5, m, 2)
        buf[pos + 7] = 45
        _put_int(buf, pos + 8, d, 2)
        pos += 10
        if with_time:
            secs = tod // 1000000
            frac = tod % 1000000
            buf[pos] = 32
            _put_int(buf, pos + 1, secs // 3600, 2)
            buf[pos + 3] = 58
            _put_int(buf, pos + 4, (secs // 60) % 60, 2)
            buf[pos + 6] = 58
            _put_int(buf, pos + 7, secs % 60, 2)
            pos += 9
            if frac:
                buf[pos] = 46
                _put_int(buf, pos + 1, frac, 6)
                k = 6
                while buf[pos + k] == 48:
                    k -= 1
                pos += k + 1
        offsets[i + 1] = pos
    return offsets, buf[:pos].copy()


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
def parse_datetimes(offsets, data, want_time):
    """Parse 'YYYY-MM-DD' and optionally ' HH:MM[:SS[.ffffff]]' (or 'T'
    separator, trailing 'Z' / '+00' / '+00:00').  Returns (values, ok):
    days (want_time False) or micros since the epoch."""
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
                        scale = 100000
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
                tod = ((hh * 60 + mi) * 60 + ss) * 1000000 + frac
        if not good:
            continue
        out[i] = z * 86400000000 + tod if want_time else z
        ok[i] = True
    return out, ok
