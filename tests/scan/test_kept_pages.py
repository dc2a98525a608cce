"""Decompressed PLAIN pages kept with their cached chunk (scan/kept_pages.py):
charged to the chunk, read instead of decompressing again, filled by
concurrent range reads, never kept for strings, over a quarter of the budget
or outside a buffer manager -- and the values always equal pyarrow's."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import open_parquet
from scan.io.buffer_manager import BufferManager
from scan.pages import chunk_memo
from scan.kept_pages import kept_pages
from scan.required_chunk import decode_required_chunk, page_table
from scan.row_ranges import clear_chunk_states


def _table(n: int, nulls: bool, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.integers(-10**12, 10**12, n)
    mask = (rng.random(n) < 0.05) if nulls else None
    return pa.table({
        "i64": pa.array(v, pa.int64()),
        "i32": pa.array((v % 100_000).astype(np.int32), pa.int32()),
        "f64": pa.array(v / 7.0, pa.float64()),
        "dec": pa.array([Decimal(int(x) % 10**13) / 100 for x in v], pa.decimal128(15, 2)),
        "opt": pa.array(v * 3, pa.int64(), mask=mask),
        "s": pa.array([f"s{x % 977}" for x in v]),
    })


def _write(tmp_path, table, **kw) -> str:
    path = str(tmp_path / "t.parquet")
    opts = dict(compression="snappy", use_dictionary=False, data_page_size=8 << 10)
    opts.update(kw)
    pq.write_table(table, path, **opts)
    return path


def _kept(pf, c, rg=0):
    ch = pf.row_groups[rg].columns[c]
    buf = pf.buffer_manager.get(pf.source, ch.start, ch.length)
    memo = chunk_memo(buf)
    return buf, ch, memo.get("kept-plain-pages") if memo is not None else None


def _want(table, name):
    col = table.column(name)
    if pa.types.is_decimal(col.type):
        return [None if x is None else int(x.scaleb(2)) for x in col.to_pylist()]
    return col.to_pylist()


def _got(cv):
    values = cv.values.tolist()
    if cv.nulls is not None:
        values = [None if nul else v for v, nul in zip(values, cv.nulls.tolist())]
    return values


@pytest.mark.parametrize("nulls", [False, True])
def test_plain_pages_are_kept_charged_and_read_again(tmp_path, nulls):
    n = 30_000
    table = _table(n, nulls)
    path = _write(tmp_path, table)
    bm = BufferManager(256 << 20)
    pf = open_parquet(path, bm)
    rng = np.random.default_rng(1)
    for name in ("i64", "i32", "f64", "dec", "opt"):
        c = pf.column_index(name)
        want = _want(table, name)
        _kept(pf, c)                                     # the chunk cached first
        before = bm.bytes_cached
        assert _got(pf.read_column(0, c)) == want, name
        buf, ch, kept = _kept(pf, c)
        assert kept is not None and (kept.state == 2).all(), name
        assert len(kept.offsets) > 3 and (kept.offsets >= 0).all()
        assert bm.bytes_cached == before + kept.arena.nbytes, name    # charged once
        rows = rng.random(n) < 0.2
        got = pf.read_column(0, c, rows)
        assert _got(got) == [w for w, r in zip(want, rows) if r], name
        assert _kept(pf, c)[2] is kept and bm.bytes_cached == before + kept.arena.nbytes
        # later reads come from the arena: the compressed bytes are not read
        saved = buf.copy()
        buf[:] = 0
        again = decode_required_chunk(buf, pf.columns[c], ch, n, True, None, False)
        buf[:] = saved
        assert again is not None and _got(again) == want, name
    s = pf.column_index("s")
    assert pf.read_column(0, s).values is not None
    assert _kept(pf, s)[2] is None                       # strings: never kept
    bm.invalidate()
    assert bm.bytes_cached == 0                          # the arenas went with their chunks


@pytest.mark.parametrize("nulls", [False, True])
def test_a_sparse_selection_fills_every_page_it_claims(tmp_path, nulls):
    """The first read of a chunk selects a few rows: pages without a
    selected row are skipped, but not the kept slots it fills, so later
    reads of every row (from the slots) equal pyarrow."""
    n = 30_000
    table = _table(n, nulls, seed=7)
    path = _write(tmp_path, table)
    pf = open_parquet(path, BufferManager(256 << 20))
    rng = np.random.default_rng(8)
    for name in ("i64", "dec", "opt"):
        c = pf.column_index(name)
        want = _want(table, name)
        rows = np.zeros(n, bool)
        rows[rng.integers(0, n, 4)] = True
        assert _got(pf.read_column(0, c, rows)) == [w for w, r in zip(want, rows) if r], name
        buf, ch, kept = _kept(pf, c)
        assert kept is not None and (kept.state == 2).all(), name
        saved = buf.copy()
        buf[:] = 0                               # every page from its slot now
        again = decode_required_chunk(buf, pf.columns[c], ch, n, True, None, False)
        buf[:] = saved
        assert again is not None and _got(again) == want, name


def test_concurrent_ranges_fill_the_pages_they_read(tmp_path):
    """Morsel-like ranges read at once by several threads, cut inside pages
    and across them: every range equals pyarrow, afterwards every page
    wholly inside a range is kept, and reading them again gives the same
    rows."""
    n = 60_000
    table = _table(n, True, seed=2)
    path = _write(tmp_path, table, data_page_size=4 << 10)
    bm = BufferManager(256 << 20)
    pf = open_parquet(path, bm)
    rng = np.random.default_rng(5)
    cuts = np.unique(np.concatenate([[0, n], rng.integers(1, n, 24)]))
    ranges = list(zip(cuts[:-1].tolist(), np.diff(cuts).tolist()))
    for name in ("i64", "dec", "opt"):
        c = pf.column_index(name)
        want = _want(table, name)
        for rnd in range(2):
            clear_chunk_states()
            with ThreadPoolExecutor(4) as pool:
                got = list(pool.map(
                    lambda r: _got(pf.read_column(0, c, row_start=r[0], row_count=r[1])),
                    ranges))
            assert sum(got, []) == want, (name, rnd)
        buf, ch, kept = _kept(pf, c)
        pages = page_table(buf, ch.num_values, True, pf.columns[c].max_def_level)
        firsts = np.concatenate([[0], np.cumsum(pages.nvals)])
        inside = [any(a <= firsts[i] and firsts[i + 1] <= a + k for a, k in ranges)
                  for i in range(len(pages.nvals))]
        assert kept is not None and sum(inside) > 10, name
        assert (kept.state[np.array(inside)] == 2).all(), name    # (pages cut by a range: shared path)


def test_dictionary_fallback_keeps_only_the_plain_pages(tmp_path):
    n = 40_000
    table = _table(n, False, seed=3)
    path = _write(tmp_path, table, use_dictionary=True, dictionary_pagesize_limit=16 << 10)
    bm = BufferManager(256 << 20)
    pf = open_parquet(path, bm)
    c = pf.column_index("i64")
    assert _got(pf.read_column(0, c)) == _want(table, "i64")
    kept = _kept(pf, c)[2]
    assert kept is not None
    assert (kept.offsets < 0).any() and (kept.offsets >= 0).any()   # dictionary pages: no slot
    assert _got(pf.read_column(0, c)) == _want(table, "i64")


def test_not_kept_over_a_quarter_of_the_budget_or_outside_a_manager(tmp_path):
    n = 30_000
    table = _table(n, False, seed=4)
    path = _write(tmp_path, table)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0).total_compressed_size
    bm = BufferManager(3 * chunk)      # the chunk fits; its arena (>= 3/4 of it) is too large
    pf = open_parquet(path, bm)
    assert _got(pf.read_column(0, 0)) == _want(table, "i64")
    assert _kept(pf, 0)[2] is None
    pf2 = open_parquet(path, BufferManager(256 << 20))
    ch = pf2.row_groups[0].columns[0]
    own = np.empty(ch.length, np.uint8)          # a buffer of its own: nothing is kept
    from scan.io.source import as_source
    as_source(path).read_into(ch.start, own)
    got = decode_required_chunk(own, pf2.columns[0], ch, n, True, None, False)
    assert got.values.tolist() == _want(table, "i64")
    memo = chunk_memo(own)
    assert memo is None or memo.get("kept-plain-pages") is None


def test_a_page_claimed_by_another_read_is_not_read_from_its_slot(tmp_path):
    """While one read fills a page (its slot half written), another read of
    the page decompresses it into its own scratch; claims given back are
    filled by the next read; once every page is filled no claim is made."""
    n = 30_000
    table = _table(n, False, seed=6)
    path = _write(tmp_path, table)
    bm = BufferManager(256 << 20)
    pf = open_parquet(path, bm)
    c = pf.column_index("i64")
    want = _want(table, "i64")
    buf, ch, _ = _kept(pf, c)
    col = pf.columns[c]
    pages = page_table(buf, ch.num_values, True, col.max_def_level)
    kept = kept_pages(buf, chunk_memo(buf), pages, 1)
    busy = len(kept.offsets) // 2
    slots, fill = kept.claim(0, busy)                 # "another read" mid-fill
    assert fill.all() and (slots >= 0).all()
    kept.arena[:] = 0xAB                              # its half-written slots
    got = decode_required_chunk(buf, col, ch, n, True, None, False)
    assert got.values.tolist() == want
    assert (kept.state[:busy] == 1).all() and (kept.state[busy:] == 2).all()
    assert not kept.complete
    kept.settle(0, busy, fill, False)                 # that read failed: claims back
    assert (kept.state[:busy] == 0).all()
    assert decode_required_chunk(buf, col, ch, n, True, None, False).values.tolist() == want
    assert (kept.state == 2).all() and kept.complete
    assert len(kept.claim(0, len(kept.offsets))[1]) == 0     # nothing left to fill
    buf[:] = 0                                        # (and the compressed bytes are not read)
    assert decode_required_chunk(buf, col, ch, n, True, None, False).values.tolist() == want


def test_page_ranges_are_remembered_within_a_bound(tmp_path):
    """PageTable.pages gives each range's slices and totals, and remembers
    at most RANGES_KEPT ranges however many are asked for."""
    from scan.required_chunk import RANGES_KEPT
    path = _write(tmp_path, _table(30_000, False, seed=7), data_page_size=2 << 10)
    pf = open_parquet(path, BufferManager(256 << 20))
    buf, ch, _ = _kept(pf, 0)
    pages = page_table(buf, ch.num_values, True, pf.columns[0].max_def_level)
    n = len(pages.nvals)
    assert n > 20
    for p0 in range(n):
        for p1 in (p0 + 1, n):
            got = pages.pages(p0, p1)
            assert np.array_equal(got[0], pages.starts[p0:p1])
            assert got[6] == int(pages.nvals[p0:p1].sum())
            assert got[8] == int(pages.usizes[p0:p1].max())
            assert len(pages._ranges) <= RANGES_KEPT
