"""Rule: factor disjunctions so their join keys and filters can move.

Two rewrites, both exact:

* common conjuncts leave an OR:  (A AND B) OR (A AND C)  ->  A AND (B OR C).
  TPC-H Q19 repeats ``p_partkey = l_partkey`` in every branch; once it is
  factored out it becomes a hash-join key instead of a cross product.
* an OR over both inputs of an inner join implies an OR over each input:
  when every branch has conjuncts over the left input only, the disjunction
  of those is implied for the left input (likewise right) and is pushed
  there as an extra filter, so scans skip rows early.  The original OR stays
  as the join's residual.
"""

from __future__ import annotations

from planner.expressions import (Call, Expr, column_indexes, conjunction,
                                 remap_columns, split_conjuncts)
from planner.logical import Filter, Join, Node
from planner.types import BOOLEAN


def _key(expr: Expr) -> str:
    return repr(expr)


def _disjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Call) and expr.func == "or":
        out: list[Expr] = []
        for a in expr.args:
            out.extend(_disjuncts(a))
        return out
    return [expr]


def _disjunction(exprs: list[Expr]) -> Expr:
    return exprs[0] if len(exprs) == 1 else Call("or", list(exprs), BOOLEAN)


def factor_common_conjuncts(expr: Expr) -> Expr:
    """A AND-ed form of expr with conjuncts shared by every OR branch pulled out."""
    parts = []
    for conj in split_conjuncts(expr):
        branches = _disjuncts(conj)
        if len(branches) < 2:
            parts.append(conj)
            continue
        branch_conjs = [split_conjuncts(b) for b in branches]
        common_keys = set.intersection(*({_key(c) for c in bc} for bc in branch_conjs))
        if not common_keys:
            parts.append(conj)
            continue
        seen = set()
        for c in branch_conjs[0]:
            k = _key(c)
            if k in common_keys and k not in seen:
                parts.append(c)
                seen.add(k)
        rests = [[c for c in bc if _key(c) not in common_keys] for bc in branch_conjs]
        if all(rests):      # an empty branch would make the OR always true
            parts.append(_disjunction([conjunction(r) for r in rests]))
    return conjunction(parts)


def implied_side_predicate(expr: Expr, lo: int, hi: int) -> Expr | None:
    """For an OR, the disjunction of each branch's conjuncts whose columns all
    lie in [lo, hi); None unless every branch has at least one such conjunct."""
    branches = _disjuncts(expr)
    if len(branches) < 2:
        return None
    picked = []
    for b in branches:
        own = [c for c in split_conjuncts(b)
               if (cols := column_indexes(c)) and min(cols) >= lo and max(cols) < hi]
        if not own:
            return None
        picked.append(conjunction(own))
    return _disjunction(picked)


def or_factoring(node: Node) -> Node:
    """Apply both rewrites to every Filter and inner Join of the plan."""
    children = [or_factoring(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if isinstance(node, Filter):
        return Filter(node.child, factor_common_conjuncts(node.predicate))
    if isinstance(node, Join) and node.residual is not None:
        residual = factor_common_conjuncts(node.residual)
        left, right = node.left, node.right
        if node.kind == "inner":
            nleft = len(left.schema)
            nright = len(right.schema)
            shift = {i: i - nleft for i in range(nleft, nleft + nright)}
            for conj in split_conjuncts(residual):
                lp = implied_side_predicate(conj, 0, nleft)
                if lp is not None:
                    left = Filter(left, lp)
                rp = implied_side_predicate(conj, nleft, nleft + nright)
                if rp is not None:
                    right = Filter(right, remap_columns(rp, shift))
        return Join(left, right, node.kind, node.left_keys, node.right_keys, residual)
    return node
