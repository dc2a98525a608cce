"""Decode one column chunk of a nested (or flat) leaf column into its
repetition levels, definition levels and dense values (only the values whose
definition level is the maximum: the leaf slots that hold a value).

The values of a page are decoded as the flat reader's are
(scan/page_values.py); what differs is the level layout: v1 pages hold
repetition levels, then definition levels, then values; v2 pages keep both
level runs uncompressed ahead of the values.
"""

from __future__ import annotations

import numpy as np

from scan import levels as L
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.page_values import (VIEW_TYPES, concat_values, decode_dictionary_page,
                              decode_page_values)
from scan.pages import DATA_PAGE_V2, DICTIONARY_PAGE, chunk_arena, iter_pages


class LeafLevels:
    """A leaf chunk as levels + dense values (physical form)."""
    __slots__ = ("defs", "reps", "values", "heap", "num_levels")

    def __init__(self, defs, reps, values, heap, num_levels):
        self.defs, self.reps = defs, reps
        self.values, self.heap, self.num_levels = values, heap, num_levels


def _levels_v1(page, pos, max_level, encoding):
    if max_level == 0:
        return None, pos
    if encoding == "BIT_PACKED":
        return L.decode_levels_bitpacked(page.data, pos, max_level, page.num_values)
    if encoding == "RLE":
        return L.decode_levels_v1(page.data, pos, max_level, page.num_values)
    raise UnsupportedFeatureError(f"level encoding {encoding}")


def _page_levels(page, max_rep, max_def):
    """(reps, defs, values start) of one data page."""
    n = page.num_values
    if page.kind == DATA_PAGE_V2:
        reps = L.decode_levels_v2(page.levels, 0, page.rep_length, max_rep, n)
        defs = L.decode_levels_v2(page.levels, page.rep_length, page.def_length, max_def, n)
        return reps, defs, 0
    reps, pos = _levels_v1(page, 0, max_rep, page.rep_encoding)
    defs, pos = _levels_v1(page, pos, max_def, page.def_encoding)
    return reps, defs, pos


def decode_leaf_chunk(buf: np.ndarray, col, chunk, verify_checksums: bool = True) -> LeafLevels:
    """Levels and dense values of leaf ``col`` from column chunk bytes ``buf``."""
    ptype, tlen = col.physical_type, col.type_length
    max_def, max_rep = col.max_def_level, col.max_rep_level
    is_view = ptype in VIEW_TYPES
    dictionary = dict_heap = None
    dense, defs_parts, reps_parts = [], [], []
    arena = chunk_arena(chunk, is_view)
    for page in iter_pages(buf, chunk.codec, chunk.num_values, verify_checksums, arena):
        try:
            if page.kind == DICTIONARY_PAGE:
                dictionary, dict_heap = decode_dictionary_page(page, dictionary, ptype, tlen, is_view)
                continue
            n = page.num_values
            reps, defs, pos = _page_levels(page, max_rep, max_def)
            if reps is not None and n and int(reps[0]) != 0 and not reps_parts:
                raise FileFormatError("first repetition level of a column chunk is not 0")
            n_valid = n if defs is None else int(np.count_nonzero(defs == max_def))
            values, heap = decode_page_values(page, pos, n_valid, ptype, tlen,
                                              dictionary=dictionary, dict_heap=dict_heap)
            if len(values) != n_valid:
                raise FileFormatError(f"page has {len(values)} values but its levels say "
                                      f"{n_valid} are present")
            dense.append((values, heap))
            defs_parts.append(defs if defs is not None else np.full(n, max_def, np.int16))
            reps_parts.append(reps if reps is not None else np.zeros(n, np.int16))
        except FileFormatError as e:
            raise FileFormatError(str(e), page=page.ordinal) from None
    values, heap = concat_values(dense, ptype, is_view)
    defs = _cat(defs_parts)
    reps = _cat(reps_parts)
    return LeafLevels(defs, reps, values, heap, len(defs))


def _cat(parts):
    if not parts:
        return np.zeros(0, np.int32)
    return np.concatenate([p.astype(np.int32, copy=False) for p in parts])
