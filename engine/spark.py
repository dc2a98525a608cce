"""Spark as pqdb's distributed execution backend.

    con = engine.connect(engine="spark")                 # local[*]
    con = engine.connect(engine="spark", master="spark://host:7077")
    con.sql("SELECT count(*) FROM 'lineitem.parquet'").fetchall()

The SQL is pqdb's (DuckDB dialect); sqlglot transpiles it to Spark SQL.
Tables named by a path (``'x.parquet'``, ``read_parquet('dir/*.parquet')``)
are registered as Spark temporary views over the same paths; ``CREATE VIEW``
becomes a temporary view of the connection's own Spark session.  Results
come back as the same ``Result`` class the native engine returns.

Semantics kept equal to pqdb (and DuckDB): session time zone UTC, ANSI mode
off (x / 0 is NULL), NULLs last in ascending order (sqlglot writes NULLS
LAST explicitly), ``date_trunc`` on dates gives a TIMESTAMP in both.

One SparkSession (one JVM) serves the whole process; every Connection gets
its own ``newSession()`` so views do not leak between connections.  Spark
starts quietly and offline: no UI, no package downloads, log level ERROR.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
import threading

import numpy as np

from engine.api import Connection, Result, text_result
from engine.block import Block, Vector, empty_vector
from engine.config import Config
from engine.convert import strings_to_vector
from engine.errors import PqdbError, SQLError, UnsupportedFeatureError
from planner import types as T

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "2g"

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""

_session_lock = threading.Lock()
_root_session = None


def _log_config_path() -> str:
    path = os.path.join(tempfile.gettempdir(), f"pqdb-spark-log4j2-{os.getuid()}.properties")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(_LOG4J2)
    return path


def spark_session(master: str | None = None, driver_memory: str | None = None,
                  threads: int | None = None, shuffle_partitions: int | None = None,
                  extra_conf: dict | None = None):
    """The process-wide SparkSession, started on first use (quiet, offline).

    ``master`` defaults to local[threads] (local[*] without threads).  Once
    started, later calls return the running session; asking for a different
    master then is an error rather than a silent mismatch."""
    global _root_session
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)   # pyspark vs pandas versions
            from pyspark.sql import SparkSession
    except ImportError:
        raise UnsupportedFeatureError("the Spark engine needs pyspark (pip install 'pqdb[spark]')") from None
    if master is None:
        master = f"local[{threads}]" if threads else DEFAULT_MASTER
    with _session_lock:
        if _root_session is not None and _root_session.sparkContext._jsc is not None:
            running = _root_session.sparkContext.master
            if _normalized_master(running) != _normalized_master(master):
                raise PqdbError(f"a Spark session with master {running!r} is already running in this "
                                f"process; cannot start one with master {master!r}")
            return _root_session
        cores = threads or os.cpu_count() or 1
        log_opt = f"-Dlog4j2.configurationFile=file:{_log_config_path()}"
        builder = (SparkSession.builder.master(master).appName("pqdb")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.driver.memory", driver_memory or DEFAULT_DRIVER_MEMORY)
                   .config("spark.driver.extraJavaOptions", log_opt)
                   .config("spark.executor.extraJavaOptions", log_opt)
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.ansi.enabled", "false")
                   .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2 * cores, 2)))
                   .config("spark.sql.adaptive.enabled", "true")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "false")
                   .config("spark.sql.parquet.enableVectorizedReader", "true"))
        if master.startswith("local"):
            builder = (builder.config("spark.driver.host", "127.0.0.1")
                       .config("spark.driver.bindAddress", "127.0.0.1"))
        for key, value in (extra_conf or {}).items():
            builder = builder.config(key, str(value))
        os.environ.setdefault("PYSPARK_PYTHON", _python())
        try:
            session = _start_quietly(builder)
        except Exception as e:          # noqa: BLE001 - Java missing, bad master, ...
            raise PqdbError(f"Spark did not start ({_first_line(e)}); its log: "
                            f"{spark_log_path()}") from None
        session.sparkContext.setLogLevel("ERROR")
        _quiet_python_loggers()
        _root_session = session
        return session


def _normalized_master(master: str) -> str:
    """local, local[*] and local[N] spelled alike (local[*] = all cores)."""
    m = master.strip()
    if m == "local":
        return "local[1]"
    if m in ("local[*]", f"local[{os.cpu_count()}]"):
        return f"local[{os.cpu_count()}]"
    return m


def _quiet_python_loggers() -> None:
    """PySpark 4 logs every failed query as JSON on stderr before raising;
    pqdb reports the error itself (one line), so those loggers are muted."""
    import logging
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def spark_log_path() -> str:
    """Where the Spark JVM's own stderr goes (it starts with banner lines)."""
    return os.path.join(tempfile.gettempdir(), f"pqdb-spark-{os.getuid()}.log")


