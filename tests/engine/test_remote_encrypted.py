"""Encrypted Parquet over http: the conformance corpus's encrypted files and
a per-column-keyed file of several row groups served by the test server
give the local rows; a missing key names the URL; the disk cache keeps
the bytes as the server sent them (ciphertext), never decrypted data."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import AuthenticationError
from tests.http_server import bounded
from tests.paths import CORPUS_DATA
from tests.scan.crypto_files import write_plain_and_keyed

CORPUS = ("uniform_encryption", "encrypt_columns_and_footer", "encrypt_columns_and_footer_aad",
          "encrypt_columns_and_footer_ctr", "encrypt_columns_plaintext_footer")
MARKER = "plaintext-marker-"          # every value of column s starts with it


def corpus_keys(con) -> None:
    con.sql("PRAGMA add_parquet_key('kf', '0123456789012345')")
    con.sql("PRAGMA add_parquet_key('kc1', '1234567890123450'); "
            "PRAGMA add_parquet_key('kc2', '1234567890123451')")


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_files_over_http(fault_server, name):
    path = f"{CORPUS_DATA}/{name}.parquet.encrypted"
    url = fault_server.add(f"enc/{name}", path)
    con = engine.connect()
    corpus_keys(con)
    q = "SELECT count(*), count(ba_field), min(ba_field), sum(double_field) FROM '{}'"
    want = con.sql(q.format(path)).fetchall()
    assert want[0][0] == 50
    assert bounded(lambda: con.sql(q.format(url)).fetchall()) == want


@pytest.fixture(scope="module")
def keyed_file(tmp_path_factory):
    """40,000 rows in four row groups, each column under its own master key."""
    d = tmp_path_factory.mktemp("remote_enc")
    r = np.random.default_rng(5)
    n = 40_000
    t = pa.table({"k": np.arange(n, dtype=np.int64), "q": r.integers(1, 50, n).astype(np.int32),
                  "s": pa.array([f"{MARKER}{i % 97}" for i in range(n)])})
    return write_plain_and_keyed(t, str(d), row_group_size=10_000, write_page_index=True,
                                 compression="none")


QUERIES = [
    "SELECT s, sum(q), count(*) FROM {} GROUP BY s ORDER BY s",
    "SELECT k, q, s FROM {} WHERE k BETWEEN 12345 AND 12360 ORDER BY k",
    "SELECT count(*), min(s) FROM {} WHERE q < 3",
]


@pytest.mark.parametrize("threads", [1, 2])
def test_column_keys_over_http(fault_server, keyed_file, threads):
    plain, enc, masters = keyed_file
    url = fault_server.add(f"enc/keyed-{threads}.parquet", enc)
    con = engine.connect(threads=threads, block_rows=4096)
    for name, key in masters.items():
        con.add_parquet_key(name, key)
    for q in QUERIES:
        want = con.sql(q.format(f"'{plain}'")).fetchall()
        assert bounded(lambda: con.sql(q.format(f"'{url}'")).fetchall()) == want, q
        assert bounded(lambda: con.sql(q.format(f"'{url}'")).fetchall()) == want, q  # cached


def test_missing_key_over_http_names_the_url(fault_server, keyed_file):
    _, enc, masters = keyed_file
    url = fault_server.add("enc/nokey.parquet", enc)
    con = engine.connect()
    with pytest.raises(AuthenticationError, match="no key for the footer") as e:
        con.sql(f"SELECT count(*) FROM '{url}'")
    assert url in str(e.value)
    con.add_parquet_key("mf", masters["mf"])                  # footer, not column s
    with pytest.raises(AuthenticationError, match="column s"):
        con.sql(f"SELECT min(s) FROM '{url}'")


def _cached_bytes(cache: str) -> bytes:
    out = b""
    for root, _, files in os.walk(cache):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                out += fh.read()
    return out


def test_disk_cache_holds_ciphertext_only(fault_server, keyed_file, tmp_path):
    plain, enc, masters = keyed_file
    q = "SELECT count(DISTINCT s), sum(q) FROM {}"
    found = {}
    for name, path in (("plain", plain), ("enc", enc)):
        url = fault_server.add(f"enc/cached-{name}.parquet", path)
        cache = str(tmp_path / name)
        con = engine.connect(remote_cache_dir=cache)
        for key_name, key in masters.items():
            con.add_parquet_key(key_name, key)
        assert bounded(lambda: con.sql(q.format(f"'{url}'")).fetchall()) == \
            con.sql(q.format(f"'{plain}'")).fetchall()
        con.close()
        found[name] = MARKER.encode() in _cached_bytes(cache)
    # the uncompressed plaintext file shows its strings in the cache; the
    # encrypted one (same rows, same compression) does not
    assert found == {"plain": True, "enc": False}
