"""Block columns -> the leaf columns of a Parquet file: definition and
repetition levels and the present values (Dremel shredding), vectorized
with numpy over whole blocks.

A column's rows become *entries*: one per row of a flat column, one per
list element (or empty / NULL list) of a nested one.  Walking the type
tree, every entry carries the row of the vector it points at (-1 once an
ancestor is NULL or an empty list) and the definition level it reached;
a LIST or MAP node expands its present rows into one entry per element,
the first keeping its parent's repetition level, the others the list's.
The nested storage is scan/storage.py's: LIST / MAP rows (start, length)
into the children, STRUCT rows an index into the aligned field vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scan.errors import FileFormatError
from scan.write_schema import physical_values


@dataclass
class LeafPart:
    """One block's worth of one leaf column."""
    defs: np.ndarray | None        # uint8 per entry; None: flat without NULLs
    reps: np.ndarray | None        # uint8 per entry; None: flat (all 0)
    values: object                 # physical values of the entries at max_def
    rows: int                      # the block's rows

    @property
    def entries(self) -> int:
        if self.defs is not None:
            return len(self.defs)
        v = self.values
        return len(v[0]) - 1 if isinstance(v, tuple) else len(v)


def shred(vec, t, leaves, n: int) -> list[LeafPart]:
    """The LeafParts of top-level column ``vec`` of type ``t`` (``n`` rows);
    ``leaves``: its leaves (scan.write_schema.Leaf), in schema order."""
    if not t.children and t.id not in ("LIST", "MAP", "STRUCT"):
        leaf = leaves[0]
        nulls = vec.nulls
        if t.id == "NULL":
            return [LeafPart(np.zeros(n, np.uint8), None, physical_values(leaf, vec, None), n)]
        if nulls is None or not nulls.any():
            return [LeafPart(None, None, physical_values(leaf, vec, None), n)]
        present = nulls == 0
        rows = np.flatnonzero(present)
        return [LeafPart(present.astype(np.uint8), None, physical_values(leaf, vec, rows), n)]
    out: list[LeafPart] = []
    it = iter(leaves)
    _walk(vec, t, np.arange(n, dtype=np.int64), np.zeros(n, np.uint8), None, 0, 0, it, out, n,
          False)
    return out


def _walk(vec, t, idx, defs, reps, d, r, leaves, out, n, required) -> None:
    present = idx >= 0
    ok = present
    if not required and vec.nulls is not None and present.any():
        ok = present.copy()
        ok[present] = vec.nulls[idx[present]] == 0
    if not required:
        d += 1
    elif t.id != "NULL" and vec.nulls is not None and present.any() \
            and vec.nulls[idx[present]].any():
        raise FileFormatError("a MAP key is NULL: Parquet map keys are required")
    defs = np.where(ok, np.uint8(d), defs).astype(np.uint8)
    idx = np.where(ok, idx, -1)
    tid = t.id
    if tid == "STRUCT":
        cidx = np.full(len(idx), -1, np.int64)
        if ok.any():
            cidx[ok] = vec.data[idx[ok]]
        for k, (_, ct) in enumerate(t.children):
            _walk(vec.children[k], ct, cidx, defs, reps, d, r, leaves, out, n, False)
        return
    if tid in ("LIST", "MAP"):
        starts = np.zeros(len(idx), np.int64)
        lens = np.zeros(len(idx), np.int64)
        if ok.any():
            se = vec.data[idx[ok]]
            starts[ok] = se[:, 0]
            lens[ok] = se[:, 1]
        expand = lens > 0
        cnt = np.where(expand, lens, 1)
        total = int(cnt.sum())
        src = np.repeat(np.arange(len(idx), dtype=np.int64), cnt)
        first = np.cumsum(cnt) - cnt
        k = np.arange(total, dtype=np.int64) - first[src]
        grown = expand[src]
        cidx = np.where(grown, starts[src] + k, -1)
        cdefs = np.where(grown, np.uint8(d + 1), defs[src]).astype(np.uint8)
        parent_reps = reps[src] if reps is not None else np.zeros(total, np.uint8)
        creps = np.where(k == 0, parent_reps, np.uint8(r + 1)).astype(np.uint8)
        if tid == "LIST":
            _walk(vec.children[0], t.children[0][1], cidx, cdefs, creps, d + 1, r + 1, leaves,
                  out, n, False)
        else:
            _walk(vec.children[0], t.children[0][1], cidx, cdefs, creps, d + 1, r + 1, leaves,
                  out, n, True)
            _walk(vec.children[1], t.children[1][1], cidx, cdefs, creps, d + 1, r + 1, leaves,
                  out, n, False)
        return
    leaf = next(leaves)
    rows = idx[ok] if tid != "NULL" else idx[:0]
    out.append(LeafPart(defs, reps, physical_values(leaf, vec, rows), n))
