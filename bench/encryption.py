"""What Parquet Modular Encryption costs a query: TPC-H SF1 lineitem written
by pyarrow twice with the same options -- plain, and encrypted (AES_GCM_V1,
encrypted footer, every column with its own key, parquet-java key
material) -- then Q1 and Q6 on each, by pqdb and by pyarrow (``read_table``
of the query's columns, with decryption), in the same run.

    .venv/bin/python bench/encryption.py [--data data/sf1] [--threads 2] [--repeat 5]
        [--no-read] [--no-write]

Per engine and query, min of ``repeat`` runs: cold (pqdb: a new connection
each run, so footer, reads and decryption are all in it) and warm (one
connection: pqdb keeps each chunk's plaintext with the cached chunk), and
encrypted / plain.  pyarrow caches nothing: its cold and warm are one
number.  The files are written once to
``--out`` (default /tmp/pqdb-bench-encryption) and reused.

Writing (``--write``, on by default; ``--no-write`` skips it), the same
run: ``COPY (SELECT * FROM lineitem) TO`` by pqdb, plain and encrypted
(ENCRYPTION_CONFIG: AES_GCM_V1, a footer key and one key per column, key
material), against DuckDB's ``COPY ... (FORMAT parquet)`` (plain) and
pyarrow's ``write_table`` with the same encryption (its KMS, one key per
column); snappy, best of ``repeat`` after a warm-up.  pyarrow's time is
given twice: write_table of the table in memory, and read_table +
write_table (what a COPY does).  Every written file is read back by
pyarrow (the encrypted ones with the master keys) and its row count
checked.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import engine  # noqa: E402
from tpch.queries import query_text  # noqa: E402

QUERY_COLUMNS = {
    1: ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax",
        "l_shipdate"],
    6: ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"],
}


def _kms(pe):
    from scan.keys import unwrap_locally, wrap_locally

    class JavaInMemoryKms(pe.KmsClient):
        """parquet-java's InMemoryKMS: AES-GCM wrapping, the master key id as AAD."""

        def __init__(self, config):
            pe.KmsClient.__init__(self)
            self.master = {k: base64.b64decode(v) for k, v in config.custom_kms_conf.items()}

        def wrap_key(self, key_bytes, master_key_identifier):
            return wrap_locally(key_bytes, self.master[master_key_identifier],
                                master_key_identifier.encode())

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return unwrap_locally(wrapped_key, self.master[master_key_identifier],
                                  master_key_identifier.encode(), "bench")
    return JavaInMemoryKms


def master_keys(columns) -> dict:
    """One fixed master key per column (and the footer): the bench files are
    reused across runs, so the keys must be too."""
    import hashlib
    names = ["footer"] + [f"mk_{c}" for c in columns]
    return {n: hashlib.sha256(n.encode()).digest()[:16] for n in names}


def crypto(columns):
    import pyarrow.parquet.encryption as pe
    keys = master_keys(columns)
    conf = pe.KmsConnectionConfig(custom_kms_conf={k: base64.b64encode(v).decode()
                                                   for k, v in keys.items()})
    factory = pe.CryptoFactory(lambda c: _kms(pe)(c))
    return factory, conf, keys


def write_files(src: str, out: str) -> tuple[str, str, list]:
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe
    os.makedirs(out, exist_ok=True)
    plain, enc = os.path.join(out, "lineitem_plain.parquet"), os.path.join(out, "lineitem_enc.parquet")
    meta = pq.ParquetFile(src).metadata
    columns = [meta.schema.column(i).name for i in range(meta.num_columns)]
    factory, conf, keys = crypto(columns)
    if not (os.path.exists(plain) and os.path.exists(enc)):
        table = pq.read_table(src)
        opts = dict(row_group_size=meta.row_group(0).num_rows, compression="snappy")
        t = time.perf_counter()
        pq.write_table(table, plain, **opts)
        t_plain = time.perf_counter() - t
        config = pe.EncryptionConfiguration(
            footer_key="footer", column_keys={f"mk_{c}": [c] for c in columns},
            encryption_algorithm="AES_GCM_V1", double_wrapping=True)
        t = time.perf_counter()
        props = factory.file_encryption_properties(conf, config)
        pq.write_table(table, enc, encryption_properties=props, **opts)
        t_enc = time.perf_counter() - t
        print(f"wrote {plain} ({os.path.getsize(plain) / 1e6:.0f} MB, {t_plain:.1f} s) and {enc} "
              f"({os.path.getsize(enc) / 1e6:.0f} MB, {t_enc:.1f} s) with pyarrow")
    return plain, enc, columns


