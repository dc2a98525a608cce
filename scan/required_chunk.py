"""Whole-chunk decode of a required flat column: the common case (no NULLs,
no repetition; INT32/INT64/FLOAT/DOUBLE in PLAIN or dictionary pages, or
strings in dictionary pages) in one kernel call per column chunk.

The general path (scan/column.decode_chunk) walks the pages in Python and
calls a kernel per page.  At several pages per chunk that Python, and the
GIL hand-off at every kernel call, was most of what kept a second thread
waiting (docs/architecture.md, "Scan").  Here:

* the chunk's page table (header fields, validated, CRCs checked) is built
  once per cached chunk buffer and kept in scan/pages' chunk memo;
* one numba kernel decompresses every data page (SNAPPY, by
  scan/snappy_kernel.py, into a page-sized scratch buffer that stays in
  cache) and decodes it, PLAIN or dictionary, into the output, keeping only
  the selected rows.  Other codecs are decompressed by their library into
  one arena first, page by page.

Anything this path does not cover, and any defect, returns None: the
general path then decodes the chunk and names the error."""

from __future__ import annotations

import zlib

import numpy as np
from numba import njit

from scan.column import ChunkValues, _dictionary_page_kernel, decode_dictionary_page, fused_form
from scan.codecs import decompress
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.memops import copy_bytes, load4, load8, store4, store8
from scan.snappy_kernel import snappy_decompress
from scan.pages import DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, _chunk_memo, _make_page, \
    _page_recipe

_PLAIN, _DICT = 0, 1
# physical type -> (kernel dtype, result dtype)
_FIXED = {"INT32": (np.int32, np.int32), "FLOAT": (np.int32, np.float32),
          "INT64": (np.int64, np.int64), "DOUBLE": (np.int64, np.float64)}
_NO_SEL = np.ones(1, np.uint8)


class PageTable:
    """The data pages of one chunk as the kernel needs them: body position
    in the chunk, sizes, value counts, encodings (0 PLAIN, 1 dictionary),
    whether compressed; their places in the query's arena; the dictionary
    page's recipe (or None)."""
    __slots__ = ("dictionary", "starts", "csizes", "usizes", "compressed", "offsets",
                 "arena_size", "k_starts", "k_csizes", "k_compressed", "max_usize", "k_offsets", "k_usizes", "k_nvals", "k_encs",
                 "num_values", "all_dictionary")

    def __init__(self, dictionary, pages):
        self.dictionary = dictionary
        self.starts = [p[0] for p in pages]
        self.csizes = [p[1] for p in pages]
        self.usizes = [p[2] for p in pages]
        self.compressed = [p[5] for p in pages]
        offsets, total = [], 0
        for p in pages:
            offsets.append(total)
            total += p[2]
        self.offsets = offsets
        self.arena_size = total
        self.k_starts = np.array(self.starts, np.int64)
        self.k_offsets = np.array(offsets, np.int64)
        self.k_usizes = np.array(self.usizes, np.int64)
        self.k_csizes = np.array(self.csizes, np.int64)
        self.k_compressed = np.array(self.compressed, np.uint8)
        self.max_usize = max(self.usizes, default=0)
        self.k_nvals = np.array([p[3] for p in pages], np.int64)
        self.k_encs = np.array([p[4] for p in pages], np.int8)
        self.num_values = int(self.k_nvals.sum())
        self.all_dictionary = bool(np.all(self.k_encs == _DICT))


def _build_table(buf, num_values: int, verify: bool, memo) -> PageTable | None:
    """The chunk's PageTable, or None when a page is outside this path
    (another encoding, levels, a second dictionary page, a bad CRC...)."""
    pos, end, seen, ordinal = 0, len(buf), 0, 0
    dictionary = None
    pages = []
    while pos < end and seen < num_values:
        recipe = memo.get(("page", pos)) if memo is not None else None
        if recipe is None:
            recipe = _page_recipe(buf, pos, end, ordinal, memo)
        header, body_pos, csize, usize, fields = recipe
        if verify and header.get("crc") is not None and \
                not (memo is not None and ("crc", pos) in memo):
            if zlib.crc32(buf[body_pos:body_pos + csize]) != header["crc"] & 0xFFFFFFFF:
                return None
            if memo is not None:
                memo[("crc", pos)] = True
        pos = body_pos + csize
        ordinal += 1
        if fields is None:                     # index page or unknown type: skipped
            continue
        kind, n, enc, extra = fields
        if kind == DICTIONARY_PAGE:
            if dictionary is not None or pages:
                return None
            dictionary = (header, body_pos, csize, usize, ordinal - 1, fields)
            continue
        if enc == "PLAIN":
            code = _PLAIN
        elif enc in ("RLE_DICTIONARY", "PLAIN_DICTIONARY"):
            code = _DICT
        else:
            return None
        compressed = True
        if kind == DATA_PAGE_V2:
            rl, dl, compressed = extra[0], extra[1], extra[2]
            if rl or dl:
                return None
        elif kind != DATA_PAGE:
            return None
        pages.append((body_pos, csize, usize, n, code, bool(compressed)))
        seen += n
    return PageTable(dictionary, pages)


