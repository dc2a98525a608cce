"""Pruning by footer statistics, the page index and bloom filters
(engine/filtering/pruning.py): every rule is checked for correctness (rows
equal DuckDB's over the same data loaded as a table, so DuckDB's own Parquet
pruning plays no part) and effectiveness (the query's PruningCounters), and
adversarial files check that pruning never drops a row."""

from __future__ import annotations

import decimal
import math
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.filtering.pruning import ScanPruner, ValueRange, chunk_range, leaf_may_match
from engine.filtering.terms import Leaf

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "parquet-testing" / "data"
if not CORPUS.exists():
    CORPUS = Path("/work/shared/parquet-testing/data")


def _rows(rows):
    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, float):
            return round(v, 9) + 0.0
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v)
        if isinstance(v, decimal.Decimal):
            return float(v)
        return v
    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


def duck_rows(path, where, cols="*"):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{path}')")
    return con.execute(f"SELECT {cols} FROM t WHERE {where}").fetchall()


def pq_run(path, where, cols="*", block_rows=1024):
    con = engine.connect(config={"block_rows": block_rows, "threads": 2})
    res = con.sql(f"SELECT {cols} FROM '{path}' WHERE {where}")
    return res.fetchall(), res.pruning


def check(path, where, cols="*", **expect):
    """Rows equal DuckDB's; each counter in ``expect`` is at least its value
    (0 asserts the counter stayed 0)."""
    got, counters = pq_run(path, where, cols)
    assert _rows(got) == _rows(duck_rows(path, where, cols)), where
    for name, low in expect.items():
        value = getattr(counters, name)
        assert (value == 0) if low == 0 else (value >= low), (where, counters)
    return counters


def no_pruning(monkeypatch):
    monkeypatch.setattr(ScanPruner, "row_group_may_match", lambda self, *a, **k: True)
    monkeypatch.setattr(ScanPruner, "range_may_match", lambda self, *a, **k: True)


