"""Independent pipelines run as one job (engine.scheduler.run_pipelines):
the hash builds of a probe chain.  Each sink's result must equal what the
pipeline gives alone, at every thread count; an error in one pipeline
reaches the caller; and a star join's builds go through it, with DuckDB's
rows at 1, 2 and 8 threads."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine.executor as executor
from engine.block import Block, Vector
from engine.operators.collect import CollectSink
from engine.pipeline import BlockSource, Operator, Pipeline
from engine.scheduler import run_pipeline, run_pipelines
from planner import types as T
from tests.connections import duckdb_rows, pqdb_with_views
from tests.engine.test_executor_helpers import assert_rows_equal


def _pipeline(n: int, rows_per_morsel: int, ops=()) -> Pipeline:
    block = Block([Vector(T.BIGINT, np.arange(n, dtype=np.int64) * 7 + n)], n)
    return Pipeline(BlockSource(block, rows_per_morsel), list(ops), CollectSink([T.BIGINT]))


SHAPES = [(5, 10), (250, 100), (10_000, 97), (0, 10), (3000, 3000), (64, 1)]


class _Slow(Operator):
    """Sleeps a little per block (releasing the GIL), so that every thread
    gets morsels and the sinks' thread-local states really are merged."""

    def process(self, block):
        time.sleep(0.0002)
        return [block]


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_each_result_equals_the_pipeline_alone(threads):
    want = [run_pipeline(_pipeline(n, r), 1).columns[0].data.tolist() for n, r in SHAPES]
    for _ in range(10):                 # repeated: the interleaving differs run to run
        got = run_pipelines([_pipeline(n, r, [_Slow()]) for n, r in SHAPES], threads)
        assert [b.columns[0].data.tolist() for b in got] == want


class _Fails(Operator):
    def process(self, block):
        if block.columns[0].data[0] > 5000:
            raise ValueError("broken morsel")
        return [block]


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_an_error_in_one_pipeline_reaches_the_caller(threads):
    pipelines = [_pipeline(10_000, 50), _pipeline(6000, 100, [_Fails()]), _pipeline(7, 7)]
    with pytest.raises(ValueError, match="broken morsel"):
        run_pipelines(pipelines, threads)


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    d = tmp_path_factory.mktemp("star")
    rng = np.random.default_rng(7)
    n = 60_000
    tables = {
        "fact": pa.table({"id": np.arange(n), "a": rng.integers(0, 50, n), "b": rng.integers(0, 3000, n),
                          "c": rng.integers(0, 20_000, n), "v": rng.integers(0, 1000, n)}),
        "da": pa.table({"ak": np.arange(50), "aname": [f"a{i}" for i in range(50)]}),
        "db": pa.table({"bk": np.arange(3000), "bgrp": rng.integers(0, 9, 3000)}),
        "dc": pa.table({"ck": np.arange(0, 20_000, 10), "cw": rng.integers(0, 5, 2000)}),
    }
    paths = {}
    for name, tbl in tables.items():
        paths[name] = str(d / f"{name}.parquet")
        pq.write_table(tbl, paths[name], row_group_size=7000)
    return paths


STAR_SQL = """
SELECT aname, bgrp, count(*), sum(v + c)
FROM fact JOIN da ON a = ak JOIN db ON b = bk
WHERE v < 900 AND bgrp <> 3 AND c IN (SELECT ck FROM dc WHERE cw < 4)
GROUP BY aname, bgrp ORDER BY aname, bgrp"""


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_star_join_builds_together(star, monkeypatch, threads):
    calls = []

    def spy(pipelines, t):
        calls.append(len(pipelines))
        return run_pipelines(pipelines, t)
    monkeypatch.setattr(executor, "run_pipelines", spy)
    con = pqdb_with_views(star, threads=threads, block_rows=2048)
    assert_rows_equal(con.sql(STAR_SQL).fetchall(), duckdb_rows(STAR_SQL, star), ordered=True)
    # one chain of three probes: its three tables are built in one job
    assert calls == ([] if threads == 1 else [3])
