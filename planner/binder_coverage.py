"""What pqdb does with every part of sqlglot's tree: bind it or refuse it by name.

A query's tree is checked once before binding (``check_tree``).  Each node's
exact class is looked up in:

- ``BOUND``: classes the binder binds (or refuses itself, with its own
  message); for each, every argument (``node.args`` key) is either ``OK``
  (the binder reads it) or the name of the construct it stands for, which
  is refused.  A non-empty argument missing from the entry is refused too,
  so an argument a new sqlglot adds can never be silently ignored.
- ``REFUSED``: classes refused wherever they appear, with their names.
- any other function class (``exp.Func``): refused as "function name()";
  any other class: refused under its sqlglot class name.

Refusals are UnsupportedFeatureError("<name> is not supported").  An
argument is empty when it is None, False, "" or [].  A name may be a
function of the argument's value (``SET GLOBAL`` vs ``SET SESSION``).

tests/planner/test_binder_coverage.py walks all of sqlglot's expression
classes: a class or argument without a decision here fails it, so an
upgrade of sqlglot is reviewed here first.
"""

from __future__ import annotations

from sqlglot import exp

from planner.errors import UnsupportedFeatureError

OK = None
_CHECKED = "pqdb_checked"

# clauses sqlglot may hang on any query node (Select, set operations, Subquery)
_QUERY_CLAUSES = {
    "with_": OK, "order": OK, "limit": OK, "offset": OK,
    "match": "MATCH_RECOGNIZE", "laterals": "LATERAL VIEW", "joins": "JOIN on a set operation",
    "connect": "CONNECT BY", "pivots": "PIVOT / UNPIVOT", "prewhere": "PREWHERE",
    "where": "WHERE on a set operation", "group": "GROUP BY on a set operation",
    "having": "HAVING on a set operation", "qualify": "SELECT ... QUALIFY",
    "windows": "WINDOW clause (named windows)", "distribute": "DISTRIBUTE BY",
    "sort": "SORT BY", "cluster": "CLUSTER BY", "locks": "locking clause (FOR UPDATE / FOR SHARE)",
    "sample": "TABLESAMPLE / USING SAMPLE", "settings": "SETTINGS", "format": "FORMAT",
    "options": "OPTION (query options)", "for_": "FOR XML / FOR JSON",
}
_SET_OPERATION = {**_QUERY_CLAUSES, "this": OK, "expression": OK, "distinct": OK,
                  "by_name": OK,
                  "side": "set operation with a join side", "kind": "set operation with a join kind",
                  "on": "set operation with ON"}
_BINARY = {"this": OK, "expression": OK}
_UNARY = {"this": OK}


def _set_kind(value) -> str | None:
    # a pqdb connection is its own database, as DuckDB's :memory: connect() is,
    # so SESSION and GLOBAL settings are the same thing; LOCAL DuckDB refuses
    return None if str(value).upper() in ("SESSION", "GLOBAL") else f"SET {str(value).upper()}"


def _copy_credentials(value) -> str | None:
    # sqlglot always hangs an (empty) Credentials node on a COPY
    if isinstance(value, exp.Expression) and not any(v for v in value.args.values()):
        return None
    return "COPY ... CREDENTIALS"


def _join_method(value) -> str:
    return f"{str(value).upper()} JOIN"


