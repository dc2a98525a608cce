"""Rule: filters on hive partition columns drop whole files.

A Scan with ``partitions`` (engine/hive.py) knows each file's value of every
partition column.  A pushed-down conjunct that reads partition columns only
is folded per file with the columns replaced by the file's values: a file
where it is FALSE or NULL is dropped before anything of it is read.  The
conjunct is then TRUE for every file left, so it leaves the scan's filters.
A conjunct that also reads file columns stays (the scan evaluates it on the
partition columns' constant vectors).  The scan's row count scales with the
files kept and its statistics narrow to them (the catalog opens a hive
table's files past the first only when they are read: engine/catalog.py).
It runs before join ordering, which asks the scans' statistics, and again
at the end for filters later rules push down.
"""

from __future__ import annotations

from planner.expressions import Call, ColumnRef, Expr, Literal, column_indexes
from planner.folding import fold
from planner.logical import Node, Scan


def partition_pruning(node: Node) -> Node:
    if isinstance(node, Scan):
        return _prune_scan(node) if node.partitions and node.filters else node
    children = node.children
    if not children:
        return node
    new = [partition_pruning(c) for c in children]
    if all(a is b for a, b in zip(new, children)):
        return node
    return node.replace_children(new)


def _prune_scan(scan: Scan) -> Scan:
    schema = scan.schema
    keys = set()
    for values in scan.partitions.values():
        keys = set(values)
        break
    part_cols = {i for i, f in enumerate(schema) if f.name in keys}
    files, kept_filters, decided = list(scan.files), [], False
    for f in scan.filters:
        cols = column_indexes(f)
        if not cols or not cols <= part_cols:
            kept_filters.append(f)
            continue
        survivors = []
        for path in files:
            values = scan.partitions.get(path, {})
            folded = fold(_substitute(f, lambda i: Literal(values.get(schema[i].name),
                                                           schema[i].type)))
            if isinstance(folded, Literal):
                if folded.value is True:
                    survivors.append(path)
                continue
            survivors.append(path)
            break
        else:
            files, decided = survivors, True
            continue
        kept_filters.append(f)          # not decidable for some file: the scan applies it
    if not decided:
        return scan
    kept = set(files)
    partitions = {p: v for p, v in scan.partitions.items() if p in kept}
    # the rows and statistics of the files kept: statistics that can narrow
    # (engine/statistics.py's DeferredStatistics, made before the files
    # were opened) then open only those; the footer count scales
    statistics = scan.statistics
    narrow = getattr(statistics, "for_files", None)
    if narrow is not None:
        statistics = narrow(files) if files else None
    rows = scan.row_count * len(files) // len(scan.files) if scan.files else 0
    return Scan(files, scan.table_columns, scan.columns, kept_filters, rows,
                scan.alias, statistics, partitions)


def _substitute(expr: Expr, literal) -> Expr:
    if isinstance(expr, ColumnRef):
        return literal(expr.index)
    if isinstance(expr, Call):
        return Call(expr.func, [_substitute(a, literal) for a in expr.args], expr.type)
    return expr
