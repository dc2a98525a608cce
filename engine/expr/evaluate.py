"""The vectorized expression evaluator: a bound Expr over a Block -> Vector.

Dispatch is by ``Call.func`` (planner/expressions.py lists them).  Logic uses
SQL three-valued logic; CASE and COALESCE evaluate a branch only on the rows
that reach it, so a branch's errors cannot fire on rows it does not produce.
"""

from __future__ import annotations

import numpy as np

from engine.block import Block, Vector, int64_values
from engine.errors import UnsupportedFeatureError
from engine.expr.vectors import (as_nulls, clean_object, coded_dictionary, const_view,
                                 literal_vector, merge_nulls, null_bool, scatter)
from planner.expressions import (MIRRORED_COMPARISON, Call, ColumnRef, Expr, Literal, Parameter,
                                 column_indexes)
from planner.types import BOOLEAN, INTEGER_DECIMAL_PRECISION, DataType


def evaluate(expr: Expr, block: Block) -> Vector:
    """Vector of block.n rows with type expr.type."""
    if isinstance(expr, ColumnRef):
        return block.columns[expr.index]
    if isinstance(expr, Literal):
        return literal_vector(expr.value, expr.type, block.n)
    if isinstance(expr, Call):
        fn = _FUNCS.get(expr.func)
        if fn is None:
            raise UnsupportedFeatureError(f"function {expr.func}")
        return fn(expr, block)
    if isinstance(expr, Parameter):
        raise UnsupportedFeatureError("unbound parameter in expression")
    raise UnsupportedFeatureError(f"expression {type(expr).__name__}")


def evaluate_predicate(expr: Expr, block: Block) -> np.ndarray:
    """Bool mask of rows where expr is TRUE (NULL and FALSE both drop)."""
    v = evaluate(expr, block)
    return truth(v)


def truth(v: Vector) -> np.ndarray:
    data = v.data if v.data.dtype == np.bool_ else v.data.astype(np.bool_)
    if v.type.id == "NULL":
        return np.zeros(len(data), np.bool_)
    if v.nulls is None:
        return data
    return data & ~v.nulls.astype(np.bool_)


def _args(call: Call, block: Block) -> list[Vector]:
    return [evaluate(a, block) for a in call.args]


def _literal_value(e: Expr, what: str):
    if not isinstance(e, Literal):
        raise UnsupportedFeatureError(f"{what} must be a constant")
    return e.value


# ---------------------------------------------------------------- arithmetic
def _arith(call: Call, block: Block) -> Vector:
    from engine.expr import arith
    a, b = _args(call, block)
    return arith.arithmetic(call.func, [a, b], call.type)


def _neg(call: Call, block: Block) -> Vector:
    from engine.expr import arith
    return arith.negate(evaluate(call.args[0], block), call.type)


def _abs(call: Call, block: Block) -> Vector:
    from engine.expr import numfuncs
    return numfuncs.absolute(evaluate(call.args[0], block), call.type)


def _round(call: Call, block: Block) -> Vector:
    from engine.expr import numfuncs
    x = evaluate(call.args[0], block)
    digits = 0
    if len(call.args) > 1:
        digits = _literal_value(call.args[1], "round() digits")
        if digits is None:
            return literal_vector(None, call.type, block.n)
    return numfuncs.round_vector(x, int(digits), call.type)


def _floor_ceil(call: Call, block: Block) -> Vector:
    from engine.expr import numfuncs
    x = evaluate(call.args[0], block)
    if x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    return numfuncs.floor_ceil(x, call.func == "ceil", call.type)


def _compare(call: Call, block: Block) -> Vector:
    from engine.expr import arith
    left, right = call.args
    if isinstance(left, Literal) and not isinstance(right, Literal):
        left, right = right, left
        op = MIRRORED_COMPARISON[call.func]
    else:
        op = call.func
    a = _compare_operand(left, block)
    if isinstance(right, Literal) and right.value is not None and not isinstance(left, Literal):
        # a constant: one row, broadcast by the comparison (no n-row copy per block)
        b = literal_vector(right.value, right.type, 1)
        const = right.value if right.type.is_string and a.type.is_string else None
    else:
        b, const = _compare_operand(right, block), None
    return arith.compare(op, a, b, const)


