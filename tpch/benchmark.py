"""The TPC-H benchmark loop: engines interleaved per query, every result
validated, cold and warm times, geometric means, the Markdown table.

Measurements, per query and engine:
  cold   the query's first run in a fresh process (``python -m tpch.peers
         cold``): a new interpreter and a new connection whose setup (views,
         Spark's JVM, DuckDB's table load) is timed apart and not included.
         Files stay in the OS page cache (dropping it needs root): "cold"
         means a cold engine, not a cold disk.
  warm   the minimum of ``repeat`` runs in one long-lived process, after one
         untimed run whose result is validated.
  peak   (``memory=True``, ``pqdb-tpch run --memory``) the peak resident memory
         of a fresh process (``python -m tpch.benchmark memory``) that sets
         the engine up, runs the query once untimed, resets the kernel's peak
         (VmHWM) and runs it again: the warm run's peak, every engine alone in
         its process.  Without it, only pqdb's peak during its warm runs in
         the shared benchmark process is reported.
Validation: the expected answers where they hold (tpch/answers.py), else
DuckDB on the same files.  A failure or a missing engine is reported in the
table and in the JSON, never dropped silently."""

from __future__ import annotations

import decimal
import json
import math
import os
import subprocess
import sys
import time

from engine.memory_probe import PeakMemory, process_status, reset_peak_rss
from tpch import answers
from tpch.peers import ENGINES, DuckDBRunner, pin_threads
from tpch.queries import query_text


def reconcile_decimals(rows: list[tuple], expected_rows: list) -> list[tuple]:
    """Accept a peer's decimal rounded to its own result type's scale: a
    Decimal with fewer digits than the expected value (DataFusion's and
    Spark's decimal avg, Polars' decimal division) counts as equal when it is
    within one unit of its last digit of the expected value (rounded or, as
    DataFusion does, truncated).  Exact values are untouched,
    so pqdb's exact decimal sums are still compared to the last digit."""
    if len(rows) != len(expected_rows):
        return rows
    out = []
    for got, exp in zip(rows, expected_rows):
        if len(got) != len(exp) or not any(isinstance(v, decimal.Decimal) for v in got):
            out.append(got)
            continue
        row = list(got)
        for j, (g, e) in enumerate(zip(got, exp)):
            if not isinstance(g, decimal.Decimal) or e is None or isinstance(e, bool):
                continue
            try:
                e_dec = decimal.Decimal(str(e).strip()) if not isinstance(e, decimal.Decimal) else e
            except decimal.InvalidOperation:
                continue
            exponent = g.as_tuple().exponent
            with decimal.localcontext(decimal.Context(prec=100)):   # 28 digits would round
                close = isinstance(exponent, int) and e_dec.as_tuple().exponent < exponent <= 0 \
                    and abs(g - e_dec) < decimal.Decimal(1).scaleb(exponent)
            if close:
                row[j] = e
        out.append(tuple(row))
    return out


def validate(number: int, sf: float, columns, rows, reference) -> str:
    """'ok', or a short reason why the result is wrong."""
    if number not in answers.ANSWERS_DIFFER:
        expected = answers.load_answer(sf, number)
        if expected is not None:
            rows = reconcile_decimals(rows, expected[1])
    elif reference is not None:
        rows = reconcile_decimals(rows, reference[1])
    try:
        diff = answers.check_against_answers(number, sf, columns, rows)
        if diff is not None:
            return f"WRONG vs answers: {diff}"
        skip = answers.TEXT_COLUMNS_DIFFER.get(number)
        if skip and reference is not None:
            diff = answers.compare_rows(rows, reference[1], columns)
            if diff is not None:
                return f"WRONG vs duckdb: {diff}"
        return "ok"
    except LookupError:
        if reference is None:
            return "unvalidated"
        diff = answers.compare_rows(rows, reference[1], columns)
        return "ok" if diff is None else f"WRONG vs duckdb: {diff}"


