"""The planner's side of table statistics: the catalog hands them to the
binder, Scans carry them through the rules, fingerprints ignore them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner import plan_query
from planner.fingerprint import fingerprint
from planner.logical import Scan
from planner.optimizer import bind_only
from planner.statistics import Estimate, TableStatistics

from .helpers import FakeCatalog


class Stats:
    """A TableStatistics that knows nothing but its name."""

    def __init__(self, name):
        self.name = name

    def row_count(self):
        return None

    def filtered_rows(self, filters, columns):
        return None

    def distinct(self, column, filters, columns):
        return None

    def unique(self, table_columns):
        return None


class StatsCatalog(FakeCatalog):
    def __init__(self):
        super().__init__()
        self.asked: list[list[str]] = []

    def table_statistics(self, files):
        self.asked.append(files)
        return Stats(files[0].rsplit("/", 1)[-1])


@pytest.fixture()
def files(tmp_path):
    pq.write_table(pa.table({"k": pa.array(range(100), pa.int64()),
                             "v": pa.array([i % 7 for i in range(100)], pa.int64())}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": pa.array(range(10), pa.int64()),
                             "w": pa.array(range(10), pa.int64())}), tmp_path / "b.parquet")
    return tmp_path


def _scans(node):
    if isinstance(node, Scan):
        yield node
    for c in node.children:
        yield from _scans(c)


def test_estimate_and_protocol():
    assert isinstance(Stats("x"), TableStatistics)
    assert Estimate(3.0, "sample").source == "sample"
    with pytest.raises(ValueError):
        Estimate(3.0, "guess")


def test_binder_attaches_the_catalogs_statistics_and_rules_keep_them(files):
    cat = StatsCatalog()
    sql = (f"SELECT a.v, b.w FROM '{files}/a.parquet' a JOIN '{files}/b.parquet' b "
           "ON a.k = b.k WHERE a.v = 3")
    bound = bind_only(sql, cat)
    assert sorted(s.statistics.name for s in _scans(bound)) == ["a.parquet", "b.parquet"]
    assert [f.rsplit("/", 1)[-1] for f in sum(cat.asked, [])] == ["a.parquet", "b.parquet"]
    plan = plan_query(sql, cat)
    scans = {s.alias: s for s in _scans(plan)}
    # pushdown added a filter and pruning dropped columns: new Scans, same statistics
    assert scans["a"].filters and scans["a"].statistics.name == "a.parquet"
    assert scans["b"].statistics.name == "b.parquet"


def test_a_catalog_without_statistics_gives_none(files):
    plan = plan_query(f"SELECT * FROM '{files}/a.parquet'", FakeCatalog())
    assert all(s.statistics is None for s in _scans(plan))


def test_fingerprints_ignore_statistics(files):
    sql = f"SELECT k FROM '{files}/a.parquet' WHERE v = 1"
    with_stats = plan_query(sql, StatsCatalog())
    without = plan_query(sql, FakeCatalog())
    assert fingerprint(with_stats) == fingerprint(without)
