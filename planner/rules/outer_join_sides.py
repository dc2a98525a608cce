"""Rule: a left join whose right (NULL-padded) input is much bigger than
its left becomes a right join with the inputs swapped, so the engine builds
its hash table on the small preserved side and streams the big one through
it, instead of building on the big side:

    Join left c_custkey = o_custkey            Project (customer, orders columns)
      Scan customer       (1.5M)          ->     Join right o_custkey = c_custkey
      Scan orders         (15M)                    Scan orders
                                                   Scan customer

(TPC-H Q13 at SF10: the build side goes from 15M orders to 1.5M
customers.)  The engine's right join marks the build rows that found a
partner and adds the others, NULL-padded, after the probe; the Project on
top restores the left join's column order.  Only joins with equality keys
(a keyless left join is a nested loop either way), and only when the right
input is estimated at least SWAP_FACTOR times the left: the right join
materializes its result, which a streaming left join does not.
"""

from __future__ import annotations

from planner.cardinality import estimate
from planner.expressions import ColumnRef, remap_columns
from planner.logical import Join, Node, Project

SWAP_FACTOR = 4.0


def outer_join_sides(node: Node) -> Node:
    """The rule: every left join of the plan, bottom-up."""
    children = [outer_join_sides(c) for c in node.children]
    if children:
        node = node.replace_children(children)
    if not (isinstance(node, Join) and node.kind == "left" and node.left_keys):
        return node
    if estimate(node.right) < SWAP_FACTOR * estimate(node.left):
        return node
    nl, nr = len(node.left.schema), len(node.right.schema)
    mapping = {i: nr + i for i in range(nl)}
    mapping.update({nl + j: j for j in range(nr)})
    residual = None if node.residual is None else remap_columns(node.residual, mapping)
    swapped = Join(node.right, node.left, "right", list(node.right_keys), list(node.left_keys),
                   residual)
    fields = node.schema
    exprs = [ColumnRef(mapping[i], f.type, f.name) for i, f in enumerate(fields)]
    return Project(swapped, exprs, [f.name for f in fields])
