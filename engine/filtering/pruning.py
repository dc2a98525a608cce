"""Skipping what a scan's pushed filters cannot match: row groups by footer
statistics and bloom filters, row ranges inside a row group by the page index.
The filters are read as terms (engine/filtering/terms.py); whatever the
statistics cannot decide may match: pruning never guesses.

Statistics are read in the storage form of the column (planner/types.py) and
trusted only as far as the format allows:
  * min_value / max_value only under the TYPE_ORDER column order (or no
    column_orders at all); an unknown order (e.g. IEEE_754_TOTAL_ORDER) or an
    undefined one (INT96, INTERVAL) disables min/max;
  * the deprecated min / max only where signed comparison is the type's
    order (signed integers, dates, times, timestamps, integer decimals,
    floats, booleans), never for byte arrays or unsigned integers;
  * a max flagged inexact (is_max_value_exact = false) of a byte array is
    truncated: its upper bound is the max incremented (none if all 0xFF);
  * floats: min/max may leave NaN out, and in DuckDB NaN is greater than
    every number, so ``> / >=`` never prune by max; NaN literals never prune;
  * null_count == number of values: only IS NULL can match; null_count 0
    (or a required column): IS NULL cannot.
Bloom filters (scan/bloom.py) reject row groups for = and IN."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import numpy as np

from engine.filtering.terms import (NO_MATCH, UNKNOWN, AllOf, Leaf, bloom_columns,
                                    filter_terms, term_columns, term_key)
from scan.errors import PqdbError
from scan.pageindex import offset_index_agrees
from scan.metadata import decode_stat_value, ordered_bounds, usable_null_count

_UNSIGNED_NAMES = ("uint8", "uint16", "uint32", "uint64")
log = logging.getLogger("pqdb.scan")


# ---- value ranges --------------------------------------------------------------

@dataclass
class ValueRange:
    """What statistics say of some rows of one column: lo/hi bound the
    non-null (non-NaN) values (None: unknown), null_count of num_values
    (None: unknown)."""
    lo: object
    hi: object
    null_count: int | None
    num_values: int
    required: bool = False


def _compare_order(col, orders) -> str | None:
    """'signed' / 'unsigned' / None (min/max unusable) for a leaf column."""
    if col.physical_type == "INT96" or col.type_name.startswith("unsupported:"):
        return None
    if col.converted_type == "INTERVAL" or col.logical_type == "INTERVAL":
        return None
    if orders is not None:
        entry = orders[col.index] if col.index < len(orders) else None
        if not entry or "TYPE_ORDER" not in entry:
            return None
    if col.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        if col.type_name.startswith("decimal") or col.type_name == "float32":
            return "signed"                # numeric order of decimals and FLOAT16
        return "unsigned"
    return "unsigned" if col.type_name in _UNSIGNED_NAMES else "signed"


def increment_bytes(b: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``b``."""
    arr = bytearray(b)
    while arr:
        if arr[-1] < 0xFF:
            arr[-1] += 1
            return bytes(arr)
        arr.pop()
    return None


def _zero_sign(lo, hi):
    if isinstance(lo, float) and lo == 0.0:
        lo = -0.0
    if isinstance(hi, float) and hi == 0.0:
        hi = 0.0
    return lo, hi


def chunk_range(pf, rg: int, c: int) -> ValueRange:
    """Footer statistics of column chunk ``c`` of row group ``rg`` (decoded
    once per open file; callers must not modify the result)."""
    memo = getattr(pf, "memo", None)
    if memo is None:
        return _chunk_range(pf, rg, c)
    key = ("chunk_range", rg, c)
    rng = memo.get(key)
    if rng is None:
        rng = memo[key] = _chunk_range(pf, rg, c)
    return rng


def _chunk_range(pf, rg: int, c: int) -> ValueRange:
    col = pf.columns[c]
    meta = pf.row_groups[rg]
    required = col.max_def_level == 0
    rng = ValueRange(None, None, None, meta.num_rows, required)
    try:
        stats = pf.metadata.raw["row_groups"][rg]["columns"][c]["meta_data"].get("statistics")
    except (KeyError, IndexError, TypeError, AttributeError):
        return rng
    if not stats or col.nested:
        return rng
    rng.null_count = usable_null_count(stats, col, meta.num_rows)
    order = _compare_order(col, pf.metadata.raw.get("column_orders"))
    if order is None:
        return rng
    lo_raw, hi_raw = stats.get("min_value"), stats.get("max_value")
    hi_exact = stats.get("is_max_value_exact", True) is not False
    if lo_raw is None and hi_raw is None and order == "signed" \
            and col.physical_type not in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        lo_raw, hi_raw = stats.get("min"), stats.get("max")      # deprecated fields
        hi_exact = True                  # (an inexact min is still a lower bound)
    lo, hi = decode_stat_value(lo_raw, col), decode_stat_value(hi_raw, col)
    if not ordered_bounds(lo, hi):
        return rng                       # min > max: the bounds say nothing
    if isinstance(hi, bytes) and not hi_exact:
        hi = increment_bytes(hi)
    rng.lo, rng.hi = _zero_sign(lo, hi)
    return rng


