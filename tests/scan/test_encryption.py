"""Parquet Modular Encryption, reading (scan/crypto.py, scan/keys.py): every
encrypted file of the corpus (data/ and data/aes256/) read as pyarrow reads
it, with the keys its SOURCE file lists; files pyarrow writes with seeded
random options read identically, whole and by row ranges."""

from __future__ import annotations

import glob
import os
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

from scan import open_parquet
from scan.errors import AuthenticationError
from scan.keys import EncryptionConfig, KeyRegistry, KeyResolver, parse_key
from tests.paths import CORPUS_DATA
from tests.scan.crypto_files import (AES256_KEYS, CORPUS_KEYS, read_uniform, read_with_kms,
                                     write_uniform, write_with_kms)
from tests.scan.oracle import compare_nested_field, expected_storage, first_difference, same_values

ENCRYPTED = sorted(os.path.relpath(p, CORPUS_DATA) for p in
                   glob.glob(os.path.join(CORPUS_DATA, "**", "*.parquet.encrypted"), recursive=True))
FAMILY = "uniform_encryption.parquet.encrypted"     # the same 50 rows as the encrypt_* files


def registry(keys: dict) -> KeyRegistry:
    reg = KeyRegistry()
    for name, key in keys.items():
        reg.add(name, key)
    return reg


def corpus_keys(name: str):
    keys = AES256_KEYS if name.startswith("aes256") else CORPUS_KEYS
    aad = b"tester" if "disable_aad_storage" in name else None
    return keys, aad


def corpus_resolver(name: str) -> KeyResolver:
    keys, aad = corpus_keys(name)
    return KeyResolver(registry(keys), EncryptionConfig(aad_prefix=aad))


def _pyarrow_file(path: str, keys: dict, aad) -> pq.ParquetFile:
    props = pe.create_decryption_properties(keys["kf"], aad_prefix=aad)
    return pq.ParquetFile(path, decryption_properties=props, coerce_int96_timestamp_unit="us")


def _oracle(name: str):
    """(pyarrow file of ``name``, pyarrow file of the same data readable in
    full, or None) -- pyarrow's low-level keys cover the footer key only, so
    columns with their own key are checked against the uniform file of the
    same directory, which holds the same rows."""
    keys, aad = corpus_keys(name)
    path = os.path.join(CORPUS_DATA, name)
    own = None
    if not name.startswith("external"):
        own = _pyarrow_file(path, keys, aad)
    family = None
    if os.path.basename(name).startswith(("encrypt_columns", "uniform")) and "bloom" not in name:
        family = _pyarrow_file(os.path.join(os.path.dirname(path), FAMILY), keys, None)
    return own, family


def _column_from(files, name: str, rg: int):
    for f in files:
        if f is None:
            continue
        try:
            return f.read_row_group(rg, columns=[name])
        except OSError:                    # a column key pyarrow cannot be given
            continue
    return None


@pytest.mark.parametrize("name", ENCRYPTED)
def test_corpus_file_reads_as_pyarrow(name):
    path = os.path.join(CORPUS_DATA, name)
    pf = open_parquet(path, decryption=corpus_resolver(name))
    assert pf.crypto is not None
    own, family = _oracle(name)
    if name.startswith("external"):
        table = read_with_kms(path, CORPUS_KEYS, internal=False)
        theirs = {c: table.column(c) for c in table.column_names}
    compared = 0
    for rg in range(len(pf.row_groups)):
        for col in pf.columns:
            if col.nested:
                continue
            got = pf.read_column(rg, col.index).to_pylist()
            if name.startswith("external"):
                exp = expected_storage(theirs[col.name], col)
            elif "bloom_filter" in name and col.name in ("double_field", "float_field"):
                # pyarrow cannot take these column keys, and no other file holds
                # the rows: parquet-java wrote i + 0.5 and i + 0.25
                step = 0.5 if col.name == "double_field" else 0.25
                exp = [i + step for i in range(pf.num_rows)]
            else:
                exp = expected_storage(_column_from((own, family), col.name, rg).column(0), col)
            assert same_values(got, exp), f"{name} {col.name}: {first_difference(got, exp)}"
            compared += 1
        for field in sorted({c.path[0] for c in pf.columns if c.nested}):
            compare_nested_field(path, pf, rg, field, theirs=family)
            compared += 1
    assert compared == len({c.path[0] for c in pf.columns})