# ---- files -------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pruning")
    n = 8000
    i = np.arange(n, dtype=np.int64)
    nullable = pa.array([None if (k // 1000) % 2 else int(k) for k in range(n)], pa.int64())
    some_nulls = pa.array([None if k % 7 == 0 else int(k) for k in range(n)], pa.int64())
    base = pa.table({
        "i": i,
        "i32": (i - 4000).astype(np.int32),
        "s": pa.array([f"k{k:05d}" for k in range(n)]),
        "half_null": nullable,
        "some_null": some_nulls,
        "u32": pa.array((i * 600_000).astype(np.uint32), pa.uint32()),
        "u64": pa.array((i.astype(np.uint64) * np.uint64(2_400_000_000_000_000)), pa.uint64()),
        "d": pa.array([date(2000, 1, 1) + timedelta(days=int(k)) for k in range(n)], pa.date32()),
        "ts": pa.array([datetime(2020, 1, 1) + timedelta(seconds=int(k) * 37) for k in range(n)],
                       pa.timestamp("ms")),
        "dec": pa.array([decimal.Decimal(int(k) * 7 - 20000) / 100 for k in range(n)],
                        pa.decimal128(12, 2)),
        "f32": pa.array((i / 8.0).astype(np.float32)),
    })
    sorted_path = d / "sorted.parquet"
    pq.write_table(base, sorted_path, row_group_size=1000, max_rows_per_page=250,
                   write_page_index=True)
    one_group = d / "one_group.parquet"
    pq.write_table(base, one_group, row_group_size=n, max_rows_per_page=250,
                   write_page_index=True)
    dec_int = d / "dec_int.parquet"
    pq.write_table(base.select(["i", "dec"]), dec_int, row_group_size=1000,
                   store_decimal_as_integer=True, write_page_index=True)
    nostats = d / "nostats.parquet"
    pq.write_table(base, nostats, row_group_size=1000, write_statistics=False)
    rng = np.random.default_rng(7)
    keys = rng.permutation(n * 4)[:n]
    bloom = d / "bloom.parquet"
    pq.write_table(pa.table({"k": keys.astype(np.int64),
                             "ks": pa.array([f"x{k}" for k in keys]),
                             "kd": pa.array(rng.standard_normal(n))}),
                   bloom, row_group_size=1000,
                   bloom_filter_options={"k": {"ndv": 1000, "fpp": 0.01},
                                         "ks": {"ndv": 1000, "fpp": 0.01},
                                         "kd": True})
    f = np.concatenate([np.arange(2000) / 10.0, np.arange(2000) / 10.0])
    f[2500] = np.nan                     # a NaN in a group whose max excludes it
    f[100], f[101], f[3100] = -0.0, 0.0, -0.0
    floats = d / "floats.parquet"
    pq.write_table(pa.table({"f": f, "n": np.arange(len(f))}), floats, row_group_size=500,
                   max_rows_per_page=100, write_page_index=True)
    return dict(sorted=str(sorted_path), one_group=str(one_group), dec_int=str(dec_int), nostats=str(nostats),
                bloom=str(bloom), keys=keys, floats=str(floats))


# ---- row groups by footer statistics -------------------------------------------

@pytest.mark.parametrize("where,skipped", [
    ("i = 2500", 7), ("i < 1500", 6), ("i <= 999", 7), ("i > 6999", 7), ("i >= 7000", 7),
    ("i BETWEEN 3100 AND 3200", 7), ("i IN (5, 7005)", 6), ("i IN (5, NULL)", 7),
    ("i = NULL", 8), ("i < 500 OR i > 7500", 6), ("(i < 500 AND s > 'a') OR i = 4000", 6),
    ("i32 = -3990", 7), ("i32 = 3000000000", 8), ("i32 > 2.5", 4),
    ("s = 'k04321'", 7), ("s >= 'k07000'", 7), ("s < 'k01'", 7),
    ("half_null IS NULL", 4), ("half_null IS NOT NULL", 4), ("half_null = 1500", 8),
    ("some_null IS NULL", 0),
    ("u32 > 4000000000", 1), ("u32 < 600000", 6), ("u64 > 18000000000000000000", 6),
    ("d = DATE '2010-01-01'", 7), ("d < DATE '2000-02-01'", 7),
    ("ts > TIMESTAMP '2020-04-01 00:00:00'", 4), ("ts = TIMESTAMP '2020-01-01 00:00:37'", 7),
    ("CAST(d AS TIMESTAMP) >= TIMESTAMP '2021-01-01 00:00:00'", 7),
    ("dec > 300.00", 6), ("dec = -199.93", 7), ("dec BETWEEN -1.00 AND 1.00", 7),
    ("f32 <= 100.5", 6), ("f32 = 999.875", 7),
])
def test_row_group_rules(files, where, skipped):
    check(files["sorted"], where, row_groups_skipped=skipped)


@pytest.mark.parametrize("where", ["dec > 300.00", "dec = -199.93", "dec < -190"])
def test_decimals_stored_as_integers(files, where):
    check(files["dec_int"], where, row_groups_skipped=6)


@pytest.mark.parametrize("where", ["i = 2500", "s = 'k04321'", "i IS NULL", "dec > 300.00"])
def test_missing_statistics_never_prune(files, where):
    check(files["nostats"], where, row_groups_skipped=0, pages_skipped=0)


def test_unprunable_or_branch_keeps_everything(files):
    check(files["sorted"], "i = 5 OR s LIKE 'k07%'", row_groups_skipped=0)
    check(files["sorted"], "NOT (i < 7000)", row_groups_skipped=0)


# ---- pages by the page index --------------------------------------------------

@pytest.mark.parametrize("where", ["i BETWEEN 2100 AND 2200", "i = 4321", "s = 'k00555'",
                                   "i IN (10, 5990)", "i < 300 OR i > 7900"])
def test_page_index_skips_rows(files, where):
    check(files["sorted"], where, pages_skipped=1)
    # one row group cut into several morsels: morsels outside the pages are skipped
    check(files["one_group"], where, pages_skipped=20, rows_skipped=1000)


def test_page_index_nulls(files):
    check(files["sorted"], "half_null IS NOT NULL AND half_null < 100", row_groups_skipped=7)


# ---- bloom filters --------------------------------------------------------------

def test_bloom_filter_rejects_absent_values(files):
    present = set(files["keys"].tolist())
    absent = [k for k in range(1000, 40000, 97) if k not in present][:5]
    where = f"k IN ({', '.join(map(str, absent))})"
    check(files["bloom"], where, bloom_rejections=6)
    check(files["bloom"], f"ks = 'x{absent[0]}'", bloom_rejections=1)
    k = int(files["keys"][4321])
    check(files["bloom"], f"k = {k}")
    check(files["bloom"], f"ks = 'x{k}'")
    check(files["bloom"], f"k = {k} OR k = {absent[0]}")


def test_bloom_filter_of_doubles_and_zero(files):
    check(files["bloom"], "kd = 0.0")
    check(files["bloom"], "kd = -0.0")


def test_bloom_corpus_file():
    path = str(CORPUS / "data_index_bloom_encoding_stats.parquet")
    check(path, "\"String\" = 'Nope'", bloom_rejections=1)
    check(path, "\"String\" = 'Hello'", row_groups_skipped=0)


# ---- adversarial: NaN, zeros, truncation, orders --------------------------------

@pytest.mark.parametrize("where", ["f > 150", "f >= 199.9", "f > 1e300", "f < 0", "f = 0",
                                   "f = -0.0", "f <= -0.0", "f >= 0.0", "f IN (0.0, 5.5)",
                                   "f BETWEEN 10 AND 10.5", "f = 'NaN'::DOUBLE",
                                   "f > 'NaN'::DOUBLE", "f < 'NaN'::DOUBLE"])
def test_nan_and_zero_never_drop_rows(files, where, monkeypatch):
    got, counters = pq_run(files["floats"], where)
    no_pruning(monkeypatch)
    want, _ = pq_run(files["floats"], where)
    assert _rows(got) == _rows(want)
    if where in ("f < 0", "f = 0", "f = -0.0", "f <= -0.0"):
        assert _rows(got) == _rows(duck_rows(files["floats"], where))


def test_nan_rows_kept_for_greater_than(files):
    # group 5 (rows 2500..2999) holds the NaN with max 99.9: "> 150" must not skip it
    _, counters = pq_run(files["floats"], "f > 150")
    assert counters.row_groups_skipped == 0
    assert counters.rows_skipped == 0
    _, counters = pq_run(files["floats"], "f < 1")
    assert counters.row_groups_skipped == 5          # group 6 holds a -0.0


def test_nan_in_stats_corpus(monkeypatch):
    path = str(CORPUS / "nan_in_stats.parquet")
    _, counters = pq_run(path, "x > 100")            # max_value is NaN: unusable
    assert counters.row_groups_skipped == 0
    check(path, "x < 0", row_groups_skipped=1)       # NaN is never < 0
    check(path, "x = 1", row_groups_skipped=0)
    check(str(CORPUS / "single_nan.parquet"), "mycol IS NULL", row_groups_skipped=0)
    check(str(CORPUS / "single_nan.parquet"), "mycol IS NOT NULL", row_groups_skipped=1)


def test_unknown_column_order_disables_min_max():
    path = str(CORPUS / "floating_orders_nan_count.parquet")
    pf = engine.connect().catalog.open_file(path)
    assert chunk_range(pf, 0, 0).hi is None          # IEEE_754_TOTAL_ORDER: not ours
    assert chunk_range(pf, 0, 1).hi is not None      # TYPE_ORDER
    for where in ("float_ieee754 < -100", "double_ieee754 = 3.5", "float_typedef < -100"):
        got, _ = pq_run(path, where)
        assert len(got) == len(duck_rows(path, where)), where


@pytest.mark.parametrize("col", ["utf8_full_truncation", "binary_full_truncation",
                                 "utf8_partial_truncation", "binary_partial_truncation"])
def test_truncated_statistics(col):
    path = str(CORPUS / "binary_truncated_min_max.parquet")
    for value in ("Kevin Bacon", "Ke", "Alice Johnson", "Al"):
        lit = f"'{value}'" if col.startswith("utf8") else f"'{value}'::BLOB"
        check(path, f"{col} = {lit}")
        check(path, f"{col} >= {lit}")


def test_truncated_max_is_incremented():
    class Pf:
        pass
    from scan.metadata import ColumnInfo
    pf = Pf()
    col = ColumnInfo("s", 0, "BYTE_ARRAY", 0, False, 0, 0, "string")
    pf.columns = [col]
    pf.row_groups = [type("RG", (), {"num_rows": 10})()]
    stats = {"min_value": b"Al", "max_value": b"Ke", "null_count": 0,
             "is_max_value_exact": False, "is_min_value_exact": False}
    pf.metadata = type("M", (), {"raw": {"row_groups": [{"columns": [
        {"meta_data": {"statistics": stats}}]}], "column_orders": [{"TYPE_ORDER": {}}]}})()
    rng = chunk_range(pf, 0, 0)
    assert rng.hi == b"Kf" and rng.lo == b"Al"
    assert leaf_may_match(Leaf(0, "eq", (b"Kevin",)), rng)
    stats["max_value"] = b"K\xff\xff"
    assert chunk_range(pf, 0, 0).hi == b"L"
    stats["max_value"] = b"\xff\xff"
    assert chunk_range(pf, 0, 0).hi is None
    # deprecated min/max: never for byte arrays ...
    del stats["min_value"], stats["max_value"]
    stats.update(min=b"a", max=b"b")
    assert chunk_range(pf, 0, 0).lo is None
    # ... nor unsigned integers; yes for signed ones
    stats.update(min=(5).to_bytes(4, "little"), max=(9).to_bytes(4, "little"))
    pf.columns[0] = ColumnInfo("u", 0, "INT32", 0, False, 0, 0, "uint32")
    assert chunk_range(pf, 0, 0).lo is None
    pf.columns[0] = ColumnInfo("i", 0, "INT32", 0, False, 0, 0, "int32")
    assert (chunk_range(pf, 0, 0).lo, chunk_range(pf, 0, 0).hi) == (5, 9)
    pf.metadata.raw["column_orders"] = [{}]            # unknown order
    assert chunk_range(pf, 0, 0).lo is None


def test_value_range_rules():
    r = ValueRange(1, 5, 0, 10)
    assert not leaf_may_match(Leaf(0, "is_null"), r)
    assert not leaf_may_match(Leaf(0, "is_null"), ValueRange(None, None, None, 10, True))
    assert leaf_may_match(Leaf(0, "is_null"), ValueRange(None, None, None, 10))
    assert not leaf_may_match(Leaf(0, "is_not_null"), ValueRange(None, None, 10, 10))
    assert not leaf_may_match(Leaf(0, "eq", (3,)), ValueRange(None, None, 10, 10))
    assert leaf_may_match(Leaf(0, "gt", (9.0,), (), True), ValueRange(1.0, 5.0, 0, 10))
    assert not leaf_may_match(Leaf(0, "gt", (9,)), r)
    assert not leaf_may_match(Leaf(0, "in", (None, 7)), r)
    assert leaf_may_match(Leaf(0, "eq", (0.0,), (), True), ValueRange(-0.0, 1.0, 0, 3))


def test_int96_and_missing_stats_corpus():
    path = str(CORPUS / "int96_from_spark.parquet")
    pf = engine.connect().catalog.open_file(path)
    assert chunk_range(pf, 0, 0).lo is None


def test_null_pages_corpus():
    path = str(CORPUS / "int32_with_null_pages.parquet")
    for where in ("int32_field IS NULL", "int32_field IS NOT NULL", "int32_field > 0",
                  "int32_field = -1"):
        check(path, where)


def test_tiny_pages_corpus():
    path = str(CORPUS / "alltypes_tiny_pages.parquet")
    check(path, "id BETWEEN 100 AND 120", "id, string_col", pages_skipped=1)
    check(path, "bigint_col = 20 AND id < 50")


# ---- random data and predicates ------------------------------------------------

_OPS = ["=", "<", "<=", ">", ">="]


@st.composite
def _cases(draw):
    n = draw(st.integers(1, 300))
    ints = draw(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=n, max_size=n))
    strs = draw(st.lists(st.one_of(st.none(), st.text("ab\u00e9\U0001f600", max_size=3)),
                         min_size=n, max_size=n))
    sort = draw(st.booleans())
    if sort:
        ints = sorted(ints, key=lambda v: (v is None, v or 0))
    preds = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["int", "in", "null", "str", "or"]))
        v = draw(st.integers(-60, 60))
        if kind == "int":
            preds.append(f"a {draw(st.sampled_from(_OPS))} {v}")
        elif kind == "in":
            vals = draw(st.lists(st.one_of(st.none(), st.integers(-60, 60)), min_size=1,
                                 max_size=4))
            preds.append("a IN (" + ", ".join("NULL" if x is None else str(x) for x in vals) + ")")
        elif kind == "null":
            preds.append(draw(st.sampled_from(["a IS NULL", "a IS NOT NULL",
                                               "b IS NULL", "b IS NOT NULL"])))
        elif kind == "str":
            s = draw(st.text("ab\u00e9\U0001f600", max_size=3)).replace("'", "''")
            preds.append(f"b {draw(st.sampled_from(_OPS))} '{s}'")
        else:
            preds.append(f"(a {draw(st.sampled_from(_OPS))} {v} OR a {draw(st.sampled_from(_OPS))} "
                         f"{draw(st.integers(-60, 60))})")
    rg = draw(st.integers(5, 100))
    page = draw(st.integers(1, 20))
    return ints, strs, rg, page, " AND ".join(preds)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_cases())
def test_random_predicates_match_duckdb(case, tmp_path_factory):
    ints, strs, rg, page, where = case
    path = tmp_path_factory.mktemp("rand") / "r.parquet"
    pq.write_table(pa.table({"a": pa.array(ints, pa.int64()), "b": pa.array(strs, pa.string()),
                             "r": np.arange(len(ints))}),
                   path, row_group_size=rg, max_rows_per_page=page, write_page_index=True,
                   bloom_filter_options={"a": True, "b": True})
    got, _ = pq_run(str(path), where, "r", block_rows=64)
    assert _rows(got) == _rows(duck_rows(str(path), where, "r")), where