BOUND: dict[type, dict[str, object]] = {
    # ---- queries and their clauses
    exp.Select: {
        **_QUERY_CLAUSES, "expressions": OK, "distinct": OK, "from_": OK, "joins": OK,
        "where": OK, "group": OK, "having": OK,
        "kind": "SELECT AS STRUCT / AS VALUE", "hint": "query hint", "into": "SELECT ... INTO",
        "operation_modifiers": "SELECT modifiers (e.g. HIGH_PRIORITY)",
        "exclude": "SELECT ... EXCLUDE (after the select list)",
    },
    exp.Union: _SET_OPERATION, exp.Intersect: _SET_OPERATION, exp.Except: _SET_OPERATION,
    exp.Subquery: {**_QUERY_CLAUSES, "this": OK, "alias": OK},
    exp.With: {"expressions": OK, "recursive": "WITH RECURSIVE", "search": "WITH ... SEARCH",
               "cycle": "WITH ... CYCLE", "udfs": "WITH FUNCTION"},
    # MATERIALIZED / NOT MATERIALIZED only say how to compute a CTE, not what
    exp.CTE: {"this": OK, "alias": OK, "materialized": OK, "scalar": "scalar CTE",
              "key_expressions": "WITH ... USING KEY"},
    exp.TableAlias: {"this": OK, "columns": OK},
    exp.From: _UNARY, exp.Where: _UNARY, exp.Having: _UNARY,
    exp.Join: {"this": OK, "on": OK, "side": OK, "kind": OK, "using": OK,
               "method": _join_method, "global_": "GLOBAL JOIN", "hint": "join hint",
               "match_condition": "ASOF JOIN ... MATCH_CONDITION", "nearest": "NEAREST JOIN",
               "directed": "DIRECTED JOIN", "expressions": "join column list",
               "pivots": "PIVOT / UNPIVOT"},
    exp.Table: {"this": OK, "alias": OK, "db": OK, "catalog": OK,
                "laterals": "LATERAL", "joins": "parenthesized JOIN in FROM",
                "pivots": "PIVOT / UNPIVOT", "hints": "table hint",
                "system_time": "FOR SYSTEM_TIME", "version": "time travel (AT / VERSION)",
                "format": "table FORMAT", "pattern": "table PATTERN",
                "ordinality": "WITH ORDINALITY", "when": "time travel (AT / BEFORE)",
                "only": "ONLY", "partition": "PARTITION (...) of a table",
                "changes": "CHANGES", "rows_from": "ROWS FROM", "sample": "TABLESAMPLE",
                "indexed": "INDEXED BY"},
    exp.Group: {"expressions": OK, "all": OK, "grouping_sets": "GROUP BY GROUPING SETS",
                "cube": "GROUP BY CUBE", "rollup": "GROUP BY ROLLUP", "totals": "WITH TOTALS"},
    exp.Order: {"expressions": OK, "this": "ORDER BY inside a function's arguments",
                "siblings": "ORDER SIBLINGS BY"},
    exp.Ordered: {"this": OK, "desc": OK, "nulls_first": OK,
                  "with_fill": "ORDER BY ... WITH FILL"},
    exp.Limit: {"this": OK, "expression": OK, "limit_options": OK, "offset": "LIMIT offset, count",
                "expressions": "LIMIT ... BY"},
    exp.LimitOptions: {"rows": OK, "percent": "LIMIT ... PERCENT", "with_ties": "WITH TIES"},
    exp.Offset: {"this": OK, "expression": OK, "expressions": "OFFSET ... BY"},
    exp.Distinct: {"expressions": OK, "on": "DISTINCT ON"},
    exp.Star: {"except_": OK, "replace": OK, "rename": OK, "ilike": OK},
    exp.Columns: {"this": OK, "unpack": OK},
    exp.ReadParquet: {"expressions": OK},
    # ---- names and constants
    exp.Column: {"this": OK, "table": OK, "db": OK, "catalog": OK,
                 "join_mark": "(+) outer join marker", "shadow": "shadow column"},
    exp.Identifier: {"this": OK, "quoted": OK, "global_": "GLOBAL identifier",
                     "temporary": "TEMPORARY identifier"},
    exp.Alias: {"this": OK, "alias": OK},
    exp.Paren: _UNARY, exp.Var: _UNARY, exp.Boolean: _UNARY, exp.Null: {},
    exp.Literal: {"this": OK, "is_string": OK},
    exp.Placeholder: {"this": OK, "kind": "placeholder kind", "widget": "widget parameter",
                      "jdbc": "JDBC parameter"},
    exp.Interval: {"this": OK, "unit": OK, "fraction_in_string": "INTERVAL with a fraction"},
    exp.DataType: {"this": OK, "expressions": OK, "nested": OK, "values": "typed value",
                   "kind": lambda v: f"type {str(v).upper()}",
                   "nullable": "NULL / NOT NULL in a type",
                   "collate": "COLLATE"},
    exp.DataTypeParam: {"this": OK, "expression": "type parameter modifier"},
    # ---- operators
    **{cls: _BINARY for cls in (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Add,
                                exp.Sub, exp.Mul, exp.IntDiv, exp.Mod, exp.And, exp.Or,
                                exp.Glob, exp.SimilarTo, exp.Escape, exp.StructExtract,
                                exp.Dot, exp.Nullif, exp.StartsWith)},
    # DuckDB's / is always true division: typed/safe describe other dialects' /
    exp.Div: {"this": OK, "expression": OK, "typed": OK, "safe": OK},
    exp.Neg: _UNARY, exp.Not: _UNARY,
    exp.Between: {"this": OK, "low": OK, "high": OK, "symmetric": "BETWEEN SYMMETRIC"},
    exp.In: {"this": OK, "expressions": OK, "query": OK, "unnest": OK, "field": OK,
             "is_global": "GLOBAL IN"},
    exp.Like: {"this": OK, "expression": OK, "negate": OK},
    exp.ILike: {"this": OK, "expression": OK, "negate": OK},
    exp.Is: {"this": OK, "expression": OK, "negate": "IS NOT (as one operator)"},
    exp.Case: {"this": OK, "ifs": OK, "default": OK},
    exp.If: {"this": OK, "true": OK, "false": "if(condition, a, b)"},
    exp.Cast: {"this": OK, "to": OK, "format": "CAST ... FORMAT", "safe": "safe CAST",
               "action": "CAST ... action", "default": "CAST ... DEFAULT ON CONVERSION ERROR"},
    # (DuckDB's || and concat() are NULL-safe in sqlglot's terms; the binder keeps
    #  their DuckDB semantics: || propagates NULL, concat() skips NULLs)
    exp.DPipe: {"this": OK, "expression": OK, "safe": OK},
    exp.Concat: {"expressions": OK, "safe": OK, "coalesce": OK},
    exp.Coalesce: {"this": OK, "expressions": OK, "is_nvl": OK, "is_null": OK},
    exp.Exists: {"this": OK, "expression": "EXISTS with a second argument"},
    exp.Any: _UNARY, exp.All: _UNARY,
    # ---- functions
    exp.Anonymous: {"this": OK, "expressions": OK},
    exp.Extract: _BINARY,
    **{cls: _UNARY for cls in (exp.Year, exp.Month, exp.Day, exp.Quarter, exp.DayOfWeek,
                               exp.DayOfYear, exp.Hour, exp.Minute, exp.Second, exp.Upper,
                               exp.Lower, exp.Abs, exp.Typeof, exp.Sum, exp.Avg,
                               exp.FirstValue, exp.LastValue, exp.RespectNulls,
                               exp.IgnoreNulls)},
    exp.Week: {"this": OK, "mode": "week() with a mode"},
    exp.Substring: {"this": OK, "start": OK, "length": OK, "zero_start": "0-based substring"},
    exp.Length: {"this": OK, "binary": "length() of bytes", "encoding": "length() with an encoding"},
    exp.Round: {"this": OK, "decimals": OK, "truncate": "round() with truncation",
                "casts_non_integer_decimals": "round() casting decimals"},
    exp.Floor: {"this": OK, "decimals": OK, "to": OK},
    exp.Ceil: {"this": OK, "decimals": OK, "to": OK},
    exp.Trim: {"this": OK, "expression": OK, "position": OK, "collation": "TRIM ... COLLATE"},
    exp.Contains: {"this": OK, "expression": OK, "json_scope": "contains() on JSON"},
    exp.TimestampTrunc: {"this": OK, "unit": OK, "zone": "date_trunc() in a time zone",
                         "input_type_preserved": "date_trunc() keeping its input type"},
    exp.DateTrunc: {"this": OK, "unit": OK, "zone": "date_trunc() in a time zone",
                    "input_type_preserved": "date_trunc() keeping its input type"},
    # DuckDB's date_diff counts part boundaries (date_part_boundary): so does pqdb's
    exp.DateDiff: {"this": OK, "expression": OK, "unit": OK, "big_int": OK,
                   "date_part_boundary": OK, "zone": "date_diff() in a time zone"},
    exp.Count: {"this": OK, "big_int": OK, "expressions": "count() of several arguments"},
    exp.Min: {"this": OK, "expressions": "min(x, n)", "count": "min(x, n)"},
    exp.Max: {"this": OK, "expressions": "max(x, n)", "count": "max(x, n)"},
    exp.Array: {"expressions": OK, "bracket_notation": OK, "struct_name_inheritance": OK,
                "value_constructor": OK},
    exp.Bracket: {"this": OK, "expressions": OK, "offset": "indexing from another base",
                  "returns_list_for_maps": "map indexing that returns lists",
                  "safe": "safe indexing", "json_access": "JSON access"},
    exp.ArraySize: {"this": OK, "expression": "array_length() of a dimension"},
    exp.Explode: {"this": OK, "expressions": "unnest() of several lists"},
    exp.Unnest: {"expressions": OK, "alias": "unnest() with an alias list",
                 "offset": "unnest() WITH OFFSET", "explode_array": "unnest() of an array"},
    # ---- window functions
    exp.Window: {"this": OK, "partition_by": OK, "order": OK, "spec": OK, "alias": OK,
                 "over": OK, "first": "KEEP (DENSE_RANK FIRST / LAST)"},
    exp.WindowSpec: {"kind": OK, "start": OK, "start_side": OK, "end": OK, "end_side": OK,
                     "exclude": "window EXCLUDE"},
    exp.RowNumber: {"this": "row_number() with an argument"},
    exp.Rank: {"expressions": "rank() with an argument"},
    exp.DenseRank: {"expressions": "dense_rank() with an argument"},
    exp.Lag: {"this": OK, "offset": OK, "default": OK},
    exp.Lead: {"this": OK, "offset": OK, "default": OK},
}

