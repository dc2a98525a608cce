"""The fuzzer's data: small tables full of edge values (NULLs, NaN, -0.0,
infinities, empty and non-ASCII strings, DECIMAL(38) extremes, INT64_MIN /
MAX, dates at the ends of years 1-9999), written as Parquet by DuckDB, and
the TPC-H SF0.01 tables.  Both engines get the same views."""

from __future__ import annotations

import random
from pathlib import Path

# column -> (SQL type, value pool); values are SQL literals
_POOLS = {
    "k": ("INTEGER", ["0", "1", "2", "3", "4", "NULL"]),
    "i": ("INTEGER", ["0", "1", "-1", "7", "-13", "100", "2147483647", "-2147483648", "NULL"]),
    "ti": ("TINYINT", ["0", "1", "-1", "127", "-128", "5", "NULL"]),
    "b": ("BIGINT", ["0", "1", "-1", "9223372036854775807", "-9223372036854775808",
                     "4294967296", "-77", "NULL"]),
    "d": ("DECIMAL(10,2)", ["0.00", "1.50", "-2.25", "99999999.99", "-99999999.99", "0.01",
                            "3.00", "NULL"]),
    "w": ("DECIMAL(38,10)", ["0", "1.5", "-0.0000000001", "9999999999999999999999999999.9999999999",
                             "-9999999999999999999999999999.9999999999", "12345678901234567.89",
                             "NULL"]),
    "f": ("DOUBLE", ["0.0", "-0.0", "1.5", "-2.25", "'nan'", "'inf'", "'-inf'", "1e10", "0.125",
                     "NULL"]),
    "s": ("VARCHAR", ["''", "'a'", "'abc'", "'ABC'", "'straße'", "'İx'", "'a%b_c'",
                      "'  pad  '", "'a longer string past twelve bytes'", "'Ω≈ç'", "NULL"]),
    "dt": ("DATE", ["DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1970-01-01'",
                    "DATE '1969-12-31'", "DATE '2000-02-29'", "DATE '2024-01-15'", "NULL"]),
    # dates in a middle range: the only ones date arithmetic is applied to
    "dm": ("DATE", ["DATE '1995-03-15'", "DATE '2000-02-29'", "DATE '2024-12-31'",
                    "DATE '1970-01-01'", "DATE '1992-01-01'", "NULL"]),
    "ts": ("TIMESTAMP", ["TIMESTAMP '1995-03-15 10:20:30'", "TIMESTAMP '2000-02-29 00:00:00'",
                         "TIMESTAMP '1969-12-31 23:59:59.999999'", "NULL"]),
    "bo": ("BOOLEAN", ["true", "false", "NULL"]),
    "sm": ("SMALLINT", ["0", "-32768", "32767", "5", "-5", "NULL"]),
    "r": ("FLOAT", ["0.125", "-1.5", "3.4e38", "1e-40", "'nan'", "16777217", "NULL"]),
    "ub": ("UINTEGER", ["0", "1", "4294967295", "7", "NULL"]),
}

