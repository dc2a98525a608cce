"""The rows every writer starts from: tpchgen-cli Parquet, generated once
per scale factor and reused, so every layout holds the same rows."""

from __future__ import annotations

import os
import subprocess

from tpch.generate import tpchgen_executable
from tpch.queries import TABLES

_DONE = ".complete"


def ensure_source(sf: float, src: str) -> str:
    """``src`` holding DIR/table.parquet for all tables at ``sf`` (generated
    when missing; a marker file records the scale factor of a finished run)."""
    marker = os.path.join(src, _DONE)
    if os.path.exists(marker) and open(marker).read().strip() == f"{sf:g}":
        if all(os.path.exists(os.path.join(src, f"{t}.parquet")) for t in TABLES):
            return src
    os.makedirs(src, exist_ok=True)
    subprocess.run([tpchgen_executable(), "parquet", "-s", f"{sf:g}", "--output-dir", src,
                    "--overwrite", "--quiet"], check=True, stdout=subprocess.DEVNULL)
    with open(marker, "w") as fh:
        fh.write(f"{sf:g}\n")
    return src


def average_row_bytes(path: str) -> float:
    """Uncompressed bytes per row of a Parquet file (footer only, via scan/):
    turns a rows-per-row-group request into a byte size for writers that
    only take bytes (tpchgen-cli)."""
    from scan import open_parquet
    with open_parquet(path) as pf:
        rows = max(pf.num_rows, 1)
        total = sum(c.total_uncompressed_size for rg in pf.row_groups for c in rg.columns)
    return total / rows
