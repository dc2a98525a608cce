"""The public Python API: connect(), Connection, Cursor (PEP 249) and Result."""

from __future__ import annotations

import functools
import os

import numpy as np

from engine.block import Block, concat_blocks, empty_vector
from engine.catalog import Catalog
from engine.config import Config
from engine.convert import (block_to_display_rows, block_to_numpy, block_to_rows, strings_to_vector,
                            unique_names, vector_to_numpy, vector_to_pylist, views_to_buffer)
from engine.errors import (ConfigError, InterfaceError, MemoryLimitError, PqdbError, PqdbIOError,
                           ProgrammingError, QueryInterrupted, UnsupportedFeatureError,
                           internal_error)
from planner import confirmed, parse_statements, plan_query
from planner.binder_params import check_parameter_container
from planner.errors import BinderError
from planner import statements as st
from planner.types import VARCHAR, DataType

_FETCH_CHUNK = 2048


def api_boundary(func):
    """The last line of defence: an exception that is not a pqdb Error (a
    bug) leaves the API as an InternalError naming it, with the original as
    its ``__cause__``.  MemoryError becomes a MemoryLimitError.
    KeyboardInterrupt and other BaseExceptions pass through untouched."""
    @functools.wraps(func)
    def guarded(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except PqdbError:
            raise
        except MemoryError as e:
            raise MemoryLimitError(f"out of memory: the system refused an allocation ({e})"
                                   if str(e) else "out of memory: the system refused an "
                                   "allocation") from e
        except Exception as e:      # noqa: BLE001 - converted, not swallowed
            raise internal_error(e) from e
    guarded.__wrapped__ = func
    return guarded


def _guard(cls, names: str):
    """Wrap the public methods ``names`` of ``cls`` in api_boundary."""
    for name in names.split():
        setattr(cls, name, api_boundary(cls.__dict__[name]))
    return cls


def _has_parameters(stmt) -> bool:
    from sqlglot import exp
    ast = getattr(stmt, "ast", None)
    return ast is not None and ("?" in stmt.sql or "$" in stmt.sql) \
        and ast.find(exp.Placeholder) is not None


def _fetch_size(size) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise ProgrammingError(f"fetchmany size must be an integer, not {type(size).__name__}")
    return max(int(size), 0)


# ======================================================================= Result

class Result:
    """A materialized query result: column names, types and the rows.

    ``fetchone``/``fetchmany``/``fetchall`` walk the rows with a cursor
    position; ``to_numpy``/``to_pandas``/``to_arrow`` always see all rows."""

    max_cell_width = 40         # printing clips longer values with '…'

    def __init__(self, columns: list[str], data_types: list[DataType], block: Block):
        self.columns = list(columns)
        self.data_types = list(data_types)
        self.types = [str(t) for t in self.data_types]
        self._block = block
        self._pos = 0
        self._chunk_start = 0
        self._chunk: list[tuple] = []
        self.pruning = None     # engine.context.PruningCounters of the producing query
        # the statement's I/O: {"requests", "bytes_fetched", "bytes_from_cache"}
        # (requests to sources, bytes they sent, bytes served from the buffer
        # manager's memory or the remote disk cache); None when not a query
        self.io = None

    @property
    def block(self) -> Block:
        return self._block

    def __len__(self) -> int:
        return self._block.n

    @property
    def description(self) -> list[tuple]:
        """PEP 249 column descriptions (name, type_code, None, None, precision, scale, None)."""
        return [(name, str(t), None, None,
                 t.precision if t.is_decimal else None,
                 t.scale if t.is_decimal else None, None)
                for name, t in zip(self.columns, self.data_types)]

    # ---------------------------------------------------------------- rows
    def rows_slice(self, start: int, stop: int) -> list[tuple]:
        """Rows start..stop as tuples of Python values (independent of fetch*)."""
        return block_to_rows(self._block, start, stop)

    def display_slice(self, start: int, stop: int) -> list[tuple]:
        """rows_slice for printing: nanosecond values keep their digits."""
        return block_to_display_rows(self._block, start, stop)

    def fetchone(self) -> tuple | None:
        if self._pos >= self._block.n:
            return None
        end = self._chunk_start + len(self._chunk)
        if not self._chunk_start <= self._pos < end:
            self._chunk_start = self._pos
            self._chunk = self.rows_slice(self._pos, self._pos + _FETCH_CHUNK)
        row = self._chunk[self._pos - self._chunk_start]
        self._pos += 1
        return row

    def fetchmany(self, size: int = 1) -> list[tuple]:
        size = _fetch_size(size)
        rows = self.rows_slice(self._pos, self._pos + size)
        self._pos += len(rows)
        return rows

    def fetchall(self) -> list[tuple]:
        rows = self.rows_slice(self._pos, self._block.n)
        self._pos = self._block.n
        return rows

    def __iter__(self):
        while True:
            row = self.fetchone()
            if row is None:
                return
            yield row

    def column(self, name_or_index) -> list:
        """All values of one column as Python objects."""
        return vector_to_pylist(self._block.columns[self._column_index(name_or_index)])

    def _column_index(self, key) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if -len(self.columns) <= key < len(self.columns):
                return int(key) % len(self.columns)
            raise ProgrammingError(f"column index {key} is out of range: the result has "
                                   f"{len(self.columns)} columns")
        if isinstance(key, str):
            hits = [i for i, c in enumerate(self.columns) if c == key] or \
                   [i for i, c in enumerate(self.columns) if c.lower() == key.lower()]
            if hits:
                return hits[0]
            raise ProgrammingError(f"no column {key!r} in the result (columns: "
                                   + ", ".join(self.columns) + ")")
        raise ProgrammingError(f"a column is named by a str or an int, not {type(key).__name__}")

    # ---------------------------------------------------------------- exports
    def to_numpy(self) -> dict[str, np.ndarray]:
        """name -> numpy array (dtypes and NULL handling: engine/convert.py)."""
        return block_to_numpy(self._block, self.columns)

    def to_pandas(self):
        """A pandas DataFrame.  NULLs: NaN in numeric, NaT in temporal,
        None in object columns (integers with NULLs become float64)."""
        try:
            import pandas as pd
        except ImportError:
            raise UnsupportedFeatureError("to_pandas() needs pandas, which is not installed") from None
        data = {}
        for name, vec in zip(unique_names(self.columns), self._block.columns):
            arr = vector_to_numpy(vec)
            if isinstance(arr, np.ma.MaskedArray):
                if arr.dtype.kind in "iuf":
                    arr = arr.astype(np.float64).filled(np.nan)
                elif arr.dtype.kind in "mM":
                    arr = arr.filled(np.datetime64("NaT") if arr.dtype.kind == "M"
                                     else np.timedelta64("NaT"))
                else:
                    obj = arr.data.astype(object)
                    obj[arr.mask] = None
                    arr = obj
            data[name] = arr
        return pd.DataFrame(data, columns=list(data))

    def to_arrow(self):
        """A pyarrow Table with the matching Arrow types."""
        try:
            import pyarrow as pa
        except ImportError:
            raise UnsupportedFeatureError("to_arrow() needs pyarrow, which is not installed") from None
        arrays = [_vector_to_arrow(pa, v) for v in self._block.columns]
        return pa.Table.from_arrays(arrays, names=self.columns)

    # ---------------------------------------------------------------- printing
    def __str__(self) -> str:
        from engine.format import render
        return render(self, "table")

    def __repr__(self) -> str:
        return self.__str__()


def _vector_to_arrow(pa, vec):
    t, data, n = vec.type, vec.data, len(vec)
    mask = None if vec.nulls is None else vec.nulls.astype(bool)
    simple = {"DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us"),
              "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"), "TIMESTAMP_NS": pa.timestamp("ns"),
              "TIMESTAMPTZ_NS": pa.timestamp("ns", tz="UTC"), "TIME": pa.time64("us"),
              "TIMETZ": pa.time64("us"), "TIME_NS": pa.time64("ns")}
    if t.id == "NULL":
        return pa.nulls(n)
    if t.id in simple:
        return pa.array(data, type=simple[t.id], mask=mask)
    if t.is_string:
        buf, offsets = views_to_buffer(data, vec.heap)
        validity = None if mask is None else pa.array(~mask).buffers()[1]
        large = pa.large_string() if t.id == "VARCHAR" else pa.large_binary()
        arr = pa.Array.from_buffers(large, n, [validity, pa.py_buffer(offsets), pa.py_buffer(buf)],
                                    null_count=-1 if mask is not None else 0)
        return arr.cast(pa.string() if t.id == "VARCHAR" else pa.binary())
    if t.id == "DECIMAL":
        return pa.array(vector_to_pylist(vec), type=pa.decimal128(t.precision, t.scale))
    if t.id == "UUID":
        vals = [None if v is None else v.bytes for v in vector_to_pylist(vec)]
        return pa.array(vals, type=pa.binary(16))
    if t.id == "INTERVAL":
        from scan.storage import interval_fields
        vals = [None if (mask is not None and mask[i]) or v is None
                else (lambda m, d, us: (m, d, us * 1000))(*interval_fields(v))
                for i, v in enumerate(vec.data)]
        return pa.array(vals, type=pa.month_day_nano_interval())
    if t.id == "HUGEINT":
        from decimal import Decimal
        vals = [None if v is None else Decimal(v) for v in vector_to_pylist(vec)]
        return pa.array(vals, type=pa.decimal128(38, 0))
    if data.dtype == object:
        return pa.array(vector_to_pylist(vec))
    return pa.array(data, mask=mask)


