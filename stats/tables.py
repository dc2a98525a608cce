"""What is known about files and tables: the connection's statistics store.

The in-memory form is plain data (numpy arrays, byte strings and numbers,
no live objects), one record per object, so that the metadata store of a
later issue can write each as a Parquet row:

- ``FileStatistics`` (one per file, keyed by its identity: path, size and
  modification time in ns): its rows, the row bounds of its synopses, and
  per column a ``ColumnStatistics`` (packed HLL registers and their
  estimate, null count, synopses); pair sketches for key guesses.
- ``TableSample`` (one per table, keyed by the identities of its files in
  order): the sample positions and a ``SampleColumn`` per column.

Records are never changed once published: a scan that adds columns
publishes new records (copy on write), so a planner reading them sees
one consistent state.  A file whose identity changed (rewritten) has no
statistics: its old record is replaced or dropped on the next lookup, and
samples of tables holding it go with it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from stats.sample import SampleColumn

if TYPE_CHECKING:            # the synopses' kernels load numba: not at import
    from stats.synopses import SynopsisColumn

Identity = tuple            # (path, size, mtime_ns)


@dataclass(frozen=True)
class ColumnStatistics:
    kind: str
    rows: int                   # rows of the file
    null_count: int
    registers: bytes            # hll.pack()ed registers (non-NULL values)
    distinct: float             # their estimate
    synopses: SynopsisColumn

    @property
    def nbytes(self) -> int:
        return len(self.registers) + self.synopses.nbytes + 24


@dataclass(frozen=True)
class FileStatistics:
    identity: Identity
    rows: int
    bounds: np.ndarray                                  # synopsis row bounds
    columns: dict = field(default_factory=dict)         # name -> ColumnStatistics
    pairs: dict = field(default_factory=dict)           # (a, b) -> (packed registers, estimate)

    def merged(self, columns: dict, pairs: dict) -> "FileStatistics":
        return replace(self, columns={**self.columns, **columns}, pairs={**self.pairs, **pairs})

    @property
    def synopses(self) -> int:
        return len(self.bounds) - 1


@dataclass(frozen=True)
class TableSample:
    identities: tuple
    rows: int
    positions: np.ndarray
    columns: dict = field(default_factory=dict)         # name -> SampleColumn

    def merged(self, columns: dict) -> "TableSample":
        return replace(self, columns={**self.columns, **columns})

    @property
    def size(self) -> int:
        return len(self.positions)


def pair_key(a: str, b: str) -> tuple:
    return (a, b) if a <= b else (b, a)


class StatisticsStore:
    """The statistics one connection has collected (thread-safe)."""

    def __init__(self):
        self._files: dict[str, FileStatistics] = {}
        self._samples: dict[tuple, TableSample] = {}
        self._wanted: dict[tuple, set] = {}          # table identities -> wanted pairs
        self._distinct: dict[tuple, float] = {}      # (identities, name) -> merged estimate
        self._lock = threading.Lock()

    # ---- lookups ----------------------------------------------------------------
    def file(self, identity: Identity) -> FileStatistics | None:
        with self._lock:
            got = self._files.get(identity[0])
            if got is not None and got.identity != tuple(identity):
                self._forget(identity[0])
                got = None
            return got

    def sample(self, identities: tuple) -> TableSample | None:
        with self._lock:
            return self._samples.get(tuple(identities))

    def wanted_pairs(self, identities: tuple) -> set:
        with self._lock:
            return set(self._wanted.get(tuple(identities), ()))

    def want_pair(self, identities: tuple, pair: tuple) -> None:
        with self._lock:
            self._wanted.setdefault(tuple(identities), set()).add(pair_key(*pair))

    def table_distinct(self, identities: tuple, name: str, files: list) -> float | None:
        """The distinct estimate of column ``name`` over all ``files``
        (FileStatistics of the table's files, in order), registers merged;
        None unless every file has the column."""
        from stats import hll
        cols = [f.columns.get(name) if f is not None else None for f in files]
        if not cols or any(c is None for c in cols):
            return None
        if len(cols) == 1:
            return cols[0].distinct
        key = (tuple(identities), name)
        with self._lock:
            got = self._distinct.get(key)
        if got is None:
            regs = hll.unpack(cols[0].registers)
            for c in cols[1:]:
                hll.merge_into(regs, hll.unpack(c.registers))
            got = hll.count(regs)
            with self._lock:
                self._distinct[key] = got
        return got

    def table_pair_distinct(self, identities: tuple, pair: tuple, files: list) -> float | None:
        from stats import hll
        key = pair_key(*pair)
        got = [f.pairs.get(key) if f is not None else None for f in files]
        if not got or any(g is None for g in got):
            return None
        if len(got) == 1:
            return got[0][1]
        regs = hll.unpack(got[0][0])
        for g in got[1:]:
            hll.merge_into(regs, hll.unpack(g[0]))
        return hll.count(regs)

    # ---- publishing -------------------------------------------------------------
    def publish(self, files: list, sample: TableSample | None) -> None:
        """Add what a scan collected: ``files`` are FileStatistics holding
        the new columns/pairs only (merged into what is known), ``sample``
        a TableSample with the new sample columns."""
        with self._lock:
            for fs in files:
                path = fs.identity[0]
                old = self._files.get(path)
                if old is not None and old.identity != fs.identity:
                    self._forget(path)
                    old = None
                self._files[path] = fs if old is None else old.merged(fs.columns, fs.pairs)
            if sample is not None:
                key = tuple(sample.identities)
                if any(self._stale(i) for i in key):
                    return
                old = self._samples.get(key)
                self._samples[key] = sample if old is None else old.merged(sample.columns)
                self._distinct = {k: v for k, v in self._distinct.items() if k[0] != key}

    def _stale(self, identity) -> bool:
        got = self._files.get(identity[0])
        return got is not None and got.identity != tuple(identity)

    def _forget(self, path: str) -> None:
        """Drop the statistics of ``path`` and of every table holding it
        (lock held)."""
        self._files.pop(path, None)
        for store in (self._samples, self._wanted):
            for key in [k for k in store if any(i[0] == path for i in k)]:
                del store[key]
        self._distinct = {k: v for k, v in self._distinct.items()
                          if not any(i[0] == path for i in k[0])}

    def forget_file(self, path: str) -> None:
        with self._lock:
            self._forget(path)

    def clear(self) -> None:
        with self._lock:
            self._files.clear()
            self._samples.clear()
            self._wanted.clear()
            self._distinct.clear()


def column_nbytes(name: str, files: list, sample: TableSample | None) -> int:
    """Bytes the statistics of one column take in memory: registers,
    synopses and its sample column (pair sketches not included)."""
    total = 0
    for f in files:
        c = None if f is None else f.columns.get(name)
        if c is not None:
            total += c.nbytes
    if sample is not None and name in sample.columns:
        total += sample.columns[name].nbytes
    return total


def statistics_nbytes(files: list, sample: TableSample | None) -> int:
    """Bytes a table's statistics hold: every column's registers, synopses
    and sample values, pair sketches, synopsis bounds and sample positions
    (array and byte-string payloads; the Python records around them add
    about 200 bytes per column)."""
    total = 0
    for f in files:
        if f is None:
            continue
        total += f.bounds.nbytes + sum(c.nbytes for c in f.columns.values())
        total += sum(len(p[0]) + 8 for p in f.pairs.values())
    if sample is not None:
        total += sample.positions.nbytes + sum(c.nbytes for c in sample.columns.values())
    return total


SampleColumn = SampleColumn         # re-exported: the store's record types in one place