REFUSED: dict[type, str] = {
    exp.TryCast: "TRY_CAST", exp.Filter: "aggregate FILTER (WHERE ...)",
    exp.Lateral: "LATERAL", exp.Values: "VALUES", exp.Pivot: "PIVOT / UNPIVOT",
    exp.Rollup: "GROUP BY ROLLUP", exp.Cube: "GROUP BY CUBE",
    exp.GroupingSets: "GROUP BY GROUPING SETS", exp.Qualify: "SELECT ... QUALIFY",
    exp.TableSample: "TABLESAMPLE", exp.Fetch: "FETCH", exp.Lock: "locking clause",
    exp.WithFill: "ORDER BY ... WITH FILL", exp.Hint: "query hint",
    exp.Tuple: "row value ((a, b))", exp.Slice: "list slice (l[a:b])",
    exp.Lambda: "lambda function", exp.Kwarg: "named function argument (name := value)",
    exp.PropertyEQ: "struct literal or named argument", exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM", exp.AtTimeZone: "AT TIME ZONE",
    exp.Collate: "COLLATE", exp.WithinGroup: "WITHIN GROUP", exp.Into: "SELECT ... INTO",
    exp.Prior: "PRIOR", exp.Connect: "CONNECT BY", exp.MatchRecognize: "MATCH_RECOGNIZE",
    exp.Parameter: "parameter of this form", exp.SessionParameter: "session parameter",
    exp.PositionalColumn: "positional column (#1)", exp.Pseudocolumn: "pseudocolumn",
    exp.National: "national string (N'...')", exp.HexString: "hex string (x'...')",
    exp.ByteString: "byte string (b'...')", exp.BitString: "bit string (b'...')",
    exp.RawString: "raw string", exp.UnicodeString: "unicode string (U&'...')",
    exp.Introducer: "string introducer", exp.ScopeResolution: "scope resolution (::)",
    exp.Operator: "OPERATOR(...)", exp.Overlaps: "OVERLAPS", exp.PreWhere: "PREWHERE",
    exp.Distribute: "DISTRIBUTE BY", exp.Sort: "SORT BY", exp.Cluster: "CLUSTER BY",
    exp.BitwiseAnd: "bitwise &", exp.BitwiseOr: "bitwise |", exp.BitwiseXor: "xor()",
    exp.BitwiseNot: "bitwise ~", exp.BitwiseLeftShift: "<<", exp.BitwiseRightShift: ">>",
    exp.Pow: "power (** / ^)", exp.Distance: "<->", exp.Struct: "struct literal ({...})",
    exp.JSONExtract: "JSON extraction (->)", exp.JSONExtractScalar: "JSON extraction (->>)",
    exp.PercentRank: "window function percent_rank()", exp.CumeDist: "window function cume_dist()",
    exp.Ntile: "window function ntile()", exp.NthValue: "window function nth_value()",
}