def _describe_result(schema) -> Result:
    """DESCRIBE: one row per result column, DuckDB's columns (column_name,
    column_type, null, key, default, extra)."""
    names = [f.name for f in schema]
    types = ['"NULL"' if f.type.id == "NULL" else str(f.type) for f in schema]
    n = len(schema)
    columns = [strings_to_vector(names, VARCHAR), strings_to_vector(types, VARCHAR),
               strings_to_vector(["YES"] * n, VARCHAR)]
    columns += [strings_to_vector([None] * n, VARCHAR) for _ in range(3)]
    return Result(["column_name", "column_type", "null", "key", "default", "extra"],
                  [VARCHAR] * 6, Block(columns, n))


def text_result(name: str, text: str) -> Result:
    """A one-cell VARCHAR result printed unclipped (EXPLAIN)."""
    result = Result([name], [VARCHAR], Block([strings_to_vector([text], VARCHAR)], 1))
    result.max_cell_width = 1 << 20
    return result


# ======================================================================= Connection

class Connection:
    """One database session: its Config, catalog (views, open files) and SQL entry points."""

    def __init__(self, database: str = ":memory:", config: Config | None = None,
                 kms_client=None):
        self.database = database
        self._config = config or Config()
        self._catalog = Catalog(self._config, kms_client)
        self._closed = False
        self._running = None          # the CancelToken of the query running now

    @property
    def config(self) -> Config:
        return self._config

    @property
    def catalog(self) -> Catalog:
        return self._catalog

    def _check_open(self):
        if self._closed:
            raise InterfaceError("connection is closed")

    # ---------------------------------------------------------------- SQL
    def sql(self, text: str, params=None) -> Result | None:
        """Run every statement in ``text``; return the Result of the last
        query (None when the last statement is SET / CREATE VIEW / DROP VIEW).
        ``params`` (a list or tuple for ``?`` / ``$1``, a dict for ``$name``)
        belong to the last statement, as in DuckDB."""
        self._check_open()
        if not isinstance(text, str):
            raise InterfaceError(f"SQL must be a str, not {type(text).__name__}")
        check_parameter_container(params)
        statements = parse_statements(text)
        result = None
        for i, stmt in enumerate(statements):
            last = i == len(statements) - 1
            if not last and params is not None and _has_parameters(stmt):
                raise UnsupportedFeatureError(
                    "parameters are only supported in the last statement; run the "
                    "statements in separate calls")
            result = self._run_statement(stmt, params if last else None)
        return result

    def execute(self, text: str, params=None) -> Result | None:
        """Same as sql()."""
        return self.sql(text, params)

    def statements(self, text: str) -> list:
        """The parsed statements of ``text`` (planner.statements objects)."""
        self._check_open()
        if not isinstance(text, str):
            raise InterfaceError(f"SQL must be a str, not {type(text).__name__}")
        return parse_statements(text)

    def run_statement(self, stmt, params=None) -> Result | None:
        """Run one parsed statement (see ``statements``); the CLI runs scripts
        this way to print every query's result."""
        self._check_open()
        check_parameter_container(params)
        return self._run_statement(stmt, params)

    def _run_statement(self, stmt, params) -> Result | None:
        if isinstance(stmt, (st.SetStatement, st.CreateViewStatement, st.DropViewStatement)) \
                and params:
            raise BinderError(f"statement has no parameters but {len(params)} were given")
        if isinstance(stmt, st.SetStatement):
            self._config.set(stmt.name, stmt.value)
            return None
        if isinstance(stmt, st.PragmaStatement):
            if params:
                raise BinderError(f"statement has no parameters but {len(params)} were given")
            self.add_parquet_key(*stmt.args)         # the one PRAGMA (planner/frontend.py)
            return None
        if isinstance(stmt, st.CreateViewStatement):
            if stmt.replace or self._catalog.lookup_view(stmt.name) is None:
                plan_query(stmt.ast, self._catalog, params=None, sql=stmt.sql)  # bind check
            self._catalog.create_view(stmt.name, stmt.ast, stmt.replace)
            return None
        if isinstance(stmt, st.DropViewStatement):
            self._catalog.drop_view(stmt.name, stmt.if_exists)
            return None
        self._catalog.begin_query()     # remote files: validated once per statement
        io_before = self._catalog.io.snapshot()
        result = self._run_query_statement(stmt, params)
        if result is not None:
            result.io = self._catalog.io.since(io_before)
        return result

    def _run_query_statement(self, stmt, params) -> Result | None:
        if isinstance(stmt, st.ExplainStatement):
            from engine.analyze import run_explain
            return run_explain(self, stmt, params)
        if isinstance(stmt, st.DescribeStatement):
            plan = plan_query(stmt.ast, self._catalog, params=params, sql=stmt.sql)
            return _describe_result(plan.schema)
        if isinstance(stmt, st.CopyStatement):
            from engine.copy import run_copy
            return run_copy(self, stmt, params)
        if isinstance(stmt, st.QueryStatement):
            # a query runs on the cached footers of its known remote files
            # while their validations travel (a round trip sooner on a
            # store); kept only once they are confirmed unchanged, else
            # planned and run again (If-Match keeps versions from mixing)
            def run(confirm: bool):
                return self.run_plan(plan_query(stmt.ast, self._catalog, params=params,
                                                sql=stmt.sql, confirm=confirm))
            return confirmed(lambda: run(False), lambda: run(True), self._catalog,
                             passthrough=(QueryInterrupted,))
        raise UnsupportedFeatureError(f"statement {type(stmt).__name__} is not supported")

    def run_plan(self, plan, profile=None) -> Result:
        """Run an optimized plan (planner.plan_query); ``profile``: an
        engine.analyze.QueryProfile counting each node's rows and time.
        With statistics on, rows are counted anyway and a completed query
        leaves its observations for cardinality feedback."""
        from engine.context import ExecutionContext
        from engine.executor import execute
        feedback = bool(self._config.statistics)
        if profile is None and feedback:          # rows per node for cardinality feedback
            from engine.analyze import QueryProfile
            profile = QueryProfile(timed=False)
        ctx = ExecutionContext(self._config, self._catalog.open_file,
                               open_at_once=self._catalog.open_at_once,
                               caches=self._catalog.memory_caches(),
                               statistics=self._catalog.statistics, profile=profile)
        self._running = ctx.cancel
        self._catalog.buffer_manager.begin_query()
        try:
            out = execute(plan, ctx)
        finally:
            self._running = None
        if feedback:                              # completed: what it saw is kept
            from engine.analyze import record_feedback
            try:
                record_feedback(plan, profile)
            except Exception:                     # feedback is a cache: never fails a query
                pass
        types = [f.type for f in plan.schema]
        if isinstance(out, list):
            out = concat_blocks(out, types)
        if not out.columns and types:
            out = Block([empty_vector(t) for t in types], 0)
        result = Result([f.name for f in plan.schema], types, out)
        result.pruning = ctx.pruning      # what the scans skipped (PruningCounters)
        return result

    def interrupt(self) -> None:
        """Stop the query running on this connection (callable from any
        thread, as DuckDB's): it raises QueryInterrupted in the thread that
        runs it once its workers have stopped, and the connection stays
        usable.  Nothing happens when no query runs."""
        token = self._running
        if token is not None:
            token.cancel("interrupted")
    # ---------------------------------------------------------------- keys
    def add_parquet_key(self, name: str, key) -> None:
        """Register an encryption key under ``name`` for this connection's
        reads of encrypted Parquet files (``PRAGMA add_parquet_key``): the
        key as its raw 16, 24 or 32 bytes (bytes or text) or as their
        base64.  Files name their keys in their key metadata (``kf``), or
        ``read_parquet(..., encryption_config = {footer_key: 'name'})``
        does; key material of parquet-java's / pyarrow's key tools names a
        master key, looked up here too (docs/encryption.md)."""
        self._check_open()
        if not isinstance(name, str) or not name:
            raise ProgrammingError("add_parquet_key: the key name must be a non-empty string")
        try:
            self._catalog.keys.add(name, key)
        except ValueError as e:
            raise ProgrammingError(f"add_parquet_key({name!r}, ...): {e}") from None

    # ---------------------------------------------------------------- PEP 249
    def cursor(self) -> "Cursor":
        self._check_open()
        return Cursor(self)

    def commit(self) -> None:
        """No-op: pqdb is read-only (PEP 249)."""
        self._check_open()

    def rollback(self) -> None:
        self._check_open()

    def close(self) -> None:
        self._closed = True
        self._catalog.close()                     # drop open files, cached bytes, keys
        self._catalog = Catalog(self._config)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<pqdb.Connection database={self.database!r} {state}>"