def trusted_page_index(pf, rg: int, c: int):
    """(ColumnIndex, OffsetIndex) of column chunk ``c`` of row group ``rg``
    when both are present and agree with each other and with the chunk,
    else None (decided once per open file).  An index that does not decode,
    whose page counts differ, whose pages do not tile the chunk, or whose
    pages claim more NULLs than rows, NULLs in a required column, a null
    page with non-null values or min > max is ignored (a debug note): it
    skips nothing and refuses nothing."""
    memo = getattr(pf, "memo", None)
    key = ("trusted_page_index", rg, c)
    if memo is not None and key in memo:
        return memo[key]
    why = None
    try:
        found = _trusted_page_index(pf, rg, c)
    except PqdbError as e:
        found, why = None, str(e)
    if isinstance(found, str):
        found, why = None, found
    if why:
        log.debug("page index of row group %d column %d ignored: %s", rg, c, why)
    if memo is not None:
        memo[key] = found
    return found


def _trusted_page_index(pf, rg: int, c: int):
    """(ci, oi) when trusted; else a reason (str), or None when absent."""
    ci = pf.column_index(rg, c)
    if ci is None:
        return None
    oi = pf.offset_index(rg, c)
    if oi is None:
        return None
    n = ci.num_pages
    if oi.num_pages != n or n == 0:
        return f"{n} pages in the column index, {oi.num_pages} in the offset index"
    chunk = pf.row_groups[rg].columns[c]
    ends = oi.offsets + oi.compressed_sizes.astype(np.int64)
    if (oi.offsets[1:] != ends[:-1]).any() or ends[-1] > chunk.start + chunk.length:
        return "the offset index's pages do not tile the column chunk"
    rows = oi.row_counts
    if (rows <= 0).any():
        return "a page of the offset index holds no rows"
    col = pf.columns[c]
    if not offset_index_agrees(pf, rg, c, oi):
        return "the page headers contradict the offset index"
    if ci.null_counts is not None:
        nulls = ci.null_counts
        if (nulls > rows).any():
            return "a page has more NULLs than rows"
        if col.max_def_level == 0 and nulls.any():
            return "a page of a required column has NULLs"
        if (ci.null_pages & (nulls != rows)).any():
            return "a null page has non-null values"
    for p in range(n):
        if not ci.null_pages[p] and not ordered_bounds(ci.min_values[p], ci.max_values[p]):
            return f"page {p} has min > max"
    return ci, oi


def page_ranges(pf, rg: int, c: int, ci, row_counts, chunk: ValueRange) -> list:
    """One ValueRange per page of column ``c`` from its ColumnIndex (built
    once per open file; callers must not modify the result)."""
    memo = getattr(pf, "memo", None)
    if memo is None:
        return _page_ranges(pf, rg, c, ci, row_counts, chunk)
    key = ("page_ranges", rg, c)
    out = memo.get(key)
    if out is None:
        out = memo[key] = _page_ranges(pf, rg, c, ci, row_counts, chunk)
    return out


def _page_ranges(pf, rg: int, c: int, ci, row_counts, chunk: ValueRange) -> list:
    col = pf.columns[c]
    usable = _compare_order(col, pf.metadata.raw.get("column_orders")) is not None
    out = []
    for i in range(ci.num_pages):
        n = int(row_counts[i])
        nc = None if ci.null_counts is None else int(ci.null_counts[i])
        if ci.null_pages[i]:
            nc = n
        lo = hi = None
        if usable and not ci.null_pages[i]:
            lo, hi = _zero_sign(ci.min_values[i], ci.max_values[i])
        out.append(ValueRange(lo, hi, nc, n, chunk.required))
    return out


# ---- evaluation ---------------------------------------------------------------

def _forward(v, casts):
    for w in casts:
        v = w.forward(v)
    return v


def leaf_may_match(leaf: Leaf, rng: ValueRange | None) -> bool:
    """False only when ``rng`` proves no row makes ``leaf`` TRUE."""
    if leaf.op == "never":
        return False
    if rng is None:
        return True
    all_null = rng.null_count is not None and rng.num_values > 0 \
        and rng.null_count >= rng.num_values
    if leaf.op == "is_null":
        return not (rng.required or rng.null_count == 0)
    if leaf.op == "is_not_null":
        return not all_null
    if all_null:
        return False
    values = [v for v in leaf.values if v is not None]
    if not values:
        return False                        # x = NULL, x IN (NULL, ...) are never true
    try:
        lo = None if rng.lo is None else _forward(rng.lo, leaf.casts)
        hi = None if rng.hi is None else _forward(rng.hi, leaf.casts)
        op = leaf.op
        if op in ("eq", "in"):
            return any((lo is None or lo <= v) and (hi is None or v <= hi) for v in values)
        v = values[0]
        if op == "lt":
            return lo is None or lo < v
        if op == "le":
            return lo is None or lo <= v
        if leaf.float_column:
            return True                     # NaN (> every number) may hide from max
        if op == "gt":
            return hi is None or hi > v
        if op == "ge":
            return hi is None or hi >= v
    except (TypeError, ValueError, OverflowError):
        return True
    return True


