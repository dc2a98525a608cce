"""Assemble one flat column chunk from its pages: levels -> null mask,
values decoded dense per page (PLAIN, dictionary, RLE booleans,
BYTE_STREAM_SPLIT, DELTA_*), concatenated once and scattered into null gaps.

Values come out in their *physical* form (bool_, int32, int64, INT96 as int64
nanoseconds, float32, float64, or (n, 2) string views + heap); the reader
converts them to engine storage."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.varint import read_uleb128
from scan.selection import compress_rows
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.pages import DATA_PAGE_V2, DICTIONARY_PAGE, Arena, iter_pages

_ARENA_LIMIT = 1 << 31
_INDICES = object()            # marks dictionary indices not yet gathered

_VIEW_TYPES = ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
_DICT_ENCODINGS = ("PLAIN_DICTIONARY", "RLE_DICTIONARY")
_BSS_TYPES = ("INT32", "INT64", "FLOAT", "DOUBLE")


class ChunkValues:
    """Decoded column chunk in physical form.  ``codes``/``dictionary``: the
    dictionary index of every row and the dictionary (string views over
    ``heap``), when asked for and the chunk is all dictionary pages without
    NULLs; else None.  With codes, ``values`` is None: the views are
    gathered from them only when read (scan.reader.ColumnData)."""
    __slots__ = ("values", "nulls", "heap", "codes", "dictionary")

    def __init__(self, values, nulls, heap, codes=None, dictionary=None):
        self.values, self.nulls, self.heap = values, nulls, heap
        self.codes, self.dictionary = codes, dictionary


def decode_other_encoding(enc: str, data, pos: int, ptype: str, tlen: int, n_valid: int):
    """(values, heap) of a page in an encoding other than PLAIN and the
    dictionary encodings: RLE booleans, DELTA_*, BYTE_STREAM_SPLIT."""
    if enc == "RLE" and ptype == "BOOLEAN":
        from scan.encodings.rle import decode_rle_booleans
        values, _ = decode_rle_booleans(data, pos, len(data), n_valid)
        return values, None
    if enc in _OTHER_DECODERS:
        return _OTHER_DECODERS[enc](data, pos, ptype, tlen, n_valid)
    raise UnsupportedFeatureError(f"encoding {enc} for {ptype} columns")


def chunk_arena(chunk, is_view: bool):
    """One buffer that every decompressed page of a string chunk is written
    into, so the pages share one heap (None when nothing needs it)."""
    if is_view and chunk.codec != "UNCOMPRESSED":
        return Arena(min(max(chunk.total_uncompressed_size, 0), _ARENA_LIMIT))
    return None


def decode_dictionary_page(page, current, ptype: str, tlen: int, is_view: bool):
    """(dictionary values, heap) of a dictionary page; a second dictionary
    page in one chunk or an unknown dictionary encoding is refused."""
    from scan.encodings.plain import decode_plain
    if current is not None:
        raise FileFormatError("second dictionary page in a column chunk")
    if page.encoding not in ("PLAIN", "PLAIN_DICTIONARY"):
        raise UnsupportedFeatureError(f"dictionary page encoding {page.encoding}")
    values, _ = decode_plain(page.owner, page.base, page.base + len(page.data),
                             ptype, page.num_values, tlen)
    return values, (page.owner if is_view else None)


def decode_chunk(buf: np.ndarray, col, chunk, num_rows: int,
                 verify_checksums: bool = True, rows: np.ndarray | None = None,
                 want_codes: bool = False) -> ChunkValues:
    """Decode the column chunk bytes ``buf`` of flat column ``col``.

    ``rows``: optional bool mask over the row group's rows; only those rows
    are returned.  Required columns select page by page (dictionary pages
    gather only the kept rows); nullable ones select after decoding.
    ``want_codes`` (string columns): also return the dictionary codes (see
    ChunkValues)."""
    from scan.encodings.dictionary import decode_dictionary_indices, gather
    from scan.encodings.plain import decode_plain, decode_plain_decimal
    from scan.levels import nulls_from_def_levels

    ptype, tlen, max_def = col.physical_type, col.type_length, col.max_def_level
    # FIXED_LEN_BYTE_ARRAY decimals (precision <= 18) decode straight to int64
    # storage, page by page (to_storage passes them through)
    fixed_decimal = is_fixed_decimal(col)
    is_view = ptype in _VIEW_TYPES and not fixed_decimal
    dictionary = None
    dict_heap = None
    form = None                 # fused_form(dictionary)
    dense: list = []          # per page: (values, heap)
    direct, direct_rows, direct_pages = None, 0, 0   # fused pages written in place
    page_select = rows is not None and max_def == 0
    codes = None                                      # dictionary codes (want_codes)
    identity = identity_form = None
    n_keep = int(np.count_nonzero(rows)) if page_select else num_rows
    row_start = 0
    null_parts: list = []     # per page: uint8 mask or None (no nulls)
    page_rows: list = []
    any_nulls = False
    arena = chunk_arena(chunk, is_view)
    for page in iter_pages(buf, chunk.codec, chunk.num_values, verify_checksums, arena):
        try:
            if page.kind == DICTIONARY_PAGE:
                dictionary, dict_heap = decode_dictionary_page(page, dictionary, ptype, tlen,
                                                               ptype in _VIEW_TYPES)
                if fixed_decimal:
                    from scan.views import decimal_from_be_bytes
                    dictionary, dict_heap = decimal_from_be_bytes(dictionary, dict_heap, tlen), None
                elif is_view:               # its own small heap, not the chunk's arena
                    from scan.views import compact_heap
                    dictionary, dict_heap = compact_heap(dictionary, dict_heap)
                form = fused_form(dictionary)
                continue
            n = page.num_values
            data = page.data
            sel = None
            if page_select:
                if row_start + n > num_rows:
                    raise FileFormatError(f"column chunk has more values than the row "
                                          f"group's {num_rows} rows")
                sel = rows[row_start:row_start + n]
            levels = _def_levels(page, max_def)
            if levels is not None:
                nulls = nulls_from_def_levels(levels, max_def)
                n_valid = n - int(np.count_nonzero(nulls))
                if n_valid < n:
                    any_nulls = True
                else:
                    nulls = None
            else:
                nulls, n_valid = None, n
            pos = _values_start(page, max_def)
            enc = page.encoding
            if n_valid == 0:
                values, heap = _empty(ptype, fixed_decimal), None
            elif enc == "PLAIN":
                if fixed_decimal:
                    values, _ = decode_plain_decimal(data, pos, len(data), n_valid, tlen)
                    heap = None
                elif is_view:                   # views straight into the page's buffer
                    b = page.base
                    values, _ = decode_plain(page.owner, b + pos, b + len(data), ptype, n_valid, tlen)
                    heap = page.owner
                else:
                    values, _ = decode_plain(data, pos, len(data), ptype, n_valid, tlen)
                    heap = None
            elif enc in _DICT_ENCODINGS:
                if dictionary is None:
                    raise FileFormatError("dictionary-encoded page without a dictionary page")
                values = into = None
                if want_codes and is_view:
                    # codes wanted: the fused kernel over an identity dictionary
                    # yields the indices; gathered (checked) once per chunk below
                    if identity is None:
                        identity = np.arange(len(dictionary), dtype=np.int32)
                        identity_form = fused_form(identity)
                    codes_page = _dictionary_values(data, pos, n_valid, identity, None, sel,
                                                    identity_form)
                else:
                    codes_page = None
                    if max_def == 0 and row_start + n <= num_rows:
                        if direct is None:
                            direct = _direct_buffer(dictionary, n_keep)
                        if direct is not None:
                            into = direct[direct_rows:]
                    values = (_dictionary_values(data, pos, n_valid, dictionary, into, sel, form)
                              if form is not None else None)
                if values is not None and into is not None:
                    direct_rows += len(values)
                    direct_pages += 1
                if values is not None:
                    heap = dict_heap
                elif codes_page is not None:
                    values, heap = codes_page, _INDICES
                else:       # checked path: gathered once per chunk below
                    values = decode_dictionary_indices(data, pos, len(data), n_valid)
                    if sel is not None:
                        values = values[sel]
                    heap = _INDICES
            else:
                values, heap = decode_other_encoding(enc, data, pos, ptype, tlen, n_valid)
                if fixed_decimal:
                    from scan.views import decimal_from_be_bytes
                    values, heap = decimal_from_be_bytes(values, heap, tlen), None
            if sel is not None and heap is not _INDICES and not (
                    enc in _DICT_ENCODINGS and n_valid):
                values = select_rows(values, sel)
            dense.append((values, heap))
            null_parts.append(nulls)
            page_rows.append(n)
            row_start += n
        except FileFormatError as e:
            raise FileFormatError(str(e), page=page.ordinal) from None
    total = sum(page_rows)
    if total != num_rows:
        raise FileFormatError(f"column chunk has {total} values, row group has {num_rows} rows")
    if direct is not None and direct_pages == len(dense) and direct_rows == n_keep:
        values, heap = _direct_values(direct[:n_keep], dictionary), dict_heap  # in place
    elif dense and all(h is _INDICES for _, h in dense):
        idx = dense[0][0] if len(dense) == 1 else np.concatenate([v for v, _ in dense])
        heap = dict_heap
        if want_codes and is_view and not any_nulls and _in_bounds(idx, len(dictionary)):
            values, codes = None, idx       # views gathered when first read (ColumnData)
        else:
            values = gather(dictionary, idx)        # (names an index out of range)
    else:
        dense = [(gather(dictionary, v), dict_heap) if h is _INDICES else (v, h) for v, h in dense]
        values, heap = _concat(dense, ptype, is_view, fixed_decimal)
    nulls = None
    if any_nulls:
        nulls = np.concatenate([m if m is not None else np.zeros(r, np.uint8)
                                for m, r in zip(null_parts, page_rows)])
        from scan.levels import scatter_dense
        values = scatter_dense(values, nulls)
    if rows is not None and not page_select:
        values = None if values is None else select_rows(values, rows)
        nulls = None if nulls is None else nulls[rows]
        codes = None if codes is None else codes[rows]
    return ChunkValues(values, nulls, heap, codes, None if codes is None else dictionary)


def _in_bounds(idx: np.ndarray, size: int) -> bool:
    """Every dictionary index in [0, size)."""
    return not len(idx) or (int(idx.min()) >= 0 and int(idx.max()) < size)


def select_rows(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """values[mask] along axis 0 for a bool mask (scan.selection: a
    branchless kernel, 5-15x faster than numpy's boolean indexing)."""
    return compress_rows(values, mask)


@njit(nogil=True, cache=True)
def _dictionary_page_kernel(buf, pos, end, count, dictionary, out, sel, use_sel):
    """Fused decode of one dictionary-encoded data page: the bit-width byte
    at ``pos``, then RLE/bit-packed indices, each written as
    ``out[j] = dictionary[index]`` (no int32 index array, no second pass;
    bit-packed values are read with independent word loads).  With
    ``use_sel`` only values k with sel[k] != 0 are kept (branch-free: every
    value is written, the cursor advances by sel[k]; ``out`` needs one slot
    of slack).  Every index is range-checked, kept or not.  Returns the
    number of values kept, or -1 on any defect: the caller then reruns the
    checked two-step decoder, which names the error."""
    if end > buf.shape[0]:
        end = buf.shape[0]
    if pos >= end:
        return -1
    bit_width = np.int64(buf[pos])
    pos += 1
    if bit_width > 32:
        return -1
    size = dictionary.shape[0]
    # the page's bytes as aligned little-endian words (+ zero padding), so a
    # bit-packed value is two aligned loads and shifts, independent of others
    start = pos
    words = np.zeros((end - start) // 8 + 2, np.uint64)
    wb = words.view(np.uint8)
    wb[:end - start] = buf[start:end]
    mask = np.uint64((np.int64(1) << bit_width) - 1)
    value_bytes = (bit_width + 7) // 8
    filled = 0
    j = 0
    while filled < count:
        if pos >= end:
            return -1
        header, pos = read_uleb128(buf, pos, end, 5)
        if pos < 0:
            return -1
        run = np.int64(header >> np.uint64(1))
        if (header & np.uint64(1)) == 0:
            if pos + value_bytes > end:
                return -1
            v = np.uint64(0)
            for k in range(value_bytes):
                v |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
            pos += value_bytes
            n = min(run, count - filled)
            if n > 0:
                if v >= np.uint64(size):
                    return -1
                value = dictionary[np.int64(v)]
                if use_sel:
                    for k in range(n):
                        out[j] = value
                        j += np.int64(sel[filled + k])
                else:
                    for k in range(n):
                        out[j + k] = value
                    j += n
            filled += n
        else:
            n = min(run * 8, count - filled)
            if pos + (n * bit_width + 7) // 8 > end:
                return -1
            base = (pos - start) * 8
            for k in range(n):
                bit = base + k * bit_width
                wi = bit >> 6
                off = np.uint64(bit & 63)
                w = (words[wi] >> off) | ((words[wi + 1] << np.uint64(1))
                                         << (np.uint64(63) - off))
                idx = w & mask
                if idx >= np.uint64(size):
                    return -1
                out[j] = dictionary[np.int64(idx)]
                j += np.int64(sel[filled + k]) if use_sel else 1
            filled += n
            pos += run * bit_width
            if pos > end:
                pos = end
    return j


def _is_views(d) -> bool:
    return d.ndim == 2 and d.dtype == np.uint64 and d.shape[1] == 2


def _fusable(d) -> bool:
    return _is_views(d) or (d.ndim == 1 and d.dtype.kind in "iuf" and d.dtype.itemsize in (4, 8))


def _direct_buffer(dictionary, num_rows):
    """A flat output for a whole chunk of fused dictionary pages (one slot
    of slack for the selecting kernel), or None."""
    if not _fusable(dictionary):
        return None
    return np.empty(num_rows + 1, np.complex128 if _is_views(dictionary) else dictionary.dtype)


def _direct_values(direct, dictionary):
    return direct.view(np.uint64).reshape(-1, 2) if _is_views(dictionary) else direct


_NO_SEL = np.ones(1, np.uint8)


def fused_form(dictionary):
    """(flat dictionary, views?, integer view dtype) for the fused kernel, or
    None when the dictionary's storage has no fused form.  1-D values are
    gathered as same-size ints, (n, 2) string views as one complex128 per
    row.  Computed once per dictionary, not per page."""
    d = dictionary
    if not _fusable(d):
        return None
    if _is_views(d):
        return np.ascontiguousarray(d).view(np.complex128).reshape(-1), True, None
    as_int = np.int32 if d.dtype.itemsize == 4 else np.int64
    return np.ascontiguousarray(d).view(as_int), False, as_int


def _dictionary_values(data, pos, n_valid, dictionary, out=None, sel=None, form=None):
    """Values of a dictionary-encoded page through the fused kernel, or None
    when the dictionary's storage has no fused form or a defect needs the
    checked path.  ``out``: a flat slice of a _direct_buffer to write into
    (the result is then a view of it); ``sel``: bool mask of the page's
    values to keep; ``form``: fused_form(dictionary) when the caller has it."""
    if form is None:
        form = fused_form(dictionary)
        if form is None:
            return None
    flat, views, as_int = form
    if out is None:
        keep = n_valid if sel is None else int(np.count_nonzero(sel))
        out = np.empty(keep + 1, np.complex128 if views else dictionary.dtype)
    target = out if views else out.view(as_int)
    use_sel = sel is not None
    kept = _dictionary_page_kernel(data, pos, len(data), n_valid, flat, target,
                                   sel.view(np.uint8) if use_sel else _NO_SEL, use_sel)
    if kept < 0:
        return None
    out = out[:kept]
    return out.view(np.uint64).reshape(-1, 2) if views else out


def _def_levels(page, max_def):
    if max_def == 0:
        return None
    from scan import levels as L
    if page.kind == DATA_PAGE_V2:
        return L.decode_levels_v2(page.levels, page.rep_length, page.def_length, max_def,
                                  page.num_values)
    if page.def_encoding == "BIT_PACKED":
        lv, _ = L.decode_levels_bitpacked(page.data, 0, max_def, page.num_values)
    elif page.def_encoding == "RLE":
        lv, _ = L.decode_levels_v1(page.data, 0, max_def, page.num_values)
    else:
        raise UnsupportedFeatureError(f"definition level encoding {page.def_encoding}")
    return lv


def _values_start(page, max_def) -> int:
    """Byte position of the values in ``page.data``."""
    if page.kind == DATA_PAGE_V2 or max_def == 0:
        return 0
    data = page.data
    if page.def_encoding == "BIT_PACKED":
        return (page.num_values * max_def.bit_length() + 7) // 8
    return 4 + (int(data[0]) | int(data[1]) << 8 | int(data[2]) << 16 | int(data[3]) << 24)


def is_fixed_decimal(col) -> bool:
    """A FIXED_LEN_BYTE_ARRAY decimal that fits int64 storage (precision <= 18)."""
    return (col.physical_type == "FIXED_LEN_BYTE_ARRAY"
            and col.type_name.startswith("decimal") and col.precision <= 18)


def _empty(ptype, fixed_decimal=False):
    if fixed_decimal:
        return np.zeros(0, np.int64)
    if ptype in _VIEW_TYPES:
        return np.zeros((0, 2), np.uint64)
    return np.zeros(0, {"BOOLEAN": np.bool_, "INT32": np.int32, "INT64": np.int64,
                        "INT96": np.int64, "FLOAT": np.float32, "DOUBLE": np.float64}[ptype])


def _concat(dense, ptype, is_view, fixed_decimal=False):
    if not dense:
        return _empty(ptype, fixed_decimal), (np.zeros(0, np.uint8) if is_view else None)
    if is_view:
        from scan.views import concat_views
        heaps = {id(h) for _, h in dense if h is not None}
        if len(heaps) <= 1:                    # one shared heap (dictionary): no rebasing
            heap = next((h for _, h in dense if h is not None), np.zeros(0, np.uint8))
            values = dense[0][0] if len(dense) == 1 else np.concatenate([v for v, _ in dense])
            return values, heap
        return concat_views(dense)
    if len(dense) == 1:
        return dense[0][0], None
    return np.concatenate([v for v, _ in dense]), None


def _byte_stream_split(data, pos, ptype, tlen, count):
    from scan.encodings import byte_stream_split as B
    if ptype == "FIXED_LEN_BYTE_ARRAY":
        views, heap, _ = B.decode_byte_stream_split_fixed(data, pos, len(data), count, tlen)
        return views, heap
    if ptype not in _BSS_TYPES:
        raise UnsupportedFeatureError(f"encoding BYTE_STREAM_SPLIT for {ptype} columns")
    values, _ = B.decode_byte_stream_split(data, pos, len(data), ptype, count)
    return values, None


def _delta_binary_packed(data, pos, ptype, tlen, count):
    if ptype not in ("INT32", "INT64"):
        raise UnsupportedFeatureError(f"encoding DELTA_BINARY_PACKED for {ptype} columns")
    from scan.encodings.delta import decode_delta_binary_packed
    values, _ = decode_delta_binary_packed(data, pos, len(data), count, ptype)
    return values, None


def _delta_length_byte_array(data, pos, ptype, tlen, count):
    if ptype != "BYTE_ARRAY":
        raise UnsupportedFeatureError(f"encoding DELTA_LENGTH_BYTE_ARRAY for {ptype} columns")
    from scan.encodings.delta import decode_delta_length_byte_array
    views, _ = decode_delta_length_byte_array(data, pos, len(data), count)
    return views, data


def _delta_byte_array(data, pos, ptype, tlen, count):
    if ptype not in _VIEW_TYPES:
        raise UnsupportedFeatureError(f"encoding DELTA_BYTE_ARRAY for {ptype} columns")
    from scan.encodings.delta import decode_delta_byte_array
    views, heap, _ = decode_delta_byte_array(data, pos, len(data), count)
    if ptype == "FIXED_LEN_BYTE_ARRAY" and len(views) and \
            np.any((views[:, 0] & np.uint64(0xFFFFFFFF)) != np.uint64(tlen)):
        raise FileFormatError(f"DELTA_BYTE_ARRAY value length differs from type_length {tlen}")
    return views, heap


_OTHER_DECODERS = {"BYTE_STREAM_SPLIT": _byte_stream_split,
                   "DELTA_BINARY_PACKED": _delta_binary_packed,
                   "DELTA_LENGTH_BYTE_ARRAY": _delta_length_byte_array,
                   "DELTA_BYTE_ARRAY": _delta_byte_array}
