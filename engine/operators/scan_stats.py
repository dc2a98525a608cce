"""A scan's part in adaptive statistics (stats/): what it collects, and the
synopses it skips by.

Collecting.  When a scan reads a column that some file of its table has
no statistics for (or the table's sample lacks), it collects that column
in this run, as the paper's scan does: every row of it is decoded -- a
row group or page range that the filters rule out is still read for the
collected columns alone (a "collect-only" morsel, which yields no rows) --
and the decoded blocks, the same the query uses, pass through a
``stats.collect.TableCollector`` (thread-local numba kernels per morsel).
The pruning counters still count what the query's rows skipped.  A file's
accumulators are merged when its last morsel is done; when every morsel
of the scan is done, the scan publishes into the connection's store.  A
scan stopped early (LIMIT, an error) publishes nothing.  Within one query
a column is collected by the first scan that reads it
(``ExecutionContext.statistics_claims``).

Skipping.  Once a table's filter columns have synopses, a scan drops the
row groups and morsels no row of which can match any synopsis they
overlap (stats/synopses.py bounds read as the pruning ValueRanges of
engine/filtering/pruning.py), on top of footer, page-index and bloom
pruning: for files written without statistics, synopses are the only
source.  While it collects other columns those ranges become collect-only
morsels instead.
"""

from __future__ import annotations

import threading

import numpy as np

from engine.filtering.pruning import ValueRange, chunk_range, may_match
from stats.collect import ColumnTarget, FilePlan, TableCollector
from stats.columns import FLOAT, ColumnBlock, kind_of
from stats.sample import sample_positions, table_seed
from stats.synopses import FooterRange, footer_synopses, synopsis_bounds, whole_row_groups
from stats.tables import TableSample, pair_key


def collect_kind(typ) -> str | None:
    """The stats kind of a column of SQL type ``typ`` (None: not collected)."""
    if typ.is_nested or typ.id in ("NULL", "INTERVAL"):
        return None
    if typ.is_string:
        return kind_of(None, True)
    dtype = typ.numpy_dtype
    return None if dtype == object else kind_of(dtype)