def page_table(buf, num_values: int, verify: bool) -> PageTable | None:
    memo = _chunk_memo(buf)
    key = ("required-table", verify)
    if memo is not None and key in memo:
        return memo[key]
    table = _build_table(buf, num_values, verify, memo)
    if memo is not None:
        memo[key] = table
    return table


def decode_required_chunk(buf: np.ndarray, col, chunk, num_rows: int, verify: bool,
                          rows: np.ndarray | None, want_codes: bool) -> ChunkValues | None:
    """decode_chunk for a required flat chunk in one kernel call, or None
    when the chunk needs the general path (see the module docstring)."""
    ptype = col.physical_type
    is_string = ptype == "BYTE_ARRAY" and col.type_name == "string"
    if col.max_def_level != 0 or col.max_rep_level != 0 or \
            (ptype not in _FIXED and not is_string):
        return None
    codec = chunk.codec
    try:
        return _decode(buf, col, chunk, num_rows, verify, rows, want_codes, ptype, is_string,
                       codec)
    except (FileFormatError, UnsupportedFeatureError):
        return None                   # the general path names the defect


def _decode(buf, col, chunk, num_rows, verify, rows, want_codes, ptype, is_string, codec):
    table = page_table(buf, chunk.num_values, verify)
    if table is None or table.num_values != num_rows:
        return None
    if is_string and not table.all_dictionary:
        return None
    dictionary = heap = form = None
    if table.dictionary is not None and not is_string:
        form = (_fixed_dictionary(buf, table, ptype, codec),)
    elif table.dictionary is not None:
        header, body_pos, csize, usize, ordinal, fields = table.dictionary
        page = _make_page(header, DICTIONARY_PAGE, buf[body_pos:body_pos + csize], usize, codec,
                          ordinal, buf, body_pos, None, fields)
        dictionary, heap = decode_dictionary_page(page, None, ptype, col.type_length, is_string)
        if is_string:
            from scan.views import compact_heap
            dictionary, heap = compact_heap(dictionary, heap)
        form = fused_form(dictionary)
        if form is None:
            return None
    elif np.any(table.k_encs == _DICT):
        return None                  # dictionary-encoded pages without a dictionary
    select = rows is not None
    n_keep = int(np.count_nonzero(rows)) if select else num_rows
    sel = rows.view(np.uint8) if select else _NO_SEL
    if is_string:
        kdtype, width = (np.int32 if want_codes else np.complex128), 0
        flat = np.arange(len(dictionary), dtype=np.int32) if want_codes else form[0]
    else:
        kdtype, rdtype = _FIXED[ptype]
        width = np.dtype(kdtype).itemsize
        flat = form[0] if form is not None else np.empty(0, kdtype)
    out = np.empty(n_keep + 1, kdtype)
    kept = _run(buf, table, codec, flat, out, sel, select, width)
    if kept != n_keep:
        return None
    out = out[:kept]
    if not is_string:
        return ChunkValues(out.view(rdtype), None, None)
    if want_codes:
        return ChunkValues(_views_of(form[0], out), None, heap, out, dictionary)
    return ChunkValues(out.view(np.uint64).reshape(-1, 2), None, heap)


def _run(buf, table, codec, flat, out, sel, select, width) -> int:
    """Decompress and decode the chunk's data pages into ``out``; the
    number of values kept, or -1 on a defect."""
    t = table
    if codec == "UNCOMPRESSED":
        if not np.array_equal(t.k_csizes, t.k_usizes):
            return -1                   # a size mismatch: the general path names it
        return _decode_pages(buf, t.k_starts, t.k_usizes, t.k_nvals, t.k_encs, flat, out,
                             out.view(np.uint8), sel, select, width)
    if codec == "SNAPPY":
        scratch = np.empty(t.max_usize + 8, np.uint8)
        return _decode_snappy_pages(buf, t.k_starts, t.k_csizes, t.k_usizes, t.k_compressed,
                                    t.k_nvals, t.k_encs, flat, out, out.view(np.uint8), sel,
                                    select, width, scratch)
    src, starts = _page_bytes(buf, table, codec)
    return _decode_pages(src, starts, t.k_usizes, t.k_nvals, t.k_encs, flat, out,
                         out.view(np.uint8), sel, select, width)


