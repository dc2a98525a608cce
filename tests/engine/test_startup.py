"""Start-up (issue 23): ``import engine`` and queries without kernels load no
numba; a cold kernel cache is announced once; numba's cache falls back to
the user cache directory when the package directory cannot be written.
Each case runs in a fresh interpreter (the test process has numba loaded)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def run_python(code: str, env_extra: dict | None = None, cwd=REPO) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PQDB_DEBUG", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


def loaded_after(statements: str) -> dict:
    code = ("import sys, json\n" + statements + "\n"
            "mods = sorted(sys.modules)\n"
            "print(json.dumps({'numba': [m for m in mods if m.split('.')[0] in "
            "('numba', 'llvmlite')], 'kernels': [m for m in mods if m.startswith("
            "('engine.kernels', 'scan.encodings.', 'engine.expr.numeric_kernels'))]}))")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_engine_loads_no_numba():
    got = loaded_after("import engine")
    assert got == {"numba": [], "kernels": []}


def test_queries_without_kernels_load_no_numba():
    got = loaded_after(
        "import engine\n"
        "con = engine.connect()\n"
        "assert con.sql('SELECT 1').fetchall() == [(1,)]\n"
        "assert con.sql(\"SELECT 1 + 2 AS x, 'a' AS s, NULL IS NULL\").fetchall() "
        "== [(3, 'a', True)]\n"
        "con.sql('CREATE VIEW v AS SELECT 42 AS answer')\n"
        "assert con.sql('SELECT * FROM v').fetchall() == [(42,)]\n"
        "con.sql('SET threads = 1')")
    assert got == {"numba": [], "kernels": []}


def test_count_of_a_file_reads_its_footer_only(tmp_path):
    """count(*) of whole files is their footers' row counts: no kernel."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    for i, n in enumerate((1000, 2500)):
        pq.write_table(pa.table({"a": np.arange(n), "s": [str(v) for v in range(n)]}),
                       tmp_path / f"t{i}.parquet", row_group_size=300)
    got = loaded_after(
        "import engine\n"
        "con = engine.connect()\n"
        f"assert con.sql(\"SELECT count(*), count(*) FROM '{tmp_path}/*.parquet'\").fetchall()"
        " == [(3500, 3500)]\n")
    assert got == {"numba": [], "kernels": []}


def test_kernels_load_when_a_query_needs_them(tmp_path):
    # the lazy imports still bring the kernels in: a scan of a file works
    path = tmp_path / "t.parquet"
    code = (f"import engine, sys\ncon = engine.connect()\n"
            f"con.sql(\"COPY (SELECT 1 AS a UNION ALL SELECT 2) TO '{path}'\")\n"
            f"print(con.sql(\"SELECT sum(a) FROM '{path}'\").fetchall(), 'numba' in sys.modules)")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[(3,)] True"


def test_kernel_loads_broadcast_no_llvm_lock_events(tmp_path):
    # numba times its LLVM lock with an event around every LLVM call; the
    # engine unhooks them when numba loads (15% of a cache load), and
    # compiling a new function still works afterwards
    path = tmp_path / "t.parquet"
    code = (f"import engine\ncon = engine.connect()\n"
            f"con.sql(\"COPY (SELECT 1 AS a UNION ALL SELECT 2) TO '{path}'\")\n"
            f"assert con.sql(\"SELECT sum(a) FROM '{path}'\").fetchall() == [(3,)]\n"
            "from llvmlite.binding import ffi\n"
            "hooks = [f.__module__ for f, _ in ffi.lib._lock._cblist]\n"
            "from numba import njit\n"
            "f = njit(lambda x: x + 1)\n"
            "print(hooks, f(41))")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[] 42"


WATCH_SCRIPT = """
import sys
from engine.compile_notice import CompileWatch, NOTICE
watch = CompileWatch(progress={progress}).install()
assert 'numba' not in sys.modules
from numba import njit

@njit(nogil=True)
def twice(x):
    return 2 * x

@njit(nogil=True)
def thrice(x):
    return 3 * x

assert twice(2) == 4 and twice(3) == 6 and thrice(1.5) == 4.5
watch.finish()
print(watch.compiled)
"""


def test_compile_watch_says_once_that_it_compiles():
    proc = run_python(WATCH_SCRIPT.format(progress=False))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2"]          # two signatures compiled, one per function
    from engine.compile_notice import NOTICE
    assert proc.stderr.count(NOTICE) == 1, proc.stderr


def test_compile_watch_progress_on_a_terminal():
    proc = run_python(WATCH_SCRIPT.format(progress=True))
    assert proc.returncode == 0, proc.stderr
    # one line rewritten in place (text mode shows its carriage returns as newlines)
    assert ": 1 (__main__.twice)" in proc.stderr and ": 2 (__main__.thrice)" in proc.stderr
    assert proc.stderr.count("\x1b[K") == 3
    assert proc.stderr.rstrip().rsplit("\x1b[K", 1)[1].startswith("pqdb: compiled 2 kernels in ")