def _compare_operand(expr, block: Block) -> Vector:
    """A comparison operand.  A cast that only widens an exact number (an
    integer or decimal into a decimal or integer, scale not shrinking) is
    skipped when its input is held in int64 and the cast could not fail on
    such values: arith.compare compares differing scales exactly, while the
    widened values might not fit int64 (Q11's DECIMAL(38,2) sums cast to
    DECIMAL(38,12))."""
    from engine.expr.cast import cast_vector
    if isinstance(expr, Call) and expr.func == "cast" and len(expr.args) == 1:
        src, dst = expr.args[0].type, expr.type
        shape_src, shape_dst = _digits(src), _digits(dst)
        if shape_src is not None and shape_dst is not None and shape_dst[1] >= shape_src[1]:
            inner = evaluate(expr.args[0], block)
            up = shape_dst[1] - shape_src[1]
            whole_src, whole_dst = shape_src[0] - shape_src[1], shape_dst[0] - shape_dst[1]
            if int64_values(inner) is not None and (whole_dst >= whole_src
                                                    or shape_dst[0] >= 19 + up):
                return inner
            return cast_vector(inner, dst)
    return evaluate(expr, block)


def _digits(t):
    """(digits, scale) every value of an exact numeric type fits in; None for
    other types.  (Unsigned integers are never held in int64, so their casts
    are never skipped.)"""
    if t.is_decimal:
        return t.precision, t.scale
    digits = INTEGER_DECIMAL_PRECISION.get(t.id) if t.is_integer else None
    return None if digits is None else (digits, 0)


# ---------------------------------------------------------------- logic
def _and_or(call: Call, block: Block) -> Vector:
    """Three-valued AND / OR.  Arguments without NULLs fold into one plain
    bool mask; once that mask decides every row (AND: all false, OR: all
    true) the remaining arguments are not evaluated."""
    n = block.n
    is_and = call.func == "and"
    plain = None                  # the fold of the arguments without NULLs
    nullable = []                 # (data, null mask) of the others
    for a in call.args:
        v = evaluate(a, block)
        if v.type.id == "NULL":
            nullable.append((np.zeros(n, np.bool_), np.ones(n, np.bool_)))
            continue
        d = v.data if v.data.dtype == np.bool_ else v.data.astype(np.bool_)
        if v.nulls is not None:
            nullable.append((d, null_bool(v.nulls, n)))
            continue
        plain = d.copy() if plain is None else (plain & d if is_and else plain | d)
        if not (plain.any() if is_and else not plain.all()):
            return Vector(BOOLEAN, plain, None)      # decided: FALSE (AND) / TRUE (OR)
    if not nullable:
        return Vector(BOOLEAN, plain if plain is not None else np.full(n, is_and), None)
    if is_and:
        all_true = np.ones(n, np.bool_) if plain is None else plain.copy()
        sure_false = np.zeros(n, np.bool_) if plain is None else ~plain
        for d, nb in nullable:
            all_true &= d & ~nb
            sure_false |= ~d & ~nb
        return Vector(BOOLEAN, all_true, as_nulls(~sure_false & ~all_true))
    sure_true = np.zeros(n, np.bool_) if plain is None else plain.copy()
    all_false = np.ones(n, np.bool_) if plain is None else ~plain
    for d, nb in nullable:
        sure_true |= d & ~nb
        all_false &= ~d & ~nb
    return Vector(BOOLEAN, sure_true, as_nulls(~sure_true & ~all_false))


def _not(call: Call, block: Block) -> Vector:
    v = evaluate(call.args[0], block)
    if v.type.id == "NULL":
        return literal_vector(None, BOOLEAN, block.n)
    return Vector(BOOLEAN, ~v.data.astype(np.bool_), v.nulls)


def _is_null(call: Call, block: Block) -> Vector:
    v = evaluate(call.args[0], block)
    nb = np.ones(block.n, np.bool_) if v.type.id == "NULL" else null_bool(v.nulls, block.n).copy()
    return Vector(BOOLEAN, nb if call.func == "is_null" else ~nb)


