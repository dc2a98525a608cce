"""The values of one page, the part every decode path shares: the one
dispatch of a data page's values by encoding (``decode_page_values``:
PLAIN, dictionary, and the rest -- RLE booleans, DELTA_*,
BYTE_STREAM_SPLIT), the dictionary page, and the page-level pieces around
them (empty values, concatenating pages, the encoding sets).

Values come out in their *physical* form (bool_, int32, int64, INT96 as int64
microseconds, float32, float64, or (n, 2) string views + heap), except
FIXED_LEN_BYTE_ARRAY decimals of precision <= 18, which a caller may ask to
have decoded straight to int64 (``fixed_decimal``); scan/column_data.py
converts the rest to engine storage.

The decode paths: scan/column.py (a flat chunk page by page),
scan/nested_chunk.py (a leaf chunk of any nesting), scan/row_ranges.py (the
pages of a row range) and scan/required_chunk.py (whole chunks inside one
numba kernel, which decodes its PLAIN and dictionary pages itself; it shares
the dictionary page and the encoding sets).  The flat and row-range paths
take dictionary pages through the fused kernel of
scan/encodings/dictionary.py first, with what spans pages (one output for a
whole chunk, the codes, a page's run directory); the page's values go
through ``decode_page_values`` otherwise."""

from __future__ import annotations

import numpy as np

from scan.encodings import byte_stream_split as B
from scan.encodings.delta import (decode_delta_binary_packed, decode_delta_byte_array,
                                  decode_delta_length_byte_array)
from scan.encodings.dictionary import decode_dictionary_indices, dictionary_values, gather
from scan.encodings.plain import decode_plain, decode_plain_decimal
from scan.encodings.rle import decode_rle_booleans
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.views import concat_views, decimal_from_be_bytes

# physical types decoded to (n, 2) string views + heap
VIEW_TYPES = ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
# data page encodings whose values are dictionary indices
DICT_ENCODINGS = ("PLAIN_DICTIONARY", "RLE_DICTIONARY")
# encodings a dictionary page may be in (both mean PLAIN there)
DICT_PAGE_ENCODINGS = ("PLAIN", "PLAIN_DICTIONARY")
_BSS_TYPES = ("INT32", "INT64", "FLOAT", "DOUBLE")
_EMPTY = {"BOOLEAN": np.bool_, "INT32": np.int32, "INT64": np.int64, "INT96": np.int64,
          "FLOAT": np.float32, "DOUBLE": np.float64}


def is_fixed_decimal(col) -> bool:
    """A FIXED_LEN_BYTE_ARRAY decimal that fits int64 storage (precision <= 18)."""
    return (col.physical_type == "FIXED_LEN_BYTE_ARRAY"
            and col.type_name.startswith("decimal") and col.precision <= 18)


def decode_page_values(page, pos: int, count: int, ptype: str, tlen: int,
                       fixed_decimal: bool = False, dictionary=None, dict_heap=None,
                       form=None):
    """(values, heap) of the ``count`` dense values of data ``page`` that
    start at byte ``pos`` of ``page.data``, dispatched on the page's
    encoding:

    * PLAIN: strings are views straight into the buffer the page lies in
      (``page.owner``, then the heap); ``fixed_decimal``: int64;
    * dictionary: ``dictionary`` (the decoded dictionary page, whose heap is
      ``dict_heap``) gathered by the page's indices -- through the fused
      kernel when ``form`` (its fused_form) is given, else, or on a defect,
      decoded and gathered checked (which names the defect);
    * the rest (RLE booleans, DELTA_*, BYTE_STREAM_SPLIT): their decoders;
      ``fixed_decimal`` converts the big-endian views to int64."""
    if count == 0:
        return empty_values(ptype, fixed_decimal), None
    data, enc = page.data, page.encoding
    if enc == "PLAIN":
        if fixed_decimal:
            return decode_plain_decimal(data, pos, len(data), count, tlen)[0], None
        if ptype in VIEW_TYPES:             # views straight into the page's buffer
            b = page.base
            return decode_plain(page.owner, b + pos, b + len(data), ptype, count, tlen)[0], \
                page.owner
        return decode_plain(data, pos, len(data), ptype, count, tlen)[0], None
    if enc in DICT_ENCODINGS:
        if dictionary is None:
            raise FileFormatError("dictionary-encoded page without a dictionary page")
        values = (dictionary_values(data, pos, count, dictionary, None, None, form)
                  if form is not None else None)
        if values is None:
            values = gather(dictionary, decode_dictionary_indices(data, pos, len(data), count))
        return values, dict_heap
    values, heap = decode_other_encoding(enc, data, pos, ptype, tlen, count)
    if fixed_decimal:
        return decimal_from_be_bytes(values, heap, tlen), None
    return values, heap


