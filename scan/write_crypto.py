"""Parquet Modular Encryption, writing: the ``ModuleSink`` of scan/writer.py
that encrypts every module (the spec: docs/references,
parquet-modular-encryption-spec.txt; reading is scan/crypto.py, whose
``Cipher``, ``module_aad`` and module types this shares).

    from scan.write_crypto import FileEncryption, ColumnKey, EncryptingSink
    enc = FileEncryption(footer_key=key, footer_key_metadata=b"kf",
                         column_keys={"ssn": ColumnKey(k2, b"kc1")})
    WriteOptions(sink=EncryptingSink(enc, leaves))

* Which columns: with no ``column_keys`` every column is encrypted with
  the footer key (uniform encryption); with them, the columns named
  (a top-level name covers all its leaves, a dotted path one leaf) are
  encrypted with their key -- a column whose key is the footer key is
  written as ``ENCRYPTION_WITH_FOOTER_KEY`` -- and the others are plaintext.
* Every module of an encrypted column passes ``module``: pages (GCM, or
  CTR under AES_GCM_CTR_V1), page headers, dictionary page and header,
  column and offset index, bloom filter header and bitset, each with its
  AAD (file AAD, module type, row group, column and page ordinals).
  Under AES_GCM_CTR_V1 page headers carry the CRC-32 of the encrypted
  page, which is all that catches a damaged CTR page.
* ``column_chunk``: ColumnCryptoMetaData; the ColumnMetaData encrypted
  with the column's key where the spec asks (a column key, or a plaintext
  footer): an encrypted footer keeps no plaintext copy, a plaintext footer
  keeps one without statistics, for legacy readers.
* ``footer``: ``PARE`` files get FileCryptoMetaData + the GCM footer;
  plaintext-footer files (``PAR1``) the footer's signature (nonce + tag).
* The file AAD is the AAD prefix (stored in the file, or not:
  ``supply_aad_prefix``) + 8 random bytes (``aad_file_unique``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from scan import thrift as T
from scan.crypto import (COLUMN_META_DATA, FOOTER, GCM_CTR_V1, GCM_V1, NONCE, Cipher,
                         length_prefixed, module_aad)
from scan.errors import ProgrammingError, UnsupportedFeatureError
from scan.keys import KEY_LENGTHS
from scan.thrift_encode import encode_struct
from scan.writer import (BLOOM_FILTER_BITSET, BLOOM_FILTER_HEADER, COLUMN_INDEX_MODULE,
                         DATA_PAGE_HEADER, DATA_PAGE_MODULE, DICTIONARY_PAGE_HEADER,
                         DICTIONARY_PAGE_MODULE, OFFSET_INDEX_MODULE, ModuleSink)

__all__ = ["ColumnKey", "FileEncryption", "EncryptingSink", "ALGORITHMS"]

ALGORITHMS = (GCM_V1, GCM_CTR_V1)
PAGE_MODULES = (DATA_PAGE_MODULE, DICTIONARY_PAGE_MODULE)
WITH_PAGE_ORDINAL = (DATA_PAGE_MODULE, DATA_PAGE_HEADER)


@dataclass(frozen=True)
class ColumnKey:
    key: bytes                              # 16, 24 or 32 bytes
    key_metadata: bytes = b""               # what the file stores (a key name, key material)

    def __repr__(self) -> str:              # never the key
        return f"ColumnKey(<{len(self.key) * 8}-bit key>, {self.key_metadata!r})"


@dataclass
class FileEncryption:
    """How one file is encrypted (keys as bytes: the engine resolved names)."""
    footer_key: bytes
    footer_key_metadata: bytes = b""
    column_keys: dict = field(default_factory=dict)     # column name or dotted path -> ColumnKey
    algorithm: str = GCM_V1
    plaintext_footer: bool = False
    aad_prefix: bytes | None = None
    store_aad_prefix: bool = True

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise UnsupportedFeatureError(f"encryption algorithm {self.algorithm} (known: "
                                          + ", ".join(ALGORITHMS) + ")")
        for what, k in [("footer", self.footer_key)] + \
                [(f"column {n}", c.key) for n, c in self.column_keys.items()]:
            if not isinstance(k, (bytes, bytearray)) or len(k) not in KEY_LENGTHS:
                raise ProgrammingError(f"the key of the {what} must be 16, 24 or 32 bytes")

    def __repr__(self) -> str:
        return (f"FileEncryption({self.algorithm}, footer {self.footer_key_metadata!r}, "
                f"columns {sorted(self.column_keys)}, plaintext_footer={self.plaintext_footer})")


class _Column:
    """One leaf's encryption: its cipher, key metadata, footer key or not."""
    __slots__ = ("cipher", "key_metadata", "footer_key", "path")

    def __init__(self, cipher: Cipher, key_metadata: bytes, footer_key: bool, path: list):
        self.cipher, self.key_metadata, self.footer_key, self.path = \
            cipher, key_metadata, footer_key, path


