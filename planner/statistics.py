"""What the planner asks of table statistics, as an interface.

The engine's catalog hands the binder one ``TableStatistics`` object per
table (``Catalog.table_statistics(files)``, attached to ``Scan.statistics``);
stats/ builds them from what the scans collect (row samples, HyperLogLog
sketches, key guesses, synopses).  The planner only reads them, through
planner/cardinality.py, and must plan without them: every method may answer
None (unknown), and a Scan without statistics is estimated from its footer
row count and fixed default selectivities, as before statistics existed.

An ``Estimate`` names the statistic that drove it, so EXPLAIN can say how
much to trust a number:

- ``sample``:   evaluated on a row sample (filters, jointly)
- ``hll``:      a distinct count from a HyperLogLog sketch
- ``key``:      a key/foreign-key join sized by a (guessed) unique key
- ``synopses``: min/max ranges of row groups (a filter's selectivity)
- ``footer``:   Parquet footer row counts
- ``default``:  a fixed guess (no statistic applied)
- ``feedback``: the rows an earlier query saw this subplan produce
  (planner/feedback.py)

Besides the methods below, the engine's statistics carry ``identities``
(the files' identities, which feedback keys include) and ``feedback``
(the connection's planner.feedback.FeedbackStore, or None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from planner.expressions import Expr

SOURCES = ("sample", "hll", "key", "synopses", "footer", "default", "feedback")


@dataclass(frozen=True)
class Estimate:
    value: float
    source: str        # one of SOURCES

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"unknown estimate source {self.source!r}")


@runtime_checkable
class TableStatistics(Protocol):
    """Statistics of one table (all files of a Scan).  Column numbers are
    indexes into ``Scan.table_columns``.  Every method may return None:
    unknown."""

    def row_count(self) -> Estimate | None:
        """Rows of the table."""

    def filtered_rows(self, filters: list[Expr], columns: list[int]) -> Estimate | None:
        """Rows left after ALL conjuncts of ``filters`` together (evaluated
        jointly, e.g. on a row sample; never 0, at least 1).  ``filters`` are
        over the Scan's schema: schema position i is table column
        ``columns[i]`` (``columns`` is ``Scan.columns``)."""

    def distinct(self, column: int, filters: list[Expr], columns: list[int]) -> Estimate | None:
        """Distinct values of table column ``column`` among the rows that pass
        ``filters`` (over the Scan's schema, as in filtered_rows)."""

    def unique(self, table_columns: tuple[int, ...]) -> bool | None:
        """A primary-key guess: are these table columns together unique?"""