def decode_dictionary_page(page, current, ptype: str, tlen: int, is_view: bool):
    """(dictionary values, heap) of a dictionary page; a second dictionary
    page in one chunk or an unknown dictionary encoding is refused."""
    if current is not None:
        raise FileFormatError("second dictionary page in a column chunk")
    if page.encoding not in DICT_PAGE_ENCODINGS:
        raise UnsupportedFeatureError(f"dictionary page encoding {page.encoding}")
    values, _ = decode_plain(page.owner, page.base, page.base + len(page.data),
                             ptype, page.num_values, tlen)
    return values, (page.owner if is_view else None)


def decode_other_encoding(enc: str, data, pos: int, ptype: str, tlen: int, n_valid: int):
    """(values, heap) of a page in an encoding other than PLAIN and the
    dictionary encodings: RLE booleans, DELTA_*, BYTE_STREAM_SPLIT."""
    if enc == "RLE" and ptype == "BOOLEAN":
        values, _ = decode_rle_booleans(data, pos, len(data), n_valid)
        return values, None
    if enc in _OTHER_DECODERS:
        return _OTHER_DECODERS[enc](data, pos, ptype, tlen, n_valid)
    raise UnsupportedFeatureError(f"encoding {enc} for {ptype} columns")


def empty_values(ptype: str, fixed_decimal: bool = False) -> np.ndarray:
    """No values of physical type ``ptype`` (int64 for a fixed decimal)."""
    if fixed_decimal:
        return np.zeros(0, np.int64)
    if ptype in VIEW_TYPES:
        return np.zeros((0, 2), np.uint64)
    return np.zeros(0, _EMPTY[ptype])


def concat_values(dense: list, ptype: str, is_view: bool, fixed_decimal: bool = False):
    """(values, heap) of the pages' (values, heap) pairs ``dense`` one after
    another; string views over several heaps are rebased onto one."""
    if not dense:
        return empty_values(ptype, fixed_decimal), (np.zeros(0, np.uint8) if is_view else None)
    if is_view:
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
    values, _ = decode_delta_binary_packed(data, pos, len(data), count, ptype)
    return values, None


def _delta_length_byte_array(data, pos, ptype, tlen, count):
    if ptype != "BYTE_ARRAY":
        raise UnsupportedFeatureError(f"encoding DELTA_LENGTH_BYTE_ARRAY for {ptype} columns")
    views, _ = decode_delta_length_byte_array(data, pos, len(data), count)
    return views, data


def _delta_byte_array(data, pos, ptype, tlen, count):
    if ptype not in VIEW_TYPES:
        raise UnsupportedFeatureError(f"encoding DELTA_BYTE_ARRAY for {ptype} columns")
    views, heap, _ = decode_delta_byte_array(data, pos, len(data), count)
    if ptype == "FIXED_LEN_BYTE_ARRAY" and len(views) and \
            np.any((views[:, 0] & np.uint64(0xFFFFFFFF)) != np.uint64(tlen)):
        raise FileFormatError(f"DELTA_BYTE_ARRAY value length differs from type_length {tlen}")
    return views, heap


_OTHER_DECODERS = {"BYTE_STREAM_SPLIT": _byte_stream_split,
                   "DELTA_BINARY_PACKED": _delta_binary_packed,
                   "DELTA_LENGTH_BYTE_ARRAY": _delta_length_byte_array,
                   "DELTA_BYTE_ARRAY": _delta_byte_array}
