"""A number column chunk stored as dictionary pages only gives its
dictionary to the distinct count (every value is one of its entries)
when it has at most half as many entries as the morsel has rows: the
registers are those of hashing every row, and a chunk whose writer fell
back to PLAIN pages is hashed row by row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan.reader import ParquetFile
from tests.stats.helpers import TYPES, connect, file_stats, typed_columns

NUMBERS = [t for t in TYPES if t != "str"]


def _registers(path: str, threads: int) -> dict:
    con = connect(threads=threads)
    con.sql(f"SELECT {', '.join(f'count({c})' for c in TYPES)} FROM '{path}'").fetchall()
    return {name: np.asarray(c.registers).tolist()
            for name, c in file_stats(con, path).columns.items()}


@pytest.mark.parametrize("fallback", [False, True])
def test_dictionary_entries_give_the_rows_registers(tmp_path, monkeypatch, fallback):
    path = str(tmp_path / "d.parquet")
    options = dict(use_dictionary=True, row_group_size=50_000)
    if fallback:            # big dictionaries: the writer goes on in PLAIN pages
        options["dictionary_pagesize_limit"] = 8192
    pq.write_table(pa.table(typed_columns(20_000, 150_000, seed=3)), path, **options)
    given = []
    original = ParquetFile.chunk_dictionary

    def spy(self, rg, col, max_entries=None):
        got = original(self, rg, col, max_entries)
        given.append((self.columns[col].name, got is not None))
        return got
    monkeypatch.setattr(ParquetFile, "chunk_dictionary", spy)
    with_entries = {t: _registers(path, t) for t in (1, 2)}
    used = {name for name, got in given if got}
    if fallback:
        assert "i64" not in used and "dec" not in used         # 20k distinct: PLAIN pages
    else:
        assert set(NUMBERS) <= used
    monkeypatch.setattr(ParquetFile, "chunk_dictionary", lambda self, rg, col, most=None: None)
    rows_only = _registers(path, 1)
    for threads in (1, 2):
        assert with_entries[threads] == rows_only, threads
