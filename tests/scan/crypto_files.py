"""Encrypted Parquet files for the tests, written by pyarrow (the oracle):
its key tools (``CryptoFactory``) with a KMS of parquet-java's InMemoryKMS
semantics (AES-GCM wrapping, the master key id as AAD), so pqdb unwraps
the data keys with master keys from its registry; or its low-level uniform
encryption (a direct key, AAD prefix stored or not).  Also the corpus keys
(SOURCE) and module tampering helpers."""

from __future__ import annotations

import base64
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from scan.keys import unwrap_locally, wrap_locally

CORPUS_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}
AES256_KEYS = {"kf": b"01234567890123456789012345678901",
               **{f"kc{i + 1}": b"123456789012345678901234567890" + str(12 + i).encode()
                  for i in range(8)}}


class JavaInMemoryKms(pe.KmsClient):
    """parquet-java's InMemoryKMS: keys wrapped by AES-GCM with the master
    key, its id the AAD; master keys from ``custom_kms_conf`` (base64)."""

    def __init__(self, config):
        pe.KmsClient.__init__(self)
        self.master = {k: base64.b64decode(v) for k, v in config.custom_kms_conf.items()}

    def wrap_key(self, key_bytes, master_key_identifier):
        return wrap_locally(key_bytes, self.master[master_key_identifier],
                            master_key_identifier.encode())

    def unwrap_key(self, wrapped_key, master_key_identifier):
        return unwrap_locally(wrapped_key, self.master[master_key_identifier],
                              master_key_identifier.encode(), "test")


def crypto_factory(master_keys: dict):
    conf = pe.KmsConnectionConfig(custom_kms_conf={k: base64.b64encode(v).decode()
                                                   for k, v in master_keys.items()})
    return pe.CryptoFactory(lambda c: JavaInMemoryKms(c)), conf


def write_with_kms(table: pa.Table, path: str, master_keys: dict, footer_key: str,
                   column_keys: dict, algorithm: str = "AES_GCM_V1",
                   plaintext_footer: bool = False, double_wrapping: bool = True,
                   internal: bool = True, key_bits: int = 128, **write_options) -> None:
    """``table`` to ``path`` encrypted by pyarrow's key tools: footer key
    ``footer_key`` and ``column_keys`` {master key id: [columns]}."""
    factory, conf = crypto_factory(master_keys)
    config = pe.EncryptionConfiguration(
        footer_key=footer_key, column_keys=column_keys, encryption_algorithm=algorithm,
        plaintext_footer=plaintext_footer, double_wrapping=double_wrapping,
        internal_key_material=internal, data_key_length_bits=key_bits)
    props = (factory.file_encryption_properties(conf, config) if internal
             else factory.file_encryption_properties(conf, config, path))
    pq.write_table(table, path, encryption_properties=props, **write_options)


def write_plain_and_keyed(table: pa.Table, directory: str, **write_options) -> tuple:
    """``table`` written twice into ``directory``: plain.parquet, and
    enc.parquet with the footer under master key "mf" and each column under
    a master key of its own ("m_<column>"), fresh random keys: (plain path,
    encrypted path, {master key id: key})."""
    plain, enc = os.path.join(directory, "plain.parquet"), os.path.join(directory, "enc.parquet")
    pq.write_table(table, plain, **write_options)
    masters = {"mf": os.urandom(16), **{f"m_{c}": os.urandom(16) for c in table.column_names}}
    write_with_kms(table, enc, masters, "mf", {f"m_{c}": [c] for c in table.column_names},
                   **write_options)
    return plain, enc, masters


def read_with_kms(path: str, master_keys: dict, internal: bool = True) -> pa.Table:
    factory, conf = crypto_factory(master_keys)
    dconfig = pe.DecryptionConfiguration()
    props = (factory.file_decryption_properties(conf, dconfig) if internal
             else factory.file_decryption_properties(conf, dconfig, path))
    return pq.read_table(path, decryption_properties=props)


def write_uniform(table: pa.Table, path: str, key: bytes, algorithm: str = "AES_GCM_V1",
                  plaintext_footer: bool = False, aad_prefix: bytes | None = None,
                  store_aad_prefix: bool = True, **write_options) -> None:
    """``table`` to ``path`` with one key for footer and columns (pyarrow's
    low-level properties); the key metadata is empty."""
    props = pe.create_encryption_properties(key, aad_prefix=aad_prefix,
                                            store_aad_prefix=store_aad_prefix,
                                            encryption_algorithm=algorithm,
                                            plaintext_footer=plaintext_footer)
    pq.write_table(table, path, encryption_properties=props, **write_options)


def read_uniform(path: str, key: bytes, aad_prefix: bytes | None = None) -> pa.Table:
    return pq.read_table(path, decryption_properties=pe.create_decryption_properties(
        key, aad_prefix=aad_prefix))


def flip_byte(src: str, dst: str, offset: int) -> None:
    """Copy ``src`` to ``dst`` with the byte at ``offset`` inverted."""
    data = bytearray(open(src, "rb").read())
    data[offset] ^= 0xFF
    with open(dst, "wb") as f:
        f.write(bytes(data))


def key_material_file(path: str) -> str:
    return os.path.join(os.path.dirname(path), "_KEY_MATERIAL_FOR_" + os.path.basename(path)
                        + ".json")
