"""SQL text -> statements (sqlglot, DuckDB dialect).

Statements are split at top-level semicolons with sqlglot's tokenizer, so a
statement's ``sql`` is its own text and positions in errors refer to it.
"""

from __future__ import annotations

import logging
import re
import threading

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from planner.binder_coverage import check_statement
from planner.errors import SQLError, UnsupportedFeatureError, position_of
from planner.statements import (CopyStatement, CreateViewStatement, DescribeStatement,
                                DropViewStatement, ExplainStatement, PragmaStatement,
                                QueryStatement, SetStatement, Statement)

DIALECT = "duckdb"

# sqlglot warns through logging when it falls back to a Command ("SET threads");
# pqdb raises its own error for those, and with no handler configured Python
# would print the warning to stderr (a second line beside the CLI's error).
logging.getLogger("sqlglot").addHandler(logging.NullHandler())

QUERY_TYPES = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)


def parse_statements(sql: str) -> list[Statement]:
    """Parse one or more ';'-separated statements."""
    if "add_parquet_key" in sql.lower():      # text with a key: no error may quote it
        try:
            return _parse_all(sql)
        except SQLError as e:
            ours = e.bare_message.startswith(("PRAGMA", "syntax error in PRAGMA"))
            raise SQLError(e.bare_message if ours else "syntax error (the text is not quoted: "
                           "it holds a key)") from None
    return _parse_all(sql)


def _parse_all(sql: str) -> list[Statement]:
    out: list[Statement] = []
    for text in split_statements(sql):
        if text.startswith(("--", "/*")) and _only_comments(text):
            continue                    # "SELECT 1; -- done": nothing after the ';'
        out.extend(_parse_statement(text))
    return out


def _only_comments(text: str) -> bool:
    from sqlglot.dialects.dialect import Dialect
    try:
        return not Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError:
        return False


def split_statements(sql: str) -> list[str]:
    """The text of each non-empty top-level statement, stripped."""
    text = sql.strip()
    if ";" not in text[:-1]:        # one statement (maybe ';'-terminated): no tokenizing
        text = text[:-1].rstrip() if text.endswith(";") else text
        return [text] if text else []
    return split_by_tokens(sql)


def split_by_tokens(sql: str) -> list[str]:
    """split_statements by sqlglot's tokenizer (semicolons in strings and
    comments are no separators)."""
    from sqlglot.dialects.dialect import Dialect
    try:
        tokens = Dialect.get_or_raise(DIALECT).tokenize(sql)
    except TokenError as e:
        raise SQLError(f"syntax error: {e}", *_token_error_position(sql, str(e)), sql=sql) from None
    pieces, start = [], 0
    for tok in tokens:
        if tok.token_type == sqlglot.TokenType.SEMICOLON:
            pieces.append(sql[start:tok.start])
            start = tok.end + 1
    pieces.append(sql[start:])
    return [p.strip() for p in pieces if p.strip()]


def parse_query(text: str):
    """Parse a single query (used for view bodies and tests)."""
    ast = parse_cached(text)
    if not isinstance(ast, QUERY_TYPES):
        raise SQLError("expected a query", 1, 1, sql=text)
    return ast


def _token_error_position(sql: str, message: str):
    # sqlglot's TokenError does not carry a position; point at an unclosed quote
    for quote in ("'", '"'):
        if sql.count(quote) % 2:
            return position_of(sql, sql.rfind(quote))
    return None, None


# Parsed statements by their text.  sqlglot's parser is pure Python: about
# 1 ms of a TPC-H query's 2-5 ms of planning, all of it before the first
# morsel (serial at any thread count).  The cached trees are shared, so
# nothing after parsing may change one: the binder reads them (it binds a
# view's stored tree again at every use too) and works on copies where it
# rewrites; the one write is the memo of a select item's output name in its
# node's ``meta`` (binder_expressions.output_name), which only depends on
# the node.
PARSED_KEPT = 256
_PARSED: dict[str, object] = {}
_PARSED_LOCK = threading.Lock()


def parse_cached(text: str):
    """The tree of one statement's text, parsed once and kept (shared: never
    change it)."""
    ast = _PARSED.get(text)
    if ast is None:
        ast = parse_uncached(text)
        with _PARSED_LOCK:
            if len(_PARSED) >= PARSED_KEPT:
                _PARSED.pop(next(iter(_PARSED)))     # the oldest entry
            _PARSED[text] = ast
    return ast


