"""Binding of window functions: ``f(...) OVER (PARTITION BY ... ORDER BY ...
[ROWS|RANGE frame])`` in a SELECT list.

The expression binder hands every exp.Window to ``bind_window``, which binds
the arguments, partition and order expressions against the SELECT's scope
(aggregates allowed inside: ``rank() OVER (ORDER BY count(*))``), builds a
logical.WindowFunction and registers it in the SELECT's WindowCollector; the
expression gets a WindowRef placeholder.  After aggregation is planned,
binder_select asks the collector to rewrite the functions onto the Aggregate's
output and to put a logical.Window node on top; the placeholders become
references to the Window's extra columns.

Frames follow DuckDB: with ORDER BY the default is RANGE BETWEEN UNBOUNDED
PRECEDING AND CURRENT ROW; without, the whole partition.
"""

from __future__ import annotations

from sqlglot import exp

from planner import functions as F
from planner import types as T
from planner.binder_star import plain_star
from planner.errors import UnsupportedFeatureError
from planner.expressions import Call, Expr, Interval, Literal
from planner.logical import Node, SortKey, Window, WindowFrame, WindowFunction

_RANKING = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank"}
_VALUE = {exp.FirstValue: "first_value", exp.LastValue: "last_value"}
_OFFSET = {exp.Lag: "lag", exp.Lead: "lead"}
_AGGREGATE = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_WHOLE = WindowFrame("rows", ("unbounded_preceding", None), ("unbounded_following", None))
_RUNNING = WindowFrame("range", ("unbounded_preceding", None), ("current", None))


class WindowRef(Expr):
    """A window function inside a SELECT expression, until the Window node
    exists.  One object per distinct function (the collector dedupes), so the
    binder's structural keys (by identity) match equal calls."""

    def __init__(self, slot: int, type_: T.DataType):
        self.slot = slot
        self.type = type_

    def __repr__(self) -> str:
        return f"window[{self.slot}]"


class WindowCollector:
    """The distinct window functions of one SELECT block."""

    def __init__(self):
        self.functions: list[WindowFunction] = []
        self.names: list[str] = []
        self.refs: list[WindowRef] = []
        self._slots: dict[tuple, int] = {}

    def add(self, func: WindowFunction, name: str) -> WindowRef:
        from planner.binder_expressions import expr_key
        key = (func.func, tuple(expr_key(a) for a in func.args),
               tuple(expr_key(p) for p in func.partition),
               tuple((expr_key(k.expr), k.ascending, k.nulls_first) for k in func.order),
               repr(func.frame))
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self.functions)
            self.functions.append(func)
            self.names.append(name)
            self.refs.append(WindowRef(slot, func.type))
        return self.refs[slot]

    def rewrite(self, fn) -> None:
        """Apply fn to every expression of every function (onto the
        Aggregate's output when the SELECT aggregates)."""
        for f in self.functions:
            f.args = [fn(a) for a in f.args]
            f.partition = [fn(p) for p in f.partition]
            f.order = [SortKey(fn(k.expr), k.ascending, k.nulls_first) for k in f.order]

    def attach(self, node: Node, items) -> Node:
        """A Window node over ``node``; items' placeholders become column refs."""
        if not self.functions:
            return node
        base = len(node.schema)
        window = Window(node, list(self.functions), [f"__window{i}" for i in range(len(self.names))])
        for it in items:
            it.expr = replace_refs(it.expr, base)
        return window


def replace_refs(e: Expr, base: int) -> Expr:
    from planner.expressions import ColumnRef
    if isinstance(e, WindowRef):
        return ColumnRef(base + e.slot, e.type, f"__window{e.slot}")
    if isinstance(e, Call):
        return Call(e.func, [replace_refs(a, base) for a in e.args], e.type)
    return e


def bind_window(eb, node: exp.Window) -> Expr:
    """The WindowRef of one ``f(...) OVER (...)`` (eb: the ExpressionBinder)."""
    from planner.binder_expressions import ExpressionBinder, output_name
    windows = getattr(eb, "windows", None)
    if windows is None:
        raise eb.ctx.error(f"window functions are not allowed in {eb.clause}", node)
    if node.args.get("alias") or (isinstance(node.args.get("partition_by"), str)):
        raise UnsupportedFeatureError("named windows are not supported")
    inner = ExpressionBinder(eb.ctx, eb.scope, "a window function", eb.aggregates)
    call = node.this
    if isinstance(call, exp.RespectNulls):
        call = call.this
    if isinstance(call, (exp.IgnoreNulls, exp.Filter)):
        what = "IGNORE NULLS" if isinstance(call, exp.IgnoreNulls) else "FILTER"
        raise UnsupportedFeatureError(f"{what} in window functions is not supported")
    partition = [inner.bind(p) for p in node.args.get("partition_by") or []]
    order = []
    order_node = node.args.get("order")
    for o in (order_node.expressions if order_node is not None else []):
        order.append(SortKey(inner.bind(o.this), not o.args.get("desc"),
                             bool(o.args.get("nulls_first"))))
    cls = type(call)
    spec = node.args.get("spec")
    if cls in _RANKING:
        func = WindowFunction(_RANKING[cls], [], partition, order, None, T.BIGINT)
    elif cls in _OFFSET:
        func = _offset_function(eb, inner, _OFFSET[cls], call, partition, order)
    elif cls in _VALUE or cls in _AGGREGATE:
        name = _VALUE.get(cls) or _AGGREGATE[cls]
        arg_node = call.this
        if isinstance(arg_node, exp.Distinct):
            raise UnsupportedFeatureError(f"{name}(DISTINCT ...) OVER (...) is not supported")
        if name == "count" and (arg_node is None or plain_star(arg_node)):
            args, name, out = [], "count_star", T.BIGINT
        else:
            if arg_node is None or isinstance(arg_node, exp.Star):
                raise eb.ctx.error(f"{name}(*) is not defined", call)
            arg = inner.bind(arg_node)
            if name in _VALUE.values():
                out = arg.type
            else:
                try:
                    out = F.aggregate(name, arg, False).type
                except TypeError as e:
                    raise eb.ctx.error(str(e), call) from None
            args = [arg]
        frame = _frame(eb, spec, order) if spec is not None else (_RUNNING if order else _WHOLE)
        func = WindowFunction(name, args, partition, order, frame, out)
    else:
        text = call.sql(dialect="duckdb").split("(")[0]
        raise UnsupportedFeatureError(f"window function {text}() is not supported")
    return windows.add(func, output_name(node))


