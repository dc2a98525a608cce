"""Errors that leave the Python API: PEP 249 classes, parameters, options,
closed objects, and the conversion of unexpected exceptions (bugs)."""

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine import errors as E


@pytest.fixture(scope="module")
def nation(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("api_errors")
    path = d / "nation.parquet"
    pq.write_table(pa.table({"n_nationkey": pa.array(range(5), pa.int32()),
                             "n_name": ["ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT"],
                             "n_regionkey": pa.array([0, 1, 1, 1, 4], pa.int32())}), path)
    return str(path)


@pytest.fixture()
def con():
    return engine.connect(threads=1)


# ---------------------------------------------------------------- the classes

PEP_249 = {   # pqdb class -> its PEP 249 class
    "PqdbIOError": "OperationalError", "FileFormatError": "DataError",
    "UnsupportedFeatureError": "NotSupportedError", "AuthenticationError": "OperationalError",
    "SQLError": "ProgrammingError", "BinderError": "ProgrammingError",
    "ConfigError": "ProgrammingError", "ExecutionError": "DatabaseError",
    "MemoryLimitError": "OperationalError", "ArithmeticOverflowError": "DataError",
}


def test_pep249_names_and_module_attributes():
    assert engine.apilevel == "2.0" and engine.threadsafety == 1 and engine.paramstyle == "qmark"
    assert engine.Error is engine.PqdbError and issubclass(engine.Error, Exception)
    assert issubclass(engine.Warning, Exception) and not issubclass(engine.Warning, engine.Error)
    assert issubclass(engine.InterfaceError, engine.Error)
    assert not issubclass(engine.InterfaceError, engine.DatabaseError)
    for name in ("DataError", "OperationalError", "IntegrityError", "InternalError",
                 "ProgrammingError", "NotSupportedError"):
        assert issubclass(getattr(engine, name), engine.DatabaseError), name
        assert getattr(engine, name) is getattr(E, name)
    for ours, pep in PEP_249.items():
        assert issubclass(getattr(engine, ours), getattr(engine, pep)), (ours, pep)
    assert issubclass(engine.MemoryLimitError, engine.ExecutionError)
    assert issubclass(engine.ArithmeticOverflowError, engine.ExecutionError)
    assert issubclass(engine.BinderError, engine.SQLError)


# ---------------------------------------------------------------- parameters

def test_named_parameters(con):
    # regression: a dict of named parameters raised a raw KeyError
    assert con.sql("SELECT $k", {"k": 1}).fetchall() == [(1,)]
    assert con.sql("SELECT $a + $A, $b", {"A": 2, "b": "x"}).fetchall() == [(4, "x")]
    with pytest.raises(engine.ProgrammingError, match=r"no value given for parameter \$k"):
        con.sql("SELECT $k", {"j": 1})
    with pytest.raises(engine.ProgrammingError, match=r"parameter \$extra given but not used"):
        con.sql("SELECT $k", {"k": 1, "extra": 2})
    with pytest.raises(engine.ProgrammingError, match="pass a dict"):
        con.sql("SELECT $k", [1])
    with pytest.raises(engine.ProgrammingError, match="pass a dict"):
        con.sql("SELECT $k")
    with pytest.raises(engine.ProgrammingError, match="differ only in case"):
        con.sql("SELECT $k", {"k": 1, "K": 2})
    with pytest.raises(engine.ProgrammingError, match="mixes named"):
        con.sql("SELECT $k, ?", {"k": 1})
    with pytest.raises(engine.ProgrammingError, match="named parameters were given"):
        con.sql("SELECT ?", {"k": 1})


def test_numbered_parameters_match_duckdb(con):
    duckdb = pytest.importorskip("duckdb")
    duck = duckdb.connect()
    # regression: $2, $1 were numbered by position, so the values came out swapped
    for sql, params in [("SELECT $2, $1", [1, 2]), ("SELECT $1, $1 + 1", [5]),
                        ("SELECT ?, ?", ["a", "b"]), ("SELECT $2, $1, ?", [1, 2, 3]),
                        ("SELECT ?, $1", [7])]:
        assert con.sql(sql, params).fetchall() == duck.execute(sql, params).fetchall(), sql


def test_positional_parameter_errors(con):
    with pytest.raises(engine.ProgrammingError, match="query has 2 parameters but 1 were given"):
        con.sql("SELECT ?, ?", [1])
    with pytest.raises(engine.ProgrammingError, match="query has 1 parameters but none"):
        con.sql("SELECT ?")
    with pytest.raises(engine.ProgrammingError, match="no parameters but 1 were given"):
        con.sql("SELECT 1", [1])
    with pytest.raises(engine.ProgrammingError, match=r"parameter \$2 is not used"):
        con.sql("SELECT $1, $3", [1, 2, 3])
    with pytest.raises(engine.ProgrammingError, match="must be a list, a tuple or a dict, not int"):
        con.sql("SELECT ?", 5)
    with pytest.raises(engine.ProgrammingError, match="not str"):
        con.sql("SELECT ?", "a")
    assert con.sql("SELECT ?", (3,)).fetchall() == [(3,)]


@pytest.mark.parametrize("value", [object(), [1, 2], {"a": 1}, 2 ** 200, dt.time(1, 2)])
def test_unsupported_parameter_values(con, value):
    with pytest.raises(engine.ProgrammingError, match="parameter"):
        con.sql("SELECT ?", [value])


def test_parameter_values(con):
    row = con.sql("SELECT ?, ?, ?, ?, ?, ?", [None, True, Decimal("1.5"), bytearray(b"ab"),
                                              dt.date(2020, 1, 2), 2 ** 100]).fetchone()
    assert row == (None, True, Decimal("1.5"), b"ab", dt.date(2020, 1, 2), 2 ** 100)


def test_parameters_belong_to_the_last_statement(con):
    # as in DuckDB: earlier statements run without them
    assert con.sql("SET threads = 1; SELECT ?", [4]).fetchall() == [(4,)]
    assert con.sql("SELECT 1; SELECT $x", {"x": 2}).fetchall() == [(2,)]
    with pytest.raises(engine.NotSupportedError, match="only supported in the last statement"):
        con.sql("SELECT ?; SELECT ?", [1])
    with pytest.raises(engine.ProgrammingError, match="no parameters but 1 were given"):
        con.sql("SET threads = 1", [1])


def test_executemany_needs_a_sequence(con):
    cur = con.cursor()
    with pytest.raises(engine.ProgrammingError, match="executemany"):
        cur.executemany("SELECT ?", 5)
    cur.executemany("SELECT ?", [[1], (2,)])
    assert cur.fetchall() == [(2,)]


# ---------------------------------------------------------------- options

@pytest.mark.parametrize("sql, message", [
    ("SET nope = 1", "unknown option 'nope'"),
    ("SET threads = 'x'", "invalid value 'x' for option threads"),
    ("SET threads = 1.5", "invalid value 1.5 for option threads: not an integer"),
    ("SET threads = -1", "must not be negative"),
    ("SET memory_limit = 'lots'", "invalid value 'lots' for option memory_limit"),
    ("SET verify_checksums = 'maybe'", "not a boolean"),
    ("SET http_timeout = 'soon'", "not a number"),
])
def test_bad_set_statements(con, sql, message):
    with pytest.raises(engine.ConfigError, match=message) as info:
        con.sql(sql)
    assert isinstance(info.value, engine.ProgrammingError)


def test_bad_connect_options(monkeypatch):
    with pytest.raises(engine.ConfigError, match="invalid value 'lots' for option memory_limit"):
        engine.connect(memory_limit="lots")
    with pytest.raises(engine.ConfigError, match="unknown option 'nope'"):
        engine.connect(nope=1)
    with pytest.raises(engine.ConfigError, match="config must be a dict"):
        engine.connect(config=[("threads", 1)])
    with pytest.raises(engine.ProgrammingError, match="database must be a path"):
        engine.connect(123)
    with pytest.raises(engine.NotSupportedError, match="engine 'x'"):
        engine.connect(engine="x")
    monkeypatch.setenv("PQDB_THREADS", "many")
    with pytest.raises(engine.ConfigError, match="environment variable PQDB_THREADS"):
        engine.connect()


# ---------------------------------------------------------------- closed objects

def test_closed_connection_and_cursor_are_interface_errors():
    con = engine.connect()
    cur = con.cursor()
    cur.execute("SELECT 1")
    cur.close()
    for call in (lambda: cur.fetchall(), lambda: cur.execute("SELECT 1"),
                 lambda: cur.fetchone(), lambda: cur.executemany("SELECT ?", [[1]])):
        with pytest.raises(engine.InterfaceError, match="cursor is closed"):
            call()
    cur2 = con.cursor()
    con.close()
    con.close()                                  # closing twice is harmless
    for call in (lambda: con.sql("SELECT 1"), lambda: con.execute("SELECT 1"),
                 lambda: con.cursor(), lambda: con.commit(), lambda: cur2.execute("SELECT 1"),
                 lambda: con.statements("SELECT 1")):
        with pytest.raises(engine.InterfaceError, match="connection is closed"):
            call()


def test_api_misuse(con):
    with pytest.raises(engine.InterfaceError, match="SQL must be a str"):
        con.sql(b"SELECT 1")
    with pytest.raises(engine.InterfaceError, match="no result set"):
        con.cursor().fetchone()
    res = con.sql("SELECT 1 AS a, 2 AS b")
    assert res.column("B") == [2] and res.column(-1) == [2]
    with pytest.raises(engine.ProgrammingError, match="no column 'c' in the result"):
        res.column("c")
    with pytest.raises(engine.ProgrammingError, match="out of range"):
        res.column(5)
    with pytest.raises(engine.ProgrammingError, match="fetchmany size must be an integer"):
        res.fetchmany("2")


# ---------------------------------------------------------------- SQL errors

@pytest.mark.parametrize("sql, cls, message", [
    ("SELEC 1", engine.SQLError, "syntax error"),
    ("SELECT 1 +", engine.SQLError, "syntax error"),
    ("SELECT * FROM no_such_table", engine.BinderError, "table no_such_table does not exist"),
    ("SELECT nope FROM '{nation}'", engine.BinderError, "column nope not found"),
    ("SELECT x.n_name FROM '{nation}'", engine.BinderError, "table 'x' referenced by column"),
    ("SELECT no_such_fn(1)", engine.BinderError, r"unknown function no_such_fn\(...\)"),
    ("SELECT * FROM '/no/such/file.parquet'", engine.PqdbIOError, "No files found"),
    ("INSERT INTO t VALUES (1)", engine.NotSupportedError, "INSERT is not supported"),
    ("SELECT DATE '2020-01-01' + DATE '2020-01-01'", engine.ProgrammingError, "DATE"),
])
def test_sql_errors(con, nation, sql, cls, message):
    with pytest.raises(cls, match=message):
        con.sql(sql.format(nation=nation))


def test_bad_parquet_file_is_a_data_error(con, tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    with pytest.raises(engine.DataError):
        con.sql(f"SELECT * FROM '{bad}'").fetchall()


# ---------------------------------------------------------------- bugs become InternalError

def test_unexpected_exception_becomes_internal_error(con, monkeypatch):
    import engine.api as api

    def broken(*args, **kwargs):
        raise KeyError("oops")
    monkeypatch.setattr(api, "plan_query", broken)
    with pytest.raises(engine.InternalError, match="KeyError: 'oops'") as info:
        con.sql("SELECT 1")
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(engine.InternalError):
        con.cursor().execute("SELECT 1")
    with pytest.raises(engine.InternalError):
        engine.sql("SELECT 1")


def test_memory_error_and_interrupt_at_the_boundary(con, monkeypatch):
    import engine.api as api

    def no_memory(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(api, "plan_query", no_memory)
    with pytest.raises(engine.MemoryLimitError, match="out of memory"):
        con.sql("SELECT 1")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(api, "plan_query", interrupted)
    with pytest.raises(KeyboardInterrupt):
        con.sql("SELECT 1")
