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
    "tpch": {"engine", "tpch", "scan"},     # scan: the layout report (Tab. 1) reads footers
}
# The benchmark runner, its peers and the data pipeline's writers are where
# the peers (and pyarrow/DuckDB as writers) belong.
PEER_MODULES = {"tpch/runner.py", "tpch/peers.py", "tpch/pipeline/local_writers.py"}
# The product never imports the test oracles / benchmark peers.
FORBIDDEN_EVERYWHERE = {"duckdb", "pyarrow", "polars", "datafusion"}


def _imports(path: Path):
    """(line, top-level module, enclosing function name or None) per import."""
    tree = ast.parse(path.read_text(), str(path))

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Import):
                for a in child.names:
                    yield child.lineno, a.name.split(".")[0], func
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                yield child.lineno, child.module.split(".")[0], func
            yield from visit(child, inner)

    yield from visit(tree, None)


def _optional_export(func: str | None) -> bool:
    """Result.to_arrow()/to_pandas() hand results to those libraries when the
    user has them installed; that is the only place the product may name them."""
    return func is not None and func.startswith("to_")


@pytest.mark.parametrize("room", ROOMS)
def test_room_imports_point_down(room):
    bad = []
    for path in sorted((REPO / room).rglob("*.py")):
        for line, top, func in _imports(path):
            if top in ROOMS and top not in ALLOWED[room]:
                bad.append(f"{path.relative_to(REPO)}:{line} imports {top}")
            if (top in FORBIDDEN_EVERYWHERE and not _optional_export(func)
                    and str(path.relative_to(REPO)) not in PEER_MODULES):
                bad.append(f"{path.relative_to(REPO)}:{line} imports test oracle {top}")
    assert not bad, "\n".join(bad)
