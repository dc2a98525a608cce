"""Tampered, misplaced, truncated or wrongly keyed encrypted files: every
failure is an AuthenticationError naming file and module -- never rows of
garbage, never another exception -- and no message holds a key.

Files come from pyarrow (GCM and CTR with page CRCs, per-column keys,
page indexes) and the corpus (bloom filters).  ``module_ranges`` finds the
byte range of every module: footer, column metadata, page headers and
pages (data and dictionary), column and offset indexes, bloom filter header
and bitset; each is flipped at its nonce, ciphertext and tag."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from scan import open_parquet
from scan import thrift as T
from scan.crypto import LENGTH, NONCE, TAG
from scan.errors import AuthenticationError
from scan.keys import EncryptionConfig, KeyRegistry, KeyResolver
from tests.paths import CORPUS_DATA
from tests.scan.crypto_files import CORPUS_KEYS, flip_byte, write_uniform, write_with_kms

MASTER = {"mf": b"F" * 16, "m1": b"1" * 16, "m2": b"2" * 32}
KEY = b"U" * 24


def _registry(keys):
    reg = KeyRegistry()
    for k, v in keys.items():
        reg.add(k, v)
    return reg


def _table(n=3000):
    r = np.random.default_rng(7)
    return pa.table({"a": pa.array(np.arange(n, dtype=np.int64)),
                     "s": pa.array([f"v{i % 13}" for i in range(n)]),
                     "x": pa.array(r.normal(size=n))})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tamper")
    out = {}
    opts = dict(row_group_size=1500, data_page_size=2000, write_page_index=True,
                write_page_checksum=True)
    for algo in ("AES_GCM_V1", "AES_GCM_CTR_V1"):
        for footer in ("enc", "plain"):
            p = str(d / f"{algo}_{footer}.parquet")
            write_with_kms(_table(), p, MASTER, "mf", {"m1": ["a"], "m2": ["s"]}, algo,
                           footer == "plain", **opts)
            out[(algo, footer)] = (p, KeyResolver(_registry(MASTER)))
    p = str(d / "uniform.parquet")
    write_uniform(_table(), p, KEY, aad_prefix=b"t.part0", **opts)
    out["uniform"] = (p, KeyResolver(_registry({"k": KEY}), EncryptionConfig(footer_key="k")))
    p = str(d / "uniform2.parquet")
    write_uniform(_table(), p, KEY, aad_prefix=b"t.part0", **opts)
    out["uniform2"] = (p, out["uniform"][1])
    name = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
    out["bloom"] = (os.path.join(CORPUS_DATA, name), KeyResolver(_registry(CORPUS_KEYS)))
    return out


def read_all(path, resolver):
    """Everything a query could touch: every column (whole and by a row
    range), page index and bloom filter."""
    pf = open_parquet(path, decryption=resolver)
    got = []
    for rg in range(len(pf.row_groups)):
        n = pf.row_groups[rg].num_rows
        for col in pf.columns:
            got.append(pf.read_column(rg, col.index).to_pylist())
            got.append(pf.read_column(rg, col.index, row_start=n // 2, row_count=n // 4).to_pylist())
            got.append(pf.column_index(rg, col.index))
            got.append(pf.offset_index(rg, col.index))
            got.append(pf.bloom_filter(rg, col.index))
    return got


def module_ranges(path, resolver) -> list:
    """(module name, start of its length prefix, end) of every module."""
    pf = open_parquet(path, decryption=resolver)
    data = open(path, "rb").read()
    size = len(data)
    out = []
    n = int.from_bytes(data[-8:-4], "little")
    if data[-4:] == b"PARE":
        _, pos = T.decode_struct(data, T.FILE_CRYPTO_META_DATA, size - 8 - n, size - 8)
        out.append(("footer", pos, size - 8))
    else:
        out.append(("footer signature", size - 8 - NONCE - TAG - LENGTH, size - 8))
    for rg in pf.row_groups:
        for chunk in rg.columns:
            if chunk.crypto is None:
                continue
            buf = np.frombuffer(data[chunk.start:chunk.start + chunk.length], np.uint8)
            _, where = chunk.crypto.plaintext_chunk(buf, chunk.num_values,
                                                    bool(chunk.dictionary_page_offset))
            for i, pos in enumerate(sorted(where)):
                dict_page = i == 0 and bool(chunk.dictionary_page_offset)
                kind = "dictionary page" if dict_page else "data page"
                he = pos + LENGTH + int.from_bytes(buf[pos:pos + LENGTH].tobytes(), "little")
                pe_ = he + LENGTH + int.from_bytes(buf[he:he + LENGTH].tobytes(), "little")
                out.append((kind + " header", chunk.start + pos, chunk.start + he))
                out.append((kind, chunk.start + he, chunk.start + pe_))
            for which in ("column_index", "offset_index"):
                off, length = getattr(chunk, which + "_offset"), getattr(chunk, which + "_length")
                if off is not None:
                    out.append((which.replace("_", " "), off, off + length))
            if chunk.bloom_filter_offset is not None:
                off = chunk.bloom_filter_offset
                he = off + LENGTH + int.from_bytes(data[off:off + LENGTH], "little")
                be = he + LENGTH + int.from_bytes(data[he:he + LENGTH], "little")
                out.append(("bloom filter header", off, he))
                out.append(("bloom filter bitset", he, be))
    return out


def _spots(start, end):
    """Nonce, ciphertext and tag bytes of the module [start, end)."""
    body = start + LENGTH
    return {"nonce": body + 3, "ciphertext": (body + NONCE + end - TAG) // 2, "tag": end - 5}


def _expect_failure(path, resolver, module):
    with pytest.raises(AuthenticationError) as e:
        read_all(path, resolver)
    text = str(e.value)
    assert path in text, text
    assert module.split()[0] in text or "footer" in text, (module, text)
    for key in list(MASTER.values()) + [KEY] + list(CORPUS_KEYS.values()):
        assert key.decode("latin-1") not in text
    return text


@pytest.mark.parametrize("which", [("AES_GCM_V1", "enc"), ("AES_GCM_V1", "plain"),
                                   ("AES_GCM_CTR_V1", "enc"), ("AES_GCM_CTR_V1", "plain"),
                                   "uniform", "bloom"])
def test_every_module_flipped_fails_authentication(files, tmp_path, which):
    path, resolver = files[which]
    good = read_all(path, resolver)
    assert good
    seen = set()
    for module, start, end in module_ranges(path, resolver):
        spots = _spots(start, end) if module != "footer signature" else \
            {"nonce": start + LENGTH + 2, "tag": end - 3}
        for part, at in spots.items():
            bad = str(tmp_path / f"bad_{start}_{part}.parquet")
            flip_byte(path, bad, at)
            _expect_failure(bad, resolver, module)
            seen.add(module)
    want = {"data page header", "data page", "column index", "offset index"}
    assert want <= seen, seen
    if which == "bloom":
        assert {"bloom filter header", "bloom filter bitset"} <= seen


def test_column_metadata_flipped_fails(files, tmp_path):
    """Encrypted ColumnMetaData in a plaintext footer: the footer signature
    catches it, and with integrity checks off, the column metadata's tag."""
    path, resolver = files[("AES_GCM_V1", "plain")]
    data = open(path, "rb").read()
    pf = open_parquet(path, decryption=resolver)
    raw = pf.metadata.raw["row_groups"][0]["columns"][0]
    enc = raw["encrypted_column_metadata"]
    at = data.rindex(enc) + len(enc) // 2
    bad = str(tmp_path / "cmd.parquet")
    flip_byte(path, bad, at)
    _expect_failure(bad, resolver, "footer")
    lax = KeyResolver(resolver.registry, EncryptionConfig(check_footer_integrity=False))
    text = _expect_failure(bad, lax, "column metadata")
    assert "column metadata" in text and "column a" in text


