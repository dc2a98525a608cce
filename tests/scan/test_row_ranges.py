"""Row-range reads below the row group (scan/row_ranges.py) against whole
chunk reads and pyarrow: boundaries inside runs, pages and dictionaries,
empty ranges, concurrent morsels of one chunk."""

from __future__ import annotations

import threading
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scan.io.buffer_manager import BufferManager
from scan.reader import open_parquet
from scan.row_ranges import OFFSET_EVERY, clear_chunk_states

N = 20000


def _table(n=N, seed=0):
    rng = np.random.default_rng(seed)
    runs = np.repeat(rng.integers(0, 4, n // 50 + 1), 50)[:n]          # long RLE runs
    return pa.table({
        "i64": pa.array(rng.integers(-1000, 1000, n)),
        "runs": pa.array(runs.astype(np.int32)),
        "dict_s": pa.array([f"v{x}" if x % 9 else None for x in rng.integers(0, 40, n)]),
        "plain_s": pa.array([("long-string-" * (x % 3)) + str(x) for x in range(n)]),
        "f64": pa.array(rng.random(n)),
        "flag": pa.array(rng.random(n) < 0.3),
        "opt": pa.array([None if x % 5 == 0 else int(x) for x in range(n)], pa.int64()),
        "dec": pa.array([None if x % 11 == 0 else Decimal(x) / 100 for x in range(n)],
                        pa.decimal128(24, 2)),
        "dec9": pa.array([Decimal(int(x)) / 100 for x in rng.integers(0, 10**6, n)],
                         pa.decimal128(9, 2)),
    })


LAYOUTS = {
    "small-pages-dict": dict(data_page_size=512, use_dictionary=["runs", "dict_s", "i64"]),
    "one-page": dict(data_page_size=1 << 30),
    "page-index": dict(data_page_size=2048, write_page_index=True,
                       use_dictionary=["runs", "dict_s"]),
    "v2-zstd": dict(data_page_size=1024, data_page_version="2.0", compression="zstd"),
}


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def layout_file(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("ranges") / f"{request.param}.parquet"
    pq.write_table(_table(), path, row_group_size=N, **LAYOUTS[request.param])
    pf = open_parquet(str(path), BufferManager())
    whole = [pf.read_column(0, c).to_pylist() for c in range(len(pf.columns))]
    return pf, whole


RANGES = [(0, 1), (0, N), (1, N - 1), (0, N - 1), (49, 2), (50, 50), (999, 1002),
          (OFFSET_EVERY - 1, 2), (OFFSET_EVERY * 3 + 7, 5000), (N - 1, 1), (N // 2, 0),
          (0, 0), (N, 0), (12345, 4321)]


@pytest.mark.parametrize("start,count", RANGES)
def test_range_equals_whole_chunk_slice(layout_file, start, count):
    pf, whole = layout_file
    for c in range(len(pf.columns)):
        got = pf.read_column(0, c, row_start=start, row_count=count, codes=True)
        assert got.num_rows == count
        assert got.to_pylist() == whole[c][start:start + count], pf.columns[c].name
        if got.codes is not None:
            assert len(got.codes) == count


def test_range_with_selection(layout_file):
    pf, whole = layout_file
    rng = np.random.default_rng(1)
    for start, count in [(0, 5000), (777, 3333), (N - 100, 100), (10, 0)]:
        mask = rng.random(count) < 0.4
        for c in range(len(pf.columns)):
            got = pf.read_column(0, c, mask, row_start=start, row_count=count).to_pylist()
            want = [v for v, keep in zip(whole[c][start:start + count], mask) if keep]
            assert got == want


def test_range_with_selection_skipping_pages(layout_file):
    """Masks with long false runs (whole pages skipped undecoded) and codes."""
    pf, whole = layout_file
    rng = np.random.default_rng(2)
    for start, count in [(0, N), (333, 9000), (N - 3000, 3000)]:
        runs = np.repeat(rng.random(count // 700 + 1) < 0.4, 700)[:count]
        mask = runs & (rng.random(count) < 0.7)
        for c in range(len(pf.columns)):
            got = pf.read_column(0, c, mask, row_start=start, row_count=count, codes=True)
            want = [v for v, keep in zip(whole[c][start:start + count], mask) if keep]
            assert got.to_pylist() == want, pf.columns[c].name
            assert got.num_rows == len(want)
            if got.codes is not None:
                assert len(got.codes) == len(want)
                assert np.array_equal(np.asarray(got.dictionary)[got.codes], got.values)


def test_bad_range_is_refused(layout_file):
    pf, _ = layout_file
    with pytest.raises(ValueError):
        pf.read_column(0, 0, row_start=N - 5, row_count=10)
    with pytest.raises(ValueError):
        pf.read_column(0, 0, np.ones(3, bool), row_start=0, row_count=10)


def test_concurrent_morsels_of_one_chunk(layout_file):
    """Many threads read interleaved morsels of the same chunks at once
    (pages decompressed once and shared, sparse offsets recorded while
    others read); repeated to catch races."""
    pf, whole = layout_file
    for rep in range(6):
        clear_chunk_states()
        size = [97, 1000, 4096][rep % 3]
        morsels = [(c, s) for c in range(len(pf.columns)) for s in range(0, N, size)]
        errors = []
        lock = threading.Lock()
        nxt = [0]

        def worker():
            while True:
                with lock:
                    if nxt[0] >= len(morsels):
                        return
                    c, s = morsels[nxt[0]]
                    nxt[0] += 1
                k = min(size, N - s)
                got = pf.read_column(0, c, row_start=s, row_count=k, codes=True).to_pylist()
                if got != whole[c][s:s + k]:
                    errors.append((c, s))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 3000), page=st.sampled_from([64, 256, 1024, 1 << 20]),
       dictionary=st.booleans(), nulls=st.booleans(), seed=st.integers(0, 1000),
       cuts=st.lists(st.floats(0, 1), min_size=1, max_size=6))
def test_hypothesis_ranges_match_pyarrow(tmp_path_factory, n, page, dictionary, nulls, seed, cuts):
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 7, n) * rng.integers(1, 3, n)
    strs = [("s" * int(x % 15)) + str(x) for x in rng.integers(0, 30, n)]
    if nulls:
        valid = rng.random(n) < 0.8
        table = pa.table({"i": pa.array(ints, type=pa.int64(), mask=~valid), "s": pa.array(strs, type=pa.string(), mask=~valid)})
    else:
        table = pa.table({"i": pa.array(ints), "s": pa.array(strs)})
    path = tmp_path_factory.mktemp("hyp") / "t.parquet"
    pq.write_table(table, path, row_group_size=n, data_page_size=page, use_dictionary=dictionary)
    pf = open_parquet(str(path), BufferManager())
    bounds = sorted({0, n, *(int(c * n) for c in cuts)})
    for c, name in enumerate(["i", "s"]):
        want = table.column(name).to_pylist()
        if name == "s":
            want = [None if v is None else v.encode() for v in want]
        got = []
        for a, b in zip(bounds, bounds[1:]):
            got += pf.read_column(0, c, row_start=a, row_count=b - a).to_pylist()
        assert got == want
