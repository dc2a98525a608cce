"""Planner test helpers: a fake Catalog over local Parquet files (schemas via
pyarrow, views as SQL texts) and a walk over a plan's nodes."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq

from planner.catalog import TableInfo
from planner.frontend import parse_query
from planner.logical import Node
from planner.types import from_scan_type_name
from scan.errors import PqdbIOError


def nodes(node: Node):
    """A plan's nodes, depth first from ``node``."""
    yield node
    for c in node.children:
        yield from nodes(c)


def scan_type_name(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "blob"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return f"timestamp{'tz' if t.tz else ''}_{t.unit}"
    if pa.types.is_boolean(t):
        return "boolean"
    names = {pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
             pa.uint8(): "uint8", pa.uint16(): "uint16", pa.uint32(): "uint32",
             pa.uint64(): "uint64", pa.float32(): "float32", pa.float64(): "float64"}
    return names[t]


class FakeCatalog:
    """Catalog protocol over local files; views are SQL texts."""

    def __init__(self, views: dict[str, str] | None = None):
        self.views = {k.lower(): v for k, v in (views or {}).items()}
        self.specs: list[str] = []

    def lookup_view(self, name: str):
        text = self.views.get(name.lower())
        return None if text is None else parse_query(text)

    def table_info(self, spec: str) -> TableInfo:
        self.specs.append(spec)
        files = sorted(glob.glob(spec)) if any(c in spec for c in "*?[") else (
            [spec] if os.path.exists(spec) else [])
        if not files:
            raise PqdbIOError("no files match", url=spec)
        schema = pq.read_schema(files[0])
        columns = [(f.name, from_scan_type_name(scan_type_name(f.type))) for f in schema]
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return TableInfo(files, columns, rows)
