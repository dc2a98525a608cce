"""The ``pqdb`` command line: run SQL from -c, a file, stdin or a prompt.

    pqdb -c "SELECT count(*) FROM 'x.parquet'"
    pqdb script.sql --format csv
    pqdb --set threads=2 --timer          (interactive prompt)

Errors print one line (``Error: ...``; SQL errors add the offending line and
a caret) and exit with code 1; internal errors (bugs) and bad command-line
arguments exit with code 2; Ctrl-C exits 130.  Never a traceback, unless the
environment variable PQDB_DEBUG=1 asks for it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

FORMATS = ("table", "csv", "json")
HISTORY_FILE = "~/.pqdb_history"
PROMPT = "pqdb> "
CONTINUE_PROMPT = "   ...> "

HELP_TEXT = """\
.exit / .quit          leave (Ctrl-D too)
.timer on|off          print the run time of each statement
.format table|csv|json output format (.mode is the same)
.set NAME=VALUE        change a configuration option
.views                 list the views
.help                  this text
SQL statements end with ';' and may span several lines."""


class _Shell:
    """State shared by the script runner and the prompt."""

    def __init__(self, con, fmt: str, timer: bool, watch=None):
        self.con = con
        self.fmt = fmt
        self.timer = timer
        self.watch = watch          # engine.compile_notice.CompileWatch, or None

    def run_text(self, text: str) -> None:
        """Run every statement of ``text``, printing each query's result.
        Errors propagate (the caller decides whether to stop)."""
        from planner.statements import ExplainStatement
        for stmt in self.con.statements(text):
            start = time.perf_counter()
            try:
                result = self.con.run_statement(stmt)
            finally:
                if self.watch is not None:
                    self.watch.finish()
            if result is not None:
                if isinstance(stmt, ExplainStatement) and self.fmt == "table":
                    out = "\n".join(str(v) for (v,) in result.rows_slice(0, len(result)))
                else:
                    from engine.format import render
                    out = render(result, self.fmt)
                _write(out if out.endswith("\n") else out + "\n")
            if self.timer:
                print(f"Run Time: {time.perf_counter() - start:.3f} s", file=sys.stderr)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def print_error(exc: BaseException) -> int:
    """Print ``exc`` as one line ``Error: ...`` (plus the SQL pointer) to
    stderr; return the exit code: 1, or 2 for an internal error (a bug).
    ``PQDB_DEBUG=1`` prints the traceback first."""
    from engine.errors import InternalError, PqdbError, internal_error
    if os.environ.get("PQDB_DEBUG", "").strip() not in ("", "0"):
        import traceback
        traceback.print_exception(exc, file=sys.stderr)
    if not isinstance(exc, PqdbError):
        exc = internal_error(exc)
    message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"Error: {message}", file=sys.stderr)
    pointer = getattr(exc, "pointer", None)
    if callable(pointer):
        try:
            text = pointer()
        except Exception:           # noqa: BLE001 - the message is already out
            text = None
        if text:
            print(text, file=sys.stderr)
    return 2 if isinstance(exc, InternalError) else 1


class _ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one ``Error:`` line too (exit code 2)."""

    def error(self, message):
        self.exit(2, f"Error: {message} (see {self.prog} --help)\n")


def _parse_settings(pairs: list[str]) -> dict:
    from engine.errors import ConfigError
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"expected NAME=VALUE for --set, got {pair!r}")
        options[name.strip()] = value.strip()
    return options


def build_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(prog="pqdb", description="Query Parquet files with SQL.")
    p.add_argument("file", nargs="?", help="SQL script to run ('-' reads stdin)")
    p.add_argument("-c", "--command", help="SQL to run (several statements allowed)")
    p.add_argument("--format", "-f", choices=FORMATS, default="table", help="output format")
    p.add_argument("--timer", action="store_true", help="print each statement's run time")
    p.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                   help="configuration option (repeatable)")
    p.add_argument("--database", default=":memory:", metavar="PATH",
                   help="directory for persistent metadata (default: in memory)")
    p.add_argument("--engine", choices=("pqdb", "spark"), default="pqdb",
                   help="where queries run: pqdb itself, or Spark (needs pyspark)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master for --engine spark (default local[threads])")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from engine.compile_notice import CompileWatch
    watch = CompileWatch().install() if args.engine == "pqdb" else None
    try:
        return _run(args, watch)
    finally:
        if watch is not None:
            watch.uninstall()