class Cursor:
    """PEP 249 cursor over a Connection."""

    arraysize = 1

    def __init__(self, connection: Connection):
        self.connection = connection
        self._result: Result | None = None
        self._closed = False
        self.rowcount = -1

    def _check_open(self):
        if self._closed:
            raise InterfaceError("cursor is closed")
        self.connection._check_open()

    def execute(self, operation: str, parameters=None) -> "Cursor":
        self._check_open()
        self._result = self.connection.sql(operation, parameters)
        return self

    def executemany(self, operation: str, seq_of_parameters) -> "Cursor":
        self._check_open()
        if isinstance(seq_of_parameters, (str, bytes, dict)) or \
                not hasattr(seq_of_parameters, "__iter__"):
            raise ProgrammingError("executemany() takes a sequence of parameter lists or "
                                   f"dicts, not {type(seq_of_parameters).__name__}")
        for params in seq_of_parameters:
            self._result = self.connection.sql(operation, params)
        return self

    def _require_result(self) -> Result:
        self._check_open()
        if self._result is None:
            raise InterfaceError("no result set: execute a query first")
        return self._result

    @property
    def description(self):
        return None if self._result is None else self._result.description

    def fetchone(self):
        return self._require_result().fetchone()

    def fetchmany(self, size: int | None = None):
        return self._require_result().fetchmany(self.arraysize if size is None else size)

    def fetchall(self):
        return self._require_result().fetchall()

    def __iter__(self):
        return iter(self._require_result())

    def setinputsizes(self, sizes) -> None:
        pass

    def setoutputsize(self, size, column=None) -> None:
        pass

    def close(self) -> None:
        self._closed = True
        self._result = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ======================================================================= module level

