"""Assemble one flat column chunk from its pages: levels -> null mask,
values decoded dense per page (scan/page_values.py), concatenated once and
scattered into null gaps.  Dictionary pages go through the fused kernel
(scan/encodings/dictionary.py) into one output for the whole chunk when
they can, or yield their codes.

Values come out in their *physical* form (bool_, int32, int64, INT96 as int64
microseconds, float32, float64, or (n, 2) string views + heap); the reader
converts them to engine storage (scan/column_data.py)."""

from __future__ import annotations

import numpy as np

from scan.encodings.dictionary import (decode_dictionary_indices, dictionary_values,
                                       direct_buffer, direct_values, fused_form, gather)
from scan.errors import FileFormatError
from scan.levels import nulls_from_def_levels, page_def_levels, scatter_dense, values_start
from scan.page_values import (DICT_ENCODINGS, VIEW_TYPES, concat_values,
                              decode_dictionary_page, decode_page_values, is_fixed_decimal)
from scan.pages import DICTIONARY_PAGE, chunk_arena, iter_pages
from scan.selection import compress_rows
from scan.views import compact_heap, decimal_from_be_bytes

_INDICES = object()            # marks dictionary indices not yet gathered


class ChunkValues:
    """Decoded column chunk in physical form.  ``codes``/``dictionary``: the
    dictionary index of every row and the dictionary (string views over
    ``heap``), when asked for and the chunk is all dictionary pages without
    NULLs; else None.  With codes, ``values`` is None: the views are
    gathered from them only when read (scan.column_data.ColumnData)."""
    __slots__ = ("values", "nulls", "heap", "codes", "dictionary")

    def __init__(self, values, nulls, heap, codes=None, dictionary=None):
        self.values, self.nulls, self.heap = values, nulls, heap
        self.codes, self.dictionary = codes, dictionary


def decode_chunk(buf: np.ndarray, col, chunk, num_rows: int,
                 verify_checksums: bool = True, rows: np.ndarray | None = None,
                 want_codes: bool = False) -> ChunkValues:
    """Decode the column chunk bytes ``buf`` of flat column ``col``.

    ``rows``: optional bool mask over the row group's rows; only those rows
    are returned.  Required columns select page by page (dictionary pages
    gather only the kept rows); nullable ones select after decoding.
    ``want_codes`` (string columns): also return the dictionary codes (see
    ChunkValues)."""
    ptype, tlen, max_def = col.physical_type, col.type_length, col.max_def_level
    # FIXED_LEN_BYTE_ARRAY decimals (precision <= 18) decode straight to int64
    # storage, page by page (to_storage passes them through)
    fixed_decimal = is_fixed_decimal(col)
    is_view = ptype in VIEW_TYPES and not fixed_decimal
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
                                                               ptype in VIEW_TYPES)
                if fixed_decimal:
                    dictionary, dict_heap = decimal_from_be_bytes(dictionary, dict_heap, tlen), None
                elif is_view:               # its own small heap, not the chunk's arena
                    dictionary, dict_heap = compact_heap(dictionary, dict_heap)
                form = fused_form(dictionary)
                continue
            n = page.num_values
            sel = None
            if page_select:
                if row_start + n > num_rows:
                    raise FileFormatError(f"column chunk has more values than the row "
                                          f"group's {num_rows} rows")
                sel = rows[row_start:row_start + n]
            levels = page_def_levels(page, max_def)
            if levels is not None:
                nulls = nulls_from_def_levels(levels, max_def)
                n_valid = n - int(np.count_nonzero(nulls))
                if n_valid < n:
                    any_nulls = True
                else:
                    nulls = None
            else:
                nulls, n_valid = None, n
            pos = values_start(page, max_def)
            enc = page.encoding
            dict_page = n_valid > 0 and enc in DICT_ENCODINGS
            if dict_page:
                data = page.data
                if dictionary is None:
                    raise FileFormatError("dictionary-encoded page without a dictionary page")
                values = into = None
                if want_codes and is_view:
                    # codes wanted: the fused kernel over an identity dictionary
                    # yields the indices; gathered (checked) once per chunk below
                    if identity is None:
                        identity = np.arange(len(dictionary), dtype=np.int32)
                        identity_form = fused_form(identity)
                    codes_page = dictionary_values(data, pos, n_valid, identity, None, sel,
                                                   identity_form)
                else:
                    codes_page = None
                    if max_def == 0 and row_start + n <= num_rows:
                        if direct is None:
                            direct = direct_buffer(dictionary, n_keep)
                        if direct is not None:
                            into = direct[direct_rows:]
                    values = (dictionary_values(data, pos, n_valid, dictionary, into, sel, form)
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
                values, heap = decode_page_values(page, pos, n_valid, ptype, tlen, fixed_decimal)
            if sel is not None and not dict_page:       # (dictionary pages selected above)
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
        values, heap = direct_values(direct[:n_keep], dictionary), dict_heap  # in place
    elif dense and all(h is _INDICES for _, h in dense):
        idx = dense[0][0] if len(dense) == 1 else np.concatenate([v for v, _ in dense])
        heap = dict_heap
        if want_codes and is_view and not any_nulls and _in_bounds(idx, len(dictionary)):
            values, codes = None, idx       # views gathered when first read (ColumnData)
        else:
            values = gather(dictionary, idx)        # (names an index out of range)
    else:
        dense = [(gather(dictionary, v), dict_heap) if h is _INDICES else (v, h) for v, h in dense]
        values, heap = concat_values(dense, ptype, is_view, fixed_decimal)
    nulls = None
    if any_nulls:
        nulls = np.concatenate([m if m is not None else np.zeros(r, np.uint8)
                                for m, r in zip(null_parts, page_rows)])
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
