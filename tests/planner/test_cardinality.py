"""planner/cardinality.py with and without table statistics."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner import plan_query
from planner.cardinality import estimate_with_source, join_selectivity
from planner.logical import Aggregate, Join, Scan
from planner.optimizer import bind_only
from planner.statistics import Estimate

from .helpers import FakeCatalog


class DictStats:
    """Statistics from plain data: rows, the rows left by any filter (or by
    a filter count), distinct counts per table column, unique column sets."""

    def __init__(self, rows, filtered=None, distinct=None, unique=(), source="sample"):
        self.rows, self.filtered = rows, filtered
        self.ndv = distinct or {}
        self.keys = {tuple(k) for k in unique}
        self.source = source
        self.calls: list[tuple] = []

    def row_count(self):
        return Estimate(self.rows, "footer")

    def filtered_rows(self, filters, columns):
        self.calls.append(("filtered_rows", len(filters), tuple(columns)))
        return None if self.filtered is None else Estimate(self.filtered, self.source)

    def distinct(self, column, filters, columns):
        self.calls.append(("distinct", column, len(filters)))
        got = self.ndv.get((column, bool(filters)), self.ndv.get(column))
        return None if got is None else Estimate(got, "hll")

    def unique(self, table_columns):
        if table_columns in self.keys:
            return True
        return None if not self.keys else False


class StatsCatalog(FakeCatalog):
    def __init__(self, stats: dict):
        super().__init__()
        self.stats = stats

    def table_statistics(self, files):
        return self.stats.get(files[0].rsplit("/", 1)[-1].split(".")[0])


@pytest.fixture()
def tables(tmp_path):
    """fact(f_id, f_dim, f_grp, f_val) 1000 rows; dim(d_id, d_cat) 100 rows;
    pair(p_a, p_b, p_x) 200 rows."""
    ints = lambda n, m=None: pa.array([i % m if m else i for i in range(n)], pa.int64())  # noqa
    pq.write_table(pa.table({"f_id": ints(1000), "f_dim": ints(1000, 100), "f_grp": ints(1000, 7),
                             "f_val": ints(1000)}), tmp_path / "fact.parquet")
    pq.write_table(pa.table({"d_id": ints(100), "d_cat": ints(100, 10)}), tmp_path / "dim.parquet")
    pq.write_table(pa.table({"p_a": ints(200, 20), "p_b": ints(200, 10), "p_x": ints(200)}),
                   tmp_path / "pair.parquet")
    return str(tmp_path)


def _nodes(node):
    yield node
    for c in node.children:
        yield from _nodes(c)


def _first(node, kind):
    return next(n for n in _nodes(node) if isinstance(n, kind))


def test_without_statistics_footer_and_defaults(tables):
    cat = FakeCatalog()
    plan = plan_query(f"SELECT f_val FROM '{tables}/fact.parquet' WHERE f_grp = 3", cat)
    scan = _first(plan, Scan)
    assert estimate_with_source(scan) == Estimate(100.0, "default")      # 10% of 1000
    plain = _first(plan_query(f"SELECT f_val FROM '{tables}/fact.parquet'", cat), Scan)
    assert estimate_with_source(plain) == Estimate(1000.0, "footer")


def test_filters_are_estimated_jointly_by_the_statistics(tables):
    fact = DictStats(1000, filtered=37)
    cat = StatsCatalog({"fact": fact})
    plan = plan_query(f"SELECT f_val FROM '{tables}/fact.parquet' "
                      "WHERE f_grp = 3 AND f_val > 10", cat)
    scan = _first(plan, Scan)
    assert estimate_with_source(scan) == Estimate(37.0, "sample")
    assert ("filtered_rows", 2, tuple(scan.columns)) in fact.calls
    # a statistic that does not know falls back to the defaults
    cat = StatsCatalog({"fact": DictStats(1000)})
    scan = _first(plan_query(f"SELECT f_val FROM '{tables}/fact.parquet' WHERE f_grp = 3", cat),
                  Scan)
    assert estimate_with_source(scan) == Estimate(100.0, "default")


def test_key_foreign_key_join_keeps_the_key_sides_selectivity(tables):
    # dim is filtered to 10 of its 100 rows: each fact row finds its key with
    # probability 0.1, so 1000 * 10 / 100 = 100 rows
    cat = StatsCatalog({"fact": DictStats(1000, distinct={1: 100}),
                        "dim": DictStats(100, filtered=10, distinct={0: 100}, unique=[(0,)])})
    plan = plan_query(f"SELECT f_val FROM '{tables}/fact.parquet', '{tables}/dim.parquet' "
                      "WHERE f_dim = d_id AND d_cat = 3", cat)
    join = _first(plan, Join)
    assert estimate_with_source(join) == Estimate(100.0, "key")


def test_other_joins_divide_by_the_larger_distinct_count(tables):
    # fact.f_grp has 7 values, pair.p_b 10 (unique() says no key)
    cat = StatsCatalog({"fact": DictStats(1000, distinct={2: 7}, unique=[(0,)]),
                        "pair": DictStats(200, distinct={1: 10}, unique=[(2,)])})
    plan = plan_query(f"SELECT f_val, p_x FROM '{tables}/fact.parquet', '{tables}/pair.parquet' "
                      "WHERE f_grp = p_b", cat)
    join = _first(plan, Join)
    assert estimate_with_source(join) == Estimate(1000 * 200 / 10, "hll")


def test_distinct_counts_are_capped_by_the_rows(tables):
    # 5 filtered rows of pair can hold at most 5 of its 10 p_b values; fact has 7
    cat = StatsCatalog({"fact": DictStats(1000, distinct={2: 7}, unique=[(0,)]),
                        "pair": DictStats(200, filtered=5, distinct={1: 10}, unique=[(2,)])})
    plan = plan_query(f"SELECT f_val, p_x FROM '{tables}/fact.parquet', '{tables}/pair.parquet' "
                      "WHERE f_grp = p_b AND p_x < 5", cat)
    join = _first(plan, Join)
    sel = join_selectivity(join.left, join.right, join.left_keys, join.right_keys)
    assert sel.value == pytest.approx(1 / 7)


def test_composite_key(tables):
    pair = DictStats(200, distinct={0: 20, 1: 10}, unique=[(0, 1)])
    cat = StatsCatalog({"fact": DictStats(1000, distinct={1: 100, 2: 7}, unique=[(0,)]),
                        "pair": pair})
    plan = plan_query(f"SELECT f_val, p_x FROM '{tables}/fact.parquet', '{tables}/pair.parquet' "
                      "WHERE f_dim = p_a AND f_grp = p_b", cat)
    join = _first(plan, Join)
    assert estimate_with_source(join) == Estimate(1000 * 200 / 200, "key")
    # unknown key: only the most selective pair counts (1/max(100, 20))
    cat = StatsCatalog({"fact": DictStats(1000, distinct={1: 100, 2: 7}, unique=[(0,)]),
                        "pair": DictStats(200, distinct={0: 20, 1: 10}, unique=[(2,)])})
    join = _first(plan_query(f"SELECT f_val, p_x FROM '{tables}/fact.parquet', "
                             f"'{tables}/pair.parquet' WHERE f_dim = p_a AND f_grp = p_b", cat),
                  Join)
    assert estimate_with_source(join) == Estimate(1000 * 200 / 100, "hll")


def test_group_by_distinct_counts_and_keys(tables):
    cat = StatsCatalog({"fact": DictStats(1000, distinct={1: 100, 2: 7, 0: 1000},
                                          unique=[(0,)])})
    agg = _first(plan_query(f"SELECT f_dim, f_grp, count(*) FROM '{tables}/fact.parquet' "
                            "GROUP BY f_dim, f_grp", cat), Aggregate)
    assert estimate_with_source(agg) == Estimate(700.0, "hll")
    # a key among the groups caps the product of its table's columns
    agg = _first(plan_query(f"SELECT f_id, f_dim, f_grp, count(*) FROM '{tables}/fact.parquet' "
                            "GROUP BY f_id, f_dim, f_grp", cat), Aggregate)
    assert estimate_with_source(agg).value == 1000.0
    cat = StatsCatalog({"fact": DictStats(1000, filtered=50, distinct={(1, True): 40, 2: 7},
                                          unique=[(0,)])})
    agg = _first(plan_query(f"SELECT f_id, f_dim, count(*) FROM '{tables}/fact.parquet' "
                            "WHERE f_val < 50 GROUP BY f_dim, f_id", cat), Aggregate)
    assert estimate_with_source(agg) == Estimate(50.0, "sample")      # capped by the input


def test_semi_and_anti_joins_use_the_right_sides_distinct_keys(tables):
    # dim's 100 keys; fact's f_dim covers 30 of them after its filter
    cat = StatsCatalog({"fact": DictStats(1000, filtered=300, distinct={(1, True): 30},
                                          unique=[(0,)]),
                        "dim": DictStats(100, distinct={0: 100}, unique=[(0,)])})
    semi = _first(plan_query(f"SELECT d_cat FROM '{tables}/dim.parquet' WHERE d_id IN "
                             f"(SELECT f_dim FROM '{tables}/fact.parquet' WHERE f_val < 300)",
                             cat), Join)
    assert semi.kind == "semi"
    assert estimate_with_source(semi) == Estimate(30.0, "hll")
    anti = _first(plan_query(f"SELECT d_cat FROM '{tables}/dim.parquet' WHERE NOT EXISTS "
                             f"(SELECT 1 FROM '{tables}/fact.parquet' WHERE f_val < 300 "
                             "AND f_dim = d_id)", cat), Join)
    assert anti.kind == "anti"
    assert estimate_with_source(anti) == Estimate(70.0, "hll")
    # without statistics: half
    semi = _first(plan_query(f"SELECT d_cat FROM '{tables}/dim.parquet' WHERE d_id IN "
                             f"(SELECT f_dim FROM '{tables}/fact.parquet')", FakeCatalog()), Join)
    assert estimate_with_source(semi) == Estimate(50.0, "default")


def test_join_estimates_do_not_depend_on_the_order(tables):
    """The estimate of an inner join is a function of the set of inputs it
    joins: rows below 1 inside a region are not rounded up."""
    cat = FakeCatalog()
    sql = (f"SELECT count(*) FROM '{tables}/fact.parquet' f, '{tables}/dim.parquet' d, "
           f"'{tables}/pair.parquet' p WHERE f_dim = d_id AND d_id = p_a "
           "AND d_cat = 2 AND d_id < 50 AND p_x = 3")
    plan = plan_query(sql, cat)
    top = _first(plan, Join)
    # fact 1000, dim 100 * 0.1 * 0.2 = 2, pair 200 * 0.1 = 20 rows; the first
    # columns are guessed keys: f_dim = d_id keeps 1/100, d_id = p_a 1/200.
    # In either order the result is 1000 * 2 * 20 / 100 / 200 = 2 (not 10,
    # which rounding dim JOIN pair's 0.2 rows up to 1 would give).
    assert estimate_with_source(top).value == pytest.approx(2.0)


def test_semi_joins_build_on_the_smaller_estimated_input(tables):
    """right_semi/right_anti: the engine builds on the outer rows when the
    subquery side is estimated bigger; EXPLAIN says build=left."""
    from planner.cardinality import builds_on_left
    from planner.explain import explain
    sql = (f"SELECT d_cat FROM '{tables}/dim.parquet' WHERE d_id IN "
           f"(SELECT f_dim FROM '{tables}/fact.parquet' WHERE f_val < 300)")
    for fact_rows, left in ((300, True), (5, False)):
        cat = StatsCatalog({"fact": DictStats(1000, filtered=fact_rows,
                                              distinct={(1, True): min(fact_rows, 30)}),
                            "dim": DictStats(100, distinct={0: 100}, unique=[(0,)])})
        plan = plan_query(sql, cat)
        semi = _first(plan, Join)
        assert builds_on_left(semi) is left
        assert ("build=left" in explain(plan)) is left


def test_an_aggregates_values_are_about_one_per_group(tables):
    """TPC-H Q15's shape: per-group sums joined with their maximum.  A sum's
    distinct values are the groups (7 f_grp values), so the join keeps
    7 * 1 / 7 = 1 row, not 7 / sqrt(7); count's values repeat: default."""
    cat = StatsCatalog({"fact": DictStats(1000, distinct={2: 7})})
    f = f"'{tables}/fact.parquet'"
    plan = plan_query(f"WITH s AS (SELECT f_grp, sum(f_val) AS total FROM {f} GROUP BY f_grp) "
                      "SELECT f_grp FROM s WHERE total = (SELECT max(total) FROM s)", cat)
    join = _first(plan, Join)
    assert estimate_with_source(join).value == 1.0
    plan = plan_query(f"WITH s AS (SELECT f_grp, count(*) AS n FROM {f} GROUP BY f_grp) "
                      "SELECT f_grp FROM s WHERE n = (SELECT max(n) FROM s)", cat)
    assert estimate_with_source(_first(plan, Join)).value == pytest.approx(7 / 7 ** 0.5)


def test_range_residuals_keep_a_fifth(tables):
    """TPC-H Q11's shape: groups against a scalar subquery with '>' keep
    20% (a range filter's default), other residuals half."""
    cat = StatsCatalog({"fact": DictStats(1000, distinct={2: 7})})
    f = f"'{tables}/fact.parquet'"
    for op, share in ((">", 0.2), ("<>", 0.5)):
        plan = plan_query(f"SELECT f_grp, sum(f_val) AS v FROM {f} GROUP BY f_grp "
                          f"HAVING sum(f_val) {op} (SELECT sum(f_val) * 0.1 FROM {f})", cat)
        join = _first(plan, Join)
        assert estimate_with_source(join).value == pytest.approx(7 * share), op
