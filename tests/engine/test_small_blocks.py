"""SmallBlocks: a worker gathers the small blocks of a selective scan into
batches for sinks that take them (engine/pipeline.py)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.block import Block, Vector
from engine.context import MemoryTracker
from engine.pipeline import BATCH_ROWS, Operator, Pipeline, Sink, SmallBlocks, Source
from engine.scheduler import run_pipeline
from planner import types as T
from tests.connections import pqdb_with_tpch
from tpch.queries import query_text


def _block(start: int, n: int) -> Block:
    return Block([Vector(T.BIGINT, np.arange(start, start + n, dtype=np.int64))], n)


def test_batches_keep_every_row_in_order_and_hold_their_bytes():
    mem = MemoryTracker(1 << 30)
    small = SmallBlocks(mem)
    out, start, step = [], 0, BATCH_ROWS // 5 + 1
    for _ in range(12):
        got = small.add(_block(start, step))
        start += step
        if got is not None:
            assert got.n >= BATCH_ROWS
            out.append(got)
            assert mem.used == 0                 # a batch's bytes are released when it leaves
        else:
            assert mem.used == 8 * small.rows    # waiting rows count against the tracker
    rest = small.take()
    out.append(rest)
    assert mem.used == 0 and small.take() is None
    values = np.concatenate([b.columns[0].data for b in out])
    assert np.array_equal(values, np.arange(start))


def test_a_block_without_room_to_wait_goes_on_alone():
    mem = MemoryTracker(1000)
    small = SmallBlocks(mem)
    b = _block(0, 500)                               # 4000 bytes: no room
    assert small.add(b) is b and mem.used == 0 and small.take() is None


@pytest.mark.parametrize("threads", [1, 2])
def test_selective_scans_answer_the_same_batched(tpch_sf001, threads):
    """Q6, Q14 and Q19 leave a few rows per morsel, and the joins of Q2,
    Q11, Q17 and Q20 a few rows per block; with tiny blocks every block is
    batched.  The answers equal the ones pushed block by block."""
    import engine.pipeline as P
    con = pqdb_with_tpch(tpch_sf001, threads=threads, block_rows=1000)
    for q in (1, 2, 6, 11, 14, 17, 19, 20):
        batched = con.sql(query_text(q)).fetchall()
        old = P.BATCH_ROWS
        P.BATCH_ROWS = 0                             # nothing waits
        try:
            alone = con.sql(query_text(q)).fetchall()
        finally:
            P.BATCH_ROWS = old
        assert batched == alone, q


class _Source(Source):
    """``count`` morsels of ``rows`` rows each (values m * rows ...); morsel
    ``bad`` raises.  Its reservations go to ``mem``."""

    def __init__(self, mem, count: int, rows: int, bad: int = -1):
        self.ctx = type("Ctx", (), {"memory": mem})()
        self.count, self.rows, self.bad = count, rows, bad

    def morsels(self):
        return list(range(self.count))

    def blocks(self, m):
        if m == self.bad:
            raise RuntimeError("a bad morsel")
        yield _block(m * self.rows, self.rows)


class _Collect(Sink):
    """Takes batches; keeps every block it is given, per worker."""
    takes_batches = True

    def make_local(self):
        return []

    def consume(self, local, block, seq):
        local.append(block)

    def merge(self, locals_):
        return locals_


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_run_releases_the_waiting_blocks(threads):
    mem = MemoryTracker(1 << 30)
    with pytest.raises(RuntimeError):
        run_pipeline(Pipeline(_Source(mem, 6, 10, bad=4), [], _Collect()), threads)
    assert mem.used == 0
    got = run_pipeline(Pipeline(_Source(mem, 6, 10), [], _Collect()), threads)
    rows = sorted(int(v) for loc in got for b in loc for v in b.columns[0].data)
    assert rows == list(range(60)) and mem.used == 0


class _KeepTenth(Operator):
    """Keeps the rows whose value ends in 3; records its input sizes."""

    def __init__(self):
        self.seen = []

    def process(self, block):
        self.seen.append(block.n)
        v = block.columns[0].data
        keep = v % 10 == 3
        return [Block([Vector(T.BIGINT, v[keep])], int(keep.sum()))]


@pytest.mark.parametrize("threads", [1, 2])
def test_small_outputs_of_an_operator_wait_in_front_of_the_next(threads):
    """A selective operator's small outputs are gathered before the next
    operator and the sink: fewer, larger blocks reach them, every row
    arrives once, and nothing stays reserved."""
    mem = MemoryTracker(1 << 30)
    op = _KeepTenth()
    got = run_pipeline(Pipeline(_Source(mem, 40, 5000), [op, _KeepTenth()], _Collect()),
                       threads)
    sizes = [b.n for loc in got for b in loc]
    rows = np.sort(np.concatenate([b.columns[0].data for loc in got for b in loc]))
    assert np.array_equal(rows, np.arange(3, 200000, 10))
    assert mem.used == 0
    # the source's 5000-row blocks waited for each other (batches of 20000)
    # before the first operator, its 2000-row outputs before the second
    assert all(n >= BATCH_ROWS for n in op.seen[:-threads])
    assert len(sizes) <= 2 * threads