def parse_uncached(text: str):
    """The tree of one statement's text, parsed now (SQLError when it is not
    exactly one statement)."""
    try:
        asts = sqlglot.parse(text, read=DIALECT)
    except ParseError as e:
        info = e.errors[0] if e.errors else {}
        line, col = info.get("line"), info.get("col")
        highlight = info.get("highlight") or ""
        if col is not None and highlight and "\n" not in highlight:
            col = max(col - len(highlight) + 1, 1)
        desc = re.sub(r"<Token token_type: [^,]*, text: (.*?), line: .*?>", r"'\1'",
                      info.get("description") or str(e))
        raise SQLError(f"syntax error: {desc}", line, col, sql=text) from None
    except TokenError as e:
        raise SQLError(f"syntax error: {e}", *_token_error_position(text, str(e)), sql=text) from None
    asts = [a for a in asts if a is not None]
    if len(asts) != 1:
        raise SQLError("expected exactly one statement", 1, 1, sql=text)
    return asts[0]


def _parse_statement(text: str) -> list[Statement]:
    head = text.split(None, 1)[0].upper() if text.split() else ""
    if head == "PRAGMA":
        return [_pragma(text)]
    if head == "EXPLAIN":
        # sqlglot parses any EXPLAIN as an opaque Command: the options are read here
        rest = text[len("EXPLAIN"):].lstrip()
        analyze, fmt, rest = _explain_options(rest, text)
        ast = parse_cached(rest)
        if not isinstance(ast, QUERY_TYPES):
            raise UnsupportedFeatureError(f"EXPLAIN of {_kind(ast)} is not supported")
        return [ExplainStatement(ast, rest, analyze, fmt)]
    ast = parse_cached(text)
    if isinstance(ast, QUERY_TYPES):
        return [QueryStatement(ast, text)]
    if isinstance(ast, exp.Describe):
        check_statement(ast)
        target = ast.this
        if isinstance(target, exp.Table):                 # DESCRIBE table / view / 'file'
            # a copy: from_ would hang the cached tree's own node under the new query
            target = exp.select("*").from_(target.copy())
        if not isinstance(target, QUERY_TYPES):
            raise UnsupportedFeatureError(f"DESCRIBE of {_kind(target)} is not supported")
        return [DescribeStatement(target, text)]
    if isinstance(ast, exp.Create):
        kind = (ast.args.get("kind") or "").upper()
        if kind != "VIEW":
            raise UnsupportedFeatureError(f"CREATE {kind or 'statement'} is not supported")
        table = ast.this
        if isinstance(table, exp.Schema):
            raise UnsupportedFeatureError("CREATE VIEW with a column list is not supported")
        check_statement(ast)
        for prop in (ast.args.get("properties") or exp.Properties()).expressions:
            check_statement(prop)
        _check_view_name(table)
        query = ast.expression
        if not isinstance(query, QUERY_TYPES):
            raise SQLError("CREATE VIEW needs a query", 1, 1, sql=text)
        if ast.args.get("exists"):
            raise UnsupportedFeatureError("CREATE VIEW IF NOT EXISTS is not supported")
        return [CreateViewStatement(table.name, query, bool(ast.args.get("replace")), text)]
    if isinstance(ast, exp.Drop):
        kind = (ast.args.get("kind") or "").upper()
        if kind != "VIEW":
            raise UnsupportedFeatureError(f"DROP {kind or 'statement'} is not supported")
        check_statement(ast)
        tables = ast.args.get("tables") or [ast.this]
        for t in tables:
            _check_view_name(t)
        return [DropViewStatement(t.name, bool(ast.args.get("exists")), text) for t in tables]
    if isinstance(ast, exp.Copy):
        return [_copy_statement(ast, text)]
    if isinstance(ast, exp.Set):
        check_statement(ast)
        return [_set_item(item, text) for item in ast.expressions]
    if isinstance(ast, exp.Command) and str(ast.this).upper() == "SET":
        raise SQLError("syntax error: SET takes 'name = value'", 1, 1, sql=text)
    if isinstance(ast, (exp.Alias, exp.Condition, exp.Identifier)):
        # sqlglot reads a misspelt keyword ("SELEC x") as a bare expression
        word = text.split(None, 1)[0]
        raise SQLError(f"syntax error at or near {word!r}", 1, 1, sql=text)
    raise UnsupportedFeatureError(f"{_kind(ast)} is not supported")