def _swap(path, dst, a, b):
    data = bytearray(open(path, "rb").read())
    (a0, a1), (b0, b1) = a, b
    assert a1 - a0 == b1 - b0 and a1 <= b0
    data[a0:a1], data[b0:b1] = bytes(data[b0:b1]), bytes(data[a0:a1])
    open(dst, "wb").write(bytes(data))


def test_pages_and_chunks_swapped_fail(tmp_path):
    """Pages of equal size swapped within a chunk (page ordinals), and two
    row groups' chunks of a column swapped (row group ordinals)."""
    path = str(tmp_path / "plain.parquet")
    write_uniform(pa.table({"a": np.arange(4000, dtype=np.int64)}), path, KEY,
                  row_group_size=2000, data_page_size=4096, use_dictionary=False,
                  compression="NONE", write_statistics=False)
    resolver = KeyResolver(_registry({"k": KEY}), EncryptionConfig(footer_key="k"))
    read_all(path, resolver)
    pages = [(s, e) for m, s, e in module_ranges(path, resolver) if m == "data page"]
    i, j = next((i, j) for i in range(len(pages)) for j in range(i + 1, len(pages))
                if pages[i][1] - pages[i][0] == pages[j][1] - pages[j][0])
    bad = str(tmp_path / "swapped.parquet")
    _swap(path, bad, pages[i], pages[j])
    _expect_failure(bad, resolver, "data page")
    pf = open_parquet(path, decryption=resolver)
    c0, c1 = pf.row_groups[0].columns[0], pf.row_groups[1].columns[0]
    _swap(path, bad, (c0.start, c0.start + c0.length), (c1.start, c1.start + c1.length))
    assert "row group 0" in _expect_failure(bad, resolver, "data page")


