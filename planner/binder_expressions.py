"""sqlglot expressions -> bound, typed planner.expressions."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from planner import functions as F
from planner import functions_dates as dates
from planner import functions_numbers as numbers
from planner import functions_strings as strings
from planner import types as T
from planner.binder_functions import bind_function
from planner.binder_scope import BindContext, Scope
from planner.errors import BinderError, UnsupportedFeatureError
from planner.expressions import (AggregateCall, Call, ColumnRef, Expr,
                                 Interval, Literal)
from planner.folding import EPOCH, EPOCH_DT, fold, scaled_int
from planner.binder_params import parameter_value
from planner.binder_star import plain_star
from planner.binder_nested import NESTED_NODES, bind_nested_node, resolve_struct_column
from planner.functions_nested import is_null as nested_is_null, reject_nested

_COMPARE = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_ARITH = {exp.Add: "add", exp.Sub: "sub", exp.Mul: "mul", exp.Div: "div",
          exp.IntDiv: "intdiv", exp.Mod: "mod"}
_DATE_PARTS = {exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.Quarter: "quarter",
               exp.DayOfWeek: "dayofweek", exp.DayOfYear: "dayofyear", exp.Hour: "hour",
               exp.Minute: "minute", exp.Second: "second", exp.Week: "week"}
_AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_INTERVAL_UNITS = {"year": (12, 0, 0), "month": (1, 0, 0), "week": (0, 7, 0), "day": (0, 1, 0),
                   "hour": (0, 0, 3_600_000_000), "minute": (0, 0, 60_000_000),
                   "second": (0, 0, 1_000_000), "millisecond": (0, 0, 1000),
                   "microsecond": (0, 0, 1)}
_SQL_TYPES = {"INT": "INTEGER", "INT128": "HUGEINT", "TIMESTAMPNTZ": "TIMESTAMP",
              "DATETIME": "TIMESTAMP", "TEXT": "VARCHAR", "CHAR": "VARCHAR", "NCHAR": "VARCHAR",
              "NVARCHAR": "VARCHAR", "BPCHAR": "VARCHAR", "UINT": "UINTEGER",
              "VARBINARY": "BLOB", "BINARY": "BLOB", "BIGDECIMAL": "DECIMAL"}


class AggregateRef(Expr):
    """An aggregate inside a SELECT/HAVING/ORDER BY expression, until the
    Aggregate node exists and it becomes a ColumnRef to its output."""

    def __init__(self, slot: int, agg: AggregateCall):
        self.slot = slot
        self.agg = agg
        self.type = agg.type

    def __repr__(self) -> str:
        return f"agg[{self.slot}]:{self.agg!r}"


class AggregateCollector:
    """The distinct aggregates of one SELECT block, in first-seen order."""

    def __init__(self):
        self.aggregates: list[AggregateCall] = []
        self.names: list[str] = []
        self._slots: dict[tuple, int] = {}

    def add(self, agg: AggregateCall, name: str) -> AggregateRef:
        key = (agg.func, agg.distinct, expr_key(agg.arg) if agg.arg is not None else None)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self.aggregates)
            self.aggregates.append(agg)
            self.names.append(name)
        return AggregateRef(slot, self.aggregates[slot])


def expr_key(e: Expr) -> tuple:
    """Structural identity of a bound expression (names ignored)."""
    if isinstance(e, ColumnRef):
        return ("col", e.index)
    if isinstance(e, Literal):
        return ("lit", repr(e.value), str(e.type))
    if isinstance(e, AggregateRef):
        return ("agg", e.slot)
    if isinstance(e, Call):
        return ("call", e.func, str(e.type), tuple(expr_key(a) for a in e.args))
    return ("other", id(e))


def output_name(node) -> str:
    """DuckDB's name of a select-list item: alias, column name, or the text."""
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Paren):
        return output_name(node.this)
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return "count_star()"
    # the text is remembered on the node: parsed trees are cached and never
    # changed (planner/frontend.py), and generating it costs ~0.1 ms
    meta = node.meta
    name = meta.get(_NAME_KEY)
    if name is None:
        try:
            name = _duckdb_text(node)
        except Exception:       # naming must never fail a query
            name = node.sql(dialect="duckdb")
        meta[_NAME_KEY] = name
    return name


_NAME_KEY = "pqdb_output_name"


