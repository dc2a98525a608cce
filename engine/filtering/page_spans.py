"""Page-index pruning's row spans (engine/filtering/pruning.py's ScanPruner
uses them): the [start, stop) row ranges of a row group whose pages may
satisfy a filter, computed from the column and offset indexes and
remembered per open file, so a query repeated with the same filter does
not walk the page indexes again."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from engine.filtering.pruning import chunk_range, leaf_may_match, page_ranges, trusted_page_index
from engine.filtering.terms import AllOf, Leaf


# surviving row spans of earlier queries, per open file: (row group, term,
# file columns) -> (spans or None, pages skipped), least recently used
# dropped past this many.  An entry is a few pairs of ints; at 128, the 22
# TPC-H queries run in turn over SF1 lineitem's 53 row groups found none of
# theirs again and walked the page indexes for every morsel (9% of the
# Python time of such a loop).
REMEMBERED_MASKS = 8192
_MASKS_LOCK = threading.Lock()


def remembered_spans(pf, rg: int, file_cols: list, term, term_key, columns) -> tuple:
    """surviving_spans, remembered in the file's memo: a query repeated with
    the same filter does not walk the page indexes again (``term_key``: the
    term's interned key (terms.term_key), None when the term cannot be a key)."""
    memo = getattr(pf, "memo", None)
    if term_key is None or memo is None:
        return surviving_spans(pf, rg, file_cols, term, columns)
    key = ("row_spans", rg, term_key, tuple(file_cols[c] for c in columns))
    with _MASKS_LOCK:
        spans = memo.setdefault("row_spans", OrderedDict())
        hit = spans.get(key)
        if hit is not None:
            spans.move_to_end(key)
    if hit is not None:
        return hit
    entry = surviving_spans(pf, rg, file_cols, term, columns)
    with _MASKS_LOCK:
        spans[key] = entry
        while len(spans) > REMEMBERED_MASKS:
            spans.popitem(last=False)
    return entry


def _segments_may_match(term, per_col, seg_page, chunk_ranges, nseg) -> np.ndarray:
    """may_match for every segment at once (bool array): a leaf is decided
    per page of its column (or once from the chunk's statistics) and indexed
    by each segment's page; AllOf / AnyOf combine the arrays."""
    if isinstance(term, Leaf):
        c = term.column
        if c >= 0 and c in per_col:
            ranges = per_col[c][1]
            pages = np.fromiter((leaf_may_match(term, r) for r in ranges), np.bool_, len(ranges))
            return pages[seg_page[c]]
        return np.full(nseg, leaf_may_match(term, chunk_ranges.get(c) if c >= 0 else None))
    parts = [_segments_may_match(t, per_col, seg_page, chunk_ranges, nseg) for t in term.terms]
    if not parts:
        return np.full(nseg, isinstance(term, AllOf))
    reduce = np.logical_and.reduce if isinstance(term, AllOf) else np.logical_or.reduce
    return reduce(parts)


def surviving_spans(pf, rg: int, file_cols: list, term, columns) -> tuple:
    """(spans or None, pages skipped): the [start, stop) row ranges of row
    group ``rg`` whose pages may satisfy ``term`` (a tuple of pairs; None:
    every row may); pages are cut at every page boundary of every column
    with a page index."""
    num_rows = pf.row_groups[rg].num_rows
    per_col = {}
    for c in columns:
        fc = file_cols[c]
        if pf.columns[fc].nested:
            continue
        index = trusted_page_index(pf, rg, fc)
        if index is None:
            continue
        ci, oi = index
        chunk = chunk_range(pf, rg, fc)
        per_col[c] = (oi.first_row_indexes, page_ranges(pf, rg, fc, ci, oi.row_counts, chunk))
    if not per_col:
        return None, 0
    cuts = np.unique(np.concatenate([f for f, _ in per_col.values()] + [np.array([0])]))
    cuts = cuts[(cuts >= 0) & (cuts < num_rows)]
    bounds = np.append(cuts, num_rows)
    chunk_ranges = {c: chunk_range(pf, rg, file_cols[c]) for c in columns if c not in per_col}
    # every leaf is decided once per page of its column, then the segments
    # (cut at every column's page starts) combine the page decisions
    seg_page = {c: np.searchsorted(first, cuts, side="right") - 1
                for c, (first, _) in per_col.items()}
    keep = _segments_may_match(term, per_col, seg_page, chunk_ranges, len(cuts))
    if keep.all():
        return None, 0
    # runs of kept segments: segment i holds rows bounds[i]..bounds[i + 1]
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(np.int8), [0]])))
    pairs = bounds[edges].reshape(-1, 2)
    pages = 0
    for first, _ in per_col.values():
        ends = np.append(first[1:], num_rows)
        meets = ((pairs[:, 0][None, :] < ends[:, None])
                 & (pairs[:, 1][None, :] > first[:, None])).any(axis=1)
        pages += int(np.count_nonzero(~meets & (ends > first)))
    return tuple((int(a), int(b)) for a, b in pairs), pages
