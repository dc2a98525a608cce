"""A fake TableStatistics with the true numbers of TPC-H SF1.

The data (tests/planner/tpch_sf1_stats.py) were taken once from DuckDB over
the SF1 files by tests/planner/make_tpch_sf1_stats.py: row counts, every
column's distinct count, the primary keys (checked: distinct = rows), and
for the filters the planner asks about in the queries of
test_tpch_join_orders.py, the rows they leave and the distinct counts of
columns under them.  The statistics room will estimate these from samples
and sketches; here they are exact, so what the planner gets wrong is its
own model's doing (independence, containment, default residuals).

Sources as stats/ will report them: row counts 'footer', filtered rows
'sample', distinct counts 'hll'.  A question the data cannot answer is
remembered in MISSES and answered None (the planner then falls back to its
defaults); the generator uses MISSES to know what to compute.
"""

from __future__ import annotations

import os

import pyarrow.parquet as pq

from planner.explain import render
from planner.statistics import Estimate

from . import tpch_sf1_stats as DATA
from tests.connections import tpch_tables

from .helpers import FakeCatalog

MISSES: set[tuple] = set()


def filter_key(filters, names: list[str], columns: list[int]) -> str:
    """The conjuncts as text over the table's column names, sorted: the
    data's key for a set of filters (and the WHERE clause DuckDB ran)."""
    schema = [names[c] for c in columns]
    return " AND ".join(sorted(render(f, schema) for f in filters))


class TpchStatistics:
    def __init__(self, table: str, names: list[str], data=DATA):
        self.table, self.names, self.data = table, names, data

    def row_count(self):
        return Estimate(self.data.ROWS[self.table], "footer")

    def filtered_rows(self, filters, columns):
        key = filter_key(filters, self.names, columns)
        got = self.data.FILTERED.get((self.table, key))
        if got is None:
            MISSES.add(("filtered", self.table, key))
            return None
        return Estimate(max(got, 1), "sample")

    def distinct(self, column, filters, columns):
        name = self.names[column]
        if not filters:
            return Estimate(self.data.DISTINCT[self.table][name], "hll")
        key = filter_key(filters, self.names, columns)
        got = self.data.FILTERED_DISTINCT.get((self.table, name, key))
        if got is None:
            MISSES.add(("distinct", self.table, name, key))
            return None
        return Estimate(max(got, 1), "hll")

    def unique(self, table_columns):
        names = {self.names[c] for c in table_columns}
        return any(set(k) <= names for k in self.data.KEYS[self.table])


class TpchStatsCatalog(FakeCatalog):
    """TPC-H views over a directory of <table>.parquet files, whose tables
    have the SF1 statistics (whatever the files' own size)."""

    def __init__(self, tpch_dir: str, data=DATA):
        super().__init__({t: f"SELECT * FROM '{path}'"
                          for t, path in tpch_tables(tpch_dir).items()})
        self.data = data

    def table_statistics(self, files):
        table = os.path.basename(files[0]).split(".")[0]
        if table not in self.data.ROWS:
            return None
        return TpchStatistics(table, pq.read_schema(files[0]).names, self.data)
