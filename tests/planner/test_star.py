"""Stars with EXCLUDE / REPLACE / RENAME, name filters and COLUMNS(...),
against DuckDB (names, and rows in any order), and their errors.

Regression: ``SELECT * EXCLUDE (n_comment)`` returned n_comment, and an
EXCLUDE of a missing column was no error (sqlglot's ``except_`` argument
was never read)."""

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine


@pytest.fixture(scope="module")
def cons(tmp_path_factory):
    d = tmp_path_factory.mktemp("star")
    pq.write_table(pa.table({
        "n_nationkey": pa.array(range(6), pa.int32()),
        "n_name": ["ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA"],
        "n_regionkey": pa.array([0, 1, 1, 1, 4, 0], pa.int32()),
        "n_comment": ["a", "b", None, "d", "e", "f"]}), d / "nation.parquet")
    pq.write_table(pa.table({
        "r_regionkey": pa.array(range(5), pa.int32()),
        "r_name": ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"],
        "r_comment": ["x", "y", "z", "w", "v"]}), d / "region.parquet")
    ours, duck = engine.connect(threads=1), duckdb.connect()
    for c in (ours, duck):
        c.execute(f"CREATE VIEW n AS SELECT * FROM '{d}/nation.parquet'")
        c.execute(f"CREATE VIEW r AS SELECT * FROM '{d}/region.parquet'")
    return ours, duck


