"""Nothing of sqlglot's tree is ignored: planner/binder_coverage.py has a
decision (bind or refuse by name) for every expression class and every
argument of the classes it binds; the constructs it refuses raise
UnsupportedFeatureError naming them, through real SQL.

When a sqlglot upgrade fails these tests, decide on the new classes and
arguments in planner/binder_coverage.py, then add the class names to
sqlglot_classes.txt."""

import re
from pathlib import Path

import pytest
from sqlglot import exp

import engine
from planner import binder_coverage as C

HERE = Path(__file__).resolve().parent
PLANNER = HERE.parent.parent / "planner"


def all_expression_classes() -> set[type]:
    """Every subclass of sqlglot's Expression, recursively (the parser can
    produce no other node)."""
    out, stack = set(), [exp.Expression]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in out:
                out.add(sub)
                stack.append(sub)
    return out


def test_every_sqlglot_class_was_reviewed():
    known = set((HERE / "sqlglot_classes.txt").read_text().split()) - {"#"}
    current = {c.__name__ for c in all_expression_classes()}
    new = sorted(current - {w for w in known if not w.startswith("#")})
    assert not new, ("sqlglot has expression classes planner/binder_coverage.py was not "
                     f"reviewed for: {new}; decide on them there, then list them in "
                     "tests/planner/sqlglot_classes.txt")


def test_every_class_has_a_decision():
    for cls in all_expression_classes():
        if cls in C.BOUND:
            assert cls not in C.REFUSED, cls
        else:
            name = C.refusal(cls)
            assert name and "None" not in name, cls


@pytest.mark.parametrize("table", [C.BOUND, C.STATEMENTS], ids=["queries", "statements"])
def test_every_argument_of_a_bound_class_has_a_decision(table):
    for cls, spec in table.items():
        args = set(cls.arg_types)
        assert not args - set(spec), f"{cls.__name__}: no decision for {sorted(args - set(spec))}"
        # a stale key means the binder reads an argument sqlglot no longer
        # has (as it read 'except' once sqlglot had renamed it 'except_')
        assert not set(spec) - args, f"{cls.__name__}: not sqlglot arguments {set(spec) - args}"
        for key, decision in spec.items():
            assert decision is C.OK or callable(decision) or (
                isinstance(decision, str) and decision), (cls.__name__, key)


def test_arguments_the_binder_reads_exist_in_sqlglot():
    """Every ``args.get("x")`` / ``args["x"]`` in the binder names a real
    sqlglot argument (a renamed argument would otherwise read as absent)."""
    names = {a for c in all_expression_classes() for a in c.arg_types}
    files = list(PLANNER.glob("binder*.py")) + [PLANNER / "frontend.py"]
    for path in files:
        for arg in re.findall(r'\bargs(?:\.get\(|\[)"(\w+)"', path.read_text()):
            assert arg in names, f"{path.name} reads args {arg!r}, which sqlglot does not have"


def test_an_undecided_argument_is_refused_by_name():
    node = exp.Select(expressions=[exp.Literal.number(1)])
    node.args["brand_new"] = exp.Literal.number(2)
    with pytest.raises(engine.NotSupportedError, match="Select argument 'brand_new'"):
        C.check_tree(node)
    node = exp.Select(expressions=[exp.Literal.number(1)])
    node.args["brand_new"] = None                  # empty: nothing written, nothing ignored
    C.check_tree(node)


# ---- refused constructs, through SQL: the message names each ----------------------

