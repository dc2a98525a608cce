"""Fuzz the reader with mutated corpus files: bit flips, byte smashes,
truncation, corrupted page headers and lengths, corrupted footers.

Each case must either read or fail with an error from pqdb's hierarchy
(PqdbError): never another exception, a crash or a hang.  For files whose
every page carries a CRC32, mutations inside page bodies must never yield
different values silently.  Fixed seed; FUZZ_CASES cases per run."""

from __future__ import annotations

import os
import time
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import thrift as T
from scan.errors import PqdbError
from scan.io.buffer_manager import BufferManager
from scan.io.source import ByteSource
from scan.reader import ParquetFile

DATA = "/work/shared/parquet-testing/data"
FUZZ_CASES = int(os.environ.get("PQDB_FUZZ_CASES", "1500"))
SEED = 20240601
CASE_TIME_LIMIT = 10.0           # seconds; a slower case counts as a hang

SEEDS = ["alltypes_plain.parquet", "alltypes_dictionary.parquet", "alltypes_plain.snappy.parquet",
         "datapage_v2.snappy.parquet", "delta_binary_packed.parquet",
         "delta_length_byte_array.parquet", "delta_byte_array.parquet",
         "byte_stream_split.zstd.parquet", "nested_lists.snappy.parquet",
         "nested_maps.snappy.parquet", "nullable.impala.parquet", "list_columns.parquet",
         "repeated_no_annotation.parquet", "old_list_structure.parquet",
         "data_index_bloom_encoding_stats.parquet", "rle_boolean_encoding.parquet",
         "lz4_raw_compressed.parquet", "fixed_length_decimal.parquet",
         "int32_with_null_pages.parquet", "nulls.snappy.parquet",
         "plain-dict-uncompressed-checksum.parquet", "rle-dict-snappy-checksum.parquet",
         "datapage_v1-snappy-compressed-checksum.parquet", "float16_nonzeros_and_nans.parquet"]


class MemorySource(ByteSource):
    def __init__(self, data: bytes, name: str):
        self.data, self.path = data, name

    def size(self) -> int:
        return len(self.data)

    def read(self, offset: int, length: int):
        self._check_range(offset, length)
        return self.data[offset:offset + length]

    def identity(self) -> str:
        return self.path


def read_everything(data: bytes, name: str, verify: bool = True):
    """Every column of every row group (flat and nested), the page index and
    bloom filters.  Returns the values; raises PqdbError on bad input."""
    from scan.nested import top_level_fields
    pf = ParquetFile(MemorySource(data, name), BufferManager(64 << 20), verify_checksums=verify)
    out = []
    fields = top_level_fields(pf)
    for rg in range(len(pf.row_groups)):
        for field in fields:
            try:
                out.append(pf.read_nested(rg, field).to_pylist())
            except PqdbError as e:
                out.append(("error", type(e).__name__))
        for col in range(len(pf.columns)):
            for fn in (pf.column_index, pf.offset_index, pf.bloom_filter):
                try:
                    fn(rg, col)
                except PqdbError:
                    pass
    return out


def _page_bodies(data: bytes, name: str) -> list:
    """(start, end) of every page body in the file, and whether each page
    has a CRC."""
    pf = ParquetFile(MemorySource(data, name), BufferManager(64 << 20))
    spans = []
    for rg in pf.row_groups:
        for ch in rg.columns:
            pos, end = ch.start, ch.start + ch.length
            seen = 0
            while pos < end and seen < ch.num_values:
                h, body = T.decode_struct(data, T.PAGE_HEADER, pos, end)
                size = h["compressed_page_size"]
                spans.append((body, body + size, h.get("crc") is not None))
                if h.get("data_page_header"):
                    seen += h["data_page_header"]["num_values"]
                if h.get("data_page_header_v2"):
                    seen += h["data_page_header_v2"]["num_values"]
                pos = body + size
    return spans


def _header_spans(data: bytes, name: str) -> list:
    spans = []
    for body_start, _, _ in _page_bodies(data, name):
        spans.append((max(4, body_start - 24), body_start))
    return spans


