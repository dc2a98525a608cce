"""Footer metadata: thrift decoding, schema and type names, statistics,
codecs, byte sources and the buffer manager."""

from __future__ import annotations

import datetime
import decimal
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import BufferManager, LocalFileSource, open_parquet
from scan import thrift as T
from scan.codecs import decompress
from scan.errors import FileFormatError, PqdbIOError, UnsupportedFeatureError
from tests.paths import CORPUS_DATA
from tests.scan.varint import uleb128, zigzag

DATA = CORPUS_DATA


# ---- thrift -------------------------------------------------------------------

def _zz(n):
    """A thrift compact i32/i64: zigzag, then varint."""
    return uleb128(zigzag(n))


def test_thrift_struct_with_unknown_fields_and_long_ids():
    spec = {1: ("a", T.I32, None), 2: ("s", T.BINARY, "str"), 20: ("flag", T.BOOL, None),
            21: ("items", T.LIST, (T.I64, None))}
    buf = bytearray()
    buf += bytes([0x15]) + _zz(-7)                       # field 1 i32
    buf += bytes([0x18]) + uleb128(3) + b"abc"           # field 2 binary
    buf += bytes([0x1C]) + bytes([0x15]) + _zz(5) + b"\x00"   # field 3: unknown struct, skipped
    buf += bytes([0x01]) + _zz(20)                       # field 20 bool true (long form id)
    buf += bytes([0x19]) + bytes([0x26]) + _zz(1) + _zz(-2)   # field 21 list<i64> of 2
    buf += b"\x00"
    out, pos = T.decode_struct(bytes(buf), spec)
    assert out == {"a": -7, "s": "abc", "flag": True, "items": [1, -2]}
    assert pos == len(buf)


