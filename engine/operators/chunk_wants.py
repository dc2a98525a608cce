"""What a query's scans will read, told to the buffer manager at the
query's start (issue 23): kept cached chunks are not evicted for the
query's own earlier misses, nor for its prefetches of remote chunks
(issue 21: a remote scan larger than the cache refetched all of it).
Light: no kernel import (``SELECT 1`` and queries of constants load no
numba)."""

from __future__ import annotations

from engine.errors import PqdbError
from planner.logical import Scan


def want_plan_chunks(plan, ctx) -> None:
    """At a query's start, mark the chunks every scan of ``plan`` may read
    wanted in the buffer manager (ParquetFile.want_chunks,
    BufferManager.want): the misses of the query's first scans then do not
    evict the cached chunks its later scans will hit (SF10 Q20's part and
    partsupp scans around its lineitem scan), nor does a remote scan's
    read-ahead evict the chunks it is about to read.  Row groups pruning
    will drop are marked too (they are only kept a little longer).  A file
    that does not open is skipped here: its scan raises the error."""
    stack = [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if not isinstance(node, Scan):
            continue
        fields = [f.name for f in node.schema]
        ctx.open_together(node.files)
        for path in node.files:
            try:
                pf = ctx.open_file(path)
            except PqdbError:
                continue
            want = getattr(pf, "want_chunks", None)
            if want is not None:
                want(fields)
