"""Rule: aggregate one input of a join before the join (eager aggregation).

A GROUP BY over a join whose aggregates read only one input S can
aggregate S by its join keys first, so the join and the final GROUP BY
see one row per key instead of one per S row (Yan and Larson, "Eager
aggregation and lazy aggregation", VLDB 1995):

    Aggregate [c_custkey] count(o_orderkey)       Project c_custkey, coalesce(n, 0)
      Join left c_custkey = o_custkey        ->     Aggregate [c_custkey] sum(n)
        Scan customer                                 Join left c_custkey = o_custkey
        Scan orders                                     Scan customer
                                                        Aggregate [o_custkey] count(o_orderkey) AS n
                                                          Scan orders

(TPC-H Q13: the join builds on 100k partial counts, not 1.5M orders.)
Every row of the other input meets, per join key, the one pre-aggregated
row of its partners, so sums of partial sums, sums of partial counts and
minimums of minimums are the aggregates over the joined rows.  A left
join's rows without partners (S is its NULL-padded side) count one row for
count(*) and none for count(x).

When: an inner join (either input) or a left join (its right input), with
equality keys; every aggregate count(*), count, sum, min or max without
DISTINCT, its argument over S alone (a plain S column under a left join:
an expression such as coalesce(x, 0) is not NULL on the padded rows);
sums only of integers, floats and decimals of at most 18 digits (their
partial sums cannot overflow where the whole could not); S's columns read
by the groups and the residual become groups of the pre-aggregation too.
Only where statistics say it pays: the pre-aggregation's estimated groups
(not a default guess) at most ``SHRINK`` times S's estimated rows and the
join's: a join that leaves few of S's rows (TPC-H Q18: 399 of lineitem's
6M, its scan filtered by the join's keys) is cheaper to aggregate after.
"""

from __future__ import annotations

from planner import types as T
from planner.cardinality import estimate, estimate_with_source, key_coverage
from planner.expressions import AggregateCall, Call, ColumnRef, Literal, column_indexes, remap_columns
from planner.functions import aggregate as aggregate_call
from planner.functions import cast
from planner.logical import Aggregate, Join, Node, Project
from planner.rules.predicate_pushdown import substitute

SHRINK = 0.5
PUSHED_FUNCS = ("count_star", "count", "sum", "min", "max")


