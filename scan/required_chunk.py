"""Whole-chunk decode of a flat column: the common case (no repetition;
required, or optional in v1 data pages, whose definition levels the kernel
reads; INT32/INT64/FLOAT/DOUBLE and small decimals in PLAIN or dictionary
pages, or strings in dictionary pages) in one kernel call per column chunk.

The general path (scan/column.decode_chunk) walks the pages in Python and
calls a kernel per page.  At several pages per chunk that Python, and the
GIL hand-off at every kernel call, was most of what kept a second thread
waiting (docs/performance-notes.md, "Decoder").  Here:

* the chunk's page table (header fields, validated, CRCs checked) is built
  once per cached chunk buffer and kept in scan/pages' chunk memo;
* one numba kernel (scan/page_kernels.py) decompresses every data page
  (SNAPPY, by scan/snappy_kernel.py, into a page-sized scratch buffer that
  stays in cache, or into the page's kept slot: scan/kept_pages.py) and
  decodes it, PLAIN or dictionary, into the output, keeping only the
  selected rows.  Other codecs are decompressed by their library into one
  arena first, page by page.

Anything this path does not cover, and any defect, returns None: the
general path then decodes the chunk and names the error."""

from __future__ import annotations

import threading

import numpy as np

from scan.column import ChunkValues
from scan.column_data import to_storage
from scan.encodings.dictionary import fused_form, gather
from scan.encodings.plain import decode_plain_decimal
from scan.codecs import decompress
from scan.io.buffer_manager import charge
from scan.kept_dictionary import narrowed as _narrowed, widened as _widened
from scan.kept_pages import kept_pages
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.page_kernels import LEVELS as _LEVELS, decode_pages, decode_snappy_pages
from scan.page_values import (DICT_ENCODINGS, DICT_PAGE_ENCODINGS, decode_dictionary_page,
                              is_fixed_decimal)
from scan.pages import (DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, check_crc, chunk_memo,
                        make_page, page_recipe)
from scan.selection import NO_SEL
from scan.views import compact_heap

_PLAIN, _DICT = 0, 1
_NO_PAGES, _NO_PAGES_U8 = np.zeros(0, np.int64), np.zeros(0, np.uint8)
RANGES_KEPT = 64
# physical type -> (kernel dtype, result dtype)
_FIXED = {"INT32": (np.int32, np.int32), "FLOAT": (np.int32, np.float32),
          "INT64": (np.int64, np.int64), "DOUBLE": (np.int64, np.float64)}


def fixed_kind(col):
    """(kernel dtype, result dtype, PLAIN width) of a column the kernel
    decodes to fixed-width values, or None.  FIXED_LEN_BYTE_ARRAY decimals
    of precision <= 18 (what pyarrow writes) come out as int64; their PLAIN
    width is minus the type length (big-endian two's complement)."""
    kind = _FIXED.get(col.physical_type)
    if kind is not None:
        return kind[0], kind[1], np.dtype(kind[0]).itemsize
    if is_fixed_decimal(col) and col.type_length > 0:
        return np.int64, np.int64, -int(col.type_length)
    return None


class PageTable:
    """The data pages of one chunk as the kernel needs them (arrays, one
    entry per page): body position in the chunk, compressed and
    uncompressed sizes, whether compressed, value counts, encodings (0
    PLAIN, 1 dictionary); and the dictionary page's recipe (or None)."""
    __slots__ = ("dictionary", "starts", "csizes", "usizes", "compressed", "nvals", "encs",
                 "num_values", "all_dictionary", "max_usize", "_ranges", "kept")

    def __init__(self, dictionary, pages):
        self.dictionary = dictionary
        cols = list(zip(*pages)) if pages else [()] * 6
        self.starts, self.csizes, self.usizes, self.nvals = (
            np.array(c, np.int64) for c in (cols[0], cols[1], cols[2], cols[3]))
        self.encs = np.array(cols[4], np.int8)
        self.compressed = np.array(cols[5], np.uint8)
        self.num_values = int(self.nvals.sum())
        self.all_dictionary = bool(np.all((self.encs & 1) == _DICT))
        self.max_usize = int(self.usizes.max(initial=0))
        self._ranges: dict = {}
        self.kept = False           # the chunk's KeptPages (or None), once decided

    def pages(self, p0: int, p1: int) -> tuple:
        """(starts, csizes, usizes, compressed, nvals, encs, values, has
        levels, largest page) of data pages [p0, p1): worked out once per
        range -- a morsel reads the same pages at every query, and these
        small numpy calls were about a tenth of Q6's GIL-held samples at 1
        thread (py-spy --gil).  At most RANGES_KEPT ranges are remembered
        (morsel cuts give a few per chunk; other reads may ask for any)."""
        got = self._ranges.get((p0, p1))
        if got is None:
            if len(self._ranges) >= RANGES_KEPT:
                self._ranges.clear()
            encs = self.encs[p0:p1]
            got = (self.starts[p0:p1], self.csizes[p0:p1], self.usizes[p0:p1],
                   self.compressed[p0:p1], self.nvals[p0:p1], encs,
                   int(self.nvals[p0:p1].sum()), bool(np.any(encs >= _LEVELS)),
                   int(self.usizes[p0:p1].max(initial=0)))
            self._ranges[(p0, p1)] = got
        return got