def test_page_from_another_file_fails(files, tmp_path):
    """Same key, same rows, another file (its aad_file_unique): a page moved
    over from it fails."""
    path, resolver = files["uniform"]
    other, _ = files["uniform2"]
    mine = [(s, e) for m, s, e in module_ranges(path, resolver) if m == "data page"]
    theirs = [(s, e) for m, s, e in module_ranges(other, resolver) if m == "data page"]
    (s, e), (s2, e2) = mine[1], theirs[1]
    assert e - s == e2 - s2
    data = bytearray(open(path, "rb").read())
    data[s:e] = open(other, "rb").read()[s2:e2]
    bad = str(tmp_path / "foreign.parquet")
    open(bad, "wb").write(bytes(data))
    _expect_failure(bad, resolver, "data page")


def test_wrong_keys_fail(files):
    path, _ = files[("AES_GCM_V1", "enc")]
    wrong = dict(MASTER, mf=b"W" * 16)
    with pytest.raises(AuthenticationError, match="footer"):
        read_all(path, KeyResolver(_registry(wrong)))
    upath, resolver = files["uniform"]
    with pytest.raises(AuthenticationError, match="footer"):
        read_all(upath, KeyResolver(_registry({"k": b"V" * 24}), EncryptionConfig(footer_key="k")))
    with pytest.raises(AuthenticationError, match="AAD prefix"):
        read_all(upath, KeyResolver(_registry({"k": KEY}),
                                    EncryptionConfig(footer_key="k", aad_prefix=b"t.part1")))


def test_key_of_another_column_fails(tmp_path):
    path = str(tmp_path / "k.parquet")
    write_with_kms(_table(300), path, MASTER, "mf", {"m1": ["a"], "m2": ["s"]})
    reg = _registry(dict(MASTER, c1=b"c" * 16, c2=b"d" * 16))
    # a config naming a registry key for column a: the key is not a's
    cfg = EncryptionConfig(column_keys=(("a", "c1"),))
    pf = open_parquet(path, decryption=KeyResolver(reg, cfg))
    with pytest.raises(AuthenticationError, match="column metadata.*column a"):
        pf.read_column(0, pf.column_index("a"))
    assert pf.read_column(0, pf.column_index("x")).num_rows == 300   # others still read
    # the data key of column s given for column a
    from scan.crypto import FileCrypto  # noqa: F401  (the key as the file has it)
    pf2 = open_parquet(path, decryption=KeyResolver(reg))
    s_key = pf2.row_groups[0].columns[pf2.column_index("s")].crypto.cipher._key
    reg.add("skey", s_key)
    pf3 = open_parquet(path, decryption=KeyResolver(reg, EncryptionConfig(
        column_keys=(("a", "skey"),))))
    with pytest.raises(AuthenticationError, match="column a"):
        pf3.read_column(0, pf3.column_index("a"))


def test_truncated_files_fail(files, tmp_path):
    for which in (("AES_GCM_V1", "enc"), "uniform"):
        path, resolver = files[which]
        data = open(path, "rb").read()
        for cut in (1, 7, 40, len(data) // 2, len(data) - 20):
            bad = str(tmp_path / f"cut{cut}.parquet")
            open(bad, "wb").write(data[:len(data) - cut])
            with pytest.raises(AuthenticationError, match="footer|truncated"):
                read_all(bad, resolver)


def test_missing_keys_name_what_is_missing(files):
    path, _ = files[("AES_GCM_V1", "plain")]
    pf = open_parquet(path)                          # no keys: plaintext footer
    assert pf.read_column(0, pf.column_index("x")).num_rows == 1500
    with pytest.raises(AuthenticationError, match="column a") as e:
        pf.read_column(0, pf.column_index("a"))
    assert "master key" in str(e.value)
    path, _ = files[("AES_GCM_V1", "enc")]
    with pytest.raises(AuthenticationError, match="footer"):
        open_parquet(path)
    only_footer = KeyResolver(_registry({"mf": MASTER["mf"]}))
    pf = open_parquet(path, decryption=only_footer)
    assert pf.read_column(0, pf.column_index("x")).num_rows == 1500
    with pytest.raises(AuthenticationError, match="column s"):
        pf.read_column(0, pf.column_index("s"))


def test_ctr_pages_without_crc_are_not_authenticated(tmp_path):
    """AES_GCM_CTR_V1 leaves pages unauthenticated (spec 4.2.2): without a
    page CRC a flipped page byte is not detected -- but its header is."""
    path = str(tmp_path / "ctr.parquet")
    write_uniform(_table(300), path, KEY, algorithm="AES_GCM_CTR_V1")
    resolver = KeyResolver(_registry({"k": KEY}), EncryptionConfig(footer_key="k"))
    mods = module_ranges(path, resolver)
    s, e = next((s, e) for m, s, e in mods if m == "data page header")
    bad = str(tmp_path / "bad.parquet")
    flip_byte(path, bad, (s + e) // 2)
    _expect_failure(bad, resolver, "data page header")
