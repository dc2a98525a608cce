"""Index structures (bloom filters, the page index, footer statistics) that
contradict the file are ignored: never trusted to skip data, never a reason
to refuse readable data (DuckDB's parquet_bloom_filter_corruption and
corrupt-statistics tests).  Each file here is a pyarrow-written file with
its footer or an index structure patched (tests/scan/thrift_writer.py); every
answer is compared with the uncorrupted file's."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from scan import thrift as T
from scan.bloom import BLOOM_FILTER_HEADER
from tests.scan.thrift_writer import encode_struct, read_footer, rewrite_footer, write_with_footer

N = 100_000


def count(path, where="true", **config):
    con = engine.connect(config={"threads": 1, **config})
    return con.sql(f"SELECT count(*) FROM '{path}' WHERE {where}").fetchone()[0]


@pytest.fixture(scope="module")
def bloom_file(tmp_path_factory):
    """r = 0..99, each 1000 times in order; ten row groups of 10,000 rows,
    every chunk with a bloom filter (as DuckDB's bloom test data)."""
    path = tmp_path_factory.mktemp("bloom") / "good.parquet"
    r = np.repeat(np.arange(100, dtype=np.int64) * 10, 1000)
    pq.write_table(pa.table({"r": r, "s": pa.array([f"v{v}" for v in r])}), path,
                   row_group_size=10_000, bloom_filter_options={"r": True, "s": True},
                   write_page_index=True)
    return path


def _patch_bloom_headers(src, dst, header_of):
    """Every bloom filter header of column r rewritten as ``header_of(header,
    bitset_bytes)`` returns (bytes written from the header's offset on)."""
    body, raw = read_footer(src)
    body = bytearray(body)
    for rg in raw["row_groups"]:
        md = rg["columns"][0]["meta_data"]
        off, length = md["bloom_filter_offset"], md["bloom_filter_length"]
        header, pos = T.decode_struct(bytes(body), BLOOM_FILTER_HEADER, off, off + length)
        new = header_of(header, pos - off, length)
        body[off:off + len(new)] = new
    write_with_footer(dst, bytes(body), raw)


def test_bloom_filter_short_num_bytes_is_ignored(bloom_file, tmp_path):
    # the header's numBytes is half the bitset bloom_filter_length holds:
    # read as given, the probe lands in the wrong blocks and skips every
    # row group (count was 0)
    bad = tmp_path / "short_numbytes.parquet"
    _patch_bloom_headers(bloom_file, bad, lambda h, hlen, length: encode_struct(
        {**h, "numBytes": (length - hlen) // 2}, BLOOM_FILTER_HEADER))
    assert count(bad, "r = 200") == count(bloom_file, "r = 200") == 1000
    assert count(bad, "r IN (0, 990)") == 2000
    assert duckdb.connect().execute(f"SELECT count(*) FROM '{bad}' WHERE r = 200").fetchone()[0] == 1000


def test_bloom_filter_bad_num_bytes_is_ignored(bloom_file, tmp_path):
    # numBytes far past the file (was refused: "bloom filter size ... ")
    bad = tmp_path / "bad_numbytes.parquet"
    _patch_bloom_headers(bloom_file, bad, lambda h, hlen, length: encode_struct(
        {**h, "numBytes": 1 << 30}, BLOOM_FILTER_HEADER)[:hlen])
    assert count(bad) == N
    assert count(bad, "r = 0") == 1000


def test_bloom_filter_length_past_the_file_is_ignored(bloom_file, tmp_path):
    # bloom_filter_length runs past the end of the file (was refused)
    bad = tmp_path / "bad_length_range.parquet"

    def mutate(raw):
        for rg in raw["row_groups"]:
            rg["columns"][0]["meta_data"]["bloom_filter_length"] = 1 << 24
    rewrite_footer(bloom_file, bad, mutate)
    assert count(bad, "r = 0") == 1000


@pytest.mark.parametrize("offset", ["inside_chunk", "past_end", "garbage_header"])
def test_bloom_filter_offset_elsewhere_is_ignored(bloom_file, tmp_path, offset):
    bad = tmp_path / f"bloom_{offset}.parquet"

    def mutate(raw):
        for rg in raw["row_groups"]:
            md = rg["columns"][0]["meta_data"]
            if offset == "inside_chunk":
                md["bloom_filter_offset"] = md["data_page_offset"]
            elif offset == "past_end":
                md["bloom_filter_offset"] = 1 << 40
            else:                  # the next column's bloom filter: header fine,
                md.pop("bloom_filter_length")      # but the values differ
                md["bloom_filter_offset"] = rg["columns"][1]["meta_data"]["bloom_filter_offset"]
    rewrite_footer(bloom_file, bad, mutate)
    # a filter in the wrong place may say nothing true: no row group of
    # these may be skipped by it, except the one wrongly placed but valid
    # (another column's): it cannot be told from a real one
    if offset != "garbage_header":
        assert count(bad, "r = 0") == 1000
        assert count(bad, "r IN (10, 500)") == 2000
    assert count(bad) == N


# ---- footer statistics --------------------------------------------------------

@pytest.fixture(scope="module")
def stats_file(tmp_path_factory):
    """Four row groups of 1000 rows: r ascending (int64), t an int8, o
    optional with a NULL every 10th row, q a required int32."""
    path = tmp_path_factory.mktemp("stats") / "good.parquet"
    n = 4000
    r = np.arange(n, dtype=np.int64)
    t = pa.table({"r": r, "t": pa.array((r % 100).astype(np.int8)),
                  "o": pa.array([None if i % 10 == 0 else i for i in range(n)], pa.int64()),
                  "q": pa.array(r.astype(np.int32))},
                 schema=pa.schema([("r", pa.int64()), ("t", pa.int8()), ("o", pa.int64()),
                                   ("q", pa.int32(), False)]))
    pq.write_table(t, path, row_group_size=1000, write_page_index=True, data_page_size=512,
                   use_dictionary=False, write_batch_size=64)
    return path


def _stats(raw, column):
    col = [e["name"] for e in raw["schema"][1:]].index(column)
    return [rg["columns"][col]["meta_data"]["statistics"] for rg in raw["row_groups"]]


def _i64(v):
    return int(v).to_bytes(8, "little", signed=True)


def _i32(v):
    return int(v).to_bytes(4, "little", signed=True)


STATS_CORRUPTIONS = {
    # min > max: the value 1500 lies "outside" [1900, 1100]
    "min_above_max": ("r", lambda s, i: s.update(min_value=_i64(1000 * i + 900),
                                                 max_value=_i64(1000 * i + 100)), "r = 1500"),
    # more NULLs than values: read as "every value is NULL"
    "null_count_above_rows": ("o", lambda s, i: s.update(null_count=5000), "o = 1501"),
    # NULLs in a required column, as many as rows
    "nulls_in_required": ("q", lambda s, i: s.update(null_count=1000), "q = 1500"),
    # "all NULL" beside a min and max
    "all_null_with_bounds": ("o", lambda s, i: s.update(null_count=1000), "o = 1501"),
    # values outside the int8 range
    "out_of_type_range": ("t", lambda s, i: s.update(min_value=_i32(-1000), max_value=_i32(-500)),
                          "t = 5"),
    # 4-byte statistics on an INT64 column
    "wrong_width": ("r", lambda s, i: s.update(min_value=_i32(0), max_value=_i32(1)), "r = 1500"),
}


@pytest.mark.parametrize("case", sorted(STATS_CORRUPTIONS))
def test_inconsistent_statistics_skip_nothing(stats_file, tmp_path, case):
    column, change, where = STATS_CORRUPTIONS[case]
    bad = tmp_path / f"{case}.parquet"

    def mutate(raw):
        for i, s in enumerate(_stats(raw, column)):
            change(s, i)
    rewrite_footer(stats_file, bad, mutate)
    want = count(stats_file, where)
    assert want > 0
    assert count(bad, where) == want
    assert count(bad, f"{column} IS NOT NULL") == count(stats_file, f"{column} IS NOT NULL")


# ---- the page index -------------------------------------------------------------

def _patch_page_index(src, dst, column, which, change):
    """Re-encode the ColumnIndex (``which`` "column") or OffsetIndex
    ("offset") of ``column`` in every row group as ``change(index, rg)``
    leaves it, appended after the data; the footer points at the new copy."""
    from scan.pageindex import COLUMN_INDEX, OFFSET_INDEX
    spec = COLUMN_INDEX if which == "column" else OFFSET_INDEX
    body, raw = read_footer(src)
    col = [e["name"] for e in raw["schema"][1:]].index(column)
    for i, rg in enumerate(raw["row_groups"]):
        cc = rg["columns"][col]
        off, length = cc[f"{which}_index_offset"], cc[f"{which}_index_length"]
        index, _ = T.decode_struct(body, spec, off, off + length)
        change(index, i)
        new = encode_struct(index, spec)
        cc[f"{which}_index_offset"], cc[f"{which}_index_length"] = len(body), len(new)
        body += new
    write_with_footer(dst, body, raw)


def _page_of(index, i, row):
    """The page holding row ``row`` of row group i (an OffsetIndex raw dict
    read beside it is not at hand: pages are found by their minima)."""
    return next(p for p in range(len(index["min_values"])) if
                int.from_bytes(index["min_values"][p], "little", signed=True) <= row <=
                int.from_bytes(index["max_values"][p], "little", signed=True))


def _swap_min_max(index, i):
    if i == 1:
        p = _page_of(index, i, 1500)
        index["min_values"][p], index["max_values"][p] = index["max_values"][p], index["min_values"][p]


def _null_count_above_rows(index, i):
    if i == 1:
        index["null_counts"][_page_of(index, i, 1501)] = 10_000


def _null_page_with_values(index, i):
    if i == 1:
        index["null_pages"][_page_of(index, i, 1501)] = True


def _drop_a_page(index, i):
    for key in ("null_pages", "min_values", "max_values", "null_counts"):
        if key in index:
            index[key] = index[key][:-1]


def _shift_first_rows(index, i):
    # page boundaries one row later than they are: in range, increasing,
    # but the page headers disagree (was: "data page has N values, the page
    # index says M", a refusal; or the filter kept the wrong rows)
    for loc in index["page_locations"][1:]:
        loc["first_row_index"] += 1


def _offsets_past_chunk(index, i):
    index["page_locations"][-1]["offset"] += 1 << 20


PAGE_INDEX_CORRUPTIONS = {
    "min_above_max": ("r", "column", _swap_min_max, "r = 1500"),
    "null_count_above_rows": ("o", "column", _null_count_above_rows, "o = 1501"),
    "null_page_with_values": ("o", "column", _null_page_with_values, "o = 1501"),
    "page_counts_differ": ("r", "column", _drop_a_page, "r = 1999"),
    "first_rows_shifted": ("r", "offset", _shift_first_rows, "r BETWEEN 1100 AND 1200"),
    "offset_past_chunk": ("r", "offset", _offsets_past_chunk, "r = 1999"),
}


@pytest.mark.parametrize("case", sorted(PAGE_INDEX_CORRUPTIONS))
def test_inconsistent_page_index_skips_nothing(stats_file, tmp_path, case):
    column, which, change, where = PAGE_INDEX_CORRUPTIONS[case]
    bad = tmp_path / f"{case}.parquet"
    _patch_page_index(stats_file, bad, column, which, change)
    good = engine.connect(config={"threads": 1, "block_rows": 64})
    want = good.sql(f"SELECT r, o FROM '{stats_file}' WHERE {where} ORDER BY r").fetchall()
    assert want
    for block_rows in (64, 131072):         # morsels below the row group, and whole
        con = engine.connect(config={"threads": 1, "block_rows": block_rows})
        got = con.sql(f"SELECT r, o FROM '{bad}' WHERE {where} ORDER BY r").fetchall()
        assert got == want, block_rows
    con = engine.connect(config={"threads": 1, "block_rows": 64})
    assert con.sql(f"SELECT count(*), sum(r) FROM '{bad}'").fetchall() == \
        [(4000, 4000 * 3999 // 2)]