# ---------------------------------------------------------------- sets
def _in_list(call: Call, block: Block) -> Vector:
    from engine.expr import arith
    from engine.kernels import strings as sk
    x = evaluate(call.args[0], block)
    n = block.n
    items = call.args[1:]
    matched = np.zeros(n, np.bool_)
    list_null = np.zeros(n, np.bool_)
    consts = [e for e in items if isinstance(e, Literal)]
    others = [e for e in items if not isinstance(e, Literal)]
    values = [e.value for e in consts if e.value is not None]
    if len(values) < len(consts):
        list_null[:] = True
    if values and x.type.id != "NULL":
        if x.type.is_string:
            dictionary = coded_dictionary(x)
            va, ha = np.ascontiguousarray(x.data if dictionary is None else dictionary), \
                sk.as_heap(x.heap)
            hit = np.zeros(len(va), np.bool_)
            for v in dict.fromkeys(values):
                hit |= sk.equal_views_const(va, ha, *const_view(v))
            matched |= hit if dictionary is None else hit[x.codes]
        else:
            cvec = Vector(consts[0].type, np.array(values, dtype=consts[0].type.numpy_dtype))
            xa, ca = arith.align_for_compare(x, cvec)
            xd = clean_object(xa) if xa.data.dtype == object else xa.data
            cd = ca.data
            if xd.dtype == object or cd.dtype == object:
                s = set(cd.tolist())
                matched |= np.fromiter((v in s for v in xd), np.bool_, n)
            else:
                matched |= np.isin(xd, cd)
                if cd.dtype.kind == "f" and np.isnan(cd).any():
                    matched |= np.isnan(xd)       # DuckDB: NaN = NaN
    for e in others:
        r = arith.compare("eq", x, evaluate(e, block))
        rn = null_bool(r.nulls, n)
        matched |= r.data & ~rn
        list_null |= rn
    x_null = null_bool(x.nulls, n) if x.type.id != "NULL" else np.ones(n, np.bool_)
    nulls = x_null | (~matched & list_null)
    return Vector(BOOLEAN, matched & ~nulls, as_nulls(nulls))


def _like(call: Call, block: Block) -> Vector:
    from engine.expr import strfuncs
    x = evaluate(call.args[0], block)
    pat_e = call.args[1]
    const = pat_e.value if isinstance(pat_e, Literal) and pat_e.value is not None else None
    esc = None
    if len(call.args) > 2:
        esc = _literal_value(call.args[2], "LIKE escape")
        if esc is None:
            return literal_vector(None, BOOLEAN, block.n)
    if x.type.id == "NULL" or pat_e.type.id == "NULL":
        return literal_vector(None, BOOLEAN, block.n)
    dictionary = coded_dictionary(x) if const is not None else None
    if dictionary is not None:           # match each dictionary entry once, gather by code
        d = len(dictionary)
        hit = strfuncs.like(Vector(x.type, dictionary, None, x.heap),
                            literal_vector(const, pat_e.type, d), const, esc,
                            call.func == "ilike")
        if hit.nulls is None:
            return Vector(BOOLEAN, np.asarray(hit.data, np.bool_)[x.codes], None)
    return strfuncs.like(x, evaluate(pat_e, block), const, esc, call.func == "ilike")


# ---------------------------------------------------------------- conditionals
def _sub_block(block: Block, rows: np.ndarray, exprs) -> Block:
    """Rows of block for evaluating exprs: only referenced columns are
    gathered (the others are left as they are and never read)."""
    used = set()
    for e in exprs:
        if e is not None:
            used |= column_indexes(e)
    cols = [c.take(rows) if i in used else c for i, c in enumerate(block.columns)]
    return Block(cols, len(rows) if rows.dtype != np.bool_ else int(rows.sum()))


def _case(call: Call, block: Block) -> Vector:
    """case(w1, t1, ..., else): first TRUE WHEN wins; branches run only on the
    rows that reach them."""
    n = block.n
    args = call.args
    pairs = [(args[i], args[i + 1]) for i in range(0, len(args) - 1, 2)]
    else_e = args[-1] if len(args) % 2 == 1 else None
    remaining = np.arange(n)
    parts = []
    for when_e, then_e in pairs:
        if len(remaining) == 0:
            break
        sub = block if len(remaining) == n else _sub_block(block, remaining, [when_e, then_e])
        hit = evaluate_predicate(when_e, sub)
        if hit.any():
            rows = remaining[hit]
            sub_hit = sub if hit.all() else _sub_block(block, rows, [then_e])
            parts.append((rows, _coerce(evaluate(then_e, sub_hit), call.type)))
            remaining = remaining[~hit]
    if len(remaining) and else_e is not None:
        sub = block if len(remaining) == n else _sub_block(block, remaining, [else_e])
        parts.append((remaining, _coerce(evaluate(else_e, sub), call.type)))
    if len(parts) == 1 and len(parts[0][0]) == n:
        return parts[0][1]
    return scatter(call.type, n, parts)


