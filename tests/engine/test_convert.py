"""Vector -> Python / numpy conversion and the renderers, on hand-built blocks."""

import csv
import datetime as dt
import io
import json
from decimal import Decimal

import numpy as np
import pytest

from engine.api import Result
from engine.block import Block, Vector, concat_vectors
from engine.convert import (block_to_rows, strings_to_vector, vector_to_numpy,
                            vector_to_pylist, views_to_buffer)
from engine.format import render, render_csv, render_json, value_text
from planner import types as T

UTC = dt.timezone.utc


def vec(t, values, nulls=None):
    data = np.array(values, dtype=t.numpy_dtype)
    return Vector(t, data, None if nulls is None else np.array(nulls, np.uint8))


# ---------------------------------------------------------------- strings

STRINGS = ["", "a", "hello world!", "exactly12byt", "thirteen byte", "ü-umlaut ☃ snow",
           "x" * 100, None, "end"]


def test_string_round_trip():
    v = strings_to_vector(STRINGS, T.VARCHAR)
    assert v.data.shape == (len(STRINGS), 2) and v.data.dtype == np.uint64
    assert vector_to_pylist(v) == STRINGS


def test_string_view_layout_matches_contract():
    v = strings_to_vector(["abcdefghijklmnop", "abc"], T.VARCHAR)
    w0, w1 = int(v.data[0, 0]), int(v.data[0, 1])
    assert w0 & 0xFFFFFFFF == 16
    assert (w0 >> 32).to_bytes(4, "little") == b"abcd"
    assert bytes(v.heap[w1:w1 + 16]) == b"abcdefghijklmnop"
    s0, s1 = int(v.data[1, 0]), int(v.data[1, 1])
    assert s0 & 0xFFFFFFFF == 3 and (s0 >> 32).to_bytes(4, "little") == b"abc\0"
    assert s1 == 0


def test_strings_concat_rebases_heap():
    a = strings_to_vector(["long string number one", "s"], T.VARCHAR)
    b = strings_to_vector(["another long string here", None], T.VARCHAR)
    assert vector_to_pylist(concat_vectors([a, b])) == [
        "long string number one", "s", "another long string here", None]


def test_views_to_buffer_offsets():
    v = strings_to_vector(["ab", "c" * 20, ""], T.VARCHAR)
    buf, offsets = views_to_buffer(v.data, v.heap)
    assert buf == b"ab" + b"c" * 20 and offsets.tolist() == [0, 2, 22, 22]


def test_blob_values_are_bytes():
    v = strings_to_vector([b"\x00\x01", b"\xff" * 20, None], T.BLOB)
    assert vector_to_pylist(v) == [b"\x00\x01", b"\xff" * 20, None]


# ---------------------------------------------------------------- scalars

def test_integers_floats_bool_with_nulls():
    assert vector_to_pylist(vec(T.INTEGER, [1, -2, 3], [0, 1, 0])) == [1, None, 3]
    out = vector_to_pylist(vec(T.BIGINT, [2**62, 0]))
    assert out == [2**62, 0] and all(type(x) is int for x in out)
    assert vector_to_pylist(vec(T.DOUBLE, [1.5, float("nan")]))[0] == 1.5
    assert vector_to_pylist(vec(T.BOOLEAN, [True, False], [0, 1])) == [True, None]
    assert vector_to_pylist(vec(T.UBIGINT, [2**64 - 1])) == [2**64 - 1]


def test_decimal_exact_scale():
    out = vector_to_pylist(vec(T.DECIMAL(15, 2), [12345, -5, 0, 100], [0, 0, 0, 1]))
    assert out[:3] == [Decimal("123.45"), Decimal("-0.05"), Decimal("0.00")]
    assert [d.as_tuple().exponent for d in out[:3]] == [-2, -2, -2]
    assert out[3] is None
    assert vector_to_pylist(vec(T.DECIMAL(10, 0), [7])) == [Decimal(7)]


def test_wide_decimal_exact():
    t = T.DECIMAL(38, 10)
    big = 12345678901234567890123456789012345678
    v = Vector(t, np.array([big, -1], dtype=object))
    assert vector_to_pylist(v) == [Decimal("1234567890123456789012345678.9012345678"),
                                   Decimal("-0.0000000001")]


