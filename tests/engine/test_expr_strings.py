"""String views, comparisons, LIKE and string functions against DuckDB."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ExecutionError
from engine.kernels.strings import views_from_pylist, views_to_pylist
from planner import types as T
from tests.engine.test_expr_support import call, col, duck_eval, lit, make_block, run

V = T.VARCHAR
B = T.BOOLEAN
# around the 12-byte inline/heap boundary, shared prefixes, empty, non-ASCII
WORDS = ["", "a", "abc", "abcd", "abcde", "abcdefghijkl", "abcdefghijklm", "abcdefghijklmn",
         "abcdefghijkm", "abcdefghijk", "b", "abd", "\x7f", "é", "éa", "zzzzzzzzzzzzzzzz",
         "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyy", None, "ab\x00c"]


def test_views_roundtrip():
    views, heap, nulls = views_from_pylist(WORDS)
    assert views.shape == (len(WORDS), 2) and views.dtype == np.uint64
    assert views_to_pylist(views, heap, nulls) == WORDS
    raw = views_to_pylist(views, heap, nulls, decode_utf8=False)
    assert raw[5] == b"abcdefghijkl" and raw[18] is None


@pytest.mark.parametrize("op,sym", [("eq", "="), ("ne", "<>"), ("lt", "<"), ("le", "<="),
                                    ("gt", ">"), ("ge", ">=")])
def test_string_compare_all_pairs(op, sym):
    pairs = [(a, b) for a in WORDS for b in WORDS]
    cols = [([p[0] for p in pairs], V), ([p[1] for p in pairs], V)]
    got = run(call(op, [col(0, V), col(1, V)], B), cols)
    want = [None if a is None or b is None else
            {"eq": a == b, "ne": a != b, "lt": a.encode() < b.encode(), "le": a.encode() <= b.encode(),
             "gt": a.encode() > b.encode(), "ge": a.encode() >= b.encode()}[op] for a, b in pairs]
    assert got == want


@pytest.mark.parametrize("const", ["abcdefghijkl", "abcdefghijklm", "abc", "", "é"])
def test_string_compare_constant(const):
    cols = [(WORDS, V)]
    for op, sym in [("eq", "="), ("lt", "<"), ("ge", ">=")]:
        got = run(call(op, [col(0, V), lit(const, V)], B), cols)
        assert got == duck_eval(f"c0 {sym} '{const}'", cols), (op, const)
        got = run(call(op, [lit(const, V), col(0, V)], B), cols)
        assert got == duck_eval(f"'{const}' {sym} c0", cols), (op, const)


LIKE_PATTERNS = ["abc%", "%klm", "%def%", "abc", "a_c%", "%", "_", "%a%c%", "%é%", "_a",
                 "abcdefghijklm%", "%jklmn", "", "a%z%", "%special%requests%", "ab%kl%",
                 "%a%%b%", "a%m", "%cd%ef%jk"]


@pytest.mark.parametrize("pat", LIKE_PATTERNS)
def test_like_fast_and_general_paths(pat):
    cols = [(WORDS[:-1], V)]       # DuckDB's LIKE does not take NUL bytes in VALUES
    got = run(call("like", [col(0, V), lit(pat, V)], B), cols)
    assert got == duck_eval(f"c0 LIKE '{pat}'", cols)
    got = run(call("ilike", [col(0, V), lit(pat.upper(), V)], B), cols)
    assert got == duck_eval(f"c0 ILIKE '{pat.upper()}'", cols)


def test_like_escape_and_column_pattern():
    words = ["50%", "50x", "a_b", "axb", None, "100% sure of it"]
    cols = [(words, V), (["50!%", "50!%", "a!_b", "a!_b", "x", "%!%%"], V)]
    got = run(call("like", [col(0, V), lit("%!%%", V), lit("!", V)], B), cols)
    assert got == duck_eval("c0 LIKE '%!%%' ESCAPE '!'", cols)
    got = run(call("like", [col(0, V), col(1, V), lit("!", V)], B), cols)
    assert got == duck_eval("c0 LIKE c1 ESCAPE '!'", cols)


def _like_regex(pat: str) -> str:
    out = []
    for ch in pat:
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab%_é", max_size=6), min_size=1, max_size=4),
       st.text(alphabet="abé", max_size=16))
def test_like_matches_regex(pats, s):
    for pat in pats:
        got = run(call("like", [col(0, V), lit(pat, V)], B), [([s], V)])
        assert got == [re.fullmatch(_like_regex(pat), s, re.S) is not None], (pat, s)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab%é", min_size=1, max_size=8),
       st.lists(st.text(alphabet="abcé ", max_size=40), min_size=1, max_size=30))
def test_like_pieces_on_many_rows_match_regex(pat, words):
    """Patterns of literal pieces between '%'s (the views kernel, inline and
    heap strings in one block) against the regex, row by row."""
    got = run(call("like", [col(0, V), lit(pat, V)], B), [(words, V)])
    assert got == [re.fullmatch(_like_regex(pat), w, re.S) is not None for w in words], pat


def test_like_piece_search_at_every_offset_and_across_neighbours():
    """The piece search tests eight positions at once (first and last byte):
    a piece at every offset of heap strings of 13-40 bytes, pieces that
    only continue into the next string of the heap (never a match), and
    first/last-byte candidates whose middle differs, against Python's
    ``in``; on whole-heap runs and near its end."""
    words = []
    for ln in (13, 17, 24, 31, 40):
        for at in range(0, ln - 4):
            w = ["x"] * ln
            w[at:at + 4] = "spam"
            words.append("".join(w))
            words.append("x" * (ln - 2) + "sp")          # "sp" + next string's "am..."
            words.append("am" + "x" * (ln - 2))
            w[at + 1] = "q"                              # s?am: first and last byte match
            words.append("".join(w))
    words += ["spam", "xspamx", "", "s", "pam"]       # inline strings too
    for pat in ("%spam%", "%sp%am%", "%s%", "%am", "sp%", "%xs%m%"):
        got = run(call("like", [col(0, V), lit(pat, V)], B), [(words, V)])
        assert got == [re.fullmatch(_like_regex(pat), w, re.S) is not None for w in words], pat


def test_concat_substring_case_length():
    words = ["hello", "héllo wörld, long text", None, "", "ABC def"]
    other = ["!", "?", "x", "a longer suffix string", None]
    cols = [(words, V), (other, V)]
    assert run(call("concat", [col(0, V), col(1, V)], V), cols) == duck_eval("c0 || c1", cols)
    for args, sql in [((2, 3), "substring(c0, 2, 3)"), ((0, 2), "substring(c0, 0, 2)"),
                      ((-3, 2), "substring(c0, -3, 2)"), ((3, -2), "substring(c0, 3, -2)"),
                      ((4,), "substring(c0, 4)"), ((-100, 200), "substring(c0, -100, 200)")]:
        e = call("substring", [col(0, V)] + [lit(a, T.BIGINT) for a in args], V)
        assert run(e, cols) == duck_eval(sql, cols), sql
    assert run(call("upper", [col(0, V)], V), cols) == duck_eval("upper(c0)", cols)
    assert run(call("lower", [col(0, V)], V), cols) == duck_eval("lower(c0)", cols)
    assert run(call("length", [col(0, V)], T.BIGINT), cols) == duck_eval("length(c0)", cols)
    ascii_cols = [(["MiXeD case text here", "x"], V)]
    assert run(call("lower", [col(0, V)], V), ascii_cols) == ["mixed case text here", "x"]


def test_bad_escape():
    with pytest.raises(ExecutionError):
        run(call("like", [col(0, V), lit("a", V), lit("!!", V)], B), [(["a"], V)])


def test_predicates_on_dictionary_codes_match_plain_vectors():
    """IN, comparisons and LIKE with constants on a scan's CodedVector are
    evaluated once per dictionary entry and gathered by code: same result
    as on the plain views."""
    import numpy as np
    from engine.block import Block, Vector
    from engine.expr import evaluate
    from engine.kernels.strings import views_from_pylist
    from engine.operators.scan import CodedVector
    from planner.expressions import Call, ColumnRef, Literal
    from planner.types import BOOLEAN, VARCHAR
    words = ["MAIL", "SHIP", "AIR", "REG AIR", "a much longer string value", "", "TRUCK"]
    dictionary, heap, _ = views_from_pylist(words)
    codes = np.random.default_rng(3).integers(0, len(words), 5000).astype(np.int32)
    coded = CodedVector(VARCHAR, codes, dictionary, heap)
    plain = Vector(VARCHAR, dictionary[codes].copy(), None, heap)
    col = ColumnRef(0, VARCHAR, "s")

    def lit(v):
        return Literal(v, VARCHAR)
    exprs = [Call("in_list", [col, lit("MAIL"), lit("a much longer string value")], BOOLEAN),
             Call("eq", [col, lit("AIR")], BOOLEAN), Call("lt", [col, lit("REG")], BOOLEAN),
             Call("ge", [lit("M"), col], BOOLEAN), Call("ne", [col, lit("")], BOOLEAN),
             Call("like", [col, lit("%AI%")], BOOLEAN),
             Call("ilike", [col, lit("a much%")], BOOLEAN)]
    for e in exprs:
        got = evaluate(e, Block([coded], len(codes)))
        want = evaluate(e, Block([plain], len(codes)))
        assert np.array_equal(np.asarray(got.data, bool), np.asarray(want.data, bool)), e
        assert got.nulls is None and want.nulls is None
