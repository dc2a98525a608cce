"""Encrypted Parquet through SQL and the API: the connection's key registry
(PRAGMA add_parquet_key, Connection.add_parquet_key), a KMS client
(connect(kms_client=...)), read_parquet(..., encryption_config = {...}),
partial access, parallel row-range scans, and keys kept out of every
message, EXPLAIN and repr."""

from __future__ import annotations

import base64
import os

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import AuthenticationError, BinderError, ProgrammingError
from planner import frontend
from scan.keys import unwrap_locally
from tests.paths import CORPUS_DATA
from tests.scan.crypto_files import CORPUS_KEYS, write_plain_and_keyed, write_uniform, write_with_kms

D = CORPUS_DATA
SECRETS = [k.decode() for k in CORPUS_KEYS.values()]


def keyed(**options):
    con = engine.connect(**options)
    con.sql("PRAGMA add_parquet_key('kf', '0123456789012345')")
    con.sql("PRAGMA add_parquet_key('kc1', '1234567890123450'); "
            "PRAGMA add_parquet_key('kc2', '1234567890123451')")
    return con


def _no_secret(text: str) -> None:
    for s in SECRETS + [base64.b64encode(k).decode() for k in CORPUS_KEYS.values()]:
        assert s not in text, text


def test_corpus_files_through_sql():
    con = keyed()
    want = con.sql(f"SELECT count(*), sum(double_field), sum(float_field), count(ba_field), "
                   f"min(ba_field) FROM read_parquet('{D}/uniform_encryption.parquet.encrypted')"
                   ).fetchall()
    assert want[0][0] == 50
    for name in ("encrypt_columns_and_footer", "encrypt_columns_and_footer_aad",
                 "encrypt_columns_and_footer_ctr", "encrypt_columns_plaintext_footer"):
        got = con.sql(f"SELECT count(*), sum(double_field), sum(float_field), count(ba_field), "
                      f"min(ba_field) FROM '{D}/{name}.parquet.encrypted'").fetchall()
        assert got == want, name
    got = con.sql(f"SELECT count(*), sum(double_field), sum(float_field), count(ba_field), "
                  f"min(ba_field) FROM read_parquet('{D}/encrypt_columns_and_footer_disable_aad_"
                  f"storage.parquet.encrypted', encryption_config = {{aad_prefix: 'tester'}})"
                  ).fetchall()
    assert got == want
    # external key material (the sidecar), double wrapping, master keys kf/kc1/kc2
    assert con.sql(f"SELECT count(*), sum(integers), max(strings) FROM "
                   f"'{D}/external_key_material_java.parquet.encrypted'").fetchall() == \
        [(100, 4950, "j99")]
    # a bloom-filtered equality on an encrypted column
    assert con.sql(f"SELECT count(*) FROM '{D}/encrypt_columns_and_footer_bloom_filter.parquet"
                   f".encrypted' WHERE double_field = 17.5").fetchall() == [(1,)]


def test_keys_as_bytes_and_base64():
    con = engine.connect()
    con.add_parquet_key("kf", CORPUS_KEYS["kf"])
    con.add_parquet_key("kc1", base64.b64encode(b"x" * 32).decode())     # another key, base64
    con.sql(f"PRAGMA add_parquet_key('kc1', '{CORPUS_KEYS['kc1'].decode()}')")   # replaced
    con.add_parquet_key("kc2", CORPUS_KEYS["kc2"])
    assert con.sql(f"SELECT count(double_field) FROM '{D}/encrypt_columns_and_footer.parquet"
                   f".encrypted'").fetchall() == [(50,)]
    for bad in ("short", b"\x00" * 17, "!" * 44):
        with pytest.raises(ProgrammingError, match="16, 24 or 32 bytes") as e:
            con.add_parquet_key("k", bad)
        assert "short" not in str(e.value) and "!!!" not in str(e.value)
    with pytest.raises(ProgrammingError):
        con.sql("PRAGMA add_parquet_key('k', 'way too short')")
    with pytest.raises(ProgrammingError, match="2 string arguments"):
        con.sql("PRAGMA add_parquet_key('k')")


