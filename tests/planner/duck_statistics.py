"""Exact TableStatistics computed by DuckDB on demand, for planner tests over
small files: the planner's model with perfect base statistics."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq

from planner.explain import render
from planner.statistics import Estimate

from .helpers import FakeCatalog


class DuckStatistics:
    def __init__(self, path: str, con=None):
        self.path = path
        self.names = pq.read_schema(path).names
        self.con = con or duckdb.connect()
        self.memo: dict = {}

    def _one(self, sql: str):
        got = self.memo.get(sql)
        if got is None:
            got = self.memo[sql] = self.con.execute(sql).fetchone()[0]
        return got

    def _where(self, filters, columns) -> str:
        schema = [self.names[c] for c in columns]
        return " AND ".join(render(f, schema) for f in filters) or "TRUE"

    def row_count(self):
        return Estimate(self._one(f"SELECT count(*) FROM '{self.path}'"), "footer")

    def filtered_rows(self, filters, columns):
        n = self._one(f"SELECT count(*) FROM '{self.path}' WHERE {self._where(filters, columns)}")
        return Estimate(max(n, 1), "sample")

    def distinct(self, column, filters, columns):
        n = self._one(f"SELECT count(DISTINCT \"{self.names[column]}\") FROM '{self.path}' "
                      f"WHERE {self._where(filters, columns)}")
        return Estimate(max(n, 1), "hll")

    def unique(self, table_columns):
        cols = ", ".join(f'"{self.names[c]}"' for c in table_columns)
        distinct = self._one(f"SELECT count(*) FROM (SELECT DISTINCT {cols} FROM '{self.path}' "
                             f"WHERE {' AND '.join(f'{c} IS NOT NULL' for c in cols.split(', '))})")
        return distinct == self.row_count().value


class DuckStatsCatalog(FakeCatalog):
    """A FakeCatalog whose tables have exact statistics."""

    def __init__(self, views=None, root: str | None = None):
        super().__init__(views)
        self.root = root
        self.con = duckdb.connect()

    def table_info(self, spec: str):
        import os
        if self.root is not None and not os.path.isabs(spec):
            spec = os.path.join(self.root, spec)
        return super().table_info(spec)

    def table_statistics(self, files):
        return DuckStatistics(files[0], self.con) if len(files) == 1 else None
