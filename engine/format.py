"""Renderers over a Result: a DuckDB-like box table, CSV (RFC 4180) and JSON.

Each renderer takes anything with ``columns``, ``types`` and ``fetchall``-style
rows; only output building touches rows.
"""

from __future__ import annotations

import csv
import datetime as _dt
import decimal
import io
import json
import math

NUMERIC_PREFIXES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                    "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL")


def is_numeric_type(type_name: str) -> bool:
    return type_name.upper().startswith(NUMERIC_PREFIXES)


def _blob_text(value: bytes) -> str:
    """Bytes shown like DuckDB: printable ASCII as is, the rest as \\xHH."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in value)


def value_text(value) -> str:
    """How one value is shown in the table and CSV renderers (NULL -> 'NULL')."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, _dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S") if value.year >= 1000 else value.isoformat(" ")
        if value.year >= 1000 and value.microsecond:
            text += f".{value.microsecond:06d}".rstrip("0")
        if value.tzinfo is not None:
            offset = value.utcoffset()
            hours = int(offset.total_seconds() // 3600)
            text += f"{hours:+03d}"
        return text
    if isinstance(value, _dt.time):
        text = value.replace(tzinfo=None).isoformat()
        text = text.rstrip("0") if value.microsecond else text
        if value.tzinfo is not None:                 # TIME WITH TIME ZONE: +00 as DuckDB
            offset = value.utcoffset()
            secs = int(offset.total_seconds())
            sign = "-" if secs < 0 else "+"
            hh, mm = divmod(abs(secs) // 60, 60)
            text += f"{sign}{hh:02d}" + (f":{mm:02d}" if mm else "")
        return text
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _blob_text(bytes(value))
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        from engine.convert import MapValue
        if isinstance(value, MapValue):          # DuckDB shows maps as {k=v, ...}
            return "{" + ", ".join(f"{value_text(k)}={value_text(v)}" for k, v in value.items()) + "}"
        return "{" + ", ".join(f"'{k}': {value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


# ---------------------------------------------------------------- box table

def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _fit_columns(widths: list[int], limit: int) -> list[int | None]:
    """Column indexes to show within ``limit`` characters, alternately from
    the left and right end, with None where hidden columns are elided."""
    def total(ws):
        return sum(ws) + 3 * len(ws) + 1
    if limit <= 0 or total(widths) <= limit:
        return list(range(len(widths)))
    left, right = [], []
    lo, hi = 0, len(widths) - 1
    used = 1 + 4          # frame + the elision column
    take_left = True
    while lo <= hi:
        i = lo if take_left else hi
        if used + widths[i] + 3 > limit:
            break
        used += widths[i] + 3
        if take_left:
            left.append(i)
            lo += 1
        else:
            right.insert(0, i)
            hi -= 1
        take_left = not take_left
    if not left:
        left = [0]
    return left + [None] + right


def render_table(columns: list[str], types: list[str], rows: list[tuple],
                 tail: list[tuple] | None = None, total_rows: int | None = None,
                 max_width: int = 40, max_total_width: int = 0) -> str:
    """A box-drawn table like DuckDB's: names and types in the header,
    numbers right-aligned, strings left-aligned, a '…' line between ``rows``
    and ``tail`` when a tail is given, and a row-count footer.  With
    ``max_total_width`` > 0, middle columns that do not fit are elided."""
    shown = len(rows) + len(tail or ())
    total = shown if total_rows is None else total_rows
    if not columns:
        return f"({total} rows, no columns)"
    body = list(rows) + ([None] + list(tail) if tail is not None else [])
    cells = [None if r is None else
             [[_clip(part, max_width) for part in value_text(v).split("\n")] for v in r]
             for r in body]
    all_widths = [max(len(_clip(c, max_width)), len(_clip(t.lower(), max_width)), 1)
                  for c, t in zip(columns, types)]
    for r in cells:
        if r is not None:
            for i, parts in enumerate(r):
                all_widths[i] = max(all_widths[i], max(len(p) for p in parts))
    keep = _fit_columns(all_widths, max_total_width)

    def pick(values: list, filler):
        return [filler if i is None else values[i] for i in keep]

    widths = pick(all_widths, 1)
    header = pick([[_clip(c, max_width)] for c in columns], ["…"])
    type_row = pick([[_clip(t.lower(), max_width)] for t in types], [""])
    ncols = len(keep)
    label = f"{total} row" + ("" if total == 1 else "s")
    if shown != total:
        label += f" ({shown} shown)"
    labels = [label]
    if None in keep:
        labels.append(f"{len(columns)} columns ({len(keep) - 1} shown)")
    inner = sum(widths) + 3 * (ncols - 1)
    need = max(len(x) for x in labels)
    if need > inner:
        widths[-1] += need - inner
        inner = need

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in widths) + right

    def lines(row_cells: list[list[str]], align: list[str]) -> list[str]:
        height = max(len(p) for p in row_cells)
        out = []
        for k in range(height):
            parts = []
            for p, w, a in zip(row_cells, widths, align):
                text = p[k] if k < len(p) else ""
                parts.append(text.rjust(w) if a == "r" else
                             text.center(w) if a == "c" else text.ljust(w))
            out.append("│ " + " │ ".join(parts) + " │")
        return out

    center = ["c"] * ncols
    data_align = pick(["r" if is_numeric_type(t) else "l" for t in types], "c")
    out = [rule("┌", "┬", "┐")] + lines(header, center) + lines(type_row, center)
    out.append(rule("├", "┼", "┤"))
    for r in cells:
        out += lines([["…"]] * ncols, center) if r is None else lines(pick(r, ["…"]), data_align)
    out.append(rule("├", "┴", "┤"))
    out += ["│ " + x.ljust(inner) + " │" for x in labels]
    out.append("└" + "─" * (inner + 2) + "┘")
    return "\n".join(out)


# ---------------------------------------------------------------- csv

def _csv_value(value):
    if value is None:
        return ""
    return value_text(value)


def render_csv(columns: list[str], rows: list[tuple], header: bool = True) -> str:
    """RFC 4180 CSV (CRLF line ends, minimal quoting); NULL is an empty field."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    if header:
        writer.writerow(columns)
    writer.writerows([[_csv_value(v) for v in r] for r in rows])
    return buf.getvalue()


# ---------------------------------------------------------------- json

def _json_value(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "null" if (math.isnan(value) or math.isinf(value)) else repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else "null"
    if isinstance(value, _dt.datetime):
        return json.dumps(value.isoformat())
    if isinstance(value, (_dt.date, _dt.time)):
        return json.dumps(value.isoformat())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return json.dumps(_blob_text(bytes(value)))
    if isinstance(value, list):
        return "[" + ", ".join(_json_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k if isinstance(k, str) else value_text(k), ensure_ascii=False)}: "
                               f"{_json_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value), ensure_ascii=False)


def render_json(columns: list[str], rows: list[tuple]) -> str:
    """A JSON array with one object per row; decimals are exact numbers,
    dates/times ISO strings, NULL null."""
    keys = [json.dumps(c, ensure_ascii=False) for c in columns]
    if not rows:
        return "[]"
    objects = ["{" + ", ".join(f"{k}: {_json_value(v)}" for k, v in zip(keys, r)) + "}"
               for r in rows]
    return "[\n" + ",\n".join(objects) + "\n]"


def terminal_width() -> int:
    """Columns of the terminal (COLUMNS honoured), 0 when not a terminal."""
    import os
    import shutil
    if "COLUMNS" in os.environ or os.isatty(1):
        return shutil.get_terminal_size((120, 24)).columns
    return 0


def render(result, fmt: str = "table", max_rows: int = 40, width: int | None = None) -> str:
    """Render ``result`` (a Result) as ``fmt``: table, csv or json.  The
    table shows at most ``max_rows`` rows (the first and last half) and
    elides middle columns beyond ``width`` characters (default: the
    terminal's width; 0 = unlimited)."""
    n = len(result)
    # rows as printed (nanoseconds kept), where the result can give them
    rows_slice = getattr(result, "display_slice", result.rows_slice)
    if fmt == "table":
        limit = terminal_width() if width is None else width
        cell = getattr(result, "max_cell_width", 40)
        if n > max_rows:
            half = max_rows // 2
            return render_table(result.columns, result.types, rows_slice(0, half),
                                rows_slice(n - half, n), total_rows=n,
                                max_width=cell, max_total_width=limit)
        return render_table(result.columns, result.types, rows_slice(0, n),
                            max_width=cell, max_total_width=limit)
    if fmt == "csv":
        return render_csv(result.columns, rows_slice(0, n))
    if fmt == "json":
        return render_json(result.columns, rows_slice(0, n))
    from engine.errors import ConfigError
    raise ConfigError(f"unknown output format {fmt!r}; use table, csv or json")