class ScanStatistics:
    """Collection and synopsis skipping of one ScanSource run."""

    def __init__(self, node, ctx, service):
        self.node, self.ctx, self.service = node, ctx, service
        self.config = ctx.config
        self.collector: TableCollector | None = None
        self.positions: list[int] = []            # scan-schema positions collected
        self.names = [node.table_columns[c].name for c in node.columns]
        self._files: dict = {}                    # path -> file index
        self._row_starts: list = []               # per file: first row of every row group
        self._remaining: list = []                # per file: morsels not done
        self._left = 0
        self._lock = threading.Lock()
        self._footer_rgs: list = []               # per file: name -> row groups from footer
        self._synopses: list = []                 # per file: FileStatistics for skipping
        self._ok: dict = {}                       # file index -> may-match per synopsis
        self._abandoned = False

    @property
    def collecting(self) -> bool:
        return self.collector is not None

    def abandon(self) -> None:
        """Give up collecting (the scan goes on): nothing is published."""
        self._abandoned = True

    # ---- setup -------------------------------------------------------------------
    def setup(self, opened: list) -> None:
        """``opened``: (path, ParquetFile, file columns) per file, in order."""
        paths = [p for p, _, _ in opened]
        if not paths or len(set(paths)) != len(paths):
            return                 # no file left (partition pruning), or a file twice
        store = self.service.store
        ids = tuple(self.service.catalog.file_identity(p) for p in paths)
        fstats = [store.file(i) for i in ids]
        self._files = {p: i for i, p in enumerate(paths)}
        self._row_starts = [np.cumsum([0] + [m.num_rows for m in pf.row_groups]).tolist()
                            for _, pf, _ in opened]
        self._synopses = fstats
        sample = store.sample(ids)
        claims = self.ctx.statistics_claims
        targets, collect = [], set()
        for pos, f in enumerate(self.node.schema):
            name = self.names[pos]
            kind = collect_kind(f.type)
            if kind is None:
                continue
            missing = frozenset(i for i, fs in enumerate(fstats)
                                if fs is None or name not in fs.columns)
            need_sample = sample is None or name not in sample.columns
            if not missing and not need_sample:
                continue
            if (ids, name) in claims:
                continue
            claims.add((ids, name))
            pf0, col0 = opened[0][1], opened[0][2][pos]
            phys = pf0.columns[col0].physical_type if isinstance(col0, int) else ""
            width = {"INT32": 4, "BOOLEAN": 1}.get(phys, 8)
            targets.append(ColumnTarget(name, kind, width, f.type.numpy_dtype, need_sample,
                                        missing))
            collect.add(pos)
        pairs = []
        by_name = {n: p for p, n in enumerate(self.names)
                   if collect_kind(self.node.schema[p].type) is not None}
        for a, b in sorted(store.wanted_pairs(ids)):
            if a not in by_name or b not in by_name:
                continue
            key = pair_key(a, b)
            if all(fs is not None and key in fs.pairs for fs in fstats) or (ids, key) in claims:
                continue
            claims.add((ids, key))
            pairs.append(key)
            collect.update((by_name[a], by_name[b]))
        for p in collect:                        # pair columns need their targets' kinds
            if not any(t.name == self.names[p] for t in targets):
                f = self.node.schema[p]
                targets.append(ColumnTarget(self.names[p], collect_kind(f.type), 8,
                                            f.type.numpy_dtype, False, frozenset()))
        if not targets:
            return
        total = sum(int(pf.num_rows) for _, pf, _ in opened)
        if sample is None:
            size = self.config.statistics_sample
            sample = TableSample(ids, total, sample_positions(total, size, table_seed(ids)))
        plans, self._footer_rgs = [], []
        first_rows = np.cumsum([0] + [int(pf.num_rows) for _, pf, _ in opened]).tolist()
        for i, (path, pf, cols) in enumerate(opened):
            sizes = [m.num_rows for m in pf.row_groups]
            fs = fstats[i]
            bounds = fs.bounds if fs is not None else \
                synopsis_bounds(sizes, self.config.statistics_synopses)
            groups = whole_row_groups(bounds, sizes)
            footer, from_footer = {}, {}
            for t in targets:
                pos = self.names.index(t.name)
                if i not in t.files or not isinstance(cols[pos], int):
                    continue
                col = cols[pos]
                got = footer_synopses(groups, lambda rg: _footer_range(pf, rg, col),
                                      pf.columns[col].max_def_level == 0)
                if got:
                    footer[t.name] = got
                    from_footer[t.name] = {rg for s in got for rg in groups[s]}
            plans.append(FilePlan(ids[i], int(pf.num_rows), first_rows[i], bounds, footer))
            self._footer_rgs.append(from_footer)
        self.collector = TableCollector(targets, plans, sample, pairs)
        self.positions = sorted(collect)

    def count_morsels(self, morsels: list) -> None:
        """The scan's morsels are known: count them per file (files with
        none are finished now)."""
        if self.collector is None:
            return
        self._remaining = [0] * len(self._files)
        for m in morsels:
            self._remaining[self._files[m[0]]] += 1
        self._left = len(morsels)
        for i, n in enumerate(self._remaining):
            if n == 0:
                self.collector.finish_file(i)
        if self._left == 0:
            self._publish()

    # ---- synopses ----------------------------------------------------------------
    def range_may_match(self, term, path: str, start: int, count: int) -> bool:
        """False when the synopses of the filter columns prove that no row in
        file rows [start, start + count) of ``path`` can match ``term``."""
        i = self._files.get(path)
        if term is None or i is None:
            return True
        ok = self._ok.get(i)
        if ok is None:
            ok = self._ok[i] = self._synopsis_matches(term, i)
            if ok is None:
                return True
        if ok is True:
            return True
        bounds = self._synopses[i].bounds
        a = int(np.searchsorted(bounds, start, side="right")) - 1
        b = int(np.searchsorted(bounds, start + count, side="left"))
        return bool(ok[a:b].any())

    def _synopsis_matches(self, term, i: int):
        fs = self._synopses[i] if i < len(self._synopses) else None
        if fs is None:
            return True
        from engine.filtering.terms import term_columns
        cols = {p: fs.columns.get(self.names[p]) for p in term_columns(term)}
        if all(c is None for c in cols.values()):
            return True
        rows = np.diff(fs.bounds)
        ok = np.ones(len(rows), np.bool_)
        for s in range(len(rows)):
            def range_of(p, s=s):
                c = cols.get(p)
                if c is None:
                    return None
                lo, hi = c.synopses.bounds_of(s)
                if c.kind == FLOAT and lo == 0.0:
                    lo = -0.0
                return ValueRange(lo, hi, int(c.synopses.null_counts[s]), int(rows[s]))
            ok[s] = may_match(term, range_of)
        return True if ok.all() else ok

    def file_row(self, path: str, rg: int, start: int) -> int:
        i = self._files.get(path)
        return 0 if i is None else self._row_starts[i][rg] + start

    # ---- per morsel --------------------------------------------------------------
    def add(self, morsel, vectors: dict, pf=None) -> None:
        """Fold the morsel's decoded columns (scan-schema position -> Vector);
        with the ParquetFile ``pf`` they were read from, a number column
        whose chunk is all dictionary pages brings the dictionary, which
        the distinct count hashes instead of the rows, when it has at most
        half as many entries (Q5's lineitem: 11 discounts for 114k rows a
        row group, 28k order keys; not l_extendedprice's 106k, whose
        widening would cost more than it saves)."""
        if self._abandoned:
            return
        path, rg, cols, start = morsel[:4]
        i = self._files[path]
        footer = [n for n, rgs in self._footer_rgs[i].items() if rg in rgs]
        try:
            blocks = {}
            for p, v in vectors.items():
                block = blocks[self.names[p]] = as_column_block(v)
                col = cols[p] if p < len(cols) else None
                if pf is not None and block.values is not None and not v.type.is_string and \
                        not v.type.is_nested and isinstance(col, int) and \
                        0 <= col < len(pf.columns):
                    block.entries = pf.chunk_dictionary(rg, col, len(block.values) // 2)
            self.collector.add(i, self._row_starts[i][rg] + start, blocks, footer)
        except Exception:           # statistics are a cache: they never fail a query
            self.abandon()

    def morsel_done(self, morsel) -> None:
        if self.collector is None or self._abandoned:
            return
        i = self._files[morsel[0]]
        # one lock around the count, the file's finish and the publication:
        # a thread that finished the last morsel of the scan must not
        # publish while another still finishes an earlier file (that file's
        # columns were missing from the store now and then)
        with self._lock:
            self._remaining[i] -= 1
            self._left -= 1
            try:
                if self._remaining[i] == 0:
                    self.collector.finish_file(i)
                if self._left == 0:
                    self._publish()
            except Exception:
                self.abandon()

    def _publish(self) -> None:
        if self._abandoned:
            return
        files, sample = self.collector.results()
        self.service.store.publish(files, sample)


def as_column_block(vec) -> ColumnBlock:
    codes = getattr(vec, "codes", None)
    if codes is not None:
        return ColumnBlock(None, vec.nulls, vec.heap, codes, vec.dictionary)
    return ColumnBlock(vec.data, vec.nulls, vec.heap)


def _footer_range(pf, rg: int, col: int) -> FooterRange | None:
    """A row group's footer statistics as a FooterRange, when they give
    min and max (or say every value is NULL)."""
    r = chunk_range(pf, rg, col)
    if r.lo is not None and r.hi is not None:
        nc = 0 if r.required else r.null_count
        return None if nc is None else FooterRange(r.lo, r.hi, nc)
    if r.null_count is not None and r.null_count >= r.num_values > 0:
        return FooterRange(None, None, r.null_count)
    return None
