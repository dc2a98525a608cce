"""The page index (Parquet spec, "Page Index"): per column chunk a
ColumnIndex (per page: null_pages, min/max, null counts, boundary order) and
an OffsetIndex (per page: file offset, compressed size, first row index).
Both are thrift structs stored between the row groups and the footer, at the
offsets the ColumnChunk gives.

``read_column_index`` / ``read_offset_index`` decode and validate them; min
and max are converted to engine storage form (None for null pages and
unusable values), like the footer statistics, so a pruning step can compare
literals directly."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scan import thrift as T
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.metadata import decode_stat_value, locate_chunk

PAGE_LOCATION = {1: ("offset", T.I64, None), 2: ("compressed_page_size", T.I32, None),
                 3: ("first_row_index", T.I64, None)}
OFFSET_INDEX = {1: ("page_locations", T.LIST, (T.STRUCT, PAGE_LOCATION)),
                2: ("unencoded_byte_array_data_bytes", T.LIST, (T.I64, None))}
COLUMN_INDEX = {1: ("null_pages", T.LIST, (T.BOOL, None)),
                2: ("min_values", T.LIST, (T.BINARY, None)),
                3: ("max_values", T.LIST, (T.BINARY, None)),
                4: ("boundary_order", T.I32, None),
                5: ("null_counts", T.LIST, (T.I64, None)),
                6: ("repetition_level_histograms", T.LIST, (T.I64, None)),
                7: ("definition_level_histograms", T.LIST, (T.I64, None))}
BOUNDARY_ORDERS = ("UNORDERED", "ASCENDING", "DESCENDING")


@dataclass
class ColumnIndex:
    """Per-page statistics of one column chunk.

    ``min_values`` / ``max_values``: storage-form values (None for a null page
    or a value that cannot be used); ``raw_min`` / ``raw_max`` the plain bytes;
    ``null_counts``: int64 array or None when the writer left it out."""
    null_pages: np.ndarray
    min_values: list
    max_values: list
    raw_min: list
    raw_max: list
    boundary_order: str
    null_counts: np.ndarray | None = None
    repetition_level_histograms: np.ndarray | None = None
    definition_level_histograms: np.ndarray | None = None

    @property
    def num_pages(self) -> int:
        return len(self.null_pages)


@dataclass
class OffsetIndex:
    """Where each data page of a column chunk lies and which rows it holds."""
    offsets: np.ndarray                      # int64 file offsets of the page headers
    compressed_sizes: np.ndarray             # int32 page sizes incl. header
    first_row_indexes: np.ndarray            # int64, first row of each page in the row group
    unencoded_byte_array_data_bytes: np.ndarray | None = None
    num_rows: int = 0
    row_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def num_pages(self) -> int:
        return len(self.offsets)


def parse_column_index(buf, col) -> ColumnIndex:
    raw, _ = T.decode_struct(buf, COLUMN_INDEX, 0, len(buf))
    null_pages = raw.get("null_pages")
    mins, maxs = raw.get("min_values"), raw.get("max_values")
    if null_pages is None or mins is None or maxs is None:
        raise FileFormatError("column index lacks null_pages, min_values or max_values")
    n = len(null_pages)
    if len(mins) != n or len(maxs) != n:
        raise FileFormatError(f"column index lists {n} pages but {len(mins)} minima and "
                              f"{len(maxs)} maxima")
    order = raw.get("boundary_order", 0)
    if not isinstance(order, int) or not 0 <= order < len(BOUNDARY_ORDERS):
        raise FileFormatError(f"column index has unknown boundary order {order}")
    null_counts = raw.get("null_counts")
    if null_counts is not None:
        if len(null_counts) != n:
            raise FileFormatError(f"column index lists {n} pages but {len(null_counts)} "
                                  f"null counts")
        null_counts = np.array(null_counts, np.int64)
        if (null_counts < 0).any():
            null_counts = None                      # unknown, as the spec allows
    usable = not col.type_name.startswith("unsupported:")
    lo_vals, hi_vals = [], []
    for is_null, lo, hi in zip(null_pages, mins, maxs):
        if is_null or not usable:
            lo_vals.append(None)
            hi_vals.append(None)
            continue
        lo_v, hi_v = decode_stat_value(lo, col), decode_stat_value(hi, col)
        if isinstance(lo_v, float) and lo_v == 0.0:
            lo_v = -0.0
        if isinstance(hi_v, float) and hi_v == 0.0:
            hi_v = 0.0
        lo_vals.append(lo_v)
        hi_vals.append(hi_v)
    hist = {}
    for key, levels in (("repetition_level_histograms", col.max_rep_level),
                        ("definition_level_histograms", col.max_def_level)):
        h = raw.get(key)
        if h and len(h) == n * (levels + 1):
            hist[key] = np.array(h, np.int64).reshape(n, levels + 1)
    return ColumnIndex(np.array(null_pages, np.bool_), lo_vals, hi_vals, list(mins), list(maxs),
                       BOUNDARY_ORDERS[order], null_counts, **hist)


def parse_offset_index(buf, num_rows: int, chunk_start: int, chunk_end: int) -> OffsetIndex:
    raw, _ = T.decode_struct(buf, OFFSET_INDEX, 0, len(buf))
    locs = raw.get("page_locations")
    if locs is None:
        raise FileFormatError("offset index lacks page_locations")
    try:
        offsets = np.array([loc["offset"] for loc in locs], np.int64)
        sizes = np.array([loc["compressed_page_size"] for loc in locs], np.int64)
        first = np.array([loc["first_row_index"] for loc in locs], np.int64)
    except KeyError as e:
        raise FileFormatError(f"offset index page location lacks {e.args[0]}") from None
    if len(locs):
        if first[0] != 0:
            raise FileFormatError(f"offset index: first page starts at row {first[0]}, not 0")
        if (np.diff(first) < 0).any() or first[-1] >= max(num_rows, 1):
            raise FileFormatError("offset index: first_row_index values are not increasing "
                                  f"within 0..{num_rows - 1}")
        if (sizes <= 0).any() or (offsets < chunk_start).any() \
                or (offsets + sizes > chunk_end).any():
            raise FileFormatError(f"offset index: a page lies outside its column chunk "
                                  f"{chunk_start}..{chunk_end}")
        if (np.diff(offsets) < sizes[:-1]).any():
            raise FileFormatError("offset index: pages overlap or are out of order")
    counts = np.diff(np.append(first, num_rows)) if len(locs) else np.zeros(0, np.int64)
    unenc = raw.get("unencoded_byte_array_data_bytes")
    if unenc is not None:
        unenc = np.array(unenc, np.int64) if len(unenc) == len(locs) else None
    return OffsetIndex(offsets, sizes.astype(np.int32), first, unenc, num_rows, counts)


def _read(pf, row_group, column, which):
    chunk, col, ctx = locate_chunk(pf, row_group, column)
    off = getattr(chunk, f"{which}_offset")
    length = getattr(chunk, f"{which}_length")
    if off is None or length is None:
        return None, chunk, col, ctx
    end = pf._data_end
    if off < 4 or length <= 0 or off + length > end:
        raise FileFormatError(f"{which.replace('_', ' ')} range {off}+{length} lies outside "
                              f"the data region 4..{end}", **ctx)
    buf = pf.buffer_manager.get(pf.source, off, length)
    if chunk.crypto is not None:        # an encrypted module of the chunk's key
        from scan.crypto import COLUMN_INDEX as CI, OFFSET_INDEX as OI
        buf = chunk.crypto.open(buf, CI if which == "column_index" else OI)
    return buf, chunk, col, ctx


def read_column_index(pf, row_group: int, column: int) -> ColumnIndex | None:
    """The ColumnIndex of one column chunk, or None when the file has none."""
    buf, chunk, col, ctx = _read(pf, row_group, column, "column_index")
    if buf is None:
        return None
    try:
        ci = parse_column_index(buf, col)
        if ci.num_pages == 0 and pf.row_groups[row_group].num_rows > 0:
            raise FileFormatError("column index lists no pages for a non-empty chunk")
    except FileFormatError as e:
        raise FileFormatError(f"bad column index: {e}", **ctx) from None
    return ci if _believable(ci, col, chunk) else None


def _believable(ci: ColumnIndex, col, chunk) -> bool:
    """False for indexes that contradict the schema or the chunk: a pruning
    step must not use them, so they are reported as absent.  parquet-mr with
    statistics disabled writes every page as a null page (e.g. the corpus
    file datapage_v1-snappy-compressed-checksum.parquet)."""
    if not ci.null_pages.any():
        return True
    if col.max_def_level == 0:
        return False                      # a required column has no null pages
    no_stats = chunk.null_count is None and chunk.stats_min is None
    if ci.null_pages.all() and ci.null_counts is None and no_stats:
        return False
    if chunk.null_count is not None and chunk.null_count == 0:
        return False
    return True


def read_offset_index(pf, row_group: int, column: int) -> OffsetIndex | None:
    """The OffsetIndex of one column chunk, or None when the file has none."""
    buf, chunk, col, ctx = _read(pf, row_group, column, "offset_index")
    if buf is None:
        return None
    try:
        oi = parse_offset_index(buf, pf.row_groups[row_group].num_rows, chunk.start,
                                chunk.start + chunk.length)
        if chunk.crypto is not None:
            oi = _plaintext_offsets(pf, chunk, oi)
        return oi
    except FileFormatError as e:
        raise FileFormatError(f"bad offset index: {e}", **ctx) from None
    except UnsupportedFeatureError:
        raise


def _plaintext_offsets(pf, chunk, oi: OffsetIndex) -> OffsetIndex:
    """The offset index of an encrypted chunk with its pages where they lie
    in the chunk's plaintext buffer (scan/crypto.py), read from chunk.start
    on as the readers of the chunk see it."""
    buf = pf.buffer_manager.get(pf.source, chunk.start, chunk.length)
    _, where = chunk.crypto.plaintext_chunk(buf, chunk.num_values,
                                            bool(chunk.dictionary_page_offset))
    try:
        spans = [where[int(o) - chunk.start] for o in oi.offsets]
    except KeyError:
        raise FileFormatError("offset index names a position where no encrypted page "
                              "header starts") from None
    offsets = np.array([chunk.start + p for p, _ in spans], np.int64)
    sizes = np.array([n for _, n in spans], np.int32)
    return OffsetIndex(offsets, sizes, oi.first_row_indexes, oi.unencoded_byte_array_data_bytes,
                       oi.num_rows, oi.row_counts)


def offset_index_agrees(pf, row_group: int, column: int, oi: OffsetIndex) -> bool:
    """True when every page ``oi`` names is, by its page header, a data page
    of the rows the index gives it, ending where the index says: an offset
    index whose row counts the pages contradict must not decide which rows
    a filter skips (the reader walks the headers instead, scan/row_ranges.py).
    Reads the chunk through the buffer manager, as the scan of it will."""
    col, rg, chunk, length = pf._check_chunk(row_group, column)
    if col.max_rep_level > 0:
        return False                       # nested: pages hold values, not rows
    buf = pf.chunk_buffer(chunk, length)
    for p in range(oi.num_pages):
        pos = int(oi.offsets[p]) - chunk.start
        try:
            header, body = T.decode_struct(buf, T.PAGE_HEADER, pos, len(buf))
        except FileFormatError:
            return False
        kind = header.get("type")
        h = header.get("data_page_header" if kind == 0 else "data_page_header_v2")
        if kind not in (0, 3) or h is None or h.get("num_values") != int(oi.row_counts[p]) \
                or body + header.get("compressed_page_size", -1) != pos + int(oi.compressed_sizes[p]):
            return False
    return True