def _build_table(buf, num_values: int, verify: bool, memo, max_def: int = 0) -> PageTable | None:
    """The chunk's PageTable, or None when a page is outside this path
    (another encoding, levels, a second dictionary page...).  A bad header
    or CRC raises FileFormatError."""
    pos, end, seen, ordinal = 0, len(buf), 0, 0
    dictionary = None
    pages = []
    while pos < end and seen < num_values:
        recipe = memo.get(("page", pos)) if memo is not None else None
        if recipe is None:
            recipe = page_recipe(buf, pos, end, ordinal, memo)
        header, body_pos, csize, usize, fields = recipe
        if verify:
            check_crc(header, buf[body_pos:body_pos + csize], pos, memo, ordinal)
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
        elif enc in DICT_ENCODINGS:
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
        elif max_def:
            if max_def != 1 or extra[0] != "RLE":
                return None
            code += _LEVELS
        pages.append((body_pos, csize, usize, n, code, bool(compressed)))
        seen += n
    return PageTable(dictionary, pages)


def page_table(buf, num_values: int, verify: bool, max_def: int = 0) -> PageTable | None:
    memo = chunk_memo(buf)
    key = ("required-table", verify, max_def)
    if memo is not None and key in memo:
        return memo[key]
    table = _build_table(buf, num_values, verify, memo, max_def)
    if memo is not None:
        memo[key] = table
    return table


def decode_required_chunk(buf: np.ndarray, col, chunk, num_rows: int, verify: bool,
                          rows: np.ndarray | None, want_codes: bool) -> ChunkValues | None:
    """decode_chunk for a required flat chunk in one kernel call, or None
    when the chunk needs the general path (see the module docstring)."""
    ptype = col.physical_type
    is_string = ptype == "BYTE_ARRAY" and col.type_name == "string"
    if col.max_def_level > 1 or col.max_rep_level != 0 or \
            (not is_string and fixed_kind(col) is None):
        return None
    memo = None
    if col.max_def_level:           # optional: v1 pages' levels are read in the kernel
        memo = chunk_memo(buf)
        if memo is not None and memo.get("optional-general"):
            return None
    codec = chunk.codec
    try:
        out = _decode(buf, col, chunk, num_rows, verify, rows, want_codes, ptype, is_string,
                      codec)
    except (FileFormatError, UnsupportedFeatureError):
        out = None                    # the general path names the defect
    if out is None and memo is not None:
        memo["optional-general"] = True       # (v2 levels, a defect): not tried again
    return out


class _FixedPlan:
    """What decoding a fixed-width chunk takes besides its bytes, worked out
    once per cached chunk buffer (kept beside its page table in the chunk
    memo): a chunk read is then a memo lookup and one kernel call, with no
    per-read checks in Python; the dictionary, once decoded, is kept here
    too (``flat``/``base``, see _fixed_dictionary and scan/kept_dictionary)."""
    __slots__ = ("table", "kdtype", "width", "result", "dict_n", "dict_body", "flat", "base")

    def __init__(self, table: PageTable, col):
        self.table = table
        self.kdtype, self.result, self.width = fixed_kind(col)
        self.dict_n, self.dict_body = 0, None
        self.flat = self.base = None        # the dictionary, once kept (_fixed_dictionary)
        if table.dictionary is not None:
            header, body_pos, csize, usize, ordinal, fields = table.dictionary
            if fields[2] not in DICT_PAGE_ENCODINGS or \
                    fields[1] * abs(self.width) != usize:
                raise FileFormatError("dictionary page size does not match its values")
            self.dict_n, self.dict_body = fields[1], (body_pos, csize, usize)
        elif np.any((table.encs & 1) == _DICT):
            raise FileFormatError("dictionary-encoded pages without a dictionary page")


