"""The one Config object (docs/design.md "Configuration").

Settable by ``engine.connect(**options)``, ``SET name = value`` in SQL and
``PQDB_<NAME>`` environment variables (connect() arguments win over the
environment).  An unknown option is a ConfigError.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field, fields

from engine.errors import ConfigError


@functools.cache
def machine_cores() -> int:
    """os.cpu_count(), asked once: it reads /sys on Linux (about 20 us),
    and every scan of every query asks (serial time before the morsels)."""
    return os.cpu_count() or 1


def _parse_bytes(value) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError("must be positive")
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*", str(value), re.IGNORECASE)
    if not m:
        raise ValueError(f"not a byte size: {value!r}")
    unit = (m.group(2) or "").lower().rstrip("b").rstrip("i")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit]
    result = int(float(m.group(1)) * mult)
    if result <= 0:
        raise ValueError("must be positive")
    return result


def _parse_gap(value) -> int:
    """A byte size that may be 0."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0
    if str(value).strip() in ("0", "0B", "0b"):
        return 0
    return _parse_bytes(value)
_DURATION_UNITS = {
    "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}


def parse_duration(value) -> float:
    """Seconds (>= 0) of a duration as DuckDB reads an INTERVAL string:
    '10s', '500ms', '2 minutes', '1 hour 30 minutes', '1m' (a minute),
    '00:01:30', or a bare number of seconds.  0 means none."""
    if isinstance(value, bool):
        raise ValueError("not a duration")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip().lower()
        clock = re.fullmatch(r"(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?", text)
        if clock:
            h, m, s = clock.groups()
            seconds = int(h) * 3600 + int(m) * 60 + float(s or 0)
        else:
            pieces = re.findall(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)", text)
            if not pieces or "".join(n + u for n, u in pieces) != re.sub(r"\s+", "", text):
                raise ValueError(f"not a duration: {value!r} (e.g. '10s', '500ms', '2 minutes')")
            seconds = 0.0
            for number, unit in pieces:
                if unit not in _DURATION_UNITS and unit != "":
                    raise ValueError(f"unknown unit {unit!r} in {value!r}")
                seconds += float(number) * _DURATION_UNITS.get(unit, 1.0)
    if seconds != seconds or seconds < 0:
        raise ValueError("must be zero (none) or positive")
    return seconds


def _parse_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _parse_int(value) -> int:
    """An integer from an int, an integral float or its text (never truncated)."""
    if isinstance(value, bool):
        raise ValueError("not an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("not an integer")
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError("not an integer") from None


def _parse_positive_int(value) -> int:
    n = _parse_int(value)
    if n <= 0:
        raise ValueError("must be positive")
    return n


def _parse_non_negative_int(value) -> int:
    n = _parse_int(value)
    if n < 0:
        raise ValueError("must not be negative")
    return n


def _parse_number(value) -> float:
    if isinstance(value, bool):
        raise ValueError("not a number")
    try:
        return float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
    except ValueError:
        raise ValueError("not a number") from None


def _parse_float(value) -> float:
    result = _parse_number(value)
    if not result > 0 or result == float("inf"):
        raise ValueError("must be a positive number")
    return result


def _parse_share(value) -> float:
    """A non-negative number (a share: 0.1 is 10%)."""
    result = _parse_number(value)
    if not 0 <= result < float("inf"):
        raise ValueError("must be a number >= 0")
    return result


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _parse_headers(value) -> dict:
    """HTTP headers: a dict, JSON text of one, or ``Name: value`` pairs
    separated by newlines (or ``;``).  '' clears them."""
    if isinstance(value, dict):
        items = value.items()
    else:
        text = str(value).strip()
        if not text:
            return {}
        if text.startswith("{"):
            import json
            try:
                obj = json.loads(text)
            except ValueError as e:
                raise ValueError(f"not a JSON object: {e}") from None
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            items = obj.items()
        else:
            items = []
            for part in re.split(r"[\n;]", text):
                if not part.strip():
                    continue
                if ":" not in part:
                    raise ValueError(f"expected 'Name: value', got {part.strip()!r}")
                name, _, val = part.partition(":")
                items.append((name, val))
    out = {}
    for name, val in items:
        name = str(name).strip()
        if not _HEADER_NAME.fullmatch(name):        # an RFC 9110 token
            raise ValueError(f"bad header name {name!r}")
        if any(c in str(val) for c in "\r\n"):
            raise ValueError(f"header {name} has a line break in its value")
        out[name] = str(val).strip()
    return out


@dataclass
class Config:
    threads: int = 0                      # 0 = all cores
    memory_limit: int = 8 << 30           # bytes; accepts "4GB", "512MiB"
    buffer_memory: int = 1 << 30          # compressed chunks kept (in flight + cache); at
                                          # most memory_limit / 2, counted against it
    block_rows: int = 131072              # rows per block (upper bound)
    block_bytes: int = 16 << 20           # a scan block's buffer: rows = bytes / row width
    preserve_order: bool = True           # plain scans return rows in file order
    join_filters: bool = True             # scans drop rows without a join partner
    verify_checksums: bool = True
    statistics: bool = True               # collect and use adaptive statistics (stats/)
    statistics_sample: int = 1024         # sample rows per table
    statistics_synopses: int = 100        # synopses (min/max/nulls of a row range) per file
    cache_directory: str = ""
    http_timeout: float = 30.0            # seconds per request (then retried)
    http_retries: int = 3                 # retries of a failed request, with backoff
    http_headers: dict = field(default_factory=dict)   # sent with every request
    http_concurrency: int = 16            # requests in flight per connection
    http_coalesce_gap: int = 1 << 20      # ranges this close become one request
    http_coalesce_waste: float = 0.1      # bytes nobody asked for, as a share of those asked
    http_footer_prefetch: int = 64 << 10  # speculative tail read for the footer
    remote_cache_dir: str = ""            # disk cache of remote ranges ('' = none)
    remote_cache_size: int = 4 << 30      # its bound
    query_timeout: float = 0.0            # seconds; '10s', '2 minutes'; 0 = none

    _PARSERS = {
        "threads": _parse_non_negative_int,
        "memory_limit": _parse_bytes,
        "buffer_memory": _parse_bytes,
        "block_rows": _parse_positive_int,
        "block_bytes": _parse_bytes,
        "preserve_order": _parse_bool,
        "join_filters": _parse_bool,
        "verify_checksums": _parse_bool,
        "statistics": _parse_bool,
        "statistics_sample": _parse_positive_int,
        "statistics_synopses": _parse_positive_int,
        "cache_directory": str,
        "http_timeout": _parse_float,
        "http_retries": _parse_non_negative_int,
        "http_headers": _parse_headers,
        "http_concurrency": _parse_positive_int,
        "http_coalesce_gap": _parse_gap,
        "http_coalesce_waste": _parse_share,
        "http_footer_prefetch": _parse_bytes,
        "remote_cache_dir": str,
        "remote_cache_size": _parse_bytes,
        "query_timeout": parse_duration,
    }

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def set(self, name: str, value) -> None:
        key = name.lower()
        if key == "memory_limit" or key == "max_memory":
            key = "memory_limit"
        if key not in self._PARSERS:
            raise ConfigError(f"unknown option {name!r}; known options: "
                              + ", ".join(self.option_names()))
        try:
            setattr(self, key, self._PARSERS[key](value))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"invalid value {value!r} for option {name}: {e}") from None

    def remote_settings(self, settings=None):
        """The http_* / remote_cache_* options as scan/'s RemoteSettings
        (``settings`` updated in place when given: sources keep it)."""
        from scan.io.remote import RemoteSettings
        settings = settings or RemoteSettings()
        settings.timeout = self.http_timeout
        settings.retries = self.http_retries
        settings.headers = dict(self.http_headers)
        settings.concurrency = self.http_concurrency
        settings.coalesce_gap = self.http_coalesce_gap
        settings.coalesce_waste = self.http_coalesce_waste
        settings.footer_prefetch = self.http_footer_prefetch
        settings.cache_dir = self.remote_cache_dir
        settings.cache_size = self.remote_cache_size
        return settings

    @property
    def effective_threads(self) -> int:
        return self.threads or machine_cores()

    @classmethod
    def from_environment(cls, **options) -> "Config":
        cfg = cls()
        for name in cls.option_names():
            env = os.environ.get("PQDB_" + name.upper())
            if env is not None:
                try:
                    cfg.set(name, env)
                except ConfigError as e:
                    raise ConfigError(f"{e} (from the environment variable "
                                      f"PQDB_{name.upper()})") from None
        for name, value in options.items():
            cfg.set(name, value)
        return cfg
