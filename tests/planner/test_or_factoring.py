"""OR factoring: shared conjuncts leave disjunctions; implied per-input filters."""

from planner.expressions import Call, ColumnRef, Literal
from planner.rules.or_factoring import factor_common_conjuncts, implied_side_predicate
from planner.types import BOOLEAN, INTEGER


def col(i):
    return ColumnRef(i, INTEGER, f"c{i}")


def eq(a, b):
    return Call("eq", [a, b], BOOLEAN)


def lit(v):
    return Literal(v, INTEGER)


def AND(*xs):
    return Call("and", list(xs), BOOLEAN)


def OR(*xs):
    return Call("or", list(xs), BOOLEAN)


def test_common_conjunct_is_pulled_out():
    key = eq(col(0), col(2))
    e = OR(AND(key, eq(col(1), lit(1))), AND(key, eq(col(3), lit(2))))
    out = factor_common_conjuncts(e)
    assert out.func == "and"
    assert repr(out.args[0]) == repr(key)
    assert out.args[1].func == "or"


def test_branch_that_is_only_common_makes_or_true():
    key = eq(col(0), col(2))
    e = OR(key, AND(key, eq(col(1), lit(1))))
    assert repr(factor_common_conjuncts(e)) == repr(key)


def test_no_common_conjunct_leaves_expression():
    e = OR(eq(col(0), lit(1)), eq(col(1), lit(2)))
    assert repr(factor_common_conjuncts(e)) == repr(e)


def test_implied_side_predicate_needs_every_branch():
    # columns 0,1 = left input, 2,3 = right input
    e = OR(AND(eq(col(0), lit(1)), eq(col(2), lit(5))), AND(eq(col(1), lit(2)), eq(col(3), lit(6))))
    left = implied_side_predicate(e, 0, 2)
    assert repr(left) == repr(OR(eq(col(0), lit(1)), eq(col(1), lit(2))))
    right = implied_side_predicate(e, 2, 4)
    assert repr(right) == repr(OR(eq(col(2), lit(5)), eq(col(3), lit(6))))
    partial = OR(eq(col(0), lit(1)), eq(col(2), lit(5)))
    assert implied_side_predicate(partial, 0, 2) is None
