"""Nested columns (scan/nested.py) against pyarrow on generated data:
lists, maps and structs at several depths, with nulls, empty lists, many
pages, dictionary and v2 pages, and the legacy list layouts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import open_parquet
from scan.errors import FileFormatError, PqdbError
from scan.nested import ListData, MapData, StructData, top_level_fields
from tests.scan.oracle import compare_nested_field

N = 3000


def _maybe(rng, p, v):
    return None if rng.random() < p else v


def _rand_list(rng, make, max_len=4, p_null=0.15):
    if rng.random() < p_null:
        return None
    return [make() for _ in range(int(rng.integers(0, max_len + 1)))]


@pytest.fixture(scope="module")
def nested_table():
    rng = np.random.default_rng(11)
    ints = lambda: _maybe(rng, 0.2, int(rng.integers(-1000, 1000)))          # noqa: E731
    strs = lambda: _maybe(rng, 0.2, f"s{int(rng.integers(0, 50))}" * int(rng.integers(1, 4)))  # noqa: E731
    rows = {
        "li": [_rand_list(rng, ints) for _ in range(N)],
        "ls": [_rand_list(rng, strs) for _ in range(N)],
        "lli": [_rand_list(rng, lambda: _rand_list(rng, ints)) for _ in range(N)],
        "st": [_maybe(rng, 0.2, {"a": ints(), "b": strs(), "c": _rand_list(rng, ints)})
               for _ in range(N)],
        "ls_of_st": [_rand_list(rng, lambda: _maybe(rng, 0.2, {"x": ints(), "y": strs()}))
                     for _ in range(N)],
        "m": [_maybe(rng, 0.2, [(f"k{j}", ints()) for j in range(int(rng.integers(0, 4)))])
              for _ in range(N)],
        "m_of_l": [_maybe(rng, 0.1, [(int(j), _rand_list(rng, strs)) for j in
                                      range(int(rng.integers(0, 3)))]) for _ in range(N)],
        "flat": [ints() for _ in range(N)],
        "d": [_rand_list(rng, lambda: _maybe(rng, 0.3, float(rng.standard_normal())))
              for _ in range(N)],
    }
    schema = pa.schema([
        ("li", pa.list_(pa.int32())), ("ls", pa.list_(pa.string())),
        ("lli", pa.list_(pa.list_(pa.int64()))),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.list_(pa.int16()))])),
        ("ls_of_st", pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())]))),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("m_of_l", pa.map_(pa.int32(), pa.list_(pa.string()))),
        ("flat", pa.int32()), ("d", pa.large_list(pa.float64())),
    ])
    return pa.table(rows, schema=schema)


WRITE_OPTIONS = {
    "default": {},
    "v2_small_pages": dict(data_page_version="2.0", data_page_size=512, row_group_size=1100),
    "plain_zstd": dict(use_dictionary=False, compression="zstd", data_page_size=1024),
    "legacy_lists": dict(use_compliant_nested_type=False, compression="gzip"),
    "checksums": dict(write_page_checksum=True, data_page_size=700),
}


@pytest.mark.parametrize("opt", sorted(WRITE_OPTIONS))
def test_nested_matches_pyarrow(nested_table, tmp_path, opt):
    path = str(tmp_path / f"{opt}.parquet")
    pq.write_table(nested_table, path, **WRITE_OPTIONS[opt])
    pf = open_parquet(path)
    theirs = pq.ParquetFile(path)
    for field in top_level_fields(pf):
        for rg in range(len(pf.row_groups)):
            compare_nested_field(path, pf, rg, field, theirs)


def test_tree_shapes(nested_table, tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(nested_table.slice(0, 50), path)
    pf = open_parquet(path)
    li = pf.read_nested(0, "li")
    assert isinstance(li, ListData) and li.offsets.dtype == np.int64
    assert len(li.offsets) == li.num_rows + 1 == 51
    assert li.child.num_rows == li.offsets[-1]
    st = pf.read_nested(0, "st")
    assert isinstance(st, StructData) and set(st.children) == {"a", "b", "c"}
    m = pf.read_nested(0, "m")
    assert isinstance(m, MapData) and set(m.child.children) == {"key", "value"}
    assert pf.read_nested(0, "flat").values.dtype == np.int32
    with pytest.raises(ValueError):
        pf.read_nested(0, "nope")


def test_empty_and_all_null_lists(tmp_path):
    t = pa.table({"a": pa.array([[], None, [], None], pa.list_(pa.int32())),
                  "b": pa.array([None] * 4, pa.list_(pa.list_(pa.string())))})
    path = str(tmp_path / "e.parquet")
    pq.write_table(t, path)
    pf = open_parquet(path)
    assert pf.read_nested(0, "a").to_pylist() == [[], None, [], None]
    assert pf.read_nested(0, "b").to_pylist() == [None] * 4


def test_level_corruption_is_refused(nested_table, tmp_path):
    """Cutting records out of one leaf of a struct makes its children
    disagree: a format error, never misaligned rows."""
    path = str(tmp_path / "ok.parquet")
    pq.write_table(nested_table.select(["lli"]), path, use_dictionary=False,
                   compression="none", data_page_size=1 << 20)
    raw = bytearray(open(path, "rb").read())
    pf = open_parquet(path)
    chunk = pf.row_groups[0].columns[0]
    mid = chunk.start + chunk.length // 3
    for k in range(40):
        raw[mid + k] ^= 0xA5
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(raw))
    try:
        got = open_parquet(str(bad)).read_nested(0, "lli")
    except PqdbError:
        return
    assert got.num_rows == N
