"""Files pqdb's writer encrypts (scan/write_crypto.py), tampered: flipping
a nonce, ciphertext or tag byte of every module type -- footer (or its
signature), column metadata, data and dictionary pages and their headers,
column and offset index, bloom filter header and bitset -- is an
AuthenticationError naming file and module; so is a page moved between
pqdb-written files, or a column read with another column's key."""

from __future__ import annotations

import numpy as np
import pytest

from engine.block import Vector
from planner import types as PT
from scan import open_parquet
from scan.errors import AuthenticationError
from scan.keys import EncryptionConfig, KeyRegistry, KeyResolver
from scan.views import views_from_pylist
from scan.write_crypto import ColumnKey, EncryptingSink, FileEncryption
from scan.write_schema import build_schema
from scan.writer import WriteOptions, write_parquet
from tests.scan.crypto_files import flip_byte
from tests.scan.test_encryption_tamper import module_ranges, read_all

KEYS = {"kf": b"F" * 16, "k1": b"1" * 24, "k2": b"2" * 32}
SCHEMA = [("a", PT.BIGINT), ("s", PT.VARCHAR), ("x", PT.DOUBLE)]


def _columns(n: int = 3000):
    a = Vector(PT.BIGINT, np.arange(n, dtype=np.int64))
    views, heap, _ = views_from_pylist([f"v{i % 13}" for i in range(n)])
    s = Vector(PT.VARCHAR, views, None, heap)
    x = Vector(PT.DOUBLE, np.random.default_rng(3).normal(size=n))
    return [a, s, x]


def _resolver():
    reg = KeyRegistry()
    for k, v in KEYS.items():
        reg.add(k, v)
    return KeyResolver(reg)


def write(path: str, algorithm="AES_GCM_V1", plaintext_footer=False, column_keys=True,
          aad_prefix=None, store_aad_prefix=True):
    enc = FileEncryption(KEYS["kf"], b"kf",
                         {"a": ColumnKey(KEYS["k1"], b"k1"), "s": ColumnKey(KEYS["k2"], b"k2"),
                          "x": ColumnKey(KEYS["kf"], b"kf")} if column_keys else {},
                         algorithm, plaintext_footer, aad_prefix, store_aad_prefix)
    _, leaves = build_schema([n for n, _ in SCHEMA], [t for _, t in SCHEMA])
    opts = WriteOptions(row_group_size=1500, page_rows=400, bloom_filter=True,
                        sink=EncryptingSink(enc, leaves))
    write_parquet(path, _columns(), SCHEMA, opts)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,plaintext_footer", [("AES_GCM_V1", False),
                                                        ("AES_GCM_V1", True),
                                                        ("AES_GCM_CTR_V1", False)])
def test_every_module_flipped_fails_authentication(tmp_path, algorithm, plaintext_footer):
    path = write(str(tmp_path / "w.parquet"), algorithm, plaintext_footer)
    resolver = _resolver()
    good = read_all(path, resolver)
    assert good[0] == list(range(1500))
    seen = set()
    mods = module_ranges(path, resolver)
    if plaintext_footer:             # the encrypted ColumnMetaData inside the signed footer
        pf = open_parquet(path, decryption=resolver)
        data = open(path, "rb").read()
        enc = pf.metadata.raw["row_groups"][0]["columns"][0]["encrypted_column_metadata"]
        at = data.rindex(enc)
        mods.append(("column metadata", at - 4 + 1, at + len(enc) - 1))
    for module, start, end in mods:
        body = start + 4
        spots = {"nonce": body + 3, "ciphertext": (body + 12 + end - 16) // 2, "tag": end - 5}
        if module == "footer signature":
            spots = {"nonce": body + 2, "tag": end - 3}
        if algorithm == "AES_GCM_CTR_V1" and module in ("data page", "dictionary page"):
            spots.pop("tag")                 # CTR pages have none: their CRC catches it
        for part, at in spots.items():
            bad = str(tmp_path / f"bad_{start}_{part}.parquet")
            flip_byte(path, bad, at)
            with pytest.raises(AuthenticationError) as e:
                read_all(bad, resolver)
            text = str(e.value)
            assert path.replace("w.parquet", "") in text, text
            assert module.split()[0] in text or "footer" in text, (module, part, text)
            seen.add(module)
    want = {"data page header", "data page", "dictionary page header", "dictionary page",
            "column index", "offset index", "bloom filter header", "bloom filter bitset"}
    assert want <= seen, want - seen
    assert ("footer signature" if plaintext_footer else "footer") in seen


def test_page_from_another_pqdb_file_and_wrong_column_key(tmp_path):
    one = write(str(tmp_path / "one.parquet"), column_keys=False)
    two = write(str(tmp_path / "two.parquet"), column_keys=False)
    resolver = KeyResolver(_resolver().registry, EncryptionConfig(footer_key="kf"))
    mine = [(s, e) for m, s, e in module_ranges(one, resolver) if m == "data page"]
    theirs = [(s, e) for m, s, e in module_ranges(two, resolver) if m == "data page"]
    (s, e), (s2, e2) = mine[1], theirs[1]
    assert e - s == e2 - s2
    data = bytearray(open(one, "rb").read())
    data[s:e] = open(two, "rb").read()[s2:e2]
    bad = str(tmp_path / "foreign.parquet")
    open(bad, "wb").write(bytes(data))
    with pytest.raises(AuthenticationError, match="data page"):
        read_all(bad, resolver)
    # column a read with column s's key
    keyed = write(str(tmp_path / "keyed.parquet"))
    cfg = EncryptionConfig(column_keys=(("a", "k2"),))
    pf = open_parquet(keyed, decryption=KeyResolver(_resolver().registry, cfg))
    with pytest.raises(AuthenticationError, match="column a"):
        pf.read_column(0, pf.column_index("a"))
    assert pf.read_column(0, pf.column_index("x")).num_rows == 1500
    # an AAD prefix not stored: needed, and checked
    hidden = str(tmp_path / "hidden.parquet")
    write(hidden, aad_prefix=b"tbl/p=1", store_aad_prefix=False)
    with pytest.raises(AuthenticationError, match="AAD prefix"):
        read_all(hidden, _resolver())
    reg = _resolver().registry
    with pytest.raises(AuthenticationError, match="footer"):
        read_all(hidden, KeyResolver(reg, EncryptionConfig(aad_prefix=b"tbl/p=2")))
    got = read_all(hidden, KeyResolver(reg, EncryptionConfig(aad_prefix=b"tbl/p=1")))
    assert got[0] == list(range(1500))


def test_no_key_in_any_repr():
    enc = FileEncryption(KEYS["kf"], b"kf", {"a": ColumnKey(KEYS["k1"], b"k1")})
    _, leaves = build_schema([n for n, _ in SCHEMA], [t for _, t in SCHEMA])
    sink = EncryptingSink(enc, leaves)
    for text in (repr(enc), str(enc), repr(enc.column_keys["a"]), repr(sink)):
        assert "kf" in text or "192-bit key" in text
        for key in KEYS.values():
            assert key.decode() not in text and repr(key) not in text