def test_encryption_config_names_keys(tmp_path):
    path = str(tmp_path / "u.parquet")
    t = pa.table({"a": np.arange(1000), "s": [f"v{i % 5}" for i in range(1000)]})
    write_uniform(t, path, b"Q" * 32, aad_prefix=b"p0", store_aad_prefix=False)
    con = engine.connect()
    con.add_parquet_key("mine", b"Q" * 32)
    q = (f"SELECT sum(a), count(DISTINCT s) FROM read_parquet('{path}', encryption_config = "
         f"{{footer_key: 'mine', aad_prefix: 'p0'}})")
    assert con.sql(q).fetchall() == [(499500, 5)]
    with pytest.raises(AuthenticationError, match="AAD prefix"):
        con.sql(f"SELECT * FROM read_parquet('{path}', encryption_config = {{footer_key: 'mine'}})")
    with pytest.raises(AuthenticationError, match="AAD prefix it does not store"):
        con.sql(f"SELECT * FROM '{path}'")
    with pytest.raises(AuthenticationError, match="no key named 'other'"):
        con.sql(f"SELECT * FROM read_parquet('{path}', encryption_config = "
                f"{{footer_key: 'other', aad_prefix: 'p0'}})")
    with pytest.raises(BinderError, match="no field 'footer'"):
        con.sql(f"SELECT * FROM read_parquet('{path}', encryption_config = {{footer: 'mine'}})")
    with pytest.raises(BinderError, match="takes a struct"):
        con.sql(f"SELECT * FROM read_parquet('{path}', encryption_config = 'mine')")
    # column_keys override the key metadata (a key for another column fails)
    keyed_con = keyed()
    q = (f"SELECT sum(double_field) FROM read_parquet('{D}/encrypt_columns_and_footer.parquet"
         f".encrypted', encryption_config = {{column_keys: {{double_field: 'kc2'}}}})")
    with pytest.raises(AuthenticationError, match="column double_field") as e:
        keyed_con.sql(q)
    _no_secret(str(e.value))


class RecordingKms:
    """A user's KMS client: parquet-java InMemoryKMS unwrapping, recording calls."""

    def __init__(self, masters):
        self.masters, self.calls = masters, []

    def unwrap_key(self, wrapped: bytes, master_key_id: str) -> bytes:
        self.calls.append((type(wrapped), master_key_id))
        return unwrap_locally(wrapped.decode(), self.masters[master_key_id],
                              master_key_id.encode(), "kms")


def test_kms_client_unwraps_key_material(tmp_path):
    masters = {"footer-mk": os.urandom(16), "col-mk": os.urandom(32)}
    path = str(tmp_path / "kms.parquet")
    t = pa.table({"a": np.arange(500), "b": np.arange(500) * 2.0})
    for internal in (True, False):
        write_with_kms(t, path, masters, "footer-mk", {"col-mk": ["b"]}, internal=internal,
                       double_wrapping=internal)
        kms = RecordingKms(masters)
        con = engine.connect(kms_client=kms)
        assert con.sql(f"SELECT sum(a), sum(b) FROM '{path}'").fetchall() == [(124750, 249500.0)]
        assert {m for _, m in kms.calls} == {"footer-mk", "col-mk"}
        assert all(t is bytes for t, _ in kms.calls)
        con2 = engine.connect()             # no client: master keys from the registry
        with pytest.raises(AuthenticationError, match="footer"):
            con2.sql(f"SELECT * FROM '{path}'")
        for name, key in masters.items():
            con2.add_parquet_key(name, key)
        assert con2.sql(f"SELECT sum(b) FROM '{path}'").fetchall() == [(249500.0,)]
    with pytest.raises(ProgrammingError, match="unwrap_key"):
        engine.connect(kms_client=object())


