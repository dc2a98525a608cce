"""Dates, times and timestamps as text, the way DuckDB writes and reads
them, for single values (constant folding, Python values that Python's
datetime cannot hold, printing).  engine/kernels/dates.py does the same per
vector; tests/engine/test_temporal_text.py checks that the two agree.

DuckDB's forms: years 1..999 padded to four digits, years past 9999 in
full, years before 1 as ``YYYY-MM-DD (BC)`` (year 0 is 1 BC); a timestamp
puts its time after the date (``0001-12-31 (BC) 00:00:00``); fractions
drop trailing zeros (six digits for microseconds, nine for nanoseconds);
``TIME '24:00:00'`` exists.  The infinities are the largest values of the
storage (DATE 2**31 - 1, TIMESTAMP 2**63 - 1) and their negations, and
print as ``infinity`` / ``-infinity``.
"""

from __future__ import annotations

import re

DATE_INFINITY = 2**31 - 1
TIMESTAMP_INFINITY = 2**63 - 1
MICROS_PER_DAY = 86_400_000_000
NANOS_PER_DAY = MICROS_PER_DAY * 1000

# Python's datetime range, as days and microseconds since 1970-01-01
PY_MIN_DAYS, PY_MAX_DAYS = -719_162, 2_932_896
PY_MIN_MICROS = PY_MIN_DAYS * MICROS_PER_DAY
PY_MAX_MICROS = (PY_MAX_DAYS + 1) * MICROS_PER_DAY - 1


def civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of ``days`` since 1970-01-01, proleptic
    Gregorian, year 0 = 1 BC (H. Hinnant's algorithm)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d


def days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _date_parts(days: int) -> tuple[str, str]:
    """('YYYY-MM-DD', ' (BC)' or '')."""
    y, m, d = civil(days)
    bc = y <= 0
    if bc:
        y = 1 - y
    return f"{y:04d}-{m:02d}-{d:02d}", " (BC)" if bc else ""


def format_date(days: int) -> str:
    if days == DATE_INFINITY:
        return "infinity"
    if days == -DATE_INFINITY:
        return "-infinity"
    text, bc = _date_parts(days)
    return text + bc


def _fraction(value: int, digits: int) -> str:
    return ("." + f"{value:0{digits}d}".rstrip("0")) if value else ""


def format_time(micros: int, nanos: bool = False) -> str:
    """Time of day (micro- or nanoseconds since midnight; a whole day is 24:00:00)."""
    unit = 1_000_000_000 if nanos else 1_000_000
    secs, frac = divmod(micros, unit)
    return (f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
            + _fraction(frac, 9 if nanos else 6))


def format_timestamp(value: int, nanos: bool = False) -> str:
    """``value`` micro- (or nano-) seconds since 1970-01-01 00:00:00."""
    if value == TIMESTAMP_INFINITY:
        return "infinity"
    if value == -TIMESTAMP_INFINITY:
        return "-infinity"
    per_day = NANOS_PER_DAY if nanos else MICROS_PER_DAY
    days, tod = divmod(value, per_day)
    text, bc = _date_parts(days)
    return f"{text}{bc} {format_time(tod, nanos)}"


_DATE_RE = re.compile(r"\s*(-?)(\d{1,7})-(\d{1,2})-(\d{1,2})(\s*\(BC\))?"
                      r"(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d*))?)?)?"
                      r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$", re.IGNORECASE)


def _month_days(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def parse_datetime(text: str, per_second: int = 1_000_000, with_time: bool = True):
    """Days (``with_time`` False) or ``per_second`` units since the epoch
    of DuckDB's date/timestamp text: years of up to seven digits, ``(BC)``,
    ``infinity`` / ``-infinity``, a time with any number of fractional
    digits (truncated), a UTC offset.  Raises ValueError."""
    low = text.strip().lower()
    if low in ("infinity", "+infinity", "-infinity"):
        sign = -1 if low.startswith("-") else 1
        return sign * (TIMESTAMP_INFINITY if with_time else DATE_INFINITY)
    m = _DATE_RE.match(text)
    if m is None:
        raise ValueError(f"invalid date/time text {text!r}")
    neg, y, mo, d, bc, hh, mi, ss, frac, tz = m.groups()
    y, mo, d = int(y), int(mo), int(d)
    if bc:
        if neg or y == 0:
            raise ValueError(f"invalid date/time text {text!r}")
        y = 1 - y
    elif neg:
        y = -y
    if not (1 <= mo <= 12 and 1 <= d <= _month_days(y, mo)):
        raise ValueError(f"date out of range in {text!r}")
    days = days_from_civil(y, mo, d)
    if not with_time:
        if hh is not None or tz:
            raise ValueError(f"invalid DATE text {text!r}")
        if not -DATE_INFINITY < days < DATE_INFINITY:
            raise ValueError(f"date out of range in {text!r}")
        return days
    hh, mi, ss = int(hh or 0), int(mi or 0), int(ss or 0)
    if hh > 24 or mi > 59 or ss > 59 or (hh == 24 and (mi or ss)):
        raise ValueError(f"time out of range in {text!r}")
    digits = len(str(per_second)) - 1
    sub = int((frac or "")[:digits].ljust(digits, "0") or 0)
    value = ((days * 24 + hh) * 60 + mi) * 60 + ss
    if tz and tz.upper() != "Z":
        sign = -1 if tz[0] == "-" else 1
        body = tz[1:].replace(":", "")
        value -= sign * (int(body[:2]) * 3600 + int(body[2:4] or 0) * 60)
    value = value * per_second + sub
    if not -2**63 <= value < TIMESTAMP_INFINITY:
        raise ValueError(f"timestamp out of range in {text!r}")
    return value


_TIME_RE = re.compile(r"\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d*))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$",
                      re.IGNORECASE)


def parse_time(text: str, per_second: int = 1_000_000, with_offset: bool = False) -> int:
    """Units since midnight of 'HH:MM[:SS[.fff...]]' (24:00:00 included,
    extra fractional digits dropped).  A UTC offset is accepted only
    ``with_offset`` (TIME WITH TIME ZONE) and moves the time to UTC.
    Raises ValueError."""
    m = _TIME_RE.match(text)
    if m is None:
        raise ValueError(f"invalid TIME text {text!r}")
    hh, mi, ss, frac, tz = m.groups()
    hh, mi, ss = int(hh), int(mi), int(ss or 0)
    digits = len(str(per_second)) - 1
    sub = int((frac or "")[:digits].ljust(digits, "0") or 0)
    if hh > 24 or mi > 59 or ss > 59 or (hh == 24 and (mi or ss or sub)):
        raise ValueError(f"time out of range in {text!r}")
    secs = (hh * 60 + mi) * 60 + ss
    if tz and tz.upper() != "Z":
        if not with_offset:
            raise ValueError(f"invalid TIME text {text!r}")
        sign = -1 if tz[0] == "-" else 1
        body = tz[1:].replace(":", "")
        secs = (secs - sign * (int(body[:2]) * 3600 + int(body[2:4] or 0) * 60)) % 86400
    return secs * per_second + sub


def format_interval(months: int, days: int, micros: int) -> str:
    """DuckDB's text of an interval: '1 year 2 months 3 days 00:00:00.005'
    (the time part only when not zero, or when everything is zero)."""
    parts = []
    years, months = divmod(months, 12) if months >= 0 else (-((-months) // 12), -((-months) % 12))
    for n, unit in ((years, "year"), (months, "month"), (days, "day")):
        if n:
            parts.append(f"{n} {unit}" + ("" if abs(n) == 1 else "s"))
    if micros or not parts:
        sign = "-" if micros < 0 else ""
        secs, frac = divmod(abs(micros), 1_000_000)
        parts.append(f"{sign}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
                     + _fraction(frac, 6))
    return " ".join(parts)
