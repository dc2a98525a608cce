"""Fixture tests of the optimizer rules: SQL in, plan text out.

One file per rule, ``tests/planner/fixtures/<rule>.sql``, named after the
rule function in ``planner.optimizer.RULES``.  Records are separated by blank
lines, the way sqlglot's tests/fixtures/optimizer/*.sql are:

    # title: a branch that is only the shared conjunct makes the OR true
    # fires: yes
    SELECT o_id FROM 'orders.parquet'
    WHERE o_cust = 7 OR (o_cust = 7 AND o_status = 's1');
    Project o_id  (~1000 rows)
      Filter (o_cust = 7)  (~1000 rows)
        Scan orders [o_id, o_cust, o_date, o_status] files=1  (~10000 rows)

- ``# title:`` names the record (unique within its file; the test id).
- ``# fires: yes|no`` says whether the rule changes the plan it is given;
  the test checks it (structural fingerprints before and after the rule),
  so the records where a rule must NOT fire say so and stay honest.
- ``# run: N`` (optional, default 1): the rule's N-th run in RULES, for the
  rules that run more than once (or_factoring, predicate_pushdown,
  join_extraction).
- any other ``#`` line is a comment for the reader; a block of only such
  lines (the file's header) is not a record.
- the SQL runs to the first line ending in ``;``; the rest of the record is
  the expected text of ``planner.explain.explain``.

What the plan text is: the plan after RULES up to and including that run
of the rule, RULES[i]; that is, the rule applied alone to the plan the
rules before it make of the bound plan (``optimize(bound, RULES[:i])``).
So the records of a late rule also change when an earlier rule does;
projection_pruning is the last, its texts are the final plans.

The tables are small Parquet files this module writes (SHOP below).  The
plan text names tables by alias, never by path; rows are the planner's
estimates, which depend only on the files' row counts.

A mismatch fails with a unified diff.  ``PQDB_UPDATE_FIXTURES=1`` rewrites
the expected texts (and only those) from the current planner instead;
read the diff of the fixture files before committing it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner.explain import explain
from planner.fingerprint import fingerprint
from planner.optimizer import RULES, bind_only, optimize

from .helpers import FakeCatalog

FIXTURES = Path(__file__).parent / "fixtures"
UPDATE = os.environ.get("PQDB_UPDATE_FIXTURES") == "1"

# table -> rows; the columns are in _shop_tables.  The planner guesses that a
# table's first column is its key.
SHOP = {"regions": 5, "products": 200, "customers": 1_000, "orders": 10_000,
        "items": 40_000}


def _shop_tables() -> dict[str, pa.Table]:
    def ids(n, mod=None):
        a = np.arange(n, dtype=np.int64)
        return pa.array(a % mod if mod else a)

    def reals(n):
        return pa.array(np.arange(n, dtype=np.float64))

    def texts(prefix, n, mod=None):
        return pa.array([f"{prefix}{i % mod if mod else i}" for i in range(n)])

    n = SHOP
    day0 = dt.date(2024, 1, 1)
    return {
        "regions": pa.table({"r_id": ids(n["regions"]), "r_name": texts("r", n["regions"])}),
        "products": pa.table({"p_id": ids(n["products"]), "p_name": texts("p", n["products"]),
                              "p_category": texts("k", n["products"], 10),
                              "p_price": reals(n["products"])}),
        "customers": pa.table({"c_id": ids(n["customers"]), "c_name": texts("c", n["customers"]),
                               "c_region": ids(n["customers"], n["regions"]),
                               "c_balance": reals(n["customers"])}),
        "orders": pa.table({"o_id": ids(n["orders"]),
                            "o_cust": ids(n["orders"], n["customers"]),
                            "o_date": pa.array([day0 + dt.timedelta(days=i % 365)
                                                for i in range(n["orders"])], pa.date32()),
                            "o_status": texts("s", n["orders"], 3)}),
        "items": pa.table({"i_id": ids(n["items"]), "i_order": ids(n["items"], n["orders"]),
                           "i_product": ids(n["items"], n["products"]),
                           "i_qty": ids(n["items"], 10), "i_price": reals(n["items"])}),
    }


class ShopCatalog(FakeCatalog):
    """FakeCatalog resolving 'orders.parquet' etc. in the fixture directory."""

    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def table_info(self, spec: str, hive_partitioning: bool | None = None):
        info = super().table_info(os.path.join(self.root, spec))
        from engine.hive import detect, partition_table
        if hive_partitioning is not False and detect(info.files):     # sales/year=*/...
            pcols, values = partition_table(info.files, [n for n, _ in info.columns])
            info.columns = info.columns + pcols
            info.partitions = values
        return info


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> ShopCatalog:
    root = tmp_path_factory.mktemp("rule_fixtures")
    for name, table in _shop_tables().items():
        pq.write_table(table, root / f"{name}.parquet")
    # a hive-partitioned table: sales/year=Y/region=R/part.parquet
    for year in (2023, 2024):
        for region in ("eu", "us"):
            d = root / "sales" / f"year={year}" / f"region={region}"
            d.mkdir(parents=True)
            pq.write_table(pa.table({"s_id": pa.array(np.arange(100, dtype=np.int64)),
                                     "s_amount": pa.array(np.arange(100, dtype=np.float64))}),
                           d / "part.parquet")
    return ShopCatalog(str(root))


# ---- the fixture files ------------------------------------------------------------

@dataclass
class Record:
    rule: str
    title: str
    fires: bool
    run: int
    head: list[str]         # the # lines, as written
    sql: list[str]
    expected: list[str]
    line: int               # of the record's first line


_KEY = re.compile(r"#\s*(title|fires|run):\s*(.*?)\s*$")


def _blocks(text: str):
    """(first line number, lines) of each blank-line separated block."""
    block, start = [], 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if not block:
                start = n
            block.append(line)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def _record(rule: str, path: Path, start: int, lines: list[str]) -> Record:
    head = [ln for ln in lines if ln.startswith("#")]
    body = lines[len(head):]
    if lines[:len(head)] != head:
        raise ValueError(f"{path}:{start}: # lines must come first")
    keys = {m.group(1): m.group(2) for ln in head if (m := _KEY.match(ln))}
    end = next((i for i, ln in enumerate(body) if ln.rstrip().endswith(";")), None)
    if "title" not in keys or keys.get("fires") not in ("yes", "no") or end is None:
        raise ValueError(f"{path}:{start}: a record needs '# title:', '# fires: yes|no' "
                         "and SQL ending in ';'")
    return Record(rule, keys["title"], keys["fires"] == "yes", int(keys.get("run", 1)), head,
                  body[:end + 1], body[end + 1:], start)


def load(path: Path) -> tuple[list, list[Record]]:
    """The file's blocks (header comment lists and Records, in order) and its records."""
    rule = path.stem
    blocks: list = []
    for start, lines in _blocks(path.read_text()):
        if all(ln.startswith("#") for ln in lines) and not any(
                _KEY.match(ln) for ln in lines):
            blocks.append(lines)
        else:
            blocks.append(_record(rule, path, start, lines))
    records = [b for b in blocks if isinstance(b, Record)]
    titles = [r.title for r in records]
    dup = {t for t in titles if titles.count(t) > 1}
    if dup:
        raise ValueError(f"{path}: duplicate titles {sorted(dup)}")
    return blocks, records


