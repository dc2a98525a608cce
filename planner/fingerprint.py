"""Structural fingerprints of plan subtrees.

Two subtrees with equal fingerprints compute the same rows: the fingerprint
covers every field of every node and expression (types, literals with their
Python type, files, filters, names), not the shortened ``repr`` that
EXPLAIN prints.  Fields declared ``compare=False`` (Scan.statistics: what
the planner knew, not what the plan computes) are left out.  Anything that is neither a dataclass, a container nor a
plain value fingerprints by identity, so it never makes two different
subtrees look equal.  The executor uses this to compute a subplan that a
query repeats (a CTE referenced twice, TPC-H Q15) once.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal

_PLAIN = (str, int, float, bool, bytes, type(None))


def fingerprint(node, memo: dict | None = None):
    """A hashable value equal for structurally equal subtrees; ``memo``
    (id -> fingerprint) shares the work across the nodes of one plan."""
    memo = {} if memo is None else memo
    return _fp(node, memo)


def _fp(x, memo: dict):
    key = id(x)
    got = memo.get(key)
    if got is not None:
        return got[1]
    if isinstance(x, _PLAIN):
        return (type(x).__name__, x)
    if isinstance(x, (list, tuple)):
        out = (type(x).__name__,) + tuple(_fp(v, memo) for v in x)
    elif isinstance(x, dict):
        out = ("dict",) + tuple(sorted(((repr(k), _fp(v, memo)) for k, v in x.items()),
                                       key=lambda kv: kv[0]))
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        out = (type(x).__qualname__,) + tuple(_fp(getattr(x, f.name), memo)
                                              for f in dataclasses.fields(x) if f.compare)
    else:
        try:
            hash(x)
            out = (type(x).__qualname__, repr(x), x) if _value_like(x) else ("id", id(x))
        except TypeError:
            out = ("id", id(x))
    memo[key] = (x, out)            # keep x alive: its id must not be reused
    return out


def _value_like(x) -> bool:
    """Decimal, date, datetime and the like: immutable values compared by value."""
    return isinstance(x, (decimal.Decimal, datetime.date, datetime.time, datetime.timedelta))