# PRAGMAs pqdb runs, and how many (string) arguments each takes
PRAGMAS = {"add_parquet_key": 2}


def _pragma(text: str) -> PragmaStatement:
    """PRAGMA add_parquet_key('name', 'key').  Its text may hold a key: it is
    parsed without the parse cache, and no error quotes it."""
    try:
        ast = parse_uncached(text)
    except SQLError:
        raise SQLError("syntax error in PRAGMA (expected PRAGMA name('argument', ...))") from None
    call = ast.this if isinstance(ast, exp.Pragma) else None
    if not isinstance(call, exp.Anonymous):
        raise UnsupportedFeatureError("this PRAGMA is not supported (known: "
                                      + ", ".join(f"{p}()" for p in PRAGMAS) + ")")
    name = str(call.this).lower()
    if name not in PRAGMAS:
        raise UnsupportedFeatureError(f"PRAGMA {name} is not supported (known: "
                                      + ", ".join(PRAGMAS) + ")")
    args = call.expressions
    if len(args) != PRAGMAS[name] or not all(
            isinstance(a, exp.Literal) and a.is_string for a in args):
        raise SQLError(f"PRAGMA {name} takes {PRAGMAS[name]} string arguments")
    return PragmaStatement(name, tuple(a.this for a in args))


_EXPLAIN_LIST = re.compile(r"\(\s*((?:ANALYZE|ANALYSE|FORMAT|VERBOSE|COSTS|BUFFERS|TIMING|"
                           r"SETTINGS|SUMMARY|WAL|GENERIC_PLAN)\b[^()]*)\)", re.IGNORECASE)


def _explain_options(rest: str, text: str) -> tuple[bool, str, str]:
    """(analyze, format, the query's text) of what follows EXPLAIN:
    ``ANALYZE query`` or an option list ``(ANALYZE [true|false], FORMAT
    JSON|TEXT) query`` (DuckDB's and PostgreSQL's forms); a parenthesized
    query is a query."""
    words = rest.split(None, 1)
    if words and words[0].upper() in ("ANALYZE", "ANALYSE"):
        return True, "text", rest[len(words[0]):].lstrip()
    m = _EXPLAIN_LIST.match(rest)
    if not m:
        return False, "text", rest
    analyze, fmt = False, "text"
    for item in m.group(1).split(","):
        parts = item.split()
        if not parts:
            raise SQLError("syntax error: empty EXPLAIN option", 1, 1, sql=text)
        name, args = parts[0].upper(), [p.lower() for p in parts[1:]]
        if name in ("ANALYZE", "ANALYSE") and args in ([], ["true"], ["on"], ["1"]):
            analyze = True
        elif name in ("ANALYZE", "ANALYSE") and args in (["false"], ["off"], ["0"]):
            analyze = False
        elif name == "FORMAT" and args in (["json"], ["text"]):
            fmt = args[0]
        elif name == "FORMAT":
            raise UnsupportedFeatureError(f"EXPLAIN FORMAT {' '.join(parts[1:]).upper()} is "
                                          "not supported (TEXT and JSON are)")
        else:
            raise UnsupportedFeatureError(f"EXPLAIN option {item.strip()} is not supported")
    return analyze, fmt, rest[m.end():].lstrip()


def _kind(ast) -> str:
    if isinstance(ast, exp.Command):
        return str(ast.this).upper()
    names = {"Insert": "INSERT", "Update": "UPDATE", "Delete": "DELETE", "Copy": "COPY",
             "Merge": "MERGE", "Pragma": "PRAGMA", "Use": "USE", "Alter": "ALTER",
             "Describe": "DESCRIBE", "Transaction": "BEGIN TRANSACTION",
             "Commit": "COMMIT", "Rollback": "ROLLBACK", "Show": "SHOW"}
    return names.get(type(ast).__name__, type(ast).__name__.upper())