def fixed_plan(buf, num_values: int, verify: bool, col) -> _FixedPlan | None:
    """The chunk's _FixedPlan, made once per cached chunk buffer; None when
    the chunk needs the general path."""
    memo = chunk_memo(buf)
    key = ("fixed-plan", verify)
    plan = memo.get(key) if memo is not None else None
    if plan is None:
        table = page_table(buf, num_values, verify, col.max_def_level)
        if table is None:
            return None
        plan = _FixedPlan(table, col)
        if memo is not None:
            memo[key] = plan
    return plan


def _decode_fixed(buf, chunk, num_rows, verify, rows, col, codec):
    """A fixed-width chunk (see _FixedPlan), or None for the general path."""
    plan = fixed_plan(buf, chunk.num_values, verify, col)
    if plan is None or plan.table.num_values != num_rows:
        return None
    flat = (_widened(plan.flat, plan.base, plan.kdtype) if plan.flat is not None
            else _fixed_dictionary(buf, plan, codec))
    table = plan.table
    got = _decode_range(buf, table, 0, len(table.starts), codec, flat, plan.kdtype, plan.width,
                        rows)
    return None if got is None else ChunkValues(got[0].view(plan.result), got[1], None)


def decoded_dictionary(buf, max_entries: int) -> np.ndarray | None:
    """The kept dictionary (physical values, as read_column's are) of a
    fixed-width chunk decoded through this module whose every data page is
    dictionary-encoded, so that each of the chunk's non-NULL values is one
    of its entries (writers build it from those values); None otherwise,
    or when it has more than ``max_entries`` entries."""
    memo = chunk_memo(buf)
    if memo is None:
        return None
    for verify in (True, False):
        plan = memo.get(("fixed-plan", verify))
        if plan is not None and plan.flat is not None and 0 < plan.dict_n <= max_entries \
                and plan.table.all_dictionary:
            return _widened(plan.flat, plan.base, plan.kdtype).view(plan.result)
    return None


def _fixed_dictionary(buf, plan, codec) -> np.ndarray:
    """The chunk's dictionary decoded to kernel values (empty without one).
    Kept in the plan, and charged to the chunk in the buffer manager, so
    that it is decompressed once while the chunk stays cached: a dictionary
    page of a high-cardinality column (prices, keys) is nearly as large as
    its data pages, and decompressing it took a quarter to a third of Q6,
    Q14, Q17 and Q19."""
    if plan.dict_body is not None and plan.width < 0:       # decimal: big-endian bytes
        body_pos, csize, usize = plan.dict_body
        raw = np.empty(usize, np.uint8)
        _decompress_into(codec, buf[body_pos:body_pos + csize], usize, raw)
        flat = decode_plain_decimal(raw, 0, usize, plan.dict_n, -plan.width)[0]
    elif plan.dict_body is not None:
        body_pos, csize, usize = plan.dict_body
        flat = np.empty(plan.dict_n, plan.kdtype)
        _decompress_into(codec, buf[body_pos:body_pos + csize], usize, flat.view(np.uint8))
    else:
        flat = np.empty(0, plan.kdtype)
    kept, base = _narrowed(flat)    # (_widened(plan) gives it back)
    with _KEEP_LOCK:
        if plan.flat is None and charge(buf, kept.nbytes):
            plan.flat, plan.base = kept, base
    return flat


_KEEP_LOCK = threading.Lock()


def _decode(buf, col, chunk, num_rows, verify, rows, want_codes, ptype, is_string, codec):
    if not is_string:
        return _decode_fixed(buf, chunk, num_rows, verify, rows, col, codec)
    table = page_table(buf, chunk.num_values, verify, col.max_def_level)
    if table is None or table.num_values != num_rows or not table.all_dictionary \
            or table.dictionary is None:
        return None
    strings = _string_dictionary(buf, table, col, codec)
    if strings is None:
        return None
    dictionary, heap, form, identity = strings
    kdtype, width = _kernel_dtype(ptype, True, want_codes)
    flat = identity if want_codes else form[0]
    got = _decode_range(buf, table, 0, len(table.starts), codec, flat, kdtype, width, rows)
    if got is None:
        return None
    out, nulls = got
    if want_codes and nulls is not None:    # (NULL rows hold code 0: the views now)
        return ChunkValues(_views_of_codes(dictionary, out), nulls, heap)
    if want_codes:          # the views are gathered by ColumnData when first read
        return ChunkValues(None, nulls, heap, out, dictionary)
    return ChunkValues(out.view(np.uint64).reshape(-1, 2), nulls, heap)


def _views_of_codes(dictionary, codes):
    """The string views of ``codes``; a NULL row's code 0 may point into an
    empty dictionary (every row NULL): empty views then."""
    if len(dictionary) == 0:
        return np.zeros((len(codes), 2), np.uint64)
    return gather(dictionary, codes)


