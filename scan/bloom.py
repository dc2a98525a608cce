"""Split-block bloom filters (Parquet spec, "Bloom Filter").

A column chunk may carry a bloom filter at ``bloom_filter_offset``: a thrift
BloomFilterHeader (numBytes, algorithm BLOCK, hash XXHASH, compression
UNCOMPRESSED) followed by ``numBytes`` of bitset.  The bitset is a sequence of
32-byte blocks of eight little-endian uint32 words.  A value is hashed with
XXH64 (seed 0) over its PLAIN encoding (BYTE_ARRAY: the bytes without the
length prefix; scan/hashing.py, shared with the sketches of stats/); the
block is ``((hash >> 32) * num_blocks) >> 32``; the low 32 bits of the
hash, multiplied by eight salts, pick one bit in each word.

``BloomFilter.might_contain(value)`` takes a value in engine storage form (int,
float, bytes/str); False means the value is certainly absent from the chunk.
The hash and probe are numba kernels so a whole IN list (or a block of
values) is checked in one call (``might_contain_many``).
"""

from __future__ import annotations

import logging
import math
import struct

import numpy as np
from numba import njit

from scan import thrift as T
from scan.errors import FileFormatError, UnsupportedFeatureError
from scan.hashing import xxh64, xxh64_many  # noqa: F401 (xxh64: re-exported)
from scan.metadata import locate_chunk

_E = T.EMPTY
BLOOM_FILTER_HEADER = {
    1: ("numBytes", T.I32, None),
    2: ("algorithm", T.STRUCT, {1: ("BLOCK", T.STRUCT, _E)}),
    3: ("hash", T.STRUCT, {1: ("XXHASH", T.STRUCT, _E)}),
    4: ("compression", T.STRUCT, {1: ("UNCOMPRESSED", T.STRUCT, _E)}),
}
MAX_BLOOM_BYTES = 128 * 1024 * 1024     # the spec's upper bound on numBytes
BLOCK_BYTES = 32

_SALTS = np.array([0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
                   0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31], dtype=np.uint64)


@njit(nogil=True, cache=True)
def _block_mask_bit(key, i):
    return np.uint32(1) << np.uint32(((key * _SALTS[i]) & np.uint64(0xFFFFFFFF)) >> np.uint64(27))


