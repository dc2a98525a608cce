"""The filter-term model: what a scan's pushed-down filter says about one
column, shared by pruning (engine/filtering/pruning.py), the page-index row
spans (page_spans.py) and the conjunction kernels (conjunction.py).

A pushed filter becomes a ``Term`` tree: leaves ``column op literal`` (op one
of eq lt le gt ge in is_null is_not_null), ``AllOf`` (AND) and ``AnyOf``
(OR).  Terms speak of "may some row make this TRUE"; NULL and FALSE both
drop a row, so AND and OR compose monotonically and an OR prunes only when
every branch prunes.  Anything not understood (NOT, LIKE, functions, casts
that are not exact widenings) has no term: pruning never guesses.

A comparison is read with its constant on the right (``5 < x`` is ``x > 5``:
``comparison_operands``), by the terms and by the conjunction alike.  A term
used as a memo key is interned (``term_key``)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from planner.expressions import MIRRORED_COMPARISON, Call, ColumnRef, Expr, Literal

UNKNOWN = object()          # a literal has no exact image in the column's storage
NO_MATCH = object()         # no stored value can equal the literal
# the comparisons a term is made of (<> rules out no range of values)
_TERM_COMPARISONS = frozenset({"eq", "lt", "le", "gt", "ge"})


def comparison_operands(e: Expr):
    """(a, op, b) of a comparison ``a op b`` (eq ne lt le gt ge), turned
    round when only ``a`` is a constant so that the constant is ``b``
    (``5 < x`` -> (x, "gt", 5)); None for any other expression."""
    if not (isinstance(e, Call) and e.func in MIRRORED_COMPARISON and len(e.args) == 2):
        return None
    a, b = e.args
    op = e.func
    if isinstance(a, Literal) and not isinstance(b, Literal):
        a, b, op = b, a, MIRRORED_COMPARISON[op]
    return a, op, b


# ---- terms ---------------------------------------------------------------------

@dataclass(frozen=True)
class Widening:
    """CAST(x AS dst) where every value of src maps exactly and monotonically
    (non-decreasing) to dst: integer widening, integer -> DECIMAL,
    DECIMAL -> DECIMAL of larger scale, integer -> DOUBLE, FLOAT -> DOUBLE,
    DATE -> TIMESTAMP."""
    kind: str           # int, scale, float, date_ts
    factor: int = 1

    def forward(self, v):
        if self.kind in ("int", "scale", "date_ts"):
            return int(v) * self.factor
        return float(v)

    def preimage(self, v):
        """The source-storage value mapping to ``v``: value, NO_MATCH or UNKNOWN."""
        if self.kind == "float":
            return UNKNOWN
        if not isinstance(v, int) or isinstance(v, bool):
            return UNKNOWN
        if v % self.factor:
            return NO_MATCH
        return v // self.factor


def widening(src, dst) -> Widening | None:
    if src.is_integer and dst.is_integer:
        if src.id == "HUGEINT":
            return Widening("int") if dst.id == "HUGEINT" else None
        if dst.id == "HUGEINT":
            return Widening("int")
        a, b = np.iinfo(src.numpy_dtype), np.iinfo(dst.numpy_dtype)
        return Widening("int") if b.min <= a.min and b.max >= a.max else None
    if src.is_integer and dst.is_decimal:
        return Widening("scale", 10 ** dst.scale)
    if src.is_decimal and dst.is_decimal and dst.scale >= src.scale:
        return Widening("scale", 10 ** (dst.scale - src.scale))
    if src.is_integer and dst.id == "DOUBLE" and src.id != "HUGEINT":
        return Widening("float")
    if src.id == "FLOAT" and dst.id == "DOUBLE":
        return Widening("float")
    if src.id == "DATE" and dst.id == "TIMESTAMP":
        return Widening("date_ts", 86_400_000_000)
    return None


@dataclass(frozen=True)
class Leaf:
    column: int                 # index in the Scan's schema
    op: str                     # eq lt le gt ge in is_null is_not_null never
    values: tuple = ()          # literal values in the expression's storage form
    casts: tuple = ()           # Widening steps from column storage to the expression's
    float_column: bool = False  # the column holds floats (NaN may hide from min/max)


@dataclass(frozen=True)
class AllOf:
    terms: tuple


@dataclass(frozen=True)
class AnyOf:
    terms: tuple


NEVER = Leaf(-1, "never")


def _column_of(expr):
    """(ColumnRef, casts) when expr is a column under exact widening casts."""
    casts = []
    while isinstance(expr, Call) and expr.func == "cast" and len(expr.args) == 1:
        w = widening(expr.args[0].type, expr.type)
        if w is None:
            return None
        casts.append(w)
        expr = expr.args[0]
    if isinstance(expr, ColumnRef):
        return expr, tuple(reversed(casts))
    return None


def _literal_value(lit: Literal, typ):
    """A literal in a form comparable with statistics, or UNKNOWN."""
    v = lit.value
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return UNKNOWN
        if typ.id == "FLOAT" and float(np.float32(v)) != v:
            return UNKNOWN
        return v
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return UNKNOWN


def _leaf(col_expr, op, literals) -> Leaf | None:
    found = _column_of(col_expr)
    if found is None:
        return None
    ref, casts = found
    values = tuple(_literal_value(x, col_expr.type) for x in literals)
    if any(v is UNKNOWN for v in values):
        return None
    return Leaf(ref.index, op, values, casts, ref.type.is_float)


def term_of(expr):
    """The Term of one boolean expression, or None when it cannot prune."""
    if isinstance(expr, Literal):
        return NEVER if expr.value is None or expr.value is False else None
    if not isinstance(expr, Call):
        return None
    f, args = expr.func, expr.args
    if f == "and":
        kids = tuple(t for t in map(term_of, args) if t is not None)
        return AllOf(kids) if kids else None
    if f == "or":
        kids = tuple(map(term_of, args))
        return None if any(t is None for t in kids) else AnyOf(kids)
    if f in _TERM_COMPARISONS and len(args) == 2:
        a, f, b = comparison_operands(expr)
        if isinstance(b, Literal):
            if b.value is None:
                return NEVER                     # comparison with NULL is never true
            return _leaf(a, f, [b])
        return None
    if f == "in_list" and len(args) >= 2 and all(isinstance(x, Literal) for x in args[1:]):
        return _leaf(args[0], "in", args[1:])
    if f in ("is_null", "is_not_null") and len(args) == 1:
        return _leaf(args[0], f, [])
    return None


def filter_terms(filters) -> AllOf | None:
    """The Term of a Scan's pushed conjuncts, or None when none can prune."""
    kids = tuple(t for t in map(term_of, filters) if t is not None)
    return AllOf(kids) if kids else None


