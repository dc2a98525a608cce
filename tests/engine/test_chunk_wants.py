"""A query tells the buffer manager, at its start, the chunks its scans
will read (engine/operators/chunk_wants.py): the misses of its first scan
do not evict the cached chunks a later scan of the same query hits."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import engine


def _io(con, sql):
    text = con.sql("EXPLAIN ANALYZE " + sql).fetchall()[0][-1]
    m = re.search(r"bytes fetched ([\d,]+), bytes from cache ([\d,]+)", text)
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


def test_a_later_scans_cached_chunks_survive_an_earlier_scans_misses(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        pq.write_table(pa.table({"x": rng.integers(0, 1 << 60, 60_000)}),
                       tmp_path / f"{name}.parquet", row_group_size=20_000,
                       compression="none", use_dictionary=False)
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    chunk = pq.ParquetFile(a).metadata.row_group(0).column(0).total_compressed_size
    con = engine.connect(threads=1, statistics=False)
    con.sql(f"SET buffer_memory = {3 * chunk + chunk // 2}")     # a's three chunks fit
    only_a = f"SELECT sum(x) FROM '{a}'"
    both = f"SELECT count(*) FROM (SELECT x FROM '{b}' UNION ALL SELECT x FROM '{a}')"
    want = con.sql(f"SELECT count(*) FROM (SELECT x FROM read_parquet(['{b}', '{a}']))")
    assert want.fetchall() == [(120_000,)]
    con.sql(only_a).fetchall()
    con.sql(only_a).fetchall()                   # a cached
    fetched, cached = _io(con, both)             # b's misses first, then a
    assert cached >= 3 * chunk, (fetched, cached)
    assert con.sql(both).fetchall() == [(120_000,)]
