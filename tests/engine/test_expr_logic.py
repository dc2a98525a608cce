"""Three-valued logic, null tests, IN lists, CASE and COALESCE against DuckDB."""

import itertools

import numpy as np
import pytest

from engine.block import Block
from engine.expr import evaluate, evaluate_predicate, literal_vector
from planner import types as T
from tests.engine.test_expr_support import call, col, duck_eval, lit, make_block, run

B = T.BOOLEAN
TRI = [True, False, None]
PAIRS = list(itertools.product(TRI, TRI))
XS = [p[0] for p in PAIRS]
YS = [p[1] for p in PAIRS]


@pytest.mark.parametrize("op", ["and", "or"])
def test_truth_tables(op):
    cols = [(XS, B), (YS, B)]
    got = run(call(op, [col(0, B), col(1, B)], B), cols)
    assert got == duck_eval(f"c0 {op.upper()} c1", cols)


def test_three_way_and_or_with_null_literal():
    triples = list(itertools.product(TRI, TRI, TRI))
    cols = [([t[i] for t in triples], B) for i in range(3)]
    args = [col(0, B), col(1, B), col(2, B)]
    assert run(call("and", args, B), cols) == duck_eval("c0 AND c1 AND c2", cols)
    assert run(call("or", args, B), cols) == duck_eval("c0 OR c1 OR c2", cols)
    got = run(call("or", [col(0, B), lit(None, T.NULL)], B), cols)
    assert got == duck_eval("c0 OR NULL", cols)


def test_not_and_null_tests():
    cols = [(XS, B)]
    assert run(call("not", [col(0, B)], B), cols) == duck_eval("NOT c0", cols)
    assert run(call("is_null", [col(0, B)], B), cols) == duck_eval("c0 IS NULL", cols)
    assert run(call("is_not_null", [col(0, B)], B), cols) == duck_eval("c0 IS NOT NULL", cols)


def test_predicate_drops_null_and_false():
    block = make_block([(XS, B), (YS, B)])
    mask = evaluate_predicate(call("or", [col(0, B), col(1, B)], B), block)
    want = [v is True for v in duck_eval("c0 OR c1", [(XS, B), (YS, B)])]
    assert mask.tolist() == want


def test_in_list_with_nulls():
    xs = [1, 2, 3, None, 5]
    cols = [(xs, T.INTEGER), ([7, 7, None, 7, 5], T.INTEGER)]
    x = col(0, T.INTEGER)
    consts = [lit(1, T.INTEGER), lit(3, T.INTEGER)]
    assert run(call("in_list", [x] + consts, B), cols) == duck_eval("c0 IN (1, 3)", cols)
    with_null = consts + [lit(None, T.INTEGER)]
    assert run(call("in_list", [x] + with_null, B), cols) == duck_eval("c0 IN (1, 3, NULL)", cols)
    mixed = consts + [col(1, T.INTEGER)]
    assert run(call("in_list", [x] + mixed, B), cols) == duck_eval("c0 IN (1, 3, c1)", cols)


def test_in_list_strings_and_many_values():
    words = ["apple", "a much longer string value", None, "pear", "", "zz"]
    cols = [(words, T.VARCHAR)]
    items = [lit(w, T.VARCHAR) for w in ["pear", "a much longer string value", ""]]
    got = run(call("in_list", [col(0, T.VARCHAR)] + items, B), cols)
    assert got == duck_eval("c0 IN ('pear', 'a much longer string value', '')", cols)
    rng = np.random.default_rng(1)
    xs = rng.integers(0, 1000, 200).tolist()
    vals = sorted(set(rng.integers(0, 1000, 300).tolist()))
    got = run(call("in_list", [col(0, T.BIGINT)] + [lit(v, T.BIGINT) for v in vals], B), [(xs, T.BIGINT)])
    assert got == [x in set(vals) for x in xs]


def test_case_first_true_wins_and_null_when():
    xs = [1, 5, None, 10, -3]
    cols = [(xs, T.INTEGER)]
    x = col(0, T.INTEGER)
    expr = call("case", [
        call("gt", [x, lit(4, T.INTEGER)], B), lit("big", T.VARCHAR),
        call("gt", [x, lit(0, T.INTEGER)], B), lit("a positive but long text", T.VARCHAR),
        lit(None, T.VARCHAR)], T.VARCHAR)
    assert run(expr, cols) == duck_eval(
        "CASE WHEN c0 > 4 THEN 'big' WHEN c0 > 0 THEN 'a positive but long text' END", cols)


def test_case_branch_runs_only_on_its_rows():
    # the THEN branch would overflow on the rows where WHEN is false
    xs = [2**62, 3]
    cols = [(xs, T.BIGINT)]
    x = col(0, T.BIGINT)
    expr = call("case", [call("lt", [x, lit(100, T.BIGINT)], B),
                         call("mul", [x, lit(4, T.BIGINT)], T.BIGINT), x], T.BIGINT)
    assert run(expr, cols) == [2**62, 12]


def test_coalesce():
    cols = [([None, 2, None, None], T.INTEGER), ([1, 5, None, None], T.BIGINT),
            ([9, 9, 9, None], T.BIGINT)]
    args = [call("cast", [col(0, T.INTEGER)], T.BIGINT), col(1, T.BIGINT), col(2, T.BIGINT)]
    assert run(call("coalesce", args, T.BIGINT), cols) == duck_eval("coalesce(c0, c1, c2)", cols)
    scols = [(["x", None, None], T.VARCHAR), ([None, "a long string over twelve", None], T.VARCHAR)]
    sargs = [col(0, T.VARCHAR), col(1, T.VARCHAR), lit("dflt", T.VARCHAR)]
    assert run(call("coalesce", sargs, T.VARCHAR), scols) == ["x", "a long string over twelve", "dflt"]


def test_literal_vector():
    v = literal_vector(None, T.INTEGER, 3)
    assert v.nulls.tolist() == [1, 1, 1] and len(v.data) == 3
    v = literal_vector("a string longer than twelve", T.VARCHAR, 4)
    from engine.kernels.strings import views_to_pylist
    assert views_to_pylist(v.data, v.heap) == ["a string longer than twelve"] * 4
    v = evaluate(lit(5, T.DECIMAL(10, 2)), Block([], 2))
    assert v.data.tolist() == [5, 5] and v.nulls is None