# A string chunk's dictionary is decoded once per cached chunk buffer (kept
# in the chunk memo, charged to the chunk in the buffer manager) instead of on
# every read of the chunk.  One of at most this many bytes is kept even for a
# buffer no manager holds (it goes with the buffer).
KEPT_STRING_DICTIONARY_BYTES = 64 << 10


def _string_dictionary(buf, table: PageTable, col, codec: str):
    """(views, heap, fused form, identity codes) of a string chunk's
    dictionary page, or None when the fused kernel cannot take it.  The
    dictionary is remembered with the chunk (see KEPT_STRING_DICTIONARY_BYTES):
    it is shared read-only by every read of it."""
    memo = chunk_memo(buf)
    key = ("string-dictionary", codec)
    if memo is not None:
        kept = memo.get(key)
        if kept is not None:
            return kept
    header, body_pos, csize, usize, ordinal, fields = table.dictionary
    page = make_page(header, DICTIONARY_PAGE, buf[body_pos:body_pos + csize], usize, codec,
                     ordinal, buf, body_pos, None, fields)
    dictionary, heap = decode_dictionary_page(page, None, col.physical_type, col.type_length,
                                              True)
    dictionary, heap = compact_heap(dictionary, heap)
    form = fused_form(dictionary)
    if form is None:
        return None
    strings = (dictionary, heap, form, np.arange(len(dictionary), dtype=np.int32))
    if memo is None:
        return strings
    nbytes = heap.nbytes + dictionary.nbytes + strings[3].nbytes
    with _KEEP_LOCK:
        if key in memo:
            return memo[key]
        if charge(buf, nbytes) or nbytes <= KEPT_STRING_DICTIONARY_BYTES:
            if np.may_share_memory(heap, buf):      # (an uncompressed page's bytes: the
                heap = heap.copy()                  # memo must not keep its chunk alive)
                strings = (dictionary, heap, form, strings[3])
            memo[key] = strings
    return strings


def _kernel_dtype(ptype: str, is_string: bool, codes: bool):
    """(output dtype of the kernel, PLAIN value width) of a string chunk:
    one complex128 view per value, or int32 codes (fixed-width chunks:
    fixed_kind)."""
    return (np.int32 if codes else np.complex128), 0


def _decode_range(buf, table: PageTable, p0: int, p1: int, codec: str, flat, kdtype,
                  width: int, sel):
    """(values, nulls or None) of data pages [p0, p1) (only the rows the
    bool mask ``sel`` keeps, when given), decompressed and decoded in one
    kernel call; None on a defect."""
    starts, csizes, usizes, compressed, nvals, encs, n_vals, levels, largest = \
        table.pages(p0, p1)
    select = sel is not None
    n_keep = int(np.count_nonzero(sel)) if select else n_vals
    out = np.empty(n_keep + 1, kdtype)          # one slot of slack for the selecting kernels
    nulls = np.empty(n_keep + 1, np.uint8) if levels else NO_SEL
    sel_u8 = sel.view(np.uint8) if select else NO_SEL
    if codec == "SNAPPY":
        scratch = np.empty(largest + 8, np.uint8)
        pages = None
        if width:
            pages = table.kept
            if pages is False:
                pages = table.kept = kept_pages(buf, chunk_memo(buf), table, _DICT)
        if pages is None:
            arena, slots, fill = scratch, _NO_PAGES, _NO_PAGES_U8
        else:
            arena, (slots, fill) = pages.arena, pages.claim(p0, p1)
        kept = decode_snappy_pages(buf, starts, csizes, usizes, compressed, nvals,
                                    encs, flat, out, out.view(np.uint8), sel_u8, select, width,
                                    scratch, nulls, arena, slots, fill)
        if pages is not None:
            pages.settle(p0, p1, fill, kept == n_keep)
    else:
        if codec == "UNCOMPRESSED":
            if not np.array_equal(csizes, usizes):
                return None             # a size mismatch: the general path names it
            src = buf
        else:
            src, starts = _page_bytes(buf, table, p0, p1, codec, sel)
        kept = decode_pages(src, starts, usizes, nvals, encs, flat, out, out.view(np.uint8),
                             sel_u8, select, width, nulls)
    if kept != n_keep:
        return None
    nulls = nulls[:kept] if levels and nulls[:kept].any() else None
    return out[:kept], nulls


def _decompress_into(codec: str, body, usize: int, out) -> None:
    """``out`` (``usize`` bytes) <- the page body, decompressed."""
    if codec == "UNCOMPRESSED":
        if len(body) != usize:
            raise FileFormatError(f"uncompressed page has {len(body)} bytes, header says {usize}")
        out[:] = body
    else:
        decompress(codec, body, usize, out)