def _check_view_name(table) -> None:
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise UnsupportedFeatureError(f"view name {table.sql(dialect=DIALECT)} is not supported")
    if table.args.get("db") or table.args.get("catalog"):
        raise UnsupportedFeatureError(f"schema-qualified view name {table.sql(dialect=DIALECT)} "
                                      "is not supported (views have no schema)")
    for key, value in table.args.items():
        if key not in ("this", "db", "catalog") and value:
            raise UnsupportedFeatureError(f"{key} on a view name is not supported")


def _copy_statement(ast, text: str) -> CopyStatement:
    """COPY (query) TO 'file' (options) and COPY table TO 'file'."""
    check_statement(ast)
    params = ast.args.get("params") or []
    for p in params:
        check_statement(p)
    source = ast.this
    if isinstance(source, exp.Subquery) and isinstance(source.this, QUERY_TYPES):
        query = source.this
    elif isinstance(source, exp.Table):
        query = exp.select("*").from_(source.copy())
    elif isinstance(source, exp.Schema) and isinstance(source.this, exp.Table):
        query = exp.select(*[exp.column(c.copy()) for c in source.expressions]).from_(
            source.this.copy())
    else:
        raise UnsupportedFeatureError(f"COPY of {_kind(source)} is not supported")
    files = ast.args.get("files") or []
    if len(files) != 1 or not isinstance(files[0], exp.Literal) or not files[0].is_string:
        raise SQLError("COPY ... TO takes one file name, a string", 1, 1, sql=text)
    options: dict = {}
    for p in params:
        name = p.this.name.lower() if isinstance(p.this, (exp.Var, exp.Identifier, exp.Column)) \
            else p.this.sql(dialect=DIALECT).lower()
        if name in options:
            raise SQLError(f"COPY option {name.upper()} is given twice", 1, 1, sql=text)
        if p.args.get("expressions"):
            options[name] = [_copy_value(e, name, text) for e in p.expressions]
        else:
            expression = p.args.get("expression")
            options[name] = True if expression is None else _copy_value(expression, name, text)
    return CopyStatement(query, files[0].this, options, text)


def _copy_value(node, name: str, text: str):
    """A COPY option's value as Python: str, int, float, bool, list or dict."""
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        try:
            return int(node.this)
        except ValueError:
            return float(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -_copy_value(node.this, name, text)
    if isinstance(node, (exp.Var, exp.Identifier, exp.Column)):
        return node.name
    if isinstance(node, (exp.Array, exp.Tuple, exp.Paren)):
        items = node.expressions if not isinstance(node, exp.Paren) else [node.this]
        return [_copy_value(e, name, text) for e in items]
    if isinstance(node, exp.Struct):
        out = {}
        for e in node.expressions:
            if not isinstance(e, (exp.PropertyEQ, exp.EQ, exp.Slice)):
                break
            key = e.this.name if isinstance(e.this, (exp.Identifier, exp.Column, exp.Var)) \
                else _copy_value(e.this, name, text)
            out[str(key)] = _copy_value(e.expression, name, text)
        else:
            return out
    if isinstance(node, exp.Null):
        return None
    raise SQLError(f"COPY option {name.upper()} takes a constant, not "
                   f"{node.sql(dialect=DIALECT)}", 1, 1, sql=text)


def _set_item(item, text: str) -> SetStatement:
    if not isinstance(item, exp.SetItem):
        raise UnsupportedFeatureError(f"SET {item.sql(dialect=DIALECT)} is not supported")
    check_statement(item)
    eq = item.this
    if not isinstance(eq, exp.EQ):
        raise UnsupportedFeatureError(f"SET {item.sql(dialect=DIALECT)} is not supported")
    name = eq.this.name if isinstance(eq.this, (exp.Column, exp.Identifier, exp.Var)) else eq.this.sql()
    return SetStatement(name.lower(), _set_value(eq.expression, text), text)


def _set_value(node, text: str):
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = _set_value(node.this, text)
        return -v
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        try:
            return int(node.this)
        except ValueError:
            return float(node.this)
    if isinstance(node, (exp.Column, exp.Identifier, exp.Var)):
        return node.name
    raise SQLError(f"SET value must be a constant, got {node.sql(dialect=DIALECT)}",
                   1, 1, sql=text)
