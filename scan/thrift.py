"""Thrift compact-protocol decoder driven by field tables, and the Parquet
metadata structs (parquet.thrift) as such tables.

A struct spec maps field id -> (name, type code, nested spec).  Nested spec:
another struct spec for STRUCT, ``(element type, element spec)`` for LIST/SET,
None otherwise.  Decoded structs are plain dicts holding only the fields that
were present; unknown fields are skipped per protocol.  Every read is bounds
checked: malformed input raises FileFormatError, never IndexError or a hang.
"""

from __future__ import annotations

import struct as _struct

from scan.errors import FileFormatError

# compact protocol type codes
STOP, BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
BOOL = BOOL_TRUE          # use in specs for bool fields
STRING = BINARY           # use in specs for UTF-8 strings (decoded to str)
_STRING_MARK = "str"      # nested-spec marker: decode binary as str

_MAX_DEPTH = 64
_VARINT_TYPES = (I16, I32, I64)
_NO_FIELDS: dict = {}
_unpack_double = _struct.Struct("<d").unpack_from


def _uvarint(buf, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = shift = 0
    while True:
        if pos >= end:
            raise FileFormatError(f"malformed thrift metadata: unexpected end of data in "
                                  f"varint at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise FileFormatError(f"malformed thrift metadata: varint too long at byte {pos}")


def _binary(buf, pos: int, end: int) -> tuple[bytes, int]:
    """The length-prefixed bytes at ``pos`` and the position after them."""
    n, pos = _uvarint(buf, pos, end)
    if n > end - pos:
        raise FileFormatError(f"malformed thrift metadata: binary length {n} exceeds data "
                              f"at byte {pos}")
    return bytes(buf[pos:pos + n]), pos + n


class CompactDecoder:
    """Reads compact-protocol values from a bytes-like buffer."""

    __slots__ = ("buf", "pos", "end", "depth")

    def __init__(self, buf, pos: int = 0, end: int | None = None):
        self.buf = buf if isinstance(buf, (bytes, bytearray)) else memoryview(buf).cast("B")
        self.pos = pos
        self.end = len(self.buf) if end is None else min(end, len(self.buf))
        self.depth = 0

    def _fail(self, what: str):
        raise FileFormatError(f"malformed thrift metadata: {what} at byte {self.pos}")

    def byte(self) -> int:
        if self.pos >= self.end:
            self._fail("unexpected end of data")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result, self.pos = _uvarint(self.buf, self.pos, self.end)
        return result

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def _zigzags(self, count: int) -> list:
        """``count`` zigzag varints (a list of integers), in one loop."""
        buf, pos, end = self.buf, self.pos, self.end
        out = []
        for _ in range(count):
            result, pos = _uvarint(buf, pos, end)
            out.append((result >> 1) ^ -(result & 1))
        self.pos = pos
        return out

    def _binaries(self, count: int, as_str: bool) -> list:
        """``count`` binary values (str when ``as_str``), in one loop."""
        buf, pos, end = self.buf, self.pos, self.end
        out = []
        for _ in range(count):
            raw, pos = _binary(buf, pos, end)
            out.append(raw.decode("utf-8", errors="replace") if as_str else raw)
        self.pos = pos
        return out

    def binary(self) -> bytes:
        raw, self.pos = _binary(self.buf, self.pos, self.end)
        return raw

    def double(self) -> float:
        if self.end - self.pos < 8:
            self._fail("unexpected end of data in double")
        v = _unpack_double(self.buf, self.pos)[0]
        self.pos += 8
        return v

    def list_header(self) -> tuple[int, int]:
        h = self.byte()
        size = h >> 4
        etype = h & 0x0F
        if size == 15:
            size = self.varint()
        # every element takes at least one byte: bounds a corrupt size
        if size > self.end - self.pos:
            self._fail(f"list size {size} exceeds data")
        return size, etype

    # ---- values -----------------------------------------------------------
    def value(self, ttype: int, nested, in_list: bool = False):
        if ttype == BOOL_TRUE or ttype == BOOL_FALSE:
            if in_list:
                return self.byte() == 1
            return ttype == BOOL_TRUE
        if ttype in (I16, I32, I64):
            return self.zigzag()
        if ttype == BINARY:
            raw = self.binary()
            if nested == _STRING_MARK:
                return raw.decode("utf-8", errors="replace")
            return raw
        if ttype == STRUCT:
            return self.struct(nested)
        if ttype == BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype == DOUBLE:
            return self.double()
        if ttype == LIST or ttype == SET:
            size, etype = self.list_header()
            espec = None
            if isinstance(nested, tuple):
                want, espec = nested
                if size and etype != want and not (want in (I16, I32, I64) and etype in (I16, I32, I64, BYTE)) \
                        and not (want == BOOL_TRUE and etype in (BOOL_TRUE, BOOL_FALSE)):
                    self._fail(f"list element type {etype}, expected {want}")
            self._enter()
            if etype == STRUCT:
                out = [self.struct(espec) for _ in range(size)]
            elif etype in _VARINT_TYPES:
                out = self._zigzags(size)
            elif etype == BINARY:
                out = self._binaries(size, espec == _STRING_MARK)
            else:
                out = [self.value(etype, espec, True) for _ in range(size)]
            self.depth -= 1
            return out
        if ttype == MAP:
            size = self.varint()
            if size == 0:
                return {}
            kv = self.byte()
            if 2 * size > self.end - self.pos:
                self._fail(f"map size {size} exceeds data")
            self._enter()
            out = {}
            for _ in range(size):
                k = self.value(kv >> 4, None, True)
                out[k] = self.value(kv & 0x0F, None, True)
            self.depth -= 1
            return out
        self._fail(f"invalid thrift type code {ttype}")

    def _enter(self):
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            self._fail("nesting too deep")

    def struct(self, spec: dict | None) -> dict:
        """Decode one struct; fields not in ``spec`` are skipped.

        The integer, binary and struct fields a spec asks for (nearly every
        field of a footer or page header) skip value() and the method calls
        per byte and varint: a footer of 8k column chunks is some 300k
        fields, and those calls were most of its decoding time."""
        self._enter()
        out: dict = {}
        last_id = 0
        field = (spec or _NO_FIELDS).get
        buf, end = self.buf, self.end
        while True:
            pos = self.pos
            if pos >= end:
                self._fail("unexpected end of data")
            h = buf[pos]
            self.pos = pos + 1
            if h == STOP:
                break
            ttype = h & 0x0F
            delta = h >> 4
            fid = last_id + delta if delta else self.zigzag()
            last_id = fid
            entry = field(fid)
            if entry is None:
                self.value(ttype, None)                      # skip unknown field
                continue
            name, want, nested = entry
            if ttype == want:                                # the common cases, without value()
                if ttype in _VARINT_TYPES:
                    n, self.pos = _uvarint(buf, self.pos, end)
                    out[name] = (n >> 1) ^ -(n & 1)
                    continue
                if ttype == BINARY:
                    raw, self.pos = _binary(buf, self.pos, end)
                    out[name] = raw.decode("utf-8", errors="replace") \
                        if nested == _STRING_MARK else raw
                    continue
                if ttype == STRUCT:
                    out[name] = self.struct(nested)
                    continue
            if want == BOOL_TRUE:
                ok = ttype in (BOOL_TRUE, BOOL_FALSE)
            else:
                ok = ttype == want or (want in (I16, I32, I64) and ttype in (I16, I32, I64, BYTE)) \
                    or (want == LIST and ttype == SET)
            if not ok:             # a field of another type (old or foreign writer): skip it
                self.value(ttype, None)
                continue
            out[name] = self.value(ttype, nested)
        self.depth -= 1
        return out


def decode_struct(buf, spec: dict, pos: int = 0, end: int | None = None) -> tuple[dict, int]:
    """Decode one struct of ``spec`` at ``pos``; returns (dict, position after it)."""
    dec = CompactDecoder(buf, pos, end)
    try:
        result = dec.struct(spec)
    except RecursionError:
        raise FileFormatError("malformed thrift metadata: nesting too deep") from None
    return result, dec.pos


# ---- encoding (the inverse of decode_struct) ------------------------------------

def _varint(n: int, out: bytearray) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(n: int, out: bytearray) -> None:
    _varint((n << 1) ^ (n >> 63) if n < 0 else n << 1, out)


def _encode_value(ttype: int, nested, v, out: bytearray) -> None:
    if ttype in (I16, I32, I64):
        _zigzag(int(v), out)
    elif ttype == BINARY:
        raw = v.encode() if isinstance(v, str) else bytes(v)
        _varint(len(raw), out)
        out += raw
    elif ttype == STRUCT:
        _encode_struct(v, nested or EMPTY, out)
    elif ttype == BYTE:
        out.append(v & 0xFF)
    elif ttype == DOUBLE:
        out += _struct.pack("<d", v)
    elif ttype in (LIST, SET):
        etype, espec = nested
        wire = BOOL_TRUE if etype in (BOOL_TRUE, BOOL_FALSE) else etype
        if len(v) < 15:
            out.append((len(v) << 4) | wire)
        else:
            out.append(0xF0 | wire)
            _varint(len(v), out)
        for x in v:
            if wire == BOOL_TRUE:
                out.append(1 if x else 2)
            else:
                _encode_value(etype, espec, x, out)
    else:
        raise ValueError(f"cannot encode thrift type {ttype}")


_ORDER: dict = {}               # id(spec) -> (spec, its field ids in order)


def _encode_struct(d: dict, spec: dict, out: bytearray) -> None:
    last = 0
    order = _ORDER.get(id(spec))
    if order is None or order[0] is not spec:
        order = _ORDER[id(spec)] = (spec, sorted(spec))
    for fid in order[1]:
        name, ttype, nested = spec[fid]
        v = d.get(name)
        if v is None:
            continue
        wire = ttype
        if ttype in (BOOL_TRUE, BOOL_FALSE):
            wire = BOOL_TRUE if v else BOOL_FALSE
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | wire)
        else:
            out.append(wire)
            _zigzag(fid, out)
        last = fid
        if wire not in (BOOL_TRUE, BOOL_FALSE):
            _encode_value(ttype, nested, v, out)
    out.append(STOP)


def encode_struct(d: dict, spec: dict) -> bytes:
    """``d`` (a struct as decode_struct returns it: field name -> value) as
    compact-protocol bytes; fields not in ``spec`` are left out."""
    out = bytearray()
    _encode_struct(d, spec, out)
    return bytes(out)


# ---- parquet.thrift as field tables ------------------------------------------
S = _STRING_MARK
EMPTY: dict = {}

TIME_UNIT = {1: ("MILLIS", STRUCT, EMPTY), 2: ("MICROS", STRUCT, EMPTY), 3: ("NANOS", STRUCT, EMPTY)}
DECIMAL_TYPE = {1: ("scale", I32, None), 2: ("precision", I32, None)}
TIME_TYPE = {1: ("isAdjustedToUTC", BOOL, None), 2: ("unit", STRUCT, TIME_UNIT)}
INT_TYPE = {1: ("bitWidth", BYTE, None), 2: ("isSigned", BOOL, None)}

LOGICAL_TYPE = {
    1: ("STRING", STRUCT, EMPTY), 2: ("MAP", STRUCT, EMPTY), 3: ("LIST", STRUCT, EMPTY),
    4: ("ENUM", STRUCT, EMPTY), 5: ("DECIMAL", STRUCT, DECIMAL_TYPE), 6: ("DATE", STRUCT, EMPTY),
    7: ("TIME", STRUCT, TIME_TYPE), 8: ("TIMESTAMP", STRUCT, TIME_TYPE),
    9: ("INTERVAL", STRUCT, EMPTY), 10: ("INTEGER", STRUCT, INT_TYPE),
    11: ("UNKNOWN", STRUCT, EMPTY), 12: ("JSON", STRUCT, EMPTY), 13: ("BSON", STRUCT, EMPTY),
    14: ("UUID", STRUCT, EMPTY), 15: ("FLOAT16", STRUCT, EMPTY), 16: ("VARIANT", STRUCT, EMPTY),
    17: ("GEOMETRY", STRUCT, EMPTY), 18: ("GEOGRAPHY", STRUCT, EMPTY),
}

SCHEMA_ELEMENT = {
    1: ("type", I32, None), 2: ("type_length", I32, None), 3: ("repetition_type", I32, None),
    4: ("name", BINARY, S), 5: ("num_children", I32, None), 6: ("converted_type", I32, None),
    7: ("scale", I32, None), 8: ("precision", I32, None), 9: ("field_id", I32, None),
    10: ("logicalType", STRUCT, LOGICAL_TYPE),
}

STATISTICS = {
    1: ("max", BINARY, None), 2: ("min", BINARY, None), 3: ("null_count", I64, None),
    4: ("distinct_count", I64, None), 5: ("max_value", BINARY, None), 6: ("min_value", BINARY, None),
    7: ("is_max_value_exact", BOOL, None), 8: ("is_min_value_exact", BOOL, None),
}

KEY_VALUE = {1: ("key", BINARY, S), 2: ("value", BINARY, S)}
PAGE_ENCODING_STATS = {1: ("page_type", I32, None), 2: ("encoding", I32, None), 3: ("count", I32, None)}
SORTING_COLUMN = {1: ("column_idx", I32, None), 2: ("descending", BOOL, None), 3: ("nulls_first", BOOL, None)}
COLUMN_ORDER = {1: ("TYPE_ORDER", STRUCT, EMPTY)}

COLUMN_META_DATA = {
    1: ("type", I32, None), 2: ("encodings", LIST, (I32, None)),
    3: ("path_in_schema", LIST, (BINARY, S)), 4: ("codec", I32, None),
    5: ("num_values", I64, None), 6: ("total_uncompressed_size", I64, None),
    7: ("total_compressed_size", I64, None), 8: ("key_value_metadata", LIST, (STRUCT, KEY_VALUE)),
    9: ("data_page_offset", I64, None), 10: ("index_page_offset", I64, None),
    11: ("dictionary_page_offset", I64, None), 12: ("statistics", STRUCT, STATISTICS),
    13: ("encoding_stats", LIST, (STRUCT, PAGE_ENCODING_STATS)),
    14: ("bloom_filter_offset", I64, None), 15: ("bloom_filter_length", I32, None),
}

# Parquet Modular Encryption (scan/crypto.py)
AES_GCM = {1: ("aad_prefix", BINARY, None), 2: ("aad_file_unique", BINARY, None),
           3: ("supply_aad_prefix", BOOL, None)}
ENCRYPTION_ALGORITHM = {1: ("AES_GCM_V1", STRUCT, AES_GCM), 2: ("AES_GCM_CTR_V1", STRUCT, AES_GCM)}
ENCRYPTION_WITH_COLUMN_KEY = {1: ("path_in_schema", LIST, (BINARY, S)),
                              2: ("key_metadata", BINARY, None)}
COLUMN_CRYPTO_META_DATA = {1: ("ENCRYPTION_WITH_FOOTER_KEY", STRUCT, EMPTY),
                           2: ("ENCRYPTION_WITH_COLUMN_KEY", STRUCT, ENCRYPTION_WITH_COLUMN_KEY)}
FILE_CRYPTO_META_DATA = {1: ("encryption_algorithm", STRUCT, ENCRYPTION_ALGORITHM),
                         2: ("key_metadata", BINARY, None)}

COLUMN_CHUNK = {
    1: ("file_path", BINARY, S), 2: ("file_offset", I64, None),
    3: ("meta_data", STRUCT, COLUMN_META_DATA), 4: ("offset_index_offset", I64, None),
    5: ("offset_index_length", I32, None), 6: ("column_index_offset", I64, None),
    7: ("column_index_length", I32, None),
    8: ("crypto_metadata", STRUCT, COLUMN_CRYPTO_META_DATA),
    9: ("encrypted_column_metadata", BINARY, None),
}

ROW_GROUP = {
    1: ("columns", LIST, (STRUCT, COLUMN_CHUNK)), 2: ("total_byte_size", I64, None),
    3: ("num_rows", I64, None), 4: ("sorting_columns", LIST, (STRUCT, SORTING_COLUMN)),
    5: ("file_offset", I64, None), 6: ("total_compressed_size", I64, None),
    7: ("ordinal", I16, None),
}

FILE_META_DATA = {
    1: ("version", I32, None), 2: ("schema", LIST, (STRUCT, SCHEMA_ELEMENT)),
    3: ("num_rows", I64, None), 4: ("row_groups", LIST, (STRUCT, ROW_GROUP)),
    5: ("key_value_metadata", LIST, (STRUCT, KEY_VALUE)), 6: ("created_by", BINARY, S),
    7: ("column_orders", LIST, (STRUCT, COLUMN_ORDER)),
    8: ("encryption_algorithm", STRUCT, ENCRYPTION_ALGORITHM),
    9: ("footer_signing_key_metadata", BINARY, None),
}

DATA_PAGE_HEADER = {
    1: ("num_values", I32, None), 2: ("encoding", I32, None),
    3: ("definition_level_encoding", I32, None), 4: ("repetition_level_encoding", I32, None),
    5: ("statistics", STRUCT, STATISTICS),
}
INDEX_PAGE_HEADER: dict = {}
DICTIONARY_PAGE_HEADER = {1: ("num_values", I32, None), 2: ("encoding", I32, None), 3: ("is_sorted", BOOL, None)}
DATA_PAGE_HEADER_V2 = {
    1: ("num_values", I32, None), 2: ("num_nulls", I32, None), 3: ("num_rows", I32, None),
    4: ("encoding", I32, None), 5: ("definition_levels_byte_length", I32, None),
    6: ("repetition_levels_byte_length", I32, None), 7: ("is_compressed", BOOL, None),
    8: ("statistics", STRUCT, STATISTICS),
}
PAGE_HEADER = {
    1: ("type", I32, None), 2: ("uncompressed_page_size", I32, None),
    3: ("compressed_page_size", I32, None), 4: ("crc", I32, None),
    5: ("data_page_header", STRUCT, DATA_PAGE_HEADER), 6: ("index_page_header", STRUCT, INDEX_PAGE_HEADER),
    7: ("dictionary_page_header", STRUCT, DICTIONARY_PAGE_HEADER),
    8: ("data_page_header_v2", STRUCT, DATA_PAGE_HEADER_V2),
}

# enums
PHYSICAL_TYPES = ("BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                  "FIXED_LEN_BYTE_ARRAY")
CONVERTED_TYPES = ("UTF8", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE",
                   "TIME_MILLIS", "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS",
                   "UINT_8", "UINT_16", "UINT_32", "UINT_64", "INT_8", "INT_16", "INT_32",
                   "INT_64", "JSON", "BSON", "INTERVAL")
CODECS = ("UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW")
ENCODINGS = {0: "PLAIN", 1: "GROUP_VAR_INT", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED",
             5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY",
             8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
PAGE_TYPES = {0: "DATA_PAGE", 1: "INDEX_PAGE", 2: "DICTIONARY_PAGE", 3: "DATA_PAGE_V2"}
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2


def enum_name(table, value, what: str) -> str:
    """Name of an enum value; unknown values give '<what>#<n>'."""
    if isinstance(table, dict):
        name = table.get(value)
    else:
        name = table[value] if isinstance(value, int) and 0 <= value < len(table) else None
    return name if name is not None else f"{what}#{value}"
