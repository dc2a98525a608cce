"""The public Parquet reader: open a file, list its columns and row groups,
read one column chunk into engine storage (scan/storage.py)."""

from __future__ import annotations

import dataclasses
import re
from typing import NamedTuple

import numpy as np

from scan.codecs import check_codec
from scan.column_data import ColumnData, chunk_error, chunk_errors, empty_storage, to_storage
from scan.errors import FileFormatError, PqdbError, UnsupportedFeatureError
from scan.io.buffer_manager import default_buffer_manager
from scan.io.source import as_source
from scan.metadata import (MAGIC_ENCRYPTED, FileMetadata, build_metadata, check_unlocked,
                           decode_footer, footer_length)
from scan.pages import MAX_DICT_HEADER

_TAIL_READ = 64 * 1024        # speculative tail read: footer usually fits


class PageRun(NamedTuple):
    """What a row range of a flat chunk needs, by its offset index: the
    byte ``ranges`` (the dictionary region, then the run of data pages
    covering the rows), the run's first row and row count in the row group,
    and its page directory [(position in the joined ranges, first row)]."""
    ranges: list
    first_row: int
    num_rows: int
    directory: list


class ParquetFile:
    """An open Parquet file: footer metadata plus column-chunk reads."""

    def __init__(self, source, buffer_manager=None, verify_checksums: bool = True,
                 decryption=None):
        self.source = source
        self.path = getattr(source, "path", str(source))
        self.buffer_manager = buffer_manager or default_buffer_manager()
        self.verify_checksums = verify_checksums
        # encrypted files: the keys (scan.keys.KeyResolver) and, once the
        # footer is read, the file's encryption (scan.crypto.FileCrypto)
        self.decryption = decryption
        self.crypto = None
        self.metadata: FileMetadata = self._read_footer()
        self.num_rows = self.metadata.num_rows
        self.columns = self.metadata.columns
        self.row_groups = self.metadata.row_groups
        self._by_name = {c.name: c.index for c in self.columns}
        # parsed page indexes, per (kind, row group, column): a file is
        # immutable while open, so each is parsed once, not once per morsel
        self._page_indexes: dict = {}
        # derived per-file data other rooms keep with the file (e.g. the
        # engine's pruning ranges); cleared with the file
        self.memo: dict = {}
        self._pads_chunks = _old_parquet_mr(self.metadata.created_by)
        self._checked: dict = {}          # (row group, column) -> _check_chunk's result
        self._prefetcher = None           # remote files: scan/prefetch.py, after will_read
        self._wanted_keys: dict = {}      # field names -> chunk cache keys (want_chunks)

    def _read_footer(self) -> FileMetadata:
        size = self.source.size()
        if size < 12:
            raise FileFormatError(f"file too small to be Parquet ({size} bytes)", file=self.path)
        # one speculative tail read (remote: http_footer_prefetch), a second
        # only when the footer is larger
        tail_len = min(size, max(getattr(self.source, "footer_prefetch", _TAIL_READ), 8))
        tail = self.buffer_manager.get(self.source, size - tail_len, tail_len)
        try:
            n = footer_length(tail[-8:], size, self.path)
        except FileFormatError:
            if bytes(self.buffer_manager.get(self.source, 0, 4)) == MAGIC_ENCRYPTED:
                from scan.errors import AuthenticationError
                raise AuthenticationError("the encrypted file is truncated or damaged: its "
                                          "footer cannot be found", file=self.path,
                                          module="footer") from None
            raise
        if n + 8 <= tail_len:
            footer = tail[tail_len - 8 - n:tail_len - 8]
        else:
            footer = self.buffer_manager.get(self.source, size - 8 - n, n)
        magic = bytes(tail[-4:])
        if tail_len == size:
            head = tail[:4]
        elif getattr(self.source, "remote", False):
            head = magic        # a request for 4 bytes: the footer's magic must do
        else:
            head = self.buffer_manager.get(self.source, 0, 4)
        if bytes(head) != magic:
            raise FileFormatError(f"not a Parquet file (missing {magic.decode()} magic at start)",
                                  file=self.path)
        self._data_end = size - 8 - n
        if magic == MAGIC_ENCRYPTED:
            from scan.crypto import open_encrypted_footer
            self.crypto, footer = open_encrypted_footer(footer, self._keys(), self.path)
        raw, end = decode_footer(footer, self.path)
        if self.crypto is None and "encryption_algorithm" in raw:
            from scan.crypto import open_plaintext_footer
            self.crypto = open_plaintext_footer(raw, footer, end, self._keys(), self.path)
        return build_metadata(raw, size, self.path, self.crypto)

    def _keys(self):
        """The KeyResolver of this file (its key material file found beside it)."""
        from scan.crypto import file_keys
        return file_keys(self.decryption, self.source, self.buffer_manager)

    def column_index(self, name, column=None):
        """``column_index(name)``: leaf index of the column called ``name``
        (dotted path for nested).  ``column_index(row_group, column)``: the
        page index ColumnIndex of that chunk (scan/pageindex.py), or None."""
        if column is not None:
            from scan.pageindex import read_column_index
            return self._page_index("column", name, column, read_column_index)
        try:
            return self._by_name[name]
        except KeyError:
            raise ValueError(f"no column {name!r} in {self.path}") from None

    def read_column(self, row_group: int, column: int, rows=None, codes: bool = False,
                    row_start: int = 0, row_count: int | None = None) -> ColumnData:
        """Decode one column chunk into engine storage.  ``rows``: optional
        bool mask over the row group's rows; only those rows are decoded
        into the result (dictionary pages gather just the kept rows).
        ``codes``: for string columns stored as dictionary pages without
        NULLs, also set ``codes`` (int32 dictionary index per row) and
        ``dictionary`` (its string views over ``heap``).
        ``row_start``/``row_count``: only rows [row_start, row_start+row_count)
        of the row group (``rows`` is then a mask over those rows); only the
        pages covering the range are decoded (scan/row_ranges.py)."""
        checked = self._checked.get((row_group, column))
        if checked is None:
            checked = self._check_chunk(row_group, column)
        col, rg, chunk, length = checked
        ranged = row_count is not None and (row_start > 0 or row_count < rg.num_rows)
        if ranged and not (0 <= row_start and 0 <= row_count
                           and row_start + row_count <= rg.num_rows):
            raise ValueError(f"rows {row_start}+{row_count} out of range (row group has "
                             f"{rg.num_rows} rows)")
        if rows is not None:
            rows = np.ascontiguousarray(rows, dtype=np.bool_)
            if ranged and rows.shape != (row_count,):
                raise ValueError(f"rows mask has shape {rows.shape}, range has {row_count} rows")
            if not ranged and rows.shape != (rg.num_rows,):
                raise ValueError(f"rows mask has shape {rows.shape}, row group has "
                                 f"{rg.num_rows} rows")
        if rg.num_rows == 0:
            return ColumnData(*empty_storage(col), 0, col)
        if self._prefetcher is not None:
            self._prefetcher.on_read(row_group)
            if ranged and col.max_rep_level == 0 and self._prefetcher.reads_pages(row_group) \
                    and not self.buffer_manager.holds(self.source, chunk.start, length):
                got = self._read_pages(row_group, column, row_start, row_count, rows, codes)
                if got is not None:
                    return got
        buf = self.chunk_buffer(chunk, length)
        if ranged and col.max_rep_level == 0:
            return self._read_range(buf, row_group, column, row_start, row_count, rows, codes)
        if ranged:          # nested leaf: whole chunk, then the range
            whole = self.read_column(row_group, column, codes=codes)
            return _slice_column(whole, row_start, row_start + row_count, rows)
        from scan.column import decode_chunk            # the decoders load numba: on first read
        from scan.required_chunk import decode_required_chunk
        try:            # (not chunk_errors: a generator context costs on every chunk)
            want = codes and col.type_name == "string"
            raw = decode_required_chunk(buf, col, chunk, rg.num_rows, self.verify_checksums,
                                        rows, want)
            if raw is None:
                raw = decode_chunk(buf, col, chunk, rg.num_rows, self.verify_checksums, rows,
                                   want)
            if raw.values is None:          # codes only: views gathered on first use
                values, heap = None, raw.heap
                n = len(raw.codes)
            else:
                values, heap = to_storage(raw.values, raw.heap, col)
                n = len(values)
        except Exception as e:
            err = chunk_error(e, self._chunk_ctx(row_group, col))
            if err is None:
                raise
            raise err from None
        return ColumnData(values, raw.nulls, heap, rg.num_rows if rows is None else n,
                          col, raw.codes, raw.dictionary)

    def chunk_dictionary(self, row_group: int, column: int,
                         max_entries: int | None = None) -> np.ndarray | None:
        """The dictionary, in storage form, of a flat fixed-width column
        chunk that was just read and whose every data page is
        dictionary-encoded: every non-NULL value of the chunk is one of its
        entries, so a distinct count may hash the entries instead of the
        rows.  None when that is not known without work (PLAIN pages,
        strings, nested columns, a chunk no longer cached) or it has more
        than ``max_entries`` entries."""
        col, rg, chunk, length = self.chunk_extent(row_group, column)
        if col.max_rep_level or col.max_def_level > 1 or \
                not self.buffer_manager.holds(self.source, chunk.start, length):
            return None
        from scan.required_chunk import decoded_dictionary
        raw = decoded_dictionary(self.chunk_buffer(chunk, length),
                                 chunk.num_values if max_entries is None else max_entries)
        return None if raw is None else to_storage(raw, None, col)[0]

    def will_read(self, plan) -> None:
        """A scan announces what it will read: ``plan`` is [(row group,
        [leaf column indexes, or top-level field names], row ranges)] in
        reading order, the row ranges [(start, count)] or None for the
        whole row group.  For remote files, chunks (or, for a few row
        ranges, their pages) are then requested ahead of the reads
        (scan/prefetch.py); local files ignore it."""
        if not getattr(self.source, "remote", False):
            return
        from scan.prefetch import ChunkPrefetcher
        resolved = [(rg, self._leaves(cols), ranges[0] if ranges else None)
                    for rg, cols, *ranges in plan]
        if self._prefetcher is None:
            self._prefetcher = ChunkPrefetcher(self, self.buffer_manager.memory_budget_bytes // 4)
        self._prefetcher.announce(resolved)

    def _leaves(self, cols) -> list:
        """Leaf column indexes of ``cols`` (leaf indexes, or top-level field
        names: every leaf under the field)."""
        leaves = []
        for c in cols:
            if isinstance(c, str):
                leaves.extend(i.index for i in self.columns if i.path and i.path[0] == c)
            elif 0 <= c < len(self.columns):
                leaves.append(c)
        return leaves

    def want_chunks(self, fields) -> None:
        """A query will read the top-level ``fields`` (names, any case) of
        this file: every row group's chunks of them are marked wanted in
        the buffer manager (BufferManager.want: not evicted for this
        query's other reads, nor for its prefetches of remote chunks)."""
        names = frozenset(f.lower() for f in fields)
        keys = self._wanted_keys.get(names)
        if keys is None:
            leaves = [i.index for i in self.columns if i.path and i.path[0].lower() in names]
            extents = []
            for rg in range(len(self.row_groups)):
                for c in leaves:
                    try:
                        _, _, chunk, length = self.chunk_extent(rg, c)
                    except (PqdbError, ValueError):
                        continue        # (the scan raises it if it reads the chunk)
                    extents.append((chunk.start, length))
            keys = self._wanted_keys[names] = self.buffer_manager.keys_of(self.source, extents)
        if keys:
            self.buffer_manager.want(keys)

    def chunk_extent(self, row_group: int, column: int) -> tuple:
        """(column, row group, chunk, bytes to read) of a readable chunk."""
        checked = self._checked.get((row_group, column))
        return checked if checked is not None else self._check_chunk(row_group, column)

    def _check_chunk(self, row_group: int, column: int) -> tuple:
        """(column, row group, chunk, byte length to read) of a chunk that
        can be read, checked once per file (the footer does not change);
        else the error that says why not."""
        if not 0 <= row_group < len(self.row_groups):
            raise ValueError(f"row group {row_group} out of range (file has {len(self.row_groups)})")
        if not 0 <= column < len(self.columns):
            raise ValueError(f"column {column} out of range (file has {len(self.columns)})")
        col = self.columns[column]
        rg = self.row_groups[row_group]
        chunk = rg.columns[column]
        reason = col.unsupported_reason
        if reason is not None:
            raise UnsupportedFeatureError(reason)
        if chunk.encrypted:
            check_unlocked(chunk)
        if chunk.file_path:
            raise UnsupportedFeatureError(f"column chunk in external file {chunk.file_path!r}")
        check_codec(chunk.codec)
        length = chunk.length
        if rg.num_rows and (chunk.start < 4 or chunk.length <= 0
                            or chunk.start + chunk.length > self._data_end):
            raise FileFormatError(f"column chunk byte range {chunk.start}+{chunk.length} lies "
                                  f"outside the data region 4..{self._data_end}",
                                  **self._chunk_ctx(row_group, col))
        if self._pads_chunks:       # PARQUET-816: dictionary header not counted
            length = min(length + MAX_DICT_HEADER, self._data_end - chunk.start)
        checked = self._checked[(row_group, column)] = (col, rg, chunk, length)
        return checked

    def chunk_buffer(self, chunk, length: int | None = None):
        """The bytes of column chunk ``chunk`` (``length`` of them) through the
        buffer manager; an encrypted chunk's as its plaintext chunk buffer
        (scan/crypto.py), decrypted once per cached chunk."""
        buf = self.buffer_manager.get(self.source, chunk.start,
                                      chunk.length if length is None else length)
        if chunk.crypto is not None:
            buf = chunk.crypto.plaintext_chunk(buf, chunk.num_values,
                                               bool(chunk.dictionary_page_offset))[0]
        return buf

    def _chunk_ctx(self, row_group: int, col) -> dict:
        """What an error names of a chunk: file, row group, column."""
        return dict(file=self.path, row_group=row_group, column=col.name)

    def _read_range(self, buf, row_group, column, row_start, row_count, rows, codes):
        from scan.row_ranges import ChunkState, chunk_state, read_range
        col = self.columns[column]
        rg = self.row_groups[row_group]
        chunk = rg.columns[column]

        def make():
            directory = None
            if chunk.offset_index_offset is not None:
                try:
                    oi = self.offset_index(row_group, column)
                except PqdbError:
                    oi = None
                if oi is not None and len(oi.offsets):
                    directory = [(int(o) - chunk.start, int(f))
                                 for o, f in zip(oi.offsets, oi.first_row_indexes)]
            return ChunkState(buf, col, chunk, rg.num_rows, self.verify_checksums, directory)

        key = (self.source.identity(), row_group, column, chunk.start, id(buf))
        with chunk_errors(self._chunk_ctx(row_group, col)):
            state = chunk_state(key, make)
            values, nulls, heap, cds, dictionary = read_range(
                state, row_start, row_count, codes and col.type_name == "string", rows)
        n = len(values) if values is not None else len(cds)
        return ColumnData(values, nulls, heap, n, col, cds, dictionary)

    def page_run(self, row_group: int, column: int, row_start: int,
                 row_count: int) -> PageRun | None:
        """The PageRun of rows [row_start, row_start+row_count) of a flat,
        unencrypted chunk with an offset index; None when the chunk is to
        be read whole.  (Remote reads of a few row ranges fetch these
        ranges only: scan/prefetch.py.)"""
        col, rg, chunk, _length = self.chunk_extent(row_group, column)
        if col.max_rep_level or chunk.crypto is not None or self._pads_chunks \
                or chunk.offset_index_offset is None:
            return None
        try:
            oi = self.offset_index(row_group, column)
        except PqdbError:
            return None
        if oi is None or not oi.num_pages or int(oi.offsets[0]) < chunk.start:
            return None
        starts = oi.first_row_indexes
        k = max(int(np.searchsorted(starts, row_start, "right")) - 1, 0)
        m = max(int(np.searchsorted(starts, row_start + row_count, "left")) - 1, k)
        first = int(starts[k])
        stop = int(starts[m + 1]) if m + 1 < oi.num_pages else rg.num_rows
        lo, hi = int(oi.offsets[k]), int(oi.offsets[m]) + int(oi.compressed_sizes[m])
        head = int(oi.offsets[0]) - chunk.start          # dictionary page(s)
        if k >= _dictionary_pages(chunk):   # past the writer's fallback to PLAIN
            head = 0
        ranges = ([(chunk.start, head)] if head else []) + [(lo, hi - lo)]
        directory = [(head + int(oi.offsets[i]) - lo, int(starts[i]) - first)
                     for i in range(k, m + 1)]
        return PageRun(ranges, first, stop - first, directory)

    def _read_pages(self, row_group, column, row_start, row_count, rows, codes):
        """A ranged read from the pages of its PageRun alone (the chunk is
        not cached and the scan reads only some row ranges of it); None
        when the run cannot serve it (the whole chunk is read then)."""
        from scan.row_ranges import ChunkState, read_range
        run = self.page_run(row_group, column, row_start, row_count)
        if run is None:
            return None
        col = self.columns[column]
        chunk = self.row_groups[row_group].columns[column]
        parts = [self.buffer_manager.get(self.source, off, n) for off, n in run.ranges]
        buf = parts[0] if len(parts) == 1 else np.concatenate(parts)
        part = dataclasses.replace(chunk, num_values=run.num_rows)
        try:
            state = ChunkState(buf, col, part, run.num_rows, self.verify_checksums,
                               run.directory)
        except PqdbError:           # the offset index disagrees: read the chunk whole
            return None
        try:
            with chunk_errors(self._chunk_ctx(row_group, col)):
                values, nulls, heap, cds, dictionary = read_range(
                    state, row_start - run.first_row, row_count,
                    codes and col.type_name == "string", rows)
        except FileFormatError:
            if len(run.ranges) == 1 and int(run.ranges[0][0]) > chunk.start:
                return None         # a dictionary page after all: the whole chunk says
            raise
        n = len(values) if values is not None else len(cds)
        return ColumnData(values, nulls, heap, n, col, cds, dictionary)

    def read_column_by_name(self, row_group: int, name: str) -> ColumnData:
        return self.read_column(row_group, self.column_index(name))

    def offset_index(self, row_group: int, column: int):
        """The page index OffsetIndex of one chunk (scan/pageindex.py), or None."""
        from scan.pageindex import read_offset_index
        return self._page_index("offset", row_group, column, read_offset_index)

    def _page_index(self, kind: str, row_group: int, column: int, read):
        key = (kind, row_group, column)
        try:
            return self._page_indexes[key]
        except KeyError:
            pass
        index = read(self, row_group, column)     # errors are not cached: they re-raise
        self._page_indexes[key] = index
        return index

    def bloom_filter(self, row_group: int, column: int):
        """The split-block bloom filter of one chunk (scan/bloom.py), or None."""
        from scan.bloom import read_bloom_filter
        return read_bloom_filter(self, row_group, column)

    def read_nested(self, row_group: int, field: str):
        """Assemble top-level field ``field`` (flat or LIST/MAP/STRUCT) of one
        row group: ColumnData, or a ListData / MapData / StructData tree
        (scan/nested.py)."""
        from scan.nested import read_nested
        return read_nested(self, row_group, field)

    def close(self) -> None:
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return (f"ParquetFile({self.path!r}, {self.num_rows} rows, {len(self.columns)} columns, "
                f"{len(self.row_groups)} row groups)")


def open_parquet(path_or_source, buffer_manager=None, verify_checksums: bool = True,
                 decryption=None) -> ParquetFile:
    """Open a Parquet file (path or ByteSource): reads and validates the
    footer.  ``decryption``: a scan.keys.KeyResolver for encrypted files."""
    return ParquetFile(as_source(path_or_source), buffer_manager, verify_checksums, decryption)


_DICT_ENCODINGS = (2, 8)                  # PLAIN_DICTIONARY, RLE_DICTIONARY
_DATA_PAGES = (0, 3)                      # DATA_PAGE, DATA_PAGE_V2


def _dictionary_pages(chunk) -> float:
    """How many of the chunk's first data pages are dictionary-encoded, by
    its encoding_stats (writers fall back to PLAIN once, for good, when the
    dictionary grows too large); infinite when the footer does not say."""
    stats = chunk.encoding_stats
    if not stats:
        return float("inf")
    return sum(int(e.get("count") or 0) for e in stats
               if e.get("page_type") in _DATA_PAGES and e.get("encoding") in _DICT_ENCODINGS)


def _old_parquet_mr(created_by) -> bool:
    """parquet-mr before 1.2.9 left the dictionary page header out of
    total_compressed_size (PARQUET-816); readers pad the chunk range."""
    if not created_by or not created_by.startswith("parquet-mr"):
        return False
    m = re.match(r"parquet-mr(?: version)? (\d+)\.(\d+)\.(\d+)", created_by)
    return m is None or tuple(int(g) for g in m.groups()) < (1, 2, 9)


def _slice_column(cd: ColumnData, start: int, stop: int, rows=None) -> ColumnData:
    """Rows [start, stop) of ``cd`` (and of those, the ones ``rows`` keeps)."""
    values, nulls, codes = cd.values[start:stop], cd.nulls, cd.codes
    nulls = None if nulls is None else nulls[start:stop]
    codes = None if codes is None else codes[start:stop]
    if rows is not None:
        from scan.column import select_rows
        values = select_rows(values, rows)
        nulls = None if nulls is None else nulls[rows]
        codes = None if codes is None else codes[rows]
    return ColumnData(values, nulls, cd.heap, len(values), cd.column, codes, cd.dictionary)


