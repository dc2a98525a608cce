"""Hive partitioning: ``key=value/`` directories as columns.

``read_parquet('dir/*/*.parquet', hive_partitioning = true)`` (and, as in
DuckDB, by default when every file's path has the same ``key=value``
directories) adds one column per key after the file's columns, ordered by
name as DuckDB does.  Types
follow DuckDB's inference: DATE, else TIMESTAMP, else BIGINT when every
value (but ``__HIVE_DEFAULT_PARTITION__``, which is NULL) is one and casts
back to the same text ('01' stays VARCHAR); else VARCHAR.  Values are
URL-decoded.

Filters on partition columns drop whole files at plan time
(planner/rules/partition_pruning.py); what a scan reads of a partition
column comes from ``PartitionedFile``, a ParquetFile with one constant
virtual column per key.
"""

from __future__ import annotations

import datetime as _dt
import re
from urllib.parse import unquote

import numpy as np

from planner import types as T
from planner.folding import parse_date, parse_timestamp

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_INT64 = (-(1 << 63), (1 << 63) - 1)


def path_partitions(path: str) -> list[tuple[str, str]]:
    """The (key, value) pairs of a file's ``key=value`` directories, outermost first."""
    text = path.split("://", 1)[-1]
    web = path.lower().startswith(("http://", "https://"))
    parts = re.split(r"[/\\]", text.split("?", 1)[0] if web else text)[:-1]
    out = []
    for p in parts:
        if web:                 # a URL's path is percent-encoded: the name first
            p = unquote(p)
        if "=" in p:
            k, _, v = p.partition("=")
            if k:
                out.append((unquote(k), unquote(v)))
    return out


def detect(files: list[str]) -> bool:
    """Whether every file has the same non-empty list of partition keys."""
    keys = None
    for f in files:
        ks = [k for k, _ in path_partitions(f)]
        if not ks or (keys is not None and ks != keys):
            return False
        keys = ks
    return keys is not None


def partition_table(files: list[str], file_columns: list[str]):
    """([(name, SQL type)] of the partition columns, {file: {name: value}}),
    values in engine storage (int days for DATE, int microseconds for
    TIMESTAMP, int, str; None for NULL).  Keys the files have as columns
    are left out (the file's column wins); a key repeated in a path keeps
    its innermost value."""
    have = {c.lower() for c in file_columns}
    texts: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for f in files:
        vals = {}
        for k, v in path_partitions(f):
            if k.lower() in have:
                continue
            if k not in order:
                order.append(k)
            vals[k] = v
        texts[f] = vals
    missing = [(f, k) for f in files for k in order if k not in texts[f]]
    if missing:
        from engine.errors import BinderError
        f, k = missing[0]
        raise BinderError(f"hive partitioning: file {f} has no '{k}=' directory "
                          "(every file needs the same partition keys)")
    columns, values = [], {f: {} for f in files}
    for k in sorted(order):             # DuckDB orders them by name
        typ = infer_type([texts[f][k] for f in files])
        columns.append((k, typ))
        for f in files:
            values[f][k] = typed_value(texts[f][k], typ)
    return columns, values


def infer_type(texts: list[str]) -> T.DataType:
    vals = [t for t in texts if t != HIVE_NULL]
    if not vals:
        return T.VARCHAR
    for typ in (T.DATE, T.TIMESTAMP, T.BIGINT):
        if all(_round_trips(v, typ) for v in vals):
            return typ
    return T.VARCHAR


def _round_trips(text: str, typ: T.DataType) -> bool:
    try:
        if typ == T.DATE:
            return _dt.date.fromisoformat(text).isoformat() == text and \
                re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) is not None
        if typ == T.TIMESTAMP:
            return re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?", text) is not None \
                and str(_dt.datetime.fromisoformat(text)) == text
        if typ == T.BIGINT:
            n = int(text)
            return str(n) == text and _INT64[0] <= n <= _INT64[1]
    except ValueError:
        return False
    return False


def typed_value(text: str, typ: T.DataType):
    if text == HIVE_NULL:
        return None
    if typ == T.DATE:
        return parse_date(text)
    if typ == T.TIMESTAMP:
        return parse_timestamp(text)
    if typ == T.BIGINT:
        return int(text)
    return text


class PartitionedFile:
    """A ParquetFile with one constant virtual column per partition key
    (after its own columns); everything else is the file's."""

    def __init__(self, pf, partitions: list[tuple[str, T.DataType, object]]):
        from scan.metadata import ColumnInfo
        self._pf = pf
        self.memo: dict = {}
        n = len(pf.columns)
        self.virtual = {}
        cols = list(pf.columns)
        for j, (name, typ, value) in enumerate(partitions):
            scan_name = {"DATE": "date", "TIMESTAMP": "timestamp_us",
                         "BIGINT": "int64"}.get(typ.id, "string")
            cols.append(ColumnInfo(name, n + j, "VIRTUAL", 0, True, 1, 0, scan_name,
                                   path=(name,)))
            self.virtual[n + j] = (typ, value)
        self.columns = cols
        self._by_name = {c.name: c.index for c in cols}
        self.row_groups = [_with_virtual_chunks(rg, len(partitions)) for rg in pf.row_groups]

    def __getattr__(self, name):
        return getattr(self._pf, name)

    def column_index(self, name, column=None):
        if column is not None:
            return None if column in self.virtual else self._pf.column_index(name, column)
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"no column {name!r} in {self._pf.path}") from None

    def offset_index(self, row_group: int, column: int):
        return None if column in self.virtual else self._pf.offset_index(row_group, column)

    def bloom_filter(self, row_group: int, column: int):
        return None if column in self.virtual else self._pf.bloom_filter(row_group, column)

    def chunk_dictionary(self, row_group: int, column: int, max_entries: int | None = None):
        return None if column in self.virtual else \
            self._pf.chunk_dictionary(row_group, column, max_entries)

    def read_column(self, row_group: int, column, rows=None, codes: bool = False,
                    row_start: int = 0, row_count: int | None = None):
        if column not in self.virtual:
            return self._pf.read_column(row_group, column, rows, codes, row_start, row_count)
        n = self._pf.row_groups[row_group].num_rows if row_count is None else row_count
        if rows is not None:
            n = int(np.count_nonzero(rows))
        typ, value = self.virtual[column]
        return constant_column(self.columns[column], typ, value, n)

    def __repr__(self) -> str:
        return f"PartitionedFile({self._pf!r}, {list(self.virtual.values())})"


def constant_column(col, typ: T.DataType, value, n: int):
    from scan.column_data import ColumnData
    from scan.views import views_from_pylist
    if typ.is_string:
        if value is None:
            return ColumnData(np.zeros((n, 2), np.uint64), np.ones(n, np.uint8),
                              np.zeros(0, np.uint8), n, col)
        views, heap, _ = views_from_pylist([value])
        return ColumnData(None, None, heap, n, col, np.zeros(n, np.int32), views)
    dtype = np.int32 if typ == T.DATE else np.int64
    if value is None:
        return ColumnData(np.zeros(n, dtype), np.ones(n, np.uint8), None, n, col)
    return ColumnData(np.full(n, value, dtype), None, None, n, col)


def _with_virtual_chunks(rg, count: int):
    from dataclasses import replace
    from types import SimpleNamespace
    extra = [SimpleNamespace(bloom_filter_offset=None, offset_index_offset=None,
                             column_index_offset=None, statistics=None, encrypted=False)
             for _ in range(count)]
    return replace(rg, columns=list(rg.columns) + extra)