def _mutate(rng, data: bytes, headers: list) -> tuple[bytes, str]:
    b = bytearray(data)
    kind = rng.choice(["bitflip", "smash", "truncate", "header", "length", "footer", "zero"])
    n = len(b)
    if kind == "bitflip":
        for _ in range(int(rng.integers(1, 9))):
            i = int(rng.integers(0, n))
            b[i] ^= 1 << int(rng.integers(0, 8))
    elif kind == "smash":
        i = int(rng.integers(0, n))
        for k in range(int(rng.integers(1, 16))):
            if i + k < n:
                b[i + k] = int(rng.integers(0, 256))
    elif kind == "truncate":
        cut = int(rng.integers(0, n))
        b = b[:cut] + b[-8:] if rng.random() < 0.5 else b[:cut]
    elif kind in ("header", "length") and headers:
        lo, hi = headers[int(rng.integers(0, len(headers)))]
        i = int(rng.integers(lo, hi))
        if kind == "header":
            b[i] = int(rng.integers(0, 256))
        else:                    # a varint-looking run: big or negative sizes
            for k, v in enumerate((0xFF, 0xFF, 0xFF, 0x7F)[:int(rng.integers(1, 5))]):
                if i + k < n:
                    b[i + k] = v
    elif kind == "footer":
        flen = int.from_bytes(data[-8:-4], "little")
        i = int(rng.integers(max(0, n - 8 - flen), n))
        b[i] = int(rng.integers(0, 256))
    else:
        i = int(rng.integers(0, n))
        b[i:i + int(rng.integers(1, 64))] = bytes(min(63, n - i))[:len(b[i:i + 64])]
    return bytes(b), kind


def _seed_files(tmp_dir) -> list:
    files = [(name, open(os.path.join(DATA, name), "rb").read()) for name in SEEDS]
    # a pyarrow file with page checksums, the page index, bloom filters and nesting
    rng = np.random.default_rng(5)
    t = pa.table({"i": pa.array(rng.integers(0, 50, 400), pa.int64()),
                  "s": pa.array([f"v{int(v)}" for v in rng.integers(0, 30, 400)]),
                  "l": pa.array([[int(v)] * int(v % 3) for v in rng.integers(0, 9, 400)],
                                pa.list_(pa.int32()))})
    path = os.path.join(tmp_dir, "crc.parquet")
    pq.write_table(t, path, write_page_checksum=True, write_page_index=True,
                   data_page_size=256, bloom_filter_options={"i": True, "s": True})
    files.append(("pyarrow-crc.parquet", open(path, "rb").read()))
    return files


def test_fuzz_mutated_corpus_files(tmp_path):
    rng = np.random.default_rng(SEED)
    seeds = _seed_files(str(tmp_path))
    originals, headers, crc_bodies = {}, {}, {}
    for name, data in seeds:
        originals[name] = read_everything(data, f"orig:{name}")
        headers[name] = _header_spans(data, name)
        bodies = _page_bodies(data, name)
        if bodies and all(has_crc for _, _, has_crc in bodies):
            crc_bodies[name] = [(s, e) for s, e, _ in bodies if e > s]
    assert len(crc_bodies) >= 3
    outcomes = {"read": 0, "refused": 0}
    start = time.monotonic()
    for case in range(FUZZ_CASES):
        name, data = seeds[case % len(seeds)]
        if name in crc_bodies and rng.random() < 0.5:
            s, e = crc_bodies[name][int(rng.integers(0, len(crc_bodies[name])))]
            b = bytearray(data)
            i = int(rng.integers(s, e))
            b[i] ^= 1 << int(rng.integers(0, 8))
            mutated, kind = bytes(b), "crc-body"
        else:
            mutated, kind = _mutate(rng, data, headers[name])
        t0 = time.monotonic()
        try:
            got = read_everything(mutated, f"case{case}:{name}")
        except PqdbError:
            outcomes["refused"] += 1
            got = None
        except Exception as e:                                       # noqa: BLE001
            pytest.fail(f"case {case} ({kind} of {name}): {type(e).__name__} outside the "
                        f"PqdbError hierarchy: {e}")
        took = time.monotonic() - t0
        assert took < CASE_TIME_LIMIT, f"case {case} ({kind} of {name}) took {took:.1f}s"
        if got is not None:
            outcomes["read"] += 1
            if kind == "crc-body":
                assert _same(got, originals[name]), \
                    f"case {case}: corrupted page body of {name} read silently"
    print(f"{FUZZ_CASES} cases in {time.monotonic() - start:.1f}s: {outcomes}")
    assert outcomes["refused"] > FUZZ_CASES // 10


def _same(got, want) -> bool:
    """Equality where every field that failed in the original fails alike,
    and fields that now fail (checksum errors) are acceptable."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if isinstance(g, tuple) and g and g[0] == "error":
            continue                                    # refused: fine
        if repr(g) != repr(w):
            return False
    return True


def test_crc_detects_every_single_bit_flip_in_a_page():
    data = open(os.path.join(DATA, "plain-dict-uncompressed-checksum.parquet"), "rb").read()
    bodies = _page_bodies(data, "x")
    s, e, has_crc = bodies[-1]
    assert has_crc
    crc = zlib.crc32(data[s:e])
    for i in range(s, min(e, s + 64)):
        b = bytearray(data[s:e])
        b[i - s] ^= 0x10
        assert zlib.crc32(bytes(b)) != crc