def _failure(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"FAILED: {type(e).__name__}: {text[0][:150] if text else ''}"


def cold_in_subprocess(name: str, data_dir: str, threads: int, query: int,
                       timeout: float) -> dict:
    """One cold run in a fresh Python process (tpch.peers cold)."""
    env = dict(os.environ)
    env.update(POLARS_MAX_THREADS=str(threads), RAYON_NUM_THREADS=str(threads))
    cmd = [sys.executable, "-m", "tpch.peers", "cold", name, data_dir, str(threads), str(query)]
    return _json_from_process(cmd, env, timeout)


def memory_run(name: str, data_dir: str, threads: int, query: int, warmup: bool = True) -> dict:
    """In this (fresh) process: set the engine up, run the query once
    untimed (``warmup``), then measure one run: RSS right before it and the
    peak RSS while it ran (VmHWM after a reset; the process-lifetime peak
    when the kernel cannot reset it, ``peak_reset`` False)."""
    import gc
    pin_threads(threads)
    runner = ENGINES[name](data_dir, threads)
    sql = query_text(query)
    if warmup:
        runner.run(sql)
    gc.collect()
    before = process_status().get("VmRSS", 0)
    reset = reset_peak_rss()
    t0 = time.perf_counter()
    _, rows = runner.run(sql)
    seconds = time.perf_counter() - t0
    status = process_status()
    return {"peak_bytes": status.get("VmHWM", 0), "rss_before_bytes": before,
            "rss_after_bytes": status.get("VmRSS", 0), "peak_reset": reset,
            "seconds": seconds, "rows": len(rows), "warmup": warmup}


def peak_in_subprocess(name: str, data_dir: str, threads: int, query: int,
                       warmup: bool = True, timeout: float = 900.0,
                       env: dict | None = None) -> dict:
    """memory_run in a fresh Python process (``python -m tpch.benchmark
    memory``); {"error": ...} when it fails."""
    full_env = dict(os.environ)
    full_env.update(POLARS_MAX_THREADS=str(threads), RAYON_NUM_THREADS=str(threads))
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "tpch.benchmark", "memory", name, data_dir, str(threads),
           str(query), "1" if warmup else "0"]
    return _json_from_process(cmd, full_env, timeout)


def _json_from_process(cmd, env, timeout: float) -> dict:
    """Run cmd; the last JSON line it prints, or {"error": ...}."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


def run_benchmark(sf: float, data_dir: str, engines: list[str], queries: list[int],
                  repeat: int, threads: int, cold: str = "subprocess",
                  cold_timeout: float = 900.0, label: str | None = None, out=sys.stdout,
                  memory: bool = False) -> dict:
    unknown = [n for n in engines if n not in ENGINES]
    if unknown:
        raise SystemExit(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    pin_threads(threads)
    report = {"sf": sf, "data": os.path.abspath(data_dir),
              "label": label or os.path.basename(os.path.abspath(data_dir)),
              "threads": threads, "repeat": repeat, "cold": cold, "memory": memory,
              "engines": {}, "queries": {}}
    runners = {}
    for name in engines:
        t0 = time.perf_counter()
        try:
            runners[name] = ENGINES[name](data_dir, threads)
            info = {"status": "ok", "setup_seconds": time.perf_counter() - t0}
            if runners[name].load_seconds is not None:
                info["load_seconds"] = runners[name].load_seconds
        except Exception as e:      # noqa: BLE001 - a missing peer is reported, not hidden
            info = {"status": f"unavailable: {_failure(e)[8:]}"}
            print(f"engine {name} unavailable: {info['status']}", file=out, flush=True)
        report["engines"][name] = info
    reference_runner = runners.get("duckdb")
    if reference_runner is None:
        try:
            reference_runner = DuckDBRunner(data_dir, threads)
        except Exception:           # noqa: BLE001
            reference_runner = None
    print(_header(engines, memory), file=out, flush=True)
    for q in queries:
        sql = query_text(q)
        try:
            reference = reference_runner.run(sql) if reference_runner is not None else None
        except Exception:           # noqa: BLE001 - then only the answer files validate
            reference = None
        entry = {}
        for name in engines:        # engines interleaved per query
            if name not in runners:
                entry[name] = {"cold": None, "warm": None, "status": report["engines"][name]["status"]}
                continue
            entry[name] = _measure(runners[name], name, q, sql, sf, reference, repeat, threads,
                                   data_dir, cold, cold_timeout)
            if memory:
                _measure_peak(entry[name], name, data_dir, threads, q, cold_timeout)
        report["queries"][q] = entry
        print(_row(q, entry, engines, memory), file=out, flush=True)
    for r in runners.values():
        r.close()
    report["geomean"] = geomeans(report, engines)
    print(_footer(report, engines), file=out, flush=True)
    return report


def _measure(runner, name, q, sql, sf, reference, repeat, threads, data_dir, cold, timeout) -> dict:
    result = {"cold": None, "warm": None, "status": "ok"}
    if cold == "subprocess":
        c = cold_in_subprocess(name, data_dir, threads, q, timeout)
        if "error" in c:
            result["cold_error"] = c["error"]
        else:
            result["cold"] = c["seconds"]
    try:
        cols, rows = runner.run(sql)
        result["status"] = validate(q, sf, cols, rows, reference)
        times = []
        with PeakMemory() as peak:      # peak RSS of this process over the warm runs
            for _ in range(repeat):
                t0 = time.perf_counter()
                runner.run(sql)
                times.append(time.perf_counter() - t0)
        result["warm"] = min(times) if times else None
        if name == "pqdb" and times:    # peers share the process: only pqdb's peak is its own
            result["peak_mib"] = peak.mib
    except Exception as e:          # noqa: BLE001 - reported per query
        result["status"] = _failure(e)
    return result


def _measure_peak(result: dict, name, data_dir, threads, q, timeout) -> None:
    """The engine's own peak (fresh process) replaces the shared-process one."""
    m = peak_in_subprocess(name, data_dir, threads, q, timeout=timeout)
    if "error" in m:
        result.pop("peak_mib", None)
        result["peak_error"] = m["error"]
        return
    result["peak_mib"] = m["peak_bytes"] / (1 << 20)
    result["rss_before_mib"] = m["rss_before_bytes"] / (1 << 20)