def test_temporal_types():
    assert vector_to_pylist(vec(T.DATE, [0, 19000, -1], [0, 0, 1])) == [
        dt.date(1970, 1, 1), dt.date(2022, 1, 8), None]
    micros = 1_700_000_000_123_456
    assert vector_to_pylist(vec(T.TIMESTAMP, [micros])) == [
        dt.datetime(2023, 11, 14, 22, 13, 20, 123456)]
    assert vector_to_pylist(vec(T.TIMESTAMPTZ, [micros])) == [
        dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)]
    assert vector_to_pylist(vec(T.TIMESTAMP_NS, [micros * 1000 + 999])) == [
        dt.datetime(2023, 11, 14, 22, 13, 20, 123456)]
    assert vector_to_pylist(vec(T.TIME, [(13 * 3600 + 5 * 60 + 7) * 10**6 + 42])) == [
        dt.time(13, 5, 7, 42)]
    assert vector_to_pylist(vec(T.TIMESTAMP, [-1])) == [dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]


def test_null_type_and_hugeint():
    assert vector_to_pylist(Vector(T.NULL, np.zeros(2, np.bool_), np.ones(2, np.uint8))) == [None, None]
    assert vector_to_pylist(Vector(T.HUGEINT, np.array([2**100, 1], dtype=object))) == [2**100, 1]


def test_block_to_rows_and_slices():
    b = Block([vec(T.INTEGER, [1, 2, 3]), strings_to_vector(["a", None, "c"], T.VARCHAR)], 3)
    assert block_to_rows(b) == [(1, "a"), (2, None), (3, "c")]
    assert block_to_rows(b, 1, 2) == [(2, None)]
    assert block_to_rows(b, 3, 10) == []


# ---------------------------------------------------------------- numpy

def test_to_numpy_dtypes_and_masks():
    assert vector_to_numpy(vec(T.INTEGER, [1, 2])).dtype == np.int32
    d = vector_to_numpy(vec(T.DECIMAL(15, 2), [150, -1]))
    assert d.dtype == np.float64 and d.tolist() == [1.5, -0.01]
    assert vector_to_numpy(vec(T.DATE, [1])).tolist() == [dt.date(1970, 1, 2)]
    assert vector_to_numpy(vec(T.TIMESTAMP, [0])).dtype == np.dtype("datetime64[us]")
    m = vector_to_numpy(vec(T.BIGINT, [5, 6], [1, 0]))
    assert isinstance(m, np.ma.MaskedArray) and m.mask.tolist() == [True, False] and m[1] == 6
    s = vector_to_numpy(strings_to_vector(["x", None], T.VARCHAR))
    assert s.dtype == object and s.data.tolist() == ["x", None] and s.mask.tolist() == [False, True]


# ---------------------------------------------------------------- Result + renderers

def sample_result(n=3):
    ints = vec(T.INTEGER, list(range(n)), [0] + [0] * (n - 2) + [1] if n > 1 else None)
    names = strings_to_vector([f"name,{i}\"q" for i in range(n)], T.VARCHAR)
    prices = vec(T.DECIMAL(12, 2), [i * 101 for i in range(n)])
    days = vec(T.DATE, [19000 + i for i in range(n)])
    return Result(["id", "name", "price", "day"],
                  [T.INTEGER, T.VARCHAR, T.DECIMAL(12, 2), T.DATE],
                  Block([ints, names, prices, days], n))


def test_result_fetch_protocol():
    r = sample_result(5)
    assert len(r) == 5
    assert r.columns == ["id", "name", "price", "day"]
    assert r.types == ["INTEGER", "VARCHAR", "DECIMAL(12,2)", "DATE"]
    assert r.fetchone() == (0, 'name,0"q', Decimal("0.00"), dt.date(2022, 1, 8))
    assert [row[0] for row in r.fetchmany(2)] == [1, 2]
    rest = r.fetchall()
    assert [row[0] for row in rest] == [3, None]
    assert r.fetchone() is None and r.fetchall() == [] and r.fetchmany(3) == []
    assert r.description[2] == ("price", "DECIMAL(12,2)", None, None, 12, 2, None)


def test_to_pandas_and_arrow():
    r = sample_result(3)
    df = r.to_pandas()
    assert list(df.columns) == r.columns and df["price"].tolist() == [0.0, 1.01, 2.02]
    assert np.isnan(df["id"][2])
    tbl = r.to_arrow()
    assert tbl.column("name").to_pylist() == ['name,0"q', 'name,1"q', 'name,2"q']
    assert tbl.column("price").to_pylist() == [Decimal("0.00"), Decimal("1.01"), Decimal("2.02")]
    assert tbl.column("id").to_pylist() == [0, 1, None]
    assert str(tbl.schema.field("day").type) == "date32[day]"