@pytest.mark.parametrize("name", ENCRYPTED)
def test_corpus_row_ranges_match_whole_chunks(name):
    pf = open_parquet(os.path.join(CORPUS_DATA, name), decryption=corpus_resolver(name))
    n = pf.row_groups[0].num_rows
    for col in pf.columns:
        if col.nested:
            continue
        whole = pf.read_column(0, col.index).to_pylist()
        for start, count in ((0, n // 3), (n // 3, n // 3), (2 * (n // 3), n - 2 * (n // 3))):
            part = pf.read_column(0, col.index, row_start=start, row_count=count).to_pylist()
            assert same_values(part, whole[start:start + count]), (name, col.name, start)


def test_aes256_keys_are_32_bytes_and_per_column():
    pf = open_parquet(os.path.join(CORPUS_DATA, "aes256", "encrypt_columns_and_footer.parquet"
                                   ".encrypted"), decryption=corpus_resolver("aes256/x"))
    names = {c.crypto.file.resolver.column_key(col.name, None) for c, col in
             zip(pf.row_groups[0].columns, pf.columns)} - {None}
    assert not names                      # nothing by configuration: all by key metadata
    assert all(len(c.crypto.cipher._key) == 32 for c in pf.row_groups[0].columns)


def test_corpus_page_index_and_bloom_filters_decrypt():
    name = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
    pf = open_parquet(os.path.join(CORPUS_DATA, name), decryption=corpus_resolver(name))
    for col in pf.columns:
        ci, oi = pf.column_index(0, col.index), pf.offset_index(0, col.index)
        assert ci.num_pages == oi.num_pages > 0
        values = pf.read_column(0, col.index).to_pylist()
        for p in range(ci.num_pages):          # each page's rows within its bounds
            lo, hi = int(oi.first_row_indexes[p]), int(oi.first_row_indexes[p]) + \
                int(oi.row_counts[p])
            assert min(values[lo:hi]) == ci.min_values[p] and max(values[lo:hi]) == ci.max_values[p]
    for col in ("double_field", "float_field"):
        bf = pf.bloom_filter(0, pf.column_index(col))
        values = pf.read_column(0, pf.column_index(col)).to_pylist()
        assert all(bf.might_contain(v) for v in values)
        assert sum(bf.might_contain(v + 0.125) for v in values) < len(values) // 10


def test_plaintext_footer_without_keys_reads_its_plaintext_columns():
    name = "encrypt_columns_plaintext_footer.parquet.encrypted"
    path = os.path.join(CORPUS_DATA, name)
    pf = open_parquet(path)
    theirs = pq.ParquetFile(path, coerce_int96_timestamp_unit="us")
    for col in pf.columns:
        if col.nested:
            continue
        if col.name in ("double_field", "float_field"):
            with pytest.raises(AuthenticationError, match=f"column {col.name}") as e:
                pf.read_column(0, col.index)
            assert "kc" in str(e.value) and name in str(e.value)
            continue
        exp = expected_storage(theirs.read_row_group(0, columns=[col.name]).column(0), col)
        assert same_values(pf.read_column(0, col.index).to_pylist(), exp)


def test_footer_key_alone_reads_the_footer_key_columns():
    name = "encrypt_columns_and_footer.parquet.encrypted"
    pf = open_parquet(os.path.join(CORPUS_DATA, name),
                      decryption=KeyResolver(registry({"kf": CORPUS_KEYS["kf"]})))
    assert pf.read_column(0, pf.column_index("ba_field")).num_rows == 50
    with pytest.raises(AuthenticationError, match="'kc1' for column double_field"):
        pf.read_column(0, pf.column_index("double_field"))
    with pytest.raises(AuthenticationError, match="column double_field"):
        pf.column_index(0, pf.column_index("double_field"))


# ---- files pyarrow writes, options drawn at random ----------------------------------

def _table(rng: random.Random, n: int) -> pa.Table:
    r = np.random.default_rng(rng.randrange(1 << 30))
    ints = r.integers(-1000, 1000, n)
    nulls = r.random(n) < 0.2
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "x": pa.array(r.normal(size=n)),
        "s": pa.array([f"s{v % 37}" for v in ints]),
        "o": pa.array(ints.astype(np.int32), mask=nulls),
        "b": pa.array(ints % 3 == 0),
        "l": pa.array([[int(v), int(v) + 1][: int(v) % 3] for v in ints],
                      type=pa.list_(pa.int64())),
    })


MASTER = {"mf": os.urandom(16), "m1": os.urandom(16), "m2": os.urandom(32), "m3": os.urandom(24)}