SAME_AS_DUCKDB = """\
SELECT * EXCLUDE (n_comment) FROM n
SELECT * EXCLUDE n_comment FROM n
SELECT * EXCLUDE (N_COMMENT, n_name) FROM n
SELECT * EXCLUDE (n.n_comment) FROM n
SELECT * EXCLUDE ("N_NAME") FROM n
SELECT * REPLACE (n_nationkey + 100 AS n_nationkey) FROM n
SELECT * REPLACE (n_nationkey + 100 AS N_NATIONKEY) FROM n
SELECT * REPLACE (n_name AS n_regionkey) FROM n
SELECT * RENAME (n_nationkey AS k) FROM n
SELECT n.* EXCLUDE (n_comment) FROM n JOIN r ON n_regionkey = r_regionkey
SELECT * EXCLUDE (n_comment, r_comment) FROM n JOIN r ON n_regionkey = r_regionkey
SELECT * EXCLUDE (r.r_comment) FROM n JOIN r ON n_regionkey = r_regionkey
SELECT * EXCLUDE (n_name) FROM n a JOIN n b USING (n_nationkey)
SELECT * EXCLUDE (n_nationkey) FROM n a JOIN n b USING (n_nationkey)
SELECT * EXCLUDE (a.n_name) FROM n a JOIN n b USING (n_nationkey)
SELECT * EXCLUDE (b.n_nationkey) FROM n a JOIN n b USING (n_nationkey)
SELECT * REPLACE (0 AS n_nationkey) FROM n a JOIN n b USING (n_nationkey)
SELECT * REPLACE (0 AS n_name) FROM n a JOIN n b USING (n_nationkey)
SELECT b.* REPLACE (0 AS n_name) FROM n a JOIN n b USING (n_nationkey)
SELECT b.* EXCLUDE (n_name) FROM n a JOIN n b USING (n_nationkey)
SELECT * REPLACE (0 AS n_name) FROM n a, n b
SELECT * RENAME (n_name AS x) FROM n a, n b
SELECT * RENAME (a.n_name AS x) FROM n a, n b
SELECT * RENAME (n_name AS x) FROM n a JOIN n b USING (n_name)
SELECT * RENAME (b.n_name AS x) FROM n a JOIN n b USING (n_name)
SELECT a.* REPLACE (1 AS n_name) FROM n a JOIN n b USING (n_name)
SELECT * REPLACE (n_regionkey + 1 AS n_regionkey), n_regionkey FROM n
SELECT * REPLACE (n_regionkey + 1 AS n_regionkey) FROM n WHERE n_regionkey = 4
SELECT * REPLACE (n_regionkey + 1 AS n_regionkey) FROM n GROUP BY ALL ORDER BY n_regionkey DESC, n_nationkey
SELECT * EXCLUDE (n_name, n_comment) REPLACE (count(*) AS n_nationkey) FROM n GROUP BY n_regionkey
SELECT * RENAME (n_name AS x) FROM n ORDER BY x
SELECT * RENAME (n_name AS x) FROM n ORDER BY n_name
SELECT * RENAME (n_name AS x) FROM n GROUP BY ALL
SELECT * EXCLUDE (n_comment) FROM n GROUP BY ALL ORDER BY 2
SELECT * REPLACE (n_nationkey + 1 AS n_nationkey) FROM n ORDER BY n_nationkey DESC LIMIT 2
SELECT *, * EXCLUDE (n_name) FROM n
SELECT DISTINCT * EXCLUDE (n_nationkey, n_name, n_comment) FROM n
SELECT * EXCLUDE a FROM (SELECT 1 a, 2 b)
SELECT * REPLACE (rank() OVER (ORDER BY n_name DESC) AS n_nationkey) FROM n
SELECT * EXCLUDE (n_comment) FROM n UNION ALL SELECT * EXCLUDE (r_comment), 0 FROM r
SELECT COLUMNS('key') FROM n
SELECT COLUMNS('^n_.*key$') FROM n
SELECT COLUMNS('(?i)NAME') FROM n
SELECT COLUMNS(*) FROM n
SELECT COLUMNS(* EXCLUDE (n_comment)) FROM n
SELECT COLUMNS(['n_name', 'n_nationkey']) FROM n
SELECT COLUMNS(['N_NAME', 'n_name']) FROM n
SELECT COLUMNS('key') AS x FROM n
SELECT COLUMNS(n.*) FROM n
SELECT COLUMNS('key') FROM n a JOIN n b USING (n_nationkey)
SELECT COLUMNS('key') FROM n GROUP BY ALL ORDER BY ALL
SELECT * LIKE '%key' FROM n
SELECT * NOT LIKE '%key' FROM n
SELECT * ILIKE '%KEY' FROM n
SELECT * NOT ILIKE '%KEY' FROM n
SELECT * GLOB '*key' FROM n
SELECT * SIMILAR TO '.*key' FROM n
SELECT * EXCLUDE (n_name) LIKE '%n%' FROM n
SELECT n.* EXCLUDE (n_name) LIKE '%key' FROM n
SELECT * LIKE 'n\\_%' ESCAPE '\\' FROM n""".splitlines()


@pytest.mark.parametrize("sql", SAME_AS_DUCKDB)
def test_same_as_duckdb(cons, sql):
    ours, duck = cons
    got = ours.sql(sql)
    want = duck.execute(sql)
    assert got.columns == [d[0] for d in want.description]
    assert sorted(got.fetchall(), key=repr) == sorted(want.fetchall(), key=repr)