def may_match(term, range_of, bloom_check=None) -> bool:
    """Evaluate ``term`` over statistics: ``range_of(column)`` gives a
    ValueRange or None; ``bloom_check(leaf)`` False rejects an eq/in leaf."""
    if isinstance(term, Leaf):
        if not leaf_may_match(term, range_of(term.column) if term.column >= 0 else None):
            return False
        if bloom_check is not None and term.op in ("eq", "in"):
            return bloom_check(term)
        return True
    if isinstance(term, AllOf):
        return all(may_match(t, range_of, bloom_check) for t in term.terms)
    return any(may_match(t, range_of, bloom_check) for t in term.terms)


def bloom_values(leaf: Leaf):
    """The literals of an eq/in leaf in the column's storage form (None when
    a value cannot be mapped back exactly)."""
    out = []
    for v in leaf.values:
        if v is None:
            continue
        for w in reversed(leaf.casts):
            v = w.preimage(v)
            if v is UNKNOWN:
                return None
            if v is NO_MATCH:
                break
        if v is not NO_MATCH:
            out.append(v)
    return out


# ---- the scan's pruner ---------------------------------------------------------

class ScanPruner:
    """Row-group and page decisions for one Scan; counts into ``counters``
    (engine.context.PruningCounters)."""

    def __init__(self, filters, counters, use_bloom: bool = True, use_page_index: bool = True):
        self.term = filter_terms(filters)
        self.columns = sorted(term_columns(self.term)) if self.term is not None else []
        if counters is None:
            from engine.context import PruningCounters
            counters = PruningCounters()
        self.counters = counters
        self.use_bloom = use_bloom
        self.use_page_index = use_page_index
        self._spans: dict = {}
        self._lock = threading.Lock()
        self._term_key = term_key(self.term) if self.term is not None else None
        self.bloom_columns = sorted(bloom_columns(self.term)) if self.term is not None else []

    @property
    def active(self) -> bool:
        return self.term is not None

    def row_group_may_match(self, pf, rg: int, file_cols: list) -> bool:
        """False when footer statistics or bloom filters prove the filters
        cannot hold for any row of row group ``rg``."""
        if self.term is None:
            return True
        ranges = {c: chunk_range(pf, rg, file_cols[c]) for c in self.columns}
        if not may_match(self.term, ranges.get):
            self.counters.add(row_groups_skipped=1, footer_rows_skipped=pf.row_groups[rg].num_rows)
            return False
        if self.use_bloom and any(      # a pass over the bloom filters the chunks have
                not isinstance(file_cols[c], int)
                or pf.row_groups[rg].columns[file_cols[c]].bloom_filter_offset is not None
                for c in self.bloom_columns):
            blooms: dict = {}

            def check(leaf):
                if leaf.column not in blooms:
                    blooms[leaf.column] = pf.bloom_filter(rg, file_cols[leaf.column])
                bf = blooms[leaf.column]
                if bf is None:
                    return True
                vals = bloom_values(leaf)
                return vals is None or bf.might_contain_any(vals)

            if not may_match(self.term, ranges.get, check):
                self.counters.add(row_groups_skipped=1, bloom_rejections=1,
                                  bloom_rows_skipped=pf.row_groups[rg].num_rows)
                return False
        self.counters.add(row_groups_scanned=1)
        return True

    def row_spans(self, pf, rg: int, file_cols: list, key=None):
        """The [start, stop) row ranges of row group ``rg`` that may match
        (a tuple of pairs; None: every row may), from the page indexes of
        the filtered columns."""
        if self.term is None or not self.use_page_index:
            return None
        key = (key, rg)
        with self._lock:
            if key in self._spans:
                return self._spans[key]
        from engine.filtering.page_spans import remembered_spans
        spans, pages = remembered_spans(pf, rg, file_cols, self.term, self._term_key,
                                         self.columns)
        with self._lock:
            if key not in self._spans:
                self._spans[key] = spans
                if pages:
                    self.counters.add(pages_skipped=pages)
        return spans

    def range_may_match(self, pf, rg: int, file_cols: list, start: int, count: int,
                        key=None) -> bool:
        """False when the page indexes prove no row in [start, start+count)
        of row group ``rg`` can match (counted as rows skipped)."""
        spans = self.row_spans(pf, rg, file_cols, key)
        if spans is None:
            return True
        stop = start + count
        for lo, hi in spans:
            if lo < stop and hi > start:
                return True
        self.counters.add(rows_skipped=count, page_index_rows_skipped=count)
        return False