def _fixed_dictionary(buf, table: PageTable, ptype: str, codec: str) -> np.ndarray:
    """The PLAIN dictionary page of a fixed-width chunk, decompressed
    straight into its kernel-form array (no separate page buffer, no copy)."""
    header, body_pos, csize, usize, ordinal, fields = table.dictionary
    kdtype = _FIXED[ptype][0]
    n = fields[1]
    if fields[2] not in ("PLAIN", "PLAIN_DICTIONARY") or n * np.dtype(kdtype).itemsize != usize:
        raise FileFormatError("dictionary page size does not match its values")
    values = np.empty(n, kdtype)
    _decompress_into(codec, buf[body_pos:body_pos + csize], usize, values.view(np.uint8))
    return values


def _decompress_into(codec: str, body, usize: int, out) -> None:
    """``out`` (``usize`` bytes) <- the page body, decompressed."""
    if codec == "UNCOMPRESSED":
        if len(body) != usize:
            raise FileFormatError(f"uncompressed page has {len(body)} bytes, header says {usize}")
        out[:] = body
    else:
        decompress(codec, body, usize, out)


def _views_of(flat, codes):
    """String views of dictionary codes (checked by the decoding kernel):
    (n, 2) uint64 gathered from the dictionary's complex128 form."""
    out = np.empty(len(codes), np.complex128)
    _gather_flat(flat, codes, out)
    return out.view(np.uint64).reshape(-1, 2)


@njit(nogil=True, cache=True)
def _gather_flat(flat, codes, out):
    for i in range(codes.shape[0]):
        out[i] = flat[codes[i]]


def _page_bytes(buf, table: PageTable, codec: str):
    """(arena, start of each data page in it): every page decompressed by
    the codec library (GZIP, ZSTD, LZ4...; SNAPPY is decompressed inside the
    kernel)."""
    arena = np.empty(table.arena_size, np.uint8)
    for start, csize, usize, off, comp in zip(table.starts, table.csizes, table.usizes,
                                               table.offsets, table.compressed):
        _decompress_into(codec if comp else "UNCOMPRESSED", buf[start:start + csize], usize,
                         arena[off:off + usize])
    return arena, table.k_offsets


@njit(nogil=True, cache=True)
def _decode_page(src, pos, end, n, enc, dictionary, out, out_bytes, j, sel, r, use_sel, width):
    """Decode one data page (src[pos:end], n values) into out[j:]: PLAIN
    (``width``-byte values copied) or dictionary-encoded (the fused gather of
    scan/column).  With ``use_sel`` only rows r + k with sel[r + k] != 0 are
    kept.  Returns the number of values kept, or -1 on a defect."""
    if end > src.shape[0]:
        return -1
    if enc == 1:
        if use_sel:
            return _dictionary_page_kernel(src, pos, end, n, dictionary, out[j:],
                                           sel[r:r + n], True)
        return _dictionary_page_kernel(src, pos, end, n, dictionary, out[j:], sel, False)
    if width == 0 or pos + n * width > end:
        return -1
    if not use_sel:
        copy_bytes(out_bytes, j * width, src, pos, n * width)
        return n
    j0 = j
    if width == 8:
        for k in range(n):
            store8(out_bytes, j * 8, load8(src, pos + k * 8))
            j += np.int64(sel[r + k])
    else:
        for k in range(n):
            store4(out_bytes, j * 4, load4(src, pos + k * 4))
            j += np.int64(sel[r + k])
    return j - j0


@njit(nogil=True, cache=True)
def _decode_pages(src, starts, usizes, nvals, encs, dictionary, out, out_bytes, sel, use_sel,
                  width):
    """Decode every data page of a required chunk into ``out``; page i's
    bytes are src[starts[i]:starts[i] + usizes[i]].  ``out`` has one slot of
    slack.  Returns the number of values kept, or -1 on a defect."""
    j = 0
    r = 0
    for i in range(starts.shape[0]):
        kept = _decode_page(src, starts[i], starts[i] + usizes[i], nvals[i], encs[i],
                            dictionary, out, out_bytes, j, sel, r, use_sel, width)
        if kept < 0:
            return -1
        j += kept
        r += nvals[i]
    return j


