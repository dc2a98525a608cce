"""Collecting statistics from the blocks a scan decodes.

The engine's scan operator (engine/operators/scan_stats.py) creates one
``TableCollector`` per scan that has columns to collect, and hands it
every decoded morsel of those columns (``add``), from any worker thread.
Each thread folds its morsels into its own accumulators (HLL registers,
synopses, null counts per file and column: numba kernels per block, no
locks); sample slots are written in place (morsels own disjoint slots).
When every morsel of a file is done the engine calls ``finish_file``,
which merges the threads' accumulators (registers by max, synopses by
min/max, counts by sum) and packs them; when the scan is done,
``results`` gives the records to publish (stats/tables.py).  Nothing is
published before that: a scan stopped early keeps nothing.

Dictionary-coded strings are hashed once per dictionary entry (per
scan, per dictionary), then gathered by code.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from stats import hll
from stats.columns import BOOL, FLOAT, INT, STRING, UINT, ColumnBlock
from stats.sample import SampleFill, positions_in
from stats.synopses import SynopsisAccumulator
from stats.tables import ColumnStatistics, FileStatistics, TableSample, pair_key


@dataclass
class ColumnTarget:
    """A column to collect: its name in the table, collector kind, the
    width its integers hash in (the PLAIN width: 4 for INT32-stored, 8
    else, 1 for booleans), its storage dtype; ``sample``: fill the table
    sample; ``files``: indexes of the files lacking its statistics."""
    name: str
    kind: str
    hash_width: int
    dtype: object
    sample: bool
    files: frozenset


@dataclass
class FilePlan:
    identity: tuple
    rows: int
    first_row: int              # of the file in the table
    bounds: np.ndarray          # synopsis row bounds
    footer: dict                # column name -> {synopsis: FooterRange}


class _Accumulator:
    """One thread's partial statistics of one file."""

    def __init__(self):
        self.registers: dict = {}
        self.seen: dict = {}                      # string column -> hll.new_seen(), None: off
        self.synopses: dict = {}
        self.pairs: dict = {}