@pytest.fixture(scope="module")
def con(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path_factory.mktemp("coverage") / "t.parquet"
    pq.write_table(pa.table({"a": pa.array([1, 2, 3], pa.int32()), "s": ["x", "y", "z"]}), path)
    c = engine.connect(threads=1)
    c.sql(f"CREATE VIEW t AS SELECT * FROM '{path}'")
    return c


REFUSED_SQL = [
    ("SELECT a FROM t QUALIFY row_number() OVER () = 1", "SELECT ... QUALIFY"),
    ("SELECT a FROM t GROUP BY ROLLUP (a)", "GROUP BY ROLLUP"),
    ("SELECT a FROM t GROUP BY CUBE (a)", "GROUP BY CUBE"),
    ("SELECT a FROM t GROUP BY GROUPING SETS ((a), ())", "GROUP BY GROUPING SETS"),
    ("SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW "
     "EXCLUDE CURRENT ROW) FROM t", "window EXCLUDE"),
    ("SELECT a FROM t TABLESAMPLE 10%", "TABLESAMPLE"),
    ("SELECT a FROM t USING SAMPLE 10%", "TABLESAMPLE / USING SAMPLE"),
    ("SELECT a FROM t ORDER BY a WITH FILL", r"ORDER BY \.\.\. WITH FILL"),
    ("SELECT a FROM t LIMIT 10 PERCENT", r"LIMIT \.\.\. PERCENT"),
    ("SELECT a FROM t LIMIT 10%", r"LIMIT \.\.\. PERCENT"),
    ("SELECT a FROM t FETCH FIRST 2 ROWS ONLY", "FETCH"),
    ("SELECT a FROM t FOR UPDATE", "locking clause"),
    ("SELECT a FROM t WINDOW w AS (ORDER BY a)", "WINDOW clause"),
    ("SELECT DISTINCT ON (a) a FROM t", "DISTINCT ON"),
    ("SELECT count(*) FILTER (WHERE a > 1) FROM t", r"aggregate FILTER \(WHERE"),
    ("SELECT sum(a ORDER BY s) FROM t", "ORDER BY inside a function's arguments"),
    ("SELECT TRY_CAST(s AS INTEGER) FROM t", "TRY_CAST"),
    ("SELECT [1, 2, 3][1:2]", "list slice"),
    ("SELECT COLUMNS(c -> c LIKE 'a%') FROM t", "lambda function"),
    ("SELECT list_filter([1, 2], x -> x > 1)", r"function filter\(\)"),
    ("SELECT {'k': 1}", "struct literal"),
    ("SELECT (a, a) IN ((1, 1)) FROM t", "row value"),
    ("SELECT a IS DISTINCT FROM 1 FROM t", "IS DISTINCT FROM"),
    ("SELECT a IS NOT DISTINCT FROM 1 FROM t", "IS NOT DISTINCT FROM"),
    ("SELECT s COLLATE NOCASE FROM t", "COLLATE"),
    ("SELECT a BETWEEN SYMMETRIC 3 AND 1 FROM t", "BETWEEN SYMMETRIC"),
    ("SELECT 2 ** 3", r"power \(\*\* / \^\)"),
    ("SELECT a & 1 FROM t", "bitwise &"),
    ("SELECT sqrt(a) FROM t", r"function sqrt\(\)"),
    ("SELECT percent_rank() OVER (ORDER BY a) FROM t", r"window function percent_rank\(\)"),
    ("SELECT ntile(2) OVER (ORDER BY a) FROM t", r"window function ntile\(\)"),
    ("SELECT * FROM t PIVOT (sum(a) FOR s IN ('x'))", "PIVOT"),
    ("SELECT * FROM t, LATERAL (SELECT t.a)", "LATERAL"),
    ("SELECT * FROM (VALUES (1)) v(x)", "VALUES"),
    ("SELECT * FROM t NATURAL JOIN t u", "NATURAL JOIN"),
    ("SELECT * FROM t ASOF JOIN t u ON t.a >= u.a", "ASOF JOIN"),
    ("SELECT * FROM t POSITIONAL JOIN t u", "POSITIONAL JOIN"),
    ("SELECT * FROM t SEMI JOIN t u USING (a)", "SEMI JOIN"),
    ("WITH RECURSIVE r AS (SELECT 1 AS n) SELECT * FROM r", "WITH RECURSIVE"),
    ("SELECT a FROM t UNION BY NAME SELECT a FROM t", "UNION BY NAME"),
    ("SELECT min(a, 2) FROM t", r"min\(x, n\)"),
    ("SELECT CAST(a AS INTEGER FORMAT 'x') FROM t", r"CAST \.\.\. FORMAT"),
    ("SELECT main.t.a FROM t", "schema-qualified column main.t.a"),
    ("SELECT CAST(a AS INTEGER[]) FROM t", "nested type INT\\[\\] as a CAST target"),
    ("SET LOCAL threads = 1", "SET LOCAL"),
    ("DROP VIEW t CASCADE", r"DROP \.\.\. CASCADE"),
    ("CREATE VIEW s.v AS SELECT 1", "schema-qualified view name"),
    ("RESET threads", "RESET"),
    ("SUMMARIZE t", "SUMMARIZE"),
]


@pytest.mark.parametrize("sql, name", REFUSED_SQL)
def test_refused_constructs_are_named(con, sql, name):
    with pytest.raises(engine.NotSupportedError, match=name):
        con.sql(sql)


@pytest.mark.parametrize("sql, rows", [
    ("SET SESSION threads = 1", None),
    ("SET GLOBAL threads = 1", None),     # a connection is its own database
    ("CREATE TEMP VIEW tv AS SELECT 1 AS x", None),
    ("WITH m AS MATERIALIZED (SELECT 2 AS x) SELECT x FROM m", [(2,)]),
    ("SELECT date_diff('month', DATE '2024-01-31', DATE '2024-02-01')", [(1,)]),
    ("(SELECT a FROM t UNION ALL SELECT 9) ORDER BY a DESC LIMIT 2", [(9,), (3,)]),
])
def test_bound_arguments_still_work(con, sql, rows):
    result = con.sql(sql)
    if rows is not None:
        assert result.fetchall() == rows


def test_modifiers_after_a_parenthesized_query_match_duckdb(con):
    # regression: ORDER BY / LIMIT after a parenthesized query were ignored,
    # so (SELECT 1) LIMIT 0 returned a row
    duckdb = pytest.importorskip("duckdb")
    duck = duckdb.connect()
    for sql in ["(SELECT 1 AS a) LIMIT 0",
                "(SELECT 1 AS a UNION ALL SELECT 2) ORDER BY a DESC LIMIT 1",
                "SELECT * FROM ((SELECT 1 AS a UNION ALL SELECT 2) ORDER BY a DESC LIMIT 1)",
                "SELECT ((SELECT 1 AS a UNION ALL SELECT 2) ORDER BY a DESC LIMIT 1)",
                "SELECT 5 IN ((SELECT 5 AS a UNION ALL SELECT 6) ORDER BY a DESC LIMIT 1)",
                "(SELECT 1 AS a UNION ALL SELECT 2 UNION ALL SELECT 3) LIMIT 1 OFFSET 1"]:
        assert con.sql(sql).fetchall() == duck.execute(sql).fetchall(), sql