def eager_aggregation(node: Node) -> Node:
    """The rule: every Aggregate of the plan, bottom-up."""
    children = [eager_aggregation(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if isinstance(node, Aggregate):
        pushed = _push(node)
        if pushed is not None:
            return pushed
    return node


def _push(agg: Aggregate):
    child = agg.child
    if isinstance(child, Project) and isinstance(child.child, Join):
        join = child.child
        groups = [substitute(g, child.exprs) for g in agg.groups]
        args = [None if a.arg is None else substitute(a.arg, child.exprs) for a in agg.aggregates]
    elif isinstance(child, Join):
        join = child
        groups = list(agg.groups)
        args = [a.arg for a in agg.aggregates]
    else:
        return None
    if join.kind not in ("inner", "left") or not join.left_keys or not agg.groups \
            or not agg.aggregates or not all(_pushable(a) for a in agg.aggregates):
        return None
    for side in (("right", "left") if join.kind == "inner" else ("right",)):
        out = _push_side(agg, join, groups, args, side)
        if out is not None:
            return out
    return None


def _pushable(a: AggregateCall) -> bool:
    if a.distinct or a.func not in PUSHED_FUNCS:
        return False
    if a.func != "sum":
        return True
    t = a.arg.type
    return t.is_float or (t.is_integer and t.id != "HUGEINT") or \
        (t.is_decimal and t.precision <= 18)


def _groups_aggregated(groups: float, join: Join, side: str, s_node: Node, s_keys,
                       other_keys) -> float:
    """The pre-aggregation's groups that are made: under an inner join's
    probe side (its left input) the scan below drops rows whose integer key
    has no partner in the built side (engine/executor.py
    _filter_through_aggregate), so only the share of S's keys the other
    side covers is aggregated (TPC-H Q10: 39k of lineitem's 1M orders with
    returned items)."""
    if side != "left" or join.kind != "inner" or \
            not all(isinstance(k, ColumnRef) and k.type.is_integer for k in s_keys):
        return groups
    cover = key_coverage(s_node, s_keys, join.right, other_keys)
    return groups if cover is None else groups * cover.value


def _push_side(agg: Aggregate, join: Join, groups, args, side: str):
    nl = len(join.left.schema)
    nr = len(join.right.schema)
    if side == "right":
        s_node, base, s_width = join.right, nl, nr
        s_keys, other_keys = join.right_keys, join.left_keys
    else:
        s_node, base, s_width = join.left, 0, nl
        s_keys, other_keys = join.left_keys, join.right_keys
    in_s = set(range(base, base + s_width))
    to_s = {c: c - base for c in in_s}
    for a, arg in zip(agg.aggregates, args):
        if arg is None:
            continue
        cols = column_indexes(arg)
        if not cols <= in_s:
            return None
        if join.kind == "left" and not isinstance(arg, ColumnRef):
            return None
    # S columns the groups and the residual read (other than plain key
    # columns) become groups of the pre-aggregation too
    key_pos = {base + k.index: i for i, k in enumerate(s_keys) if isinstance(k, ColumnRef)}
    extra: list[int] = []
    for e in groups + ([join.residual] if join.residual is not None else []):
        for c in sorted(column_indexes(e) & in_s):
            if c not in key_pos and c - base not in extra:
                extra.append(c - base)
    p_groups = list(s_keys) + [ColumnRef(c, s_node.schema[c].type) for c in extra]
    partial = [AggregateCall("count_star", None, False, T.BIGINT) if a.func == "count_star"
               else AggregateCall(a.func, remap_columns(arg, to_s), False,
                                  T.BIGINT if a.func == "count" else a.type)
               for a, arg in zip(agg.aggregates, args)]
    p_names = [f"key{i}" for i in range(len(s_keys))] + [s_node.schema[c].name for c in extra]
    pre = Aggregate(s_node, p_groups, partial, p_names,
                    [f"partial{i}" for i in range(len(partial))])
    groups_est = estimate_with_source(pre)
    if groups_est.source == "default" or \
            _groups_aggregated(groups_est.value, join, side, s_node, s_keys, other_keys) > \
            SHRINK * min(estimate(s_node), estimate(join)):
        return None
    # the old join's columns in the new one's row: S's keys and extra
    # columns are pre's groups (every S column the groups and the residual
    # read is one of them), the other input's columns stay
    s_pos = dict(key_pos)
    s_pos.update({base + c: len(s_keys) + k for k, c in enumerate(extra)})
    pre_keys = [ColumnRef(k, key.type) for k, key in enumerate(s_keys)]
    if side == "right":
        p_base = nl
        mapping = {i: i for i in range(nl)}
        mapping.update({c: nl + p for c, p in s_pos.items()})
        left, right, left_keys, right_keys = join.left, pre, list(other_keys), pre_keys
    else:
        p_base = 0
        mapping = dict(s_pos)
        mapping.update({nl + j: len(pre.schema) + j for j in range(nr)})
        left, right, left_keys, right_keys = pre, join.right, pre_keys, list(other_keys)
    residual = None if join.residual is None else remap_columns(join.residual, mapping)
    new_join = Join(left, right, join.kind, left_keys, right_keys, residual)
    first = p_base + len(p_groups)       # the partial aggregates in the new join's row
    final = []
    for i, a in enumerate(agg.aggregates):
        ref = ColumnRef(first + i, partial[i].type)
        if a.func in ("count", "count_star"):
            if a.func == "count_star" and join.kind == "left":
                ref = Call("coalesce", [ref, Literal(1, T.BIGINT)], T.BIGINT)
            final.append(aggregate_call("sum", ref, False))
        else:
            final.append(AggregateCall(a.func, ref, False, a.type))
    final_groups = [remap_columns(g, mapping) for g in groups]
    names = [f.name for f in agg.schema]
    top_agg = Aggregate(new_join, final_groups, final, names[:len(groups)],
                        names[len(groups):])
    ng = len(groups)
    exprs = [ColumnRef(i, g.type) for i, g in enumerate(final_groups)]
    for i, (a, f) in enumerate(zip(agg.aggregates, final)):
        ref = ColumnRef(ng + i, f.type)
        if a.func in ("count", "count_star"):
            ref = cast(Call("coalesce", [ref, Literal(0, f.type)], f.type), T.BIGINT)
        exprs.append(ref)
    return Project(top_agg, exprs, names)