def _page_bytes(buf, table: PageTable, p0: int, p1: int, codec: str, sel=None):
    """(arena, start of each page in it): data pages [p0, p1) decompressed
    by the codec library (GZIP, ZSTD, LZ4...; SNAPPY is decompressed inside
    the kernel).  With a row selection ``sel`` a page none of whose rows is
    selected is left undecompressed (the decode kernel skips it too)."""
    usizes = table.usizes[p0:p1]
    offsets = np.concatenate([[0], np.cumsum(usizes)]).astype(np.int64)
    arena = np.empty(int(offsets[-1]), np.uint8)
    if sel is None:
        wanted = [True] * (p1 - p0)
    else:
        rows = np.concatenate([[0], np.cumsum(table.nvals[p0:p1])]).astype(np.int64)
        picked = np.concatenate([[0], np.cumsum(sel, dtype=np.int64)])
        ends = np.minimum(rows, len(sel))
        wanted = (picked[ends[1:]] > picked[ends[:-1]]).tolist()
    for start, csize, usize, off, comp, want in zip(
            table.starts[p0:p1].tolist(), table.csizes[p0:p1].tolist(), usizes.tolist(),
            offsets.tolist(), table.compressed[p0:p1].tolist(), wanted):
        if want:
            _decompress_into(codec if comp else "UNCOMPRESSED", buf[start:start + csize],
                             usize, arena[off:off + usize])
    return arena, offsets[:-1]


# -- whole pages of a row range (scan/row_ranges.read_range) ---------------

def range_table(state) -> PageTable | None:
    """The PageTable of a ChunkState's chunk when whole pages of it can go
    through the kernel (a required or optional flat column whose pages are
    the state's page slots), else None; decided once per state."""
    table = getattr(state, "_required_table", False)
    if table is not False:
        return table
    table = None
    col = state.col
    is_string = col.physical_type == "BYTE_ARRAY" and col.type_name == "string"
    if col.max_def_level <= 1 and col.max_rep_level == 0 and \
            (is_string or fixed_kind(col) is not None):
        try:
            table = page_table(state.buf, state.chunk.num_values, state.verify,
                               col.max_def_level)
        except (FileFormatError, UnsupportedFeatureError):
            table = None
        if table is not None:
            firsts = np.concatenate([[0], np.cumsum(table.nvals)[:-1]])
            if len(firsts) != len(state.starts) or not np.array_equal(firsts, state.starts) \
                    or (is_string and not table.all_dictionary):
                table = None
    state._required_table = table
    return table


def decode_whole_pages(state, table: PageTable, p0: int, p1: int, sel, want_codes: bool):
    """Data pages [p0, p1) of the state's chunk, every row (or those ``sel``
    keeps): (storage values, None, heap, codes or None), or None on a defect
    (the caller's page-by-page path then names it).  Pages wholly inside a
    morsel's range are read by that morsel alone, so decompressing them here
    decompresses each once, as the shared pages of the state are."""
    col = state.col
    codec = state.chunk.codec
    if codec not in ("SNAPPY", "UNCOMPRESSED"):
        return None                      # the shared, decompressed-once pages
    is_string = col.physical_type == "BYTE_ARRAY"
    codes = want_codes and is_string
    if is_string:
        kdtype, width = _kernel_dtype(col.physical_type, True, codes)
        result = None
    else:
        kdtype, result, width = fixed_kind(col)
    flat = heap = None
    if np.any((table.encs[p0:p1] & 1) == _DICT):
        try:
            phys, _, values, heap = state.dictionary_values()
        except (FileFormatError, UnsupportedFeatureError):
            return None
        if is_string:
            form = state.fused(want_codes)[1]
        else:
            form = getattr(state, "_physical_form", None)
            if form is None:        # (decimals: their int64 storage, not the bytes)
                form = state._physical_form = fused_form(values if width < 0 else phys)
        if form is None:
            return None
        flat = form[0]
    if flat is None:
        flat = np.empty(0, kdtype)
    got = _decode_range(state.buf, table, p0, p1, codec, flat, kdtype, width, sel)
    if got is None:
        return None
    out, nulls = got
    if not is_string:
        values, _ = to_storage(out.view(result), None, col)
        return values, nulls, None, None
    if codes and nulls is not None:
        return _views_of_codes(state.dictionary[2], out), nulls, heap, None
    if codes:                       # views gathered when first read (ColumnData)
        return None, nulls, heap, out
    return out.view(np.uint64).reshape(-1, 2), nulls, heap, None
