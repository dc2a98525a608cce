"""EXPLAIN text: the plan tree with column names, readable expressions and
estimated row counts, each with the statistic it came from
(planner/cardinality.py): ``(~340,000 rows, sample)``.  A semi or anti
join that builds its hash table on the outer rows (the smaller estimated
input, engine right_semi/right_anti) says ``build=left``.  EXPLAIN ANALYZE
adds what each node did (``OperatorRun``s from engine/analyze.py), EXPLAIN
(FORMAT JSON) is the same tree as data (``explain_tree``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.expressions import AggregateCall, Call, ColumnRef, Expr, Interval, Literal
from planner.logical import (Aggregate, DependentJoin, Filter, Join, Limit, Node, OneRow,
                             Project, Scan, Sort, Union, Window, WindowFunction)

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "intdiv": "//", "mod": "%",
          "eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "and": "AND", "or": "OR", "like": "LIKE", "ilike": "ILIKE"}


def render(expr: Expr, names: list[str] | None = None) -> str:
    """SQL-like text of a bound expression; ColumnRefs shown by name."""
    if isinstance(expr, ColumnRef):
        if names is not None and 0 <= expr.index < len(names):
            return names[expr.index]
        return expr.name or f"#{expr.index}"
    if isinstance(expr, Literal):
        return _literal(expr)
    if isinstance(expr, Call):
        args = [render(a, names) for a in expr.args]
        f = expr.func
        if f in _INFIX and len(args) >= 2 and not (f in ("like", "ilike") and len(args) == 3):
            return "(" + f" {_INFIX[f]} ".join(args) + ")"
        if f == "not":
            return f"(NOT {args[0]})"
        if f == "neg":
            return f"(-{args[0]})"
        if f == "is_null":
            return f"({args[0]} IS NULL)"
        if f == "is_not_null":
            return f"({args[0]} IS NOT NULL)"
        if f == "cast":
            return f"CAST({args[0]} AS {expr.type})"
        if f == "in_list":
            return f"({args[0]} IN ({', '.join(args[1:])}))"
        return f"{f}({', '.join(args)})"
    return repr(expr)


def _literal(lit: Literal) -> str:
    v, t = lit.value, lit.type
    if v is None:
        return "NULL"
    if t.id == "DATE":
        from planner.folding import format_date
        return f"DATE '{format_date(v)}'"
    if t.id in ("TIMESTAMP", "TIMESTAMPTZ"):
        from planner.folding import format_timestamp
        return f"TIMESTAMP '{format_timestamp(v)}'"
    if t.is_decimal:
        sign, digits = ("-" if v < 0 else ""), str(abs(v)).rjust(t.scale + 1, "0")
        return sign + (digits[:-t.scale] + "." + digits[-t.scale:] if t.scale else digits)
    if isinstance(v, Interval):
        parts = [f"{n} {u}" for n, u in ((v.months, "months"), (v.days, "days"),
                                           (v.micros, "us")) if n]
        return f"INTERVAL '{' '.join(parts) or '0 days'}'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def aggregate_text(a: AggregateCall, names) -> str:
    if a.arg is None:
        return "count_star()"
    return f"{a.func}({'DISTINCT ' if a.distinct else ''}{render(a.arg, names)})"


def _window_function(f: WindowFunction, names) -> str:
    args = ", ".join(render(a, names) for a in f.args) if f.func != "count_star" else "*"
    func = "count" if f.func == "count_star" else f.func
    over = []
    if f.partition:
        over.append("PARTITION BY " + ", ".join(render(p, names) for p in f.partition))
    if f.order:
        over.append("ORDER BY " + ", ".join(render(k.expr, names) + ("" if k.ascending else " DESC")
                                            for k in f.order))
    if f.frame is not None:
        def bound(b):
            kind, off = b
            if kind == "current":
                return "CURRENT ROW"
            return kind.replace("_", " ").upper() if off is None else f"{off} {kind.upper()}"
        over.append(f"{f.frame.mode.upper()} BETWEEN {bound(f.frame.start)} AND {bound(f.frame.end)}")
    return f"{func}({args}) OVER ({' '.join(over)})"


@dataclass(frozen=True)
class OperatorRun:
    """What one plan node did in an analyzed run (engine/analyze.py):
    rows out (None: it did not run), seconds in its own pieces summed over
    threads, what a scan skipped ({source: {unit: count}}), a note on how
    the rows were counted (fused or shared nodes)."""
    rows: int | None
    time_s: float
    skipped: dict = field(default_factory=dict)
    note: str = ""


def q_error(estimated: float, actual: int) -> float:
    """max(e/a, a/e), each side at least one row (an empty result and an
    estimate of one row agree)."""
    e, a = max(float(estimated), 1.0), max(float(actual), 1.0)
    return max(e / a, a / e)


def explain(node: Node, runs: dict | None = None, io: dict | None = None,
            total_s: float | None = None) -> str:
    """The plan as an indented tree, one operator per line; with ``runs``
    (id(node) -> OperatorRun: EXPLAIN ANALYZE) each line adds the actual
    rows, the q-error and the time, scans what they skipped, and the text
    ends with the statement's io counters and time."""
    lines: list[str] = []
    _explain(node, 0, lines, runs)
    if io is not None:
        lines.append(f"io: requests {io['requests']:,}, bytes fetched {io['bytes_fetched']:,}, "
                     f"bytes from cache {io['bytes_from_cache']:,}")
    if total_s is not None:
        lines.append(f"total: {total_s:.3f} s")
    return "\n".join(lines)


