"""The connection's catalog: views and Parquet tables (planner.catalog.Catalog).

Table specs are paths, globs, or directories (every ``*.parquet`` below it,
sorted), URLs (http(s): one file each, no globs; other schemes through
fsspec, globs included), or lists of those.  Files are opened through one
cache keyed by path + size + mtime (URLs: + ETag or Last-Modified), so a
rewritten file is reopened, and all share one BufferManager.  A remote file
is validated (one HEAD / ``info``) at most once per query (``begin_query``).
Hive-partitioned files (engine/hive.py) open as PartitionedFiles.

Remote files share the connection's http client (scan/io/http.py: one
session on a background event loop) and its RemoteSettings, which follow
the http_* / remote_cache_* options; their requests and bytes are counted
into the buffer manager's ``io`` counters (``Result.io`` is a query's
share).

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
from engine.errors import BinderError, PqdbError, PqdbIOError, UnsupportedFeatureError
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
        self._remote = None             # scan.io.remote.RemoteSettings
        self._http = None               # scan.io.http.HttpClient
        self._epoch = 0                 # begin_query count: remote validation
        self._hive: dict = {}           # path -> [(name, type, value)]
        self._wrapped: dict = {}        # path -> (file, partitions, PartitionedFile)
        self._deferred: dict = {}       # path -> (first file, its columns): checked on open
        self._statistics = None
        self._opener = None             # ThreadPoolExecutor opening remote files
        self._opener_n = 0
        self._validating: dict = {}     # url -> (Future of its source, cached file)

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

    @property
    def io(self):
        """The connection's I/O counters (scan.io.remote.IoCounters)."""
        return self.buffer_manager.io

    def begin_query(self) -> None:
        """A statement starts: remote files are validated again (once) and
        the options are handed to the remote settings."""
        with self._lock:
            self._epoch += 1
            if self._remote is not None:
                self.config.remote_settings(self._remote)

    def _remote_settings(self):
        with self._lock:
            if self._remote is None:
                self._remote = self.config.remote_settings()
            return self._remote

    def _http_client(self):
        settings = self._remote_settings()
        io = self.io
        with self._lock:
            if self._http is None:
                import weakref
                from scan.io.http import HttpClient
                self._http = HttpClient(settings, io)
                # a connection dropped without close() still stops its loop thread
                weakref.finalize(self, self._http.close)
            return self._http

    def _new_source(self, url: str, first: bool = False):
        """The byte source of ``url``, opened (its size and version known).
        ``first``: its footer is read next (http: the opening request brings
        the footer's tail too)."""
        if url.split("://", 1)[0].lower() in ("http", "https"):
            from scan.io.http import HttpSource
            return HttpSource(url, self._http_client(), tail=first)
        from scan.io.fsspec_source import FsspecSource
        return FsspecSource(url, self._remote_settings(), self.io)

    def close(self) -> None:
        """Drop the open files and the cached bytes (and the chunk states
        reading them); close the http client."""
        with self._lock:
            self._files.clear()
            self._wrapped.clear()
            http, self._http = self._http, None
            opener, self._opener = self._opener, None
            self._validating = {}
        if opener is not None:
            opener.shutdown(wait=False, cancel_futures=True)
        if http is not None:
            http.close()
        if self._buffer_manager is not None:
            self._buffer_manager.invalidate()
        if self._statistics is not None:
            self._statistics.clear()

    def open_file(self, path: str):
        """The scan.ParquetFile of ``path``, cached while the file is unchanged
        (a PartitionedFile when the last table naming it was hive-partitioned).
        A file of a hive table that planning did not open (table_info) must
        have the schema of the table's first file."""
        pf = self._open_base(path)
        with self._lock:
            deferred = self._deferred.get(path)
        if deferred is not None and deferred[2] is not pf:
            first, columns, _ = deferred
            cols = table_columns(pf)
            if not same_columns(cols, columns):
                raise BinderError(_schema_mismatch(first, columns, path, cols))
            with self._lock:
                self._deferred[path] = (first, columns, pf)
        return self._partitioned(path, pf)

    def _open_base(self, path: str, planning: bool = False):
        from scan.io.source import is_url
        if is_url(path):
            return self._open_remote(path, planning)
        local = path[len("file://"):] if path.startswith("file://") else path
        try:
            st = os.stat(local)
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
        pf = open_parquet(local, buffer_manager=bm, verify_checksums=self.config.verify_checksums,
                          decryption=KeyResolver(self.keys, encryption, self.kms_client))
        with self._lock:
            self._files[path] = (identity, pf, keys)
        return pf

    def _open_remote(self, url: str, planning: bool = False):
        """The ParquetFile of ``url``, validated once a statement.  While
        planning (``planning``), a file known from an earlier statement is
        validated in the background and its cached footer used at once:
        confirm_files() waits for the answers when the plan is made."""
        bm = self.buffer_manager
        with self._lock:
            hit = self._files.get(url)
            epoch = self._epoch
            known = hit is not None and hit[0][2] == self.config.verify_checksums
            if known and hit[0][1] == epoch:
                return hit[1]
            if known and planning:
                fut = self._pool().submit(self._new_source, url)
                self._files[url] = ((hit[0][0], epoch, hit[0][2]), hit[1])
                self._validating[url] = (fut, hit[1])
                return hit[1]
        # one HEAD / info: the validation; a file not seen before: one
        # request for its size, version and footer
        source = self._new_source(url, first=hit is None)
        if hit is not None and hit[0][2] == self.config.verify_checksums and \
                hit[1].source.version() == source.version():
            with self._lock:
                self._files[url] = ((source.version(), epoch, hit[0][2]), hit[1])
            return hit[1]
        if hit is not None:
            bm.invalidate(hit[1].source)        # an older version's pages
        from scan.keys import KeyResolver
        from scan.reader import ParquetFile
        with self._lock:
            encryption = self._encryption.get(url)
        pf = ParquetFile(source, bm, self.config.verify_checksums,
                         KeyResolver(self.keys, encryption, self.kms_client))
        with self._lock:
            self._files[url] = ((source.version(), epoch, self.config.verify_checksums), pf)
        return pf

    def confirm_files(self) -> bool:
        """Wait for the background validations planning started
        (_open_remote): True when every file is unchanged; False when some
        changed -- their cached footers and pages are dropped, and the
        statement is planned again (planner.plan_query).  A file that can
        no longer be opened raises its error."""
        with self._lock:
            pending, self._validating = self._validating, {}
        unchanged, error = True, None
        for url, (fut, pf) in pending.items():
            try:
                source = fut.result()
            except PqdbError as e:
                source, error = None, error or e
            if source is not None and source.version() == pf.source.version():
                continue
            with self._lock:
                if url in self._files and self._files[url][1] is pf:
                    del self._files[url]
            self.buffer_manager.invalidate(pf.source)
            unchanged = False
        if error is not None:
            raise error
        return unchanged

    def _pool(self):
        """Threads for opening and validating remote files, as many as
        http_concurrency (lock held)."""
        n = max(1, self.config.http_concurrency)
        if self._opener is None or self._opener_n != n:
            from concurrent.futures import ThreadPoolExecutor
            if self._opener is not None:
                self._opener.shutdown(wait=False)       # (its work still finishes)
            self._opener = ThreadPoolExecutor(n, thread_name_prefix="pqdb-open")
            self._opener_n = n
        return self._opener

    def open_at_once(self, files: list[str]) -> None:
        """Open (or validate, once a query) the remote ones among ``files``
        (a table's, or a scan's before it opens them one by one) at once, up
        to http_concurrency at a time: each costs one request (the first
        time its footer's tail, later a HEAD), so a table of N files on an
        object store waits about N / concurrency round trips instead of N;
        files known from an earlier statement are validated in the
        background (_open_remote, confirm_files).  Errors of new files are
        left for the caller's serial opening to raise, in file order."""
        from scan.io.source import is_url
        with self._lock:
            epoch = self._epoch
            todo = [f for f in dict.fromkeys(files) if is_url(f) and
                    (f not in self._files or self._files[f][0][1] != epoch)]
            new = [f for f in todo if f not in self._files]
        for f in todo:
            if f not in new:
                self._open_remote(f, planning=True)     # validated in the background
        if len(new) < 2:
            return

        def open_one(url):
            try:
                self._open_remote(url, planning=True)
            except PqdbError:
                pass
        with self._lock:
            pool = self._pool()
        futures = [pool.submit(open_one, url) for url in new]
        try:
            for fut in futures:
                fut.result()
        finally:                    # (Ctrl-C: the opens not begun are not started)
            for fut in futures:
                fut.cancel()

    def _partitioned(self, path: str, pf):
        with self._lock:
            parts = self._hive.get(path)
            if not parts:
                return pf
            hit = self._wrapped.get(path)
            if hit is not None and hit[0] is pf and hit[1] == parts:
                return hit[2]
        from engine.hive import PartitionedFile
        wrapped = PartitionedFile(pf, parts)
        with self._lock:
            self._wrapped[path] = (pf, parts, wrapped)
        return wrapped

    def file_identity(self, path: str) -> tuple:
        """(path, size, mtime in ns) of the file as opened now: what its
        statistics are keyed by (a rewritten file has none)."""
        self.open_file(path)
        from scan.io.source import is_url
        if is_url(path):
            with self._lock:
                hit = self._files.get(path)
            return (path, hit[0][0])            # (url, (size, etag or last-modified))
        with self._lock:
            hit = self._files.get(path)
        size, mtime_ns = hit[0][0], hit[0][1]
        return (path, size, mtime_ns)

    def resolve_files(self, spec) -> list[str]:
        """Expand a spec (path, glob, directory, URL, or list of those) to files."""
        if isinstance(spec, (list, tuple)):
            out: list[str] = []
            for s in spec:
                out.extend(self.resolve_files(s))
            return out
        spec = str(spec)
        if spec.startswith("file://"):
            spec = spec[len("file://"):]
        if "://" in spec:
            return self._resolve_url(spec)
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

    def _resolve_url(self, url: str) -> list[str]:
        scheme = url.split("://", 1)[0].lower()
        if scheme in ("http", "https"):
            if "*" in url or "[" in url.split("?", 1)[0]:
                raise UnsupportedFeatureError(
                    f"globs are not supported over {scheme}:// (HTTP has no directory "
                    f"listing): list the files, e.g. read_parquet(['{scheme}://host/a.parquet', "
                    f"'{scheme}://host/b.parquet']); url={url}")
            return [url]
        from scan.io.fsspec_source import fsspec_glob
        files = fsspec_glob(url)
        if not files:
            raise PqdbIOError(f'No files found that match the pattern "{url}"')
        return files

    takes_lists = True          # table_info takes a read_parquet list whole (planner/catalog.py)

    def table_info(self, spec, hive_partitioning: bool | None = None,
                   encryption_config=None) -> TableInfo:
        """Files and schema of a table spec; ``hive_partitioning``: True,
        False, or None (on when every file's path has the same key=value
        directories, as DuckDB does); ``encryption_config`` (a
        scan.keys.EncryptionConfig) names the keys of its encrypted files."""
        files = self.resolve_files(spec)
        with self._lock:
            for f in files:
                if encryption_config is None:
                    self._encryption.pop(f, None)
                else:
                    self._encryption[f] = encryption_config
                self._deferred.pop(f, None)
        from engine import hive
        hive_on = bool(hive_partitioning) or (hive_partitioning is None and hive.detect(files))
        first = files[0]
        self.open_at_once([first] if hive_on else files)
        first_pf = self._open_base(first, planning=True)
        columns = table_columns(first_pf)
        pcols, partitions = [], None
        if hive_on:
            pcols, values = hive.partition_table(files, [n for n, _ in columns])
            if pcols:
                partitions = values
        if partitions is not None and len(files) > 1:
            # the other files open when a scan reads them, after filters on
            # the partition columns dropped those they rule out: no request
            # for those (open_file checks the schema then); the row count is
            # the first file's times the files until then
            rows = int(first_pf.num_rows) * len(files)
            with self._lock:
                for f in files[1:]:
                    self._deferred[f] = (first, columns, None)
        else:
            if hive_on:
                self.open_at_once(files)
            rows = 0
            for path in files:
                pf = self._open_base(path, planning=True)
                cols = table_columns(pf)
                if not same_columns(cols, columns):
                    raise BinderError(_schema_mismatch(first, columns, path, cols))
                rows += int(pf.num_rows)
        with self._lock:
            for f in files:
                if partitions is None:
                    self._hive.pop(f, None)
                else:
                    self._hive[f] = [(n, t, partitions[f][n]) for n, t in pcols]
        return TableInfo(files=files, columns=columns + pcols, row_count=rows,
                         partitions=partitions)

    def deferred(self, files: list[str]) -> bool:
        """Whether some of ``files`` were left unopened by table_info (a
        hive table): their statistics wait for partition pruning."""
        with self._lock:
            return any(f in self._deferred and self._deferred[f][2] is None for f in files)

    # ---------------------------------------------------------------- statistics
    @property
    def statistics(self):
        """The connection's engine.statistics.StatisticsService."""
        if self._statistics is None:
            from engine.statistics import StatisticsService
            with self._lock:
                if self._statistics is None:
                    self._statistics = StatisticsService(self)
        return self._statistics

    def table_statistics(self, files: list[str]):
        """planner.statistics.TableStatistics of the table made of ``files``
        (stats.estimates.TableEstimates over what the scans collected), or
        None when the ``statistics`` option is off."""
        return self.statistics.table_statistics(files)

    def statistics_table(self, spec) -> tuple[list, list]:
        """pqdb_statistics(spec): (columns, rows), one row per column."""
        return self.statistics.statistics_table(self.resolve_files(spec))


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


def same_columns(a: list, b: list) -> bool:
    """Two files' (name, type) columns agree: names compared without case
    (the table keeps the first file's), types exactly."""
    return len(a) == len(b) and all(na.lower() == nb.lower() and ta == tb
                                    for (na, ta), (nb, tb) in zip(a, b))


def _schema_mismatch(first: str, a: list, other: str, b: list) -> str:
    def show(cols):
        return ", ".join(f"{n} {t}" for n, t in cols)
    if [n for n, _ in a] != [n for n, _ in b]:
        return (f"files have different schemas: {first} has columns ({show(a)}) "
                f"but {other} has ({show(b)})")
    diff = next((n, ta, tb) for (n, ta), (_, tb) in zip(a, b) if ta != tb)
    return (f"files have different schemas: column {diff[0]} is {diff[1]} in {first} "
            f"but {diff[2]} in {other}")
