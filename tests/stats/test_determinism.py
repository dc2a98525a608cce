"""Registers, samples and synopses are the same whatever the thread count
and block size; synopses equal DuckDB's min / max / NULL count over the
same row ranges, from footer statistics or from decoded blocks."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stats.synopses import synopsis_bounds
from tests.stats.helpers import TYPES, connect, file_stats, table_sample, typed_columns

CONFIGS = [dict(threads=1), dict(threads=2), dict(threads=8),
           dict(threads=2, block_rows=1000, block_bytes="64KiB"),
           dict(threads=8, block_rows=4096, block_bytes="256KiB")]

LAYOUTS = {
    "groups": dict(row_group_size=70_000),                         # 5 row groups
    "one_group": dict(row_group_size=1 << 30),                     # cut into 100 ranges
    "many_groups": dict(row_group_size=2_000),                     # 150 groups -> 100
    "no_stats": dict(row_group_size=70_000, write_statistics=False),
    "dictionary": dict(row_group_size=1 << 30, use_dictionary=True),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("determinism")
    table = pa.table(typed_columns(20_000, 300_000, seed=7))
    out = {}
    for name, kw in LAYOUTS.items():
        path = str(d / f"{name}.parquet")
        pq.write_table(table, path, **kw)
        out[name] = path
    return out


def _collect(path: str, **options):
    con = connect(**options)
    con.sql(f"SELECT {', '.join(f'count({c})' for c in TYPES)} FROM '{path}'").fetchall()
    return file_stats(con, path), table_sample(con, [path])


def _synopsis_state(fs):
    out = {"bounds": fs.bounds.tolist()}
    for name, c in fs.columns.items():
        s = c.synopses
        out[name] = (c.registers, c.null_count,
                     [s.bounds_of(i) for i in range(len(s.null_counts))],
                     s.null_counts.tolist())
    return out


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_same_statistics_whatever_threads_and_blocks(files, layout):
    path = files[layout]
    ref_fs, ref_sample = _collect(path, **CONFIGS[0])
    assert set(ref_fs.columns) == set(TYPES)
    want = _synopsis_state(ref_fs)
    want_sample = {n: c.python_values() for n, c in ref_sample.columns.items()}
    for cfg in CONFIGS[1:]:
        fs, sample = _collect(path, **cfg)
        assert _synopsis_state(fs) == want, cfg
        assert np.array_equal(sample.positions, ref_sample.positions)
        got = {n: c.python_values() for n, c in sample.columns.items()}
        assert repr(got) == repr(want_sample), cfg      # (repr: NaN == NaN)


def _duck_storage(c: str) -> str:
    """DuckDB expression of column c in pqdb's storage form."""
    return {"dec": f"({c} * 100)::BIGINT", "dec9": f"({c} * 100)::BIGINT",
            "date": f"datediff('day', DATE '1970-01-01', {c})", "ts": f"epoch_us({c})",
            "str": f"{c}::BLOB"}.get(c, c)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_synopses_equal_duckdb_min_max(files, layout):
    path = files[layout]
    fs, _ = _collect(path, threads=2)
    sizes = [pq.ParquetFile(path).metadata.row_group(i).num_rows
             for i in range(pq.ParquetFile(path).metadata.num_row_groups)]
    bounds = synopsis_bounds(sizes, 100)
    assert fs.bounds.tolist() == bounds.tolist() and len(bounds) - 1 <= 100
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT *, file_row_number AS r FROM "
                f"read_parquet('{path}', file_row_number = true)")
    con.execute("CREATE TABLE b AS SELECT unnest(?::BIGINT[]) AS lo, unnest(?::BIGINT[]) AS hi",
                [bounds[:-1].tolist(), bounds[1:].tolist()])
    for c in TYPES:
        keep = f"NOT isnan({c})" if c in ("f64", "f32") else "TRUE"
        rows = con.execute(
            f"SELECT b.lo, min({_duck_storage(c)}) FILTER (WHERE {keep}), "
            f"max({_duck_storage(c)}) FILTER (WHERE {keep}), count(*) - count({c}) "
            f"FROM t JOIN b ON t.r >= b.lo AND t.r < b.hi GROUP BY b.lo ORDER BY b.lo").fetchall()
        syn = fs.columns[c].synopses
        assert len(rows) == len(syn.null_counts)
        for s, (_, lo, hi, nulls) in enumerate(rows):
            got_lo, got_hi = syn.bounds_of(s)
            if c == "f32" and lo is not None:
                lo, hi = float(np.float32(lo)), float(np.float32(hi))
            assert (got_lo, got_hi, int(syn.null_counts[s])) == (lo, hi, nulls), (c, s)


def test_synopsis_bounds():
    assert synopsis_bounds([1_000_000], 100).tolist() == list(range(0, 1_000_001, 10_000))
    assert synopsis_bounds([1000, 3000], 100).tolist() == [0, 1000, 4000]   # small: kept whole
    assert len(synopsis_bounds([100_000], 100)) - 1 == 48                   # >= 2048 rows each
    b = synopsis_bounds([10] * 250, 100)             # grouped, every cut a row-group end
    assert len(b) == 101 and all(x % 10 == 0 for x in b)
    b = synopsis_bounds([100_000, 5, 100_000], 100)  # small groups keep their own synopsis
    assert len(b) - 1 <= 100 and 100_000 in b and 100_005 in b
    assert synopsis_bounds([], 100).tolist() == [0]