def bloom_columns(term) -> set:
    """Columns of the term's eq / in leaves (the ones a bloom filter can reject)."""
    if isinstance(term, Leaf):
        return {term.column} if term.column >= 0 and term.op in ("eq", "in") else set()
    return set().union(*[bloom_columns(t) for t in term.terms]) if term.terms else set()


def term_columns(term) -> set:
    if isinstance(term, Leaf):
        return {term.column} if term.column >= 0 else set()
    return set().union(*[term_columns(t) for t in term.terms]) if term.terms else set()


# ---- terms as memo keys --------------------------------------------------------

class _TermKey:
    """A filter term as a memo key: its hash computed once, and one object
    per distinct term (interned), so a lookup is decided by identity instead
    of walking the term again for every morsel."""
    __slots__ = ("term", "_hash")

    def __init__(self, term):
        self.term = term
        self._hash = hash(term)

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return self is other or (isinstance(other, _TermKey) and self._hash == other._hash
                                 and self.term == other.term)


_TERM_KEYS: dict = {}
_TERM_KEYS_CAP = 4096
_TERM_KEYS_LOCK = threading.Lock()


def term_key(term):
    """The interned _TermKey of a term, or None when a literal is unhashable."""
    try:
        key = _TermKey(term)
    except TypeError:
        return None
    with _TERM_KEYS_LOCK:
        known = _TERM_KEYS.get(key)
        if known is None:
            if len(_TERM_KEYS) >= _TERM_KEYS_CAP:
                _TERM_KEYS.clear()
            _TERM_KEYS[key] = known = key
    return known
