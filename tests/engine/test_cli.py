"""The pqdb command line, run as a subprocess (and its pieces in-process)."""

import csv
import io
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from engine import cli
from engine.compile_notice import NOTICE

REPO = Path(__file__).resolve().parents[2]


def run(*args, stdin=""):
    """The CLI's exit code, stdout and stderr; stderr without the one-line
    notice a cold numba cache prints (tests/engine/test_startup.py tests it),
    so that what a test sees does not depend on which kernels an earlier test
    happened to compile."""
    proc = subprocess.run([sys.executable, "-m", "engine.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    err = "".join(line for line in proc.stderr.splitlines(keepends=True)
                  if not line.startswith(NOTICE))
    return proc.returncode, proc.stdout, err


def assert_one_line_error(rc, out, err, code=1):
    assert rc == code, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert err.startswith("Error: ")
    if code == 2:
        assert err.startswith("Error: internal error (a bug in pqdb): ")


# ---------------------------------------------------------------- errors

def test_bad_sql_one_line_error_with_caret():
    rc, out, err = run("-c", "SELECT 1 +* FROM")
    assert_one_line_error(rc, out, err)
    lines = err.splitlines()
    assert len(lines) == 3 and lines[1] == "SELECT 1 +* FROM" and lines[2].strip() == "^"


def test_unknown_option_error():
    rc, out, err = run("-s", "no_such_option=1", "-c", "SET threads = 1")
    assert_one_line_error(rc, out, err)
    assert "unknown option" in err and len(err.splitlines()) == 1
    rc, out, err = run("--set", "threads", "-c", "SET threads = 1")
    assert_one_line_error(rc, out, err)


def test_bad_set_statement():
    rc, out, err = run("-c", "SET threads = 'lots'")
    assert_one_line_error(rc, out, err)


def test_missing_script_file():
    rc, out, err = run("/nonexistent/script.sql")
    assert_one_line_error(rc, out, err)
    assert "/nonexistent/script.sql" in err


def test_stdin_script_and_set():
    rc, out, err = run(stdin="SET threads = 2;\nSET memory_limit = '1GB';\n")
    assert (rc, out, err) == (0, "", "")


def test_timer_prints_run_time():
    rc, out, err = run("--timer", "-c", "SET threads = 2")
    assert rc == 0 and err.startswith("Run Time: ") and err.strip().endswith(" s")


# ---------------------------------------------------------------- in-process pieces

def test_statement_complete():
    assert cli.statement_complete("select 1;")
    assert cli.statement_complete("select 1;  -- done")
    assert not cli.statement_complete("select ';'")
    assert not cli.statement_complete("select 1 -- ;")
    assert not cli.statement_complete("select 1 /* ; */")
    assert cli.statement_complete("select\n 'a;b'\n;")


def test_internal_error_and_interrupt(monkeypatch, capsys):
    def boom(self, text):
        raise ValueError("boom\nsecond line")
    monkeypatch.setattr(cli._Shell, "run_text", boom)
    assert cli.main(["-c", "select 1"]) == 2
    err = capsys.readouterr().err
    assert err == "Error: internal error (a bug in pqdb): ValueError: boom second line\n"

    def interrupt(self, text):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli._Shell, "run_text", interrupt)
    assert cli.main(["-c", "select 1"]) == 130
    assert capsys.readouterr().err == ""