# read_parquet(..., name = value) options whose value is data the binder reads
# itself (planner/binder_options.py), not an expression: check_tree checks the
# option's name and leaves the value (a struct literal) to it
OPTION_VALUES: dict[str, str] = {"encryption_config": "planner/binder_options.py"}
_PARQUET_CALLS = ("read_parquet", "parquet_scan")

# ---- statements (planner/frontend.py handles their query parts and checks these)
STATEMENTS: dict[type, dict[str, object]] = {
    exp.Create: {"this": OK, "kind": OK, "expression": OK, "exists": OK, "replace": OK,
                 "properties": OK, "with_": "WITH before CREATE", "refresh": "CREATE ... REFRESH",
                 "unique": "CREATE UNIQUE", "indexes": "CREATE ... with indexes", "no_schema_binding":
                 "WITH NO SCHEMA BINDING", "begin": "CREATE ... BEGIN", "clone": "CLONE",
                 "concurrently": "CONCURRENTLY", "clustered": "CLUSTERED"},
    # pqdb's views live as long as their connection: TEMPORARY is what they are
    exp.Properties: {"expressions": OK},
    exp.TemporaryProperty: {"this": OK, "scoped": "scoped TEMPORARY"},
    exp.Drop: {"kind": OK, "tables": OK, "exists": OK,
               "restrict": OK,              # the default: pqdb's views have no dependents
               "expressions": "DROP ... with expressions", "temporary": "DROP TEMPORARY",
               "materialized": "DROP MATERIALIZED VIEW", "cascade": "DROP ... CASCADE",
               "constraints": "CASCADE CONSTRAINTS", "purge": "PURGE", "cluster": "ON CLUSTER",
               "concurrently": "CONCURRENTLY", "sync": "SYNC", "iceberg": "ICEBERG",
               "force": "FORCE"},
    exp.Describe: {"this": OK, "as_json": OK, "style": "DESCRIBE with a style",
                   "kind": "DESCRIBE kind", "properties": "DESCRIBE with properties",
                   "expressions": "DESCRIBE column list", "partition": "DESCRIBE PARTITION",
                   "format": "DESCRIBE FORMAT"},
    exp.Set: {"expressions": OK, "unset": "UNSET", "tag": "SET TAG"},
    # COPY ... TO: engine/copy.py checks the options by name
    exp.Copy: {"this": OK, "files": OK, "params": OK,
               "kind": lambda v: "COPY ... FROM" if v else None,
               "credentials": _copy_credentials, "format": "COPY ... FORMAT (outside the options)"},
    exp.CopyParameter: {"this": OK, "expression": OK, "expressions": OK},
    exp.SetItem: {"this": OK, "kind": _set_kind, "expressions": "SET with a list",
                  "collate": "SET ... COLLATE", "global_": "SET GLOBAL"},
}