def dump(blocks: list) -> str:
    out = []
    for b in blocks:
        out.append("\n".join(b if isinstance(b, list) else b.head + b.sql + b.expected))
    return "\n\n".join(out) + "\n"


def _all_records() -> list[Record]:
    return [r for path in sorted(FIXTURES.glob("*.sql")) for r in load(path)[1]]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


RECORDS = _all_records()


# ---- the tests ----------------------------------------------------------------------

def _position(rule: str, run: int) -> int:
    """Index in RULES of the rule's run-th run."""
    at = [i for i, f in enumerate(RULES) if f.__name__ == rule]
    if not 1 <= run <= len(at):
        raise ValueError(f"{rule} runs {len(at)} time(s) in RULES, not run {run}")
    return at[run - 1]


def test_fixture_files_are_the_rules():
    assert sorted(p.stem for p in FIXTURES.glob("*.sql")) == sorted({f.__name__ for f in RULES})


@pytest.mark.parametrize("record", RECORDS, ids=[f"{r.rule}-{_slug(r.title)}" for r in RECORDS])
def test_rule_fixture(record: Record, shop):
    i = _position(record.rule, record.run)
    before = optimize(bind_only("\n".join(record.sql), shop), RULES[:i])
    after = RULES[i](before)
    actual = explain(after).splitlines()
    fired = fingerprint(before) != fingerprint(after)
    where = f"{FIXTURES / record.rule}.sql:{record.line} ({record.title})"
    if UPDATE and actual != record.expected:
        path = FIXTURES / f"{record.rule}.sql"
        blocks, _ = load(path)
        for b in blocks:
            if isinstance(b, Record) and b.title == record.title:
                b.expected = actual
        path.write_text(dump(blocks))
    elif actual != record.expected:
        diff = "\n".join(difflib.unified_diff(record.expected, actual, "expected", "actual",
                                              lineterm=""))
        pytest.fail(f"{where}: the plan differs (PQDB_UPDATE_FIXTURES=1 rewrites the file):\n"
                    f"{diff}", pytrace=False)
    if fired != record.fires:
        pytest.fail(f"{where}: the rule {'changed' if fired else 'did not change'} the plan, "
                    f"the record says fires: {'yes' if record.fires else 'no'}", pytrace=False)


def test_load_and_dump_round_trip():
    for path in sorted(FIXTURES.glob("*.sql")):
        assert dump(load(path)[0]) == path.read_text(), path
