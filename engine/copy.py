"""COPY (query) TO 'file.parquet' (options) and COPY table_or_view TO ...:
the query's rows streamed into scan/writer.py.

Options follow DuckDB's COPY ... (FORMAT parquet) names:

    FORMAT parquet                      the only format written
    COMPRESSION / CODEC                 snappy (default), zstd, gzip, uncompressed
    COMPRESSION_LEVEL n                 zstd / gzip level
    ROW_GROUP_SIZE / CHUNK_SIZE n       rows per row group (default 122880)
    PARQUET_VERSION v1 | v2             data page v1 (default) or v2
    DICTIONARY_SIZE_LIMIT n             most distinct values of a dictionary
                                        (0: no dictionary encoding)
    STRING_DICTIONARY_PAGE_SIZE_LIMIT n most bytes of a string dictionary
    WRITE_BLOOM_FILTER bool             bloom filters (default true: for the
                                        dictionary-encoded columns, as DuckDB)
    BLOOM_FILTER_FALSE_POSITIVE_RATIO x (default 0.01)
    KV_METADATA {key: 'value', ...}     footer key/value metadata
    USE_TMP_FILE bool                   accepted; pqdb always writes a
                                        temporary file and renames it
pqdb's own:
    BLOOM_FILTER_COLUMNS ['a', 'b']     bloom filters for exactly these columns
    WRITE_PAGE_INDEX bool               ColumnIndex + OffsetIndex (default true)
    ENCRYPTION_CONFIG {footer_key: 'name', column_keys: {col: 'name'},
        algorithm, plaintext_footer, aad_prefix, store_aad_prefix,
        key_material}                   Parquet Modular Encryption
                                        (engine/copy_encryption.py)

DuckDB options pqdb does not implement (PARTITION_BY, PER_THREAD_OUTPUT,
FIELD_IDS, ...) are refused by name, any other name is an error naming it.
COPY returns DuckDB's result: one row, column ``Count``, the rows written.

Streaming: the last pipeline's morsels run on the worker threads
(engine.executor.run_streaming); their blocks are staged in result order
(a morsel that finishes early waits in a small reorder buffer), and each
full row group is encoded by the thread that completed it, outside the
lock, then written in row-group order.  Held bytes (waiting blocks, staged
rows, row groups being encoded) count against memory_limit.  A query with
ORDER BY sorts before its last pipeline, which then walks the sorted rows
in order.  Any failure aborts the writer: the target file is untouched.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from engine.block import Block, Vector
from engine.errors import PqdbIOError, UnsupportedFeatureError
from planner.errors import BinderError
from planner.types import BIGINT

_NOT_IMPLEMENTED = ("row_group_size_bytes", "row_groups_per_file", "field_ids",
                    "per_thread_output", "partition_by",
                    "file_size_bytes", "geoparquet_version", "shredding", "return_files",
                    "filename_pattern", "file_extension", "overwrite", "overwrite_or_ignore",
                    "append", "write_partition_columns", "preserve_order", "debug_use_openssl",
                    "dictionary_compression_ratio_threshold")
_CODECS = {"snappy": "SNAPPY", "zstd": "ZSTD", "gzip": "GZIP", "uncompressed": "UNCOMPRESSED",
           "none": "UNCOMPRESSED"}
KNOWN = ("format", "compression", "codec", "compression_level", "row_group_size", "chunk_size",
         "parquet_version", "dictionary_size_limit", "string_dictionary_page_size_limit",
         "write_bloom_filter", "bloom_filter_false_positive_ratio", "kv_metadata",
         "use_tmp_file", "bloom_filter_columns", "write_page_index", "encryption_config")


def _int(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BinderError(f"COPY option {name.upper()} takes an integer, not {value!r}")
    try:
        n = int(value) if not isinstance(value, float) or value.is_integer() else None
    except ValueError:
        n = None
    if n is None or n < low:
        raise BinderError(f"COPY option {name.upper()} takes an integer >= {low}, not {value!r}")
    return n


def _bool(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ("true", "1", "on"):
        return True
    if text in ("false", "0", "off"):
        return False
    raise BinderError(f"COPY option {name.upper()} takes a boolean, not {value!r}")


def write_options(options: dict, names: list):
    """scan.writer.WriteOptions of a COPY's options (``names``: the
    result's columns, which BLOOM_FILTER_COLUMNS must name)."""
    from scan.writer import WriteOptions
    kw: dict = {}
    fmt = str(options.get("format", "parquet")).lower()
    if fmt != "parquet":
        raise UnsupportedFeatureError(f"COPY ... TO format {fmt.upper()} is not supported "
                                      "(pqdb writes PARQUET)")
    for name, value in options.items():
        if name in ("format", "encryption_config") or \
                name == "use_tmp_file" and _bool(name, value) in (True, False):
            continue          # (encryption_config: run_copy, engine/copy_encryption.py)
        if name in ("compression", "codec"):
            codec = _CODECS.get(str(value).lower())
            if codec is None:
                raise UnsupportedFeatureError(f"COPY compression {str(value).upper()} is not "
                                              f"supported (known: snappy, zstd, gzip, "
                                              f"uncompressed)")
            kw["compression"] = codec
        elif name == "compression_level":
            kw["level"] = _int(name, value, -(1 << 20))
        elif name in ("row_group_size", "chunk_size"):
            kw["row_group_size"] = _int(name, value)
        elif name == "parquet_version":
            version = str(value).lower()
            if version not in ("v1", "v2"):
                raise BinderError(f"COPY option PARQUET_VERSION takes V1 or V2, not {value!r}")
            kw["data_page_version"] = int(version[1])
        elif name == "dictionary_size_limit":
            limit = _int(name, value, 0)
            if limit == 0:
                kw["dictionary"] = False
            else:
                kw["dictionary_size_limit"] = limit
        elif name == "string_dictionary_page_size_limit":
            kw["dictionary_page_bytes"] = _int(name, value)
        elif name == "write_bloom_filter":
            kw["bloom_filter"] = _bool(name, value)
        elif name == "bloom_filter_false_positive_ratio":
            try:
                ratio = float(value)
            except (TypeError, ValueError):
                ratio = -1.0
            if not 0 < ratio < 1:
                raise BinderError(f"COPY option BLOOM_FILTER_FALSE_POSITIVE_RATIO takes a "
                                  f"number between 0 and 1, not {value!r}")
            kw["bloom_fpp"] = ratio
        elif name == "bloom_filter_columns":
            cols = value if isinstance(value, list) else [value]
            lowered = {n.lower(): n for n in names}
            chosen = []
            for c in cols:
                if not isinstance(c, str) or c.lower() not in lowered:
                    raise BinderError(f"BLOOM_FILTER_COLUMNS names {c!r}, which is not a "
                                      f"column of the result ({', '.join(names)})")
                chosen.append(lowered[c.lower()])
            kw["bloom_columns"] = tuple(chosen)
        elif name == "write_page_index":
            kw["page_index"] = _bool(name, value)
        elif name == "kv_metadata":
            if not isinstance(value, dict):
                raise BinderError("COPY option KV_METADATA takes a struct {key: 'value', ...}")
            kw["kv_metadata"] = {str(k): str(v) for k, v in value.items()}
        elif name in _NOT_IMPLEMENTED:
            raise UnsupportedFeatureError(f"COPY option {name.upper()} is not supported")
        else:
            raise BinderError(f"unrecognized COPY option {name.upper()} for PARQUET (known: "
                              + ", ".join(k.upper() for k in KNOWN) + ")")
    return WriteOptions(**kw)


