"""Operators stream: each output block goes through the rest of the
pipeline before the operator makes the next, so one probe block of a join
with a large fan-out never becomes a list of its output blocks; and a LIMIT
stops a morsel whose operator would go on emitting forever."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.block import Block, Vector
from engine.operators.collect import CollectSink
from engine.operators.limit import LimitSink
from engine.pipeline import BlockSource, Operator, Pipeline
from engine.scheduler import run_pipeline
from planner import types as T


class _FanOut(Operator):
    """Each input block becomes ``copies`` blocks (None: without end);
    counts the blocks made and not yet consumed."""

    def __init__(self, copies):
        self.copies = copies
        self.in_flight = 0
        self.most_in_flight = 0
        self.made = 0

    def process(self, block):
        counter = itertools.count() if self.copies is None else range(self.copies)
        for _ in counter:
            self.in_flight += 1
            self.made += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            yield block


class _Counting(CollectSink):
    def __init__(self, op):
        super().__init__([T.BIGINT])
        self.op = op

    def consume(self, local, block, seq):
        self.op.in_flight -= 1
        super().consume(local, block, seq)


def _source(n=1000, rows=100):
    return BlockSource(Block([Vector(T.BIGINT, np.arange(n, dtype=np.int64))], n), rows)


def test_output_blocks_go_on_one_at_a_time():
    op = _FanOut(50)
    out = run_pipeline(Pipeline(_source(), [op], _Counting(op)), 1)
    assert out.n == 1000 * 50
    assert op.most_in_flight == 1
    # in input order: each input block's copies together
    assert out.columns[0].data[:200].tolist() == list(range(100)) * 2


@pytest.mark.parametrize("threads", [1, 2])
def test_limit_stops_an_endless_operator(threads):
    op = _FanOut(None)
    sink = LimitSink([T.BIGINT], 250, 10)
    out = run_pipeline(Pipeline(_source(), [op], sink), threads)
    assert out.columns[0].data.tolist() == (list(range(100)) * 3)[10:260]
    assert op.made < 50
