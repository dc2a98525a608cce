"""What may import what, checked statically over the source
(docs/architecture.md, "Rooms and imports"):

- the rooms' arrows only point down scan <- stats <- planner <- engine <- tpch;
- the product never imports the test oracles and benchmark peers, except
  in the optional conversions and the benchmark's peer adapters;
- no module imports another module's private (``_name``) names: what two
  modules share is public in the module whose vocabulary it belongs to;
- expressions (engine/expr) do not import operators (engine/operators)."""

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
FORBIDDEN_EVERYWHERE = {"duckdb", "pyarrow", "polars", "datafusion", "pandas"}


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


def _python_files(*tops: str):
    for top in tops:
        yield from sorted((REPO / top).rglob("*.py"))


def test_no_private_names_imported_across_modules():
    """``from x import _y`` reaches into another module's internals; the
    product, its tests and the benchmarks import public names only."""
    bad = []
    for path in _python_files(*ROOMS, "tests", "bench"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level != 0 or not node.module:
                continue
            if node.module.split(".")[0] not in ROOMS + ["tests", "bench"]:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} imports "
                               f"{node.module}.{alias.name}")
    assert not bad, "\n".join(bad)


def test_expressions_do_not_import_operators():
    bad = sorted({f"{path.relative_to(REPO)}:{line}"
           for path in _python_files("engine/expr")
           for line, module in _module_imports(path)
           if module == "engine.operators" or module.startswith("engine.operators.")})
    assert not bad, "engine/expr imports engine/operators at " + ", ".join(bad)


def _module_imports(path: Path):
    """(line, full dotted module) of every absolute import in the file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for a in node.names:
                yield node.lineno, f"{node.module}.{a.name}"
