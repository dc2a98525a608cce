"""Vectors -> Python values and numpy arrays (what Result hands to users).

Every conversion is vectorized per column: numpy datetime arithmetic for
temporal types, one bulk multiply for decimals, one gathered byte buffer for
strings.  Only building the output list touches rows.

``vector_to_numpy`` returns, per type (documented choice):
    integers, floats, BOOLEAN   the storage dtype
    DECIMAL                     float64 (value / 10**scale)
    DATE                        datetime64[D] (the infinities: an error)
    TIMESTAMP / TIMESTAMPTZ     datetime64[us] (UTC, no zone attached; infinities: an error)
    TIMESTAMP_NS / _TZ_NS       datetime64[ns]
    TIME / TIMETZ               timedelta64[us] since midnight (TIMETZ: UTC)
    TIME_NS                     timedelta64[ns] since midnight
    VARCHAR / BLOB              object array of str / bytes
    HUGEINT                     object array of int
    UUID, INTERVAL              object array of uuid.UUID / datetime.timedelta
A column with NULLs comes back as a ``numpy.ma.MaskedArray`` (mask True =
NULL; object columns also hold None in the NULL slots).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import uuid as _uuid
import gc

import numpy as np

from engine.block import Block, Vector
from planner import temporal as tt
from planner.types import DataType
from scan.storage import UUID_BIAS, interval_fields

_UTC = _dt.timezone.utc
_M128 = (1 << 128) - 1
_DECIMAL_CONTEXT = decimal.Context(prec=80)
_LOW32 = np.uint64(0xFFFFFFFF)


# ---------------------------------------------------------------- strings

KERNEL_STRING_ROWS = 4096      # strings at least this many convert through the kernels
NUMPY_STRING_BYTES = 1 << 20   # ... and so do fewer strings of more bytes than this


def string_lengths(views: np.ndarray) -> np.ndarray:
    """Byte length of every string view, as int64."""
    return (views[:, 0] & _LOW32).astype(np.int64)


def views_to_buffer(views: np.ndarray, heap: np.ndarray | None) -> tuple[bytes, np.ndarray]:
    """All strings of ``views`` concatenated into one bytes object, plus the
    (n + 1) int64 offsets of each string in it.  Uses the string-kernel
    room's numba ``flatten``, or for a few short rows a vectorized numpy
    gather (no kernel to load: a small result needs no numba).  The numpy
    gather indexes every byte with an int64, so it is for small totals only."""
    views = np.asarray(views, np.uint64).reshape(-1, 2)
    if len(views) < KERNEL_STRING_ROWS and \
            int(string_lengths(views).sum()) <= NUMPY_STRING_BYTES:
        return views_to_buffer_numpy(views, heap)
    from engine.kernels.strings import flatten
    offsets, data = flatten(views, heap)
    return data.tobytes(), offsets


def views_to_buffer_numpy(views: np.ndarray, heap: np.ndarray | None) -> tuple[bytes, np.ndarray]:
    n = len(views)
    views = np.ascontiguousarray(views, dtype=np.uint64).reshape(n, 2)
    lengths = string_lengths(views)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return b"", offsets
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)     # string of each byte
    within = np.arange(total, dtype=np.int64) - offsets[:-1][row]
    out = np.empty(total, np.uint8)
    from_heap = (lengths > 12)[row]
    inline = views.view(np.uint8).reshape(-1)          # 16 bytes per view, payload at 4
    short = ~from_heap
    out[short] = inline[row[short] * 16 + 4 + within[short]]
    if from_heap.any():       # long strings: bytes in the heap, never copied whole
        out[from_heap] = np.asarray(heap, np.uint8)[
            views[row[from_heap], 1].astype(np.int64) + within[from_heap]]
    return out.tobytes(), offsets


def views_to_strings(views: np.ndarray, heap: np.ndarray | None,
                     decode_utf8: bool = True) -> list:
    """Python str (or bytes) for each view; NULL handling is the caller's."""
    buf, offsets = views_to_buffer(views, heap)
    starts = offsets[:-1].tolist()
    ends = offsets[1:].tolist()
    if not decode_utf8:
        return [buf[a:b] for a, b in zip(starts, ends)]
    if buf.isascii():
        text = buf.decode("ascii")
        return [text[a:b] for a, b in zip(starts, ends)]
    return [buf[a:b].decode("utf-8", "replace") for a, b in zip(starts, ends)]