def pqdb_connection(path: str, keys: dict, threads: int):
    con = engine.connect(threads=threads)
    for name, key in keys.items():
        con.add_parquet_key(name, key)
    con.sql(f"CREATE VIEW lineitem AS SELECT * FROM read_parquet('{path}')")
    return con


def pyarrow_reader(path: str, columns, q: int, encrypted: bool):
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe
    props = None
    if encrypted:
        factory, conf, _ = crypto(columns)
        props = factory.file_decryption_properties(conf, pe.DecryptionConfiguration())
    cols = QUERY_COLUMNS[q]
    return lambda: pq.read_table(path, columns=cols, decryption_properties=props)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(plain: str, enc: str, columns, keys: dict, q: int, threads: int, repeat: int):
    """{(engine, mode, file): min seconds}, the runs of the two files
    interleaved (the machine's load falls on both alike).  pqdb cold: a new
    connection each run (footer, reads, decryption all in it); warm: one
    connection, chunks (and their plaintext) cached.  pyarrow caches
    nothing: cold and warm are one number."""
    import pyarrow as pa
    pa.set_cpu_count(threads)
    sql = query_text(q)
    files = {"plain": plain, "enc": enc}
    warm = {k: pqdb_connection(p, keys, threads) for k, p in files.items()}
    for con in warm.values():           # the second and third runs still speed up
        for _ in range(3):
            con.sql(sql).fetchall()
    readers = {k: pyarrow_reader(p, columns, q, k == "enc") for k, p in files.items()}
    best: dict = {}
    for _ in range(repeat):
        for k, path in files.items():
            for key, fn in ((("pqdb", "cold", k), lambda: pqdb_connection(path, keys, threads)
                             .sql(sql).fetchall()),
                            (("pqdb", "warm", k), lambda: warm[k].sql(sql).fetchall()),
                            (("pyarrow", "cold", k), readers[k])):
                best[key] = min(best.get(key, float("inf")), timed(fn))
    for k in files:
        best[("pyarrow", "warm", k)] = best[("pyarrow", "cold", k)]
    return best


def _best(fn, repeat: int) -> float:
    fn()                                    # warm-up: numba, the OS cache
    return min(timed(fn) for _ in range(repeat))


