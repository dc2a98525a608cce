"""Page decompression: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4, LZ4_RAW and
BROTLI (SNAPPY, LZ4 and BROTLI through cramjam, GZIP through zlib, ZSTD
through zstandard).

``decompress`` returns a fresh writable uint8 array of exactly the page's
uncompressed size; corrupt data or a size mismatch is a FileFormatError, an
unknown or unavailable codec an UnsupportedFeatureError naming it.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import numpy as np

from scan.errors import FileFormatError, UnsupportedFeatureError


def _as_bytes(data) -> bytes:
    return data.tobytes() if isinstance(data, np.ndarray) else bytes(data)


def _to_array(raw: bytes, expected: int, codec: str) -> np.ndarray:
    if len(raw) != expected:
        raise FileFormatError(f"{codec} page decompressed to {len(raw)} bytes, "
                              f"header says {expected}")
    out = np.empty(expected, dtype=np.uint8)
    out[:] = np.frombuffer(raw, dtype=np.uint8)
    return out


def _snappy(data, expected: int) -> np.ndarray:
    src = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    n = cramjam.snappy.decompress_raw_len(src)
    if n != expected:
        raise FileFormatError(f"SNAPPY page decompresses to {n} bytes, header says {expected}")
    out = np.empty(expected, dtype=np.uint8)
    written = cramjam.snappy.decompress_raw_into(src, out)
    if written != expected:
        raise FileFormatError(f"SNAPPY page decompressed to {written} bytes, header says {expected}")
    return out


def _gzip(data, expected: int) -> np.ndarray:
    """gzip or zlib stream, possibly several concatenated gzip members."""
    rest = _as_bytes(data)
    parts = []
    total = 0
    while rest:
        d = zlib.decompressobj(47)                 # auto-detect gzip / zlib header
        chunk = d.decompress(rest, expected - total + 1)
        parts.append(chunk)
        total += len(chunk)
        if total > expected:
            break
        if not d.eof:
            raise FileFormatError("GZIP page is truncated")
        rest = d.unused_data
        if rest.strip(b"\x00") == b"":             # trailing padding
            break
    return _to_array(b"".join(parts), expected, "GZIP")


def _zstd(data, expected: int) -> np.ndarray:
    import zstandard
    rest = _as_bytes(data)
    parts = []
    total = 0
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        chunk = d.decompress(rest)
        parts.append(chunk)
        total += len(chunk)
        if total > expected:
            break
        rest = d.unused_data
        if not rest and not d.eof:
            raise FileFormatError("ZSTD page is truncated")
    return _to_array(b"".join(parts), expected, "ZSTD")


def _lz4_block(raw: bytes, size: int) -> bytes:
    """One raw LZ4 block of ``size`` decoded bytes."""
    return bytes(cramjam.lz4.decompress_block(raw, output_len=size))


def _lz4_raw(data, expected: int) -> np.ndarray:
    try:
        return _to_array(_lz4_block(_as_bytes(data), expected), expected, "LZ4_RAW")
    except FileFormatError:
        raise
    except Exception as e:
        raise FileFormatError(f"LZ4_RAW page is corrupt: {e}") from None


def _lz4_hadoop(data, expected: int) -> np.ndarray:
    """The deprecated LZ4 codec: Hadoop framing (big-endian sizes before each
    block) as parquet-java writes it, else a raw block, else the LZ4 frame
    format, as other readers detect."""
    block = _lz4_block
    raw = _as_bytes(data)
    try:
        pos, parts, total = 0, [], 0
        while pos < len(raw):
            if len(raw) - pos < 8:
                raise ValueError("short hadoop frame")
            usize, csize = struct.unpack_from(">II", raw, pos)
            pos += 8
            if csize > len(raw) - pos or total + usize > expected:
                raise ValueError("bad hadoop frame")
            parts.append(block(raw[pos:pos + csize], usize))
            total += usize
            pos += csize
        if total != expected:
            raise ValueError("size mismatch")
        return _to_array(b"".join(parts), expected, "LZ4")
    except Exception:
        pass
    try:
        return _to_array(block(raw, expected), expected, "LZ4")
    except Exception:
        pass
    try:
        out = bytes(cramjam.lz4.decompress(raw))
    except Exception:
        raise FileFormatError("LZ4 page is neither Hadoop-framed, a raw block nor an LZ4 frame") from None
    return _to_array(out, expected, "LZ4")


def _brotli(data, expected: int) -> np.ndarray:
    try:
        out = bytes(cramjam.brotli.decompress(_as_bytes(data), output_len=expected))
    except Exception as e:
        raise FileFormatError(f"BROTLI page is corrupt: {e}") from None
    return _to_array(out, expected, "BROTLI")


_CODECS = {"SNAPPY": _snappy, "GZIP": _gzip, "ZSTD": _zstd, "LZ4_RAW": _lz4_raw,
           "LZ4": _lz4_hadoop, "BROTLI": _brotli}


def check_codec(codec: str) -> None:
    """Raise UnsupportedFeatureError when ``codec`` cannot be decompressed here."""
    if codec == "UNCOMPRESSED":
        return
    if codec not in _CODECS:
        raise UnsupportedFeatureError(f"compression codec {codec}")


def decompress(codec: str, data, uncompressed_size: int, out: np.ndarray | None = None) -> np.ndarray:
    """Decompress one page body; returns a writable uint8 array (``out``,
    when given, of exactly ``uncompressed_size`` bytes, receives the result)."""
    if out is not None and codec != "UNCOMPRESSED":
        if codec == "SNAPPY" and len(out) == uncompressed_size:
            try:
                src = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
                n = cramjam.snappy.decompress_raw_len(src)
                if n == uncompressed_size and cramjam.snappy.decompress_raw_into(src, out) == n:
                    return out
            except Exception as e:
                raise FileFormatError(f"SNAPPY decompression failed: {type(e).__name__}: {e}") from None
            raise FileFormatError(f"SNAPPY page decompresses to {n} bytes, header says {uncompressed_size}")
        out[:] = decompress(codec, data, uncompressed_size)
        return out
    if codec == "UNCOMPRESSED":
        if len(data) != uncompressed_size:
            raise FileFormatError(f"uncompressed page has {len(data)} bytes, header says {uncompressed_size}")
        return data if isinstance(data, np.ndarray) else np.frombuffer(bytearray(data), dtype=np.uint8)
    fn = _CODECS.get(codec)
    if fn is None:
        raise UnsupportedFeatureError(f"compression codec {codec}")
    if uncompressed_size < 0:
        raise FileFormatError(f"negative uncompressed page size {uncompressed_size}")
    if uncompressed_size == 0 and len(data) == 0:
        return np.empty(0, dtype=np.uint8)
    try:
        return fn(data, uncompressed_size)
    except (FileFormatError, UnsupportedFeatureError):
        raise
    except Exception as e:   # codec libraries raise assorted types on corrupt input
        raise FileFormatError(f"{codec} decompression failed: {type(e).__name__}: {e}") from None


# ---- compression (the writer) ---------------------------------------------------

WRITE_CODECS = ("UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD")


def compress(codec: str, data, level: int | None = None) -> bytes:
    """One page body compressed with ``codec`` (one of WRITE_CODECS);
    ``level``: the codec's level (ZSTD, GZIP), None for its default."""
    if codec == "UNCOMPRESSED":
        return data if isinstance(data, bytes) else bytes(data)
    if codec == "SNAPPY":
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == "ZSTD":
        import zstandard
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    if codec == "GZIP":
        c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    raise UnsupportedFeatureError(f"writing compression codec {codec}")