def _start_quietly(builder):
    """getOrCreate() with the JVM's stderr sent to spark_log_path(): the JVM
    inherits file descriptor 2 when it starts, so it is pointed at the log
    file for that moment only.  Failures still reach Python as exceptions."""
    import sys
    import warnings
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        log = os.open(spark_log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.dup2(log, 2)
        finally:
            os.close(log)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)   # pyspark vs pandas versions
            return builder.getOrCreate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _python() -> str:
    import sys
    return sys.executable


def stop_spark() -> None:
    """Stop the process-wide session (the next use starts a new JVM context)."""
    global _root_session
    with _session_lock:
        if _root_session is not None:
            _root_session.stop()
            _root_session = None


# ======================================================================= SQL translation

def _is_path(name: str) -> bool:
    return any(ch in name for ch in "/.*?") or name.startswith("~")


def _stem(path: str) -> str | None:
    base = os.path.basename(path.rstrip("/"))
    stem = base.split(".")[0]
    return stem if stem.isidentifier() and "*" not in base else None


class SparkTranslator:
    """DuckDB-dialect sqlglot ASTs -> Spark SQL text, registering every
    file path the query names as a temporary view of ``session``."""

    def __init__(self, session):
        self.session = session
        self._views_by_paths: dict[tuple, str] = {}
        self.user_views: set[str] = set()

    def _path_view(self, paths: tuple) -> str:
        name = self._views_by_paths.get(paths)
        if name is None:
            for p in paths:
                if "://" in p and not p.startswith("file://"):
                    scheme = p.split("://", 1)[0]
                    if scheme in ("http", "https"):
                        raise UnsupportedFeatureError(f"{scheme} URLs on the Spark engine ({p})")
            name = f"__pqdb_file_{len(self._views_by_paths)}"
            try:
                df = self.session.read.parquet(*[os.path.expanduser(p) for p in paths])
            except Exception as e:      # noqa: BLE001 - Spark's own exception types
                from engine.errors import PqdbIOError
                raise PqdbIOError(f"Spark cannot read {', '.join(paths)}: {_first_line(e)}",
                                  url=paths[0]) from None
            df.createOrReplaceTempView(name)
            self._views_by_paths[paths] = name
        return name

    def _table_paths(self, table) -> tuple | None:
        from sqlglot import exp
        this = table.this
        if isinstance(this, exp.ReadParquet):
            values = []
            for arg in this.expressions:
                items = arg.expressions if isinstance(arg, exp.Array) else [arg]
                for item in items:
                    if not (isinstance(item, exp.Literal) and item.is_string):
                        raise UnsupportedFeatureError("read_parquet with a non-literal path on Spark")
                    values.append(item.this)
            return tuple(values)
        if isinstance(this, (exp.Anonymous, exp.Func)):
            fname = this.sql_name() if isinstance(this, exp.Func) else str(this.this)
            raise UnsupportedFeatureError(f"table function {fname} on the Spark engine")
        if isinstance(this, exp.Identifier) and this.quoted and not table.args.get("db"):
            name = this.this
            if name.lower() not in self.user_views and _is_path(name):
                return (name,)
        return None

    def to_spark(self, ast) -> str:
        """Spark SQL text for one query AST (not modified)."""
        from sqlglot import exp
        tree = ast.copy()
        for table in list(tree.find_all(exp.Table)):
            paths = self._table_paths(table)
            if paths is None:
                continue
            view = self._path_view(paths)
            alias = table.args.get("alias")
            replacement = exp.Table(this=exp.to_identifier(view))
            if alias is not None:
                replacement.set("alias", alias)
            elif len(paths) == 1 and _stem(paths[0]):
                replacement.set("alias", exp.TableAlias(this=exp.to_identifier(_stem(paths[0]))))
            table.replace(replacement)
        tree = tree.transform(_duckdb_arithmetic)
        try:
            return tree.sql(dialect="spark")
        except Exception as e:          # noqa: BLE001 - sqlglot unsupported construct
            raise UnsupportedFeatureError(f"cannot translate to Spark SQL: {e}") from None


