"""Property tests: random columns written by pyarrow (random nulls,
dictionary on/off, data page v1/v2, page sizes, codecs, encodings) are
decoded by our reader exactly as pyarrow reads them back."""

from __future__ import annotations

import decimal
import os
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scan import open_parquet
from scan.errors import UnsupportedFeatureError
from tests.scan.oracle import expected_storage, same_values

# ---------------------------------------- every column against pyarrow (oracle.py)

_NUMPY = {pa.bool_(): np.bool_, pa.int8(): np.int8, pa.int16(): np.int16,
          pa.int32(): np.int32, pa.int64(): np.int64, pa.uint8(): np.uint8,
          pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
          pa.float32(): np.float32, pa.float64(): np.float64}


def assert_file_matches(path: str) -> None:
    """Every column of every row group equals pyarrow's values."""
    pf = open_parquet(path)
    ref = pq.ParquetFile(path)
    assert pf.num_rows == ref.metadata.num_rows
    for rg in range(ref.num_row_groups):
        table = ref.read_row_group(rg)
        for ci, name in enumerate(table.column_names):
            index = pf.column_index(name)
            cd = pf.read_column(rg, index)
            col = table.column(name)
            expect = expected_storage(col, pf.columns[index])
            got = cd.to_pylist()
            assert len(got) == len(expect) == cd.num_rows
            bad = [i for i, (x, y) in enumerate(zip(got, expect)) if not same_values([x], [y])]
            assert not bad, (name, rg, bad[:5], [got[i] for i in bad[:5]],
                             [expect[i] for i in bad[:5]])
            dt = _NUMPY.get(col.type)
            if dt is not None:
                assert cd.values.dtype == dt, (name, cd.values.dtype)


# ---------------------------------------------------------------- random columns

_KINDS = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float32", "float64", "string", "binary", "date", "ts_ms", "ts_us",
          "ts_ns", "dec9", "dec18", "dec30", "fixed"]


@st.composite
def columns(draw, kind: str, n: int):
    """A pyarrow array of ``n`` values of ``kind`` with random nulls."""
    null_p = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    nulls = rng.random(n) < null_p
    distinct = draw(st.sampled_from([1, 3, 50, 100000]))

    def pick(values):
        return [None if nulls[i] else values[i] for i in range(n)]

    if kind == "bool":
        return pa.array(pick((rng.random(n) < 0.5).tolist()), pa.bool_())
    if kind.startswith(("int", "uint")):
        info = np.iinfo(np.dtype(kind))
        pool = rng.integers(info.min, info.max, size=min(distinct, n) or 1,
                            dtype=np.dtype(kind), endpoint=True)
        return pa.array(pick(rng.choice(pool, n).tolist()), getattr(pa, kind)())
    if kind.startswith("float"):
        pool = rng.normal(0, 1e6, size=min(distinct, n) or 1)
        pool[:1] = np.nan if rng.random() < 0.3 else pool[:1]
        vals = rng.choice(pool, n).astype(kind)
        return pa.array(pick(vals.tolist()), getattr(pa, kind)())
    if kind in ("string", "binary", "fixed"):
        maxlen = draw(st.sampled_from([0, 4, 12, 13, 40]))
        words = []
        for _ in range(min(distinct, n) or 1):
            ln = 8 if kind == "fixed" else int(rng.integers(0, maxlen + 1))
            words.append(bytes(rng.integers(97, 123, ln, dtype=np.uint8)))
        vals = [words[i] for i in rng.integers(0, len(words), n)]
        if kind == "string":
            return pa.array(pick([w.decode() for w in vals]), pa.string())
        return pa.array(pick(vals), pa.binary(8) if kind == "fixed" else pa.binary())
    if kind == "date":
        return pa.array(pick(rng.integers(-30000, 30000, n).tolist()), pa.int32()).cast(pa.date32())
    if kind.startswith("ts_"):
        unit = kind[3:]
        return pa.array(pick(rng.integers(-2**50, 2**50, n).tolist()), pa.int64()).cast(
            pa.timestamp(unit))
    precision = {"dec9": 9, "dec18": 18, "dec30": 30}[kind]
    scale = draw(st.integers(0, 4))
    lim = 10**precision - 1
    ints = [int(rng.integers(-2**62, 2**62)) % (2 * lim + 1) - lim for _ in range(n)]
    vals = [decimal.Decimal(v).scaleb(-scale) for v in ints]
    return pa.array(pick(vals), pa.decimal128(precision, scale))


_CODECS = ["NONE", "SNAPPY", "GZIP", "ZSTD"]


def _write_and_check(table: pa.Table, **options) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.parquet")
        pq.write_table(table, path, **options)
        assert_file_matches(path)


_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(st.data())
def test_random_columns_roundtrip(data):
    n = data.draw(st.integers(0, 3000), label="rows")
    kinds = data.draw(st.lists(st.sampled_from(_KINDS), min_size=1, max_size=4, unique=True))
    table = pa.table({k: data.draw(columns(k, n), label=k) for k in kinds})
    _write_and_check(
        table,
        use_dictionary=data.draw(st.booleans(), label="dict"),
        data_page_version=data.draw(st.sampled_from(["1.0", "2.0"]), label="page"),
        data_page_size=data.draw(st.sampled_from([64, 512, 4096, 1 << 20]), label="psize"),
        compression=data.draw(st.sampled_from(_CODECS), label="codec"),
        row_group_size=data.draw(st.sampled_from([100, 1000, 1 << 20]), label="rgsize"),
        write_statistics=data.draw(st.booleans()),
    )


