"""Join key filters (engine/filtering/join_keys.py): the scan under an
inner or semi join's probe side drops rows whose key has no partner in the
built table, before it decodes the other columns.  Results equal DuckDB's
with NULL keys on both sides, negative, int32, date and decimal keys,
multi-column keys, keys reached through projections and chains of joins,
an empty build side, key ranges too wide for a bitmap, and join kinds
that must keep every probe row (left, anti, mark); the scan reports the
rows it dropped; the bitmap's memory is reserved and given back."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.block import Vector
from engine.context import MemoryTracker
from engine.filtering import join_keys
from engine.filtering.join_keys import JoinKeyFilter
from engine.kernels.join_filter import BITMAP, KEY_SET, RANGE_ONLY
from planner import types as T
from tests.connections import pqdb_with_views
from tests.engine.test_executor_helpers import assert_matches_duckdb

CONFIGS = [(1, 1000), (2, 700)]
N = 30_000


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rng = np.random.default_rng(23)
    root = tmp_path_factory.mktemp("joinfilters")

    def opt(values, null_rate, typ):
        return pa.array(values, mask=rng.random(len(values)) < null_rate, type=typ)
    k = rng.integers(-5000, 5000, N)
    fact = pa.table({
        "k": opt(k, 0.03, pa.int64()),
        "k32": opt(k.astype(np.int32), 0.03, pa.int32()),
        "d": opt(np.datetime64("1995-01-01") + k.astype("timedelta64[D]"), 0.02, pa.date32()),
        "m": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in k], pa.decimal128(12, 2)),
        "wide": pa.array(k.astype(np.int64) * 1_000_000_007, pa.int64()),
        "j": pa.array(rng.integers(0, 4, N), pa.int64()),
        "v": pa.array(rng.random(N)),
        "s": pa.array([f"s{i}" for i in rng.integers(0, 500, N)]),
    })
    dk = rng.choice(np.arange(-5000, 5000), 300, replace=False)
    dim = pa.table({
        "k": opt(dk, 0.05, pa.int64()),
        "k32": opt(dk.astype(np.int32), 0.05, pa.int32()),
        "d": pa.array(np.datetime64("1995-01-01") + dk.astype("timedelta64[D]"), pa.date32()),
        "m": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in dk], pa.decimal128(12, 2)),
        "wide": pa.array(dk.astype(np.int64) * 1_000_000_007, pa.int64()),
        "j": pa.array(rng.integers(0, 4, len(dk)), pa.int64()),
        "name": pa.array([f"n{i}" for i in range(len(dk))]),
    })
    out = {}
    for name, t in (("fact", fact), ("dim", dim), ("none", dim.slice(0, 0))):
        out[name] = str(root / f"{name}.parquet")
        pq.write_table(t, out[name], row_group_size=7000)
    return out


QUERIES = [
    "SELECT f.k, f.v, d.name FROM fact f JOIN dim d ON f.k = d.k",
    "SELECT count(*), sum(f.v) FROM fact f JOIN dim d ON f.k32 = d.k32 WHERE f.v < 0.5",
    "SELECT f.d, d.name FROM fact f JOIN dim d ON f.d = d.d",
    "SELECT f.m, d.name FROM fact f JOIN dim d ON f.m = d.m",
    "SELECT f.k, d.name FROM fact f JOIN dim d ON f.k = d.k AND f.j = d.j",
    "SELECT f.k, d.name FROM fact f JOIN dim d ON f.j = d.j AND f.k = d.k AND f.v > 0.3",
    "SELECT count(*) FROM fact f JOIN dim d ON f.wide = d.wide",
    "SELECT f.wide, d.name FROM fact f JOIN dim d ON f.wide = d.wide AND d.j = 2",
    "SELECT x.kk, d.name FROM (SELECT k AS kk, v FROM fact WHERE v > 0.2) x "
    "JOIN dim d ON x.kk = d.k",
    # a chain: the fact scan probes two tables, each filters it
    "SELECT f.k, a.name, b.name FROM fact f JOIN dim a ON f.k = a.k JOIN dim b ON f.k32 = b.k32",
    "SELECT count(*) FROM fact f JOIN dim a ON f.k = a.k JOIN dim b ON f.j = b.j",
    "SELECT f.k, f.s FROM fact f WHERE f.k IN (SELECT k FROM dim WHERE j = 1)",
    "SELECT count(*) FROM fact f WHERE EXISTS (SELECT 1 FROM dim d WHERE d.k = f.k)",
    # every probe row kept: no filter may drop rows here
    "SELECT f.k, d.name FROM fact f LEFT JOIN dim d ON f.k = d.k",
    "SELECT count(*) FROM fact f WHERE f.k NOT IN (SELECT k FROM dim WHERE k IS NOT NULL)",
    "SELECT count(*) FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.k = f.k)",
    "SELECT f.k, f.k IN (SELECT k FROM dim) FROM fact f",
    # an empty build side
    "SELECT count(*) FROM fact f JOIN none d ON f.k = d.k",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_results_match_duckdb(tables, sql):
    assert_matches_duckdb(sql, tables, CONFIGS)


def test_the_scan_reports_the_rows_it_dropped(tables):
    con = pqdb_with_views(tables, threads=2)
    sql = "SELECT f.k, f.v, d.name FROM fact f JOIN dim d ON f.k = d.k"
    text = con.sql("EXPLAIN ANALYZE " + sql).fetchall()[0][-1]
    assert "join filter" in text, text
    con.sql("SET join_filters = false")
    text = con.sql("EXPLAIN ANALYZE " + sql).fetchall()[0][-1]
    assert "join filter" not in text, text


def test_the_bitmap_is_reserved_and_given_back(tables):
    memory = MemoryTracker(1 << 30)
    keys = Vector(T.BIGINT, np.array([5, 9, 1_000_000, -3], np.int64))
    f = JoinKeyFilter.from_keys(keys, memory)
    assert f.mode == BITMAP and memory.used == f.bits.nbytes > 0
    mask = np.empty(6, np.bool_)
    probe = Vector(T.BIGINT, np.array([5, 6, -3, 1_000_000, 1_000_001, 9], np.int64),
                   np.array([0, 0, 0, 0, 0, 1], np.uint8))
    assert f.and_into(probe, mask, True) == 3
    assert mask.tolist() == [True, False, True, True, False, False]
    f.release()
    assert memory.used == 0


def test_a_wide_key_range_is_tested_by_a_hash_set(monkeypatch):
    keys = Vector(T.BIGINT, np.array([0, 1 << 60, 12345, 12345], np.int64),
                  np.array([0, 0, 0, 1], np.uint8))
    memory = MemoryTracker(1 << 30)
    f = JoinKeyFilter.from_keys(keys, memory)
    assert f.mode == KEY_SET and memory.used > 0
    mask = np.ones(5, np.bool_)
    probe = np.array([-1, 7, 1 << 60, 0, 12345], np.int64)
    assert f.and_into(Vector(T.BIGINT, probe), mask, False) == 3
    assert mask.tolist() == [False, False, True, True, True]
    f.release()
    assert memory.used == 0
    # past MAX_SET_KEYS build keys: the range test alone
    monkeypatch.setattr(join_keys, "MAX_SET_KEYS", 2)
    g = JoinKeyFilter.from_keys(keys)
    assert g.mode == RANGE_ONLY
    mask = np.ones(5, np.bool_)
    assert g.and_into(Vector(T.BIGINT, probe), mask, False) == 4


@pytest.mark.parametrize("n", [1, 57, 5000])
def test_hash_set_membership_is_exact(n):
    rng = np.random.default_rng(n)
    keys = rng.integers(-(1 << 62), 1 << 62, n)
    f = JoinKeyFilter.from_keys(Vector(T.BIGINT, keys))
    probe = np.concatenate([keys, rng.integers(-(1 << 62), 1 << 62, 20_000), keys[::3] + 1])
    mask = np.empty(len(probe), np.bool_)
    kept = f.and_into(Vector(T.BIGINT, probe), mask, True)
    want = np.isin(probe, keys)
    assert mask.tolist() == want.tolist() and kept == int(want.sum())


def test_a_filter_that_keeps_most_rows_turns_off(monkeypatch):
    monkeypatch.setattr(join_keys, "TRIAL_ROWS", 100)
    f = JoinKeyFilter.from_keys(Vector(T.BIGINT, np.arange(1000, dtype=np.int64)))
    f.and_into(Vector(T.BIGINT, np.arange(200, dtype=np.int64)), np.empty(200, np.bool_), True)
    assert not f.active
    g = JoinKeyFilter.from_keys(Vector(T.BIGINT, np.arange(10, dtype=np.int64)))
    g.and_into(Vector(T.BIGINT, np.arange(200, dtype=np.int64)), np.empty(200, np.bool_), True)
    assert g.active


@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("build", [[-5, 0, 3, 100], [-(1 << 62), 1 << 62, 7], [7]])
def test_membership_is_exact_at_the_extremes(build, first):
    """Bitmap, key set and single-key filters against int64's extremes,
    keys just outside the range, NULL probe rows and a mask ANDed into."""
    f = JoinKeyFilter.from_keys(Vector(T.BIGINT, np.array(build, np.int64)))
    edge = [-(1 << 63), (1 << 63) - 1, -6, 101, -1, 8, 6, 1 << 62, -(1 << 62) - 1]
    probe = np.array(build + edge + build, np.int64)
    nulls = np.zeros(len(probe), np.uint8)
    nulls[-1] = 1
    prior = np.arange(len(probe)) % 3 != 1
    mask = prior.copy()
    kept = f.and_into(Vector(T.BIGINT, probe, nulls), mask, first)
    want = np.isin(probe, build) & (nulls == 0) & (True if first else prior)
    assert mask.tolist() == want.tolist() and kept == int(want.sum()), f.mode