def test_interactive_prompt(monkeypatch, capsys, tmp_path):
    import engine
    monkeypatch.setattr(cli, "HISTORY_FILE", str(tmp_path / "hist"))
    lines = iter([".timer on", "SET threads", "  = 3;", ".format csv", "SELECT 1 +* FROM;",
                  ".bogus", ".quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    shell = cli._Shell(engine.connect(), "table", False)
    assert cli.interactive(shell) == 0
    err = capsys.readouterr().err
    assert shell.con.config.threads == 3 and shell.timer and shell.fmt == "csv"
    assert "Run Time:" in err and "Error: syntax error" in err and "unknown command" in err


def test_interactive_eof(monkeypatch, tmp_path):
    import engine
    monkeypatch.setattr(cli, "HISTORY_FILE", str(tmp_path / "hist"))

    def eof(prompt=""):
        raise EOFError
    monkeypatch.setattr("builtins.input", eof)
    assert cli.interactive(cli._Shell(engine.connect(), "table", False)) == 0


# ---------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def nation(tpch_sf001):
    pytest.importorskip("planner.optimizer")
    pytest.importorskip("engine.executor")
    return f"{tpch_sf001}/nation.parquet"


def test_missing_parquet_file(nation):
    rc, out, err = run("-c", "SELECT * FROM '/nonexistent/x.parquet'")
    assert_one_line_error(rc, out, err)
    assert "No files found" in err


def test_query_formats_match_duckdb(nation):
    import duckdb
    q = f"SELECT n_nationkey, n_name, n_comment FROM '{nation}' ORDER BY n_nationkey"
    expected = duckdb.sql(q).fetchall()
    rc, out, err = run("--format", "csv", "-c", q)
    assert rc == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["n_nationkey", "n_name", "n_comment"]
    assert [(int(a), b, c) for a, b, c in rows[1:]] == expected
    rc, out, err = run("--format", "json", "-c", q)
    assert rc == 0, err
    data = json.loads(out, parse_float=Decimal)
    assert [tuple(d.values()) for d in data] == expected
    rc, out, err = run("-c", q + "; SELECT count(*) AS n FROM '" + nation + "'")
    assert rc == 0, err
    assert out.count("┌") == 2 and "ALGERIA" in out and "25 rows" in out


def test_script_file_runs_every_statement(nation, tmp_path):
    script = tmp_path / "s.sql"
    script.write_text(f"SET threads = 1;\nSELECT count(*) AS c\n  FROM '{nation}';\n"
                      f"SELECT max(n_nationkey) AS m FROM '{nation}';\n")
    rc, out, err = run("--format", "csv", str(script))
    assert rc == 0, err
    assert out.replace("\r\n", "\n") == "c\n25\nm\n24\n"


def test_explain_prints_plan_text(nation, tmp_path):
    db = tmp_path / "metadb"
    rc, out, err = run("--database", str(db), "-c", f"EXPLAIN SELECT count(*) FROM '{nation}'")
    assert rc == 0, err
    assert "Scan" in out and "┌" not in out
    assert db.is_dir()


# ---------------------------------------------------------------- every error is one line

@pytest.fixture(scope="module")
def small_nation(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path_factory.mktemp("cli_errors") / "nation.parquet"
    pq.write_table(pa.table({"n_nationkey": pa.array([0, 1], pa.int32()),
                             "n_name": ["ALGERIA", "ARGENTINA"]}), path)
    return str(path)


@pytest.mark.parametrize("args, message", [
    (["-c", "SELECT * FROM no_such_table"], "table no_such_table does not exist"),
    (["-c", "SELECT nope FROM '{nation}'"], "column nope not found"),
    (["-c", "SELECT no_such_fn(1)"], "unknown function no_such_fn"),
    (["-c", "SELECT * EXCLUDE (nope) FROM '{nation}'"], "nope in EXCLUDE list not found"),
    (["-c", "SELECT n_name FROM '{nation}' QUALIFY true"], "QUALIFY is not supported"),
    (["-c", "SET threads = 'x'"], "invalid value 'x' for option threads"),
    (["-c", "SET nope = 1"], "unknown option 'nope'"),
    (["-c", "INSERT INTO t VALUES (1)"], "INSERT is not supported"),
    # regression: sqlglot's fallback warning was printed before the error line
    (["-c", "RESET threads"], "RESET is not supported"),
    (["-c", "SET threads"], "SET takes 'name = value'"),
    (["-s", "memory_limit=lots", "-c", "SELECT 1"], "invalid value 'lots'"),
    (["-c", "SELECT 1; SELECT 1/0 + 'x'::INTEGER"], "Could not convert string 'x'"),
    (["--database", "/dev/null/db", "-c", "SELECT 1"], "/dev/null/db"),
])
def test_errors_are_one_line_without_traceback(small_nation, args, message):
    rc, out, err = run(*[a.format(nation=small_nation) for a in args])
    assert rc == 1, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert err.startswith("Error: ") and message.lower() in err.splitlines()[0].lower(), err


def test_bad_script_files(tmp_path):
    script = tmp_path / "latin1.sql"
    script.write_bytes(b"SELECT '\xe9';")
    rc, out, err = run(str(script))
    assert_one_line_error(rc, out, err)
    assert "not UTF-8" in err
    rc, out, err = run(str(tmp_path))                      # a directory
    assert_one_line_error(rc, out, err)


def test_bad_command_line_is_one_error_line():
    rc, out, err = run("--format", "xml", "-c", "SELECT 1")
    assert rc == 2 and "Traceback" not in err
    assert err.startswith("Error: argument --format") and len(err.splitlines()) == 1


def test_debug_environment_variable_prints_traceback(monkeypatch, capsys):
    def boom(self, text):
        raise KeyError("k")
    monkeypatch.setattr(cli._Shell, "run_text", boom)
    monkeypatch.setenv("PQDB_DEBUG", "1")
    assert cli.main(["-c", "select 1"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("Error: internal error")