@njit(nogil=True, cache=True)
def _decode_snappy_pages(buf, starts, csizes, usizes, compressed, nvals, encs, dictionary,
                         out, out_bytes, sel, use_sel, width, scratch):
    """_decode_pages for a SNAPPY chunk: each page is decompressed into
    ``scratch`` (big enough for the largest page) and decoded while it is
    still in cache -- one call for the whole chunk."""
    j = 0
    r = 0
    for i in range(starts.shape[0]):
        usize = usizes[i]
        if compressed[i]:
            if snappy_decompress(buf, starts[i], starts[i] + csizes[i], scratch, 0, usize) < 0:
                return -1
        else:
            if csizes[i] != usize or starts[i] + usize > buf.shape[0]:
                return -1
            copy_bytes(scratch, 0, buf, starts[i], usize)
        kept = _decode_page(scratch, 0, usize, nvals[i], encs[i], dictionary, out, out_bytes,
                            j, sel, r, use_sel, width)
        if kept < 0:
            return -1
        j += kept
        r += nvals[i]
    return j


# -- whole pages of a row range (scan/row_ranges.read_range) ---------------

def range_table(state) -> PageTable | None:
    """The PageTable of a ChunkState's chunk when whole pages of it can go
    through the kernel (a required flat column whose pages are the state's
    page slots), else None; decided once per state."""
    table = getattr(state, "_required_table", False)
    if table is not False:
        return table
    table = None
    col = state.col
    is_string = col.physical_type == "BYTE_ARRAY" and col.type_name == "string"
    if col.max_def_level == 0 and col.max_rep_level == 0 and \
            (col.physical_type in _FIXED or is_string):
        try:
            table = page_table(state.buf, state.chunk.num_values, state.verify)
        except (FileFormatError, UnsupportedFeatureError):
            table = None
        if table is not None:
            firsts = np.concatenate([[0], np.cumsum(table.k_nvals)[:-1]])
            if len(firsts) != len(state.starts) or not np.array_equal(firsts, state.starts) \
                    or (is_string and not table.all_dictionary):
                table = None
    state._required_table = table
    return table


def decode_whole_pages(state, table: PageTable, p0: int, p1: int, sel, to_storage,
                       want_codes: bool):
    """Data pages [p0, p1) of the state's chunk, every row (or those ``sel``
    keeps): (storage values, None, heap, codes or None), or None on a defect
    (the caller's page-by-page path then names it).  Pages wholly inside a
    morsel's range are read by that morsel alone, so decompressing them here
    decompresses each once, as the shared pages of the state are."""
    col = state.col
    is_string = col.physical_type == "BYTE_ARRAY"
    encs = table.k_encs[p0:p1]
    flat = heap = None
    if np.any(encs == _DICT):
        try:
            phys, _, values, heap = state.dictionary_values(to_storage)
        except (FileFormatError, UnsupportedFeatureError):
            return None
        if is_string:
            flat = state.fused(want_codes)[1]
        else:
            flat = getattr(state, "_physical_form", None)
            if flat is None:
                flat = state._physical_form = fused_form(phys)
        if flat is None:
            return None
        flat = flat[0]
    codes = want_codes and is_string
    if is_string:
        kdtype, width = (np.int32 if codes else np.complex128), 0
    else:
        kdtype, rdtype = _FIXED[col.physical_type]
        width = np.dtype(kdtype).itemsize
    if flat is None:
        flat = np.empty(0, kdtype)
    nvals = table.k_nvals[p0:p1]
    select = sel is not None
    n_keep = int(np.count_nonzero(sel)) if select else int(nvals.sum())
    out = np.empty(n_keep + 1, kdtype)
    usizes = table.k_usizes[p0:p1]
    sel_u8 = sel.view(np.uint8) if select else _NO_SEL
    if state.chunk.codec == "SNAPPY":
        scratch = np.empty(int(usizes.max()) + 8, np.uint8)
        kept = _decode_snappy_pages(state.buf, table.k_starts[p0:p1], table.k_csizes[p0:p1],
                                    usizes, table.k_compressed[p0:p1], nvals, encs, flat, out,
                                    out.view(np.uint8), sel_u8, select, width, scratch)
    elif state.chunk.codec == "UNCOMPRESSED":
        if not np.array_equal(table.k_csizes[p0:p1], usizes):
            return None
        kept = _decode_pages(state.buf, table.k_starts[p0:p1], usizes, nvals, encs, flat, out,
                             out.view(np.uint8), sel_u8, select, width)
    else:
        return None                      # the shared, decompressed-once pages
    if kept != n_keep:
        return None
    out = out[:kept]
    if not is_string:
        values, _ = to_storage(out.view(rdtype), None, col)
        return values, None, None, None
    if codes:
        return _views_of(state.fused(False)[1][0], out), None, heap, out
    return out.view(np.uint64).reshape(-1, 2), None, heap, None