def _empty(value) -> bool:
    return value is None or value is False or value == "" or value == []


def refusal(cls: type) -> str:
    """The name under which a class without a BOUND entry is refused."""
    name = REFUSED.get(cls)
    if name is not None:
        return name
    if issubclass(cls, exp.Func):
        names = cls.sql_names() if hasattr(cls, "sql_names") else []
        return f"function {(names[0] if names else cls.__name__).lower()}()"
    return f"SQL construct {cls.__name__}"


def arg_refusal(table: dict, node, key: str) -> str | None:
    """None when node's argument ``key`` is bound (or empty), else the name
    of the construct it stands for."""
    value = node.args.get(key)
    if _empty(value):
        return None
    if key not in table:
        return f"{type(node).__name__} argument {key!r}"
    decision = table[key]
    if callable(decision):
        return decision(value)
    return decision


def check_node(node, table: dict[type, dict] = BOUND) -> None:
    """UnsupportedFeatureError for node's refused class or arguments."""
    spec = table.get(type(node))
    if spec is None:
        raise UnsupportedFeatureError(f"{refusal(type(node))} is not supported")
    for key in node.args:
        name = arg_refusal(spec, node, key)
        if name is not None:
            raise UnsupportedFeatureError(f"{name} is not supported")


def check_tree(ast) -> None:
    """Refuse, by name, every part of a query's tree the binder does not
    handle.  The verdict is kept on the root (parsed trees are cached and
    never changed: planner/frontend.py), so a tree is walked once."""
    meta = ast.meta
    if meta.get(_CHECKED):
        return
    stack = [ast]
    while stack:
        node = stack.pop()
        check_node(node)
        if _option_value(node):
            stack.append(node.this)
            continue
        for value in node.args.values():
            if isinstance(value, exp.Expression):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, exp.Expression))
    meta[_CHECKED] = True


def _option_value(node) -> bool:
    """``node`` is a read_parquet option ``name = value`` of OPTION_VALUES."""
    if not isinstance(node, exp.EQ) or not isinstance(node.this, exp.Column) \
            or node.this.name.lower() not in OPTION_VALUES:
        return False
    call = node.parent
    if isinstance(call, exp.ReadParquet):
        return True
    return isinstance(call, exp.Anonymous) and str(call.this).lower() in _PARQUET_CALLS


def check_statement(node) -> None:
    """check_node for a statement's own node (CREATE / DROP / DESCRIBE / SET)."""
    check_node(node, STATEMENTS)
