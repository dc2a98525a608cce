"""Every other URL scheme through fsspec (s3://, gs://, az://, memory://,
file://, ...): ranges through ``cat_file``/``cat_ranges``, globs through
the filesystem's ``glob``, identity from ``info`` (ETag or mtime, and size).

A scheme whose fsspec backend is not installed is an error naming the
package to install (fsspec's own registry knows it).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from scan.errors import PqdbIOError, UnsupportedFeatureError
from scan.io.remote import IoCounters, RemoteSettings, RemoteSource

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="pqdb-fsspec")
        return _pool


def backend_failure(e: Exception) -> str:
    """What an fsspec backend raised, for a PqdbIOError: backends raise
    their own types (azure's HttpResponseError, gcsfs's HttpError, ...),
    not only OSError; each is a failed read, never a bug of ours."""
    if isinstance(e, (OSError, ValueError)):
        return str(e) or type(e).__name__
    return f"{type(e).__name__}: {e}"


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def filesystem(url: str):
    """(fsspec filesystem, path inside it) of a URL."""
    try:
        import fsspec
    except ImportError:                                     # pragma: no cover
        raise UnsupportedFeatureError(f"{scheme_of(url)}:// URLs need fsspec: "
                                      "pip install fsspec") from None
    scheme = scheme_of(url)
    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise UnsupportedFeatureError(f"unknown URL scheme {scheme}:// (no fsspec "
                                      f"filesystem knows it)") from None
    except ImportError as e:
        from fsspec.registry import known_implementations
        spec = known_implementations.get(scheme, {})
        package = spec.get("class", "").split(".")[0] or "?"
        hint = spec.get("err") or f"install {package}"
        raise UnsupportedFeatureError(
            f"{scheme}:// needs the fsspec backend package {package!r}, which is not "
            f"installed: pip install {package} ({hint})") from e
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        raise UnsupportedFeatureError(f"{scheme}:// backend failed to load: {e}") from None


def fsspec_glob(url: str) -> list[str]:
    """Files matching a glob URL (or below a directory URL), as URLs."""
    fs, path = filesystem(url)
    scheme = scheme_of(url)
    try:
        import glob as _glob
        if _glob.has_magic(path):
            found = fs.glob(path)
        elif fs.isdir(path):
            found = fs.glob(path.rstrip("/") + "/**/*.parquet")
        elif fs.exists(path):
            found = [path]
        else:
            found = []
        found = sorted(p for p in found if fs.isfile(p))
    except Exception as e:              # noqa: BLE001 - a backend's failure, whatever its type
        raise PqdbIOError(f"cannot list: {backend_failure(e)}", url=url) from e
    return [_unstrip(scheme, p) for p in found]


def _unstrip(scheme: str, path: str) -> str:
    if "://" in path:
        return path
    if scheme == "memory" and path.startswith("/"):
        return f"memory://{path}"
    return f"{scheme}://{path}"


class FsspecSource(RemoteSource):
    def __init__(self, url: str, settings: RemoteSettings | None = None,
                 io: IoCounters | None = None):
        super().__init__(url, settings, io)
        self.fs, self.fspath = filesystem(url)
        self._open()

    def _open(self) -> None:
        try:
            invalidate = getattr(self.fs, "invalidate_cache", None)
            if invalidate is not None:
                invalidate(self.fspath)
            info = self.fs.info(self.fspath)
        except FileNotFoundError:
            raise PqdbIOError("cannot open: no such file", url=self.path) from None
        except Exception as e:          # noqa: BLE001 - a backend's failure, whatever its type
            raise PqdbIOError(f"cannot open: {backend_failure(e)}", url=self.path) from e
        self.io.add(requests=1)
        if info.get("type") == "directory":
            raise PqdbIOError("not a file (a directory)", url=self.path)
        self._size = int(info.get("size") or 0)
        etag = info.get("ETag") or info.get("etag") or info.get("md5Hash")
        self.etag = str(etag) if etag else None
        mtime = None
        for k in ("mtime", "LastModified", "last_modified", "updated", "created"):
            if info.get(k) is not None:
                mtime = info[k]
                break
        self.modified = None if mtime is None else str(mtime)

    def submit(self, start: int, end: int) -> Future:
        return _executor().submit(self._cat, start, end)

    def _cat(self, start: int, end: int) -> bytes:
        try:
            data = self.fs.cat_file(self.fspath, start=start, end=end)
        except FileNotFoundError:
            raise PqdbIOError("file disappeared while being read", url=self.path,
                              byte_range=(start, end)) from None
        except Exception as e:          # noqa: BLE001 - a backend's failure, whatever its type
            raise PqdbIOError(f"read failed: {backend_failure(e)}", url=self.path,
                              byte_range=(start, end)) from e
        self.io.add(requests=1, bytes_fetched=len(data))
        return data