def explain_tree(node: Node, runs: dict | None = None) -> dict:
    """EXPLAIN (FORMAT JSON): {"operator", "estimated_rows",
    "estimate_source", "children"}, with ``runs`` also "actual_rows",
    "q_error", "time_s", and "skipped" / "note" where there are any."""
    from planner.cardinality import estimate_with_source
    est = estimate_with_source(node)
    out = {"operator": operator_text(node), "estimated_rows": int(est.value),
           "estimate_source": est.source}
    run = runs.get(id(node)) if runs is not None else None
    if runs is not None:
        rows = run.rows if run is not None else None
        out["actual_rows"] = rows
        out["q_error"] = None if rows is None else round(q_error(int(est.value), rows), 4)
        out["time_s"] = round(run.time_s, 6) if run is not None else 0.0
        if run is not None and run.skipped:
            out["skipped"] = run.skipped
        if run is not None and run.note:
            out["note"] = run.note
    out["children"] = [explain_tree(c, runs) for c in node.children]
    return out


def _skipped_text(skipped: dict) -> str:
    parts = []
    for source, units in skipped.items():
        counts = ", ".join(f"{n:,} {unit.replace('_', ' ')}" for unit, n in units.items()
                           if n and unit != "rows")
        parts.append(f"{source.replace('_', ' ')} {units.get('rows', 0):,} rows"
                     + (f" ({counts})" if counts else ""))
    return "skipped: " + "; ".join(parts)


def _explain(node: Node, depth: int, lines: list[str], runs: dict | None) -> None:
    from planner.cardinality import estimate_with_source
    pad = "  " * depth
    est = estimate_with_source(node)
    line = f"{pad}{operator_text(node)}  (~{int(est.value):,} rows, {est.source}"
    run = runs.get(id(node)) if runs is not None else None
    if runs is not None and (run is None or run.rows is None):
        line += "; not run"
    elif run is not None:
        line += (f"; actual {run.rows:,} rows, q-error {q_error(int(est.value), run.rows):.2f}, "
                 f"{run.time_s:.3f} s" + (f", {run.note}" if run.note else ""))
    lines.append(line + ")")
    if run is not None and run.skipped:
        lines.append(f"{pad}  {_skipped_text(run.skipped)}")
    for c in node.children:
        _explain(c, depth + 1, lines, runs)


def operator_text(node: Node) -> str:
    """One plan node as EXPLAIN names it (without its estimate)."""
    from planner.cardinality import builds_on_left
    child_names = [f.name for f in node.children[0].schema] if node.children else []
    if isinstance(node, Scan):
        names = [f.name for f in node.schema]
        text = f"Scan {node.alias or ''} [{', '.join(names)}] files={len(node.files)}"
        if node.filters:
            text += " filters: " + " AND ".join(render(f, names) for f in node.filters)
    elif isinstance(node, Filter):
        text = "Filter " + render(node.predicate, child_names)
    elif isinstance(node, Project):
        text = "Project " + ", ".join(
            render(e, child_names) + ("" if isinstance(e, ColumnRef) and
                                      child_names[e.index] == n else f" AS {n}")
            for e, n in zip(node.exprs, node.names))
    elif isinstance(node, Aggregate):
        groups = ", ".join(render(g, child_names) for g in node.groups)
        aggs = ", ".join(aggregate_text(a, child_names) for a in node.aggregates)
        text = f"Aggregate groups=[{groups}] aggregates=[{aggs}]"
    elif isinstance(node, Join):
        lnames = [f.name for f in node.left.schema]
        rnames = [f.name for f in node.right.schema]
        keys = " AND ".join(f"{render(lk, lnames)} = {render(rk, rnames)}"
                            for lk, rk in zip(node.left_keys, node.right_keys))
        text = f"Join {node.kind} {keys}"
        if node.residual is not None:
            text += " residual: " + render(node.residual, lnames + rnames)
        if builds_on_left(node):
            text += " build=left"
    elif isinstance(node, DependentJoin):         # bound plans only (before decorrelation)
        text = f"DependentJoin {node.kind} corr={node.corr_id}"
        if node.probe is not None:
            text += " probe: " + render(node.probe, [f.name for f in node.left.schema])
    elif isinstance(node, Sort):
        text = "Sort " + ", ".join(
            render(k.expr, child_names) + (" ASC" if k.ascending else " DESC")
            + (" NULLS FIRST" if k.nulls_first else "") for k in node.keys)
    elif isinstance(node, Limit):
        text = f"Limit {node.limit}" + (f" OFFSET {node.offset}" if node.offset else "")
    elif isinstance(node, OneRow):
        text = "OneRow"
    elif isinstance(node, Union):
        text = f"Union ALL [{', '.join(node.names)}]"
    elif isinstance(node, Window):
        text = "Window " + ", ".join(_window_function(f, child_names) + f" AS {n}"
                                     for f, n in zip(node.functions, node.names))
    else:
        text = type(node).__name__
    return text