def _duckdb_arithmetic(node):
    """Keep DuckDB's (and pqdb's) result types where Spark's differ: ``/`` is
    floating-point division for every numeric type (Spark keeps decimals,
    rounded to 6 digits), ``avg`` is a DOUBLE (Spark: a decimal), and
    ``date_trunc`` is a TIMESTAMP also on dates."""
    from sqlglot import exp
    double = exp.DataType.build("DOUBLE")
    if isinstance(node, exp.Div) and not node.args.get("typed"):
        return exp.Div(this=exp.Cast(this=node.this, to=double.copy()),
                       expression=exp.Cast(this=node.expression, to=double.copy()))
    if isinstance(node, exp.DateTrunc):
        # sqlglot writes Spark's TRUNC (a DATE) when it sees a date argument;
        # pqdb's date_trunc gives a TIMESTAMP, as Spark's DATE_TRUNC does
        return exp.TimestampTrunc(this=node.this, unit=node.args.get("unit"))
    if isinstance(node, exp.Avg):
        inner = node.this
        if isinstance(inner, exp.Distinct) and len(inner.expressions) == 1:
            return exp.Avg(this=exp.Distinct(expressions=[
                exp.Cast(this=inner.expressions[0], to=double.copy())]))
        if not isinstance(inner, exp.Distinct):
            return exp.Avg(this=exp.Cast(this=inner, to=double.copy()))
    return node


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__


# ======================================================================= results

def _spark_type(dt) -> T.DataType:
    from pyspark.sql import types as st
    simple = [(st.BooleanType, T.BOOLEAN), (st.ByteType, T.TINYINT), (st.ShortType, T.SMALLINT),
              (st.IntegerType, T.INTEGER), (st.LongType, T.BIGINT), (st.FloatType, T.FLOAT),
              (st.DoubleType, T.DOUBLE), (st.StringType, T.VARCHAR), (st.BinaryType, T.BLOB),
              (st.DateType, T.DATE), (st.TimestampType, T.TIMESTAMP),
              (st.TimestampNTZType, T.TIMESTAMP), (st.NullType, T.DataType("NULL"))]
    if isinstance(dt, st.DecimalType):
        return T.DataType("DECIMAL", dt.precision, dt.scale)
    if isinstance(dt, st.VarcharType) or isinstance(dt, st.CharType):
        return T.VARCHAR
    for cls, ours in simple:
        if isinstance(dt, cls):
            return ours
    raise UnsupportedFeatureError(f"Spark result type {dt.simpleString()} has no pqdb type")


_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)


def _to_storage(value, t: T.DataType, local_timestamps: bool):
    """One non-NULL Python value from Spark -> pqdb's storage value."""
    tid = t.id
    if tid == "DECIMAL":
        return int(value.scaleb(t.scale).to_integral_value())
    if tid == "DATE":
        return (value - _EPOCH_DATE).days
    if tid == "TIMESTAMP":
        if value.tzinfo is not None or local_timestamps:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return value


def column_to_vector(values: list, t: T.DataType, local_timestamps: bool = False) -> Vector:
    """A pqdb Vector from one column of Python values (None = NULL).

    Used for Spark's collected rows, which are Python objects already: the
    result of a query is small next to its input, and this is one pass per
    column, not per operator."""
    n = len(values)
    if t.is_string:
        return strings_to_vector(values, t)
    if t.id == "NULL":
        return Vector(t, np.zeros(n, np.bool_), np.ones(n, np.uint8), None)
    nulls = np.fromiter((v is None for v in values), np.uint8, n)
    has_nulls = bool(nulls.any())
    dtype = t.numpy_dtype
    stored = [0 if v is None else _to_storage(v, t, local_timestamps) for v in values] \
        if t.id in ("DECIMAL", "DATE", "TIMESTAMP") or has_nulls else values
    data = np.empty(n, dtype) if dtype == np.dtype(object) else np.array(stored, dtype=dtype)
    if dtype == np.dtype(object):
        data[:] = stored
    return Vector(t, data, nulls if has_nulls else None, None)