@api_boundary
def connect(database: str = ":memory:", config: dict | None = None, *, engine: str = "pqdb",
            master: str | None = None, kms_client=None, **options) -> Connection:
    """Open a connection.  ``options`` (and the ``config`` dict) are Config
    options; PQDB_* environment variables fill the rest.  A database path
    other than ":memory:" is a directory for persistent metadata (created).
    ``engine="spark"`` runs the queries on Spark (engine/spark.py) at
    ``master`` (default local[threads]); it returns the same Result class.
    ``kms_client``: unwraps the data keys of encrypted files written with
    key material (``obj.unwrap_key(wrapped: bytes, master_key_id: str) ->
    bytes``; without one, master keys come from add_parquet_key)."""
    if kms_client is not None and not callable(getattr(kms_client, "unwrap_key", None)):
        raise ProgrammingError("kms_client needs an unwrap_key(wrapped, master_key_id) method")
    if config is not None and not isinstance(config, dict):
        raise ConfigError(f"config must be a dict of options, not {type(config).__name__}")
    if database is not None and not isinstance(database, (str, os.PathLike)):
        raise ProgrammingError(f"database must be a path or ':memory:', not "
                               f"{type(database).__name__}")
    opts = dict(config or {})
    opts.update(options)
    if engine not in ("pqdb", "spark"):
        raise UnsupportedFeatureError(f"engine {engine!r} (known: pqdb, spark)")
    if engine == "spark":
        from engine.spark import SparkConnection
        driver_memory = opts.pop("driver_memory", None)
        return SparkConnection(master, Config.from_environment(**opts), driver_memory=driver_memory)
    if master is not None:
        raise UnsupportedFeatureError("master= is an option of engine='spark' only")
    cfg = Config.from_environment(**opts)
    database = os.fspath(database) if database is not None else ":memory:"
    if database != ":memory:":
        database = os.path.expanduser(database)
        if os.path.exists(database) and not os.path.isdir(database):
            raise PqdbIOError(f"database path {database} exists and is not a directory",
                              url=database)
        try:
            os.makedirs(database, exist_ok=True)
        except OSError as e:
            raise PqdbIOError(f"cannot create database directory {database}: {e.strerror or e}",
                              url=database) from None
    return Connection(database, cfg, kms_client)


_default: Connection | None = None


@api_boundary
def sql(text: str, params=None) -> Result | None:
    """Run SQL on a module-wide in-memory connection."""
    global _default
    if _default is None or _default.closed:
        _default = connect()
    return _default.sql(text, params)


_guard(Result, "fetchone fetchmany fetchall column rows_slice display_slice to_numpy to_pandas to_arrow __str__")
_guard(Connection, "sql statements run_statement add_parquet_key cursor commit rollback close")
_guard(Cursor, "execute executemany fetchone fetchmany fetchall close")
