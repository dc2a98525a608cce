"""Byte sources: where the bytes of a Parquet file come from.

A ByteSource knows its size, reads byte ranges and names itself
(``identity()``) for cache keys.  Local files here; http(s)
(scan/io/http.py) and fsspec (scan/io/fsspec_source.py) sources implement
the same methods over scan/io/remote.py.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from scan.errors import PqdbIOError


class ByteSource:
    """Abstract random-access byte source."""

    #: human-readable location (path or URL), used in error messages
    path: str = "<unknown>"

    def size(self) -> int:
        raise NotImplementedError

    def read(self, offset: int, length: int):
        """Exactly ``length`` bytes at ``offset`` (bytes or memoryview)."""
        raise NotImplementedError

    def identity(self) -> str:
        """Stable name for cache keys; changes when the content changes."""
        raise NotImplementedError

    def read_into(self, offset: int, out: np.ndarray) -> None:
        """Fill ``out`` (uint8) with the bytes at ``offset``; default copies ``read``."""
        data = self.read(offset, len(out))
        if len(data) != len(out):
            raise PqdbIOError(f"short read: got {len(data)} of {len(out)} bytes",
                              url=self.path, byte_range=(offset, offset + len(out)))
        out[:] = np.frombuffer(data, dtype=np.uint8)

    def close(self) -> None:
        pass

    def _check_range(self, offset: int, length: int) -> None:
        size = self.size()
        if offset < 0 or length < 0 or offset + length > size:
            raise PqdbIOError(f"read beyond end of file (size {size})", url=self.path,
                              byte_range=(offset, offset + length))


class LocalFileSource(ByteSource):
    """A file on the local file system (positional reads, thread-safe)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise PqdbIOError(f"cannot open file: {e.strerror or e}", url=self.path) from None
        if not os.path.isfile(self.path):
            raise PqdbIOError("not a regular file", url=self.path)
        self._size = st.st_size
        self._mtime = st.st_mtime_ns
        self._identity: str | None = None
        self._fd: int | None = None
        self._lock = threading.Lock()

    def size(self) -> int:
        return self._size

    def identity(self) -> str:
        ident = self._identity
        if ident is None:
            ident = self._identity = \
                f"file://{os.path.abspath(self.path)}?size={self._size}&mtime={self._mtime}"
        return ident

    def _fileno(self) -> int:
        with self._lock:
            if self._fd is None:
                try:
                    self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                except OSError as e:
                    raise PqdbIOError(f"cannot open file: {e.strerror or e}", url=self.path) from None
            return self._fd

    def read(self, offset: int, length: int) -> bytes:
        out = np.empty(length, dtype=np.uint8)
        self.read_into(offset, out)
        return out.tobytes()

    def read_into(self, offset: int, out: np.ndarray) -> None:
        length = len(out)
        self._check_range(offset, length)
        fd = self._fileno()
        view = memoryview(out)
        done = 0
        try:
            while done < length:
                if hasattr(os, "preadv"):
                    n = os.preadv(fd, [view[done:]], offset + done)
                else:  # pragma: no cover - platforms without preadv
                    chunk = os.pread(fd, length - done, offset + done)
                    n = len(chunk)
                    out[done:done + n] = np.frombuffer(chunk, dtype=np.uint8)
                if n <= 0:
                    raise PqdbIOError("short read (file truncated?)", url=self.path,
                                      byte_range=(offset, offset + length))
                done += n
        except OSError as e:
            raise PqdbIOError(f"read failed: {e.strerror or e}", url=self.path,
                              byte_range=(offset, offset + length)) from None

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"LocalFileSource({self.path!r})"


def is_url(text: str) -> bool:
    """A remote location (scheme://...), not a local path or file:// URL."""
    return "://" in text and not text.startswith("file://")


def as_source(path_or_source) -> ByteSource:
    """A ByteSource for a path, a URL (http(s): scan/io/http.py, opened by
    the suffix read that brings the footer's tail, as open_parquet reads
    the footer next; other schemes: scan/io/fsspec_source.py) or an
    existing source."""
    if isinstance(path_or_source, ByteSource):
        return path_or_source
    if isinstance(path_or_source, (str, os.PathLike)):
        text = os.fspath(path_or_source)
        if text.startswith("file://"):
            text = text[len("file://"):]
        elif "://" in text:
            if text.split("://", 1)[0].lower() in ("http", "https"):
                from scan.io.http import HttpSource
                return HttpSource(text, tail=True)
            from scan.io.fsspec_source import FsspecSource
            return FsspecSource(text)
        return LocalFileSource(text)
    raise TypeError(f"expected a path or ByteSource, got {type(path_or_source).__name__}")
