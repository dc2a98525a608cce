"""The rooms' import direction (DESIGN.md): arrows only point down
scan <- stats <- planner <- engine <- tpch.  Checked statically over the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOMS = ["scan", "stats", "planner", "engine", "tpch"]
ALLOWED = {
    "scan": {"scan"},
    "stats": {"scan", "stats"},
    "planner": {"scan", "stats", "planner"},
    "engine": {"scan", "stats", "planner", "engine"},
    "tpch": {"engine", "tpch"},
}
# The product never imports the test oracles / benchmark peers.
FORBIDDEN_EVERYWHERE = {"duckdb", "pyarrow", "polars", "datafusion"}


def _imports(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize("room", ROOMS)
def test_room_imports_point_down(room):
    bad = []
    for path in sorted((REPO / room).rglob("*.py")):
        for line, top in _imports(path):
            if top in ROOMS and top not in ALLOWED[room]:
                bad.append(f"{path.relative_to(REPO)}:{line} imports {top}")
            if top in FORBIDDEN_EVERYWHERE and not (room == "tpch" and path.name == "runner.py"):
                bad.append(f"{path.relative_to(REPO)}:{line} imports test oracle {top}")
    assert not bad, "\n".join(bad)
