"""Shared helpers of the statistics tests: files with one column per type,
and reading what a connection's statistics store holds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import engine

TYPES = ("i64", "i32", "dec", "dec9", "date", "ts", "f64", "f32", "str")


def typed_columns(distinct: int, rows: int, seed: int = 0, null_share: float = 0.1) -> dict:
    """One column per type of TYPES, each with ``distinct`` non-NULL values
    (floats include 0.0, -0.0 and NaN among them, strings the empty string)
    spread over ``rows`` rows, about ``null_share`` of them NULL."""
    rng = np.random.default_rng(seed)
    idx = np.concatenate([rng.permutation(distinct),
                          rng.integers(0, distinct, max(rows - distinct, 0))])[:rows]
    nulls = rng.random(rows) < null_share
    # keep every value present at least once among non-NULL rows
    first = np.unique(idx, return_index=True)[1]
    nulls[first] = False
    mask = pa.array(nulls)
    ints = pa.array(idx.astype(np.int64))

    def masked(arr):
        return pc.if_else(mask, pa.nulls(rows, arr.type), arr)

    f64 = idx.astype(np.float64) * 1.5
    f64[idx == 1] = np.nan                         # NaN as one value
    zero = np.flatnonzero(idx == 0)
    f64[zero[::2]] = -0.0                          # -0.0 and 0.0 are one value
    f32 = idx.astype(np.float32)
    f32[idx == 1] = np.nan
    f32[zero[::2]] = np.float32(-0.0)
    strings = pc.binary_join_element_wise(pa.scalar("v"), pc.cast(ints, pa.string()), "")
    strings = pc.if_else(pc.equal(ints, 0), pa.scalar(""), strings)
    return {
        "i64": masked(pa.array(idx.astype(np.int64) * 2654435761 - (1 << 40))),
        "i32": masked(pa.array((idx - 5_000_000).astype(np.int32))),
        "dec": masked(decimals(idx.astype(np.int64) * 7 - 3_000_000, 15, 2)),
        "dec9": masked(decimals(idx.astype(np.int64) % 10_000_000, 9, 2)),
        "date": masked(pa.array(idx.astype(np.int32), pa.date32())),
        "ts": masked(pa.array(idx.astype(np.int64) * 1_000_003, pa.timestamp("us"))),
        "f64": masked(pa.array(f64)),
        "f32": masked(pa.array(f32)),
        "str": masked(strings),
    }


def decimals(unscaled: np.ndarray, precision: int, scale: int) -> pa.Array:
    """A decimal128 array of the given unscaled int64 values."""
    words = np.empty((len(unscaled), 2), np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(unscaled),
                                 [None, pa.py_buffer(words.tobytes())])


def write_typed(path, distinct: int, rows: int, **kw) -> str:
    pq.write_table(pa.table(typed_columns(distinct, rows)), str(path), **kw)
    return str(path)


def statistics_rows(con, spec: str) -> dict:
    """pqdb_statistics(spec) as {column: row dict}."""
    res = con.sql(f"SELECT * FROM pqdb_statistics('{spec}')")
    return {r[0]: dict(zip(res.columns, r)) for r in res.fetchall()}


def store_of(con):
    return con.catalog.statistics.store


def file_stats(con, path: str):
    return store_of(con).file(con.catalog.file_identity(path))


def table_sample(con, paths: list[str]):
    return store_of(con).sample(tuple(con.catalog.file_identity(p) for p in paths))


def connect(**options):
    return engine.connect(":memory:", **options)