class TableCollector:
    def __init__(self, targets: list[ColumnTarget], files: list[FilePlan],
                 sample: TableSample | None, pairs: list[tuple], precision: int = hll.P):
        self.targets = {t.name: t for t in targets}
        self.files = files
        self.sample = sample                      # positions (and known columns)
        self.pairs = [pair_key(*p) for p in pairs]
        self.precision = precision
        self._fills = {t.name: SampleFill(t.kind, sample.size, t.dtype)
                       for t in targets if t.sample and sample is not None}
        self._locals: dict = {}                   # (thread id, file index) -> _Accumulator
        self._lock = threading.Lock()
        self._local = threading.local()           # .used: scratch marks
        self._dictionaries: dict = {}             # id -> (dictionary, entry hashes)
        self._done: dict = {}                     # file index -> FileStatistics (new parts)
        self._no_seen = hll.new_seen()            # (the argument when unused)

    @property
    def names(self) -> list[str]:
        return list(self.targets)

    # ---- per morsel --------------------------------------------------------------
    def add(self, file_index: int, first_row: int, blocks: dict, minmax_from_footer=()) -> None:
        """Fold the decoded rows [first_row, first_row + n) of file
        ``file_index`` (file rows): ``blocks`` maps column name ->
        ColumnBlock; ``minmax_from_footer`` names the columns whose
        synopses for these rows come from the footer."""
        plan = self.files[file_index]
        acc = self._accumulator(file_index)
        slots = rows = None
        if self._fills:
            slots, rows = positions_in(self.sample.positions, plan.first_row + first_row,
                                       len(next(iter(blocks.values()))))
        hashes = {}
        for name, block in blocks.items():
            t = self.targets.get(name)
            if t is None:
                continue
            if file_index in t.files:
                regs = acc.registers.get(name)
                if regs is None:
                    regs = acc.registers[name] = hll.new_registers(self.precision)
                    acc.seen[name] = hll.new_seen() if t.kind == STRING else None
                if not self._add_hll(regs, acc.seen[name], t, block):
                    acc.seen[name] = None
                syn = acc.synopses.get(name)
                if syn is None:
                    syn = acc.synopses[name] = SynopsisAccumulator(t.kind, plan.bounds)
                if name not in minmax_from_footer:
                    syn.add(block, first_row)
            fill = self._fills.get(name)
            if fill is not None:
                fill.fill(slots, rows, block)
        for a, b in self.pairs:
            if a in blocks and b in blocks:
                regs = acc.pairs.get((a, b))
                if regs is None:
                    regs = acc.pairs[(a, b)] = hll.new_registers(self.precision)
                ta, tb = self.targets[a], self.targets[b]
                na, nb = blocks[a].nulls, blocks[b].nulls
                nulls = na if nb is None else nb if na is None else (na | nb)
                nulls = hll.no_nulls() if nulls is None else nulls
                if ta.kind in (INT, UINT) and tb.kind in (INT, UINT):
                    hll.add_pair_ints(regs, blocks[a].values, blocks[b].values, nulls)
                    continue
                ha = hashes.get(a)
                if ha is None:
                    ha = hashes[a] = self._row_hashes(self.targets[a], blocks[a])
                hb = hashes.get(b)
                if hb is None:
                    hb = hashes[b] = self._row_hashes(self.targets[b], blocks[b])
                hll.add_pair_hashes(regs, ha, hb, nulls)

    def _accumulator(self, file_index: int) -> _Accumulator:
        key = (threading.get_ident(), file_index)
        acc = self._locals.get(key)
        if acc is None:
            with self._lock:
                acc = self._locals.setdefault(key, _Accumulator())
        return acc

    def _dictionary_hashes(self, dictionary: np.ndarray, heap) -> np.ndarray:
        """The hashes of a dictionary's entries, computed once per scan
        (shared by the threads: the morsels of one row group go to every
        thread, and a dictionary of unique names is as long as its rows)."""
        key = id(dictionary)
        got = self._dictionaries.get(key)
        if got is not None and got[0] is dictionary:
            return got[1]
        out = np.empty(len(dictionary), np.uint64)
        hll.hash_views(dictionary, _heap(heap), out)
        with self._lock:
            if len(self._dictionaries) >= 16:
                self._dictionaries.clear()
            self._dictionaries[key] = (dictionary, out)
        return out

    def _add_hll(self, regs, seen, t: ColumnTarget, block: ColumnBlock) -> bool:
        """Add a block's values; for strings, returns whether the ``seen``
        memory paid (found at least 3/4 of the rows: else it is dropped,
        its misses costing more than its hits save)."""
        nulls = hll.no_nulls() if block.nulls is None else block.nulls
        if t.kind == STRING:
            if block.values is None:
                hashes = self._dictionary_hashes(block.dictionary, block.heap)
                hll.add_codes(regs, hashes, block.codes, self._used(len(hashes)))
                return seen is not None
            use = seen is not None
            hits = hll.add_views(regs, self._no_seen if seen is None else seen, block.values,
                                 _heap(block.heap), nulls, use)
            return use and hits * 4 >= 3 * len(block)
        values = block.values
        entries = block.entries
        if entries is not None and entries.dtype == values.dtype:
            values, nulls = entries, hll.no_nulls()   # the chunk's dictionary: each value once
        if t.kind == FLOAT:
            add = hll.add_float32 if values.dtype == np.float32 else hll.add_float64
            add(regs, values, nulls)
        elif t.kind == BOOL:
            hll.add_int64(regs, values.view(np.uint8), nulls, 1)
        elif values.dtype.itemsize == 8:
            hll.add_int64(regs, values.view(np.int64), nulls, t.hash_width)
        else:                                  # 1-4 byte integers: PLAIN INT32
            hll.add_int32(regs, values, nulls)
        return False

    def _used(self, n: int) -> np.ndarray:
        """The thread's scratch marks of dictionary entries (all 0)."""
        used = getattr(self._local, "used", None)
        if used is None or len(used) < n:
            used = self._local.used = np.zeros(max(n, 1024), np.uint8)
        return used[:n]

    def _row_hashes(self, t: ColumnTarget, block: ColumnBlock) -> np.ndarray:
        n = len(block)
        out = np.empty(n, np.uint64)
        if t.kind == STRING:
            if block.values is None:
                hll.gather_hashes(self._dictionary_hashes(block.dictionary, block.heap),
                                  block.codes, out)
            else:
                hll.hash_views(block.values, _heap(block.heap), out)
            return out
        hll.hash_numbers(block.values.view(np.uint8) if t.kind == BOOL else block.values, out)
        return out

    # ---- per file, per scan ------------------------------------------------------
    def finish_file(self, file_index: int) -> None:
        """Merge the threads' accumulators of a file whose morsels are all
        done (called once per file, after its last morsel)."""
        with self._lock:
            accs = [a for (tid, f), a in self._locals.items() if f == file_index]
            for key in [k for k in self._locals if k[1] == file_index]:
                del self._locals[key]
        plan = self.files[file_index]
        columns, pairs = {}, {}
        for name, t in self.targets.items():
            if file_index not in t.files:
                continue
            regs = hll.new_registers(self.precision)
            syn = None
            for a in accs:
                r = a.registers.get(name)
                if r is not None:
                    hll.merge_into(regs, r)
                s = a.synopses.get(name)
                if s is not None:
                    if syn is None:
                        syn = s
                    else:
                        syn.merge(s)
            if syn is None:
                syn = SynopsisAccumulator(t.kind, plan.bounds)
            synopses = syn.finish(plan.footer.get(name))
            columns[name] = ColumnStatistics(t.kind, plan.rows, int(synopses.null_counts.sum()),
                                             hll.pack(regs), hll.count(regs), synopses)
        for key in self.pairs:
            regs = hll.new_registers(self.precision)
            for a in accs:
                r = a.pairs.get(key)
                if r is not None:
                    hll.merge_into(regs, r)
            pairs[key] = (hll.pack(regs), hll.count(regs))
        self._done[file_index] = FileStatistics(plan.identity, plan.rows, plan.bounds,
                                                columns, pairs)

    def results(self) -> tuple[list, TableSample | None]:
        """(FileStatistics of the new parts, TableSample with the new
        sample columns); call after finish_file of every file."""
        files = [self._done[i] for i in sorted(self._done)]
        sample = None
        if self._fills and self.sample is not None:
            cols = {name: fill.finish() for name, fill in self._fills.items() if fill.complete()}
            sample = TableSample(self.sample.identities, self.sample.rows, self.sample.positions,
                                 cols)
        return files, sample


def _heap(heap):
    return heap if heap is not None and len(heap) else np.zeros(1, np.uint8)


KINDS = (INT, UINT, FLOAT, STRING, BOOL)