@pytest.mark.parametrize("sql, cls, message", [
    ("SELECT * EXCLUDE (no_such) FROM n", engine.BinderError,
     "column no_such in EXCLUDE list not found in FROM clause"),
    ("SELECT * EXCLUDE (x.n_comment) FROM n", engine.BinderError,
     "column x.n_comment in EXCLUDE list not found"),
    ("SELECT * EXCLUDE (n.r_comment) FROM n JOIN r ON n_regionkey = r_regionkey",
     engine.BinderError, "n.r_comment in EXCLUDE list not found"),
    ("SELECT * EXCLUDE (r_comment) FROM n a JOIN n b USING (n_nationkey)", engine.BinderError,
     "r_comment in EXCLUDE list not found"),
    ("SELECT a.* EXCLUDE (b.n_name) FROM n a JOIN n b USING (n_name)", engine.BinderError,
     "b.n_name in EXCLUDE list not found in the columns of a"),
    ("SELECT * EXCLUDE (n_comment, N_COMMENT) FROM n", engine.BinderError,
     "duplicate entry N_COMMENT in EXCLUDE list"),
    ("SELECT * EXCLUDE (n_nationkey, n_name, n_regionkey, n_comment) FROM n",
     engine.BinderError, "SELECT list is empty after resolving"),
    ("SELECT * EXCLUDE (main.n.n_name) FROM n", engine.NotSupportedError,
     "schema-qualified column"),
    ("SELECT * EXCLUDE (1) FROM n", engine.SQLError, "must be column names"),
    ("SELECT * REPLACE (1 AS nope) FROM n", engine.BinderError,
     "column nope in REPLACE list not found"),
    ("SELECT * REPLACE (1 AS n_name, 2 AS n_name) FROM n", engine.BinderError,
     "duplicate entry n_name in REPLACE list"),
    ("SELECT * REPLACE (count(*) AS n_nationkey) FROM n", engine.BinderError,
     "must appear in the GROUP BY clause"),
    ("SELECT * EXCLUDE (n_name) REPLACE (1 AS n_name) FROM n", engine.BinderError,
     "cannot occur in both EXCLUDE and REPLACE list"),
    ("SELECT * EXCLUDE (n_name) RENAME (n_name AS x) FROM n", engine.BinderError,
     "cannot occur in both EXCLUDE and RENAME list"),
    ("SELECT * REPLACE (1 AS n_name) RENAME (n_name AS x) FROM n", engine.BinderError,
     "cannot occur in both REPLACE and RENAME list"),
    # DuckDB ignores a RENAME of a missing column; pqdb does not ignore what was written
    ("SELECT * RENAME (nope AS k) FROM n", engine.BinderError,
     "column nope in RENAME list not found"),
    ("SELECT * RENAME (n_name AS a, n_name AS b) FROM n", engine.BinderError,
     "duplicate entry n_name in RENAME list"),
    ("SELECT x.* EXCLUDE (n_name) FROM n", engine.BinderError, "table x in x.* is not in FROM"),
    ("SELECT * LIKE 'zzz' FROM n", engine.BinderError, "name filter left no column"),
    ("SELECT * LIKE n_name FROM n", engine.BinderError, "constant string pattern"),
    ("SELECT * SIMILAR TO '(' FROM n", engine.BinderError, "invalid regular expression"),
    ("SELECT COLUMNS('nope') FROM n", engine.BinderError, "no columns found that match regex"),
    ("SELECT COLUMNS(['nope']) FROM n", engine.BinderError, "column nope was selected by COLUMNS"),
    ("SELECT COLUMNS(1) FROM n", engine.BinderError, "COLUMNS expects a regular expression"),
    ("SELECT min(COLUMNS('key')) FROM n", engine.NotSupportedError,
     r"COLUMNS\(...\) inside an expression"),
    ("SELECT n_name FROM n WHERE COLUMNS('key') > 3", engine.NotSupportedError,
     r"COLUMNS\(...\) inside an expression or in WHERE"),
    ("SELECT COLUMNS(c -> c LIKE '%key') FROM n", engine.NotSupportedError,
     "lambda function is not supported"),
    ("SELECT COLUMNS('(\\w+)_name') AS '\\1' FROM n", engine.NotSupportedError,
     "group reference"),
    ("SELECT *COLUMNS('key') FROM n", engine.NotSupportedError, "unpacked COLUMNS"),
    ("SELECT count(* EXCLUDE (n_name)) FROM n", engine.NotSupportedError,
     "inside an expression"),
    ("SELECT n_name FROM n WHERE * = 1", engine.BinderError, r"\* is not allowed in WHERE"),
])
def test_errors(cons, sql, cls, message):
    with pytest.raises(cls, match=message):
        cons[0].sql(sql)
