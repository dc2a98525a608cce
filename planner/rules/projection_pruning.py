"""Rule: read and carry only the columns that are used.

Scan.columns shrink to the referenced columns (filter columns included);
unused aggregates and projected expressions are dropped; join inputs that
carry columns nobody above needs get a Project that drops them before the
hash table is built; identity Projects disappear.
"""

from __future__ import annotations

from planner.expressions import AggregateCall, ColumnRef, Expr, column_indexes, remap_columns
from planner.logical import (MARK_KINDS, Aggregate, Filter, Join, Limit, Node, OneRow,
                             Project, Scan, Sort, SortKey, Union, Window,
                             WindowFunction)
from planner.types import DataType


def projection_pruning(node: Node) -> Node:
    """Prune below the root; the root keeps its full output."""
    new, mapping = _prune(node, set(range(len(node.schema))))
    if all(mapping.get(i) == i for i in range(len(node.schema))) and \
            len(new.schema) == len(node.schema):
        return new
    schema = new.schema
    names = [f.name for f in node.schema]
    return Project(new, [ColumnRef(mapping[i], schema[mapping[i]].type, names[i])
                         for i in range(len(names))], names)


def _uses(exprs: list[Expr]) -> set[int]:
    out: set[int] = set()
    for e in exprs:
        out |= column_indexes(e)
    return out


def _prune(node: Node, needed: set[int]) -> tuple[Node, dict[int, int]]:
    """A node whose output holds at least the ``needed`` columns of node's
    output, and the map old position -> new position for those."""
    if isinstance(node, Scan):
        keep = sorted(needed | _uses(node.filters))
        if not keep:
            keep = [_narrowest(node)]
        mapping = {old: new for new, old in enumerate(keep)}
        filters = [remap_columns(f, mapping) for f in node.filters]
        return (Scan(node.files, node.table_columns, [node.columns[i] for i in keep], filters,
                     node.row_count, node.alias, node.statistics, node.partitions), mapping)
    if isinstance(node, Filter):
        child, m = _prune(node.child, needed | column_indexes(node.predicate))
        return Filter(child, remap_columns(node.predicate, m)), m
    if isinstance(node, Project):
        if not needed and node.exprs:
            # only the row count matters above (count(*)): the child's own
            # cheapest column, not whatever the first expression reads
            child, _ = _prune(node.child, set())
            first = child.schema[0]
            return Project(child, [ColumnRef(0, first.type, first.name)], [first.name]), {}
        keep = sorted(needed) if node.exprs else []
        exprs = [node.exprs[i] for i in keep]
        child, m = _prune(node.child, _uses(exprs))
        exprs = [remap_columns(e, m) for e in exprs]
        names = [node.names[i] for i in keep]
        mapping = {old: new for new, old in enumerate(keep)}
        if _is_identity(exprs, child) and names == [f.name for f in child.schema]:
            return child, mapping
        return Project(child, exprs, names), mapping
    if isinstance(node, Aggregate):
        n = len(node.groups)
        agg_keep = [i for i in range(len(node.aggregates)) if n + i in needed]
        if not node.groups and not agg_keep and node.aggregates:
            agg_keep = [0]
        aggs = [node.aggregates[i] for i in agg_keep]
        used = _uses(node.groups) | _uses([a.arg for a in aggs if a.arg is not None])
        child, m = _prune(node.child, used)
        groups = [remap_columns(g, m) for g in node.groups]
        aggs = [AggregateCall(a.func, remap_columns(a.arg, m) if a.arg is not None else None,
                              a.distinct, a.type) for a in aggs]
        names = node.aggregate_names or [f"agg{i}" for i in range(len(node.aggregates))]
        mapping = {i: i for i in range(n)}
        mapping.update({n + old: n + new for new, old in enumerate(agg_keep)})
        return (Aggregate(child, groups, aggs, list(node.group_names),
                          [names[i] for i in agg_keep]), mapping)
    if isinstance(node, Join):
        return _prune_join(node, needed)
    if isinstance(node, Sort):
        child, m = _prune(node.child, needed | _uses([k.expr for k in node.keys]))
        keys = [SortKey(remap_columns(k.expr, m), k.ascending, k.nulls_first) for k in node.keys]
        return Sort(child, keys), m
    if isinstance(node, Limit):
        child, m = _prune(node.child, needed)
        return Limit(child, node.limit, node.offset), m
    if isinstance(node, OneRow):
        return node, {}
    if isinstance(node, Union):
        return _prune_union(node, needed)
    if isinstance(node, Window):
        return _prune_window(node, needed)
    return node, {i: i for i in range(len(node.schema))}


