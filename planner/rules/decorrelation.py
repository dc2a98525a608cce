"""Rule: replace every DependentJoin by ordinary joins (Neumann & Kemper,
"Unnesting Arbitrary Queries", BTW 2015, in the forms TPC-H needs).

The correlated predicates of the subquery (those reading OuterRefs) are
pulled up out of its plan: through Filters, Projects (which then also pass
the columns the predicates read), Sorts, inner joins, the left input of
left-preserving joins, and grouped Aggregates (an equality
``outer = inner expression`` becomes one more grouping key).  They become the
join predicate (keys are extracted later by join_extraction):

  EXISTS / IN conjunct     -> semi join       NOT EXISTS -> anti join
  EXISTS / IN as a value   -> mark / mark_in join (NOT IN: mark_in + filter)
  scalar subquery          -> single join; uncorrelated over an ungrouped
                              aggregate -> cross join with its one row
  correlated scalar over an ungrouped aggregate
                           -> the aggregate grouped by the correlation
                              columns, left-joined; count(*)/count(x) of a
                              missing group is 0 (the "count bug")

A subquery whose correlation sits anywhere else (below a LIMIT, inside a
select-list expression, a non-equality through an aggregate, references two
levels up) raises UnsupportedFeatureError; nothing is evaluated per row.
"""

from __future__ import annotations

from planner.errors import UnsupportedFeatureError
from planner.expressions import (Call, ColumnRef, Expr, Literal, OuterRef,
                                 column_indexes, conjunction, remap_columns,
                                 split_conjuncts, walk)
from planner.logical import (Aggregate, DependentJoin, Filter, Join, Limit, Node, Project,
                             Scan, Sort)
from planner.rules.predicate_pushdown import substitute
from planner.types import BOOLEAN

_LEFT_PRESERVING = ("semi", "anti", "left", "single", "mark", "mark_in")


