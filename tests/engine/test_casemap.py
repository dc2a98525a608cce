"""upper()/lower() of every assigned code point against DuckDB, which maps
code point by code point (utf8proc), unlike Python's full case mapping."""

import unicodedata

import duckdb
import pytest

from engine.block import Vector
from engine.expr import strfuncs
from engine.kernels import strings as sk
from planner import types as T

ASSIGNED = [chr(c) for c in range(0x110000)
            if unicodedata.category(chr(c)) not in ("Cn", "Cs")]


def _pqdb(texts, upper):
    views, heap, _ = sk.views_from_pylist(texts)
    out = strfuncs.change_case(Vector(T.VARCHAR, views, None, heap), upper)
    return sk.views_to_pylist(out.data, out.heap, None)


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT unnest($1) AS s", [ASSIGNED + ["".join(ASSIGNED)]])
    rows = con.execute("SELECT s, upper(s), lower(s) FROM t").fetchall()
    return {s: (u, low) for s, u, low in rows}


@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
def test_every_code_point_as_duckdb(duck, upper):
    texts = ASSIGNED + ["".join(ASSIGNED)]
    got = _pqdb(texts, upper)
    want = [duck[t][0 if upper else 1] for t in texts]
    bad = [(hex(ord(t)) if len(t) == 1 else "all", g, w)
           for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, bad[:20]


def test_examples():
    assert _pqdb(["straße", "İx", "ΑΣ ΑΣ", "ǆ", "ﬁ"], True) == ["STRAẞE", "İX", "ΑΣ ΑΣ", "Ǆ", "ﬁ"]
    assert _pqdb(["straße", "İx", "ΑΣ ΑΣ", "Ǆ"], False) == ["straße", "ix", "ασ ασ", "ǆ"]
