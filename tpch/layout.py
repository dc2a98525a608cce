"""``pqdb-tpch layout DIR``: the physical layout of a directory of Parquet
tables, as in the paper's Tab. 1 (files, rows per row group, pages per
column chunk, encodings, compression, statistics, page index, size).

Everything is read with pqdb's own scan/: the footer through
``scan.open_parquet`` and the pages by walking the page headers of every
column chunk (headers only: nothing is decompressed)."""

from __future__ import annotations

import glob
import os
from dataclasses import asdict, dataclass, field

from scan import open_parquet
from scan import thrift as T
from scan.pages import DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE

_ENCODING_NAMES = {"PLAIN_DICTIONARY": "dict", "RLE_DICTIONARY": "dict", "PLAIN": "plain",
                   "RLE": "rle", "BIT_PACKED": "bitpacked", "DELTA_BINARY_PACKED": "delta",
                   "DELTA_LENGTH_BYTE_ARRAY": "delta-length", "DELTA_BYTE_ARRAY": "delta-strings",
                   "BYTE_STREAM_SPLIT": "byte-stream-split"}


@dataclass
class TableLayout:
    table: str
    files: int = 0
    rows: int = 0
    row_groups: int = 0
    rows_per_row_group: list = field(default_factory=list)     # min, avg, max
    column_chunks: int = 0
    data_pages: int = 0
    dictionary_pages: int = 0
    pages_per_chunk: list = field(default_factory=list)        # min, avg, max (data pages)
    page_encodings: list = field(default_factory=list)          # data pages' value encodings
    compression: list = field(default_factory=list)
    chunk_statistics: str = "none"                               # all / some / none
    page_header_statistics: str = "none"
    column_index: str = "none"
    offset_index: str = "none"
    bloom_filters: str = "none"
    size_bytes: int = 0
    writers: list = field(default_factory=list)                  # created_by


def table_files(data_dir: str, table: str) -> list[str]:
    single = os.path.join(data_dir, f"{table}.parquet")
    if os.path.exists(single):
        return [single]
    return sorted(glob.glob(os.path.join(data_dir, table, "*.parquet")))


def discover_tables(data_dir: str) -> list[str]:
    """Table names of a directory: table.parquet files and table/ folders of parts."""
    names = set()
    for entry in os.listdir(data_dir):
        path = os.path.join(data_dir, entry)
        if entry.startswith((".", "_")):
            continue
        if entry.endswith(".parquet") and os.path.isfile(path):
            names.add(entry[:-len(".parquet")])
        elif os.path.isdir(path) and glob.glob(os.path.join(path, "*.parquet")):
            names.add(entry)
    return sorted(names)


def _presence(count: int, total: int) -> str:
    if total == 0 or count == 0:
        return "none"
    return "all" if count == total else f"{count}/{total}"


def count_pages(pf, chunk) -> tuple[int, int, int]:
    """(data pages, dictionary pages, data pages carrying header statistics)
    of one column chunk, from its page headers."""
    buf = pf.buffer_manager.get(pf.source, chunk.start, chunk.length)
    pos, end = 0, len(buf)
    data = dictionary = with_stats = 0
    seen = 0
    while pos < end and seen < chunk.num_values:
        header, body = T.decode_struct(buf, T.PAGE_HEADER, pos, end)
        kind = header.get("type")
        if kind == DICTIONARY_PAGE:
            dictionary += 1
        elif kind in (DATA_PAGE, DATA_PAGE_V2):
            data += 1
            sub = header.get("data_page_header") or header.get("data_page_header_v2") or {}
            seen += sub.get("num_values") or 0
            if sub.get("statistics"):
                with_stats += 1
        pos = body + (header.get("compressed_page_size") or 0)
    return data, dictionary, with_stats