def decorrelation(node: Node) -> Node:
    """Bottom-up: inner subqueries are unnested before the ones holding them."""
    children = [decorrelation(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if isinstance(node, DependentJoin):
        return _unnest(node)
    return node


# ---- expressions ---------------------------------------------------------------

def node_exprs(node: Node) -> list[Expr]:
    """Every expression a node holds (over its inputs)."""
    if isinstance(node, Filter):
        return [node.predicate]
    if isinstance(node, Project):
        return list(node.exprs)
    if isinstance(node, Aggregate):
        return list(node.groups) + [a.arg for a in node.aggregates if a.arg is not None]
    if isinstance(node, Join):
        return list(node.left_keys) + list(node.right_keys) + (
            [node.residual] if node.residual is not None else [])
    if isinstance(node, Sort):
        return [k.expr for k in node.keys]
    if isinstance(node, Scan):
        return list(node.filters)
    if isinstance(node, DependentJoin):
        return [node.probe] if node.probe is not None else []
    functions = getattr(node, "functions", None)          # Window
    if functions:
        return [e for f in functions for e in f.exprs()]
    return []


def _refs_outer(expr: Expr, corr_id: int | None) -> bool:
    return any(isinstance(e, OuterRef) and (corr_id is None or e.corr_id == corr_id)
               for e in walk(expr))


def _tree_refs_outer(node: Node, corr_id: int | None) -> bool:
    if any(_refs_outer(e, corr_id) for e in node_exprs(node)):
        return True
    return any(_tree_refs_outer(c, corr_id) for c in node.children)


def _to_join_space(expr: Expr, corr_id: int, nleft: int) -> Expr:
    """OuterRef(corr_id, i) -> column i of the join; right column j -> nleft + j."""
    if isinstance(expr, OuterRef) and expr.corr_id == corr_id:
        return ColumnRef(expr.index, expr.type, expr.name)
    if isinstance(expr, ColumnRef):
        return ColumnRef(expr.index + nleft, expr.type, expr.name)
    if isinstance(expr, Call):
        return Call(expr.func, [_to_join_space(a, corr_id, nleft) for a in expr.args], expr.type)
    return expr


def _unsupported(what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"correlated subquery with {what} is not supported")


# ---- pulling correlated predicates up ------------------------------------------

def _pull(node: Node, cid: int) -> tuple[Node, list[Expr]]:
    """(node', preds): node' has node's columns first (maybe extra columns
    after) and no OuterRef(cid); preds read OuterRef(cid) and node' columns."""
    if not _tree_refs_outer(node, cid):
        return node, []
    if isinstance(node, Filter):
        child, preds = _pull(node.child, cid)
        keep = []
        for c in split_conjuncts(node.predicate):
            (preds if _refs_outer(c, cid) else keep).append(c)
        return (Filter(child, conjunction(keep)) if keep else child), preds
    if isinstance(node, Project):
        if any(_refs_outer(e, cid) for e in node.exprs):
            raise _unsupported("an outer reference in its SELECT list")
        child, preds = _pull(node.child, cid)
        return _pass_through_project(node, child, preds)
    if isinstance(node, Sort):
        if any(_refs_outer(k.expr, cid) for k in node.keys):
            raise _unsupported("an outer reference in ORDER BY")
        child, preds = _pull(node.child, cid)
        return Sort(child, node.keys), preds
    if isinstance(node, Aggregate):
        return _pull_aggregate(node, cid)
    if isinstance(node, Join):
        return _pull_join(node, cid)
    if isinstance(node, Limit):
        raise _unsupported("LIMIT/OFFSET")
    raise _unsupported(f"an outer reference below {type(node).__name__}")


def _pass_through_project(node: Project, child: Node, preds: list[Expr]):
    used = sorted(set().union(*(column_indexes(p) for p in preds))) if preds else []
    schema = child.schema
    exprs = list(node.exprs) + [ColumnRef(j, schema[j].type, schema[j].name) for j in used]
    names = list(node.names) + [f"__corr{k}" for k in range(len(used))]
    mapping = {j: len(node.exprs) + k for k, j in enumerate(used)}
    return Project(child, exprs, names), [remap_columns(p, mapping) for p in preds]


def _equality_sides(pred: Expr, cid: int):
    """(outer side, inner side) of ``outer expr = inner expr``, else None."""
    if not (isinstance(pred, Call) and pred.func == "eq"):
        return None
    a, b = pred.args
    for outer, inner in ((a, b), (b, a)):
        if (_refs_outer(outer, cid) and not column_indexes(outer)
                and column_indexes(inner) and not _refs_outer(inner, None)):
            return outer, inner
    return None


def _correlation_groups(preds: list[Expr], cid: int, what: str):
    sides = [_equality_sides(p, cid) for p in preds]
    if any(s is None for s in sides):
        raise _unsupported(f"a correlated predicate other than an equality {what}")
    return sides


def _pull_aggregate(node: Aggregate, cid: int):
    if any(_refs_outer(e, cid) for e in node_exprs(node)):
        raise _unsupported("an outer reference inside an aggregate or GROUP BY")
    if not node.groups:
        raise _unsupported("an ungrouped aggregate outside a scalar subquery's result")
    child, preds = _pull(node.child, cid)
    sides = _correlation_groups(preds, cid, "below GROUP BY")
    n, k = len(node.groups), len(sides)
    groups = list(node.groups) + [inner for _, inner in sides]
    names = (node.group_names or [f"group{i}" for i in range(n)]) + \
        [f"__corr{i}" for i in range(k)]
    agg = Aggregate(child, groups, node.aggregates, names, list(node.aggregate_names))
    out = agg.schema
    order = list(range(n)) + list(range(n + k, len(out))) + list(range(n, n + k))
    proj = Project(agg, [ColumnRef(i, out[i].type, out[i].name) for i in order],
                   [out[i].name for i in order])
    width = len(node.schema)
    new_preds = [Call("eq", [outer, ColumnRef(width + i, inner.type)], BOOLEAN)
                 for i, (outer, inner) in enumerate(sides)]
    return proj, new_preds


def _pull_join(node: Join, cid: int):
    nleft, nright = len(node.left.schema), len(node.right.schema)
    if any(_refs_outer(e, cid) for e in node.left_keys + node.right_keys):
        raise _unsupported("an outer reference in a join key")
    if node.kind in _LEFT_PRESERVING:
        if _tree_refs_outer(node.right, cid) or (
                node.residual is not None and _refs_outer(node.residual, cid)):
            raise _unsupported(f"an outer reference inside a {node.kind} join's right side")
        left, lp = _pull(node.left, cid)
        right, rp, residual_preds = node.right, [], []
        residual = node.residual
    elif node.kind in ("inner", "cross"):
        left, lp = _pull(node.left, cid)
        right, rp = _pull(node.right, cid)
        residual, residual_preds = [], []
        for c in split_conjuncts(node.residual):
            (residual_preds if _refs_outer(c, cid) else residual).append(c)
        residual = conjunction(residual)
    else:
        raise _unsupported(f"an outer reference below a {node.kind} join")
    nl2, nr2 = len(left.schema), len(right.schema)
    # join-space column of the rebuilt join for each column of the old join
    shift = {i: i for i in range(nleft)}
    shift.update({nleft + j: nl2 + j for j in range(nr2)})
    if residual is not None:
        residual = remap_columns(residual, shift)
    kind = node.kind
    if kind == "cross" and residual is not None:
        kind = "inner"
    joined = Join(left, right, kind, node.left_keys, node.right_keys, residual)
    out = joined.schema
    old_width = len(node.schema)
    if node.kind in ("semi", "anti"):
        positions = list(range(nleft)) + list(range(nleft, nl2))
    elif node.kind in ("mark", "mark_in"):
        positions = list(range(nleft)) + [nl2] + list(range(nleft, nl2))
    else:
        positions = (list(range(nleft)) + list(range(nl2, nl2 + nright))
                     + list(range(nleft, nl2)) + list(range(nl2 + nright, nl2 + nr2)))
    proj = Project(joined, [ColumnRef(p, out[p].type, out[p].name) for p in positions],
                   [out[p].name for p in positions])
    where = {p: i for i, p in enumerate(positions)}
    preds = [remap_columns(p, {i: where[i] for i in range(nleft, nl2)} | {
        i: i for i in range(nleft)}) for p in lp]
    if node.kind not in _LEFT_PRESERVING:
        rmap = {j: where[nl2 + j] for j in range(nr2)}
        preds += [remap_columns(p, rmap) for p in rp]
        preds += [remap_columns(remap_columns(p, shift), where) for p in residual_preds]
    assert len(proj.schema) >= old_width
    return proj, preds


# ---- DependentJoin -> Join ------------------------------------------------------

def _unnest(dj: DependentJoin) -> Node:
    if dj.kind == "single":
        scalar = _scalar_aggregate(dj)
        if scalar is not None:
            return scalar
    nleft = len(dj.left.schema)
    right, preds = _pull(dj.right, dj.corr_id)
    if _tree_refs_outer(right, None) or any(_refs_other(p, dj.corr_id) for p in preds):
        raise UnsupportedFeatureError("subquery correlated with a query more than one level "
                                      "up is not supported")
    residual = [_to_join_space(p, dj.corr_id, nleft) for p in preds]
    kind = dj.kind
    if kind in ("semi", "anti", "mark"):
        if dj.probe is not None:
            residual.insert(0, Call("eq", [dj.probe, ColumnRef(nleft, dj.right.schema[0].type)],
                                    BOOLEAN))
        if not residual:
            right = Limit(right, 1)          # uncorrelated EXISTS: one row decides
        return Join(dj.left, right, kind, [], [], conjunction(residual))
    if kind == "mark_in":
        key = ColumnRef(0, dj.right.schema[0].type, dj.right.schema[0].name)
        return Join(dj.left, right, "mark_in", [dj.probe], [key], conjunction(residual))
    # single: a scalar subquery without a correlated ungrouped aggregate
    if not residual and _exactly_one_row(right):
        join = Join(dj.left, right, "cross", [], [])
    else:
        join = Join(dj.left, right, "single", [], [], conjunction(residual))
    return _keep_value(join, nleft, ColumnRef(nleft, right.schema[0].type, right.schema[0].name),
                       dj.schema[-1].name)


def _refs_other(expr: Expr, cid: int) -> bool:
    return any(isinstance(e, OuterRef) and e.corr_id != cid for e in walk(expr))


def _exactly_one_row(node: Node) -> bool:
    if isinstance(node, Project):
        return _exactly_one_row(node.child)
    return isinstance(node, Aggregate) and not node.groups


def _keep_value(join: Join, nleft: int, value: Expr, name: str) -> Project:
    schema = join.left.schema
    exprs = [ColumnRef(i, f.type, f.name) for i, f in enumerate(schema)] + [value]
    return Project(join, exprs, [f.name for f in schema] + [name])


def _scalar_aggregate(dj: DependentJoin) -> Node | None:
    """Correlated scalar subquery whose result is Projects over an ungrouped
    Aggregate: group it by the correlation columns and left-join it."""
    projects = []
    node = dj.right
    while isinstance(node, Project):
        projects.append(node)
        node = node.child
    if not (isinstance(node, Aggregate) and not node.groups
            and _tree_refs_outer(node, dj.corr_id)):
        return None
    if any(_refs_outer(e, dj.corr_id) for p in projects for e in p.exprs):
        raise _unsupported("an outer reference in its SELECT list")
    if any(_refs_outer(e, dj.corr_id) for e in node_exprs(node)):
        raise _unsupported("an outer reference inside an aggregate")
    value = ColumnRef(0, dj.right.schema[0].type)
    for p in projects:                       # compose: value over the aggregate's output
        value = substitute(value, p.exprs)
    child, preds = _pull(node.child, dj.corr_id)
    if _tree_refs_outer(child, None):
        raise UnsupportedFeatureError("subquery correlated with a query more than one level "
                                      "up is not supported")
    sides = _correlation_groups(preds, dj.corr_id, "in an aggregating subquery")
    k = len(sides)
    agg = Aggregate(child, [inner for _, inner in sides], node.aggregates,
                    [f"__corr{i}" for i in range(k)], list(node.aggregate_names))
    nleft = len(dj.left.schema)
    residual = [Call("eq", [_to_join_space(outer, dj.corr_id, nleft),
                            ColumnRef(nleft + i, inner.type)], BOOLEAN)
                for i, (outer, inner) in enumerate(sides)]
    join = Join(dj.left, agg, "left", [], [], conjunction(residual))
    slots = {}
    for i, a in enumerate(node.aggregates):
        ref = ColumnRef(nleft + k + i, a.type)
        if a.func in ("count", "count_star"):     # an empty group counts 0, not NULL
            ref = Call("coalesce", [ref, Literal(0, a.type)], a.type)
        slots[i] = ref
    return _keep_value(join, nleft, _substitute_slots(value, slots), dj.schema[-1].name)


def _substitute_slots(expr: Expr, slots: dict[int, Expr]) -> Expr:
    if isinstance(expr, ColumnRef):
        return slots[expr.index]
    if isinstance(expr, Call):
        return Call(expr.func, [_substitute_slots(a, slots) for a in expr.args], expr.type)
    return expr

