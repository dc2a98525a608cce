"""The connection's catalog: views and Parquet tables (planner.catalog.Catalog).

Table specs are paths, globs, or directories (every ``*.parquet`` below it,
sorted).  Files are opened through one cache keyed by path + size + mtime, so
a rewritten file is reopened, and all share one BufferManager.

Memory: the BufferManager keeps at most ``buffer_memory`` bytes of compressed
chunks (the row groups in flight and a cache for later queries), and never
more than half of ``memory_limit``; the chunk states (decompressed pages and
the chunks they read, scan/row_ranges.py) keep at most as much, and mostly the
same chunks.  Both count against memory_limit (``memory_caches``,
engine/context.py) and are evicted first when operators need the memory.
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

    def __init__(self, config: Config, kms_client=None):
        self.config = config
        # encryption: the connection's named keys (PRAGMA add_parquet_key),
        # its KMS client, and the encryption_config the last table naming a
        # file gave (scan/keys.py)
        from scan.keys import KeyRegistry
        self.keys = KeyRegistry()
        self.kms_client = kms_client
        self._encryption: dict = {}
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
        """The connection's BufferManager (its budget follows memory_limit
        and buffer_memory; a smaller one evicts at once)."""
        budget = buffer_budget(self.config)
        if self._buffer_manager is None or self._budget != budget:
            from scan.io.buffer_manager import BufferManager
            from scan.row_ranges import DEFAULT_CHUNK_CACHE_BUDGET, set_chunk_cache_budget
            with self._lock:
                if self._buffer_manager is None:
                    self._buffer_manager = BufferManager(budget)
                else:
                    self._buffer_manager.set_budget(budget)
                self._budget = budget
            # process-wide: the connection configured last sets it
            set_chunk_cache_budget(min(DEFAULT_CHUNK_CACHE_BUDGET, budget))
        return self._buffer_manager

    def memory_caches(self) -> tuple:
        """The caches a query's MemoryTracker counts and evicts, in eviction
        order: the chunk states, then the buffer manager."""
        from scan.row_ranges import chunk_cache
        return (chunk_cache, self.buffer_manager)

    def close(self) -> None:
        """Drop the open files and the cached bytes (and the chunk states
        reading them)."""
        with self._lock:
            self._files.clear()
        if self._buffer_manager is not None:
            self._buffer_manager.invalidate()

    def open_file(self, path: str):
        """The scan.ParquetFile of ``path``, cached while the file is unchanged."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise PqdbIOError(f"cannot open {path}: {e.strerror or e}", url=path) from None
        identity = (st.st_size, st.st_mtime_ns, self.config.verify_checksums)
        bm = self.buffer_manager
        with self._lock:
            encryption = self._encryption.get(path)
            keys = (encryption, self.keys.generation)
            hit = self._files.get(path)
            # an encrypted file is reopened when its keys may have changed
            if hit is not None and hit[0] == identity and \
                    (hit[1].crypto is None or hit[2] == keys):
                return hit[1]
        from scan import open_parquet
        from scan.keys import KeyResolver
        pf = open_parquet(path, buffer_manager=bm, verify_checksums=self.config.verify_checksums,
                          decryption=KeyResolver(self.keys, encryption, self.kms_client))
        with self._lock:
            self._files[path] = (identity, pf, keys)
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

    def table_info(self, spec, encryption_config=None) -> TableInfo:
        """Files and schema of a table spec; ``encryption_config`` (a
        scan.keys.EncryptionConfig) names the keys of its encrypted files."""
        files = self.resolve_files(spec)
        with self._lock:
            for f in files:
                if encryption_config is None:
                    self._encryption.pop(f, None)
                else:
                    self._encryption[f] = encryption_config
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

    def table_statistics(self, files: list[str]):
        """planner.statistics.TableStatistics of the table made of ``files``;
        None until stats/ collects them (the planner then uses footer row
        counts and default selectivities)."""
        return None


def buffer_budget(config: Config) -> int:
    """Bytes the buffer manager may keep: buffer_memory, at most half of
    memory_limit."""
    return min(config.buffer_memory, config.memory_limit // 2)


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
