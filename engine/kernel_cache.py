"""How kernels come out of numba's cache at start-up (issue 23).

numba loads the kernels from its on-disk cache lazily, one per function and
signature, on first call.  Before the first load in a process it refreshes
its CPU target: it imports some forty modules of numba's own
implementations (numba.np.*, numba.cpython.*, typed containers, ...) to
register how to *compile* every construct, and initializes its runtime
(NRT).  Object code from the cache needs only the runtime: it is linked
machine code.  The refresh cost a fresh process more than numba's import
(measured in docs/performance-notes.md, 2026-11-26), so ``install()`` makes
a cache load initialize the runtime only.  Compiling still refreshes fully
(numba's compiler refreshes the context itself, and a lookup of an
implementation not registered yet refreshes and retries:
``BaseContext.get_function``), so nothing numba compiles ever misses a
registration.

numba itself is imported lazily (``import engine`` and ``SELECT 1`` never
load it): ``when_imported`` runs a function once numba has been imported."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

_installed = []


def install() -> None:
    """Patch numba's cache loads (now if numba is loaded, else on its import)."""
    if not _installed:
        _installed.append(True)
        when_imported("numba", load_without_refresh)


def load_without_refresh() -> None:
    from numba.core import caching
    from numba.core.runtime import rtsys

    cache_class = caching.Cache
    if getattr(cache_class.load_overload, "pqdb_light", False) \
            or not hasattr(cache_class, "_load_overload"):
        return          # patched already, or a numba whose cache works otherwise

    def load_overload(self, sig, target_context):
        """numba's Cache.load_overload without target_context.refresh():
        the runtime only (what linked object code calls into)."""
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    load_overload.pqdb_light = True
    cache_class.load_overload = load_overload
    drop_llvm_lock_events()


def drop_llvm_lock_events() -> None:
    """Unhook numba's "numba:llvm_lock" events from llvmlite's lock.

    numba broadcasts a start and an end event around every LLVM C call, only
    to time the LLVM lock into a compilation's metadata.  A cache load makes
    ~200 such calls (walking the linked module's symbols), and the events
    cost as much as the calls: 15% of a load (46 loads of TPC-H Q3: 0.142
    -> 0.124 s, one thread).  Compiling works the same without them; its
    metadata's "llvm_lock" timer reads zero."""
    from llvmlite.binding import ffi

    lock = getattr(ffi.lib, "_lock", None)
    for acquire, release in list(getattr(lock, "_cblist", ())):
        if getattr(acquire, "__module__", "") == "numba.core.base":
            ffi.unregister_lock_callback(acquire, release)


_PENDING: dict = {}          # module name -> the functions to run once it is imported


def when_imported(name: str, then):
    """Run ``then()`` right after module ``name`` is imported (now, if it
    is).  Returns a token for ``forget`` (None when it ran already)."""
    if name in sys.modules:
        then()
        return None
    if name not in _PENDING:
        _PENDING[name] = []
        sys.meta_path.insert(0, _AfterImport(name))
    _PENDING[name].append(then)
    return (name, then)


def forget(token) -> None:
    """Drop a function of ``when_imported`` that has not run yet."""
    if token is not None:
        waiting = _PENDING.get(token[0], [])
        if token[1] in waiting:
            waiting.remove(token[1])


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenLoader(spec.loader, fullname)
        else:
            _PENDING.pop(fullname, None)
        return spec


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader, name: str):
        self.loader, self.name = loader, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        for then in _PENDING.pop(self.name, []):
            then()