def _prune_join(node: Join, needed: set[int]):
    nleft = len(node.left.schema)
    res = column_indexes(node.residual) if node.residual is not None else set()
    lneed = {i for i in needed | res if i < nleft} | _uses(node.left_keys)
    above = set() if node.kind in MARK_KINDS else needed     # the mark is no right column
    rneed = {i - nleft for i in above | res if i >= nleft} | _uses(node.right_keys)
    left, lm = _narrow(*_prune(node.left, lneed), lneed)
    right, rm = _narrow(*_prune(node.right, rneed), rneed)
    nl = len(left.schema)
    both = dict(lm)
    both.update({nleft + old: nl + new for old, new in rm.items()})
    out = Join(left, right, node.kind, [remap_columns(k, lm) for k in node.left_keys],
               [remap_columns(k, rm) for k in node.right_keys],
               remap_columns(node.residual, both) if node.residual is not None else None)
    if node.kind in ("semi", "anti"):
        return out, lm
    if node.kind in MARK_KINDS:
        return out, {**lm, nleft: nl}
    return out, both


def _prune_union(node: Union, needed: set[int]):
    """Every input keeps exactly the needed columns, in the same positions."""
    keep = sorted(needed) or [0]
    inputs = []
    for child in node.inputs:
        new, m = _prune(child, set(keep))
        schema = new.schema
        exprs = [ColumnRef(m[i], schema[m[i]].type, schema[m[i]].name) for i in keep]
        if not (_is_identity(exprs, new) and len(keep) == len(schema)):
            new = Project(new, exprs, [schema[m[i]].name for i in keep])
        inputs.append(new)
    return (Union(inputs, [node.names[i] for i in keep]),
            {old: new for new, old in enumerate(keep)})


def _prune_window(node: Window, needed: set[int]):
    """Drop window functions nobody needs and the input columns only they used."""
    width = len(node.child.schema)
    slots = sorted(i - width for i in needed if i >= width)
    if not slots:
        return _prune(node.child, {i for i in needed if i < width})
    functions = [node.functions[k] for k in slots]
    child_needed = {i for i in needed if i < width}
    for f in functions:
        child_needed |= _uses(f.exprs())
    child, m = _prune(node.child, child_needed)
    moved = [WindowFunction(f.func, [remap_columns(a, m) for a in f.args],
                            [remap_columns(p, m) for p in f.partition],
                            [SortKey(remap_columns(k.expr, m), k.ascending, k.nulls_first)
                             for k in f.order], f.frame, f.type) for f in functions]
    w2 = len(child.schema)
    mapping = {i: m[i] for i in needed if i < width}
    mapping.update({width + k: w2 + j for j, k in enumerate(slots)})
    return Window(child, moved, [node.names[k] for k in slots]), mapping


def _narrow(child: Node, mapping: dict[int, int], needed: set[int]):
    """Drop columns of a join input that nobody above needs."""
    keep = sorted(needed)
    if not keep or len(keep) == len(child.schema):
        return child, mapping
    schema = child.schema
    exprs = [ColumnRef(mapping[i], schema[mapping[i]].type, schema[mapping[i]].name) for i in keep]
    return (Project(child, exprs, [schema[mapping[i]].name for i in keep]),
            {old: new for new, old in enumerate(keep)})


def _is_identity(exprs: list[Expr], child: Node) -> bool:
    return (len(exprs) == len(child.schema)
            and all(isinstance(e, ColumnRef) and e.index == i for i, e in enumerate(exprs)))


def _narrowest(scan: Scan) -> int:
    """Position (in scan.schema) of the cheapest column to read for a row count."""
    def width(t: DataType) -> int:
        return 16 if t.is_string else t.numpy_dtype.itemsize if t.numpy_dtype != object else 32
    schema = scan.schema
    return min(range(len(schema)), key=lambda i: (width(schema[i].type), i))
