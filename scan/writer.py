"""Writing Parquet files: columns in block storage form + a schema -> a file.

    from scan.writer import write_parquet, WriteOptions, ColumnType
    write_parquet("out.parquet", columns, [("a", ColumnType("BIGINT"))],
                  WriteOptions(compression="ZSTD"))

A column is any object with the block storage attributes of
engine/block.py's Vector: ``data`` (scan/storage.py's form of its type),
``nulls`` (None or uint8, 1 = NULL), ``heap`` (strings), ``children``
(nested); ``ints`` is read instead of ``data`` where present (a wide
DECIMAL held as int64).  A type is anything with ``id``, ``precision``,
``scale``, ``children`` (planner.types.DataType, or ``ColumnType``).
scan/write_schema.py says which Parquet types each is written as.

Pieces (the engine runs them on several threads, scan/ knows no SQL):

- ``RowGroupStager``: blocks -> each leaf column's levels and values
  (scan/write_levels.py), cut into row groups of ``row_group_size`` rows.
- ``encode_row_group``: a staged row group -> its encoded column chunks
  (scan/write_chunk.py: pages, statistics, page index, bloom filters);
  pure, so row groups and chunks may be encoded in parallel.
- ``ParquetFileWriter``: writes encoded row groups in order to a temporary
  file beside the target, then bloom filters, ColumnIndex and OffsetIndex
  of every chunk, the footer; ``close()`` fsyncs and renames it into place
  (atomic: a failed write leaves the target as it was), ``abort()``
  removes it.
- ``ParquetWriter``: the three in sequence; ``write_parquet``: one call.

Encryption hook (Parquet Modular Encryption: scan/write_crypto.py's
``EncryptingSink`` plugs in here): every
byte the writer puts in the file after the leading magic passes through one
``ModuleSink`` (WriteOptions.sink), whose default writes plaintext:

- ``module(kind, row_group, column, page, data) -> bytes`` for each module,
  ``kind`` one of the spec's module types below (FOOTER is not passed here;
  ``page`` is the data page ordinal within its column chunk, -1 for
  modules that have none).  Page bodies pass *before* their headers: a
  header's ``compressed_page_size`` is the length ``module`` returned for
  its body, and OffsetIndex page sizes, column chunk offsets and sizes are
  those of the bytes as written, so an encrypting sink only returns longer
  bytes.  A page header is encoded with its final sizes and then passed as
  DATA_PAGE_HEADER / DICTIONARY_PAGE_HEADER; a bloom filter as
  BLOOM_FILTER_HEADER then BLOOM_FILTER_BITSET; ColumnIndex / OffsetIndex
  as their thrift bytes.
- ``column_chunk(row_group, column, chunk) -> dict``: the ColumnChunk
  thrift dict of the footer (an encrypting sink sets crypto_metadata and
  replaces meta_data by encrypted_column_metadata, encoding the
  ColumnMetaData with scan.thrift_encode.encode_struct and passing it as
  COLUMN_META_DATA).
- ``file_metadata(meta) -> dict``: the FileMetaData dict before it is
  encoded (plaintext-footer mode adds encryption_algorithm and
  footer_signing_key_metadata).
- ``page_checksums``: when true, every page header carries the CRC-32 of
  the page bytes as written (AES_GCM_CTR_V1 sets it: CTR pages have no tag).
- ``footer(footer_bytes) -> bytes``: everything after the last index, given
  the encoded FileMetaData: by default the footer, its length and ``magic``
  ("PAR1"); an encrypted footer writes FileCryptoMetaData, the encrypted
  footer, the length and "PARE" (and sets ``magic`` = b"PARE", which the
  writer also puts at the start of the file).
"""

from __future__ import annotations

import os
import secrets
import zlib
from dataclasses import dataclass, field

import numpy as np

from scan import thrift as T
from scan.codecs import WRITE_CODECS
from scan.errors import PqdbIOError, UnsupportedFeatureError
from scan.pageindex import COLUMN_INDEX, OFFSET_INDEX
from scan.thrift_encode import encode_struct
from scan.write_chunk import DICTIONARY_PAGE, encode_chunk
from scan.write_levels import LeafPart, shred
from scan.write_schema import ColumnType, build_schema