@njit(nogil=True, cache=True)
def sbbf_check(words, hashes, out):
    """out[i] = 1 when hash i may be in the filter (``words``: uint32 bitset)."""
    num_blocks = np.uint64(words.shape[0] // 8)
    for i in range(hashes.shape[0]):
        h = hashes[i]
        block = np.int64(((h >> np.uint64(32)) * num_blocks) >> np.uint64(32))
        key = h & np.uint64(0xFFFFFFFF)
        hit = 1
        for w in range(8):
            if words[block * 8 + w] & _block_mask_bit(key, w) == 0:
                hit = 0
                break
        out[i] = hit


@njit(nogil=True, cache=True)
def sbbf_insert(words, hashes):
    """Set the bits of every hash (tests and writers)."""
    num_blocks = np.uint64(words.shape[0] // 8)
    for i in range(hashes.shape[0]):
        h = hashes[i]
        block = np.int64(((h >> np.uint64(32)) * num_blocks) >> np.uint64(32))
        key = h & np.uint64(0xFFFFFFFF)
        for w in range(8):
            words[block * 8 + w] |= _block_mask_bit(key, w)


# ---- values -> plain encoding --------------------------------------------------

_INT_FORMATS = {"INT32": "<i", "INT64": "<q"}
_UINT_FORMATS = {"INT32": "<I", "INT64": "<Q"}


def plain_candidates(value, col) -> list | None:
    """The PLAIN encodings a storage-form ``value`` of ``col`` may have been
    hashed from: [] when no stored value can equal it, None when unknown
    (the caller must then assume "may contain")."""
    if value is None:
        return None
    p, t = col.physical_type, col.type_name
    try:
        if p in ("INT32", "INT64"):
            if isinstance(value, float):
                if not value.is_integer():
                    return []
                value = int(value)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                return None
            v = int(value)
            if col.time_unit == "MILLIS":
                if v % 1000:
                    return []
                v //= 1000
            elif col.time_unit == "NANOS" and t in ("time_us", "timetz_us"):
                return None                         # many nanosecond values map to one
            fmt = _UINT_FORMATS[p] if t.startswith("uint") else _INT_FORMATS[p]
            return [struct.pack(fmt, v)]
        if p in ("FLOAT", "DOUBLE"):
            f = float(value)
            if math.isnan(f):
                return None
            fmt = "<f" if p == "FLOAT" else "<d"
            if p == "FLOAT" and t == "float32" and np.float32(f) != f:
                return []
            if f == 0.0:
                return [struct.pack(fmt, 0.0), struct.pack(fmt, -0.0)]
            return [struct.pack(fmt, f)]
        if p == "BYTE_ARRAY":
            if t.startswith("decimal"):
                return None                         # minimal-width encoding is writer-specific
            return [value.encode() if isinstance(value, str) else bytes(value)]
        if p == "FIXED_LEN_BYTE_ARRAY":
            n = col.type_length
            if t.startswith("decimal"):
                try:
                    return [int(value).to_bytes(n, "big", signed=True)]
                except OverflowError:
                    return []
            if t == "float32" and col.logical_type == "FLOAT16":
                f = float(value)
                if math.isnan(f):
                    return None
                h = np.float16(f)
                if float(h) != f:
                    return []
                if f == 0.0:
                    return [np.float16(0.0).tobytes(), np.float16(-0.0).tobytes()]
                return [h.tobytes()]
            if t == "uuid":                          # storage int -> the 16 bytes
                if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                    return None
                v = int(value) + (1 << 127)
                return [v.to_bytes(16, "big")] if 0 <= v < 1 << 128 else []
            if t == "interval":
                return None
            b = value.encode() if isinstance(value, str) else bytes(value)
            return [b] if len(b) == n else []
    except (OverflowError, struct.error, TypeError, ValueError, AttributeError):
        return None
    return None                                      # BOOLEAN, INT96: no bloom semantics


class BloomFilter:
    """The split-block bloom filter of one column chunk."""

    def __init__(self, words: np.ndarray, col):
        self.words = words
        self.column = col
        self.num_bytes = words.shape[0] * 4

    def might_contain_hashes(self, hashes: np.ndarray) -> np.ndarray:
        out = np.empty(len(hashes), np.uint8)
        sbbf_check(self.words, np.ascontiguousarray(hashes, np.uint64), out)
        return out.view(np.bool_)

    def might_contain(self, value) -> bool:
        """False only when ``value`` (storage form) is certainly absent."""
        cands = plain_candidates(value, self.column)
        if cands is None:
            return True
        if not cands:
            return False
        return bool(self.might_contain_hashes(_hash_all(cands)).any())

    def might_contain_any(self, values) -> bool:
        """False only when none of ``values`` can be present (IN lists)."""
        cands = []
        for v in values:
            c = plain_candidates(v, self.column)
            if c is None:
                return True
            cands.extend(c)
        return bool(cands) and bool(self.might_contain_hashes(_hash_all(cands)).any())

    def __repr__(self) -> str:
        return f"BloomFilter({self.column.name!r}, {self.num_bytes} bytes)"


def _hash_all(items: list) -> np.ndarray:
    lengths = np.array([len(b) for b in items], np.int64)
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buf = np.frombuffer(b"".join(items), np.uint8) if offsets[-1] else np.zeros(1, np.uint8)
    out = np.empty(len(items), np.uint64)
    xxh64_many(buf, offsets, out)
    return out


# ---- parsing ------------------------------------------------------------------

def parse_bloom_filter(buf, col, available: int | None = None) -> BloomFilter:
    """Header + bitset held in ``buf`` (uint8, starting at the header)."""
    buf = np.asarray(buf, dtype=np.uint8)
    header, pos = T.decode_struct(buf, BLOOM_FILTER_HEADER, 0, len(buf))
    n = header.get("numBytes")
    if n is None:
        raise FileFormatError("bloom filter header lacks numBytes")
    for part, want in (("algorithm", "BLOCK"), ("hash", "XXHASH"), ("compression", "UNCOMPRESSED")):
        got = header.get(part)
        if got is None:
            raise FileFormatError(f"bloom filter header lacks {part}")
        if want not in got:
            raise UnsupportedFeatureError(f"bloom filter {part} other than {want}")
    if n <= 0 or n % BLOCK_BYTES or n > MAX_BLOOM_BYTES:
        raise FileFormatError(f"bloom filter size {n} is not a positive multiple of "
                              f"{BLOCK_BYTES} bytes up to {MAX_BLOOM_BYTES}")
    if pos + n > len(buf):
        raise FileFormatError(f"bloom filter bitset of {n} bytes runs past its range "
                              f"({len(buf) - pos} bytes left)")
    words = np.frombuffer(buf[pos:pos + n].tobytes(), dtype="<u4").astype(np.uint32)
    return BloomFilter(words, col)


_HEADER_GUESS = 64

log = logging.getLogger("pqdb.scan")


def read_bloom_filter(pf, row_group: int, column: int) -> BloomFilter | None:
    """The bloom filter of one column chunk, or None when it has none or
    when the one it has does not agree with the file: a filter lying
    outside the data region or inside its own chunk, a header that does not
    decode, names another algorithm, or whose bitset size disagrees with
    ``bloom_filter_length`` is ignored (a debug note), never trusted to
    skip a row group and never a reason to refuse the file (as DuckDB)."""
    chunk, col, ctx = locate_chunk(pf, row_group, column)
    off = chunk.bloom_filter_offset
    if off is None:
        return None
    try:
        if chunk.crypto is not None:
            return _read_encrypted(pf, chunk, col, off)
        return _read_checked(pf, chunk, col, off, chunk.bloom_filter_length)
    except (FileFormatError, UnsupportedFeatureError) as e:
        log.debug("bloom filter ignored (%s): %s", ", ".join(f"{k} {v}" for k, v in ctx.items()), e)
        return None


def _read_checked(pf, chunk, col, off: int, length: int | None) -> BloomFilter:
    end = pf._data_end
    if off < 4 or off >= end:
        raise FileFormatError(f"offset {off} lies outside the data region 4..{end}")
    if chunk.start <= off < chunk.start + chunk.length:
        raise FileFormatError(f"offset {off} lies inside its column chunk "
                              f"{chunk.start}..{chunk.start + chunk.length}")
    if length is not None:
        if length <= 0 or off + length > end:
            raise FileFormatError(f"range {off}+{length} lies outside the data region 4..{end}")
        buf = np.asarray(pf.buffer_manager.get(pf.source, off, length), np.uint8)
        _, pos = T.decode_struct(buf, BLOOM_FILTER_HEADER, 0, len(buf))
        bf = parse_bloom_filter(buf, col)
        if pos + bf.num_bytes != length:
            raise FileFormatError(f"header of {pos} bytes and bitset of {bf.num_bytes} bytes "
                                  f"disagree with bloom_filter_length {length}")
        return bf
    head = pf.buffer_manager.get(pf.source, off, min(_HEADER_GUESS, end - off))
    header, pos = T.decode_struct(head, BLOOM_FILTER_HEADER, 0, len(head))
    n = header.get("numBytes")
    if not isinstance(n, int) or n <= 0 or pos + n > end - off:
        raise FileFormatError(f"bitset of {n} bytes runs past the data region")
    return parse_bloom_filter(pf.buffer_manager.get(pf.source, off, pos + n), col)


def _read_encrypted(pf, chunk, col, off: int) -> BloomFilter:
    """The bloom filter of an encrypted chunk: a header module, then a
    bitset module, each length-prefixed AES-GCM (scan/crypto.py); a failed
    tag is an AuthenticationError, never ignored."""
    from scan.crypto import BLOOM_FILTER_BITSET, BLOOM_FILTER_HEADER as HEADER, LENGTH
    end = pf._data_end
    if off < 4 or off + LENGTH > end:
        raise FileFormatError(f"offset {off} lies outside the data region 4..{end}")

    def module(at: int, kind: int):
        n = int.from_bytes(bytes(pf.buffer_manager.get(pf.source, at, LENGTH)), "little")
        if at + LENGTH + n > end:
            raise chunk.crypto.error(kind, "is truncated")
        return chunk.crypto.open(pf.buffer_manager.get(pf.source, at, LENGTH + n), kind), \
            at + LENGTH + n

    head, at = module(off, HEADER)
    header, pos = T.decode_struct(head, BLOOM_FILTER_HEADER, 0, len(head))
    bitset, _ = module(at, BLOOM_FILTER_BITSET)
    return parse_bloom_filter(np.frombuffer(head[:pos] + bitset, np.uint8), col)
