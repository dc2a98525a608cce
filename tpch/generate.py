"""TPC-H data generation with tpchgen-cli (its own writer; other writers: tpch/pipeline)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tpch.queries import TABLES


def tpchgen_executable() -> str:
    """tpchgen-cli next to this Python (a venv), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    if os.path.exists(here):
        return here
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("tpchgen-cli is not installed (pip install tpchgen-cli)")
    return found


def generate(sf: float, out: str, force: bool = False) -> str:
    """Write the eight TPC-H tables as DIR/<table>.parquet at scale factor sf.
    Skips the work when every file is already there (unless force)."""
    os.makedirs(out, exist_ok=True)
    if not force and all(os.path.exists(os.path.join(out, f"{t}.parquet")) for t in TABLES):
        return out
    subprocess.run([tpchgen_executable(), "parquet", "-s", f"{sf:g}", "--output-dir", out],
                   check=True, stdout=subprocess.DEVNULL)
    return out