_DUCKDB = Dialect.get_or_raise("duckdb")


def _duckdb_text(node) -> str:
    """Expression text as DuckDB prints it: operators parenthesized."""
    def rebuild(n):
        if isinstance(n, exp.Paren):
            return rebuild(n.this)
        for key, value in list(n.args.items()):
            if isinstance(value, exp.Expression):
                n.set(key, rebuild(value))
            elif isinstance(value, list):
                n.set(key, [rebuild(v) if isinstance(v, exp.Expression) else v for v in value])
        if isinstance(n, exp.Neg) and not isinstance(n.this, exp.Literal):
            return exp.Paren(this=exp.Neg(this=exp.Paren(this=n.this)))
        if isinstance(n, exp.Binary):
            return exp.Paren(this=n)
        return n

    # (rebuild works on a copy, so the generator need not copy it again)
    return _DUCKDB.generate(rebuild(node.copy()), copy=False, normalize_functions="lower")


class ExpressionBinder:
    """Binds expressions of one clause against a scope.

    aggregates: where aggregate calls go (None: aggregates are an error here).
    clause: the clause name used in error messages ("WHERE", "SELECT", ...).
    """

    def __init__(self, ctx: BindContext, scope: Scope, clause: str,
                 aggregates: AggregateCollector | None = None, windows=None):
        self.ctx = ctx
        self.scope = scope
        self.clause = clause
        self.aggregates = aggregates
        self.windows = windows          # binder_window.WindowCollector, SELECT list only

    def bind(self, node) -> Expr:
        bound = self._bind(node)
        try:
            return fold(bound)
        except ValueError as e:
            raise self.ctx.error(str(e), node) from None

    # ---- dispatch ----------------------------------------------------------
    def _bind(self, node) -> Expr:
        try:
            return self._dispatch(node)
        except TypeError as e:
            raise self.ctx.error(f"{e} in {node.sql(dialect='duckdb')}", node) from None
        except ValueError as e:
            raise self.ctx.error(str(e), node) from None

    def _dispatch(self, node) -> Expr:
        cls = type(node)
        if cls in NESTED_NODES and _may_be_nested(node):
            bound = bind_nested_node(self, node)
            if bound is not None:
                return bound
        if cls is exp.Paren:
            return self._bind(node.this)
        if cls is exp.Alias:
            return self._bind(node.this)
        if cls is exp.Column:
            return self._column(node)
        if cls is exp.Literal:
            return self._literal(node)
        if cls is exp.Boolean:
            return Literal(bool(node.this), T.BOOLEAN)
        if cls is exp.Null:
            return Literal(None, T.NULL)
        if cls is exp.Placeholder:
            return self._parameter(node)
        if cls in _COMPARE:
            a, b = self._bind(node.this), self._bind(node.expression)
            reject_nested(f"comparison ({cls.key})", a, b)
            return F.comparison(_COMPARE[cls], a, b)
        if cls in _ARITH:
            return F.arithmetic(_ARITH[cls], self._bind(node.this), self._bind(node.expression))
        if cls is exp.Neg:
            return F.negate(self._bind(node.this))
        if cls is exp.And or cls is exp.Or:
            return F.logic("and" if cls is exp.And else "or",
                           [self._bind(node.this), self._bind(node.expression)])
        if cls is exp.Not:
            inner = node.this
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                x = self._bind(inner.this)
                if x.type.is_nested:
                    return nested_is_null(x, negate=True)
                return Call("is_not_null", [x], T.BOOLEAN)
            return F.logic("not", [self._bind(node.this)])
        if cls is exp.Between:
            x = self._bind(node.this)
            return F.logic("and", [F.comparison("ge", x, self._bind(node.args["low"])),
                                   F.comparison("le", x, self._bind(node.args["high"]))])
        if cls is exp.In:
            return self._in(node)
        if cls in (exp.Like, exp.ILike):
            return self._like(node, None)
        if cls is exp.Escape:
            return self._like(node.this, node.expression)
        if cls is exp.Is:
            return self._is(node)
        if cls is exp.Case:
            return self._case(node)
        if cls is exp.Coalesce:
            return F.coalesce([self._bind(a) for a in [node.this] + node.expressions])
        if cls is exp.TryCast:
            raise UnsupportedFeatureError("TRY_CAST is not supported")
        if cls is exp.Cast:
            return self._cast(node)
        if cls is exp.Interval:
            return self._interval(node)
        if cls is exp.Concat and node.args.get("coalesce"):
            return bind_function(self, node)
        if cls in (exp.DPipe, exp.Concat):
            parts = [node.this, node.expression] if cls is exp.DPipe else node.expressions
            return F.concat([self._bind(a) for a in parts])
        if cls is exp.Extract:
            return dates.extract(node.this.name, self._bind(node.expression))
        if cls in _DATE_PARTS:
            return dates.extract(_DATE_PARTS[cls], self._bind(node.this))
        if cls is exp.Substring:
            args = [node.this, node.args.get("start"), node.args.get("length")]
            return strings.substring([self._bind(a) for a in args if a is not None])
        if cls in (exp.Upper, exp.Lower, exp.Length):
            return strings.string_function(cls.__name__.lower(), [self._bind(node.this)])
        if cls is exp.Abs:
            return numbers.abs_([self._bind(node.this)])
        if cls is exp.Round:
            args = [node.this] + ([node.args["decimals"]] if node.args.get("decimals") else [])
            return numbers.round_([self._bind(a) for a in args])
        if cls in _AGGREGATES:
            return self._aggregate(node, _AGGREGATES[cls])
        if cls is exp.Window:
            from planner.binder_window import bind_window
            return bind_window(self, node)
        if cls in (exp.Subquery, exp.Exists):
            from planner.binder_subquery import bind_subquery_expression
            return bind_subquery_expression(self, node)
        if cls in (exp.Select, exp.Any, exp.All):
            what = "subquery" if cls is exp.Select else f"{cls.__name__.upper()} (subquery)"
            raise UnsupportedFeatureError(f"{what} in {self.clause} is not supported")
        if cls is exp.Star:
            raise self.ctx.error(f"* is not allowed in {self.clause}", node)
        if cls is exp.Columns:
            raise UnsupportedFeatureError(f"COLUMNS(...) inside an expression or in {self.clause} "
                                          "(only as a whole select item)")
        if isinstance(node, exp.Func):
            bound = bind_function(self, node)
            if bound is not None:
                return bound
        if cls is exp.Anonymous:
            return self._anonymous(node)
        if cls is exp.Array:
            raise UnsupportedFeatureError("list literals ([...] / list_value) are not supported")
        if isinstance(node, exp.Func):
            text = node.sql(dialect="duckdb")
            name = text.split("(", 1)[0].strip().lower() if "(" in text else node.sql_name().lower()
            raise self.ctx.error(f"unknown function {name}(...)", node)
        raise UnsupportedFeatureError(
            f"{type(node).__name__} expression is not supported: {node.sql(dialect='duckdb')}")

    # ---- leaves ------------------------------------------------------------
    def _column(self, node: exp.Column) -> Expr:
        if isinstance(node.this, exp.Star):
            raise self.ctx.error(f"{node.sql()} is not allowed in {self.clause}", node)
        name, table = node.name, node.table or None
        hits = self.scope.find(name, table)
        full = f"{table}.{name}" if table else name
        if not hits and table:
            struct_field = resolve_struct_column(self, node)
            if struct_field is not None:
                return struct_field
        if not hits:
            from planner.binder_subquery import resolve_outer
            outer = resolve_outer(self.ctx, name, table, node)
            if outer is not None:
                return outer
            if table and not self.scope.has_table(table):
                raise self.ctx.error(f"table {table!r} referenced by column {full} is not in FROM", node)
            raise self.ctx.error(f"column {full} not found", node)
        if len(hits) > 1:
            tables = ", ".join(sorted({self.scope.columns[i].table or "?" for i in hits}))
            raise self.ctx.error(f"column reference {full} is ambiguous (in {tables})", node)
        if node.args.get("db") or node.args.get("catalog"):
            raise UnsupportedFeatureError(f"schema-qualified column {node.sql(dialect='duckdb')} "
                                          "is not supported (tables have no schema)")
        col = self.scope.columns[hits[0]]
        return ColumnRef(hits[0], col.type, col.name)

    def _literal(self, node: exp.Literal) -> Literal:
        if node.is_string:
            return Literal(node.this, T.VARCHAR)
        text = node.this
        if "e" in text.lower():
            return Literal(float(text), T.DOUBLE)
        if "." in text:
            t = T.decimal_literal_type(text)
            if t.is_float:
                return Literal(float(text), T.DOUBLE)
            return Literal(scaled_int(text, t.scale), t)
        value = int(text)
        return F.SQLIntegerLiteral(value, T.integer_literal_type(value))

    def _parameter(self, node) -> Literal:
        key = self.ctx.placeholders.get(id(node))
        if key is None or self.ctx.params is None:
            raise self.ctx.error(f"missing value for parameter {node.sql(dialect='duckdb')}", node)
        return python_literal(parameter_value(self.ctx.params, key))

    def _interval(self, node: exp.Interval) -> Literal:
        text = node.this.name if node.this is not None else ""
        unit = node.args.get("unit")
        unit = unit.name if unit is not None else ""
        if not unit:                       # interval '1 year'
            parts = text.split()
            if len(parts) != 2:
                raise self.ctx.error(f"cannot parse INTERVAL {text!r}", node)
            text, unit = parts
        unit = unit.lower().rstrip("s") if unit.lower() not in ("s",) else "second"
        if unit not in _INTERVAL_UNITS:
            raise UnsupportedFeatureError(f"INTERVAL unit {unit.upper()} is not supported")
        try:
            n = int(text)
        except ValueError:
            raise self.ctx.error(f"INTERVAL amount must be an integer, got {text!r}", node) from None
        m, d, us = _INTERVAL_UNITS[unit]
        return Literal(Interval(m * n, d * n, us * n), T.INTERVAL)

    # ---- composites ---------------------------------------------------------
    def _in(self, node: exp.In) -> Expr:
        if node.args.get("query") is not None:
            from planner.binder_subquery import bind_subquery_expression
            return bind_subquery_expression(self, node)
        if node.args.get("unnest") is not None or node.args.get("field") is not None:
            raise UnsupportedFeatureError("IN with UNNEST is not supported")
        x = self._bind(node.this)
        reject_nested("IN", x)
        return F.in_list(x, [self._bind(v) for v in node.expressions])

    def _like(self, node, escape_node) -> Expr:
        func = "ilike" if isinstance(node, exp.ILike) else "like"
        if not isinstance(node, (exp.Like, exp.ILike)):
            raise UnsupportedFeatureError(f"ESCAPE on {type(node).__name__} is not supported")
        escape = self._bind(escape_node) if escape_node is not None else None
        call = F.like(func, self._bind(node.this), self._bind(node.expression), escape)
        return F.logic("not", [call]) if node.args.get("negate") else call

    def _is(self, node: exp.Is) -> Expr:
        rhs = node.expression
        if isinstance(rhs, exp.Null):
            x = self._bind(node.this)
            if x.type.is_nested:
                return nested_is_null(x, negate=False)
            return Call("is_null", [x], T.BOOLEAN)
        if isinstance(rhs, exp.Boolean):
            # x IS TRUE -> coalesce(x = TRUE, FALSE)
            x = F.logic("and", [self._bind(node.this)]).args[0]
            test = x if rhs.this else Call("not", [x], T.BOOLEAN)
            return Call("coalesce", [test, Literal(False, T.BOOLEAN)], T.BOOLEAN)
        raise UnsupportedFeatureError(f"IS {rhs.sql()} is not supported")

    def _case(self, node: exp.Case) -> Expr:
        subject = self._bind(node.this) if node.this is not None else None
        conds, results = [], []
        for branch in node.args.get("ifs") or []:
            cond = self._bind(branch.this)
            if subject is not None:
                cond = F.comparison("eq", subject, cond)
            conds.append(cond)
            results.append(self._bind(branch.args["true"]))
        default = node.args.get("default")
        default = self._bind(default) if default is not None else Literal(None, T.NULL)
        return F.case(conds, results, default)

    def _cast(self, node: exp.Cast) -> Expr:
        target = sql_type(node.to)
        inner = self._bind(node.this)
        if inner.type == target:
            if isinstance(inner, F.SQLIntegerLiteral):      # 1::INTEGER is typed
                return Literal(inner.value, inner.type)
            return inner
        if not _castable(inner.type, target):
            raise self.ctx.error(f"cannot cast {inner.type} to {target}", node)
        return F.cast(inner, target)

    def _aggregate(self, node, func: str) -> Expr:
        if self.aggregates is None:
            raise self.ctx.error(f"aggregate function {func}() is not allowed in {self.clause}", node)
        arg_node = node.this
        distinct = False
        if isinstance(arg_node, exp.Distinct):
            if len(arg_node.expressions) != 1:
                raise UnsupportedFeatureError(f"{func}(DISTINCT a, b) is not supported")
            distinct, arg_node = True, arg_node.expressions[0]
        if plain_star(arg_node) or (func == "count" and arg_node is None):
            if func != "count":
                raise self.ctx.error(f"{func}(*) is not defined", node)
            arg = None
        else:
            inner = ExpressionBinder(self.ctx, self.scope, "an aggregate's argument (nested aggregate)")
            arg = inner.bind(arg_node)
        try:
            agg = F.aggregate(func, arg, distinct)
        except TypeError as e:
            raise self.ctx.error(str(e), node) from None
        return self.aggregates.add(agg, output_name(node))

    def _anonymous(self, node: exp.Anonymous) -> Expr:
        name = node.name.lower()
        args = node.expressions
        if name in ("date_part", "datepart") and len(args) == 2 and isinstance(args[0], exp.Literal):
            return dates.extract(args[0].this, self._bind(args[1]))
        if name in ("strlen", "char_length", "character_length") and len(args) == 1:
            return strings.string_function("length", [self._bind(args[0])])
        if name in ("parquet_scan", "read_parquet"):
            raise self.ctx.error(f"{name}() is a table function; use it in FROM", node)
        raise self.ctx.error(f"unknown function {name}(...)", node)