# name -> number of rows (t0 is empty: aggregates and joins over no rows)
SMALL = {"t1": 24, "t2": 16, "t3": 9, "t0": 0}
TPCH = ("nation", "region", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


def _small_select(name: str, rows: int) -> str:
    rng = random.Random(f"pqdb-fuzz-{name}")         # fixed data, whatever the seed
    cols = list(_POOLS)
    if rows == 0:
        casts = ", ".join(f"NULL::{_POOLS[c][0]} AS {c}" for c in cols)
        return f"SELECT 1 AS id, {casts} LIMIT 0"
    lines = []
    for r in range(rows):
        vals = [str(r + 1)] + [f"CAST({rng.choice(_POOLS[c][1])} AS {_POOLS[c][0]})" for c in cols]
        lines.append("(" + ", ".join(vals) + ")")
    return (f"SELECT * FROM (VALUES {', '.join(lines)}) AS v(id, {', '.join(cols)})")


# layout "split": every table rewritten (by pyarrow) as a few files (a
# read_parquet list), each in row groups of a few rows and pages of fewer,
# with the page index and bloom filters, t2 without footer statistics, so
# that footer pruning, the page index, bloom filters and the synopses pqdb
# collects skip data in the queries that follow (layout "one": DuckDB's
# files, one row group each, nothing to skip).
SPLIT_SMALL = {"t1": dict(row_group_size=4, max_rows_per_page=2),
               "t2": dict(row_group_size=3, max_rows_per_page=1, write_statistics=False),
               "t3": dict(row_group_size=2, max_rows_per_page=1),
               "t0": dict(row_group_size=2)}
SPLIT_TPCH = dict(row_group_size=700, max_rows_per_page=150)
SPLIT_BLOOM = ("k", "i", "b", "s", "dt", "d", "f")
SPLIT_FILES = 3                    # files per table (the last ones may be empty)
# layout "hive": tables written by DuckDB in key=value/ directories (its
# COPY ... PARTITION_BY; NULL keys in __HIVE_DEFAULT_PARTITION__), read by
# pqdb with hive_partitioning = true: the key becomes a column of the type
# DuckDB infers, last in the table.  DuckDB reads its one file with the key
# moved and cast that way (its own hive reader fails window functions
# partitioned by the key: "PhysicalWindow::GetPartitionData: partition
# columns not supported", which invalidates the database).
HIVE_KEYS = {"t1": ("k", "BIGINT"), "t2": ("k", "BIGINT"), "t3": ("k", "BIGINT"),
             "nation": ("n_regionkey", "BIGINT"), "customer": ("c_mktsegment", "VARCHAR"),
             "orders": ("o_orderstatus", "VARCHAR"), "lineitem": ("l_returnflag", "VARCHAR"),
             "part": ("p_mfgr", "VARCHAR")}
# layout "encrypted": the files of "split" under Parquet modular encryption
# (pyarrow's key tools; no bloom filters: pyarrow does not write them
# encrypted): the footer and three columns in four under keys of their own,
# the fourth in plaintext; t2 with a plaintext footer, t3 in AES_GCM_CTR_V1.
# pqdb gets the master keys (Connection.add_parquet_key).
MASTER_KEYS = {"fuzz_footer": b"0123456789abcdef", "fuzz_a": b"fedcba9876543210",
               "fuzz_b": b"00112233445566aa"}
ENCRYPTION = {"t2": dict(plaintext_footer=True), "t3": dict(algorithm="AES_GCM_CTR_V1")}
LAYOUTS = ("one", "split", "hive", "encrypted")


def _split(src: Path, dst: Path, options: dict, encrypted: dict | None = None) -> list:
    """``src``'s rows as SPLIT_FILES files dst.0.parquet ...: their paths.
    ``encrypted``: write_with_kms's options (layout "encrypted")."""
    import pyarrow.parquet as pq
    table = pq.read_table(src)
    bloom = {c: True for c in SPLIT_BLOOM if c in table.column_names}
    step = -(-table.num_rows // SPLIT_FILES)
    out = []
    for part in range(SPLIT_FILES):
        path = dst.with_suffix(f".{part}.parquet")
        piece = table.slice(part * step, step)
        if encrypted is None:
            pq.write_table(piece, path, write_page_index=True,
                           bloom_filter_options=bloom or None, **options)
        else:
            from tests.scan.crypto_files import write_with_kms
            names = table.column_names
            keys = {"fuzz_a": names[0::4] + names[1::4], "fuzz_b": names[2::4]}
            write_with_kms(piece, str(path), MASTER_KEYS, "fuzz_footer", keys,
                           write_page_index=True, **encrypted, **options)
        out.append(path)
    return out


def _hive(duck_con, src: Path, dst: Path, key: tuple) -> tuple:
    """``src`` written by DuckDB as dst/key=value/*.parquet: (DuckDB's
    source: ``src`` with the key last, cast as hive_partitioning types it;
    the files for pqdb)."""
    import shutil
    name, typ = key
    shutil.rmtree(dst, ignore_errors=True)
    duck_con.execute(f"COPY (SELECT * FROM read_parquet('{src}')) TO '{dst}' "
                     f"(FORMAT parquet, PARTITION_BY ({name}))")
    duck_source = (f"(SELECT * EXCLUDE ({name}), CAST({name} AS {typ}) AS {name} "
                   f"FROM read_parquet('{src}'))")
    return duck_source, sorted(dst.glob("*/*.parquet"))


def _layout_files(layout: str, duck_con, name: str, path: Path, folder: Path,
                  split_options: dict) -> tuple:
    """(DuckDB's source, pqdb's files, hive?) of table ``name`` at ``path``
    in ``layout`` (its files written below ``folder``)."""
    plain = f"read_parquet('{path}')"
    where = folder / f"{name}-{layout}"
    if layout in ("split", "encrypted"):
        encrypted = dict(ENCRYPTION.get(name, {})) if layout == "encrypted" else None
        return plain, _split(path, where, split_options, encrypted), False
    if layout == "hive" and name in HIVE_KEYS:
        return (*_hive(duck_con, path, where, HIVE_KEYS[name]), True)
    return plain, [path], False


def _serve(server, table: str, path: Path, hive: bool) -> str:
    """``path`` added to ``server``: its URL.  A hive file keeps its
    key=value directory, decoded (DuckDB writes '#' as %23) in the served
    name and percent-encoded in the URL, as a web server shows such a file."""
    from urllib.parse import quote, unquote
    name = f"{table}/" + (unquote(path.parent.name) + "/" if hive else "") + path.name
    server.add(name, str(path))
    return server.url(quote(name))


def setup(folder: Path, tpch_dir: str | None, pqdb_con, duck_con, layout: str = "one",
          server=None) -> dict:
    """Write the small tables, create the views on both connections and
    return the schema: {table: [(column, DuckDB type name)]}.  DuckDB
    always reads the files of layout "one" (its own, one row group each:
    DuckDB 2.0 drops NaN rows of row groups whose float statistics, written
    without NaN as the format asks, do not admit them), pqdb those of
    ``layout``: the same rows.  ``server`` (a started
    tests.http_server.HttpServer): pqdb reads its files from it over http."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {LAYOUTS}")
    folder.mkdir(parents=True, exist_ok=True)
    tables = {}                 # name -> (DuckDB's source, pqdb's files, hive?)
    for name, rows in SMALL.items():
        path = folder / f"{name}.parquet"
        duck_con.execute(f"COPY ({_small_select(name, rows)}) TO '{path}' (FORMAT parquet)")
        tables[name] = _layout_files(layout, duck_con, name, path, folder, SPLIT_SMALL[name])
    if tpch_dir is not None:
        for t in TPCH:
            tables[t] = _layout_files(layout, duck_con, t, Path(tpch_dir) / f"{t}.parquet",
                                      folder, SPLIT_TPCH)
    if layout == "encrypted":
        for key_id, key in MASTER_KEYS.items():
            pqdb_con.add_parquet_key(key_id, key)
    view = "CREATE OR REPLACE VIEW {} AS SELECT * FROM {}"
    for name, (duck_source, files, hive) in tables.items():
        duck_con.execute(view.format(name, duck_source))
        if server is not None:
            files = [_serve(server, name, Path(f), hive) for f in files]
        listed = "[" + ", ".join(f"'{f}'" for f in files) + "]"
        if hive and server is None:                 # local: the glob
            listed = f"'{Path(files[0]).parent.parent}/*/*.parquet'"
        pqdb_con.sql(view.format(name, f"read_parquet({listed}"
                                       + (", hive_partitioning = true)" if hive else ")")))
    schema = {}
    for name in list(SMALL) + (list(TPCH) if tpch_dir is not None else []):
        schema[name] = [(r[0], r[1]) for r in duck_con.execute(f"DESCRIBE {name}").fetchall()]
    return schema
