"""Partitioned hash join build (engine/kernels/join_partition.py) end to end:
random data against DuckDB at 1, 2 and 8 threads with 1000-row blocks, every
join kind, NULL and duplicate keys, short and long string keys, multi-column
keys, and build sides cut into many partitions.  The row order of a join's
output must not depend on the thread count or the partition count."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
import engine.kernels.join_partition as join_partition
from engine.block import Block, Vector
from engine.context import MemoryTracker
from engine.errors import MemoryLimitError
from engine.operators import hashjoin, nljoin
from engine.operators.hashjoin import HashBuildSink
from engine.pipeline import BlockSource, Pipeline
from engine.scheduler import run_pipeline
from planner import types as T
from planner.expressions import ColumnRef
from tests.connections import duckdb_rows, pqdb_with_views
from tests.engine.test_executor_helpers import assert_rows_equal

THREADS = (1, 2, 8)
BLOCK_ROWS = 1000
# PARTITION_ROWS for the runs: the default (one partition for these sizes),
# and a small target that cuts the build sides into the most (32) partitions
PARTITION_TARGETS = (join_partition.PARTITION_ROWS, 64)

WORDS = ["a", "bb", "ccc", "", "twelve-bytes", "thirteen-byte", "a rather long string key #1",
         "a rather long string key #2", "Zebra", "zebra", "\u00e9clair au chocolat fourr\u00e9"]


def _table(rng, n: int, key_range: int, null_rate: float) -> pa.Table:
    def ints(hi):
        vals = rng.integers(0, hi, n)
        return pa.array([None if rng.random() < null_rate else int(v) for v in vals],
                        pa.int64())
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "k": ints(key_range),
        "k2": ints(60),
        "s": pa.array([None if rng.random() < null_rate else WORDS[i]
                       for i in rng.integers(0, len(WORDS), n)]),
        "s2": pa.array([WORDS[i] + str(j) for i, j in zip(rng.integers(0, len(WORDS), n),
                                                          rng.integers(0, 300, n))]),
        "v": pa.array(rng.integers(0, 100, n), pa.int64()),
    })


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("pjoin")
    rng = np.random.default_rng(2024)
    tables = {"t1": _table(rng, 3000, 700, 0.05),      # probe side
              "t2": _table(rng, 5000, 900, 0.05),      # build side (several blocks)
              "t3": _table(rng, 40, 10, 0.1)}          # small, for the cross join
    # u: build side with unique keys, for the scalar subquery (single join)
    tables["u"] = pa.table({"k": pa.array(rng.permutation(2000), pa.int64()),
                            "w": pa.array(rng.integers(0, 50, 2000), pa.int64())})
    paths = {}
    for name, tbl in tables.items():
        paths[name] = str(d / f"{name}.parquet")
        pq.write_table(tbl, paths[name], row_group_size=1700)
    return paths


def _runs(db, sql, monkeypatch, targets=PARTITION_TARGETS, threads=THREADS):
    """The result of sql for every (partition target, thread count)."""
    out = {}
    for target in targets:
        monkeypatch.setattr(join_partition, "PARTITION_ROWS", target)
        for t in threads:
            con = pqdb_with_views(db, threads=t, block_rows=BLOCK_ROWS)
            out[(target, t)] = [tuple(r) for r in con.sql(sql).fetchall()]
    return out


def _check(db, sql, monkeypatch, kinds=()):
    """Same rows as DuckDB, in the same order for every configuration; the
    plan uses the given join kinds."""
    seen = []
    for cls in (hashjoin.ProbeOperator, nljoin.NestedLoopJoin):   # keyed, keyless joins
        def spy(self, kind, *args, _init=cls.__init__, **kw):
            seen.append(kind)
            _init(self, kind, *args, **kw)
        monkeypatch.setattr(cls, "__init__", spy)
    want = duckdb_rows(sql, db)
    runs = _runs(db, sql, monkeypatch)
    first = next(iter(runs.values()))
    assert_rows_equal(first, want)
    for config, rows in runs.items():
        assert rows == first, f"row order differs for (partition rows, threads) = {config}"
    assert set(kinds) <= set(seen), (kinds, seen)


JOINS = [
    ("inner", "SELECT t1.id, t2.id, t2.v FROM t1 JOIN t2 ON {on}"),
    ("left", "SELECT t1.id, t2.id, t2.v FROM t1 LEFT JOIN t2 ON {on}"),
    ("right", "SELECT t1.id, t2.id, t2.v FROM t1 RIGHT JOIN t2 ON {on}"),
    ("full", "SELECT t1.id, t2.id, t2.v FROM t1 FULL JOIN t2 ON {on}"),
    # the subquery side (t2) is the bigger one: the table is built on t1
    ("right_semi", "SELECT t1.id FROM t1 WHERE EXISTS (SELECT * FROM t2 WHERE {on})"),
    ("right_anti", "SELECT t1.id FROM t1 WHERE NOT EXISTS (SELECT * FROM t2 WHERE {on})"),
    # the outer side (t2) is the bigger one: the table is built on the subquery
    ("semi", "SELECT t2.id FROM t2 WHERE EXISTS (SELECT * FROM t1 WHERE {on})"),
    ("anti", "SELECT t2.id FROM t2 WHERE NOT EXISTS (SELECT * FROM t1 WHERE {on})"),
    ("mark", "SELECT t1.id, EXISTS (SELECT * FROM t2 WHERE {on}) FROM t1"),
]
KEYS = {
    "int": "t1.k = t2.k",
    "string": "t1.s = t2.s AND t1.k2 = t2.k2",
    "long_strings": "t1.s2 = t2.s2",
    "int_string": "t1.k2 = t2.k2 AND t1.s = t2.s AND t1.k = t2.k",
    "two_strings": "t1.s = t2.s AND t1.s2 = t2.s2",
    "expression": "t1.k + 1 = t2.k * 2",
}


@pytest.mark.parametrize("kind, sql", JOINS, ids=[k for k, _ in JOINS])
@pytest.mark.parametrize("keys", list(KEYS))
def test_join_kinds(db, monkeypatch, kind, sql, keys):
    _check(db, sql.format(on=KEYS[keys]), monkeypatch, [kind])


@pytest.mark.parametrize("kind, sql", JOINS, ids=[k for k, _ in JOINS])
def test_join_kinds_with_residual(db, monkeypatch, kind, sql):
    _check(db, sql.format(on="t1.k = t2.k AND t1.v < t2.v + 20"), monkeypatch, [kind])


@pytest.mark.parametrize("sql", [
    "SELECT id, k IN (SELECT k FROM t2) FROM t1",
    "SELECT id, k NOT IN (SELECT k FROM t2 WHERE k IS NOT NULL) FROM t1",
    "SELECT id, s IN (SELECT s FROM t2 WHERE t2.k2 = t1.k2) FROM t1",
    "SELECT id, v IN (SELECT v FROM t2 WHERE t2.k = t1.k AND t2.id > t1.id) FROM t1",
])
def test_mark_in(db, monkeypatch, sql):
    _check(db, sql, monkeypatch, ["mark_in"])


def test_single(db, monkeypatch):
    _check(db, "SELECT id, (SELECT w FROM u WHERE u.k = t1.k) FROM t1", monkeypatch, ["single"])


def test_cross(db, monkeypatch):
    _check(db, "SELECT t3.id, t1.id FROM t3, t1 WHERE t1.v < 3", monkeypatch, ["cross"])


def test_scalar_subquery_with_duplicate_partners_fails(db, monkeypatch):
    monkeypatch.setattr(join_partition, "PARTITION_ROWS", 4)
    con = pqdb_with_views(db, threads=2, block_rows=BLOCK_ROWS)
    with pytest.raises(engine.errors.ExecutionError, match="More than one row"):
        con.sql("SELECT id, (SELECT v FROM t2 WHERE t2.k = t1.k) FROM t1").fetchall()


def test_build_side_larger_than_a_partition(tmp_path, monkeypatch):
    """A build side of several default-sized partitions (no patched target)."""
    n = 3 * join_partition.PARTITION_ROWS
    rng = np.random.default_rng(5)
    build = pa.table({"k": pa.array(rng.integers(0, n // 2, n), pa.int64()),
                      "x": pa.array(np.arange(n), pa.int64())})
    probe = pa.table({"k": pa.array(rng.integers(0, n, 20000), pa.int64()),
                      "y": pa.array(np.arange(20000), pa.int64())})
    paths = {"b": str(tmp_path / "b.parquet"), "p": str(tmp_path / "p.parquet")}
    pq.write_table(build, paths["b"], row_group_size=50000)
    pq.write_table(probe, paths["p"], row_group_size=7000)
    assert join_partition.partition_bits(n) >= 2
    sql = ("SELECT p.y, b.x FROM p LEFT JOIN (SELECT * FROM b) b ON p.k = b.k "
           "WHERE p.y % 7 = 0")
    want = duckdb_rows(sql, paths)
    runs = _runs(paths, sql, monkeypatch, targets=(join_partition.PARTITION_ROWS,),
                 threads=(1, 2))
    first = next(iter(runs.values()))
    assert_rows_equal(first, want)
    assert all(rows == first for rows in runs.values())


@pytest.mark.parametrize("target", PARTITION_TARGETS)
def test_partners_in_build_row_order(tmp_path, monkeypatch, target):
    """A probe row meets its partners in build (file) order (a left join:
    the larger input is the build side)."""
    n = 5000
    build = pa.table({"k": pa.array(np.arange(n) % 3, pa.int64()),
                      "x": pa.array(np.arange(n), pa.int64())})
    probe = pa.table({"k": pa.array([2, 0], pa.int64())})
    pq.write_table(build, tmp_path / "b.parquet", row_group_size=700)
    pq.write_table(probe, tmp_path / "p.parquet")
    monkeypatch.setattr(join_partition, "PARTITION_ROWS", target)
    for threads in THREADS:
        con = engine.connect(threads=threads, block_rows=BLOCK_ROWS)
        rows = con.sql(f"SELECT p.k, b.x FROM read_parquet('{tmp_path}/p.parquet') p "
                       f"LEFT JOIN read_parquet('{tmp_path}/b.parquet') b ON p.k = b.k").fetchall()
        xs = {k: [x for kk, x in rows if kk == k] for k in (0, 2)}
        assert xs[2] == list(range(2, n, 3)) and xs[0] == list(range(0, n, 3))


def test_memory_limit_is_a_clear_error(db):
    con = pqdb_with_views(db, threads=2, block_rows=BLOCK_ROWS, memory_limit="200KiB")
    with pytest.raises(MemoryLimitError):
        con.sql("SELECT t1.id, t2.id FROM t1 JOIN t2 ON t1.s2 = t2.s2").fetchall()


@pytest.mark.parametrize("threads", [1, 2])
def test_memory_reserved_for_the_table_and_released(threads):
    """The build holds its block and table bytes (the per-block keys only
    while building); release() returns them all."""
    n = 20000
    k = np.arange(n, dtype=np.int64) % 777
    nulls = (np.arange(n) % 13 == 0).astype(np.uint8)
    block = Block([Vector(T.BIGINT, k, nulls), Vector(T.BIGINT, np.arange(n, dtype=np.int64))], n)
    tracker = MemoryTracker(1 << 30)
    sink = HashBuildSink([T.BIGINT, T.BIGINT], [ColumnRef(0, T.BIGINT, "k")], tracker.child())
    table = run_pipeline(Pipeline(BlockSource(block, BLOCK_ROWS), [], sink), threads)
    assert table.reserved == tracker.used > (table.heads.nbytes + table.nxt.nbytes
                                             + table.b_hash.nbytes + table.b_keys.nbytes)
    chained = []
    for head in table.heads:
        row = int(head)
        while row >= 0:
            chained.append(row)
            row = int(table.nxt[row])
    assert sorted(chained) == list(np.flatnonzero(nulls == 0))     # NULL keys are not chained
    table.release()
    assert tracker.used == 0


def test_build_side_too_large_is_a_clear_error(db, monkeypatch):
    monkeypatch.setattr(hashjoin, "MAX_ROWS", 100)
    con = pqdb_with_views(db, threads=2, block_rows=BLOCK_ROWS)
    with pytest.raises(engine.errors.ExecutionError, match="too large"):
        con.sql("SELECT t1.id FROM t1 LEFT JOIN t2 ON t1.k = t2.k").fetchall()