def strings_to_vector(values: list, type: DataType) -> Vector:
    """A VARCHAR/BLOB Vector from Python str/bytes/None values."""
    n = len(values)
    encoded = [b"" if v is None else (v.encode("utf-8") if isinstance(v, str) else bytes(v))
               for v in values]
    nulls = np.fromiter((v is None for v in values), np.uint8, n)
    lengths = np.fromiter(map(len, encoded), np.int64, n)
    if lengths.size and lengths.max() >= 1 << 32:
        raise ValueError("string longer than 4 GiB")
    raw = np.frombuffer(b"".join(encoded), np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # 16-byte views: copy up to 12 inline bytes after the 4 length bytes
    view_bytes = np.zeros((n, 16), np.uint8)
    view_bytes.view(np.uint32)[:, 0] = lengths.astype(np.uint32)
    inline_len = np.minimum(lengths, 12)
    row = np.repeat(np.arange(n, dtype=np.int64), inline_len)
    within = np.arange(int(inline_len.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(inline_len) - inline_len, inline_len)
    view_bytes[row, 4 + within] = raw[offsets[:-1][row] + within]
    views = view_bytes.view(np.uint64).reshape(n, 2).copy()
    is_long = lengths > 12
    if is_long.any():
        # the whole long string lives in the heap; word 1 is its offset
        long_idx = np.flatnonzero(is_long)
        long_len = lengths[long_idx]
        heap_off = np.zeros(len(long_idx), np.int64)
        np.cumsum(long_len[:-1], out=heap_off[1:])
        gather = np.repeat(offsets[long_idx] - heap_off, long_len) + np.arange(
            int(long_len.sum()), dtype=np.int64)
        heap = raw[gather]
        views[long_idx, 1] = heap_off.astype(np.uint64)
    else:
        heap = np.zeros(0, np.uint8)
    return Vector(type, views, nulls if nulls.any() else None, heap)


def _strings(vec: Vector) -> list:
    decode = vec.type.id == "VARCHAR"
    if len(vec.data) < KERNEL_STRING_ROWS:       # a few rows: numpy, no kernel to load
        return views_to_strings(vec.data, vec.heap, decode)
    from engine.kernels.strings import views_to_pylist
    return views_to_pylist(vec.data, vec.heap, None, decode)


# ---------------------------------------------------------------- python values

def _decimals(data: np.ndarray, scale: int) -> list:
    unit = decimal.Decimal(1).scaleb(-scale)
    values = data.tolist() if data.dtype != object else [int(v) for v in data]
    with decimal.localcontext(_DECIMAL_CONTEXT):
        return list(map(unit.__mul__, values))


def _patch(out: list, values: np.ndarray, odd: np.ndarray, fix) -> list:
    """out[i] = fix(int(values[i])) wherever ``odd``."""
    for i in np.flatnonzero(odd).tolist():
        out[i] = fix(int(values[i]))
    return out


def _dates(data: np.ndarray) -> list:
    """DATE values: datetime.date where Python holds them; else, as DuckDB's
    Python client, date.max / date.min for the infinities and DuckDB's text
    ('10000-01-01', '0001-12-31 (BC)') for the rest."""
    days = data.astype(np.int64)
    odd = (days < tt.PY_MIN_DAYS) | (days > tt.PY_MAX_DAYS)
    if not odd.any():
        return days.astype("datetime64[D]").tolist()
    out = np.where(odd, 0, days).astype("datetime64[D]").tolist()

    def fix(v):
        if abs(v) == tt.DATE_INFINITY:
            return _dt.date.max if v > 0 else _dt.date.min
        return tt.format_date(v)
    return _patch(out, days, odd, fix)


def _times(micros: np.ndarray, tz: bool = False) -> list:
    """TIME values: datetime.time; 24:00:00 (and anything outside a day)
    as DuckDB's text, as its Python client returns it.  TIME WITH TIME
    ZONE: times at UTC (+00, what Parquet holds)."""
    t = micros.astype(np.int64)
    odd = (t < 0) | (t >= tt.MICROS_PER_DAY)
    moments = np.where(odd, 0, t).astype("datetime64[us]").tolist()
    out = [m.time() for m in moments]
    if tz:
        out = [v.replace(tzinfo=_UTC) for v in out]
    if odd.any():
        _patch(out, t, odd, lambda v: tt.format_time(v) + ("+00" if tz else ""))
    return out


def _timestamps(micros: np.ndarray, tz: bool) -> list:
    """TIMESTAMP values: datetime (UTC-aware for TIMESTAMPTZ); as DuckDB's
    Python client, datetime.max / .min (naive) for the infinities and
    DuckDB's text for values past Python's years 1..9999."""
    t = micros.astype(np.int64)
    odd = (t < tt.PY_MIN_MICROS) | (t > tt.PY_MAX_MICROS)
    values = np.where(odd, 0, t).astype("datetime64[us]").tolist()
    if tz:
        values = [v.replace(tzinfo=_UTC) for v in values]
    if odd.any():
        def fix(v):
            if abs(v) == tt.TIMESTAMP_INFINITY:
                return _dt.datetime.max if v > 0 else _dt.datetime.min
            return tt.format_timestamp(v) + ("+00" if tz else "")
        _patch(values, t, odd, fix)
    return values


def _timestamps_ns(nanos: np.ndarray, tz: bool) -> list:
    """TIMESTAMP_NS values as DuckDB's Python client gives them: datetime
    truncated (toward zero) to microseconds; the infinities as datetime.max / .min."""
    n = nanos.astype(np.int64)
    inf = np.abs(n) == tt.TIMESTAMP_INFINITY
    micros = np.where(n < 0, -((-n) // 1000), n // 1000)
    micros = np.where(inf, 0, micros)
    out = _timestamps(micros, tz)
    if inf.any():
        _patch(out, n, inf, lambda v: _dt.datetime.max if v > 0 else _dt.datetime.min)
    return out


def _values(vec: Vector) -> list:
    """Python values of every slot (NULL slots hold arbitrary values)."""
    t = vec.type
    tid = t.id
    data = vec.data
    if t.is_string:
        return _strings(vec)
    if tid == "DECIMAL":
        return _decimals(data, t.scale)
    if tid == "DATE":
        return _dates(data)
    if tid in ("TIMESTAMP", "TIMESTAMPTZ"):
        return _timestamps(data, tid == "TIMESTAMPTZ")
    if tid in ("TIMESTAMP_NS", "TIMESTAMPTZ_NS"):
        return _timestamps_ns(data, tid == "TIMESTAMPTZ_NS")
    if tid in ("TIME", "TIMETZ"):
        return _times(data, tid == "TIMETZ")
    if tid == "TIME_NS":
        return _times(np.floor_divide(data.astype(np.int64), 1000))
    if tid == "UUID":                    # uuid.UUID, as DuckDB's Python client
        return [_uuid.UUID(int=(v + UUID_BIAS) & _M128) if isinstance(v, int) else None
                for v in data]
    if tid == "INTERVAL":                # timedelta with 30-day months, as DuckDB's
        out = []
        for v in data:
            if v is None:
                out.append(None)
                continue
            months, days, micros = interval_fields(v)
            out.append(_dt.timedelta(days=months * 30 + days, microseconds=micros))
        return out
    if data.dtype == object:
        return list(data)
    return data.tolist()


# Columns whose values are costly to build (Decimal, date, str) and repeat a
# lot (flags, prices, dates) are converted once per distinct value.
_DEDUPE_MIN_ROWS = 8192
_DEDUPE_SAMPLE = 2048
_DEDUPE_IDS = ("DECIMAL", "DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIME", "VARCHAR", "BLOB")


def _dedupe_keys(vec: Vector) -> list[np.ndarray] | None:
    """Arrays that together identify a value, or None when not worth it."""
    t, data = vec.type, vec.data
    if len(data) < _DEDUPE_MIN_ROWS or t.id not in _DEDUPE_IDS or data.dtype == object:
        return None
    if t.is_string:
        longest = int((data[:, 0] & _LOW32).max())
        if longest > 12:                # long strings: equal ones have different views
            return None
        keys = [data[:, 0]] if longest <= 4 else [data[:, 0], data[:, 1]]
    else:
        keys = [data]
    sample = keys[0][np.linspace(0, len(data) - 1, _DEDUPE_SAMPLE).astype(np.int64)]
    if len(np.unique(sample)) > _DEDUPE_SAMPLE // 8:
        return None
    return keys


def _group(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct key, group id of every row)."""
    n = len(keys[0])
    order = np.argsort(keys[0], kind="stable") if len(keys) == 1 else np.lexsort(keys[::-1])
    change = np.zeros(n, np.bool_)
    change[0] = True
    for k in keys:
        ks = k[order]
        change[1:] |= ks[1:] != ks[:-1]
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(change) - 1
    return order[change], inverse


class MapValue(dict):
    """A MAP value: a plain dict (equal to DuckDB's), marked so that printing
    can show it the way DuckDB does ({k=v})."""
    __slots__ = ()


def _nested_values(vec: Vector) -> list:
    """LIST -> list, STRUCT -> dict, MAP -> dict (as DuckDB's fetchall()).
    Each child converts once (vectorized); only building the containers
    touches rows."""
    t, data = vec.type, vec.data
    if t.id == "STRUCT":
        names = [n for n, _ in t.children]
        idx = data.astype(np.int64)
        cols = [_gathered_pylist(c, idx) for c in vec.children]
        return [dict(zip(names, vals)) for vals in zip(*cols)] if cols else [{}] * len(idx)
    from engine.expr.nested import entry_rows
    live = data if vec.nulls is None else np.where((vec.nulls != 0)[:, None], 0, data)
    _, pos = entry_rows(live)
    bounds = np.concatenate([[0], np.cumsum(live[:, 1])]).tolist()
    if t.id == "LIST":
        items = _gathered_pylist(vec.children[0], pos)
        return [items[bounds[i]:bounds[i + 1]] for i in range(len(data))]
    keys = _gathered_pylist(vec.children[0], pos)
    vals = _gathered_pylist(vec.children[1], pos)
    out = []
    for i in range(len(data)):
        a, b = bounds[i], bounds[i + 1]
        try:
            out.append(MapValue(zip(keys[a:b], vals[a:b])))
        except TypeError:               # unhashable keys (lists, dicts): DuckDB's pair form
            out.append({"key": keys[a:b], "value": vals[a:b]})
    return out


def _gathered_pylist(child: Vector, idx: np.ndarray) -> list:
    if len(idx) == 0:
        return []
    from engine.block import take_vector
    return vector_to_pylist(take_vector(child, idx))


def vector_to_pylist(vec: Vector) -> list:
    """The values of ``vec`` as Python objects, None for NULL."""
    if vec.type.id == "NULL":
        return [None] * len(vec.data)
    if vec.type.is_nested:
        out = _nested_values(vec)
        if vec.nulls is not None:
            for i in np.flatnonzero(vec.nulls).tolist():
                out[i] = None
        return out
    keys = _dedupe_keys(vec)
    out = None
    if keys is not None:
        first, inverse = _group(keys)
        if len(first) <= len(vec.data) // 4:
            distinct = np.empty(len(first), object)
            distinct[:] = _values(Vector(vec.type, vec.data[first], None, vec.heap))
            out = distinct[inverse].tolist()
    if out is None:
        out = _values(vec)
    if vec.nulls is not None:
        for i in np.flatnonzero(vec.nulls).tolist():
            out[i] = None
    return out


class Shown(str):
    """A value's printed text, where the Python value would lose digits
    (TIMESTAMP_NS's nanoseconds): the renderers print it as it is."""
    __slots__ = ()


_SHOWN_KINDS = {"INTERVAL": None, "TIMESTAMP_NS": "KIND_TIMESTAMP_NS", "TIMESTAMPTZ_NS": "KIND_TIMESTAMP_NS",
                "TIME_NS": "KIND_TIME_NS", "DATE": "KIND_DATE", "TIMESTAMP": "KIND_TIMESTAMP",
                "TIMESTAMPTZ": "KIND_TIMESTAMP"}
_INFINITY_ONLY = {"DATE": tt.DATE_INFINITY, "TIMESTAMP": tt.TIMESTAMP_INFINITY,
                  "TIMESTAMPTZ": tt.TIMESTAMP_INFINITY}


def _shown(vec: Vector) -> dict:
    """row -> printed text of the values whose Python value would print
    otherwise: every value of a nanosecond column, the infinities of the
    others (whose Python values are date.max and the like)."""
    from engine.kernels import dates as dk
    tid = vec.type.id
    if tid == "INTERVAL":                # DuckDB prints the fields as written
        return {r: Shown(tt.format_interval(*interval_fields(v)))
                for r, v in enumerate(vec.data) if v is not None
                and (vec.nulls is None or not vec.nulls[r])}
    rows = np.arange(len(vec.data))
    if tid in _INFINITY_ONLY:
        rows = np.flatnonzero(np.abs(vec.data.astype(np.int64)) == _INFINITY_ONLY[tid])
    if vec.nulls is not None and len(rows):
        rows = rows[vec.nulls[rows] == 0]
    if not len(rows):
        return {}
    values = vec.data[rows]
    offsets, buf = dk.format_values(values, getattr(dk, _SHOWN_KINDS[tid]))
    text = buf.tobytes().decode("ascii")
    bounds = offsets.tolist()
    tz = "+00" if tid == "TIMESTAMPTZ_NS" else ""
    return {r: Shown(text[a:b] + (tz if not text[a:b].endswith("infinity") else ""))
            for r, a, b in zip(rows.tolist(), bounds, bounds[1:])}


def block_to_display_rows(block: Block, start: int = 0, stop: int | None = None) -> list[tuple]:
    """block_to_rows for printing: nanosecond columns and infinities as
    DuckDB prints them."""
    rows = block_to_rows(block, start, stop)
    shown = [i for i, c in enumerate(block.columns) if c.type.id in _SHOWN_KINDS]
    if not shown or not rows:
        return rows
    stop = block.n if stop is None else min(stop, block.n)
    part = block if (start == 0 and stop == block.n) else block.slice(start, stop)
    texts = {i: t for i in shown if (t := _shown(part.columns[i]))}
    if not texts:
        return rows
    rows = [list(r) for r in rows]
    for i, cells in texts.items():
        for k, text in cells.items():
            rows[k][i] = text
    return [tuple(r) for r in rows]


def block_to_rows(block: Block, start: int = 0, stop: int | None = None) -> list[tuple]:
    """Rows start..stop of ``block`` as tuples of Python values."""
    stop = block.n if stop is None else min(stop, block.n)
    if start >= stop:
        return []
    part = block if (start == 0 and stop == block.n) else block.slice(start, stop)
    # the values and tuples cannot form reference cycles: no collection
    # while they are made (at 18k rows, collections took 4 of Q16's 5 ms)
    collecting = gc.isenabled()
    gc.disable()
    try:
        columns = [vector_to_pylist(c) for c in part.columns]
        if not columns:
            return [()] * (stop - start)
        return list(zip(*columns))
    finally:
        if collecting:
            gc.enable()


# ---------------------------------------------------------------- numpy

def vector_to_numpy(vec: Vector) -> np.ndarray:
    """The column as a numpy array (see the module docstring for dtypes)."""
    t = vec.type
    tid = t.id
    data = vec.data
    if tid == "NULL":
        arr = np.empty(len(data), object)
        return np.ma.MaskedArray(arr, mask=np.ones(len(data), bool))
    if t.is_string or t.is_nested or tid in ("UUID", "INTERVAL"):
        arr = np.empty(len(data), object)
        arr[:] = vector_to_pylist(vec)
    elif tid == "DECIMAL":
        if data.dtype == object:
            arr = np.array([float(v) for v in data], np.float64) / 10.0 ** t.scale
        else:
            arr = data.astype(np.float64) / 10.0 ** t.scale
    elif tid in _NUMPY_TEMPORAL:
        if tid in _INFINITY_ONLY:
            _refuse_infinities(vec, _INFINITY_ONLY[tid])
        arr = data.astype(np.int64).astype(_NUMPY_TEMPORAL[tid])
    else:
        arr = np.array(data, copy=True)
    if vec.nulls is not None and vec.nulls.any():
        mask = vec.nulls.astype(bool)
        if arr.dtype == object:
            arr[mask] = None
        return np.ma.MaskedArray(arr, mask=mask)
    return arr


_NUMPY_TEMPORAL = {"DATE": "datetime64[D]", "TIMESTAMP": "datetime64[us]",
                   "TIMESTAMPTZ": "datetime64[us]", "TIMESTAMP_NS": "datetime64[ns]",
                   "TIMESTAMPTZ_NS": "datetime64[ns]", "TIME": "timedelta64[us]",
                   "TIMETZ": "timedelta64[us]", "TIME_NS": "timedelta64[ns]"}


def _refuse_infinities(vec: Vector, inf: int) -> None:
    """numpy has no infinite dates: a clear error (as DuckDB's), not a date
    5.8 million years away."""
    live = np.abs(vec.data.astype(np.int64)) == inf
    if vec.nulls is not None:
        live &= vec.nulls == 0
    if live.any():
        from engine.errors import DataError
        raise DataError(f"could not convert {vec.type} (infinity) to numpy: numpy "
                              f"datetimes have no infinity")


def block_to_numpy(block: Block, names: list[str]) -> dict[str, np.ndarray]:
    """name -> array for every column (later duplicates get a _N suffix)."""
    out: dict[str, np.ndarray] = {}
    for name, vec in zip(unique_names(names), block.columns):
        out[name] = vector_to_numpy(vec)
    return out


def unique_names(names: list[str]) -> list[str]:
    """Names made unique the way DuckDB does for dataframes: a, a_1, a_2."""
    seen: dict[str, int] = {}
    out = []
    taken = set()
    for name in names:
        candidate = name
        while candidate in taken:
            seen[name] = seen.get(name, 0) + 1
            candidate = f"{name}_{seen[name]}"
        taken.add(candidate)
        out.append(candidate)
    return out