_ENCODABLE = {
    "DELTA_BINARY_PACKED": ["int32", "int64", "int8", "uint16", "date", "ts_us"],
    "DELTA_LENGTH_BYTE_ARRAY": ["string", "binary"],
    "DELTA_BYTE_ARRAY": ["string", "binary", "fixed"],
    "BYTE_STREAM_SPLIT": ["float32", "float64", "int32", "int64", "fixed"],
    "RLE": ["bool"],
    "PLAIN": ["int32", "uint64", "ts_ns", "dec30", "bool"],
}


_PROBE = {"int32": pa.array([1, 5, None, -3], pa.int32()),
          "string": pa.array(["a", None, "bb", "a long string value"]),
          "float32": pa.array([1.5, None, -2.0], pa.float32()),
          "bool": pa.array([True, None, False, True])}


def _probe_supported(encoding: str, kind: str) -> str | None:
    """None if our reader decodes ``encoding`` at all, else the refusal."""
    table = pa.table({"c": _PROBE[kind]})
    try:
        _write_and_check(table, use_dictionary=False, column_encoding={"c": encoding})
    except UnsupportedFeatureError as e:
        return str(e)
    return None


@pytest.mark.parametrize("encoding", sorted(_ENCODABLE))
def test_non_dictionary_encodings(encoding):
    refused = _probe_supported(encoding, _ENCODABLE[encoding][0])
    if refused is not None:                  # visible, never silent
        pytest.xfail(f"reader refuses {encoding}: {refused}")

    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def check(data):
        kind = data.draw(st.sampled_from(_ENCODABLE[encoding]), label="kind")
        n = data.draw(st.integers(0, 2000), label="rows")
        table = pa.table({"c": data.draw(columns(kind, n), label="column")})
        _write_and_check(
            table, use_dictionary=False, column_encoding={"c": encoding},
            data_page_version=data.draw(st.sampled_from(["1.0", "2.0"]), label="page"),
            data_page_size=data.draw(st.sampled_from([128, 4096, 1 << 20]), label="psize"),
            compression=data.draw(st.sampled_from(_CODECS), label="codec"))

    check()


def test_lineitem_like_mix():
    """A fixed, larger case: many pages, mixed nulls, dictionary + plain."""
    rng = np.random.default_rng(7)
    n = 50_000
    words = [("w%d" % i) * (i % 7) for i in range(300)]
    table = pa.table({
        "k": pa.array(np.arange(n, dtype=np.int64)),
        "q": pa.array(rng.integers(1, 51, n).astype(np.int64)),
        "p": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(0, 10**7, n)],
                      pa.decimal128(15, 2)),
        "s": pa.array([None if i % 11 == 0 else words[i % 300] for i in range(n)]),
        "c": pa.array(["comment number %d with text" % i for i in range(n)]),
        "d": pa.array(rng.integers(8000, 10000, n).astype(np.int32)).cast(pa.date32()),
    })
    _write_and_check(table, compression="SNAPPY", data_page_size=8192, row_group_size=20_000)
    _write_and_check(table, compression="ZSTD", data_page_version="2.0", use_dictionary=["s"])


@settings(max_examples=15, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-2**62, 2**62)), max_size=500),
       st.booleans(), st.sampled_from(["1.0", "2.0"]))
def test_int96_timestamps(values, dictionary, page_version):
    """Deprecated INT96 timestamps -> int64 nanoseconds, as pyarrow reads them."""
    table = pa.table({"t": pa.array(values, pa.int64()).cast(pa.timestamp("ns"))})
    _write_and_check(table, use_deprecated_int96_timestamps=True, use_dictionary=dictionary,
                     data_page_version=page_version)


def _be_bytes(value: int, width: int) -> bytes:
    return (value % (1 << (8 * width))).to_bytes(width, "big")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 16).flatmap(lambda w: st.tuples(
    st.just(w),
    st.lists(st.integers(-2**(min(8 * w, 64) - 1), 2**(min(8 * w, 64) - 1) - 1), max_size=300),
    st.integers(0, 7))))
def test_fixed_len_decimal_straight_to_int64(case):
    """decode_plain_decimal (one kernel) agrees with the view path
    (decode_plain + decimal_from_be_bytes) for every width 1..16.  Up to 8
    bytes it loads 8 bytes ending at the value: the junk padding before the
    first values must be shifted out."""
    from scan.encodings.plain import decode_plain, decode_plain_decimal
    from scan.views import decimal_from_be_bytes
    width, values, pad = case
    buf = np.frombuffer(b"\xa5" * pad + b"".join(_be_bytes(v, width) for v in values)
                        + b"\x00" * 3, np.uint8)
    got, end = decode_plain_decimal(buf, pad, len(buf), len(values), width)
    views, end2 = decode_plain(buf, pad, len(buf), "FIXED_LEN_BYTE_ARRAY", len(values), width)
    assert end == end2 == pad + width * len(values)
    assert got.tolist() == values
    assert got.tolist() == decimal_from_be_bytes(views, buf, width).tolist()


@pytest.mark.parametrize("value", [2**63, -2**63 - 1, 2**100])
def test_fixed_len_decimal_overflow_is_an_error(value):
    from scan.encodings.plain import decode_plain_decimal
    from scan.errors import FileFormatError
    buf = np.frombuffer(_be_bytes(5, 16) + _be_bytes(value, 16), np.uint8)
    with pytest.raises(FileFormatError, match="row 1 does not fit in 64 bits"):
        decode_plain_decimal(buf, 0, len(buf), 2, 16)
    with pytest.raises(FileFormatError, match="truncated"):
        decode_plain_decimal(buf, 0, len(buf) - 1, 2, 16)
