"""The Parquet footer: FileMetaData, the schema tree, column types and
row-group / column-chunk information with decoded statistics."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from scan import thrift as T
from scan.errors import FileFormatError, UnsupportedFeatureError

MAGIC = b"PAR1"
MAGIC_ENCRYPTED = b"PARE"
_MAX_SCHEMA_DEPTH = 100


@dataclass
class ColumnInfo:
    """One leaf column of the schema."""
    name: str
    index: int
    physical_type: str
    type_length: int
    nullable: bool
    max_def_level: int
    max_rep_level: int
    type_name: str
    precision: int = 0
    scale: int = 0
    path: tuple = ()
    nested: bool = False          # inside a LIST/MAP/STRUCT group or repeated
    time_unit: str | None = None  # MILLIS / MICROS / NANOS for time and timestamps
    converted_type: str | None = None
    logical_type: str | None = None

    @property
    def unsupported_reason(self) -> str | None:
        """Why this column cannot be read, or None."""
        if self.nested:
            return f"nested column {self.name!r} (LIST/MAP/STRUCT)"
        if self.type_name.startswith("unsupported:"):
            return f"column {self.name!r} of type {self.type_name[len('unsupported:'):]}"
        return None


@dataclass
class ColumnChunkInfo:
    """One column chunk of a row group: location, codec, encodings, statistics."""
    column: int
    codec: str
    encodings: tuple
    num_values: int
    data_page_offset: int
    dictionary_page_offset: int | None
    index_page_offset: int | None
    total_compressed_size: int
    total_uncompressed_size: int
    start: int                       # first byte of the chunk in the file
    length: int                      # bytes of the chunk
    stats_min: object = None
    stats_max: object = None
    null_count: int | None = None
    distinct_count: int | None = None
    file_path: str | None = None
    encrypted: bool = False
    crypto: object = field(default=None, repr=False)   # scan.crypto.ColumnCrypto: its key
    locked: Exception | None = field(default=None, repr=False)  # why it cannot be read
    bloom_filter_offset: int | None = None
    bloom_filter_length: int | None = None
    column_index_offset: int | None = None
    column_index_length: int | None = None
    offset_index_offset: int | None = None
    offset_index_length: int | None = None
    encoding_stats: list = field(default_factory=list)


@dataclass
class RowGroupInfo:
    index: int
    num_rows: int
    total_byte_size: int
    columns: list
    sorting_columns: list = field(default_factory=list)


@dataclass
class FileMetadata:
    num_rows: int
    version: int
    created_by: str | None
    key_value_metadata: dict
    columns: list
    row_groups: list
    schema: list                      # raw SchemaElement dicts
    raw: dict = field(repr=False, default_factory=dict)


# ---- footer -------------------------------------------------------------------

def footer_length(tail: bytes | memoryview, file_size: int, path: str) -> int:
    """Validate the last 8 bytes of a file; return the footer length."""
    tail = bytes(tail)
    if file_size < 12:
        raise FileFormatError(f"file too small to be Parquet ({file_size} bytes)", file=path)
    if tail[4:] != MAGIC and tail[4:] != MAGIC_ENCRYPTED:
        raise FileFormatError("not a Parquet file (missing PAR1 magic at end)", file=path)
    n = struct.unpack("<I", tail[:4])[0]
    if n + 12 > file_size:
        raise FileFormatError(f"footer length {n} exceeds file size {file_size}", file=path)
    return n


def parse_footer(buf, file_size: int, path: str) -> FileMetadata:
    """Decode FileMetaData from the footer bytes (without length and magic)."""
    raw, _ = decode_footer(buf, path)
    return build_metadata(raw, file_size, path)


def decode_footer(buf, path: str) -> tuple[dict, int]:
    """The FileMetaData struct of the footer bytes, and where it ends (a
    plaintext encrypted footer's signature follows it)."""
    with _footer_errors(path):
        return T.decode_struct(buf, T.FILE_META_DATA)


def build_metadata(raw: dict, file_size: int, path: str, crypto=None) -> FileMetadata:
    """FileMetadata of a decoded FileMetaData; ``crypto`` (a
    scan.crypto.FileCrypto) for an encrypted file's column chunks."""
    with _footer_errors(path):
        return _build(raw, file_size, path, crypto)


class _footer_errors:
    """Python errors from a malformed footer as FileFormatErrors naming the file."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if kind is None:
            return False
        if issubclass(kind, (TypeError, AttributeError, KeyError, IndexError, ValueError)):
            raise FileFormatError(f"malformed file metadata ({kind.__name__}: {e})",
                                  file=self.path) from None
        if issubclass(kind, FileFormatError) and e.file is None:
            raise FileFormatError(str(e), file=self.path) from None
        return False


def _need(d: dict, key: str, what: str, path: str):
    v = d.get(key)
    if v is None:
        raise FileFormatError(f"{what} is missing required field {key}", file=path)
    return v


def _build(raw: dict, file_size: int, path: str, crypto=None) -> FileMetadata:
    if "encryption_algorithm" in raw and crypto is None:
        raise UnsupportedFeatureError("encrypted Parquet file (modular encryption, plaintext "
                                      "footer) opened without scan.crypto")
    schema = _need(raw, "schema", "FileMetaData", path)
    if not schema:
        raise FileFormatError("empty schema", file=path)
    columns = _leaf_columns(schema, path)
    orders = raw.get("column_orders")
    rgs = []
    data_end = file_size - 8
    for i, rg in enumerate(raw.get("row_groups") or []):
        num_rows = _need(rg, "num_rows", f"row group {i}", path)
        if num_rows < 0:
            raise FileFormatError(f"negative row count {num_rows}", file=path, row_group=i)
        chunks = rg.get("columns") or []
        if len(chunks) != len(columns):
            raise FileFormatError(f"row group has {len(chunks)} column chunks, schema has "
                                  f"{len(columns)} leaf columns", file=path, row_group=i)
        ordinal = rg.get("ordinal")
        ordinal = i if ordinal is None else ordinal
        infos = []
        for j, c in enumerate(chunks):
            lock = None
            if crypto is not None and c.get("crypto_metadata") is not None:
                c, lock = crypto.column_chunk(c, i, ordinal, j, columns[j])
                chunks[j] = c           # decrypted metadata: the pruning reads raw statistics
            info = _chunk_info(c, columns[j], j, orders, path, i, data_end)
            if lock is not None:
                info.encrypted = True
                if isinstance(lock, Exception):
                    info.locked = lock
                else:
                    info.crypto = lock
            infos.append(info)
        rgs.append(RowGroupInfo(i, num_rows, rg.get("total_byte_size") or 0, infos,
                                rg.get("sorting_columns") or []))
    kv = {e.get("key"): e.get("value") for e in raw.get("key_value_metadata") or []}
    return FileMetadata(num_rows=sum(r.num_rows for r in rgs), version=raw.get("version", 0),
                        created_by=raw.get("created_by"), key_value_metadata=kv,
                        columns=columns, row_groups=rgs, schema=schema, raw=raw)


# ---- schema -------------------------------------------------------------------

def _leaf_columns(schema: list, path: str) -> list:
    leaves: list = []
    pos = 1

    def walk(n_children, prefix, def_level, rep_level, depth, in_group_type):
        nonlocal pos
        if depth > _MAX_SCHEMA_DEPTH:
            raise FileFormatError("schema nesting too deep", file=path)
        for _ in range(n_children):
            if pos >= len(schema):
                raise FileFormatError("schema tree has fewer elements than num_children says",
                                      file=path)
            el = schema[pos]
            pos += 1
            name = el.get("name")
            if name is None:
                raise FileFormatError(f"schema element {pos - 1} has no name", file=path)
            rep = el.get("repetition_type", T.REQUIRED)
            d = def_level + (1 if rep in (T.OPTIONAL, T.REPEATED) else 0)
            r = rep_level + (1 if rep == T.REPEATED else 0)
            kids = el.get("num_children") or 0
            if kids < 0:
                raise FileFormatError(f"schema element {name!r} has negative num_children", file=path)
            if kids > 0 or "type" not in el:
                walk(kids, prefix + (name,), d, r, depth + 1, True)
                continue
            nested = in_group_type or rep == T.REPEATED
            leaves.append(column_info(el, len(leaves), prefix + (name,), d, r, nested, path))

    root = schema[0]
    walk(root.get("num_children") or 0, (), 0, 0, 0, False)
    if pos != len(schema):
        raise FileFormatError(f"schema has {len(schema) - pos} elements outside the tree", file=path)
    return leaves


def column_info(el, index, col_path, max_def, max_rep, nested, path) -> ColumnInfo:
    """The ColumnInfo of leaf schema element ``el`` (a decoded
    SchemaElement), the ``index``-th leaf, at ``col_path`` with the given
    maximum levels; ``path`` (the file) names it in errors."""
    ptype = el["type"]
    if not isinstance(ptype, int) or not 0 <= ptype < len(T.PHYSICAL_TYPES):
        raise FileFormatError(f"column {'.'.join(col_path)!r} has unknown physical type {ptype}",
                              file=path)
    physical = T.PHYSICAL_TYPES[ptype]
    type_length = el.get("type_length") or 0
    if physical == "FIXED_LEN_BYTE_ARRAY" and type_length <= 0:
        raise FileFormatError(f"column {'.'.join(col_path)!r}: FIXED_LEN_BYTE_ARRAY without "
                              f"a positive type_length", file=path)
    ct = el.get("converted_type")
    ct_name = T.enum_name(T.CONVERTED_TYPES, ct, "converted_type") if ct is not None else None
    lt = el.get("logicalType")
    lt_name = next(iter(lt), None) if lt else None
    info = ColumnInfo(name=".".join(col_path), index=index, physical_type=physical,
                      type_length=type_length, nullable=max_def > 0, max_def_level=max_def,
                      max_rep_level=max_rep, type_name="", path=col_path, nested=nested,
                      converted_type=ct_name, logical_type=lt_name)
    _assign_type(info, el, lt, lt_name, ct_name)
    return info


# the type name of a column by its physical type alone (no logical or
# converted type); scan/nested.py reads NULL-typed leaves as these
PLAIN_TYPE_NAMES = {"BOOLEAN": "boolean", "INT32": "int32", "INT64": "int64",
                    "INT96": "timestamp_us", "FLOAT": "float32", "DOUBLE": "float64",
                    "BYTE_ARRAY": "blob", "FIXED_LEN_BYTE_ARRAY": "blob"}
_CT_INTS = {"INT_8": (8, True), "INT_16": (16, True), "INT_32": (32, True), "INT_64": (64, True),
            "UINT_8": (8, False), "UINT_16": (16, False), "UINT_32": (32, False),
            "UINT_64": (64, False)}


def _assign_type(info: ColumnInfo, el: dict, lt, lt_name, ct_name) -> None:
    p = info.physical_type
    name = None
    if lt_name is not None:
        name = _from_logical(info, lt[lt_name], lt_name, el)
    if name is None and ct_name is not None:
        name = _from_converted(info, ct_name, el)
    if name is None:
        name = PLAIN_TYPE_NAMES[p]
    info.type_name = name


def _mismatch(info, what):
    return f"unsupported:{what} on {info.physical_type}"


def _decimal(info, precision, scale):
    if precision is None or precision <= 0 or precision > 38 or scale is None \
            or scale < 0 or scale > precision:
        return f"unsupported:DECIMAL({precision},{scale})"
    if info.physical_type not in ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY"):
        return _mismatch(info, "DECIMAL")
    info.precision, info.scale = precision, scale
    return f"decimal({precision},{scale})"


def _int_name(info, bits, signed):
    want = "INT64" if bits == 64 else "INT32"
    if bits not in (8, 16, 32, 64) or info.physical_type != want:
        return _mismatch(info, f"INTEGER({bits},{'signed' if signed else 'unsigned'})")
    return f"{'' if signed else 'u'}int{bits}"


def _from_logical(info: ColumnInfo, body: dict, kind: str, el: dict):
    p = info.physical_type
    if kind in ("STRING", "ENUM", "JSON"):
        return "string" if p == "BYTE_ARRAY" else _mismatch(info, kind)
    if kind in ("BSON", "GEOMETRY", "GEOGRAPHY"):
        return "blob" if p == "BYTE_ARRAY" else _mismatch(info, kind)
    if kind == "UUID":
        ok = p == "FIXED_LEN_BYTE_ARRAY" and info.type_length == 16
        return "uuid" if ok else _mismatch(info, "UUID (FIXED_LEN_BYTE_ARRAY(16))")
    if kind == "DECIMAL":
        return _decimal(info, body.get("precision", el.get("precision")),
                        body.get("scale", el.get("scale", 0)))
    if kind == "DATE":
        return "date" if p == "INT32" else _mismatch(info, kind)
    if kind in ("TIME", "TIMESTAMP"):
        unit = next(iter(body.get("unit") or {}), None)
        if unit is None:
            return f"unsupported:{kind} without unit"
        info.time_unit = unit
        if kind == "TIME":             # as DuckDB: UTC-adjusted is TIME WITH TIME ZONE
            ok = (unit == "MILLIS" and p == "INT32") or (unit in ("MICROS", "NANOS") and p == "INT64")
            if not ok:
                return _mismatch(info, f"TIME({unit})")
            if body.get("isAdjustedToUTC"):
                return "timetz_us"
            return "time_ns" if unit == "NANOS" else "time_us"
        if p != "INT64":
            return _mismatch(info, f"TIMESTAMP({unit})")
        tz = "tz" if body.get("isAdjustedToUTC") else ""
        return f"timestamp{tz}_ns" if unit == "NANOS" else f"timestamp{tz}_us"
    if kind == "INTEGER":
        return _int_name(info, body.get("bitWidth"), body.get("isSigned", True))
    if kind == "UNKNOWN":            # the NULL type: every value is null
        return "null"
    if kind == "FLOAT16":            # half floats are widened to float32 storage
        ok = p == "FIXED_LEN_BYTE_ARRAY" and info.type_length == 2
        return "float32" if ok else _mismatch(info, "FLOAT16 (type_length 2)")
    if kind == "INTERVAL":
        return _interval(info)
    if kind == "VARIANT":
        return f"unsupported:{kind}"
    return None                                    # MAP/LIST on a leaf: fall back


def _from_converted(info: ColumnInfo, ct: str, el: dict):
    p = info.physical_type
    if ct in ("UTF8", "ENUM", "JSON"):
        return "string" if p == "BYTE_ARRAY" else _mismatch(info, ct)
    if ct == "BSON":
        return "blob" if p == "BYTE_ARRAY" else _mismatch(info, ct)
    if ct == "DECIMAL":
        return _decimal(info, el.get("precision"), el.get("scale", 0))
    if ct == "DATE":
        return "date" if p == "INT32" else _mismatch(info, ct)
    if ct == "TIME_MILLIS":
        info.time_unit = "MILLIS"
        return "time_us" if p == "INT32" else _mismatch(info, ct)
    if ct == "TIME_MICROS":
        info.time_unit = "MICROS"
        return "time_us" if p == "INT64" else _mismatch(info, ct)
    if ct in ("TIMESTAMP_MILLIS", "TIMESTAMP_MICROS"):
        info.time_unit = ct.split("_")[1]
        # as DuckDB reads them: TIMESTAMP without time zone
        return "timestamp_us" if p == "INT64" else _mismatch(info, ct)
    if ct in _CT_INTS:
        return _int_name(info, *_CT_INTS[ct])
    if ct == "INTERVAL":
        return _interval(info)
    return None


def _interval(info: ColumnInfo) -> str:
    """INTERVAL: FIXED_LEN_BYTE_ARRAY(12) of little-endian uint32 months,
    days, milliseconds (scan/storage.py's IntervalValue)."""
    if info.physical_type == "FIXED_LEN_BYTE_ARRAY" and info.type_length == 12:
        return "interval"
    return _mismatch(info, "INTERVAL (FIXED_LEN_BYTE_ARRAY(12))")


# ---- column chunks and statistics ------------------------------------------------

def _chunk_info(cc: dict, col: ColumnInfo, j: int, orders, path, rg, data_end) -> ColumnChunkInfo:
    md = cc.get("meta_data")
    encrypted = "crypto_metadata" in cc or "encrypted_column_metadata" in cc
    if md is None:
        if encrypted:
            md = {}
        else:
            raise FileFormatError("column chunk has no metadata", file=path, row_group=rg,
                                  column=col.name)
    codec = T.enum_name(T.CODECS, md.get("codec", 0), "codec")
    dpo = md.get("data_page_offset", 0)
    dict_off = md.get("dictionary_page_offset")
    start = dpo
    if dict_off is not None and 0 < dict_off < dpo:
        start = dict_off
    info = ColumnChunkInfo(
        column=j, codec=codec,
        encodings=tuple(T.enum_name(T.ENCODINGS, e, "encoding") for e in md.get("encodings") or []),
        num_values=md.get("num_values", 0), data_page_offset=dpo, dictionary_page_offset=dict_off,
        index_page_offset=md.get("index_page_offset"),
        total_compressed_size=md.get("total_compressed_size", 0),
        total_uncompressed_size=md.get("total_uncompressed_size", 0),
        start=start, length=md.get("total_compressed_size", 0),
        file_path=cc.get("file_path"), encrypted=encrypted,
        bloom_filter_offset=md.get("bloom_filter_offset"),
        bloom_filter_length=md.get("bloom_filter_length"),
        column_index_offset=cc.get("column_index_offset"),
        column_index_length=cc.get("column_index_length"),
        offset_index_offset=cc.get("offset_index_offset"),
        offset_index_length=cc.get("offset_index_length"),
        encoding_stats=md.get("encoding_stats") or [])
    stats = md.get("statistics")
    if stats:
        info.null_count = usable_null_count(stats, col, info.num_values)
        info.distinct_count = stats.get("distinct_count")
        if not col.nested and not col.type_name.startswith("unsupported:"):
            info.stats_min, info.stats_max = decode_min_max(stats, col)
    return info


_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
# the value range of the integer types narrower than their physical type:
# statistics outside it contradict the column (DuckDB's out_of_range_stats)
_INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1),
               "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1)}


def usable_null_count(stats: dict, col: ColumnInfo, num_values) -> int | None:
    """The statistics' null_count when it agrees with the chunk: not
    negative, at most ``num_values`` (the chunk's values, or the row
    group's rows), 0 for a required column, and not "every value is NULL"
    beside a min or max (which only non-null values have).  None: unknown,
    which skips nothing."""
    nc = stats.get("null_count")
    if not isinstance(nc, int) or isinstance(nc, bool) or nc < 0:
        return None
    if isinstance(num_values, int) and num_values >= 0 and nc > num_values:
        return None
    if col.max_def_level == 0 and nc:
        return None
    if nc and nc == num_values and any(stats.get(k) is not None
                                       for k in ("min_value", "max_value", "min", "max")):
        return None
    return nc


def ordered_bounds(lo, hi) -> bool:
    """False when decoded bounds contradict each other (min > max)."""
    if lo is None or hi is None:
        return True
    try:
        return not (lo > hi)
    except TypeError:
        return False


def _signed_sort_order(col: ColumnInfo) -> bool:
    """True when the deprecated min/max (signed comparison) are meaningful."""
    if col.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY", "INT96"):
        return False
    return col.type_name not in _UNSIGNED


def decode_min_max(stats: dict, col: ColumnInfo) -> tuple:
    """(min, max) in storage form, or (None, None) when absent/unusable."""
    lo, hi = stats.get("min_value"), stats.get("max_value")
    if lo is None and hi is None and _signed_sort_order(col):
        lo, hi = stats.get("min"), stats.get("max")
    lo, hi = decode_stat_value(lo, col), decode_stat_value(hi, col)
    if isinstance(lo, float) and lo == 0.0:
        lo = -0.0
    if isinstance(hi, float) and hi == 0.0:
        hi = 0.0
    if lo is None or hi is None or not ordered_bounds(lo, hi):
        return None, None
    return lo, hi


def decode_stat_value(raw, col: ColumnInfo):
    """One statistics value (plain-encoded bytes) -> storage-form Python value."""
    if raw is None:
        return None
    p, t = col.physical_type, col.type_name
    try:
        if p == "BOOLEAN":
            return bool(raw[0]) if len(raw) >= 1 else None
        if p in ("INT32", "INT64"):
            width = 4 if p == "INT32" else 8
            if len(raw) != width:
                return None
            v = int.from_bytes(raw, "little", signed=t not in _UNSIGNED)
            bounds = _INT_RANGES.get(t)
            if bounds is not None and not bounds[0] <= v <= bounds[1]:
                return None
            if t.startswith("decimal") and abs(v) >= 10 ** col.precision:
                return None
            if col.time_unit == "MILLIS":
                v *= 1000
            elif col.time_unit == "NANOS" and t in ("time_us", "timetz_us"):
                v //= 1000
            return v
        if p in ("FLOAT", "DOUBLE"):
            width = 4 if p == "FLOAT" else 8
            if len(raw) != width:
                return None
            v = struct.unpack("<f" if p == "FLOAT" else "<d", raw)[0]
            return None if math.isnan(v) else v
        if p in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
            if t == "float32":                       # FLOAT16
                if len(raw) != 2:
                    return None
                v = struct.unpack("<e", raw)[0]
                return None if math.isnan(v) else v
            if p == "FIXED_LEN_BYTE_ARRAY" and len(raw) != col.type_length:
                return None                          # not a value of this column
            if t.startswith("decimal"):
                v = int.from_bytes(raw, "big", signed=True) if raw else None
                return None if v is None or abs(v) >= 10 ** col.precision else v
            if t == "uuid":
                return int.from_bytes(raw, "big") - (1 << 127)      # storage form
            if t == "interval":
                return None                          # no order in the format
            return bytes(raw)
    except (IndexError, struct.error, ValueError):
        return None
    return None


def locate_chunk(pf, row_group: int, column: int):
    """(ColumnChunkInfo, ColumnInfo, error context) of one column chunk of
    the open file ``pf``, whose side structures (page index, bloom filter)
    are to be read: indexes out of range raise ValueError, an encrypted
    chunk without its key AuthenticationError."""
    if not 0 <= row_group < len(pf.row_groups):
        raise ValueError(f"row group {row_group} out of range (file has {len(pf.row_groups)})")
    if not 0 <= column < len(pf.columns):
        raise ValueError(f"column {column} out of range (file has {len(pf.columns)})")
    col = pf.columns[column]
    chunk = pf.row_groups[row_group].columns[column]
    if chunk.encrypted:
        check_unlocked(chunk)
    return chunk, col, dict(file=pf.path, row_group=row_group, column=col.name)


def check_unlocked(chunk: ColumnChunkInfo) -> None:
    """Raise the error that locks an encrypted chunk (a missing or wrong
    key), a fresh one each time."""
    e = chunk.locked
    if e is not None:
        raise e.again() from None
    if chunk.crypto is None:
        raise UnsupportedFeatureError("encrypted column chunk without its decryption")