__all__ = ["write_parquet", "WriteOptions", "ColumnType", "ModuleSink", "ParquetWriter",
           "ParquetFileWriter", "RowGroupStager", "encode_row_group"]

# module types of Parquet Modular Encryption (the AAD's module type byte)
FOOTER, COLUMN_META_DATA, DATA_PAGE_MODULE, DICTIONARY_PAGE_MODULE = 0, 1, 2, 3
DATA_PAGE_HEADER, DICTIONARY_PAGE_HEADER, COLUMN_INDEX_MODULE, OFFSET_INDEX_MODULE = 4, 5, 6, 7
BLOOM_FILTER_HEADER, BLOOM_FILTER_BITSET = 8, 9


class ModuleSink:
    """The identity sink: a plaintext Parquet file (see the module docstring)."""
    magic = b"PAR1"
    page_checksums = False       # page headers carry the CRC-32 of the page as written

    def module(self, kind: int, row_group: int, column: int, page: int, data: bytes) -> bytes:
        return data

    def column_chunk(self, row_group: int, column: int, chunk: dict) -> dict:
        return chunk

    def file_metadata(self, meta: dict) -> dict:
        return meta

    def footer(self, footer: bytes) -> bytes:
        return footer + len(footer).to_bytes(4, "little") + self.magic


