"""Malformed files (parquet-testing/bad_data, plus seeded corruptions of good
files) raise a PqdbError subclass on open or read: never another exception
type, never a crash or hang."""

from __future__ import annotations

import os
import random

import pytest

from tests.paths import CORPUS_BAD, CORPUS_DATA

from scan import BufferManager, open_parquet
from scan.errors import FileFormatError, PqdbError, UnsupportedFeatureError
from scan.io.source import ByteSource

BAD = CORPUS_BAD
DATA = CORPUS_DATA
BAD_FILES = sorted(f for f in os.listdir(BAD) if f.endswith(".parquet"))

# what we currently say about each bad file (error class, message fragment)
EXPECTED = {
    "ARROW-GH-41317.parquet": (FileFormatError, "column chunk has 0 values, row group has 3"),
    "ARROW-GH-41321.parquet": (FileFormatError, "RLE/bit-packed hybrid data ends"),
    "ARROW-GH-45185.parquet": (UnsupportedFeatureError, "nested column"),
    "ARROW-GH-47662.parquet": (FileFormatError, "truncated"),
    "ARROW-RS-GH-6229-DICTHEADER.parquet": (FileFormatError, "outside the data region"),
    "ARROW-RS-GH-6229-LEVELS.parquet": (UnsupportedFeatureError, "nested column"),
    "PARQUET-1481.parquet": (FileFormatError, "unknown physical type"),
}
# files pyarrow and DuckDB read without error; we read them identically
READ_LIKE_PYARROW = {"ARROW-GH-43605.parquet"}


def read_everything(pf) -> None:
    for rg in range(len(pf.row_groups)):
        for col in pf.columns:
            pf.read_column(rg, col.index)


@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_file_is_refused(name):
    path = os.path.join(BAD, name)
    if name in READ_LIKE_PYARROW:
        from tests.scan.oracle import compare_file
        assert compare_file(path)
        return
    cls, fragment = EXPECTED[name]
    with pytest.raises(cls, match=fragment) as info:
        read_everything(open_parquet(path))
    assert isinstance(info.value, PqdbError)


def test_every_bad_file_is_listed():
    assert set(BAD_FILES) == set(EXPECTED) | READ_LIKE_PYARROW


class BytesSource(ByteSource):
    """An in-memory file (for corruption tests)."""

    def __init__(self, data: bytes, name: str):
        self.data, self.path = data, name

    def size(self):
        return len(self.data)

    def read(self, offset, length):
        self._check_range(offset, length)
        return self.data[offset:offset + length]

    def identity(self):
        return f"mem://{self.path}/{hash(self.data)}"


def _mutations(data: bytes, rng: random.Random, n: int):
    for _ in range(n):
        kind = rng.randrange(4)
        b = bytearray(data)
        if kind == 0:                                   # flip random bytes
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 1:                                 # truncate (keep the tail magic)
            cut = rng.randrange(4, len(b) - 8)
            b = b[:cut] + b[-8:]
        elif kind == 2:                                 # corrupt the footer
            foot = int.from_bytes(b[-8:-4], "little")
            start = len(b) - 8 - foot
            for _ in range(rng.randint(1, 4)):
                b[start + rng.randrange(foot)] = rng.randrange(256)
        else:                                           # corrupt the data region
            for _ in range(rng.randint(1, 16)):
                b[4 + rng.randrange(len(b) - 12)] = rng.randrange(256)
        yield bytes(b)


@pytest.mark.parametrize("name", ["alltypes_plain.parquet", "alltypes_dictionary.parquet",
                                  "datapage_v2.snappy.parquet", "nulls.snappy.parquet",
                                  "rle-dict-snappy-checksum.parquet", "byte_array_decimal.parquet",
                                  "alltypes_tiny_pages.parquet"])
def test_corrupted_files_raise_only_pqdb_errors(name):
    data = open(os.path.join(DATA, name), "rb").read()
    rng = random.Random(name)
    for i, mutated in enumerate(_mutations(data, rng, 60)):
        bm = BufferManager(1 << 26)
        try:
            pf = open_parquet(BytesSource(mutated, f"{name}#{i}"), buffer_manager=bm,
                              verify_checksums=(i % 2 == 0))
            read_everything(pf)
        except PqdbError:
            pass
