"""parse_statements: statement kinds, splitting, errors with positions."""

import pytest

from engine.errors import SQLError as EngineSQLError
from planner.errors import SQLError
from planner.frontend import parse_statements
from planner.statements import (CreateViewStatement, DropViewStatement, ExplainStatement,
                                QueryStatement, SetStatement)
from scan.errors import UnsupportedFeatureError


def test_statement_kinds():
    stmts = parse_statements(
        "select 1; explain select 'a;b'; create or replace view V as select 2;"
        " drop view if exists v; set threads to 4; SET memory_limit = '4GB';"
        " set global verify_checksums = false; with x as (select 1) select * from x")
    kinds = [type(s) for s in stmts]
    assert kinds == [QueryStatement, ExplainStatement, CreateViewStatement, DropViewStatement,
                     SetStatement, SetStatement, SetStatement, QueryStatement]
    assert stmts[0].sql == "select 1"
    assert stmts[1].sql == "select 'a;b'"
    assert stmts[2].name == "V" and stmts[2].replace
    assert stmts[3].name == "v" and stmts[3].if_exists
    assert (stmts[4].name, stmts[4].value) == ("threads", 4)
    assert (stmts[5].name, stmts[5].value) == ("memory_limit", "4GB")
    assert stmts[6].value is False


def test_empty_statements_are_skipped():
    assert len(parse_statements(" ;; select 1 ;\n")) == 1
    assert parse_statements("  ") == []


@pytest.mark.parametrize("sql, kind", [
    ("create table t (a int)", "CREATE TABLE"),
    ("insert into t values (1)", "INSERT"),
    ("update t set a = 1", "UPDATE"),
    ("delete from t", "DELETE"),
    ("drop table t", "DROP TABLE"),
])
def test_unsupported_statements_are_named(sql, kind):
    with pytest.raises(UnsupportedFeatureError, match=kind):
        parse_statements(sql)


def test_parse_error_position():
    with pytest.raises(SQLError) as info:
        parse_statements("select a,\n b frm t x y z")
    err = info.value
    assert (err.line, err.column) == (2, 8)
    assert err.pointer() == " b frm t x y z\n       ^"
    assert isinstance(err, EngineSQLError)


def test_parse_error_in_second_statement_refers_to_its_text():
    with pytest.raises(SQLError) as info:
        parse_statements("select 1;\nselect from where")
    assert info.value.sql == "select from where"
    assert (info.value.line, info.value.column) == (1, 13)
    assert "where" in str(info.value)


def test_unterminated_string():
    with pytest.raises(SQLError) as info:
        parse_statements("select 'abc")
    assert info.value.column == 8


def test_errors_are_one_hierarchy():
    from engine import errors
    assert errors.BinderError.__mro__[1] is errors.SQLError
    assert issubclass(errors.SQLError, errors.PqdbError)


@pytest.mark.parametrize("sql", ["SELEC oops", "1+1", "hello"])
def test_misspelt_statement_is_a_syntax_error(sql):
    with pytest.raises(SQLError, match="syntax error at or near") as info:
        parse_statements(sql)
    assert (info.value.line, info.value.column) == (1, 1)


def test_describe_leaves_the_cached_parse_unchanged():
    """DESCRIBE t builds SELECT * FROM t on a copy: the cached parse of the
    text (shared by every later parse of it) keeps its table under its own
    DESCRIBE node, and the two statements do not share nodes."""
    from planner.frontend import parse_cached
    (first,) = parse_statements("DESCRIBE lineitem")
    cached = parse_cached("DESCRIBE lineitem")
    (again,) = parse_statements("DESCRIBE lineitem")
    assert cached.this.parent is cached
    assert first.ast is not again.ast and first.ast.sql() == again.ast.sql()


def test_comments_after_the_last_statement_are_no_statement():
    # regression: a script ending in a comment failed, "expected exactly one statement"
    assert len(parse_statements("select 1; -- done")) == 1
    assert len(parse_statements("select 1;\n/* end */\n")) == 1
    assert parse_statements("-- nothing but a comment") == []
    assert len(parse_statements("/* lead */ select 2; -- x\n select 3")) == 2


@pytest.mark.parametrize("sql, name", [
    ("set local threads = 1", "SET LOCAL"),
    ("drop view v cascade", r"DROP \.\.\. CASCADE"),
    ("create view s.v as select 1", "schema-qualified view name s.v"),
    ("drop view s.v", "schema-qualified view name s.v"),
    ("reset threads", "RESET"),
])
def test_statement_parts_are_bound_or_refused(sql, name):
    with pytest.raises(UnsupportedFeatureError, match=name):
        parse_statements(sql)


def test_session_and_global_settings_are_the_connection_s():
    stmts = parse_statements("set session threads = 2; set global threads = 3; "
                             "create temp view v as select 1")
    assert [(s.name, s.value) for s in stmts[:2]] == [("threads", 2), ("threads", 3)]
    assert isinstance(stmts[2], CreateViewStatement)
