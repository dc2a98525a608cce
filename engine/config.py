"""The one Config object (docs/design.md "Configuration").

Settable by ``engine.connect(**options)``, ``SET name = value`` in SQL and
``PQDB_<NAME>`` environment variables (connect() arguments win over the
environment).  An unknown option is a ConfigError.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, fields

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


def _parse_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _parse_positive_int(value) -> int:
    if isinstance(value, bool):
        raise ValueError("not an integer")
    n = int(value)
    if n <= 0:
        raise ValueError("must be positive")
    return n


@dataclass
class Config:
    threads: int = 0                      # 0 = all cores
    memory_limit: int = 8 << 30           # bytes; accepts "4GB", "512MiB"
    buffer_memory: int = 1 << 30          # compressed chunks kept (in flight + cache); at
                                          # most memory_limit / 2, counted against it
    block_rows: int = 131072              # rows per block (upper bound)
    block_bytes: int = 16 << 20           # a scan block's buffer: rows = bytes / row width
    preserve_order: bool = True           # plain scans return rows in file order
    verify_checksums: bool = True
    statistics: bool = True               # collect and use adaptive statistics (stats/)
    statistics_sample: int = 1024         # sample rows per table
    statistics_synopses: int = 100        # synopses (min/max/nulls of a row range) per file
    cache_directory: str = ""
    http_timeout: float = 30.0
    http_retries: int = 3

    _PARSERS = {
        "threads": lambda v: 0 if str(v).strip() == "0" else _parse_positive_int(v),
        "memory_limit": _parse_bytes,
        "buffer_memory": _parse_bytes,
        "block_rows": _parse_positive_int,
        "block_bytes": _parse_bytes,
        "preserve_order": _parse_bool,
        "verify_checksums": _parse_bool,
        "statistics": _parse_bool,
        "statistics_sample": _parse_positive_int,
        "statistics_synopses": _parse_positive_int,
        "cache_directory": str,
        "http_timeout": float,
        "http_retries": int,
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

    @property
    def effective_threads(self) -> int:
        return self.threads or machine_cores()

    @classmethod
    def from_environment(cls, **options) -> "Config":
        cfg = cls()
        for name in cls.option_names():
            env = os.environ.get("PQDB_" + name.upper())
            if env is not None:
                cfg.set(name, env)
        for name, value in options.items():
            cfg.set(name, value)
        return cfg
