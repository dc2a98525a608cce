"""Morsel-driven execution of one pipeline on worker threads.

Workers take morsels in source order from a shared counter, each pushing into
its own thread-local sink state; the states are merged at the end.  With one
thread everything runs on the calling thread.  numba kernels release the GIL,
so threads run in parallel.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from engine.context import CancelToken, current_cancel, set_current_cancel
from engine.pipeline import Pipeline

_POOL_LOCK = threading.Lock()
_POOLS: dict[int, ThreadPoolExecutor] = {}
_WORKING = threading.local()          # .active: this thread is running pipeline work
_ALLOCATOR_TUNED = False

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def tune_allocator() -> None:
    """Keep freed block memory in the process (glibc only, once).

    Blocks allocate arrays of a few hundred KiB to a few MiB per operator.
    glibc serves those by mmap (over 128 KiB at first) and trims the heap top
    eagerly, so every fresh array page-faults again: at TPC-H SF1 that was
    about 40% of Q1's time.  Arrays up to 32 MiB now come from the heap, and
    an arena's free top is returned to the OS past 128 MiB: that keeps the
    page faults away (Q1, Q6: none in warm runs; the 22 queries at 2 threads
    fault as often as with 512 MiB) while a long-running process holds about
    90 MiB less than with the 512 MiB it had before (mean RSS after each of
    the 22 TPC-H SF1 queries).
    PQDB_MALLOC_TUNING=0 turns this off."""
    global _ALLOCATOR_TUNED
    if _ALLOCATOR_TUNED:
        return
    _ALLOCATOR_TUNED = True
    if os.environ.get("PQDB_MALLOC_TUNING", "1") == "0":
        return
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(_M_TRIM_THRESHOLD, 128 << 20)
    except (OSError, AttributeError):
        pass


_GLIBC: list = []          # [libc handle or None], looked up once


def _glibc():
    if not _GLIBC:
        handle = None
        if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
            try:
                handle = ctypes.CDLL("libc.so.6")
            except OSError:
                handle = None
        _GLIBC.append(handle)
    return _GLIBC[0]


def release_free_memory() -> None:
    """Return the allocator's free memory to the OS (glibc malloc_trim):
    after a query stopped or failed, so that the process's resident size
    goes back near where it was (the tuned thresholds keep up to 128 MiB
    of free heap otherwise), and while a query runs near its memory_limit
    (engine.context.MemoryTracker: freed arrays of one worker's arena are
    no use to another's)."""
    libc = _glibc()
    if libc is None:
        return
    try:
        libc.malloc_trim(0)
    except AttributeError:
        pass


def _pool(threads: int) -> ThreadPoolExecutor:
    with _POOL_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pqdb-worker")
            _POOLS[threads] = pool
        return pool


def parallel_map(fn, items, threads: int) -> list:
    """[fn(x) for x in items], run on up to ``threads`` pool workers (in
    order of items; the first exception is re-raised after all finished).
    Sinks use it for their merge phase (partitioned merges, sorting runs).
    Called from a thread already doing pipeline or merge work (a pool
    worker, or the caller while it works as one) it runs inline, so it
    cannot deadlock."""
    items = list(items)
    threads = max(1, min(int(threads), len(items)))
    if threads == 1 or _in_worker():
        return [fn(x) for x in items]
    lock = threading.Lock()
    next_index = [0]
    results: list = [None] * len(items)

    def worker():
        token = current_cancel()
        while True:
            with lock:
                i = next_index[0]
                if i >= len(items):
                    return
                next_index[0] = i + 1
            token.check()
            results[i] = fn(items[i])

    _run_on_workers(worker, threads)
    return results


def _in_worker() -> bool:
    return getattr(_WORKING, "active", False)


def _as_worker(fn, token: CancelToken):
    """fn() with this thread marked as working (nested parallel_map runs
    inline) for the query of ``token`` (its stop request, and its count of
    working threads)."""
    was = getattr(_WORKING, "active", False)
    _WORKING.active = True
    previous = set_current_cancel(token)
    token.enter()
    try:
        token.check()
        return fn()
    finally:
        token.leave()
        set_current_cancel(previous)
        _WORKING.active = was


def _run_on_workers(fn, threads: int) -> list:
    """fn() on ``threads`` threads: threads - 1 pool workers and the calling
    thread itself, which is already awake (a sleeping thread takes tens of
    microseconds to wake on a virtual machine whose idle cores halt).  Returns
    the results, the caller's first; the first exception is re-raised after
    every thread has finished.

    Ctrl-C reaches the calling thread only (as KeyboardInterrupt, while it
    works or while it waits for the others): it cancels the query's token,
    so the pool workers stop at their next check, and the caller waits for
    them -- a second Ctrl-C does not leave a worker running -- before it
    re-raises."""
    token = current_cancel()
    if token is None:                   # outside a query: a token for this run alone
        token = CancelToken()
    futures = [_pool(threads).submit(_as_worker, fn, token) for _ in range(threads - 1)]
    results, error = [], None
    try:
        results.append(_as_worker(fn, token))
    except BaseException as e:
        error = e
        if isinstance(e, KeyboardInterrupt):
            token.cancel("interrupted")
    for f in futures:
        while True:
            try:
                results.append(f.result())
            except KeyboardInterrupt as e:
                token.cancel("interrupted")
                if error is None:
                    error = e
                if not f.done():        # Ctrl-C hit the wait: keep waiting for the worker
                    continue
            except BaseException as e:
                if error is None:
                    error = e
            break
    if error is not None:
        raise error
    return results


def run_pipeline(pipeline: Pipeline, threads: int):
    """Run every morsel of the pipeline's source through it; return the
    sink's merged result.  The sink's ``threads`` attribute is set to the
    thread count, so its merge can use parallel_map."""
    tune_allocator()
    sink = pipeline.sink
    sink.threads = max(1, int(threads))
    morsels = pipeline.source.morsels()
    threads = max(1, min(threads, len(morsels)))
    if threads == 1:
        local = sink.make_local()
        small = pipeline.small_blocks(sink)
        token = current_cancel()
        try:
            for i, m in enumerate(morsels):
                if sink.done():
                    break
                if token is not None:
                    token.check()
                pipeline.run_morsel(m, i, sink, local, small)
        except BaseException:
            pipeline.drop_small(small)
            raise
        pipeline.flush_small(small, sink, local)
        return sink.merge([local])

    lock = threading.Lock()
    next_index = [0]
    failed = threading.Event()

    def worker():
        local = sink.make_local()
        small = pipeline.small_blocks(sink)
        token = current_cancel()
        while not failed.is_set():
            with lock:
                i = next_index[0]
                if i >= len(morsels) or sink.done():
                    break
                next_index[0] = i + 1
            try:
                token.check()
                pipeline.run_morsel(morsels[i], i, sink, local, small)
            except BaseException:
                failed.set()
                pipeline.drop_small(small)
                raise
        if failed.is_set():
            pipeline.drop_small(small)
        else:
            pipeline.flush_small(small, sink, local)
        return local

    return sink.merge(_run_on_workers(worker, threads))


def run_pipelines(pipelines: list[Pipeline], threads: int) -> list:
    """Run independent pipelines (the hash builds a probe chain needs) as
    one job: their morsels share one queue, so a pipeline of one or two
    morsels (a small dimension table) runs beside the others instead of
    leaving the other threads idle.  Returns each sink's merged result, in
    the order of ``pipelines``; the merges run one after another on the
    calling thread (each may use parallel_map)."""
    threads = max(1, int(threads))
    if len(pipelines) == 1 or threads == 1:
        return [run_pipeline(p, threads) for p in pipelines]
    tune_allocator()
    morsels = []
    for p in pipelines:
        p.sink.threads = threads
        morsels.append(p.source.morsels())
    # the pipelines with most morsels first: the small ones fill the gaps
    # at the end (largest-first list scheduling)
    order = sorted(range(len(pipelines)), key=lambda k: -len(morsels[k]))
    work = [(k, i) for k in order for i in range(len(morsels[k]))]
    threads = max(1, min(threads, len(work)))
    lock = threading.Lock()
    next_index = [0]
    failed = threading.Event()

    def worker():
        locals_: dict = {}
        token = current_cancel()
        while not failed.is_set():
            with lock:
                j = next_index[0]
                while j < len(work) and pipelines[work[j][0]].sink.done():
                    j += 1
                if j >= len(work):
                    break
                next_index[0] = j + 1
            k, i = work[j]
            p = pipelines[k]
            local = locals_.get(k)
            if local is None:
                local = locals_[k] = p.sink.make_local()
            try:
                token.check()
                p.run_morsel(morsels[k][i], i, p.sink, local)
            except BaseException:
                failed.set()
                raise
        return locals_

    per_thread = _run_on_workers(worker, threads)
    results = []
    for k, p in enumerate(pipelines):
        locals_ = [d[k] for d in per_thread if k in d] or [p.sink.make_local()]
        results.append(p.sink.merge(locals_))
    return results