def _ok(e: dict) -> bool:
    return e.get("status") == "ok" and bool(e.get("warm"))


def geomeans(report: dict, engines: list[str]) -> dict:
    """Per engine: the geometric mean of warm times over the queries every
    engine answered correctly, and the geometric mean of its ratio to pqdb
    over the queries both answered correctly."""
    qs = report["queries"]
    common = [q for q, e in qs.items() if all(_ok(e.get(n, {})) for n in engines)]
    out = {"queries_in_geomean": common, "engines": {}}
    for name in engines:
        ts = [qs[q][name]["warm"] for q in common]
        g = {"warm": _gm(ts), "ok_queries": sum(_ok(e.get(name, {})) for e in qs.values())}
        if "pqdb" in engines and name != "pqdb":
            pairs = [qs[q][name]["warm"] / qs[q]["pqdb"]["warm"] for q in qs
                     if _ok(qs[q].get(name, {})) and _ok(qs[q].get("pqdb", {}))]
            g["ratio_to_pqdb"] = _gm(pairs)
            g["ratio_queries"] = len(pairs)
        out["engines"][name] = g
    return out


def _gm(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _fmt(t) -> str:
    return "       -" if t is None else f"{t:8.3f}"


def _peak_engines(engines, memory: bool) -> list[str]:
    """Engines with a peak-memory column: all (fresh processes) or pqdb."""
    return list(engines) if memory else [n for n in engines if n == "pqdb"]


def _header(engines, memory: bool = False) -> str:
    mem = "".join(f" {n[:4] + ' peak MiB':>13}" for n in _peak_engines(engines, memory))
    return "query " + " ".join(f"{n[:13]:>13}" for n in engines) + mem + "   (warm s)"


def _row(q, entry, engines, memory: bool = False) -> str:
    parts = [f"Q{q:02d}  "]
    for name in engines:
        e = entry.get(name, {})
        parts.append(f"{_fmt(e.get('warm')):>13}")
    for name in _peak_engines(engines, memory):
        peak = entry.get(name, {}).get("peak_mib")
        parts.append(f"{'-' if peak is None else f'{peak:.0f}':>13}")
    bad = [f"{n}: {e['status']}" for n, e in entry.items() if e["status"] != "ok"]
    bad += [f"{n} cold: {e['cold_error']}" for n, e in entry.items() if e.get("cold_error")]
    bad += [f"{n} peak: {e['peak_error']}" for n, e in entry.items() if e.get("peak_error")]
    return " ".join(parts) + ("   " + "; ".join(bad) if bad else "")


def _footer(report, engines) -> str:
    g = report["geomean"]
    return ("geo   " + " ".join(f"{_fmt(g['engines'][n]['warm']):>13}" for n in engines)
            + " " * (14 * len(_peak_engines(engines, report.get("memory", False))))
            + f"   over {len(g['queries_in_geomean'])} queries all engines answered")


def markdown_report(report: dict) -> str:
    """The Markdown table: warm (cold) seconds per query and engine, the
    ratio engine/pqdb (> 1: pqdb is faster), geometric means, failures."""
    engines = list(report["engines"])
    others = [n for n in engines if n != "pqdb"] if "pqdb" in engines else []
    lines = [f"TPC-H SF{report['sf']:g} on {report['label']} ({report['data']}), "
             f"{report['threads']} threads; warm = min of {report['repeat']} runs, "
             f"cold = first run in a fresh process ({report['cold']}); seconds.", ""]
    memory = bool(report.get("memory"))
    peak_engines = _peak_engines(engines, memory)
    head = ["query"] + [f"{n} warm (cold)" for n in engines] + [f"{n}/pqdb" for n in others]
    head += [f"{n} peak MiB" for n in peak_engines]
    if memory and "pqdb" in engines:
        head += [f"pqdb/{n} peak" for n in others]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    notes = []
    for q, entry in report["queries"].items():
        cells = [f"Q{int(q):02d}"]
        for n in engines:
            e = entry.get(n, {})
            if e.get("status") != "ok":
                cells.append("FAILED" if str(e.get("status", "")).startswith(("FAILED", "unavail"))
                             else "WRONG")
                notes.append(f"Q{int(q):02d} {n}: {e.get('status')}")
                continue
            cold = e.get("cold")
            cells.append(f"{e['warm']:.3f} ({cold:.3f})" if cold is not None else f"{e['warm']:.3f}")
            if e.get("cold_error"):
                notes.append(f"Q{int(q):02d} {n} cold run: {e['cold_error']}")
        p = entry.get("pqdb", {})
        for n in others:
            e = entry.get(n, {})
            cells.append(f"{e['warm'] / p['warm']:.2f}" if _ok(e) and _ok(p) else "-")
        for n in peak_engines:
            peak = entry.get(n, {}).get("peak_mib")
            cells.append(f"{peak:.0f}" if peak is not None else "-")
            if entry.get(n, {}).get("peak_error"):
                notes.append(f"Q{int(q):02d} {n} peak memory run: {entry[n]['peak_error']}")
        if memory and "pqdb" in engines:
            for n in others:
                ratio = _peak_ratio(p, entry.get(n, {}))
                cells.append(f"{ratio:.2f}" if ratio is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    g = report.get("geomean") or geomeans(report, engines)
    cells = ["geomean"] + [_gm_cell(g["engines"][n]["warm"]) for n in engines]
    cells += [_gm_cell(g["engines"][n].get("ratio_to_pqdb"), 2) for n in others]
    for n in peak_engines:
        peaks = [e.get(n, {}).get("peak_mib") for e in report["queries"].values()]
        peaks = [v for v in peaks if v is not None]
        cells.append(f"max {max(peaks):.0f}" if peaks else "-")
    if memory and "pqdb" in engines:
        for n in others:
            ratios = [_peak_ratio(e.get("pqdb", {}), e.get(n, {}))
                      for e in report["queries"].values()]
            ratios = [r for r in ratios if r is not None]
            cells.append(f"max {max(ratios):.2f}" if ratios else "-")
    lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Geometric means of times over the {len(g['queries_in_geomean'])} queries every "
                 "engine answered correctly; ratios over the queries both engines answered.")
    if memory:
        lines.append("peak MiB: peak resident memory of a fresh process per engine and query "
                     "during its second (warm) run, VmHWM; the geomean row shows the maximum.")
    elif peak_engines:
        lines.append("pqdb peak MiB: peak resident memory of the benchmark process during "
                     "pqdb's warm runs.")
    for n, info in report["engines"].items():
        extra = []
        if info.get("setup_seconds") is not None:
            extra.append(f"setup {info['setup_seconds']:.2f} s")
        if info.get("load_seconds") is not None:
            extra.append(f"load into tables {info['load_seconds']:.2f} s (not in query times)")
        ok = g["engines"][n]["ok_queries"]
        lines.append(f"- {n}: {info['status']}, {ok}/{len(report['queries'])} queries correct"
                     + (f"; {', '.join(extra)}" if extra else ""))
    if notes:
        lines += ["", "Failures and wrong results:"] + [f"- {x}" for x in notes]
    return "\n".join(lines) + "\n"


def _peak_ratio(a: dict, b: dict):
    pa, pb = a.get("peak_mib"), b.get("peak_mib")
    return pa / pb if pa and pb else None


def main(argv=None) -> int:
    """``python -m tpch.benchmark memory ENGINE DATA_DIR THREADS QUERY [WARMUP]``:
    memory_run in this fresh process, printed as one JSON line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) not in (5, 6) or argv[0] != "memory":
        print("usage: python -m tpch.benchmark memory ENGINE DATA_DIR THREADS QUERY [WARMUP 1|0]",
              file=sys.stderr)
        return 2
    name, data_dir, threads, query = argv[1], argv[2], int(argv[3]), int(argv[4])
    warmup = len(argv) < 6 or argv[5] != "0"
    try:
        out = memory_run(name, data_dir, threads, query, warmup)
    except Exception as e:      # noqa: BLE001 - reported to the caller, never hidden
        out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)                 # skip slow interpreter teardown


def _gm_cell(v, digits=3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
