"""pqdb-tpch layout: the paper's Tab. 1 computed with pqdb's scan/."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scan import open_parquet
from scan.pages import DICTIONARY_PAGE, iter_pages
from tpch.layout import count_pages, directory_layout, discover_tables, markdown_layout
from tpch.queries import TABLES
from tpch.runner import main


def _pages_by_decoding(path):
    """Data pages per chunk counted the slow way: decompress every page."""
    out = []
    with open_parquet(path) as pf:
        for rg in pf.row_groups:
            for chunk in rg.columns:
                buf = pf.buffer_manager.get(pf.source, chunk.start, chunk.length)
                pages = list(iter_pages(np.asarray(buf), chunk.codec, chunk.num_values))
                out.append(sum(p.kind != DICTIONARY_PAGE for p in pages))
    return out


def test_layout_of_tpch_dir(tpch_sf001):
    layouts = directory_layout(tpch_sf001)
    assert [t.table for t in layouts] == sorted(TABLES)
    line = next(t for t in layouts if t.table == "lineitem")
    assert line.rows == 60175 and line.files == 1
    assert line.column_chunks == 16 * line.row_groups
    assert line.compression == ["snappy"]
    assert line.chunk_statistics == "all"
    assert "dict" in line.page_encodings
    assert line.size_bytes > 1_000_000
    text = markdown_layout(tpch_sf001, layouts)
    assert "| lineitem | 1 |" in text and "parquet-rs" in text


def test_page_counts_match_decoding(tmp_path):
    n = 50_000
    table = pa.table({"a": np.arange(n, dtype=np.int64),
                      "s": pa.array([f"v{i % 97}" for i in range(n)])})
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=20_000, data_page_size=4096,
                   compression="zstd", write_page_index=True)
    with open_parquet(path) as pf:
        fast = [count_pages(pf, c)[0] for rg in pf.row_groups for c in rg.columns]
    assert fast == _pages_by_decoding(path)
    assert max(fast) > 1
    (tmp_path / "t").mkdir()
    layouts = directory_layout(str(tmp_path))
    assert [t.table for t in layouts] == ["t"]
    t = layouts[0]
    assert t.row_groups == 3 and t.rows_per_row_group == [10_000, 16_667, 20_000]
    assert t.compression == ["zstd"] and t.column_index == "all"


def test_layout_of_parts_directory(tmp_path):
    folder = tmp_path / "orders"
    folder.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"x": np.arange(100 * (i + 1))}), str(folder / f"p{i}.parquet"),
                       compression="none")
    (folder / "_SUCCESS").write_text("")
    assert discover_tables(str(tmp_path)) == ["orders"]
    t = directory_layout(str(tmp_path))[0]
    assert t.files == 3 and t.rows == 600 and t.compression == ["uncompressed"]
    assert t.column_index == "none"


def test_layout_cli(tpch_sf001, tmp_path, capsys):
    out = tmp_path / "layout.json"
    assert main(["layout", tpch_sf001, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rows / row group" in text and "| total |" in text
    data = json.loads(out.read_text())
    assert {t["table"] for t in data[tpch_sf001]} == set(TABLES)


def test_layout_refuses_bad_file(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    from engine.errors import PqdbError
    with pytest.raises(PqdbError):
        directory_layout(str(tmp_path))
