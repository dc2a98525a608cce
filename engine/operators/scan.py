"""Scan source: Parquet row groups -> blocks, with pushed-down filters,
row-group and page pruning (footer min/max, page index, bloom filters),
synopsis skipping and statistics collection (engine/operators/scan_stats.py)."""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector, rows_of
from engine.config import machine_cores
from engine.context import PruningCounters
from engine.errors import FileFormatError, PqdbError
from engine.filtering.conjunction import Conjunction
from engine.filtering.pruning import ScanPruner
from engine.operators.filter import select_vector
from engine.pipeline import Source
from planner.expressions import column_indexes, remap_columns
from planner.logical import Scan
from scan.encodings.dictionary import gather


class CodedVector(Vector):
    """A string Vector of a scan held as the dictionary codes it was decoded
    from (int32 per row) and the dictionary's views (over ``heap``), so
    operators can work on codes (filters, group-by).  ``data``, the rows'
    own views, is gathered from them on first use only: a column that is
    only filtered on or grouped by never builds it.  Anything that builds a
    new plain Vector from ``data`` simply drops the codes.  (Scans make them
    for NULL-free chunks only; the code of a NULL row would be a gap.)"""

    def __init__(self, type, codes: np.ndarray, dictionary: np.ndarray, heap: np.ndarray,
                 nulls: np.ndarray | None = None, data: np.ndarray | None = None):
        self.type = type
        self.codes, self.dictionary = codes, dictionary
        self.heap = heap
        self.nulls = nulls
        self.children = None
        self._data = data

    @property
    def data(self) -> np.ndarray:
        if self._data is None:
            self._data = gather(self.dictionary, self.codes)
        return self._data

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, idx: np.ndarray, kept: int | None = None) -> "CodedVector":
        """Rows idx (positions, or a bool mask keeping ``kept`` rows)."""
        codes, nulls = rows_of([self.codes, self.nulls], idx, kept)
        return CodedVector(self.type, codes, self.dictionary, self.heap, nulls)

    def slice(self, start: int, stop: int) -> "CodedVector":
        nulls = None if self.nulls is None else self.nulls[start:stop]
        data = None if self._data is None else self._data[start:stop]
        return CodedVector(self.type, self.codes[start:stop], self.dictionary, self.heap, nulls,
                           data)


# restricted columns keep their surviving rows by index (not by mask) when
# fewer than 1/_GATHER_FRACTION of the rows survive
_GATHER_FRACTION = 8


def column_vector(pf, rg: int, file_col: int, typ, rows=None, row_start: int = 0,
                  row_count: int | None = None) -> Vector:
    """One column chunk of a row group as a Vector (only rows [row_start,
    row_start+row_count) when a count is given, and of those only the rows
    where the bool mask ``rows`` is True, when given); string columns stored
    as dictionary pages come as CodedVectors.  Nested (LIST / MAP / STRUCT)
    columns are named by their top-level field (``file_col`` is its name)."""
    if typ.is_nested:
        from engine.expr.nested import vector_from_scan
        vec = vector_from_scan(pf.read_nested(rg, file_col), typ)
        if row_count is not None:
            vec = vec.slice(row_start, row_start + row_count)
        return vec if rows is None else select_vector(vec, rows)
    if typ.id == "NULL":                # the NULL type (Parquet UNKNOWN): nothing to read
        n = pf.row_groups[rg].num_rows if row_count is None else row_count
        if rows is not None:
            n = int(np.count_nonzero(rows))
        return Vector(typ, np.zeros(n, np.bool_), np.ones(n, np.uint8))
    ranged = {} if row_count is None else {"row_start": row_start, "row_count": row_count}
    if typ.is_string:
        cd = pf.read_column(rg, file_col, rows, codes=True, **ranged)
        if cd.codes is not None and cd.nulls is None:     # views gathered when first read
            heap = cd.heap if cd.heap is not None else np.zeros(0, np.uint8)
            return CodedVector(typ, cd.codes, cd.dictionary, heap)
    else:
        cd = pf.read_column(rg, file_col, rows, **ranged)
    nulls = cd.nulls
    if nulls is not None:
        nulls = nulls.view(np.uint8) if nulls.dtype == np.bool_ else nulls.astype(np.uint8, copy=False)
        if not nulls.any():
            nulls = None
    heap = cd.heap if typ.is_string else None
    if typ.is_string and heap is None:
        heap = np.zeros(0, np.uint8)
    return Vector(typ, cd.values, nulls, heap)


def _row_width(types) -> int:
    """Bytes per row of a block of these column types (values + null byte)."""
    width = 0
    for t in types:
        width += 17 if t.is_string else 9
    return max(width, 1)


