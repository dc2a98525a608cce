"""The CI budget of the differential fuzzer: 800-1,200 random queries on
pqdb and DuckDB per layout (tables.LAYOUTS), a new seed each run: the
files as DuckDB writes them (one row group); split into files of row
groups of a few rows and pages of fewer (footer statistics, the page
index, bloom filters and synopses skip data there) that pqdb reads over
http from a server on 127.0.0.1; hive-partitioned directories; the split
files under modular encryption.  The seed is printed (and is in the
failure message); PQDB_FUZZ_SEED=N replays it (PQDB_FUZZ_COUNT sets the
count), and ``python -m tests.fuzz --seed N --count M --layout L`` runs
more."""

from __future__ import annotations

import os
import random

import pytest

# queries per layout: DuckDB's own files get the most
COUNTS = {"one": 1200, "split": 800, "hive": 800, "encrypted": 800}
COUNT = os.environ.get("PQDB_FUZZ_COUNT")
BUDGET_S = float(os.environ.get("PQDB_FUZZ_BUDGET_S", "110"))


@pytest.fixture(scope="module", params=list(COUNTS))
def fuzz_cons(request, tpch_sf001, tmp_path_factory):
    from tests.fuzz.setup import connect
    from tests.http_server import HttpServer
    server = HttpServer().start() if request.param == "split" else None
    pq, duck, schema = connect(tmp_path_factory.mktemp("fuzz"), tpch_dir=tpch_sf001,
                               layout=request.param, server=server)
    yield pq, duck, schema, request.param
    pq.close()
    duck.close()
    if server is not None:
        server.stop()


def test_differential_fuzz(fuzz_cons, capsys):
    from tests.fuzz.runner import run
    pq, duck, schema, layout = fuzz_cons
    env = os.environ.get("PQDB_FUZZ_SEED")
    seed = int(env) if env else random.SystemRandom().randrange(1 << 31)
    with capsys.disabled():
        print(f"\n[fuzz] seed {seed} (replay: PQDB_FUZZ_SEED={seed})", flush=True)
    count = int(COUNT) if COUNT else COUNTS[layout]
    stats = run(pq, duck, schema, seed, count, budget_s=BUDGET_S, stop_after=10)
    with capsys.disabled():
        print(f"[fuzz] {stats.summary()}", flush=True)
    assert not stats.failures, (f"seed {seed}: {len(stats.failures)} failures\n\n"
                                + "\n\n".join(str(f) for f in stats.failures))
    assert stats.compared >= stats.queries // 2, stats.summary()
    if layout in ("split", "encrypted"):         # the layouts exist to skip data: they must
        assert stats.skipped["row_groups_skipped"] > 0, stats.summary()