def _run(args, watch) -> int:
    try:
        import engine
        if args.engine == "spark":
            con = engine.connect(engine="spark", master=args.master, **_parse_settings(args.set))
        else:
            con = engine.connect(args.database, **_parse_settings(args.set))
        shell = _Shell(con, args.format, args.timer, watch)
        if args.command is not None:
            shell.run_text(args.command)
        elif args.file is not None and args.file != "-":
            shell.run_text(_read_script(args.file))
        elif args.file == "-" or not sys.stdin.isatty():
            shell.run_text(_read_script(None))
        else:
            return interactive(shell)
        return 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as exc:            # noqa: BLE001 - the CLI never shows tracebacks
        code = print_error(exc)
        # a query stopped by Ctrl-C (QueryInterrupted caused by it) exits as Ctrl-C does
        return 130 if isinstance(exc.__cause__, KeyboardInterrupt) else code


def _read_script(path: str | None) -> str:
    """The text of a script file (None: stdin); PqdbIOError when it cannot
    be read or is not UTF-8."""
    from engine.errors import PqdbIOError
    where = path if path is not None else "standard input"
    try:
        if path is None:
            buffer = getattr(sys.stdin, "buffer", None)
            return buffer.read().decode("utf-8") if buffer is not None else sys.stdin.read()
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8")
    except OSError as e:
        raise PqdbIOError(f"cannot read {where}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise PqdbIOError(f"cannot read {where}: not UTF-8 text (byte {e.start})") from None


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


# ---------------------------------------------------------------- interactive

def statement_complete(text: str) -> bool:
    """True when ``text`` ends with a ';' outside quotes and comments."""
    quote = None
    last = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
                last = ch
        elif ch in ("'", '"'):
            quote = ch
            last = ch
        elif text.startswith("--", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return False
            i = end + 2
            continue
        elif not ch.isspace():
            last = ch
        i += 1
    return quote is None and last == ";"


def _setup_readline():
    try:
        import readline
    except ImportError:
        return None
    path = os.path.expanduser(HISTORY_FILE)
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)
    return path


def _save_history(path) -> None:
    if path is None:
        return
    try:
        import readline
        readline.write_history_file(path)
    except (ImportError, OSError):
        pass


def _forget_keys(history) -> None:
    """Drop the history lines that hold a key (PRAGMA add_parquet_key): keys
    are never written to the history file."""
    if history is None:
        return
    try:
        import readline
    except ImportError:
        return
    for i in range(readline.get_current_history_length() - 1, -1, -1):
        item = readline.get_history_item(i + 1)
        if item is not None and "add_parquet_key" in item.lower():
            readline.remove_history_item(i)


def _dot_command(shell: _Shell, line: str) -> bool:
    """Handle a '.' command; return False to leave the prompt."""
    parts = line.split()
    cmd, rest = parts[0].lower(), parts[1:]
    if cmd in (".quit", ".exit", ".q"):
        return False
    if cmd == ".timer":
        if rest and rest[0].lower() in ("on", "off"):
            shell.timer = rest[0].lower() == "on"
        else:
            print("Error: usage: .timer on|off", file=sys.stderr)
    elif cmd in (".format", ".mode"):
        if rest and rest[0].lower() in FORMATS:
            shell.fmt = rest[0].lower()
        else:
            print("Error: usage: .format table|csv|json", file=sys.stderr)
    elif cmd == ".set":
        try:
            for name, value in _parse_settings(rest).items():
                shell.con.config.set(name, value)
        except Exception as exc:    # noqa: BLE001
            print_error(exc)
    elif cmd == ".views":
        for name in shell.con.catalog.view_names():
            print(name)
    elif cmd == ".help":
        print(HELP_TEXT)
    else:
        print(f"Error: unknown command {parts[0]}; try .help", file=sys.stderr)
    return True


def interactive(shell: _Shell) -> int:
    """The read-eval-print loop."""
    history = _setup_readline()
    print('pqdb: enter SQL ending with ";", .help for help, .quit to leave.')
    buffer: list[str] = []
    try:
        while True:
            try:
                line = input(CONTINUE_PROMPT if buffer else PROMPT)
            except EOFError:
                print()
                return 0
            except KeyboardInterrupt:
                print()
                buffer = []
                continue
            if not buffer and line.strip().startswith("."):
                if not _dot_command(shell, line.strip()):
                    return 0
                continue
            if not buffer and not line.strip():
                continue
            buffer.append(line)
            text = "\n".join(buffer)
            if not statement_complete(text):
                continue
            buffer = []
            if "add_parquet_key" in text.lower():
                _forget_keys(history)
            try:
                shell.run_text(text)
            except KeyboardInterrupt:
                print("Interrupted", file=sys.stderr)
            except Exception as exc:    # noqa: BLE001
                print_error(exc)
    finally:
        _save_history(history)


if __name__ == "__main__":
    sys.exit(main())