@dataclass
class WriteOptions:
    compression: str = "SNAPPY"             # UNCOMPRESSED, SNAPPY, GZIP, ZSTD
    level: int | None = None                # compression level (ZSTD, GZIP)
    row_group_size: int = 122880            # rows per row group (DuckDB's default)
    data_page_version: int = 1              # 1 or 2
    dictionary: bool = True
    dictionary_size_limit: int | None = None    # distinct values; None: row_group_size // 5
    dictionary_page_bytes: int = 1 << 20    # string dictionaries larger than this: PLAIN
    page_rows: int = 20000                  # rows per data page at most
    page_bytes: int = 1 << 20               # about this many value bytes per page
    page_index: bool = True                 # ColumnIndex + OffsetIndex
    bloom_filter: bool = True               # DuckDB's WRITE_BLOOM_FILTER
    bloom_columns: tuple | None = None      # None: dictionary-encoded columns; else these
    bloom_fpp: float = 0.01                 # false positive ratio
    kv_metadata: dict = field(default_factory=dict)
    created_by: str = "pqdb"
    sink: ModuleSink = field(default_factory=ModuleSink)

    def __post_init__(self):
        self.compression = str(self.compression).upper()
        if self.compression == "NONE":
            self.compression = "UNCOMPRESSED"
        if self.compression not in WRITE_CODECS:
            raise UnsupportedFeatureError(f"writing compression codec {self.compression} "
                                          f"(known: {', '.join(WRITE_CODECS)})")
        if self.data_page_version not in (1, 2):
            raise ValueError(f"data page version {self.data_page_version}: 1 or 2")
        if self.row_group_size < 1:
            raise ValueError("row_group_size must be positive")
        if self.dictionary_size_limit is None:
            self.dictionary_size_limit = max(self.row_group_size // 5, 1)
        if not 0 < self.bloom_fpp < 1:
            raise ValueError("bloom filter false positive ratio must be in (0, 1)")

    def bloom_for(self, leaf, dictionary: bool) -> bool:
        """Whether the chunk of ``leaf`` gets a bloom filter."""
        if not self.bloom_filter or leaf.order == "none" or leaf.physical == "BOOLEAN":
            return False
        if self.bloom_columns is not None:
            return leaf.path[0] in self.bloom_columns or ".".join(leaf.path) in self.bloom_columns
        return dictionary


# ---- staging ---------------------------------------------------------------------------

def _split_part(p: LeafPart, row: int, max_def: int) -> tuple[LeafPart, LeafPart]:
    """A LeafPart cut before top-level row ``row``."""
    e = row if p.reps is None else int(np.flatnonzero(p.reps == 0)[row]) if row < p.rows \
        else p.entries
    v = e if p.defs is None else int(np.count_nonzero(p.defs[:e] == max_def))
    vals = p.values
    if isinstance(vals, tuple):
        off, data = vals
        a = (off[:v + 1] - off[0], data[off[0]:off[v]])
        b = (off[v:] - off[v], data[off[v]:off[-1]])
    else:
        a, b = vals[:v], vals[v:]

    def cut(x, lo, hi):
        return None if x is None else x[lo:hi]
    return (LeafPart(cut(p.defs, 0, e), cut(p.reps, 0, e), a, row),
            LeafPart(cut(p.defs, e, None), cut(p.reps, e, None), b, p.rows - row))


def part_nbytes(p: LeafPart) -> int:
    n = 0
    for x in (p.defs, p.reps):
        if x is not None:
            n += x.nbytes
    v = p.values
    return n + (v[0].nbytes + v[1].nbytes if isinstance(v, tuple) else v.nbytes)


class RowGroupStager:
    """Blocks in, staged row groups (per leaf, its LeafParts) out."""

    def __init__(self, types: list, leaves: list, row_group_size: int):
        self.types = types
        self.leaves = leaves
        self.row_group_size = row_group_size
        self._leaf_ranges = []
        k = 0
        for t in types:
            n = _count_leaves(t)
            self._leaf_ranges.append((k, k + n))
            k += n
        self.parts: list[list] = [[] for _ in leaves]
        self.rows = 0
        self.nbytes = 0

    def add(self, columns: list, n: int) -> None:
        """Stage one block of ``n`` rows (``columns`` in schema order)."""
        if n == 0:
            return
        for (a, b), col, t in zip(self._leaf_ranges, columns, self.types):
            for k, part in zip(range(a, b), shred(col, t, self.leaves[a:b], n)):
                self.parts[k].append(part)
                self.nbytes += part_nbytes(part)
        self.rows += n

    def full(self) -> bool:
        return self.rows >= self.row_group_size

    def take(self, rows: int | None = None) -> tuple[list, int, int] | None:
        """(parts per leaf, rows, bytes) of the next row group: the first
        ``rows`` (default row_group_size) staged rows, or all of them."""
        if self.rows == 0:
            return None
        want = min(self.rows if rows is None else rows, self.row_group_size, self.rows)
        out: list[list] = []
        rest: list[list] = []
        for leaf, parts in zip(self.leaves, self.parts):
            got, left, count = [], [], 0
            for p in parts:
                if count >= want:
                    left.append(p)
                elif count + p.rows <= want:
                    got.append(p)
                    count += p.rows
                else:
                    a, b = _split_part(p, want - count, leaf.max_def)
                    got.append(a)
                    left.append(b)
                    count = want
            out.append(got)
            rest.append(left)
        self.parts = rest
        self.rows -= want
        taken = sum(part_nbytes(p) for parts in out for p in parts)
        self.nbytes = max(self.nbytes - taken, 0)
        return out, want, taken


def _count_leaves(t) -> int:
    if t.id in ("LIST", "MAP", "STRUCT"):
        return sum(_count_leaves(ct) for _, ct in t.children)
    return 1


def encode_row_group(staged: list, leaves: list, options: WriteOptions, map_fn=map) -> list:
    """The EncodedChunks of a staged row group (``map_fn``: how to run
    the chunks, e.g. on a thread pool; in leaf order)."""
    order = sorted(range(len(leaves)), key=lambda k: -sum(part_nbytes(p) for p in staged[k]))
    done = list(map_fn(lambda k: encode_chunk(leaves[k], staged[k], options), order))
    out = [None] * len(leaves)
    for k, chunk in zip(order, done):
        out[k] = chunk
    return out


# ---- the file -------------------------------------------------------------------------

class ParquetFileWriter:
    """Encoded row groups -> a Parquet file, atomically (see the module
    docstring).  ``write_row_group`` must be called in row group order."""

    def __init__(self, path: str, names: list, types: list, options: WriteOptions | None = None):
        self.path = os.fspath(path)
        self.options = options or WriteOptions()
        self.sink = self.options.sink
        self.names = [str(n) for n in names]
        self.types = list(types)
        self.schema, self.leaves = build_schema(self.names, self.types)
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, self.temp_path = _create_temp(directory, os.path.basename(self.path))
        except OSError as e:
            raise PqdbIOError(f"cannot write {self.path}: {e.strerror or e}", url=self.path) from None
        self._file = os.fdopen(fd, "wb")
        self._pos = 0
        self._row_groups: list = []            # (RowGroup dict, [(chunk dict, EncodedChunk)])
        self.num_rows = 0
        self._closed = False
        self._write(self.sink.magic)

    def _write(self, data: bytes) -> int:
        """Append ``data``; its file offset."""
        pos = self._pos
        try:
            self._file.write(data)
        except OSError as e:
            raise PqdbIOError(f"cannot write {self.path}: {e.strerror or e}", url=self.path) from None
        self._pos += len(data)
        return pos

    def write_row_group(self, chunks: list, rows: int) -> None:
        """Write one row group's EncodedChunks (leaf order) of ``rows`` rows."""
        rg = len(self._row_groups)
        sink = self.sink
        metas = []
        start_rg = self._pos
        total_uncompressed = total_compressed = 0
        for c, chunk in enumerate(chunks):
            start = self._pos
            header_bytes = 0
            dict_offset = None
            data_offset = None
            locations = []
            ordinal = 0
            for page in chunk.pages:
                is_dict = page.kind == DICTIONARY_PAGE
                body = sink.module(DICTIONARY_PAGE_MODULE if is_dict else DATA_PAGE_MODULE,
                                   rg, c, -1 if is_dict else ordinal, page.body)
                header = dict(page.header)
                header["compressed_page_size"] = len(body)
                if sink.page_checksums:          # CRC-32 of the page as written (signed i32)
                    crc = zlib.crc32(body)
                    header["crc"] = crc - (1 << 32) if crc >= 1 << 31 else crc
                hb = sink.module(DICTIONARY_PAGE_HEADER if is_dict else DATA_PAGE_HEADER,
                                 rg, c, -1 if is_dict else ordinal,
                                 encode_struct(header, T.PAGE_HEADER))
                offset = self._write(hb)
                self._write(body)
                header_bytes += len(hb)
                if is_dict:
                    dict_offset = offset
                else:
                    if data_offset is None:
                        data_offset = offset
                    locations.append({"offset": offset, "compressed_page_size": len(hb) + len(body),
                                      "first_row_index": page.first_row})
                    ordinal += 1
            leaf = chunk.leaf
            meta = {"type": T.PHYSICAL_TYPES.index(leaf.physical), "encodings": chunk.encodings,
                    "path_in_schema": list(leaf.path),
                    "codec": T.CODECS.index(self.options.compression),
                    "num_values": chunk.num_values,
                    "total_uncompressed_size": chunk.uncompressed + header_bytes,
                    "total_compressed_size": self._pos - start,
                    "data_page_offset": data_offset, "dictionary_page_offset": dict_offset,
                    "statistics": chunk.statistics, "encoding_stats": chunk.encoding_stats}
            total_uncompressed += meta["total_uncompressed_size"]
            total_compressed += meta["total_compressed_size"]
            metas.append(({"file_offset": 0, "meta_data": meta}, chunk, locations))
        group = {"columns": None, "total_byte_size": total_uncompressed, "num_rows": rows,
                 "file_offset": start_rg, "total_compressed_size": total_compressed,
                 "ordinal": rg}
        # the pages are written: keep what the indexes and footer need
        self._row_groups.append((group, [(m, c.column_index, c.bloom, loc)
                                         for m, c, loc in metas]))
        for c in chunks:
            c.pages = []
        self.num_rows += rows

    def _indexes(self) -> None:
        """Bloom filters, then every ColumnIndex, then every OffsetIndex."""
        sink = self.sink
        for rg, (_, chunks) in enumerate(self._row_groups):
            for c, (cc, _, bloom, _) in enumerate(chunks):
                if bloom is None:
                    continue
                header, bitset = bloom
                from scan.bloom import BLOOM_FILTER_HEADER as SPEC
                hb = sink.module(BLOOM_FILTER_HEADER, rg, c, -1, encode_struct(header, SPEC))
                bb = sink.module(BLOOM_FILTER_BITSET, rg, c, -1, bitset)
                cc["meta_data"]["bloom_filter_offset"] = self._write(hb)
                self._write(bb)
                cc["meta_data"]["bloom_filter_length"] = len(hb) + len(bb)
        if not self.options.page_index:
            return
        for which, spec, kind in (("column_index", COLUMN_INDEX, COLUMN_INDEX_MODULE),
                                  ("offset_index", OFFSET_INDEX, OFFSET_INDEX_MODULE)):
            for rg, (_, chunks) in enumerate(self._row_groups):
                for c, (cc, column_index, _, locations) in enumerate(chunks):
                    value = column_index if which == "column_index" else \
                        {"page_locations": locations}
                    if value is None:
                        continue
                    data = sink.module(kind, rg, c, -1, encode_struct(value, spec))
                    cc[f"{which}_offset"] = self._write(data)
                    cc[f"{which}_length"] = len(data)

    def close(self) -> None:
        """Indexes and footer; fsync; rename into place."""
        if self._closed:
            return
        try:
            self._indexes()
            sink = self.sink
            row_groups = []
            for rg, (group, chunks) in enumerate(self._row_groups):
                group = dict(group)
                group["columns"] = [sink.column_chunk(rg, c, cc) for c, (cc, *_) in
                                    enumerate(chunks)]
                row_groups.append(group)
            meta = {"version": 2 if self.options.data_page_version == 2 else 1,
                    "schema": self.schema, "num_rows": self.num_rows, "row_groups": row_groups,
                    "created_by": self.options.created_by,
                    "column_orders": [{"TYPE_ORDER": {}} for _ in self.leaves]}
            if self.options.kv_metadata:
                meta["key_value_metadata"] = [{"key": str(k), "value": v}
                                              for k, v in self.options.kv_metadata.items()]
            meta = sink.file_metadata(meta)
            self._write(sink.footer(encode_struct(meta, T.FILE_META_DATA)))
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.temp_path, self.path)
        except OSError as e:
            self.abort()
            raise PqdbIOError(f"cannot write {self.path}: {e.strerror or e}", url=self.path) from None
        except BaseException:
            self.abort()
            raise
        self._closed = True
        _sync_directory(self.path)

    def abort(self) -> None:
        """Drop the temporary file; the target is left as it was."""
        if self._closed:
            return
        self._closed = True
        try:
            self._file.close()
        except OSError:
            pass
        try:
            os.unlink(self.temp_path)
        except OSError:
            pass


