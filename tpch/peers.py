"""The engines the runner compares: pqdb and its peers, each reading the same
Parquet files with the same number of threads.

    pqdb            engine.connect(threads=T), views over read_parquet
    duckdb          DuckDB views over read_parquet (SET threads = T)
    duckdb-native   DuckDB tables loaded from the files first (load timed apart)
    polars          polars SQLContext over scan_parquet (POLARS_MAX_THREADS = T)
    datafusion      SessionContext.register_parquet + sql (target_partitions = T)
    spark           engine.connect(engine="spark") on local[T]

``python -m tpch.peers cold ENGINE DIR THREADS QUERY`` runs one query once in
a fresh process and prints JSON: the runner's cold measurement."""

from __future__ import annotations

import json
import os
import sys
import time

from tpch.queries import TABLES, query_text, table_path, view_statements


def pin_threads(threads: int) -> None:
    """Environment for peers that size their thread pools at import time
    (must run before polars or datafusion are imported)."""
    os.environ["POLARS_MAX_THREADS"] = str(threads)
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    os.environ["TOKIO_WORKER_THREADS"] = str(threads)


class EngineRunner:
    name = "?"
    load_seconds: float | None = None      # loading into the engine's own storage

    def __init__(self, data_dir: str, threads: int):
        self.data_dir = data_dir
        self.threads = threads

    def run(self, sql: str) -> tuple[list[str], list[tuple]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class PqdbRunner(EngineRunner):
    name = "pqdb"

    def __init__(self, data_dir, threads):
        super().__init__(data_dir, threads)
        import engine
        self.con = engine.connect(threads=threads)
        for stmt in view_statements(data_dir):
            self.con.sql(stmt)

    def run(self, sql):
        result = self.con.sql(sql)
        return result.columns, result.fetchall()


class DuckDBRunner(EngineRunner):
    name = "duckdb"

    def __init__(self, data_dir, threads):
        super().__init__(data_dir, threads)
        import duckdb
        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {int(threads)}")
        self.setup()

    def setup(self):
        for stmt in view_statements(self.data_dir):
            self.con.execute(stmt)

    def run(self, sql):
        cur = self.con.execute(sql)
        return [d[0] for d in cur.description], cur.fetchall()

    def close(self):
        self.con.close()


class DuckDBNativeRunner(DuckDBRunner):
    """DuckDB on its own storage: the paper's "database relations" case."""
    name = "duckdb-native"

    def setup(self):
        t0 = time.perf_counter()
        for t in TABLES:
            self.con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_parquet('{table_path(self.data_dir, t)}')")
        self.load_seconds = time.perf_counter() - t0


class PolarsRunner(EngineRunner):
    name = "polars"

    def __init__(self, data_dir, threads):
        super().__init__(data_dir, threads)
        if "polars" not in sys.modules:
            pin_threads(threads)
        import polars as pl
        if pl.thread_pool_size() != threads:
            raise RuntimeError(f"polars was imported with {pl.thread_pool_size()} threads, "
                               f"not {threads} (set POLARS_MAX_THREADS before importing it)")
        frames = {t: pl.scan_parquet(table_path(data_dir, t)) for t in TABLES}
        self.ctx = pl.SQLContext(frames=frames)

    def run(self, sql):
        df = self.ctx.execute(sql, eager=True)
        return list(df.columns), df.rows()


class DataFusionRunner(EngineRunner):
    name = "datafusion"

    def __init__(self, data_dir, threads):
        super().__init__(data_dir, threads)
        from datafusion import SessionConfig, SessionContext
        config = SessionConfig().with_target_partitions(int(threads))
        self.ctx = SessionContext(config)
        for t in TABLES:
            path = table_path(data_dir, t)
            if "*" in path:
                self.ctx.register_parquet(t, os.path.dirname(path), file_extension=".parquet")
            else:
                self.ctx.register_parquet(t, path)

    def run(self, sql):
        table = self.ctx.sql(sql).to_arrow_table()
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        rows = list(zip(*columns)) if columns else []
        return list(table.column_names), rows


class SparkRunner(EngineRunner):
    name = "spark"

    def __init__(self, data_dir, threads):
        super().__init__(data_dir, threads)
        import engine
        self.con = engine.connect(engine="spark", threads=threads)
        for stmt in view_statements(data_dir):
            self.con.sql(stmt)

    def run(self, sql):
        result = self.con.sql(sql)
        return result.columns, result.fetchall()


ENGINES = {r.name: r for r in (PqdbRunner, DuckDBRunner, DuckDBNativeRunner, PolarsRunner,
                               DataFusionRunner, SparkRunner)}


def cold_run(engine_name: str, data_dir: str, threads: int, query: int) -> dict:
    """Set the engine up and run one query once in this (fresh) process."""
    pin_threads(threads)
    t0 = time.perf_counter()
    runner = ENGINES[engine_name](data_dir, threads)
    setup = time.perf_counter() - t0
    sql = query_text(query)
    t0 = time.perf_counter()
    _, rows = runner.run(sql)
    seconds = time.perf_counter() - t0
    runner.close()
    return {"seconds": seconds, "setup_seconds": setup, "rows": len(rows),
            "load_seconds": runner.load_seconds}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 5 or argv[0] != "cold":
        print("usage: python -m tpch.peers cold ENGINE DATA_DIR THREADS QUERY", file=sys.stderr)
        return 2
    _, name, data_dir, threads, query = argv
    try:
        out = cold_run(name, data_dir, int(threads), int(query))
    except Exception as e:      # noqa: BLE001 - reported to the runner, never hidden
        out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)                 # skip slow interpreter/JVM teardown


if __name__ == "__main__":
    sys.exit(main())
