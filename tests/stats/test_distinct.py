"""Distinct estimates (HyperLogLog++, p = 14) within 2% of DuckDB's
count(DISTINCT) from 1 to 10M distinct values, for every type: integers,
decimals (INT64 and narrow), dates, timestamps, doubles and floats with
NaN and -0.0, strings with the empty string; NULLs in every column.

The estimates are the ones a scan collects (the first query reading the
columns) and pqdb_statistics reports."""

from __future__ import annotations

import struct

import duckdb
import numpy as np
import pytest
import xxhash
from datasketch import HyperLogLogPlusPlus

from stats import hll
from tests.stats.helpers import TYPES, connect, statistics_rows, write_typed

TOLERANCE = 0.02
SIZES = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000,
         pytest.param(10_000_000, marks=pytest.mark.slow)]


def _check(path: str) -> dict:
    con = connect(threads=2)
    cols = ", ".join(f"count({c})" for c in TYPES)
    con.sql(f"SELECT {cols} FROM '{path}'").fetchall()           # collects
    got = statistics_rows(con, path)
    duck = duckdb.connect()
    want = duck.execute("SELECT " + ", ".join(f"count(DISTINCT {c})" for c in TYPES)
                        + f" FROM '{path}'").fetchone()
    out = {}
    for c, w in zip(TYPES, want):
        est = got[c]["distinct_estimate"]
        out[c] = (est, w)
    return out


@pytest.mark.parametrize("distinct", SIZES)
def test_distinct_within_two_percent(tmp_path, distinct):
    rows = distinct if distinct >= 10_000_000 else 2 * distinct + 5
    path = write_typed(tmp_path / f"d{distinct}.parquet", distinct, rows)
    got = _check(path)
    bad = {c: (e, w) for c, (e, w) in got.items() if abs(e - w) > TOLERANCE * w}
    assert not bad, got


def test_registers_are_datasketch_registers():
    """The kernels fill datasketch's registers: index by the low 14 bits of
    XXH64, rank by the leading zeros of the rest."""
    values = np.random.default_rng(3).integers(-2**40, 2**40, 5000)
    regs = hll.new_registers()
    hll.add_int64(regs, values, hll.no_nulls(), 8)
    ref = HyperLogLogPlusPlus(p=14, hashfunc=xxhash.xxh64_intdigest)
    for v in values:
        ref.update(struct.pack("<q", int(v)))
    assert np.array_equal(ref.reg, regs)
    strings = [b"", b"a", b"longer than twelve bytes", "h\u00e9".encode()] * 3
    from scan.views import views_from_pylist
    views, heap, _ = views_from_pylist(strings)
    regs = hll.new_registers()
    hll.add_views(regs, hll.new_seen(), views, heap, hll.no_nulls())
    ref = HyperLogLogPlusPlus(p=14, hashfunc=xxhash.xxh64_intdigest)
    for s in strings:
        ref.update(s)
    assert np.array_equal(ref.reg, regs)


@pytest.mark.parametrize("n", [1, 7, 100, 1000, 9_000, 20_000, 60_000, 100_000, 1_000_000])
def test_estimator_agrees_with_hll_plus_plus(n):
    """count() (Ertl's improved estimator) against datasketch's HLL++
    (linear counting, empirical bias correction) on the same registers."""
    regs = hll.new_registers()
    hll.add_int64(regs, np.arange(n, dtype=np.int64) * 31 + 5, hll.no_nulls(), 8)
    ours, ref = hll.count(regs), HyperLogLogPlusPlus(reg=regs).count()
    assert abs(ours - ref) <= 0.005 * ref + 0.01, (ours, ref)


def test_packed_registers_round_trip_and_merge():
    a, b = hll.new_registers(), hll.new_registers()
    hll.add_int64(a, np.arange(0, 60_000, dtype=np.int64), hll.no_nulls(), 8)
    hll.add_int64(b, np.arange(40_000, 100_000, dtype=np.int64), hll.no_nulls(), 8)
    assert np.array_equal(hll.unpack(hll.pack(a)), a)
    both = hll.merge(a, b)
    assert abs(hll.count(both) - 100_000) < 0.02 * 100_000
    assert len(hll.pack(both)) < 16 * 1024


@pytest.mark.parametrize("p", [4, 10, 14, 16])
def test_packed_forms_round_trip(p):
    """Sparse (few registers set), nibbles around a base, and exceptions
    outside the base's 15 values all come back exactly."""
    rng = np.random.default_rng(p)
    for n in (0, 1, 5, 1000, 100_000):
        regs = hll.new_registers(p)
        hll.add_int64(regs, rng.integers(0, 1 << 62, n), hll.no_nulls(), 8)
        assert np.array_equal(hll.unpack(hll.pack(regs)), regs), n
    wide = np.full(1 << p, 30, np.int8)
    wide[::5] = 0
    wide[1] = 51
    wide[2] = 1
    packed = hll.pack(wide)
    assert np.array_equal(hll.unpack(packed), wide)
    assert len(packed) < (1 << p) // 2 + 3 * ((1 << p) // 5 + 4) + 3
