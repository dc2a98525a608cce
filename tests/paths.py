"""Where the shared data lives: ../shared next to the repository (as in CI),
or $PQDB_SHARED."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PQDB_SHARED", REPO.parent / "shared"))
CORPUS_DATA = str(SHARED / "parquet-testing" / "data")
CORPUS_BAD = str(SHARED / "parquet-testing" / "bad_data")
TPCH_ANSWERS = str(SHARED / "tpch-answers")
