"""The fused dictionary-page decoder (scan/encodings/dictionary.py, as
scan/column.py uses it) against pyarrow: every bit width, several pages per
chunk written in place, string views, nullable columns (checked path), and
dictionary fallback to PLAIN."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import open_parquet
from scan.encodings.dictionary import dictionary_page_kernel


def _roundtrip(tmp_path, table, **kw):
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, use_dictionary=True, **kw)
    pf = open_parquet(path)
    rng = np.random.default_rng(1)
    for c, name in enumerate(table.column_names):
        want = pq.read_table(path, columns=[name]).column(0).to_pylist()
        is_str = any(isinstance(w, str) for w in want)
        got, got_sel, want_sel, start = [], [], [], 0
        for rg in range(len(pf.row_groups)):
            nr = pf.row_groups[rg].num_rows
            got.extend(pf.read_column(rg, c).to_pylist())
            rows = rng.random(nr) < 0.3          # only the kept rows are decoded
            got_sel.extend(pf.read_column(rg, c, rows).to_pylist())
            for mask in (None, rows):                # string codes agree with values
                coded = pf.read_column(rg, c, mask, codes=True)
                assert coded.to_pylist() == pf.read_column(rg, c, mask).to_pylist()
                if coded.codes is not None:
                    assert (coded.dictionary[coded.codes] == coded.values).all()
            want_sel.extend(w for w, r in zip(want[start:start + nr], rows) if r)
            start += nr
        if is_str:
            got = [None if g is None else g.decode() for g in got]
            got_sel = [None if g is None else g.decode() for g in got_sel]
        assert got == want, name
        assert got_sel == want_sel, name


@pytest.mark.parametrize("distinct", [1, 2, 3, 5, 17, 255, 256, 1000, 70000])
def test_bit_widths_and_pages(tmp_path, distinct):
    rng = np.random.default_rng(distinct)
    n = 50_000
    codes = rng.integers(0, distinct, n)
    codes[1000:3000] = codes[1000]                   # a long RLE run
    table = pa.table({
        "i64": pa.array(codes * 7919 - 5, pa.int64()),
        "i32": pa.array((codes * 3 - 1).astype(np.int32), pa.int32()),
        "f64": pa.array(codes / 8.0, pa.float64()),
        "f32": pa.array((codes / 4.0).astype(np.float32), pa.float32()),
        "s": pa.array([f"v{c}" if c % 3 else f"a longer string value {c}" for c in codes]),
    })
    _roundtrip(tmp_path, table, data_page_size=4096, row_group_size=30_000)


def test_nullable_and_plain_fallback(tmp_path):
    rng = np.random.default_rng(7)
    n = 40_000
    vals = rng.integers(0, 50_000, n)
    mask = rng.random(n) < 0.1
    table = pa.table({
        "i": pa.array(vals, pa.int64(), mask=mask),
        "s": pa.array([f"s{v}" for v in vals]),
    })
    # a small dictionary page limit forces the writer back to PLAIN mid-chunk
    _roundtrip(tmp_path, table, data_page_size=2048, dictionary_pagesize_limit=4096)


def test_kernel_rejects_bad_index_and_truncation():
    dictionary = np.arange(4, dtype=np.int64)
    out = np.empty(9, np.int64)
    no = np.ones(1, np.uint8)
    # bit width 3, one bit-packed group of 8 values 0..7: 4..7 are out of range
    packed = np.array([3, 0b11, 0b10001000, 0b11000110, 0b11111010], np.uint8)
    assert dictionary_page_kernel(packed, 0, len(packed), 8, dictionary, out, no, False) == -1
    ok = np.array([2, 0b11, 0b11100100, 0, 0], np.uint8)    # values 0,1,2,3,0,0,0,0
    assert dictionary_page_kernel(ok, 0, len(ok), 8, dictionary, out, no, False) == 8
    assert out[:8].tolist() == [0, 1, 2, 3, 0, 0, 0, 0]
    sel = np.array([0, 1, 0, 1, 1, 0, 0, 0], np.uint8)
    assert dictionary_page_kernel(ok, 0, len(ok), 8, dictionary, out, sel, True) == 3
    assert out[:3].tolist() == [1, 3, 0]
    assert dictionary_page_kernel(ok, 0, 3, 8, dictionary, out, no, False) == -1     # truncated
    rle = np.array([2, 10 << 1, 3], np.uint8)                              # run of 3s
    assert dictionary_page_kernel(rle, 0, len(rle), 5, dictionary, out, no, False) == 5
    assert out[:5].tolist() == [3] * 5