def _create_temp(directory: str, name: str) -> tuple[int, str]:
    """A new file ``.name.<random>.tmp`` in ``directory`` (mode 0666 less
    the umask, as the renamed file should have)."""
    for _ in range(100):
        path = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {directory}")


def _sync_directory(path: str) -> None:
    """fsync the directory holding ``path`` (the rename is durable); best effort."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ParquetWriter:
    """Blocks in, one Parquet file out, in sequence: ``write(columns, n)``
    per block, then ``close()`` (or ``abort()``); a context manager."""

    def __init__(self, path: str, names: list, types: list, options: WriteOptions | None = None,
                 map_fn=map):
        self.file = ParquetFileWriter(path, names, types, options)
        self.options = self.file.options
        self.stager = RowGroupStager(self.file.types, self.file.leaves,
                                     self.options.row_group_size)
        self.map_fn = map_fn

    def write(self, columns: list, n: int) -> None:
        try:
            self.stager.add(columns, n)
            while self.stager.full():
                self._flush()
        except BaseException:
            self.abort()
            raise

    def _flush(self) -> None:
        staged, rows, _ = self.stager.take()
        chunks = encode_row_group(staged, self.file.leaves, self.options, self.map_fn)
        self.file.write_row_group(chunks, rows)

    def close(self) -> int:
        """Write what is staged, the indexes and the footer; the rows written."""
        try:
            while self.stager.rows:
                self._flush()
            self.file.close()
        except BaseException:
            self.abort()
            raise
        return self.file.num_rows

    def abort(self) -> None:
        self.file.abort()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def write_parquet(path: str, columns: list, schema: list, options: WriteOptions | None = None,
                  n: int | None = None) -> int:
    """Write one block of ``columns`` (``schema``: (name, type) pairs) to
    ``path``; returns the rows written."""
    names = [name for name, _ in schema]
    types = [t for _, t in schema]
    if n is None:
        n = len(columns[0].data) if columns else 0
    with ParquetWriter(path, names, types, options) as w:
        w.write(columns, n)
    return w.file.num_rows