def measure_writers(src: str, out: str, threads: int, repeat: int) -> None:
    """The writing table (module docstring)."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe
    pa.set_cpu_count(threads)
    meta = pq.ParquetFile(src).metadata
    columns = [meta.schema.column(i).name for i in range(meta.num_columns)]
    factory, conf, keys = crypto(columns)
    con = engine.connect(threads=threads)
    for name, key in keys.items():
        con.add_parquet_key(name, key)
    dk = duckdb.connect()
    dk.execute(f"SET threads = {threads}")
    paths = {k: os.path.join(out, f"write_{k}.parquet")
             for k in ("pqdb", "pqdb_enc", "duckdb", "pyarrow_enc")}
    config = ("{footer_key: 'footer', column_keys: {"
              + ", ".join(f"{c}: 'mk_{c}'" for c in columns)
              + "}, algorithm: 'AES_GCM_V1', key_material: true}")
    copy = "COPY (SELECT * FROM '{src}') TO '{out}' (FORMAT parquet, COMPRESSION snappy{extra})"
    rg = meta.row_group(0).num_rows

    def pyarrow_write(table):
        enc = pe.EncryptionConfiguration(
            footer_key="footer", column_keys={f"mk_{c}": [c] for c in columns},
            encryption_algorithm="AES_GCM_V1", double_wrapping=True)
        props = factory.file_encryption_properties(conf, enc)
        pq.write_table(table, paths["pyarrow_enc"], encryption_properties=props,
                       row_group_size=rg, compression="snappy")
    table = pq.read_table(src)
    t = {"pqdb": _best(lambda: con.sql(copy.format(src=src, out=paths["pqdb"], extra="")),
                       repeat),
         "pqdb_enc": _best(lambda: con.sql(copy.format(
             src=src, out=paths["pqdb_enc"], extra=f", ENCRYPTION_CONFIG {config}")), repeat),
         "duckdb": _best(lambda: dk.execute(copy.format(src=src, out=paths["duckdb"], extra="")),
                         repeat),
         "pyarrow_enc": _best(lambda: pyarrow_write(table), repeat),
         "pyarrow_read_enc": _best(lambda: pyarrow_write(pq.read_table(src)), repeat)}
    del table
    dprops = factory.file_decryption_properties(conf, pe.DecryptionConfiguration())
    rows = {k: pq.ParquetFile(p, decryption_properties=dprops if k.endswith("enc") else None)
            .metadata.num_rows for k, p in paths.items()}
    assert set(rows.values()) == {meta.num_rows}, rows
    got = pq.read_table(paths["pqdb_enc"], columns=["l_orderkey", "l_comment"],
                        decryption_properties=dprops)
    assert got.num_rows == meta.num_rows
    size = {k: os.path.getsize(p) / 1e6 for k, p in paths.items()}
    print(f"COPY lineitem TO parquet (snappy), {threads} thread(s); seconds, best of {repeat} "
          f"after a warm-up; every file read back by pyarrow")
    print(f"{'writer':<44}{'s':>8}{'MB':>9}")
    for k, label in (("duckdb", "DuckDB COPY, plain"), ("pqdb", "pqdb COPY, plain"),
                     ("pyarrow_enc", "pyarrow write_table (in memory), encrypted"),
                     ("pyarrow_read_enc", "pyarrow read_table + write_table, encrypted"),
                     ("pqdb_enc", "pqdb COPY, encrypted")):
        mb = size.get(k, size["pyarrow_enc"])
        print(f"{label:<44}{t[k]:>8.2f}{mb:>9.1f}")
    print(f"pqdb plain / DuckDB plain: {t['pqdb'] / t['duckdb']:.2f}   "
          f"pqdb encrypted / DuckDB plain: {t['pqdb_enc'] / t['duckdb']:.2f}   "
          f"pqdb encrypted / plain: {t['pqdb_enc'] / t['pqdb']:.2f}   "
          f"pqdb encrypted / pyarrow read+write encrypted: "
          f"{t['pqdb_enc'] / t['pyarrow_read_enc']:.2f}")
    for p in paths.values():
        os.unlink(p)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(_ROOT, "data", "sf1"))
    ap.add_argument("--out", default="/tmp/pqdb-bench-encryption")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--read", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args(argv)
    if args.write:
        os.makedirs(args.out, exist_ok=True)
        measure_writers(os.path.join(args.data, "lineitem.parquet"), args.out, args.threads,
                        max(1, min(args.repeat, 3)))
    if not args.read:
        return 0
    plain, enc, columns = write_files(os.path.join(args.data, "lineitem.parquet"), args.out)
    keys = master_keys(columns)
    for q in (1, 6):                    # numba's compiled kernels loaded, files in the OS cache
        pqdb_connection(enc, keys, args.threads).sql(query_text(q)).fetchall()
    print(f"TPC-H lineitem ({args.data}), {args.threads} thread(s); seconds, min of "
          f"{args.repeat} interleaved runs: cold (a new connection: footer, reads, decryption) "
          f"/ warm (chunks cached)")
    print(f"{'engine':<26}{'query':<7}{'plain':>16}{'encrypted':>18}{'enc/plain':>16}")
    for q in (1, 6):
        best = measure(plain, enc, columns, keys, q, args.threads, args.repeat)
        for name, label in (("pqdb", "pqdb"), ("pyarrow", "pyarrow read_table")):
            pc, pw = best[(name, "cold", "plain")], best[(name, "warm", "plain")]
            ec, ew = best[(name, "cold", "enc")], best[(name, "warm", "enc")]
            if name == "pyarrow":
                print(f"{label:<26}Q{q:<6}{pc:>16.3f}{ec:>18.3f}{ec / pc:>16.2f}")
            else:
                print(f"{label:<26}Q{q:<6}{pc:>7.3f} / {pw:.3f}{ec:>9.3f} / {ew:.3f}"
                      f"{ec / pc:>8.2f} / {ew / pw:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