def _offset_function(eb, inner, name, call, partition, order) -> WindowFunction:
    x = inner.bind(call.this)
    offset_node, default_node = call.args.get("offset"), call.args.get("default")
    offset = inner.bind(offset_node) if offset_node is not None else Literal(1, T.BIGINT)
    if not isinstance(offset, Literal) or not (offset.type.is_integer or offset.value is None):
        raise UnsupportedFeatureError(f"{name}() with a non-constant offset is not supported")
    if offset.value is not None and offset.value < 0:
        raise eb.ctx.error(f"{name}() offset must not be negative", call)
    out = x.type if x.type.id != "NULL" else T.INTEGER
    default = inner.bind(default_node) if default_node is not None else Literal(None, out)
    try:
        default = F.cast(default, out) if default.type.id != "NULL" else Literal(None, out)
    except TypeError as e:
        raise eb.ctx.error(str(e), call) from None
    return WindowFunction(name, [F.cast(x, out), Literal(offset.value, T.BIGINT), default],
                          partition, order, None, out)


def _frame(eb, spec, order) -> WindowFrame:
    mode = (spec.args.get("kind") or "").lower()
    if mode not in ("rows", "range"):
        raise UnsupportedFeatureError(f"{mode.upper() or 'this'} window frame is not supported")
    if spec.args.get("exclude"):
        raise UnsupportedFeatureError("EXCLUDE in window frames is not supported")
    start = _bound(eb, spec.args.get("start"), spec.args.get("start_side"), mode, order, spec)
    end = _bound(eb, spec.args.get("end"), spec.args.get("end_side"), mode, order, spec) \
        if spec.args.get("end") is not None else ("current", None)
    if start[0] == "unbounded_following" or end[0] == "unbounded_preceding":
        raise eb.ctx.error("window frame bound UNBOUNDED is on the wrong side", spec)
    return WindowFrame(mode, start, end)


def _bound(eb, value, side, mode: str, order, spec) -> tuple:
    side = (side or "").lower()
    if isinstance(value, str):
        if value.upper() == "CURRENT ROW":
            return ("current", None)
        if value.upper() == "UNBOUNDED":
            return ("unbounded_preceding" if side == "preceding" else "unbounded_following", None)
        raise UnsupportedFeatureError(f"window frame bound {value} is not supported")
    if side not in ("preceding", "following"):
        raise UnsupportedFeatureError("window frame bound without PRECEDING/FOLLOWING")
    from planner.binder_expressions import ExpressionBinder
    from planner.binder_scope import Scope
    bound = ExpressionBinder(eb.ctx, Scope(), "a window frame").bind(value)
    if not isinstance(bound, Literal) or bound.value is None:
        raise UnsupportedFeatureError("window frame offsets must be constants")
    if mode == "rows":
        if not bound.type.is_integer or bound.value < 0:
            raise eb.ctx.error("ROWS frame offsets must be non-negative integers", spec)
        return (side, int(bound.value))
    return (side, _range_offset(eb, bound, order, spec))


def _range_offset(eb, bound: Literal, order, spec):
    """A RANGE offset in the storage units of the single ORDER BY key."""
    if len(order) != 1:
        raise eb.ctx.error("RANGE with an offset needs exactly one ORDER BY column", spec)
    key = order[0].expr.type
    v = bound.value
    if isinstance(v, Interval):
        if key.id != "DATE" or v.months or v.micros:
            raise UnsupportedFeatureError("RANGE frames with this INTERVAL are not supported")
        return v.days
    if not bound.type.is_numeric or v < 0:
        raise eb.ctx.error("RANGE frame offsets must be non-negative numbers", spec)
    if key.is_decimal:
        if bound.type.is_decimal:
            return int(v) * 10 ** (key.scale - bound.type.scale) if key.scale >= bound.type.scale \
                else float(v) / 10 ** bound.type.scale * 10 ** key.scale
        if bound.type.is_integer:
            return int(v) * 10 ** key.scale
        return float(v) * 10 ** key.scale
    if key.is_integer or key.id == "DATE":
        if bound.type.is_decimal:
            return float(v) / 10 ** bound.type.scale
        return v
    if key.is_float:
        return float(v) / 10 ** bound.type.scale if bound.type.is_decimal else float(v)
    raise UnsupportedFeatureError(f"RANGE frames over {key} are not supported")