# A scan is cut into at least this many morsels per core (when it has the
# rows), so that the last morsels balance the threads' load.  Per core of the
# machine, not per configured thread: the cut -- and with it the blocks and
# the order of join and aggregate results -- is then the same for every
# ``threads`` setting.
MORSELS_PER_CORE = 8
# A morsel holds at least this many rows (or block_rows, when smaller): below
# it, per-morsel Python outweighs what a finer split buys in balance.
MORSEL_FLOOR_ROWS = 65536
# Morsel cuts fall on multiples of this many rows.  parquet-mr (>= 1.12),
# Arrow C++ and parquet-rs end a data page after 20,000 rows (their default
# page row-count limit) unless the page's byte limit ends it first, so in most
# files every column's pages start at multiples of 20,000 within a row group.
# A cut there leaves no page to two morsels: no page decoded in part, no
# run directory to build, no concatenation of a page's rows with its
# neighbours' (layouts benchmark, one 6M-row row group, Q1 at 2 threads:
# ~225 -> ~200 ms).  Elsewhere a cut inside a page costs what it did before.
PAGE_ROWS = 20000


def announce_reads(files: dict, morsels: list) -> None:
    """Tell each file the row groups, columns and row ranges the scan's
    morsels will read (remote files request them ahead, by pages where
    only some ranges of a row group are read: scan/prefetch.py)."""
    groups: dict = {}                    # (path, rg) -> (cols, row group rows, ranges)
    for path, rg, cols, start, count, num_rows, *_ in morsels:
        groups.setdefault((path, rg), (cols, num_rows, []))[2].append((start, count))
    plans: dict = {}
    for (path, rg), (cols, num_rows, rows) in groups.items():
        whole = sum(n for _, n in rows) >= num_rows
        plans.setdefault(path, []).append((rg, cols, None if whole else rows))
    for path, plan in plans.items():
        will_read = getattr(files[path], "will_read", None)
        if will_read is not None:
            will_read(plan)


