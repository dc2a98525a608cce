"""pqdb-tpch run end to end at SF 0.01: engines interleaved, results
validated, cold and warm times, JSON + Markdown + PNG; failures reported."""

from __future__ import annotations

import decimal
import json

import pytest

from tpch import peers
from tpch.benchmark import markdown_report, reconcile_decimals, run_benchmark, validate
from tpch.runner import main

PEERS = "pqdb,duckdb,polars,datafusion"


def _have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


@pytest.fixture(scope="module")
def report_dir(tpch_sf001, tmp_path_factory):
    if not (_have("polars") and _have("datafusion") and _have("matplotlib")):
        pytest.skip("polars, datafusion and matplotlib are needed (pip install -e '.[dev]')")
    out = tmp_path_factory.mktemp("runner") / "sf001"
    code = main(["run", "--sf", "0.01", "--data", tpch_sf001, "--engines", PEERS,
                 "--queries", "1,6", "--repeat", "2", "--threads", "2", "--out", str(out),
                 "--label", "tpchgen"])
    assert code == 0
    return out


def test_runner_writes_json_markdown_png(report_dir):
    report = json.loads((report_dir / "report.json").read_text())
    assert list(report["engines"]) == PEERS.split(",")
    assert report["threads"] == 2 and report["label"] == "tpchgen"
    for q in ("1", "6"):
        for name in PEERS.split(","):
            e = report["queries"][q][name]
            assert e["status"] == "ok", (q, name, e)
            assert e["warm"] > 0, (q, name, e)
            assert e["cold"] is not None and e["cold"] > 0, (q, name, e)
        assert report["queries"][q]["pqdb"]["peak_mib"] > 0
    g = report["geomean"]
    assert g["queries_in_geomean"] == [1, 6]
    assert g["engines"]["duckdb"]["ratio_to_pqdb"] > 0
    md = (report_dir / "report.md").read_text()
    assert "| Q01 |" in md and "| geomean |" in md and "duckdb/pqdb" in md
    assert "pqdb peak MiB" in md
    png = (report_dir / "speedup.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_by_layout(report_dir, tmp_path):
    report = json.loads((report_dir / "report.json").read_text())
    report["label"] = "other-layout"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(report))
    png = tmp_path / "layouts.png"
    assert main(["plot", str(report_dir / "report.json"), str(other), "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


class _Broken(peers.EngineRunner):
    name = "broken"

    def __init__(self, data_dir, threads):
        raise RuntimeError("not installed here")


class _Wrong(peers.DuckDBRunner):
    name = "wrong"

    def run(self, sql):
        cols, rows = super().run(sql)
        return cols, rows[:-1]


class _Crashing(peers.DuckDBRunner):
    name = "crashing"

    def run(self, sql):
        raise ValueError("boom")


def test_failures_are_reported_not_hidden(tpch_sf001, monkeypatch, capsys):
    for cls in (_Broken, _Wrong, _Crashing):
        monkeypatch.setitem(peers.ENGINES, cls.name, cls)
    engines = ["pqdb", "broken", "wrong", "crashing"]
    report = run_benchmark(0.01, tpch_sf001, engines, [6, 1], repeat=1, threads=2, cold="none")
    q1 = report["queries"][1]
    assert q1["pqdb"]["status"] == "ok"
    assert q1["broken"]["status"].startswith("unavailable") and "not installed" in q1["broken"]["status"]
    assert q1["wrong"]["status"].startswith("WRONG")
    assert q1["crashing"]["status"].startswith("FAILED") and "boom" in q1["crashing"]["status"]
    assert report["geomean"]["queries_in_geomean"] == []
    md = markdown_report(report)
    assert "Failures and wrong results" in md and "| Q01 | " in md
    assert "broken: unavailable" in md


def test_duckdb_native_reports_load_time(tpch_sf001):
    report = run_benchmark(0.01, tpch_sf001, ["pqdb", "duckdb-native"], [6], repeat=1,
                           threads=2, cold="none")
    info = report["engines"]["duckdb-native"]
    assert info["status"] == "ok" and info["load_seconds"] > 0
    assert report["queries"][6]["duckdb-native"]["status"] == "ok"
    assert "load into tables" in markdown_report(report)
    assert report["queries"][6]["pqdb"]["peak_mib"] > 0
    assert "peak_mib" not in report["queries"][6]["duckdb-native"]
    assert "pqdb peak MiB" in markdown_report(report)


def test_unknown_engine_is_an_error(tpch_sf001):
    with pytest.raises(SystemExit, match="unknown engine"):
        run_benchmark(0.01, tpch_sf001, ["pqdb", "hyper"], [6], repeat=1, threads=2)


def test_decimal_rounding_of_peers_is_accepted_exactness_is_kept():
    D = decimal.Decimal
    assert reconcile_decimals([(D("25.575154"),)], [("25.575154611454693",)]) == [("25.575154611454693",)]
    assert reconcile_decimals([(D("25.575155"),)], [("25.575154611454693",)]) == [("25.575154611454693",)]
    assert reconcile_decimals([(D("25.575150"),)], [("25.575154611454693",)]) == [(D("25.575150"),)]
    # a value at the expected scale is compared exactly, never rounded away
    assert reconcile_decimals([(D("100.01"),)], [("100.02",)]) == [(D("100.01"),)]
    assert validate(6, 0.01, ["revenue"], [(D("1.00"),)], None).startswith("WRONG")


def test_answer_files_with_quoted_fields(tmp_path, monkeypatch):
    """The SF10 answer files quote c_name / s_name ("Customer#001237537");
    read as plain '|'-split text, Q10, Q18 and Q21 compared WRONG for
    every engine."""
    from tpch.answers import compare_rows, load_answer
    (tmp_path / "sf10").mkdir()
    (tmp_path / "sf10" / "q10.csv").write_text(
        'c_custkey|c_name|revenue\n1237537|"Customer#001237537"|884989.6657\n'
        '7|"a|b ""x"""|1.5\n')
    monkeypatch.setenv("PQDB_TPCH_ANSWERS", str(tmp_path))
    header, rows = load_answer(10, 10)
    assert header == ["c_custkey", "c_name", "revenue"]
    assert rows == [["1237537", "Customer#001237537", "884989.6657"], ["7", 'a|b "x"', "1.5"]]
    assert compare_rows([(1237537, "Customer#001237537", 884989.6657), (7, 'a|b "x"', 1.5)],
                        rows, header) is None
