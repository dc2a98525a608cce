"""The whole-chunk decoder for required flat columns (scan/required_chunk.py)
and its numba Snappy kernel (scan/snappy_kernel.py), against pyarrow, the
general page-by-page path and cramjam."""

import cramjam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scan import open_parquet
from scan.column import decode_chunk
from scan.encodings.dictionary import gather
from scan.errors import FileFormatError
from scan.required_chunk import decode_required_chunk
from scan.snappy_kernel import snappy_decompress
from scan.views import views_to_pylist


def _required_table(n: int, distinct: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, distinct, n)
    codes[n // 3:n // 3 + 2000] = codes[n // 3]              # a long RLE run
    schema = pa.schema([pa.field("i64", pa.int64(), nullable=False),
                        pa.field("i32", pa.int32(), nullable=False),
                        pa.field("f64", pa.float64(), nullable=False),
                        pa.field("f32", pa.float32(), nullable=False),
                        pa.field("d", pa.date32(), nullable=False),
                        pa.field("s", pa.string(), nullable=False)])
    return pa.table({
        "i64": pa.array(codes * 7919 - 5, pa.int64()),
        "i32": pa.array((codes * 3 - 1).astype(np.int32), pa.int32()),
        "f64": pa.array(codes / 8.0, pa.float64()),
        "f32": pa.array((codes / 4.0).astype(np.float32), pa.float32()),
        "d": pa.array((codes % 3000).astype(np.int32), pa.int32()).cast(pa.date32()),
        "s": pa.array([f"v{c}" if c % 3 else f"a longer string value {c}" for c in codes]),
    }, schema=schema)


def _chunk(pf, rg, c):
    ch = pf.row_groups[rg].columns[c]
    return pf.buffer_manager.get(pf.source, ch.start, ch.length), pf.columns[c], ch


def _values(cv):
    """The chunk's values; with codes they come as None (the reader gathers
    the views when first read), so they are gathered here."""
    if cv.values is None:
        assert cv.codes is not None and cv.dictionary is not None
        return gather(cv.dictionary, cv.codes)
    return cv.values


def _as_list(cv):
    values = _values(cv)
    if values.ndim == 2:
        return views_to_pylist(values, cv.heap)
    return values.tolist()


def _check_file(path, expect_fast=True):
    """Every column and row group through the whole-chunk path equals the
    general path and pyarrow, with and without a row selection and codes."""
    pf = open_parquet(path)
    want_table = pq.read_table(path)
    rng = np.random.default_rng(3)
    fast = 0
    for c, col in enumerate(pf.columns):
        start = 0
        want_all = want_table.column(col.name).to_pylist()
        for rg in range(len(pf.row_groups)):
            buf, col, ch = _chunk(pf, rg, c)
            n = pf.row_groups[rg].num_rows
            want = want_all[start:start + n]
            start += n
            sparse = np.zeros(n, bool)          # most pages without a selected row
            sparse[rng.integers(0, n, 3)] = True
            for rows in (None, rng.random(n) < 0.3, np.zeros(n, bool), sparse):
                for codes in (False, True):
                    got = decode_required_chunk(buf, col, ch, n, True, rows, codes)
                    if got is None:
                        assert not expect_fast, (col.name, rg)
                        continue
                    fast += 1
                    ref = decode_chunk(buf, col, ch, n, True, rows, codes)
                    assert _values(got).dtype == _values(ref).dtype
                    assert (got.values is None) == (got.codes is not None)
                    assert _as_list(got) == _as_list(ref), (col.name, rg)
                    kept = want if rows is None else [w for w, r in zip(want, rows) if r]
                    if col.type_name == "string":
                        assert [v.decode() for v in _as_list(got)] == kept
                        assert (got.codes is None) == (ref.codes is None)
                        if got.codes is not None:
                            assert np.array_equal(got.codes, ref.codes)
                            assert np.array_equal(got.dictionary[got.codes], _values(got))
                    elif col.type_name == "date":
                        assert _values(got).tolist() == [(w - w.__class__(1970, 1, 1)).days
                                                       for w in kept]
                    else:
                        assert _values(got).tolist() == kept, (col.name, rg)
    return fast


@pytest.mark.parametrize("codec", ["snappy", "none"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("distinct", [1, 2, 300, 70000])
def test_dictionary_pages(tmp_path, codec, version, distinct):
    path = str(tmp_path / "t.parquet")
    pq.write_table(_required_table(50_000, distinct, distinct), path, compression=codec,
                   data_page_version=version, data_page_size=4096, row_group_size=30_000,
                   write_page_checksum=True)
    assert _check_file(path) > 0


@pytest.mark.parametrize("codec", ["snappy", "none"])
def test_plain_pages(tmp_path, codec):
    """PLAIN numbers (4 and 8 bytes) with and without a selection; PLAIN
    strings are left to the general path."""
    path = str(tmp_path / "t.parquet")
    table = _required_table(20_000, 20_000, 5)
    pq.write_table(table.drop_columns(["s"]), path, compression=codec, use_dictionary=False,
                   data_page_size=2048, row_group_size=7_000)
    assert _check_file(path) > 0
    pq.write_table(table.select(["s"]), path, compression=codec, use_dictionary=False)
    assert _check_file(path, expect_fast=False) == 0


def test_dictionary_fallback_to_plain(tmp_path):
    """A dictionary that overflows mid-chunk: dictionary then PLAIN pages."""
    path = str(tmp_path / "t.parquet")
    table = _required_table(60_000, 60_000, 9).drop_columns(["s"])
    pq.write_table(table, path, dictionary_pagesize_limit=4096, data_page_size=4096)
    pf = open_parquet(path)
    assert "PLAIN" in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
    assert _check_file(path) > 0


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["zstd", "gzip", "lz4"])
def test_other_codecs(tmp_path, codec, version):
    """Codecs other than SNAPPY: the codec library decompresses, one kernel decodes."""
    path = str(tmp_path / "t.parquet")
    pq.write_table(_required_table(20_000, 50), path, compression=codec, data_page_size=4096,
                   data_page_version=version)
    assert _check_file(path) > 0


def test_other_codecs_decompress_only_pages_with_selected_rows(tmp_path, monkeypatch):
    """A sparse selection decompresses the pages holding selected rows only
    (and gives pyarrow's values for them)."""
    import scan.required_chunk as rc
    path = str(tmp_path / "t.parquet")
    table = _required_table(20_000, 20_000, 4).select(["i64"])
    pq.write_table(table, path, compression="zstd", use_dictionary=False, data_page_size=4096)
    pf = open_parquet(path)
    buf, col, ch = _chunk(pf, 0, 0)
    calls = []
    original = rc.decompress

    def counting(codec, data, usize, out=None):
        calls.append(usize)
        return original(codec, data, usize, out)
    monkeypatch.setattr(rc, "decompress", counting)
    n = pf.row_groups[0].num_rows
    assert decode_required_chunk(buf, col, ch, n, True, None, False) is not None
    pages = len(calls)
    assert pages > 10
    rows = np.zeros(n, bool)
    rows[[5, n // 2, n - 1]] = True
    calls.clear()
    got = decode_required_chunk(buf, col, ch, n, True, rows, False)
    assert got.values.tolist() == [table.column(0)[i].as_py() for i in (5, n // 2, n - 1)]
    assert len(calls) == 3


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_nullable_v1_pages_take_the_kernel_v2_the_general_path(tmp_path, version):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"x": pa.array([1, None, 3], pa.int64())}), path,
                   data_page_version=version)
    pf = open_parquet(path)
    buf, col, ch = _chunk(pf, 0, 0)
    got = decode_required_chunk(buf, col, ch, 3, True, None, False)
    if version == "2.0":
        assert got is None
        return
    assert got.nulls.tolist() == [0, 1, 0] and got.values.tolist() == [1, 0, 3]
    sel = decode_required_chunk(buf, col, ch, 3, True, np.array([False, True, True]), False)
    assert sel.nulls.tolist() == [1, 0] and sel.values.tolist() == [0, 3]


def _corrupt_page(tmp_path, checksum: bool):
    path = str(tmp_path / "t.parquet")
    pq.write_table(_required_table(50_000, 70000).select(["i64"]), path,
                   data_page_size=4096, write_page_checksum=checksum, use_dictionary=False)
    pf = open_parquet(path)
    ch = pf.row_groups[0].columns[0]
    raw = bytearray(open(path, "rb").read())
    for k in range(40):                                   # a data page's body
        raw[ch.start + ch.length // 2 + k] ^= 0x5A
    open(path, "wb").write(bytes(raw))
    return path


@pytest.mark.parametrize("checksum", [True, False])
def test_corrupt_page_is_the_general_paths_error(tmp_path, checksum):
    path = _corrupt_page(tmp_path, checksum)
    pf = open_parquet(path)
    buf, col, ch = _chunk(pf, 0, 0)
    assert decode_required_chunk(buf, col, ch, pf.row_groups[0].num_rows, True, None,
                                 False) is None
    with pytest.raises(FileFormatError) as err:
        pf.read_column(0, 0)
    with pytest.raises(FileFormatError) as ref:
        decode_chunk(buf, col, ch, pf.row_groups[0].num_rows, True)
    head, page = str(ref.value).rsplit(" (", 1)           # "... (page N)"
    assert page.startswith("page ") and int(page[5:-1]) > 0   # a data page, not the first
    assert str(err.value).startswith(head) and str(err.value).endswith(page)


# -- the Snappy kernel ------------------------------------------------------

def _payloads():
    words = st.sampled_from([b"a", b"ab", b"abc", b"abcdefgh", b"0123456789abcdef", b"\x00" * 9])
    pattern = st.lists(words, max_size=200).map(b"".join)
    return st.one_of(st.binary(max_size=3000), pattern,
                     st.tuples(st.binary(max_size=100), pattern, st.integers(1, 50))
                     .map(lambda t: (t[0] + t[1]) * t[2]))


def _decompress(stream: bytes, size: int):
    src = np.frombuffer(stream, np.uint8)
    out = np.full(size + 16, 0xEE, np.uint8)
    n = snappy_decompress(src, 0, len(src), out, 8, size)
    assert (out[:8] == 0xEE).all() and (out[8 + size:] == 0xEE).all()   # never outside
    return n, bytes(out[8:8 + size])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_payloads())
def test_snappy_kernel_matches_cramjam(data):
    stream = bytes(cramjam.snappy.compress_raw(data))
    n, got = _decompress(stream, len(data))
    assert n == len(data) and got == data
    n, _ = _decompress(stream, len(data) + 1)            # wrong expected size
    assert n == -1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_payloads(), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                             min_size=1, max_size=4), st.integers(0, 20))
def test_snappy_kernel_on_corrupt_streams(data, flips, cut):
    """Corrupt or truncated input: -1 or the bytes cramjam also produces,
    never a write outside the output range."""
    stream = bytearray(cramjam.snappy.compress_raw(data))
    for pos, value in flips:
        stream[pos % len(stream)] = value
    stream = bytes(stream[:max(1, len(stream) - cut)])
    n, got = _decompress(stream, len(data))
    if n == -1:
        return
    assert n == len(data)
    assert got == bytes(cramjam.snappy.decompress_raw(stream))


# -- row ranges: pages wholly inside a morsel's range ------------------------

@pytest.mark.parametrize("page_index", [True, False])
@pytest.mark.parametrize("codec", ["snappy", "none", "zstd"])
def test_row_ranges_whole_pages(tmp_path, monkeypatch, page_index, codec):
    """Ranges over a chunk of many pages: pages inside the range go through
    the kernel (counted), boundary pages through the shared page path; the
    rows equal the whole-chunk read, with and without a selection."""
    import scan.required_chunk as rc        # row_ranges imports it when it reads
    import scan.row_ranges as rr
    calls = []
    real = rc.decode_whole_pages

    def counted(*args, **kw):
        got = real(*args, **kw)
        calls.append(got is not None)
        return got
    monkeypatch.setattr(rc, "decode_whole_pages", counted)
    path = str(tmp_path / "t.parquet")
    pq.write_table(_required_table(40_000, 5000, 11), path, compression=codec,
                   data_page_size=2048, write_page_index=page_index)
    pf = open_parquet(path)
    rng = np.random.default_rng(4)
    n = pf.row_groups[0].num_rows
    for c in range(len(pf.columns)):
        whole = _as_list(pf.read_column(0, c))
        for start, count in ((0, n), (0, n // 2), (n // 3, n // 3), (n - 777, 777), (5, 1)):
            for rows in (None, rng.random(count) < 0.3):
                rr.clear_chunk_states()
                got = pf.read_column(0, c, rows, True, start, count)
                want = whole[start:start + count]
                if rows is not None:
                    want = [w for w, r in zip(want, rows) if r]
                assert _as_list(got) == want, (c, start, count)
                if got.codes is not None:
                    assert np.array_equal(got.dictionary[got.codes], _values(got))
    if codec == "zstd":             # other codecs: the shared, decompressed-once pages
        assert calls and not any(calls)
    else:
        assert calls and all(calls)


@pytest.mark.parametrize("codec", ["snappy", "none"])
def test_remembered_string_dictionary_lets_its_chunk_go(tmp_path, codec):
    """A small string dictionary is decoded once per cached chunk buffer and
    kept in that buffer's memo; a second read gets the same arrays, and the
    memo entry does not keep the buffer alive (an uncompressed page's heap
    would point into it)."""
    import gc
    import weakref
    from scan.io.source import as_source
    path = str(tmp_path / "t.parquet")
    pq.write_table(_required_table(5000, 40), path, compression=codec, row_group_size=5000)
    pf = open_parquet(path)
    c = pf.column_index("s")
    ch = pf.row_groups[0].columns[c]
    buf = np.empty(ch.length, np.uint8)            # a chunk buffer of its own
    as_source(path).read_into(ch.start, buf)
    first = decode_required_chunk(buf, pf.columns[c], ch, 5000, True, None, True)
    again = decode_required_chunk(buf, pf.columns[c], ch, 5000, True, None, True)
    assert first is not None and again.dictionary is first.dictionary
    assert again.heap is first.heap
    want = pq.read_table(path).column("s").to_pylist()
    assert [v.decode() for v in _as_list(again)] == want
    ref = weakref.ref(buf)
    del buf, first, again
    gc.collect()
    assert ref() is None


def _decimal_table(n: int, distinct: int, seed: int) -> pa.Table:
    """FIXED_LEN_BYTE_ARRAY decimals as pyarrow writes them (type lengths 3,
    7 and 8), negative values and the int64 edges of precision 18."""
    import decimal
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, distinct, n)
    small = (codes * 37 - 5000) % 99_999 - 50_000            # fits decimal(5, 2)
    mid = codes * 7_919_000_003 - 10**12                       # decimal(15, 2)
    big = np.where(codes % 7 == 0, 10**18 - 1, codes * 10**10 - 5 * 10**17)
    big[codes % 11 == 0] = -(10**18 - 1)

    def dec(v, p, s):
        return pa.array([decimal.Decimal(int(x)).scaleb(-s) for x in v], pa.decimal128(p, s))
    schema = pa.schema([pa.field("d5", pa.decimal128(5, 2), nullable=False),
                        pa.field("d15", pa.decimal128(15, 2), nullable=False),
                        pa.field("d18", pa.decimal128(18, 4), nullable=False)])
    return pa.table({"d5": dec(small, 5, 2), "d15": dec(mid, 15, 2), "d18": dec(big, 18, 4)},
                    schema=schema)


@pytest.mark.parametrize("codec", ["snappy", "none"])
@pytest.mark.parametrize("distinct, dictionary", [(40, True), (9000, True), (9000, False)])
def test_fixed_len_decimals(tmp_path, monkeypatch, codec, distinct, dictionary):
    """pyarrow's FIXED_LEN_BYTE_ARRAY decimals (precision <= 18) take the
    kernel path (dictionary, PLAIN and dictionary-then-PLAIN pages, with and
    without a selection, whole chunks and row ranges) and decode to the
    unscaled int64 values pyarrow has."""
    import scan.row_ranges as rr
    path = str(tmp_path / "t.parquet")
    pq.write_table(_decimal_table(30_000, distinct, distinct), path, compression=codec,
                   use_dictionary=dictionary, dictionary_pagesize_limit=16_384,
                   data_page_size=2048, row_group_size=20_000)
    pf = open_parquet(path)
    want_table = pq.read_table(path)
    rng = np.random.default_rng(5)
    for c, col in enumerate(pf.columns):
        assert col.physical_type == "FIXED_LEN_BYTE_ARRAY"
        scale = col.scale
        want_all = [int(v.scaleb(scale)) for v in want_table.column(col.name).to_pylist()]
        start = 0
        for rg in range(len(pf.row_groups)):
            buf, col, ch = _chunk(pf, rg, c)
            n = pf.row_groups[rg].num_rows
            want = want_all[start:start + n]
            start += n
            for rows in (None, rng.random(n) < 0.4):
                got = decode_required_chunk(buf, col, ch, n, True, rows, False)
                assert got is not None, (col.name, rg)
                kept = want if rows is None else [w for w, r in zip(want, rows) if r]
                assert got.values.dtype == np.int64 and got.values.tolist() == kept
            whole = pf.read_column(rg, c).values.tolist()
            assert whole == want
            for a, k in ((0, n // 2), (n // 3, n // 3), (n - 501, 501)):
                rr.clear_chunk_states()
                assert pf.read_column(rg, c, row_start=a, row_count=k).values.tolist() == \
                    want[a:a + k]


@pytest.mark.parametrize("codec", ["snappy", "zstd", "none"])
def test_kept_dictionaries_are_charged_to_their_chunk(tmp_path, codec):
    """A chunk's decoded dictionary is kept for later reads while the chunk
    stays in the buffer manager, counted against its budget, and goes when
    the chunk is evicted; a buffer no manager holds keeps none."""
    from scan.io.buffer_manager import BufferManager
    from scan.required_chunk import fixed_plan
    path = str(tmp_path / "t.parquet")
    table = _required_table(20_000, 3000, seed=5)
    pq.write_table(table, path, compression=codec, row_group_size=20_000)
    bm = BufferManager(64 << 20)
    pf = open_parquet(path, bm)
    for name in ("i64", "i32", "f64", "d"):
        c = pf.column_index(name)
        buf, col, ch = _chunk(pf, 0, c)
        before = bm.bytes_cached
        first = decode_required_chunk(buf, col, ch, 20_000, True, None, False)
        plan = fixed_plan(buf, ch.num_values, True, col)
        assert plan.flat is not None and plan.flat.nbytes > 0, name
        assert bm.bytes_cached == before + plan.flat.nbytes       # charged once
        again = decode_required_chunk(buf, col, ch, 20_000, True, None, False)
        assert fixed_plan(buf, ch.num_values, True, col).flat is plan.flat
        assert bm.bytes_cached == before + plan.flat.nbytes
        want = table.column(name).to_numpy()
        if name == "d":
            want = want.astype("datetime64[D]").astype(np.int32)
        for got in (first, again):
            assert np.array_equal(_values(got).view(want.dtype), want), name
    bm.invalidate()
    assert bm.bytes_cached == 0                  # the chunks and what was charged to them
    c = pf.column_index("i64")
    ch = pf.row_groups[0].columns[c]
    own = np.empty(ch.length, np.uint8)          # a buffer of its own: nothing is kept
    from scan.io.source import as_source
    as_source(path).read_into(ch.start, own)
    decode_required_chunk(own, pf.columns[c], ch, 20_000, True, None, False)
    assert fixed_plan(own, ch.num_values, True, pf.columns[c]).flat is None


def test_charge_counts_until_the_page_leaves():
    from scan.io.buffer_manager import BufferManager, charge

    class Source:
        def identity(self):
            return ("mem", 1)

        def read_into(self, offset, out):
            out[:] = 1

    bm = BufferManager(1000)
    a = bm.get(Source(), 0, 300)
    b = bm.get(Source(), 300, 300)
    assert charge(a, 200) and bm.bytes_cached == 800
    assert not charge(np.empty(10, np.uint8), 5)          # no manager holds it
    assert not charge(b, 251) and bm.bytes_cached == 800  # over a quarter of the budget
    assert charge(b, 240)                                 # 1040 > 1000: the oldest page goes
    assert bm.bytes_cached == 540 and not bm.charge_page(a, 1)
    bm.shrink(10)
    assert bm.bytes_cached == 0 and not charge(b, 1)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([np.int32, np.int64]), st.integers(0, 3000),
       st.sampled_from([0, 200, 60_000, 3_000_000_000, 1 << 62]), st.integers(-(1 << 62), 1 << 62))
def test_kept_dictionary_narrows_and_widens_exactly(dtype, n, span, start):
    """A kept dictionary stored as offsets in a narrower type widens back to
    the same kernel values, at every span and at the edges of the type."""
    from scan.kept_dictionary import narrowed, widened
    info = np.iinfo(dtype)
    lo = max(min(start, info.max), info.min)
    hi = min(lo + span, info.max)
    rng = np.random.default_rng(n)
    flat = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64).astype(dtype)
    if n:
        flat[0], flat[-1] = lo, hi
    kept, base = narrowed(flat)
    got = widened(kept, base, dtype)
    assert got.dtype == dtype and np.array_equal(got, flat)
    assert kept.nbytes <= flat.nbytes


def _optional_table(n: int, nulls: bool, seed: int = 0) -> pa.Table:
    """Optional (nullable) columns, with or without NULLs."""
    base = _required_table(n, 300, seed)
    rng = np.random.default_rng(seed)
    cols = {}
    for f in base.schema:
        arr = base.column(f.name).combine_chunks()
        if nulls:
            arr = pa.array(arr.to_pylist(), f.type, mask=rng.random(n) < 0.02)
        cols[f.name] = arr
    fields = [pa.field(f.name, f.type, nullable=True) for f in base.schema]
    if nulls:                                   # columns of NULLs only (empty dictionaries)
        cols["none_s"] = pa.nulls(n, pa.string())
        cols["none_i"] = pa.nulls(n, pa.int64())
        fields += [pa.field("none_s", pa.string()), pa.field("none_i", pa.int64())]
    return pa.table(cols, schema=pa.schema(fields))


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("nulls,stats", [(False, True), (True, True), (True, False)])
def test_optional_columns_take_the_kernel(tmp_path, version, dictionary, nulls,
                                                        stats):
    """Optional flat columns in v1 pages decode in the one-kernel path, with
    or without NULLs (the definition levels read in the kernel); v2 pages
    with levels go to the general path.  Both equal pyarrow, whole and with
    a selection, and so do row ranges."""
    import scan.required_chunk as RC
    path = str(tmp_path / "t.parquet")
    table = _optional_table(30_000, nulls, seed=3)
    pq.write_table(table, path, compression="snappy", row_group_size=30_000,
                   data_page_version=version, use_dictionary=dictionary, data_page_size=8192,
                   write_statistics=stats)       # (without: the kernel finds the NULLs)
    pf = open_parquet(path)
    sel = np.random.default_rng(1).random(30_000) < 0.3
    hits, whole = [], []
    orig, orig_whole = RC._decode, RC.decode_whole_pages      # (row_ranges imports it per read)
    RC._decode = lambda *a: hits.append(orig(*a)) or hits[-1]
    RC.decode_whole_pages = lambda *a: whole.append(orig_whole(*a)) or whole[-1]
    try:
        for name in table.column_names:
            c = pf.column_index(name)
            assert pf.columns[c].max_def_level == 1
            want = pq.read_table(path).column(name).to_pylist()
            if name == "d":
                want = [None if v is None else (v - __import__("datetime").date(1970, 1, 1)).days
                        for v in want]
            if name in ("s", "none_s"):
                want = [None if v is None else v.encode() for v in want]
            got = pf.read_column(0, c).to_pylist()
            assert got == want, name
            got = pf.read_column(0, c, sel).to_pylist()
            assert got == [w for w, k in zip(want, sel) if k], name
            got = pf.read_column(0, c, row_start=2_345, row_count=25_000).to_pylist()
            assert got == want[2_345:27_345], name
    finally:
        RC._decode, RC.decode_whole_pages = orig, orig_whole
    took = [h for h in hits if h is not None]
    took_whole = [w for w in whole if w is not None]
    if version == "1.0":
        assert took and took_whole, "v1 chunks take the kernel, row ranges too"
        if nulls:
            assert any(h.nulls is not None for h in took)
            assert any(w[1] is not None for w in took_whole)
    else:
        assert not took and not took_whole, "v2 pages with levels go the general way"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 40), st.integers(0, 1)), min_size=1,
                max_size=12), st.integers(0, 2 ** 31))