def _random_file(rng: random.Random, path: str):
    """(pyarrow's table of the file, KeyResolver, description)."""
    n = rng.choice([1, 300, 2500])
    table = _table(rng, n)
    options = dict(row_group_size=rng.choice([n, 700, 1000]), data_page_size=rng.choice([512, 4096, 1 << 20]),
                   compression=rng.choice(["NONE", "SNAPPY", "ZSTD"]),
                   data_page_version=rng.choice(["1.0", "2.0"]),
                   use_dictionary=rng.random() < 0.7, write_page_index=rng.random() < 0.6,
                   write_page_checksum=rng.random() < 0.5)
    algorithm = rng.choice(["AES_GCM_V1", "AES_GCM_CTR_V1"])
    plaintext_footer = rng.random() < 0.4
    if rng.random() < 0.6:                          # key tools: column keys, key material
        cols = [c for c in table.column_names if c != "l"] + ["l.list.element"]
        rng.shuffle(cols)
        groups: dict = {}
        for c in cols[:rng.randrange(1, len(cols) + 1)]:
            groups.setdefault(rng.choice(["m1", "m2", "m3", "mf"]), []).append(c)
        internal = rng.random() < 0.6
        double = rng.random() < 0.5
        bits = rng.choice([128, 192, 256])
        write_with_kms(table, path, MASTER, "mf", groups, algorithm, plaintext_footer, double,
                       internal, bits, **options)
        expected = read_with_kms(path, MASTER, internal)
        desc = f"kms {algorithm} footer={'plain' if plaintext_footer else 'enc'} {groups} " \
               f"internal={internal} double={double} bits={bits} {options}"
        return expected, KeyResolver(registry(MASTER)), desc
    key = os.urandom(rng.choice([16, 24, 32]))
    aad = rng.choice([None, b"table.part0"])
    store = rng.random() < 0.5
    write_uniform(table, path, key, algorithm, plaintext_footer, aad, store, **options)
    expected = read_uniform(path, key, aad)
    given = aad if (aad is not None and not store) or rng.random() < 0.3 else None
    config = EncryptionConfig(footer_key="k", aad_prefix=given)
    desc = f"uniform {algorithm} footer={'plain' if plaintext_footer else 'enc'} " \
           f"aad={aad} stored={store} key={len(key)} {options}"
    return expected, KeyResolver(registry({"k": key}), config), desc


@pytest.mark.parametrize("seed", range(24))
def test_random_pyarrow_files_read_identically(tmp_path, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "f.parquet")
    expected, resolver, desc = _random_file(rng, path)
    pf = open_parquet(path, decryption=resolver)
    start = 0
    for rg in range(len(pf.row_groups)):
        n = pf.row_groups[rg].num_rows
        for col in pf.columns:
            if col.nested:
                got = pf.read_nested(rg, col.path[0]).to_pylist()
                exp = expected.column(col.path[0]).slice(start, n).to_pylist()
                assert got == exp, desc
                continue
            exp = expected_storage(expected.column(col.name).slice(start, n), col)
            got = pf.read_column(rg, col.index).to_pylist()
            assert same_values(got, exp), f"{desc} {col.name}: {first_difference(got, exp)}"
            if n > 3:
                a, b = n // 3, n // 2
                part = pf.read_column(rg, col.index, row_start=a, row_count=b - a).to_pylist()
                assert same_values(part, exp[a:b]), f"{desc} {col.name} rows {a}..{b}"
            if pf.offset_index(rg, col.index) is not None:
                assert pf.offset_index(rg, col.index).num_pages >= 1
        start += n
    assert start == expected.num_rows


def test_parse_key_raw_or_base64_and_never_shown():
    assert parse_key("0123456789012345") == b"0123456789012345"
    assert parse_key(b"k" * 32) == b"k" * 32
    import base64
    assert parse_key(base64.b64encode(b"z" * 32).decode()) == b"z" * 32
    with pytest.raises(ValueError) as e:
        parse_key("not-a-valid-key-xyz")
    assert "not-a-valid" not in str(e.value)
    reg = registry({"kf": b"0123456789012345"})
    assert "0123456789012345" not in repr(reg) and "kf" in repr(reg)
    assert "0123456789012345" not in repr(KeyResolver(reg))


@pytest.mark.parametrize("header", [
    {"type": 0, "uncompressed_page_size": 100, "compressed_page_size": 5000, "crc": -12345,
     "data_page_header": {"num_values": 10, "encoding": 0, "definition_level_encoding": 3,
                          "repetition_level_encoding": 3,
                          "statistics": {"max_value": b"abc", "min_value": b"a"}}},
    {"type": 2, "uncompressed_page_size": 100, "compressed_page_size": 5000,
     "dictionary_page_header": {"num_values": 7, "encoding": 0}},
    {"type": 3, "uncompressed_page_size": 1 << 20, "compressed_page_size": 1 << 20, "crc": 5,
     "data_page_header_v2": {"num_values": 300, "num_nulls": 0, "num_rows": 300, "encoding": 0,
                             "definition_levels_byte_length": 0,
                             "repetition_levels_byte_length": 0, "is_compressed": True}}])
def test_page_headers_are_rewritten_with_their_plaintext_size(header):
    from scan import thrift as T
    from scan.crypto import plaintext_header
    raw = T.encode_struct(header, T.PAGE_HEADER)
    want = {k: v for k, v in header.items() if k != "crc"}
    want["compressed_page_size"] = 77
    out = plaintext_header(raw, dict(want))
    assert out == T.encode_struct(want, T.PAGE_HEADER)
    assert T.decode_struct(out, T.PAGE_HEADER)[0] == want
    odd = bytes([0x16]) + raw[1:]               # field 1 as an i64: encoded in full
    assert plaintext_header(odd, dict(want)) == T.encode_struct(want, T.PAGE_HEADER)