class _OrderedWriter:
    """Morsels' blocks in, row groups out in result order (module docstring)."""

    WINDOW = 8        # morsels a worker may finish ahead of the next one to stage

    def __init__(self, writer, stager, options, memory, threads: int):
        self.writer = writer
        self.stager = stager
        self.options = options
        self.memory = memory
        self.window = self.WINDOW * max(threads, 1)
        self.cond = threading.Condition()
        self.pending: dict = {}
        self.next = 0
        self.tickets = 0
        self.written = 0
        self.staged_reserved = 0
        self.failed = False

    def _reserve(self, nbytes: int, what: str) -> None:
        self.memory.reserve(nbytes, what)

    def deliver(self, i: int, blocks: list) -> None:
        from engine.operators.collect import block_nbytes
        from scan.writer import encode_row_group
        held = sum(block_nbytes(b) for b in blocks)
        groups = []
        with self.cond:
            while i > self.next + self.window and not self.failed:
                self.cond.wait()
            if self.failed:
                return
            try:
                self._reserve(held, "COPY blocks waiting for their turn")
            except BaseException:
                self.failed = True
                self.cond.notify_all()
                raise
            self.pending[i] = (blocks, held)
            if i != self.next:
                return
            try:
                while self.next in self.pending:
                    ready, nbytes = self.pending.pop(self.next)
                    for b in ready:
                        self.stager.add(b.columns, b.n)
                    self.memory.release(nbytes)
                    self.next += 1
                grown = self.stager.nbytes - self.staged_reserved
                if grown > 0:
                    self._reserve(grown, "COPY rows staged for a row group")
                    self.staged_reserved += grown
                while self.stager.full():
                    staged, rows, nbytes = self.stager.take()
                    self.staged_reserved -= nbytes
                    groups.append((self.tickets, staged, rows, nbytes))
                    self.tickets += 1
            except BaseException:
                self.failed = True
                raise
            finally:
                self.cond.notify_all()
        for ticket, staged, rows, nbytes in groups:
            try:
                chunks = encode_row_group(staged, self.writer.leaves, self.options)
            except BaseException:
                self.fail()
                raise
            self._write(ticket, chunks, rows, nbytes)

    def _write(self, ticket: int, chunks: list, rows: int, nbytes: int) -> None:
        with self.cond:
            while self.written != ticket and not self.failed:
                self.cond.wait()
            try:
                if not self.failed:
                    self.writer.write_row_group(chunks, rows)
            except BaseException:
                self.failed = True
                raise
            finally:
                self.written += 1
                self.memory.release(nbytes)
                self.cond.notify_all()

    def fail(self) -> None:
        with self.cond:
            self.failed = True
            self.cond.notify_all()