def test_cli_select_1_compiles_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "engine.cli", "-c", "SELECT 1 AS one"],
                          cwd=REPO, text=True, capture_output=True, timeout=120,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "one" in proc.stdout and proc.stderr == ""


@pytest.mark.slow
def test_cli_says_it_compiles_with_a_cold_cache(tmp_path):
    cache = tmp_path / "numba-cache"
    cmd = [sys.executable, "-m", "engine.cli", "-c",
           "SELECT upper(s) AS u FROM (SELECT 'cd' AS s UNION ALL SELECT 'ab') ORDER BY u"]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    cold = subprocess.run(cmd, cwd=REPO, text=True, capture_output=True, timeout=600, env=env)
    assert cold.returncode == 0, cold.stderr
    assert "AB" in cold.stdout and "CD" in cold.stdout
    from engine.compile_notice import NOTICE
    assert cold.stderr.count(NOTICE) == 1, cold.stderr
    assert any(cache.rglob("*.nbi"))
    warm = subprocess.run(cmd, cwd=REPO, text=True, capture_output=True, timeout=600, env=env)
    assert warm.returncode == 0 and warm.stdout == cold.stdout
    assert warm.stderr == ""                     # warm cache: nothing compiled, nothing said


def test_read_only_package_caches_in_the_user_cache_directory(tmp_path):
    """A copy of scan/ (it imports nothing of ours) that cannot be written:
    numba's in-tree cache (``__pycache__`` beside the module) is unusable, so
    the kernels go to the user-wide cache (XDG_CACHE_HOME/numba), and a second
    process loads them from there.  chmod alone does not stop root (CI may
    run as root), so ``__pycache__`` is also made a plain file."""
    copy = tmp_path / "ro"
    shutil.copytree(REPO / "scan", copy / "scan",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nb[ic]"))
    for d in [copy / "scan", *[p for p in (copy / "scan").rglob("*") if p.is_dir()]]:
        (d / "__pycache__").write_text("not a directory")
    for p in sorted(copy.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    cache_home = tmp_path / "cache"
    code = ("import sys, numpy as np\n"
            f"sys.path.insert(0, {str(copy)!r})\n"
            "from numba.core import event\n"
            "compiled = []\n"
            "class Count(event.Listener):\n"
            "    def on_start(self, ev): compiled.append(ev.data['dispatcher'].py_func.__name__)\n"
            "    def on_end(self, ev): pass\n"
            "event.register('numba:compile', Count())\n"
            "from scan.selection import compress_rows\n"
            "assert compress_rows.__module__ == 'scan.selection' and "
            f"__import__('scan').__file__.startswith({str(copy)!r})\n"
            "out = compress_rows(np.arange(10, dtype=np.int64), np.arange(10) % 3 == 0)\n"
            "assert out.tolist() == [0, 3, 6, 9]\n"
            "print(len(compiled))")
    env = {"XDG_CACHE_HOME": str(cache_home), "NUMBA_CACHE_DIR": ""}
    try:
        first = run_python(code, env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert first.stdout.split() == ["1"]             # compiled, then saved
        assert list(cache_home.rglob("selection._compress*.nbi"))
        assert not [p for p in copy.rglob("*.nb[ic]")]
        second = run_python(code, env, cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert second.stdout.split() == ["0"]            # loaded from the user cache
    finally:
        for p in copy.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        copy.chmod(0o755)


def test_constant_string_views_match_the_kernels():
    # string literals are laid out in Python (no kernel): the same views
    from engine.expr.vectors import const_view
    from engine.kernels import strings as sk
    for value in ["", "a", "abcd", "abcde", "abcdefghijkl", "abcdefghijklm", "héllo wörld",
                  "x" * 100, b"\x00\xff\x10", b"\xff" * 13]:
        views, heap, _ = sk.views_from_pylist([value])
        w0, w1, h = const_view(value)
        assert (w0, w1) == (views[0, 0], views[0, 1]) and w0.dtype == np.uint64
        assert bytes(h) == bytes(heap)


def test_synopsis_piece_of_is_searchsorted():
    # the loop that replaced np.searchsorted in the synopsis kernels (start-up:
    # numba.np.arraymath is not imported by a first scan)
    from stats.synopses import piece_of
    rng = np.random.default_rng(7)
    for _ in range(200):
        bounds = np.unique(rng.integers(0, 1000, rng.integers(1, 20))).astype(np.int64)
        for row in rng.integers(-5, 1005, 10):
            assert piece_of(bounds, np.int64(row)) == np.searchsorted(bounds, row, "right") - 1