def _coalesce(call: Call, block: Block) -> Vector:
    n = block.n
    remaining = np.arange(n)
    parts = []
    for e in call.args:
        if len(remaining) == 0:
            break
        sub = block if len(remaining) == n else _sub_block(block, remaining, [e])
        v = _coerce(evaluate(e, sub), call.type)
        if v.nulls is None:
            parts.append((remaining, v))
            remaining = remaining[:0]
            break
        ok = ~v.nulls.astype(np.bool_)
        if ok.any():
            parts.append((remaining[ok], v.take(ok)))
            remaining = remaining[~ok]
    if len(parts) == 1 and len(parts[0][0]) == n:
        return parts[0][1]
    return scatter(call.type, n, parts)


def _coerce(v: Vector, t: DataType) -> Vector:
    from engine.expr.cast import cast_vector
    if v.type == t:
        return v
    if v.type.id == "NULL":
        return literal_vector(None, t, len(v))
    return cast_vector(v, t)


# ---------------------------------------------------------------- other
def _cast(call: Call, block: Block) -> Vector:
    from engine.expr.cast import cast_vector
    return cast_vector(evaluate(call.args[0], block), call.type)


def _extract(call: Call, block: Block) -> Vector:
    from engine.expr import datefuncs
    part = _literal_value(call.args[0], "extract part")
    x = evaluate(call.args[1], block)
    return datefuncs.extract(str(part), x, call.type)


def _date_add(call: Call, block: Block) -> Vector:
    from engine.expr import datefuncs
    x = evaluate(call.args[0], block)
    iv = _literal_value(call.args[1], "interval")
    if iv is None or x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    return datefuncs.add_interval(x, iv, 1 if call.func == "date_add" else -1, call.type)


def _date_trunc(call: Call, block: Block) -> Vector:
    from engine.expr import datefuncs
    x = evaluate(call.args[1], block)
    if x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    return datefuncs.date_trunc(call.args[0].value, x, call.type)


def _date_diff(call: Call, block: Block) -> Vector:
    from engine.expr import datefuncs
    a = evaluate(call.args[1], block)
    b = evaluate(call.args[2], block)
    if a.type.id == "NULL" or b.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    return datefuncs.date_diff(call.args[0].value, a, b, call.type)


def _concat(call: Call, block: Block) -> Vector:
    from engine.expr import strfuncs
    args = []
    for a in _args(call, block):
        if not a.type.is_string:
            a = _coerce(a, call.type) if a.type.id != "NULL" else literal_vector(None, call.type, block.n)
        args.append(a)
    return strfuncs.concat(args, call.type)


def _substring(call: Call, block: Block) -> Vector:
    from engine.expr import strfuncs
    args = _args(call, block)
    return strfuncs.substring(args[0], args[1], args[2] if len(args) > 2 else None, call.type)


def _case_fn(call: Call, block: Block) -> Vector:
    from engine.expr import strfuncs
    return strfuncs.change_case(evaluate(call.args[0], block), call.func == "upper")


def _length(call: Call, block: Block) -> Vector:
    from engine.expr import strfuncs
    return strfuncs.length(evaluate(call.args[0], block), call.type)


def _trim(call: Call, block: Block) -> Vector:
    from engine.expr import strfuncs
    x = evaluate(call.args[0], block)
    if x.type.id == "NULL":
        return literal_vector(None, call.type, block.n)
    return strfuncs.trim(x, call.func != "rtrim", call.func != "ltrim", call.type)


_FUNCS = {
    "add": _arith, "sub": _arith, "mul": _arith, "div": _arith,
    "intdiv": _arith, "mod": _arith, "neg": _neg,
    "eq": _compare, "ne": _compare, "lt": _compare, "le": _compare,
    "gt": _compare, "ge": _compare,
    "and": _and_or, "or": _and_or, "not": _not,
    "is_null": _is_null, "is_not_null": _is_null,
    "in_list": _in_list, "like": _like, "ilike": _like,
    "case": _case, "coalesce": _coalesce, "cast": _cast,
    "extract": _extract, "date_add": _date_add, "date_sub": _date_add,
    "date_trunc": _date_trunc, "date_diff": _date_diff,
    "concat": _concat, "substring": _substring, "upper": _case_fn, "lower": _case_fn,
    "length": _length, "trim": _trim, "ltrim": _trim, "rtrim": _trim,
    "abs": _abs, "round": _round, "floor": _floor_ceil, "ceil": _floor_ceil,
}

__all__ = ["evaluate", "evaluate_predicate", "literal_vector", "truth", "merge_nulls"]

from engine.expr.nested import FUNCS as _NESTED_FUNCS  # noqa: E402
_FUNCS.update(_NESTED_FUNCS)