def result_from_spark(df) -> Result:
    """Collect a Spark DataFrame into a pqdb Result."""
    fields = df.schema.fields
    types = [_spark_type(f.dataType) for f in fields]
    rows = df.collect()
    names = [f.name for f in fields]
    if not rows:
        return Result(names, types, Block([empty_vector(t) for t in types], 0))
    from pyspark.sql.types import TimestampType
    # TimestampType comes back as naive local time, TimestampNTZType as wall time
    local = [isinstance(f.dataType, TimestampType) for f in fields]
    columns = list(zip(*rows)) if fields else []
    vectors = [column_to_vector(list(col), t, is_local)
               for col, t, is_local in zip(columns, types, local)]
    return Result(names, types, Block(vectors, len(rows)))


# ======================================================================= connection

class SparkConnection(Connection):
    """A Connection whose queries run on Spark (see the module docstring)."""

    def __init__(self, master: str | None = None, config: Config | None = None,
                 driver_memory: str | None = None, spark_conf: dict | None = None):
        super().__init__(":memory:", config)
        threads = self._config.threads if master is None else None
        root = spark_session(master, driver_memory, threads=threads, extra_conf=spark_conf)
        self.spark = root.newSession()
        self.master = root.sparkContext.master
        self._translator = SparkTranslator(self.spark)

    def spark_sql(self, text: str) -> str:
        """The Spark SQL text for one pqdb query (for inspection)."""
        stmts = self.statements(text)
        if len(stmts) != 1 or not hasattr(stmts[0], "ast"):
            raise SQLError("expected exactly one query", 1, 1, sql=text)
        return self._translator.to_spark(stmts[0].ast)

    def _run_statement(self, stmt, params) -> Result | None:
        from planner import statements as st
        if params:
            raise UnsupportedFeatureError("query parameters on the Spark engine")
        if isinstance(stmt, st.SetStatement):
            self._config.set(stmt.name, stmt.value)
            return None
        if isinstance(stmt, st.CreateViewStatement):
            name = stmt.name
            exists = name.lower() in self._translator.user_views
            if exists and not stmt.replace:
                from engine.errors import BinderError
                raise BinderError(f"view {name} already exists")
            body = self._translator.to_spark(stmt.ast)
            self._spark_call(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {body}", stmt.sql)
            self._translator.user_views.add(name.lower())
            return None
        if isinstance(stmt, st.DropViewStatement):
            dropped = self.spark.catalog.dropTempView(stmt.name)
            self._translator.user_views.discard(stmt.name.lower())
            if not dropped and not stmt.if_exists:
                from engine.errors import BinderError
                raise BinderError(f"view {stmt.name} does not exist")
            return None
        if isinstance(stmt, st.ExplainStatement):
            if stmt.analyze or stmt.format != "text":
                raise UnsupportedFeatureError("EXPLAIN ANALYZE and EXPLAIN (FORMAT JSON) on the "
                                              "Spark engine are not supported")
            body = self._translator.to_spark(stmt.ast)
            df = self._spark_call(body, stmt.sql)
            plan = df._jdf.queryExecution().toString()
            return text_result("explain", f"Spark SQL: {body}\n\n{plan}")
        if isinstance(stmt, st.QueryStatement):
            body = self._translator.to_spark(stmt.ast)
            df = self._spark_call(body, stmt.sql)
            try:
                return result_from_spark(df)
            except PqdbError:
                raise
            except Exception as e:      # noqa: BLE001 - Spark/Py4J failures
                from engine.errors import ExecutionError
                raise ExecutionError(f"Spark failed: {_first_line(e)}") from None
        raise UnsupportedFeatureError(f"statement {type(stmt).__name__} on the Spark engine")

    def _spark_call(self, text: str, original: str):
        try:
            return self.spark.sql(text)
        except Exception as e:          # noqa: BLE001 - AnalysisException, ParseException
            msg = _first_line(e)
            if type(e).__name__ in ("AnalysisException", "ParseException"):
                raise SQLError(f"Spark rejected the query: {msg}", None, None, sql=original) from None
            from engine.errors import ExecutionError
            raise ExecutionError(f"Spark failed: {msg}") from None

    def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<pqdb.SparkConnection master={self.master!r} {state}>"