def table_layout(data_dir: str, table: str) -> TableLayout:
    out = TableLayout(table)
    files = table_files(data_dir, table)
    out.files = len(files)
    rg_rows, chunk_pages = [], []
    encodings, codecs, writers = set(), set(), set()
    stats = page_stats = col_index = off_index = bloom = 0
    for path in files:
        out.size_bytes += os.path.getsize(path)
        with open_parquet(path) as pf:
            writers.add((pf.metadata.created_by or "?").split(" (build")[0])
            out.rows += pf.num_rows
            for rg in pf.row_groups:
                rg_rows.append(rg.num_rows)
                for chunk in rg.columns:
                    out.column_chunks += 1
                    codecs.add(chunk.codec.lower())
                    data, dictionary, with_stats = count_pages(pf, chunk)
                    chunk_pages.append(data)
                    out.data_pages += data
                    out.dictionary_pages += dictionary
                    page_stats += with_stats
                    for s in chunk.encoding_stats or []:
                        if s.get("page_type") in (DATA_PAGE, DATA_PAGE_V2):
                            encodings.add(T.ENCODINGS.get(s.get("encoding"), "?"))
                    if not chunk.encoding_stats:
                        encodings.update(e for e in chunk.encodings if e not in ("RLE", "BIT_PACKED"))
                    stats += chunk.stats_min is not None or chunk.null_count is not None
                    col_index += chunk.column_index_offset is not None
                    off_index += chunk.offset_index_offset is not None
                    bloom += chunk.bloom_filter_offset is not None
    out.row_groups = len(rg_rows)
    if rg_rows:
        out.rows_per_row_group = [min(rg_rows), round(sum(rg_rows) / len(rg_rows)), max(rg_rows)]
    if chunk_pages:
        out.pages_per_chunk = [min(chunk_pages), round(sum(chunk_pages) / len(chunk_pages), 1),
                               max(chunk_pages)]
    out.page_encodings = sorted({_ENCODING_NAMES.get(e, e.lower()) for e in encodings})
    out.compression = sorted(codecs)
    n = out.column_chunks
    out.chunk_statistics = _presence(stats, n)
    out.page_header_statistics = _presence(page_stats, out.data_pages)
    out.column_index = _presence(col_index, n)
    out.offset_index = _presence(off_index, n)
    out.bloom_filters = _presence(bloom, n)
    out.writers = sorted(writers)
    return out


def directory_layout(data_dir: str, tables=None) -> list[TableLayout]:
    return [table_layout(data_dir, t) for t in (tables or discover_tables(data_dir))]


def _span(values, fmt="{:,}") -> str:
    if not values:
        return "-"
    lo, avg, hi = values
    if lo == hi:
        return fmt.format(lo)
    return f"{fmt.format(lo)}..{fmt.format(hi)} (avg {fmt.format(avg)})"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


COLUMNS = ("table", "files", "row groups", "rows / row group", "pages / column chunk",
           "encodings", "compression", "statistics", "page index", "size")


def layout_rows(layouts: list[TableLayout]) -> list[list[str]]:
    rows = []
    for t in layouts:
        stats = t.chunk_statistics + ("" if t.page_header_statistics == "none"
                                      else f" (+page headers {t.page_header_statistics})")
        index = ("column+offset " + t.column_index if t.column_index == t.offset_index
                 else f"column {t.column_index}, offset {t.offset_index}")
        if t.column_index == "none" and t.offset_index == "none":
            index = "none"
        if t.bloom_filters != "none":
            index += f"; bloom {t.bloom_filters}"
        rows.append([t.table, str(t.files), f"{t.row_groups:,}", _span(t.rows_per_row_group),
                     _span(t.pages_per_chunk, "{:,}"), ", ".join(t.page_encodings) or "-",
                     ", ".join(t.compression) or "-", stats, index, _size(t.size_bytes)])
    total = sum(t.size_bytes for t in layouts)
    rows.append(["total", str(sum(t.files for t in layouts)),
                 f"{sum(t.row_groups for t in layouts):,}", "", "", "", "", "", "", _size(total)])
    return rows


def markdown_layout(data_dir: str, layouts: list[TableLayout]) -> str:
    writers = sorted({w for t in layouts for w in t.writers})
    lines = [f"Layout of {data_dir} (written by: {'; '.join(writers) or '?'})", "",
             "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for row in layout_rows(layouts):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def layout_json(layouts: list[TableLayout]) -> list[dict]:
    return [asdict(t) for t in layouts]
