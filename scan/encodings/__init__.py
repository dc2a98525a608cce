"""Parquet value encodings as numba kernels.  Submodules are imported on
demand so that importing ``scan`` does not load numba.

    rle.decode_hybrid(buf, pos, end, bit_width, count) -> (int32[count], new_pos)
    rle.decode_rle_booleans(buf, pos, end, count) -> (bool_[count], new_pos)   # RLE-encoded BOOLEAN pages
    plain.decode_plain(buf, pos, end, physical_type, count, type_length=0) -> (values, new_pos)
    dictionary.decode_dictionary_indices(buf, pos, end, count) -> int32[count]
    dictionary.gather(dictionary_values, indices) -> values     # bounds-checked
    dictionary.dictionary_values(buf, pos, count, dictionary, out=None, sel=None, form=None)
        -> values or None                                       # fused kernel, None on a defect
    delta.decode_delta_binary_packed(buf, pos, end, count, physical_type) -> (int32|int64, new_pos)
    delta.decode_delta_length_byte_array(buf, pos, end, count) -> (views into buf, new_pos)
    delta.decode_delta_byte_array(buf, pos, end, count) -> (views, heap, new_pos)
    byte_stream_split.decode_byte_stream_split(buf, pos, end, physical_type, count) -> (values, new_pos)
    byte_stream_split.decode_byte_stream_split_fixed(buf, pos, end, count, type_length) -> (views, heap, new_pos)
    varint.read_uleb128(buf, pos, end, max_bytes) -> (uint64, new_pos)   # njit; new_pos < 0: defect

Malformed input raises scan.errors.FileFormatError (never IndexError/crash).
``count`` is the number of encoded (non-null) values in the page.
"""