def test_v1_definition_levels(runs, seed):
    """scan.levels.v1_defined against the runs that made the bytes: RLE runs
    and bit-packed groups (padding bits ignored), with the values' position
    after the levels; malformed levels give -1."""
    from scan.levels import v1_defined
    rng = np.random.default_rng(seed)
    body, want = b"", []
    for packed, count, value in runs:
        if packed:
            bits = rng.integers(0, 2, count * 8)
            groups = np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()
            body += bytes([(count << 1) | 1]) + groups
            want += bits.tolist()
        else:
            body += bytes([count << 1, value])
            want += [value] * count
    n = len(want) - int(rng.integers(0, 8)) if len(want) > 8 else len(want)
    page = np.frombuffer(len(body).to_bytes(4, "little") + body + b"VALUES", np.uint8)
    defined = np.empty(n, np.int32)
    pos, valid = v1_defined(page, 0, len(page), n, defined)
    assert pos == 4 + len(body) and valid == sum(want[:n])
    assert defined.tolist() == want[:n]
    assert v1_defined(page[:3 + len(body)], 0, 3 + len(body), n, defined)[0] == -1
    assert v1_defined(page, 0, len(page), len(want) + 1, np.empty(len(want) + 1, np.int32))[0] \
        == -1                                            # fewer levels than rows
    bad = np.frombuffer((2).to_bytes(4, "little") + bytes([2, 2]), np.uint8)   # a level of 2
    assert v1_defined(bad, 0, 6, 1, defined)[0] == -1