def test_csv_parses_back():
    r = sample_result(4)
    text = render(r, "csv")
    assert "\r\n" in text
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == r.columns
    assert rows[1] == ["0", 'name,0"q', "0.00", "2022-01-08"]
    assert rows[4][0] == ""          # NULL


def test_json_parses_back_with_exact_decimals():
    r = sample_result(3)
    data = json.loads(render(r, "json"), parse_float=Decimal)
    assert data[1] == {"id": 1, "name": 'name,1"q', "price": Decimal("1.01"), "day": "2022-01-09"}
    assert data[2]["id"] is None
    assert render_json(["a"], []) == "[]"


def test_table_rendering_small_and_truncated():
    text = str(sample_result(3))
    lines = text.splitlines()
    assert lines[0].startswith("┌") and lines[-1].startswith("└")
    assert "integer" in lines[2] and "decimal(12,2)" in lines[2]
    assert "3 rows" in text and "NULL" in text
    assert "│       1 │ name,1\"q │" in text         # numbers right, text left
    big = str(sample_result(100))
    assert "100 rows (40 shown)" in big and "…" in big
    body = [ln for ln in big.splitlines() if ln.startswith("│")]
    assert len(body) == 2 + 40 + 1 + 1        # header, type, rows, ellipsis, footer
    widths = {len(ln) for ln in big.splitlines()}
    assert len(widths) == 1                   # every line the same width


def test_value_text():
    assert value_text(None) == "NULL"
    assert value_text(True) == "true"
    assert value_text(Decimal("1E-10")) == "0.0000000001"
    assert value_text(dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=UTC)) == "2020-01-02 03:04:05.000006+00"
    assert value_text(b"a\x00") == "a\\x00"


def test_render_csv_and_json_direct():
    assert render_csv(["a", "b"], [(1, None)]) == "a,b\r\n1,\r\n"
    assert json.loads(render_json(["x"], [(float("nan"),), (True,)])) == [{"x": None}, {"x": True}]


def test_unknown_format():
    from engine.errors import ConfigError
    with pytest.raises(ConfigError):
        render(sample_result(1), "xml")


def test_numpy_fallbacks_match_kernels():
    from engine.convert import views_to_buffer_numpy, views_to_strings
    v = strings_to_vector(STRINGS[:-2] + ["y" * 13, "ok"], T.VARCHAR)
    from engine.kernels.strings import flatten
    buf, offsets = views_to_buffer_numpy(v.data, v.heap)
    k_offsets, k_data = flatten(np.asarray(v.data, np.uint64).reshape(-1, 2), v.heap)
    assert (buf, offsets.tolist()) == (k_data.tobytes(), k_offsets.tolist())
    assert views_to_strings(v.data, v.heap) == [s or "" for s in STRINGS[:-2]] + ["y" * 13, "ok"]


def test_few_long_strings_convert_through_the_kernel(monkeypatch):
    """The numpy gather indexes every byte with an int64: two strings of a
    GiB (large_string_map.brotli.parquet) took it past 20 GB.  Few rows of
    many bytes go through the kernel."""
    import engine.convert as convert

    def refuse(*args):
        raise AssertionError("numpy gather used for a large total")
    monkeypatch.setattr(convert, "views_to_buffer_numpy", refuse)
    big = ["a" * (convert.NUMPY_STRING_BYTES // 2 + 1), "b" * (convert.NUMPY_STRING_BYTES // 2 + 1)]
    v = strings_to_vector(big, T.VARCHAR)
    assert convert.views_to_strings(v.data, v.heap) == big


def test_wide_table_elides_middle_columns():
    from engine.format import render_table
    cols = [f"column_{i}" for i in range(12)]
    text = render_table(cols, ["INTEGER"] * 12, [tuple(range(12))], max_total_width=60)
    lines = text.splitlines()
    assert all(len(ln) <= 60 for ln in lines)
    assert "column_0" in lines[1] and "column_11" in lines[1] and "…" in lines[1]
    assert "12 columns (" in text
    full = render_table(cols, ["INTEGER"] * 12, [tuple(range(12))])
    assert "column_5" in full and "columns (" not in full


def test_fraction_trimming():
    assert value_text(dt.datetime(2021, 1, 2, 3, 4, 5, 6000)) == "2021-01-02 03:04:05.006"
    assert value_text(dt.time(1, 2, 3, 500000)) == "01:02:03.5"
    assert value_text(dt.time(1, 2, 3)) == "01:02:03"
