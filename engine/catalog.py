"""The connection's catalog: views and Parquet tables (planner.catalog.Catalog).

Table specs are paths, globs, or directories (every ``*.parquet`` below it,
sorted).  Files are opened through one cache keyed by path + size + mtime, so
a rewritten file is reopened, and all share one BufferManager sized from
``Config.memory_limit``.
"""

from __future__ import annotations

import glob
import os
import threading

from engine.config import Config
from engine.errors import BinderError, PqdbIOError, UnsupportedFeatureError
from planner.catalog import TableInfo
from planner.types import from_scan_type_name


class Catalog:
    """Views and table resolution for one connection."""

    def __init__(self, config: Config):
        self.config = config
        self._views: dict[str, object] = {}
        self._files: dict[str, tuple[tuple, object]] = {}
        self._lock = threading.Lock()
        self._buffer_manager = None
        self._budget = None

    # ---------------------------------------------------------------- views
    def lookup_view(self, name: str):
        return self._views.get(name.lower())

    def create_view(self, name: str, ast, replace: bool = False) -> None:
        key = name.lower()
        if key in self._views and not replace:
            raise BinderError(f"view {name} already exists")
        self._views[key] = ast

    def drop_view(self, name: str, if_exists: bool = False) -> None:
        key = name.lower()
        if key not in self._views:
            if if_exists:
                return
            raise BinderError(f"view {name} does not exist")
        del self._views[key]

    def view_names(self) -> list[str]:
        return sorted(self._views)

    # ---------------------------------------------------------------- files
    @property
    def buffer_manager(self):
        """The connection's BufferManager (recreated when memory_limit changes)."""
        budget = self.config.memory_limit
        if self._buffer_manager is None or self._budget != budget:
            from scan.io.buffer_manager import BufferManager
            with self._lock:
                self._buffer_manager = BufferManager(budget)
                self._budget = budget
                self._files.clear()     # open files hold the old manager
        return self._buffer_manager

    def open_file(self, path: str):
        """The scan.ParquetFile of ``path``, cached while the file is unchanged."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise PqdbIOError(f"cannot open {path}: {e.strerror or e}", url=path) from None
        identity = (st.st_size, st.st_mtime_ns, self.config.verify_checksums)
        bm = self.buffer_manager
        with self._lock:
            hit = self._files.get(path)
            if hit is not None and hit[0] == identity:
                return hit[1]
        from scan import open_parquet
        pf = open_parquet(path, buffer_manager=bm,
                          verify_checksums=self.config.verify_checksums)
        with self._lock:
            self._files[path] = (identity, pf)
        return pf

    def resolve_files(self, spec) -> list[str]:
        """Expand a spec (path, glob, directory, or list of those) to files."""
        if isinstance(spec, (list, tuple)):
            out: list[str] = []
            for s in spec:
                out.extend(self.resolve_files(s))
            return out
        spec = str(spec)
        if spec.startswith("file://"):
            spec = spec[len("file://"):]
        if "://" in spec:
            raise UnsupportedFeatureError(
                "remote files (http/https/s3/...) are not supported yet")
        path = os.path.expanduser(spec)
        if glob.has_magic(path):
            files = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
        elif os.path.isdir(path):
            files = sorted(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))
        elif os.path.exists(path):
            files = [path]
        else:
            files = []
        if not files:
            raise PqdbIOError(f'No files found that match the pattern "{spec}"')
        return files

    def table_info(self, spec) -> TableInfo:
        files = self.resolve_files(spec)
        columns = None
        rows = 0
        first = None
        for path in files:
            pf = self.open_file(path)
            cols = table_columns(pf)
            if columns is None:
                columns, first = cols, path
            elif cols != columns:
                raise BinderError(_schema_mismatch(first, columns, path, cols))
            rows += int(pf.num_rows)
        return TableInfo(files=files, columns=columns or [], row_count=rows)


def table_columns(pf) -> list:
    """(name, SQL type) of every top-level field of a file: its leaf columns
    when the schema is flat; LIST / MAP / STRUCT fields as one column each."""
    if not any(c.nested for c in pf.columns):
        return [(c.name, from_scan_type_name(c.type_name)) for c in pf.columns]
    from planner.types import from_scan_logical
    from scan.nested import logical, schema_tree
    return [(node.name, from_scan_logical(logical(node), pf.columns))
            for node in schema_tree(pf.metadata.schema).children]


def _schema_mismatch(first: str, a: list, other: str, b: list) -> str:
    def show(cols):
        return ", ".join(f"{n} {t}" for n, t in cols)
    if [n for n, _ in a] != [n for n, _ in b]:
        return (f"files have different schemas: {first} has columns ({show(a)}) "
                f"but {other} has ({show(b)})")
    diff = next((n, ta, tb) for (n, ta), (_, tb) in zip(a, b) if ta != tb)
    return (f"files have different schemas: column {diff[0]} is {diff[1]} in {first} "
            f"but {diff[2]} in {other}")
