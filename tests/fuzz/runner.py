"""The differential loop: generate a query, run it on pqdb and on DuckDB,
compare.  A failure is a wrong result (rows that differ as multisets, or in
order under a total ORDER BY), a Python exception outside pqdb's error
hierarchy, or pqdb succeeding where DuckDB raises.  pqdb errors that mean
"not supported" (skips.UNSUPPORTED, BinderError) are counted, not failed.
So are runtime errors (ExecutionError: overflow, division by zero, a bad
cast) where DuckDB returns rows: DuckDB's optimizer drops expressions whose
value is never needed (a CASE branch under WHEN false, the other side of an
INTERSECT with an empty input, a subquery under HAVING false), so it never
evaluates the row that raises, while pqdb does; the summary shows a few of
them to look at.  The other way round (skips.DUCKDB_EVALUATES_MORE), a
DuckDB runtime error where pqdb returns rows is counted and shown too.

Replay one seed: PQDB_FUZZ_SEED=N pytest tests/fuzz, or
python -m tests.fuzz --seed N --count M."""

from __future__ import annotations

import collections
import random
import time
import traceback
from dataclasses import dataclass, field

from tests.fuzz import skips
from tests.fuzz.compare import differ
from tests.fuzz.gen_query import QueryGen


@dataclass
class Failure:
    seed: int
    index: int
    sql: str
    problem: str

    def __str__(self) -> str:
        return f"seed {self.seed} query {self.index}: {self.problem}\n  {self.sql}"


@dataclass
class Stats:
    queries: int = 0
    compared: int = 0
    both_error: int = 0
    pqdb_only_error: list = field(default_factory=list)
    duck_only_error: list = field(default_factory=list)
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    failures: list = field(default_factory=list)
    slow: list = field(default_factory=list)
    seconds: float = 0.0
    # what pqdb's scans skipped over all queries (PruningCounters fields)
    skipped: collections.Counter = field(default_factory=collections.Counter)

    def summary(self) -> str:
        top = "; ".join(f"{n}x {m}" for m, n in self.unsupported.most_common(8))
        return (f"{self.queries} queries in {self.seconds:.1f} s: {self.compared} compared, "
                f"{self.both_error} errors in both, {len(self.pqdb_only_error)} runtime errors "
                f"in pqdb alone, {len(self.duck_only_error)} in DuckDB alone, "
                f"{sum(self.unsupported.values())} "
                f"unsupported in pqdb, {len(self.failures)} failures"
                + (f"\n  unsupported: {top}" if top else "")
                + (f"\n  skipped: {self.skipped_text()}" if self.skipped else ""))

    def skipped_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()) if v)


def _unsupported_key(e: Exception) -> str:
    msg = str(e).split("(line")[0].strip()
    return f"{type(e).__name__}: {msg[:70]}"


SKIP_COUNTERS = ("row_groups_skipped", "pages_skipped", "bloom_rejections", "synopses_skipped",
                 "rows_join_filtered")


def run_one(pqdb_con, duck_con, sql: str, ordered: bool, skipped=None):
    """('ok' | 'both_error' | 'unsupported' | 'fail', detail).  skipped: a
    Counter that gets what pqdb's scans skipped (SKIP_COUNTERS)."""
    from engine.errors import BinderError, ExecutionError, PqdbError
    try:
        want = duck_con.execute(sql).fetchall()
        duck_error = None
    except Exception as e:                      # noqa: BLE001 - any DuckDB error
        want, duck_error = None, e
    try:
        res = pqdb_con.sql(sql)
        got = res.fetchall()
        pq_error = None
        if skipped is not None:
            for name in SKIP_COUNTERS:
                skipped[name] += getattr(res.pruning, name)
    except PqdbError as e:
        got, pq_error = None, e
    except Exception as e:                      # noqa: BLE001 - outside pqdb's hierarchy
        return "fail", (f"{type(e).__name__} outside pqdb's errors: {e}\n"
                        + "".join(traceback.format_exception(e)[-4:]))
    if duck_error is not None:
        if pq_error is not None:
            return "both_error", None
        if any(m in str(duck_error) for m in skips.DUCKDB_ORDER_DEPENDENT_ERRORS):
            return "both_error", None
        if any(m in str(duck_error) for m in skips.DUCKDB_EVALUATES_MORE) or (
                any(m in str(duck_error) for m in skips.PRUNED_AGGREGATE_ERRORS)
                and any(m in sql for m in skips.DERIVED_MARKERS)):
            return "duck_error", str(duck_error).splitlines()[0][:160]
        return "fail", f"DuckDB raised {type(duck_error).__name__}: {str(duck_error)[:200]}; pqdb returned {got[:5]}"
    if pq_error is not None:
        if type(pq_error).__name__ in skips.UNSUPPORTED or isinstance(pq_error, BinderError):
            return "unsupported", _unsupported_key(pq_error)
        if isinstance(pq_error, ExecutionError):
            return "pqdb_error", f"{type(pq_error).__name__}: {pq_error}"
        return "fail", f"pqdb raised {type(pq_error).__name__}: {pq_error}; DuckDB returned {want[:5]}"
    problem = differ(got, want, ordered)
    if problem is not None:
        return "fail", problem
    return "ok", None


def run(pqdb_con, duck_con, schema: dict, seed: int, count: int, budget_s: float | None = None,
        stats: Stats | None = None, stop_after: int = 20, log=None) -> Stats:
    stats = stats or Stats()
    rng = random.Random(seed)
    gen = QueryGen(rng, schema)
    start = time.perf_counter()
    for i in range(count):
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
        sql, ordered = gen.generate()
        t0 = time.perf_counter()
        outcome, detail = run_one(pqdb_con, duck_con, sql, ordered, stats.skipped)
        took = time.perf_counter() - t0
        if took > 2.0:
            stats.slow.append((took, sql))
        stats.queries += 1
        if outcome == "ok":
            stats.compared += 1
        elif outcome == "both_error":
            stats.both_error += 1
        elif outcome == "pqdb_error":
            stats.pqdb_only_error.append((detail, sql))
        elif outcome == "duck_error":
            stats.duck_only_error.append((detail, sql))
        elif outcome == "unsupported":
            stats.unsupported[detail] += 1
        else:
            f = Failure(seed, i, sql, detail)
            stats.failures.append(f)
            if log is not None:
                log(str(f))
            if len(stats.failures) >= stop_after:
                break
    stats.seconds += time.perf_counter() - start
    return stats