def test_partial_access():
    con = engine.connect()
    path = f"{D}/encrypt_columns_plaintext_footer.parquet.encrypted"
    assert con.sql(f"SELECT count(*), count(ba_field) FROM '{path}'").fetchall() == [(50, 25)]
    with pytest.raises(AuthenticationError, match="column double_field"):
        con.sql(f"SELECT sum(double_field) FROM '{path}'")
    con.sql("PRAGMA add_parquet_key('kf', '0123456789012345')")
    con.sql("PRAGMA add_parquet_key('kc1', '1234567890123450')")      # the file is reopened
    assert con.sql(f"SELECT round(sum(double_field), 4) FROM '{path}'").fetchall() == \
        [(1361.1111,)]
    with pytest.raises(AuthenticationError, match="'kc2' for column float_field"):
        con.sql(f"SELECT sum(float_field) FROM '{path}'")
    enc = f"{D}/encrypt_columns_and_footer.parquet.encrypted"
    assert con.sql(f"SELECT count(ba_field) FROM '{enc}'").fetchall() == [(25,)]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """300,000 rows in two row groups, every column with its own key."""
    d = tmp_path_factory.mktemp("big")
    r = np.random.default_rng(3)
    n = 300_000
    t = pa.table({"k": np.arange(n, dtype=np.int64), "q": r.integers(1, 50, n).astype(np.int32),
                  "p": np.round(r.random(n) * 1000, 2), "f": pa.array(
                      np.array(["A", "N", "R"])[r.integers(0, 3, n)])})
    return write_plain_and_keyed(t, str(d), row_group_size=150_000, write_page_index=True)


QUERIES = [
    "SELECT f, sum(q), round(sum(p), 2), count(*) FROM {t} GROUP BY f ORDER BY f",
    "SELECT round(sum(p), 2), count(*) FROM {t} WHERE k BETWEEN 12345 AND 54321 AND q < 10",
    "SELECT k, p FROM {t} WHERE k >= 299990 ORDER BY k",
    "SELECT count(*) FROM {t} WHERE f = 'R' AND p > 990",
]


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_row_range_scans_match_plaintext(big, threads):
    plain, enc, masters = big
    con = engine.connect(threads=threads, block_rows=8192)
    for name, key in masters.items():
        con.add_parquet_key(name, key)
    for q in QUERIES:
        want = con.sql(q.format(t=f"'{plain}'")).fetchall()
        got = con.sql(q.format(t=f"'{enc}'")).fetchall()
        assert got == want, q
        assert con.sql(q.format(t=f"'{enc}'")).fetchall() == want      # cached plaintext


def test_keys_never_shown(tmp_path):
    con = keyed()
    path = f"{D}/encrypt_columns_and_footer.parquet.encrypted"
    texts = [repr(con), repr(con.catalog.keys), str(frontend.parse_statements(
        "PRAGMA add_parquet_key('x', '0123456789012345')"))]
    texts.append(con.sql(f"EXPLAIN SELECT * FROM read_parquet('{path}', encryption_config = "
                         f"{{footer_key: 'kf'}})").fetchall()[0][0])
    assert not any("0123456789012345" in k for k in frontend._PARSED)
    bad = engine.connect()
    bad.add_parquet_key("kf", "9999999999999999")
    for q in (f"SELECT * FROM '{path}'", "PRAGMA add_parquet_key('k', '0123456789012345"):
        try:
            bad.sql(q)
        except Exception as e:             # noqa: BLE001
            texts.append(str(e))
            texts.append(repr(e))
    for text in texts:
        _no_secret(text)
        assert "9999999999999999" not in text


def test_statistics_of_a_column_without_its_key_skip_nothing(tmp_path):
    """A plaintext footer's statistics of a column whose key is missing are
    not trusted to skip row groups: the query touches the column, and says
    its key is missing, rather than answering from unverifiable metadata."""
    from tests.scan.thrift_writer import rewrite_footer
    src = str(tmp_path / "src.parquet")
    masters = {"mf": os.urandom(16), "mc": os.urandom(16)}
    write_with_kms(pa.table({"a": np.arange(100), "b": np.arange(100)}), src, masters, "mf",
                   {"mc": ["a"]}, plaintext_footer=True)
    dst = str(tmp_path / "dst.parquet")

    def plant(raw):                       # statistics claiming a is at most 5
        md = raw["row_groups"][0]["columns"][0]["meta_data"]
        md["statistics"] = {"min_value": (0).to_bytes(8, "little"),
                            "max_value": (5).to_bytes(8, "little"), "null_count": 0}
    rewrite_footer(src, dst, plant)
    con = engine.connect()
    assert con.sql(f"SELECT count(*) FROM '{dst}' WHERE b > 50").fetchall() == [(49,)]
    with pytest.raises(AuthenticationError, match="column a"):
        con.sql(f"SELECT count(*) FROM '{dst}' WHERE a > 50")
