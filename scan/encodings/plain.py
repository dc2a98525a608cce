"""The PLAIN encoding for every Parquet physical type.

Fixed-width values are copied out of the page (never views into it).
BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY become (n, 2) uint64 string views whose
long strings point into the page buffer itself (heap = ``buf``: zero copy).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.errors import FileFormatError
from scan.memops import load8_be
from scan.views import make_view

JULIAN_EPOCH_DAY = 2440588          # julian day number of 1970-01-01
NANOS_PER_DAY = 86_400_000_000_000

_FIXED = {
    "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"),
    "FLOAT": np.dtype("<f4"),
    "DOUBLE": np.dtype("<f8"),
}

ERR_TRUNCATED_LENGTH = -1
ERR_TRUNCATED_VALUE = -2
ERR_NEGATIVE_LENGTH = -3


@njit(nogil=True, cache=True)
def _byte_array_kernel(buf, pos, end, count, out):
    """PLAIN BYTE_ARRAY: 4-byte LE length + bytes, ``count`` times.  Views
    point into ``buf``.  Returns the new position or a negative status."""
    for i in range(count):
        if pos + 4 > end:
            return ERR_TRUNCATED_LENGTH
        n = (np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8)
             | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 24))
        pos += 4
        if n > 2147483647:
            return ERR_NEGATIVE_LENGTH
        if pos + n > end:
            return ERR_TRUNCATED_VALUE
        make_view(buf, pos, n, out, i)
        pos += n
    return pos


@njit(nogil=True, cache=True)
def _fixed_len_kernel(buf, pos, type_length, count, out):
    """PLAIN FIXED_LEN_BYTE_ARRAY -> views into ``buf`` (bounds checked by the
    caller)."""
    for i in range(count):
        make_view(buf, pos, type_length, out, i)
        pos += type_length


@njit(nogil=True, cache=True, inline="always")
def be_decimal_at(buf, p, type_length):
    """(value, fits): the big-endian two's complement integer of
    ``type_length`` bytes at buf[p] as int64; fits is False when it needs
    more than 64 bits.  Up to 8 bytes with 8 bytes of buffer before their
    end (every value but a page's first few): one big-endian load ending at
    the value, shifted up and arithmetically back to sign-extend."""
    if type_length <= 8 and p + type_length >= 8:
        s = np.int64(64 - 8 * type_length)
        return np.int64(load8_be(buf, p + type_length - 8) << np.uint64(s)) >> s, True
    drop = type_length - 8 if type_length > 8 else 0
    negative = buf[p] >= 128
    sign = 0xFF if negative else 0
    for k in range(drop):                  # bytes beyond 8: pure sign extension
        if buf[p + k] != sign:
            return np.int64(0), False
    acc = np.uint64(0)
    for k in range(drop, type_length):
        acc = (acc << np.uint64(8)) | np.uint64(buf[p + k])
    if type_length < 8 and negative:
        acc |= ~np.uint64(0) << np.uint64(8 * type_length)
    v = np.int64(acc)
    return v, not (drop > 0 and (v < 0) != negative)


@njit(nogil=True, cache=True)
def _fixed_decimal_kernel(buf, pos, type_length, count, out):
    """PLAIN FIXED_LEN_BYTE_ARRAY decimals (big-endian two's complement,
    1 <= type_length) -> int64 unscaled values.  Returns the index of the
    first value that does not fit in 64 bits, or -1."""
    for i in range(count):
        v, fits = be_decimal_at(buf, pos + i * type_length, type_length)
        if not fits:
            return i
        out[i] = v
    return -1


def decode_plain_decimal(buf: np.ndarray, pos: int, end: int, count: int,
                         type_length: int) -> tuple[np.ndarray, int]:
    """PLAIN FIXED_LEN_BYTE_ARRAY decimals of precision <= 18 straight to
    int64 unscaled values (one kernel: no string views in between)."""
    type_length = int(type_length)
    if type_length < 0:
        raise FileFormatError(f"invalid FIXED_LEN_BYTE_ARRAY type_length {type_length}")
    need = count * type_length
    if need > end - pos:
        raise _truncated("FIXED_LEN_BYTE_ARRAY", count, need, end - pos)
    out = np.zeros(count, np.int64)
    if type_length and count:
        bad = _fixed_decimal_kernel(buf, pos, type_length, count, out)
        if bad >= 0:
            raise FileFormatError(f"decimal value at row {bad} does not fit in 64 bits")
    return out, pos + need


def _truncated(physical_type: str, count: int, need: int, have: int) -> FileFormatError:
    return FileFormatError(
        f"PLAIN {physical_type} data truncated: {count} values need {need} bytes, "
        f"the page has {have}")


def decode_plain(buf: np.ndarray, pos: int, end: int, physical_type: str,
                 count: int, type_length: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` PLAIN values of ``physical_type`` from ``buf[pos:end]``.

    Returns (values, new_pos).  BOOLEAN -> bool_, INT32 -> int32, INT64 ->
    int64, INT96 -> int64 microseconds since the epoch, FLOAT -> float32,
    DOUBLE -> float64, BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY -> (n, 2) uint64
    views with heap = ``buf``."""
    pos, count = int(pos), int(count)
    end = min(int(end), len(buf))
    if count < 0 or pos < 0:
        raise FileFormatError(f"negative value count {count} or position {pos}")
    have = max(end - pos, 0)
    dt = _FIXED.get(physical_type)
    if dt is not None:
        need = count * dt.itemsize
        if need > have:
            raise _truncated(physical_type, count, need, have)
        values = buf[pos:pos + need].view(dt).astype(dt.newbyteorder("="), copy=True)
        return values, pos + need
    if physical_type == "BOOLEAN":
        need = (count + 7) // 8
        if need > have:
            raise _truncated(physical_type, count, need, have)
        bits = np.unpackbits(buf[pos:pos + need], bitorder="little", count=count)
        return bits.view(np.bool_), pos + need
    if physical_type == "BYTE_ARRAY":
        if count * 4 > have:                 # every value has a 4-byte length
            raise _truncated(physical_type, count, count * 4, have)
        out = np.empty((count, 2), np.uint64)
        new_pos = _byte_array_kernel(buf, pos, end, count, out)
        if new_pos < 0:
            what = {ERR_TRUNCATED_LENGTH: "a value length",
                    ERR_TRUNCATED_VALUE: "a value",
                    ERR_NEGATIVE_LENGTH: "a valid value length"}[int(new_pos)]
            raise FileFormatError(
                f"PLAIN BYTE_ARRAY data truncated: {count} values, page ends before {what}")
        return out, int(new_pos)
    if physical_type == "FIXED_LEN_BYTE_ARRAY":
        type_length = int(type_length)
        if type_length < 0:
            raise FileFormatError(f"invalid FIXED_LEN_BYTE_ARRAY type_length {type_length}")
        need = count * type_length
        if need > have:
            raise _truncated(physical_type, count, need, have)
        out = np.empty((count, 2), np.uint64)
        _fixed_len_kernel(buf, pos, type_length, count, out)
        return out, pos + need
    if physical_type == "INT96":
        need = count * 12
        if need > have:
            raise _truncated(physical_type, count, need, have)
        return int96_to_micros(buf[pos:pos + need]), pos + need
    raise FileFormatError(f"unknown physical type {physical_type!r}")


def int96_to_micros(raw: np.ndarray) -> np.ndarray:
    """INT96 timestamps (8-byte LE nanoseconds of day, 4-byte LE julian
    day) -> int64 microseconds since the epoch, the nanoseconds truncated:
    DuckDB reads INT96 as a TIMESTAMP, and every date a writer produces
    (years 1..9999 and far beyond) fits.  The day is read as uint32 and the
    arithmetic wraps exactly as Arrow's (coerce_int96_timestamp_unit="us")
    for the nonsense values that do not fit."""
    rows = raw.reshape(-1, 12)
    nanos = np.ascontiguousarray(rows[:, :8]).view("<i8").reshape(-1).astype(np.int64)
    days = np.ascontiguousarray(rows[:, 8:]).view("<u4").reshape(-1).astype(np.int64)
    micros = np.where(nanos < 0, -((-nanos) // 1000), nanos // 1000)    # C's truncation
    with np.errstate(over="ignore"):
        return (days - JULIAN_EPOCH_DAY) * (NANOS_PER_DAY // 1000) + micros