@pytest.mark.parametrize("data", [b"", b"\x15", b"\x18\x05ab", b"\x19\xf6\xff\xff\xff\x0f",
                                  b"\x15\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                                  b"\x1c" * 200, b"\x1d"])
def test_thrift_malformed_input_is_a_format_error(data):
    with pytest.raises(FileFormatError):
        T.decode_struct(data, T.FILE_META_DATA)


_INNER = {1: ("n", T.I64, None), 2: ("b", T.BINARY, None), 3: ("flag", T.BOOL, None)}
_SPEC = {1: ("i16", T.I16, None), 2: ("i32", T.I32, None), 3: ("i64", T.I64, None),
         4: ("s", T.BINARY, "str"), 5: ("raw", T.BINARY, None),
         6: ("flag", T.BOOL, None), 7: ("d", T.DOUBLE, None), 8: ("inner", T.STRUCT, _INNER),
         9: ("items", T.LIST, (T.STRUCT, _INNER)), 10: ("ints", T.LIST, (T.I32, None)),
         11: ("names", T.LIST, (T.BINARY, "str")), 12: ("bools", T.LIST, (T.BOOL, None)),
         13: ("blobs", T.LIST, (T.BINARY, None)),
         40: ("far", T.I64, None), 41: ("far_inner", T.STRUCT, _INNER)}


def _thrift_values():
    from hypothesis import strategies as st
    i64 = st.integers(-2**63, 2**63 - 1)
    inner = st.fixed_dictionaries({}, optional={
        "n": i64, "b": st.binary(max_size=40), "flag": st.booleans()})
    return st.fixed_dictionaries({}, optional={
        "i16": st.integers(-2**15, 2**15 - 1), "i32": st.integers(-2**31, 2**31 - 1),
        "i64": i64, "s": st.text(max_size=30), "raw": st.binary(max_size=300),
        "flag": st.booleans(), "d": st.floats(allow_nan=False), "inner": inner,
        "items": st.lists(inner, max_size=20), "ints": st.lists(st.integers(-2**31, 2**31 - 1),
                                                                max_size=40),
        "names": st.lists(st.text(max_size=8), max_size=20),
        "bools": st.lists(st.booleans(), max_size=20), "far": i64, "far_inner": inner,
        "blobs": st.lists(st.binary(max_size=20), max_size=10)})


def test_thrift_round_trips_and_every_cut_is_a_format_error():
    """decode_struct(encode_struct(v)) == v for every field type the specs
    use (the decoder reads integer, binary and struct fields inline), and a
    buffer cut anywhere is a FileFormatError, never another exception."""
    from hypothesis import given, settings

    @settings(max_examples=300, deadline=None)
    @given(_thrift_values())
    def check(value):
        buf = T.encode_struct(value, _SPEC)
        assert T.decode_struct(buf, _SPEC) == (value, len(buf))
        for cut in range(len(buf)):
            with pytest.raises(FileFormatError):
                T.decode_struct(buf[:cut], _SPEC)

    check()


# ---- footer, schema, types ------------------------------------------------------

def _write(tmp_path, table, name="t.parquet", **kw):
    path = str(tmp_path / name)
    pq.write_table(table, path, **kw)
    return path


def test_type_names_from_logical_types(tmp_path):
    table = pa.table({
        "b": pa.array([True, None]), "i8": pa.array([1, -2], pa.int8()),
        "u16": pa.array([1, 65535], pa.uint16()), "u32": pa.array([1, 2**32 - 1], pa.uint32()),
        "u64": pa.array([1, 2**64 - 1], pa.uint64()), "f": pa.array([1.5, None], pa.float32()),
        "d": pa.array([datetime.date(2020, 1, 2), None]),
        "t_ms": pa.array([1000, 2], pa.time32("ms")), "t_ns": pa.array([1000, 2000], pa.time64("ns")),
        "ts": pa.array([1, 2], pa.timestamp("ms")), "tstz": pa.array([1, 2], pa.timestamp("us", "UTC")),
        "tsns": pa.array([1, 2], pa.timestamp("ns")),
        "dec": pa.array([decimal.Decimal("1.23"), None], pa.decimal128(5, 2)),
        "wide": pa.array([decimal.Decimal("12345678901234567890.5"), None], pa.decimal128(30, 1)),
        "s": pa.array(["x", None]), "blob": pa.array([b"\x00", b"y"]),
        "fixed": pa.array([b"ab", b"cd"], pa.binary(2)),
    })
    path = _write(tmp_path, table)
    pf = open_parquet(path)
    names = {c.name: c.type_name for c in pf.columns}
    assert names == {
        "b": "boolean", "i8": "int8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
        "f": "float32", "d": "date", "t_ms": "time_us", "t_ns": "time_ns",
        "ts": "timestamp_us", "tstz": "timestamptz_us", "tsns": "timestamp_ns",
        "dec": "decimal(5,2)", "wide": "decimal(30,1)", "s": "string", "blob": "blob",
        "fixed": "blob"}
    got = {c.name: pf.read_column(0, c.index).to_pylist() for c in pf.columns}
    assert got["i8"] == [1, -2] and got["u64"] == [1, 2**64 - 1] and got["u32"] == [1, 2**32 - 1]
    assert got["t_ms"] == [1_000_000, 2000] and got["t_ns"] == [1000, 2000]
    assert got["ts"] == [1000, 2000] and got["tsns"] == [1, 2]
    assert got["dec"] == [123, None] and got["wide"] == [123456789012345678905, None]
    assert got["s"] == [b"x", None] and got["fixed"] == [b"ab", b"cd"]
    assert pf.columns[pf.column_index("b")].nullable
    cd = pf.read_column(0, pf.column_index("dec"))
    assert cd.values.dtype == np.int64 and cd.nulls.tolist() == [0, 1]
    assert pf.read_column(0, pf.column_index("wide")).values.dtype == object
    assert pf.read_column(0, pf.column_index("d")).values.dtype == np.int32


def test_statistics_in_storage_form(tmp_path):
    table = pa.table({
        "i": pa.array([5, -3, None, 9], pa.int32()), "u": pa.array([1, 2**32 - 1, 3, 4], pa.uint32()),
        "f": pa.array([0.0, 2.5, float("nan"), 1.0]), "s": pa.array(["b", "a", "zz", None]),
        "dec": pa.array([decimal.Decimal("-1.50"), decimal.Decimal("2.25"), None, None],
                        pa.decimal128(20, 2)),
        "ts": pa.array([1, 5, 3, None], pa.timestamp("ms")),
    })
    pf = open_parquet(_write(tmp_path, table))
    chunks = {c.name: pf.row_groups[0].columns[c.index] for c in pf.columns}
    assert (chunks["i"].stats_min, chunks["i"].stats_max, chunks["i"].null_count) == (-3, 9, 1)
    assert (chunks["u"].stats_min, chunks["u"].stats_max) == (1, 2**32 - 1)
    assert chunks["f"].stats_min == -0.0 and chunks["f"].stats_max == 2.5
    assert (chunks["s"].stats_min, chunks["s"].stats_max) == (b"a", b"zz")
    assert (chunks["dec"].stats_min, chunks["dec"].stats_max) == (-150, 225)
    assert (chunks["ts"].stats_min, chunks["ts"].stats_max) == (1000, 5000)
    assert chunks["s"].codec == "SNAPPY" and "RLE_DICTIONARY" in chunks["s"].encodings


def test_row_groups_and_column_lookup(tmp_path):
    table = pa.table({"a": pa.array(range(1000), pa.int64())})
    pf = open_parquet(_write(tmp_path, table, row_group_size=300))
    assert [rg.num_rows for rg in pf.row_groups] == [300, 300, 300, 100]
    assert pf.num_rows == 1000 and pf.column_index("a") == 0
    with pytest.raises(ValueError):
        pf.column_index("nope")
    assert [pf.read_column(i, 0).values[0] for i in range(4)] == [0, 300, 600, 900]


def test_empty_table(tmp_path):
    pf = open_parquet(_write(tmp_path, pa.table({"a": pa.array([], pa.string())})))
    assert pf.num_rows == 0
    for rg in range(len(pf.row_groups)):
        assert pf.read_column(rg, 0).num_rows == 0


def test_not_parquet_and_missing_files(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_bytes(b"hello world, definitely not parquet")
    with pytest.raises(FileFormatError, match="magic"):
        open_parquet(str(p))
    p.write_bytes(b"PAR1")
    with pytest.raises(FileFormatError, match="too small"):
        open_parquet(str(p))
    with pytest.raises(PqdbIOError):
        open_parquet(str(tmp_path / "missing.parquet"))


def test_nested_schema_lists_flat_columns(tmp_path):
    table = pa.table({"id": [1, 2], "l": [[1, 2], None], "st": [{"x": 1}, {"x": 2}]})
    pf = open_parquet(_write(tmp_path, table))
    assert [c.name for c in pf.columns] == ["id", "l.list.element", "st.x"]
    assert pf.read_column(0, 0).to_pylist() == [1, 2]
    for i in (1, 2):
        with pytest.raises(UnsupportedFeatureError, match="nested column"):
            pf.read_column(0, i)


# ---- codecs, checksums --------------------------------------------------------------

def test_codecs_roundtrip():
    import gzip
    import zlib

    import snappy
    import zstandard
    raw = (b"parquet pages " * 500)
    arr = np.frombuffer(raw, np.uint8)
    assert bytes(decompress("SNAPPY", np.frombuffer(snappy.compress(raw), np.uint8), len(raw))) == raw
    two = gzip.compress(raw[:100]) + gzip.compress(raw[100:])
    assert bytes(decompress("GZIP", two, len(raw))) == raw
    assert bytes(decompress("GZIP", zlib.compress(raw), len(raw))) == raw
    assert bytes(decompress("ZSTD", zstandard.ZstdCompressor().compress(raw), len(raw))) == raw
    assert decompress("UNCOMPRESSED", arr, len(raw)) is arr
    with pytest.raises(FileFormatError):
        decompress("SNAPPY", snappy.compress(raw), len(raw) + 1)
    with pytest.raises(FileFormatError):
        decompress("GZIP", b"garbage!", 10)
    with pytest.raises(UnsupportedFeatureError, match="LZO"):
        decompress("LZO", b"x", 1)


@pytest.mark.parametrize("codec", ["NONE", "SNAPPY", "GZIP", "ZSTD", "LZ4", "BROTLI"])
def test_files_written_with_each_codec(tmp_path, codec):
    from tests.scan.oracle import compare_file
    table = pa.table({"s": pa.array([f"value {i % 37}" * (i % 3) for i in range(3000)]),
                      "i": pa.array(range(3000), pa.int64())})
    path = _write(tmp_path, table, compression=codec, data_page_size=2048)
    assert compare_file(path) == ["i", "s"]


def test_page_checksums_verified(tmp_path):
    table = pa.table({"i": pa.array(range(2000), pa.int32())})
    path = _write(tmp_path, table, write_page_checksum=True, compression="NONE",
                  use_dictionary=False)
    assert open_parquet(path).read_column(0, 0).values.tolist() == list(range(2000))
    data = bytearray(open(path, "rb").read())
    data[200] ^= 0xFF                              # inside the first data page's values
    open(path, "wb").write(bytes(data))
    with pytest.raises(FileFormatError, match="checksum"):
        open_parquet(path, buffer_manager=BufferManager()).read_column(0, 0)
    cd = open_parquet(path, buffer_manager=BufferManager(), verify_checksums=False).read_column(0, 0)
    assert cd.values.tolist() != list(range(2000))


# ---- byte sources and the buffer manager -----------------------------------------

def test_local_source_reads_and_identity(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(range(256)))
    src = LocalFileSource(str(p))
    assert src.size() == 256 and bytes(src.read(10, 5)) == bytes(range(10, 15))
    with pytest.raises(PqdbIOError):
        src.read(250, 10)
    ident = src.identity()
    p.write_bytes(bytes(range(255)))
    assert LocalFileSource(str(p)).identity() != ident


class _SlowSource(LocalFileSource):
    def __init__(self, path):
        super().__init__(path)
        self.calls = 0
        self.gate = threading.Event()

    def read_into(self, offset, out):
        self.calls += 1
        self.gate.wait(5)
        super().read_into(offset, out)


def test_a_scan_larger_than_the_cache_keeps_what_fit(tmp_path):
    """Once queries are marked (begin_query), a page read while the cache is
    full of pages the running query used stays uncached: a cyclic scan of
    four pages through a three-page cache hits three of them from the second
    run on (plain LRU evicted each page before it came round again).  A new
    query evicts the previous one's pages as LRU does."""
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(8192))
    src = LocalFileSource(str(p))
    bm = BufferManager(3000)
    for _ in range(2):                             # plain LRU: no query marked
        for off in range(0, 4000, 1000):
            bm.get(src, off, 1000)
    assert bm.hits == 0
    bm = BufferManager(3000)
    for run in range(3):
        bm.begin_query()
        hits = bm.hits
        for off in range(0, 4000, 1000):
            bm.get(src, off, 1000)
        assert bm.hits - hits == (0 if run == 0 else 3), run
        assert bm.bytes_cached <= 3000
    bm.begin_query()                               # another query's pages replace them
    for off in range(4000, 7000, 1000):
        bm.get(src, off, 1000)
    reads = bm.reads
    bm.get(src, 4000, 1000)
    assert bm.reads == reads and not bm.holds(src, 0, 1000)


def test_pages_a_query_will_read_are_not_evicted_for_its_earlier_misses(tmp_path):
    """A run that starts with a miss evicted, under LRU, the page it was
    about to hit, and so on down the cache: 0 hits.  Pages the query said
    it will read (``want``) stay, the miss is not cached: every cached
    page is hit.  Pages no query wants are evicted as before."""
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(8192))
    src = LocalFileSource(str(p))

    def run(bm, order, wanted):
        bm.begin_query()
        if wanted:
            bm.want(bm.keys_of(src, [(off, 1000) for off in order]))
        hits = bm.hits
        for off in order:
            bm.get(src, off, 1000)
        return bm.hits - hits
    for wanted, second in ((False, 0), (True, 3)):
        bm = BufferManager(3000)
        assert run(bm, [0, 1000, 2000, 3000, 4000], wanted) == 0     # caches 0, 1000, 2000
        assert run(bm, [3000, 0, 1000, 2000, 4000], wanted) == second, wanted
    bm.begin_query()                               # nothing wanted: LRU evicts
    bm.get(src, 5000, 1000)
    assert bm.holds(src, 5000, 1000) and bm.bytes_cached <= 3000
    # a wanted page at the LRU end is passed over: the next unwanted one goes
    bm = BufferManager(3000)
    bm.begin_query()
    for off in (0, 1000, 2000):
        bm.get(src, off, 1000)
    bm.begin_query()
    bm.want(bm.keys_of(src, [(0, 1000), (3000, 1000)]))
    bm.get(src, 3000, 1000)
    assert bm.holds(src, 3000, 1000) and bm.holds(src, 0, 1000)
    assert not bm.holds(src, 1000, 1000) and bm.holds(src, 2000, 1000)
    hits = bm.hits
    bm.get(src, 0, 1000)
    assert bm.hits == hits + 1
    bm.get(src, 4000, 1000)                        # evicts 2000, the last unprotected page
    assert bm.holds(src, 4000, 1000) and not bm.holds(src, 2000, 1000)
    bm.get(src, 5000, 1000)                        # only protected pages left: not cached
    assert not bm.holds(src, 5000, 1000) and bm.bytes_cached == 3000


def test_buffer_manager_single_flight_and_eviction(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(4096))
    src = _SlowSource(str(p))
    bm = BufferManager(3000)
    results = []
    threads = [threading.Thread(target=lambda: results.append(bm.get(src, 0, 1000)))
               for _ in range(4)]
    for t in threads:
        t.start()
    src.gate.set()
    for t in threads:
        t.join()
    assert src.calls == 1 and len(results) == 4
    assert all(r is results[0] for r in results)
    bm.get(src, 1000, 1000)
    bm.get(src, 2000, 1000)
    bm.get(src, 3000, 1000)                        # evicts the least recently used
    assert bm.bytes_cached <= 3000
    calls = src.calls
    bm.get(src, 0, 1000)
    assert src.calls == calls + 1


def test_waiters_of_a_failed_read_get_its_error(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(4096))

    class Failing(_SlowSource):
        def read_into(self, offset, out):
            self.calls += 1
            self.gate.wait(5)
            raise OSError("disk gone")
    src = Failing(str(p))
    bm = BufferManager(1 << 20)
    errors = []

    def read():
        try:
            bm.get(src, 0, 1000)
        except OSError as e:
            errors.append(e)
    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    while not bm.holds(src, 0, 1000):    # the first read is in flight
        time.sleep(0.001)
    time.sleep(0.05)                     # the others wait for it
    src.gate.set()
    for t in threads:
        t.join(10)
    assert src.calls == 1 and len(errors) == 4 and all(e is errors[0] for e in errors)
    assert not bm.holds(src, 0, 1000)
    src.gate.clear()
    threading.Timer(0.05, src.gate.set).start()
    with pytest.raises(OSError):         # a new read tries again
        bm.get(src, 0, 1000)
    assert src.calls == 2


class _PrefetchingSource(LocalFileSource):
    """A local file posing as a remote one: fetch_ranges answers at once."""
    remote = True

    def __init__(self, path):
        super().__init__(path)
        self.fetched = []

    def fetch_ranges(self, ranges, done, max_waste=None):
        for i, (off, n) in enumerate(ranges):
            self.fetched.append(off)
            out = np.empty(n, np.uint8)
            self.read_into(off, out)
            done(i, out, None)


def test_read_ahead_evicts_pages_read_then_those_needed_last(tmp_path):
    """Five 1000-byte pages, room for three, a query reading them in order
    (all wanted).  Run 1 keeps the last three; run 2 must fetch pages 0 and
    1 ahead: the first goes where page 4 was (needed furthest ahead), the
    second where page 0 was once read -- never where 2 and 3 wait."""
    p = tmp_path / "f.bin"
    p.write_bytes(os.urandom(5000))
    src = _PrefetchingSource(str(p))
    bm = BufferManager(3000)
    keys = bm.keys_of(src, [(i * 1000, 1000) for i in range(5)])

    def run():
        bm.begin_query()
        bm.want(keys)
        src.fetched.clear()
        for i in range(5):
            bm.prefetch(src, [(i * 1000, 1000)])
            assert bytes(bm.get(src, i * 1000, 1000)) == p.read_bytes()[i * 1000:(i + 1) * 1000]
        return list(src.fetched)
    assert run() == [0, 1000, 2000, 3000, 4000]
    assert [bm.holds(src, i * 1000, 1000) for i in range(5)] == [False, False, True, True, True]
    assert run() == [0, 1000, 4000]           # (all five before: LRU dropped 2, then 3, ...)
    assert bm.bytes_cached <= 3000
