"""The remote-range disk cache (``SET remote_cache_dir = '...'``).

One file per fetched range, named by a hash of URL + version (ETag, else
modification time and size) + offset + length, so a new process finds the
ranges an earlier one fetched and a changed file never finds old ones.
An entry is a 32-byte header -- magic, payload length, xxh64 of the
payload, offset -- then the payload.  Writes go to a temporary file in the
same directory, then ``os.replace``: a reader sees a whole entry or none.
A reader checks magic, length and checksum; a bad entry is deleted and
reported as a miss (the range is fetched again), never returned.

The directory is bounded by ``remote_cache_size``: after writes pass it,
the least recently used entries (by mtime, touched on every hit) go.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading

import xxhash

_MAGIC = b"PQDBRC01"
_HEADER = struct.Struct("<8sQQQ")       # magic, length, xxh64, offset


class DiskCache:
    def __init__(self, directory: str, max_bytes: int):
        self.directory = os.path.abspath(os.path.expanduser(directory))
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._written = 0                # bytes written since the last trim
        self.hits = self.misses = self.corrupt = 0
        os.makedirs(self.directory, exist_ok=True)

    def _path(self, url: str, version: str, offset: int, length: int) -> str:
        h = hashlib.sha256(f"{url}\0{version}\0{offset}\0{length}".encode()).hexdigest()
        return os.path.join(self.directory, h[:2], h[2:] + ".rng")

    def get(self, url: str, version: str, offset: int, length: int):
        """The cached bytes of the range, or None (missing or corrupt)."""
        path = self._path(url, version, offset, length)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            self.misses += 1
            return None
        if len(blob) == _HEADER.size + length:
            magic, n, digest, off = _HEADER.unpack_from(blob)
            payload = memoryview(blob)[_HEADER.size:]
            if magic == _MAGIC and n == length and off == offset and \
                    xxhash.xxh64_intdigest(payload) == digest:
                self.hits += 1
                try:
                    os.utime(path)          # recently used
                except OSError:
                    pass
                return payload
        self.corrupt += 1
        try:
            os.unlink(path)
        except OSError:
            pass
        return None

    def put(self, url: str, version: str, offset: int, data) -> None:
        """Store a range (atomically); errors (disk full, permissions) only
        cost the cache, never the query."""
        length = len(data)
        if length > self.max_bytes:
            return
        path = self._path(url, version, offset, length)
        if os.path.exists(path):
            return
        d = os.path.dirname(path)
        try:
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_HEADER.pack(_MAGIC, length, xxhash.xxh64_intdigest(data), offset))
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            return
        with self._lock:
            self._written += length + _HEADER.size
            trim = self._written > self.max_bytes // 8
            if trim:
                self._written = 0
        if trim:
            self.trim()

    def entries(self) -> list:
        """(mtime, size, path) of every entry."""
        out = []
        for root, _dirs, files in os.walk(self.directory):
            for name in files:
                if name.endswith(".rng"):
                    p = os.path.join(root, name)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    out.append((st.st_mtime_ns, st.st_size, p))
        return out

    def total_bytes(self) -> int:
        return sum(e[1] for e in self.entries())

    def trim(self) -> None:
        """Delete least recently used entries until at most max_bytes stay."""
        entries = sorted(self.entries())
        total = sum(e[1] for e in entries)
        for _mtime, size, path in entries:
            if total <= self.max_bytes:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass


_caches: dict = {}
_caches_lock = threading.Lock()


def disk_cache(directory: str, max_bytes: int) -> DiskCache:
    """The process's DiskCache of ``directory`` (its bound updated)."""
    key = os.path.abspath(os.path.expanduser(directory))
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = DiskCache(key, max_bytes)
        cache.max_bytes = int(max_bytes)
        return cache