class ScanSource(Source):
    """Morsel = a fixed-size row range of one row group; its rows fill the
    worker's block buffer (block_bytes / row width), but no more than give
    every core MORSELS_PER_CORE morsels of the scan, and no fewer than
    MORSEL_FLOOR_ROWS (block_rows when smaller).  A row group of up to two morsels is one morsel (read whole:
    whole-chunk decoding is cheapest, and there are then enough row groups
    to share out).  Blocks are cut to block_rows.

    Morsels larger than a block matter for row groups of many pages: every
    morsel decodes its columns page by page, holding the GIL between the
    kernels, so fewer, larger morsels spend less of the scan in Python."""

    def __init__(self, node: Scan, ctx):
        self.node, self.ctx = node, ctx
        self.block_rows = ctx.config.block_rows
        self.row_width = _row_width([f.type for f in node.schema])
        self.buffer_rows = max(1, ctx.config.block_bytes // self.row_width)
        self.cores = machine_cores()
        self.morsel_rows = min(self.block_rows, self.buffer_rows)    # set by morsels()
        self.types = [f.type for f in node.schema]
        self.filters = list(node.filters)
        self.filter_cols = sorted(set().union(*[column_indexes(f) for f in self.filters])) \
            if self.filters else []
        remap = {c: i for i, c in enumerate(self.filter_cols)}
        self.compact_filters = [remap_columns(f, remap) for f in self.filters]
        self.conjunction = Conjunction(self.compact_filters)
        # this scan's counters, added to the query's too (EXPLAIN ANALYZE shows them)
        self.pruning = PruningCounters(getattr(ctx, "pruning", None))
        self.pruner = ScanPruner(self.filters, self.pruning)
        self.rows_pruned = 0
        self.row_groups_pruned = 0
        self.join_filters: list = []     # (column, JoinKeyFilter) of joins above (executor)
        self._open: dict = {}            # path -> ParquetFile for this query's run
        service = getattr(ctx, "statistics", None)
        self.stats = None                # ScanStatistics: collection and synopsis skipping
        if service is not None and service.enabled:
            from engine.operators.scan_stats import ScanStatistics
            self.stats = ScanStatistics(node, ctx, service)

    def add_join_filter(self, col: int, key_filter) -> None:
        """Rows whose column ``col`` fails ``key_filter`` (an
        engine.filtering.join_keys.JoinKeyFilter: no partner in a join
        above) are dropped before the other columns are decoded; they
        count as rows_join_filtered (EXPLAIN ANALYZE adds them back to the
        scan's rows: they passed its own filters)."""
        self.join_filters.append((col, key_filter))

    def release(self) -> None:
        for _, key_filter in self.join_filters:
            key_filter.release()
        self.join_filters = []

    def _file_columns(self, path, pf) -> list[int]:
        by_name = {c.name: i for i, c in enumerate(pf.columns)}
        lower = {c.name.lower(): i for i, c in enumerate(pf.columns)}
        out = []
        for f in self.node.schema:
            if f.type.is_nested:                    # read by top-level field name
                out.append(f.name)
                continue
            i = by_name.get(f.name, lower.get(f.name.lower()))
            if i is None:
                raise FileFormatError(f"file lacks column {f.name!r} of the table",
                                      file=path, column=f.name)
            out.append(i)
        return out

    def morsels(self) -> list:
        opened = []
        self.ctx.open_together(self.node.files)
        for path in self.node.files:
            pf = self._open[path] = self.ctx.open_file(path)
            opened.append((path, pf, self._file_columns(path, pf)))
        st = self.stats
        if st is not None:
            st.setup(opened)
        collecting = st is not None and st.collecting
        term = self.pruner.term
        groups = []
        for path, pf, cols in opened:
            for rg, meta in enumerate(pf.row_groups):
                if meta.num_rows == 0:
                    continue
                skip = self.pruner.active and not self.pruner.row_group_may_match(pf, rg, cols)
                if not skip and st is not None and term is not None and not st.range_may_match(
                        term, path, st.file_row(path, rg, 0), meta.num_rows):
                    skip = True
                    self.pruning.add(synopses_skipped=1, row_groups_skipped=1,
                                     synopses_row_groups_skipped=1,
                                     synopses_rows_skipped=meta.num_rows)
                if skip:
                    self.row_groups_pruned += 1
                    if not collecting:
                        continue
                groups.append((path, rg, cols, meta.num_rows, skip))
        total = sum(g[3] for g in groups)
        share = total // (MORSELS_PER_CORE * self.cores)
        floor = min(self.block_rows, MORSEL_FLOOR_ROWS)
        self.morsel_rows = min(self.buffer_rows, max(floor, share))
        out = []
        for path, rg, cols, num_rows, skip in groups:
            for m in self._cut(path, rg, cols, num_rows):
                if not skip and st is not None and term is not None and not st.range_may_match(
                        term, path, st.file_row(path, rg, m[3]), m[4]):
                    skip_m = True
                    self.pruning.add(synopses_skipped=1, rows_skipped=m[4],
                                     synopses_rows_skipped=m[4])
                else:
                    skip_m = skip
                if skip_m and not collecting:
                    continue
                if not skip_m and not collecting and st is not None and term is not None:
                    m = self._trim(st, term, m)
                out.append(m + (True,) if skip_m else m)     # collect-only morsel
        announce_reads(self._open, out)
        if st is not None:
            st.count_morsels(out)
        return out

    def _trim(self, st, term, morsel):
        """The morsel without the PAGE_ROWS pieces at its ends that the
        synopses rule out (no row there can match): fewer rows decoded, and
        remote files fetch fewer pages (scan/prefetch.py)."""
        path, rg, cols, start, count, num_rows = morsel
        cuts = list(range(start, start + count, PAGE_ROWS)) + [start + count]
        if len(cuts) <= 2:
            return morsel
        base = st.file_row(path, rg, 0)
        keep = [st.range_may_match(term, path, base + a, b - a) for a, b in zip(cuts, cuts[1:])]
        lo = keep.index(True)
        hi = len(keep) - keep[::-1].index(True)
        if lo == 0 and hi == len(keep):
            return morsel
        dropped = count - (cuts[hi] - cuts[lo])
        self.pruning.add(rows_skipped=dropped, synopses_rows_skipped=dropped)
        return (path, rg, cols, cuts[lo], cuts[hi] - cuts[lo], num_rows)

    def _cut(self, path, rg, cols, num_rows):
        """The morsels of one row group: (path, rg, cols, start, count, num_rows).
        Cuts fall on multiples of PAGE_ROWS when morsels hold that many rows:
        see PAGE_ROWS."""
        size = self.morsel_rows
        if num_rows <= size * 2:
            return [(path, rg, cols, 0, num_rows, num_rows)]
        pieces = -(-num_rows // size)
        step = -(-num_rows // pieces)
        if step >= PAGE_ROWS:
            step = step // PAGE_ROWS * PAGE_ROWS
        return [(path, rg, cols, s, min(step, num_rows - s), num_rows)
                for s in range(0, num_rows, step)]

    def blocks(self, morsel):
        """The morsel's blocks; its block buffer (rows x row width) counts
        against memory_limit while the morsel is produced."""
        nbytes = morsel[4] * self.row_width
        memory = self.ctx.memory
        memory.reserve(nbytes, "scan block buffer")
        try:
            yield from self._morsel_blocks(morsel)
        finally:
            memory.release(nbytes)
        if self.stats is not None:           # (not reached when the scan stops early)
            self.stats.morsel_done(morsel)

    def _join_filtered(self, pf, rg, cols, rng, joins, have, rows, kept):
        """(rows, kept) after the join key filters: each key column is
        decoded whole (kept in ``have``) and tested where rows are left."""
        passed = kept
        mask = rows
        for c, key_filter in joins:
            if c not in have:
                have[c] = column_vector(pf, rg, cols[c], self.types[c], **rng)
            first = mask is None
            if first:
                mask = np.empty(len(have[c]), np.bool_)
            got = key_filter.and_into(have[c], mask, first)
            if got is None:
                if first:
                    mask = None
                continue
            kept = got
            if kept == 0:
                break
        if passed > kept:
            self.pruning.add(rows_join_filtered=passed - kept)
        if mask is not None and kept == len(mask):
            mask = None
        return mask, kept

    def _collect_only(self, pf, morsel, rng) -> None:
        """A morsel the filters rule out, read for the statistics alone: a
        chunk that fails to decode there ends the collection, not the query
        (it would have been skipped)."""
        path, rg, cols = morsel[:3]
        st = self.stats
        try:
            vecs = {i: column_vector(pf, rg, cols[i], self.types[i], **rng)
                    for i in st.positions}
        except PqdbError:
            st.abandon()
            return
        st.add(morsel, vecs, pf)

    def _morsel_blocks(self, morsel):
        path, rg, cols, start, num_rows, rg_rows = morsel[:6]
        rng = {} if num_rows == rg_rows else {"row_start": start, "row_count": num_rows}
        pf = self._open.get(path) or self.ctx.open_file(path)
        st = self.stats if self.stats is not None and self.stats.collecting else None
        if len(morsel) > 6:
            self._collect_only(pf, morsel, rng)
            return
        if self.pruner.active and not self.pruner.range_may_match(
                pf, rg, cols, start, num_rows, key=path):
            if st is not None:
                self._collect_only(pf, morsel, rng)
            return                      # page index: no row here can match
        br = self.block_rows
        joins = [(c, f) for c, f in self.join_filters if f.active]
        if not self.filters and not joins:
            vecs = [column_vector(pf, rg, cols[i], t, **rng) for i, t in enumerate(self.types)]
            if st is not None:
                st.add(morsel, {i: vecs[i] for i in st.positions}, pf)
            n = len(vecs[0]) if vecs else num_rows
            full = Block(vecs, n)
            for start in range(0, n, br):
                yield full.slice(start, start + br)
            return
        # restricted columns first; other columns only when rows survive
        fvecs = [column_vector(pf, rg, cols[c], self.types[c], **rng) for c in self.filter_cols]
        n = len(fvecs[0]) if fvecs else num_rows
        whole = {}                      # collected columns: every row decoded, once
        if st is not None:
            whole = {i: column_vector(pf, rg, cols[i], self.types[i], **rng)
                     for i in st.positions if i not in self.filter_cols}
            st.add(morsel, {i: whole[i] if i in whole else fvecs[self.filter_cols.index(i)]
                            for i in st.positions}, pf)
        have = dict(zip(self.filter_cols, fvecs))
        rows, kept = None, n
        if self.filters:
            fblock = Block(fvecs, n)
            masks, kept = [], 0
            for start in range(0, n, br):
                mask, count = self.conjunction.mask(fblock.slice(start, start + br))
                masks.append(mask)
                kept += count
            if kept and kept < n:
                rows = masks[0] if len(masks) == 1 else np.concatenate(masks)
        if joins and kept:
            have.update((c, whole[c]) for c, _ in joins if c in whole and c not in have)
            rows, kept = self._join_filtered(pf, rg, cols, rng, joins, have, rows, kept)
        if kept == 0:
            return
        # the other columns decode only the surviving rows; the restricted
        # ones keep them by index when few survive (one pass over the mask,
        # then gathers of only those rows)
        picked = rows if rows is None or kept * _GATHER_FRACTION > n else np.flatnonzero(rows)
        have.update(whole)
        vecs = [(have[i] if rows is None else select_vector(have[i], picked, kept)) if i in have
                else column_vector(pf, rg, cols[i], t, rows, **rng)
                for i, t in enumerate(self.types)]
        full = Block(vecs, kept)
        for start in range(0, kept, br):
            yield full.slice(start, start + br)
