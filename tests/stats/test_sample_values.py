"""The sample and the string synopses hold the file's values: sample
slot i is the value at sample position i (pyarrow reads the truth), for
short (inline) and long (heap) strings, NULLs, plain and dictionary
pages, with one and several threads; a string column's smallest synopsis
bound is its minimum, the largest its maximum."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.stats.helpers import connect, file_stats, table_sample

ROWS = 30_000


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sample_values")
    rng = np.random.default_rng(3)
    n = rng.integers(0, 40, ROWS)                   # 0..39 bytes: inline and heap strings
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    words = ["".join(rng.choice(letters, int(k))) for k in n]
    nulls = rng.random(ROWS) < 0.1
    strs = pa.array([None if z else w for w, z in zip(words, nulls)], pa.string())
    few = pa.array([None if z else f"value-{int(i) % 7:02d}-long-enough-for-the-heap"
                    for i, z in zip(rng.integers(0, 1000, ROWS), nulls)], pa.string())
    ints = pa.array(np.where(nulls, 0, rng.integers(-1000, 1000, ROWS)), mask=nulls)
    table = pa.table({"s": strs, "few": few, "i": ints})
    out = {}
    for name, kw in {"plain": dict(use_dictionary=False, row_group_size=7_000),
                     "dictionary": dict(use_dictionary=True, row_group_size=12_000)}.items():
        path = str(d / f"{name}.parquet")
        pq.write_table(table, path, **kw)
        out[name] = path
    return out


@pytest.mark.parametrize("layout", ["plain", "dictionary"])
@pytest.mark.parametrize("threads", [1, 3])
def test_sample_and_string_bounds_hold_the_files_values(files, layout, threads):
    path = files[layout]
    con = connect(threads=threads, block_rows=2048)
    con.sql(f"SELECT count(s), count(few), count(i) FROM '{path}'").fetchall()
    sample = table_sample(con, [path])
    truth = pq.read_table(path)
    pos = sample.positions.tolist()
    for name in ("s", "few", "i"):
        col = truth.column(name).to_pylist()
        want = [None if col[p] is None else
                (col[p].encode() if isinstance(col[p], str) else col[p]) for p in pos]
        assert sample.columns[name].python_values() == want, name
    fs = file_stats(con, path)
    for name in ("s", "few"):
        syn = fs.columns[name].synopses
        bounds = [syn.bounds_of(i) for i in range(len(syn.null_counts))]
        values = [v.encode() for v in truth.column(name).to_pylist() if v is not None]
        assert min(lo for lo, _ in bounds if lo is not None) == min(values)
        assert max(hi for _, hi in bounds if hi is not None) == max(values)
