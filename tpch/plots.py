"""PNG plots of runner reports (matplotlib, headless).

    speedup_plot   per query, pqdb's speedup over each engine on a log scale
                   (t_engine / t_pqdb, warm): the paper's Fig. 10
    layout_plot    per query, one engine's warm time on each writer layout
                   (one report per layout)"""

from __future__ import annotations


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _ok(e: dict) -> bool:
    return e.get("status") == "ok" and bool(e.get("warm"))


def speedup_plot(report: dict, path: str) -> str:
    """Grouped bars: for every query and peer, t_peer / t_pqdb (log scale);
    bars above 1 mean pqdb is faster.  Failed queries have no bar and are
    marked 'x' on the axis."""
    plt = _pyplot()
    engines = [n for n in report["engines"] if n != "pqdb"]
    queries = list(report["queries"])
    fig, ax = plt.subplots(figsize=(min(16, max(8, 0.12 * len(queries) * max(len(engines), 1) + 3)), 4.5))
    width = 0.8 / max(len(engines), 1)
    for i, name in enumerate(engines):
        xs, ys = [], []
        for j, q in enumerate(queries):
            e, p = report["queries"][q].get(name, {}), report["queries"][q].get("pqdb", {})
            if _ok(e) and _ok(p):
                xs.append(j + (i - (len(engines) - 1) / 2) * width)
                ys.append(e["warm"] / p["warm"])
        # bars grow from 1 (equal speed): up when pqdb is faster, down when slower
        ax.bar(xs, [y - 1.0 for y in ys], width=width, label=name, bottom=1.0)
        missing = [j for j, q in enumerate(queries)
                   if not (_ok(report["queries"][q].get(name, {}))
                           and _ok(report["queries"][q].get("pqdb", {})))]
        if missing:
            ax.plot([j + (i - (len(engines) - 1) / 2) * width for j in missing],
                    [1.0] * len(missing), "x", color="black", markersize=5)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(queries)))
    ax.set_xticklabels([f"Q{int(q)}" for q in queries], rotation=0, fontsize=8)
    ax.set_ylabel("speedup of pqdb (t_engine / t_pqdb, log)")
    ax.set_title(f"TPC-H SF{report['sf']:g}, {report['label']}, {report['threads']} threads "
                 "(x: no valid result)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def layout_plot(reports: list[dict], path: str, engine: str = "pqdb") -> str:
    """Grouped bars: per query, ``engine``'s warm time on each layout
    (report label = writer), log scale."""
    plt = _pyplot()
    queries = []
    for r in reports:
        for q in r["queries"]:
            if q not in queries:
                queries.append(q)
    fig, ax = plt.subplots(figsize=(min(16, max(8, 0.12 * len(queries) * len(reports) + 3)), 4.5))
    width = 0.8 / max(len(reports), 1)
    for i, r in enumerate(reports):
        xs, ys = [], []
        for j, q in enumerate(queries):
            e = r["queries"].get(q, {}).get(engine, {})
            if _ok(e):
                xs.append(j + (i - (len(reports) - 1) / 2) * width)
                ys.append(e["warm"])
        ax.bar(xs, ys, width=width, label=r["label"])
    ax.set_yscale("log")
    ax.set_xticks(range(len(queries)))
    ax.set_xticklabels([f"Q{int(q)}" for q in queries], fontsize=8)
    ax.set_ylabel(f"{engine} warm time (s, log)")
    sfs = sorted({f"{r['sf']:g}" for r in reports})
    ax.set_title(f"TPC-H SF{'/'.join(sfs)}: {engine} by writer layout")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