class EncryptingSink(ModuleSink):
    """scan/writer.py's ModuleSink for Parquet Modular Encryption (module
    docstring).  ``leaves``: the writer's leaf columns (scan.write_schema)."""

    def __init__(self, encryption: FileEncryption, leaves: list):
        e = encryption
        self.encryption = e
        self.magic = b"PAR1" if e.plaintext_footer else b"PARE"
        unique = os.urandom(8)
        body = {"aad_file_unique": unique}
        if e.aad_prefix is not None:
            if e.store_aad_prefix:
                body["aad_prefix"] = bytes(e.aad_prefix)
            else:
                body["supply_aad_prefix"] = True
        self.algorithm = {e.algorithm: body}
        self.file_aad = bytes(e.aad_prefix or b"") + unique
        ctr = e.algorithm == GCM_CTR_V1
        # CTR pages are not authenticated (spec 4.2.2): their CRC, of the page
        # as written (as parquet-java and Arrow write it), catches damage
        self.page_checksums = ctr
        self.footer_cipher = Cipher(bytes(e.footer_key), False)
        ciphers = {bytes(e.footer_key): Cipher(bytes(e.footer_key), ctr)}
        self.columns: list = []
        named = {}
        for name, ck in e.column_keys.items():
            named[name] = ck
            named.setdefault(name.lower(), ck)
        used = set()
        for leaf in leaves:
            path = list(leaf.path)
            dotted = ".".join(path)
            ck = None
            for name in (dotted, path[0]):
                for cand in (name, name.lower()):
                    if ck is None and cand in named:
                        ck = named[cand]
                        used.add(cand)
            if e.column_keys and ck is None:
                self.columns.append(None)                  # a plaintext column
                continue
            key = bytes(e.footer_key if ck is None else ck.key)
            cipher = ciphers.get(key)
            if cipher is None:
                cipher = ciphers[key] = Cipher(key, ctr)
            footer = ck is None or key == bytes(e.footer_key)
            self.columns.append(_Column(cipher, b"" if ck is None else bytes(ck.key_metadata),
                                        footer, path))
        unknown = sorted(n for n in e.column_keys if n not in used and n.lower() not in used)
        if unknown:
            have = ", ".join(".".join(leaf.path) for leaf in leaves)
            raise ProgrammingError(f"encryption column_keys name {', '.join(unknown)}, which "
                             f"{'is' if len(unknown) == 1 else 'are'} not a column of the "
                             f"file ({have})")

    def __repr__(self) -> str:
        return f"<EncryptingSink {self.encryption!r}>"

    # ---- modules -------------------------------------------------------------------
    def module(self, kind: int, row_group: int, column: int, page: int, data: bytes) -> bytes:
        col = self.columns[column]
        if col is None:
            return data
        aad = module_aad(self.file_aad, kind, row_group, column,
                         page if kind in WITH_PAGE_ORDINAL else None)
        if kind in PAGE_MODULES:
            return length_prefixed(col.cipher.seal_page(data, aad))
        if kind in (DATA_PAGE_HEADER, DICTIONARY_PAGE_HEADER, COLUMN_INDEX_MODULE,
                    OFFSET_INDEX_MODULE, BLOOM_FILTER_HEADER, BLOOM_FILTER_BITSET):
            return length_prefixed(col.cipher.seal(data, aad))
        raise ValueError(f"unknown module type {kind}")

    def column_chunk(self, row_group: int, column: int, chunk: dict) -> dict:
        col = self.columns[column]
        if col is None:
            return chunk
        chunk = dict(chunk)
        if col.footer_key:
            chunk["crypto_metadata"] = {"ENCRYPTION_WITH_FOOTER_KEY": {}}
        else:
            with_key = {"path_in_schema": col.path}
            if col.key_metadata:
                with_key["key_metadata"] = col.key_metadata
            chunk["crypto_metadata"] = {"ENCRYPTION_WITH_COLUMN_KEY": with_key}
        plain_footer = self.encryption.plaintext_footer
        if col.footer_key and not plain_footer:
            return chunk                 # inside the encrypted footer, as it is
        meta = chunk["meta_data"]
        aad = module_aad(self.file_aad, COLUMN_META_DATA, row_group, column)
        chunk["encrypted_column_metadata"] = length_prefixed(
            col.cipher.seal(encode_struct(meta, T.COLUMN_META_DATA), aad))
        if plain_footer:                 # for legacy readers: no statistics
            chunk["meta_data"] = {k: v for k, v in meta.items() if k != "statistics"}
        else:
            del chunk["meta_data"]
        return chunk

    def file_metadata(self, meta: dict) -> dict:
        if not self.encryption.plaintext_footer:
            return meta
        meta = dict(meta, encryption_algorithm=self.algorithm)
        if self.encryption.footer_key_metadata:
            meta["footer_signing_key_metadata"] = bytes(self.encryption.footer_key_metadata)
        return meta

    def footer(self, footer: bytes) -> bytes:
        aad = module_aad(self.file_aad, FOOTER)
        if self.encryption.plaintext_footer:
            sealed = self.footer_cipher.seal(footer, aad)     # nonce | ciphertext | tag
            signed = footer + sealed[:NONCE] + sealed[-16:]
            return signed + len(signed).to_bytes(4, "little") + self.magic
        crypto = {"encryption_algorithm": self.algorithm}
        if self.encryption.footer_key_metadata:
            crypto["key_metadata"] = bytes(self.encryption.footer_key_metadata)
        tail = encode_struct(crypto, T.FILE_CRYPTO_META_DATA) + \
            length_prefixed(self.footer_cipher.seal(footer, aad))
        return tail + len(tail).to_bytes(4, "little") + self.magic