def run_copy(connection, stmt, params):
    """Run a planner.statements.CopyStatement; DuckDB's one-row Count result."""
    from engine.api import Result
    from engine.context import ExecutionContext
    from engine.executor import run_streaming
    from engine.scheduler import parallel_map
    from planner import plan_query
    from scan.writer import ParquetFileWriter, RowGroupStager, encode_row_group
    plan = plan_query(stmt.ast, connection.catalog, params=params, sql=stmt.sql)
    names = [f.name for f in plan.schema]
    types = [f.type for f in plan.schema]
    lowered = [n.lower() for n in names]
    dupes = sorted({n for n in names if lowered.count(n.lower()) > 1})
    if dupes:
        raise BinderError(f"COPY ... TO needs distinct column names; {', '.join(dupes)} "
                          "appear more than once")
    options = write_options(stmt.options, names)
    if "encryption_config" in stmt.options:
        from engine.copy_encryption import encrypting_sink
        options.sink = encrypting_sink(stmt.options["encryption_config"],
                                       connection.catalog.keys, names, types)
    path = os.path.expanduser(stmt.path)
    if os.path.isdir(path):
        raise PqdbIOError(f"cannot write {path}: it is a directory", url=path)
    config = connection.config
    ctx = ExecutionContext(config, connection.catalog.open_file,
                           open_at_once=connection.catalog.open_at_once,
                           caches=connection.catalog.memory_caches())
    threads = config.effective_threads
    memory = ctx.memory.child()
    writer = ParquetFileWriter(path, names, types, options)
    try:
        stager = RowGroupStager(writer.types, writer.leaves, options.row_group_size)
        ordered = _OrderedWriter(writer, stager, options, memory, threads)
        try:
            run_streaming(plan, ctx, ordered.deliver, stop=lambda: ordered.failed)
        except BaseException:
            ordered.fail()
            raise
        while stager.rows:
            staged, rows, _ = stager.take()
            chunks = encode_row_group(staged, writer.leaves, options,
                                      lambda fn, items: parallel_map(fn, items, threads))
            writer.write_row_group(chunks, rows)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    finally:
        memory.close()
    count = Vector(BIGINT, np.array([writer.num_rows], np.int64))
    return Result(["Count"], [BIGINT], Block([count], 1))


__all__ = ["run_copy", "write_options", "KNOWN"]