def _may_be_nested(node) -> bool:
    """Nested-value binding may bind the argument and then decline (e.g.
    length of a string); it is tried only where binding twice is harmless."""
    if isinstance(node, (exp.Length, exp.Anonymous)):
        return node.find(exp.Subquery, exp.Exists, exp.Select, exp.Window) is None
    return True


def _castable(src: T.DataType, dst: T.DataType) -> bool:
    if src.id in ("NULL", "VARCHAR") or dst.id == "VARCHAR":
        return True
    if (src.is_numeric or src.id == "BOOLEAN") and (dst.is_numeric or dst.id == "BOOLEAN"):
        return True
    if src.is_temporal and dst.is_temporal:
        if dst.id in T.TIME_IDS:            # times of day: from times and timestamps
            return src.id != "DATE"
        return src.id not in T.TIME_IDS      # dates and timestamps among themselves
    return src.id == "BLOB" and dst.id == "BLOB"


def sql_type(node: exp.DataType) -> T.DataType:
    """The planner type of a sqlglot DataType (CAST targets)."""
    if node.args.get("nested"):
        raise UnsupportedFeatureError(f"nested type {node.sql(dialect='duckdb')} as a CAST "
                                      "target is not supported")
    name = node.this.name if hasattr(node.this, "name") else str(node.this)
    name = _SQL_TYPES.get(name, name)
    params = tuple(int(p.this.this) if isinstance(p.this, exp.Literal) else int(p.name)
                   for p in node.expressions or [])
    return T.from_sql_name(name, params)


def python_literal(value) -> Literal:
    """A typed Literal of a Python parameter value."""
    if value is None:
        return Literal(None, T.NULL)
    if isinstance(value, bool):
        return Literal(value, T.BOOLEAN)
    if isinstance(value, int):
        if not -2**127 <= value < 2**127:
            raise BinderError(f"integer parameter {value} is out of the range of HUGEINT")
        return Literal(value, T.integer_literal_type(value))
    if isinstance(value, float):
        return Literal(value, T.DOUBLE)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return Literal(float(value), T.DOUBLE)
        t = T.decimal_literal_type(format(value, "f"))
        if t.is_float:
            return Literal(float(value), T.DOUBLE)
        return Literal(scaled_int(value, t.scale), t)
    if isinstance(value, str):
        return Literal(value, T.VARCHAR)
    if isinstance(value, (bytes, bytearray)):
        return Literal(bytes(value), T.BLOB)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - EPOCH_DT
        return Literal((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds,
                       T.TIMESTAMP)
    if isinstance(value, _dt.date):
        return Literal((value - EPOCH).days, T.DATE)
    raise BinderError(f"unsupported parameter type {type(value).__name__} (supported: None, "
                      "bool, int, float, Decimal, str, bytes, datetime.date, datetime.datetime)")
