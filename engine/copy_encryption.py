"""COPY ... TO 'f.parquet' (ENCRYPTION_CONFIG {...}): the option's fields,
keys from the connection's registry (PRAGMA add_parquet_key), and the
scan.write_crypto sink that encrypts the file.

    ENCRYPTION_CONFIG {
        footer_key: 'kf',                      -- required: a registry key name
        column_keys: {ssn: 'kc1', 'addr.zip': 'kc2'},   -- default: all columns, footer key
        algorithm: 'AES_GCM_V1' | 'AES_GCM_CTR_V1',     -- default AES_GCM_V1
        plaintext_footer: false,               -- true: a signed PAR1 footer
        aad_prefix: 'text', store_aad_prefix: true,
        key_material: false}                   -- true: PKMT1 key material (below)

Key metadata: by default the file stores each key's *name* (as the
parquet-testing corpus does); a reader with the same registry names finds
them.  With ``key_material: true`` each key in the config is a *master*
key: the file gets fresh random data keys, stored wrapped by their master
key in parquet-java's / pyarrow's internal key material (``PKMT1`` JSON,
single wrapping, InMemoryKMS wrapping: AES-GCM with the master key id as
AAD), which pyarrow's CryptoFactory reads with a KMS client of those
master keys, and pqdb with the same registry.
"""

from __future__ import annotations

import json
import os

from planner.errors import BinderError
from scan.errors import AuthenticationError, ProgrammingError

FIELDS = ("footer_key", "column_keys", "algorithm", "plaintext_footer", "aad_prefix",
          "store_aad_prefix", "key_material")


def _flag(field: str, value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ("true", "1", "false", "0"):
        return text in ("true", "1")
    raise BinderError(f"ENCRYPTION_CONFIG {field} takes a boolean, not {value!r}")


def _name(field: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise BinderError(f"ENCRYPTION_CONFIG {field} takes a key name (a string), "
                          f"not {value!r}")
    return value


def _key(registry, name: str, what: str) -> bytes:
    key = registry.get(name)
    if key is None:
        have = registry.names()
        raise AuthenticationError(f"COPY ENCRYPTION_CONFIG names key {name!r} for {what}, "
                                  "which the connection does not have (add it with PRAGMA "
                                  "add_parquet_key" + (f"; it has {', '.join(map(repr, have))}"
                                                       if have else "") + ")")
    return key


def _material(master_id: str, master_key: bytes, footer: bool) -> tuple[bytes, bytes]:
    """(fresh data key, its PKMT1 internal key material, single wrapping)."""
    from scan.keys import wrap_locally
    dek = os.urandom(len(master_key))
    m = {"keyMaterialType": "PKMT1", "internalStorage": True, "isFooterKey": footer}
    if footer:
        m.update(kmsInstanceID="DEFAULT", kmsInstanceURL="DEFAULT")
    m.update(masterKeyID=master_id,
             wrappedDEK=wrap_locally(dek, master_key, master_id.encode("utf-8")),
             doubleWrapping=False)
    return dek, json.dumps(m, separators=(",", ":")).encode("utf-8")


def file_encryption(value, registry):
    """The scan.write_crypto.FileEncryption of an ENCRYPTION_CONFIG value."""
    from scan.write_crypto import ALGORITHMS, ColumnKey, FileEncryption
    if not isinstance(value, dict):
        raise BinderError("COPY option ENCRYPTION_CONFIG takes a struct {footer_key: 'name', "
                          "...}")
    fields = {}
    for k, v in value.items():
        if k.lower() not in FIELDS:
            raise BinderError(f"ENCRYPTION_CONFIG has no field {k!r} (fields: "
                              + ", ".join(FIELDS) + ")")
        fields[k.lower()] = v
    if "footer_key" not in fields:
        raise BinderError("ENCRYPTION_CONFIG needs footer_key: 'name' (a key added with "
                          "PRAGMA add_parquet_key)")
    footer_name = _name("footer_key", fields["footer_key"])
    algorithm = str(fields.get("algorithm", "AES_GCM_V1")).upper()
    if algorithm not in ALGORITHMS:
        raise BinderError(f"ENCRYPTION_CONFIG algorithm {fields['algorithm']!r} (known: "
                          + ", ".join(ALGORITHMS) + ")")
    columns = fields.get("column_keys", {})
    if not isinstance(columns, dict):
        raise BinderError("ENCRYPTION_CONFIG column_keys takes a struct {column: 'key name'}")
    prefix = fields.get("aad_prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise BinderError(f"ENCRYPTION_CONFIG aad_prefix takes a string, not {prefix!r}")
    wrap = _flag("key_material", fields.get("key_material", False))
    footer_master = _key(registry, footer_name, "the footer")
    if wrap:
        footer_key, footer_meta = _material(footer_name, footer_master, True)
    else:
        footer_key, footer_meta = footer_master, footer_name.encode("utf-8")
    column_keys = {}
    for col, name in columns.items():
        name = _name(f"column_keys.{col}", name)
        master = _key(registry, name, f"column {col}")
        if name == footer_name:
            column_keys[col] = ColumnKey(footer_key, footer_meta)
        elif wrap:
            column_keys[col] = ColumnKey(*_material(name, master, False))
        else:
            column_keys[col] = ColumnKey(master, name.encode("utf-8"))
    try:
        return FileEncryption(
            footer_key=footer_key, footer_key_metadata=footer_meta, column_keys=column_keys,
            algorithm=algorithm,
            plaintext_footer=_flag("plaintext_footer", fields.get("plaintext_footer", False)),
            aad_prefix=None if prefix is None else prefix.encode("utf-8"),
            store_aad_prefix=_flag("store_aad_prefix", fields.get("store_aad_prefix", True)))
    except ProgrammingError as e:
        raise BinderError(f"ENCRYPTION_CONFIG: {e}") from None


def encrypting_sink(value, registry, names: list, types: list):
    """The ModuleSink (scan/write_crypto.py) writing the COPY's file encrypted."""
    from scan.write_crypto import EncryptingSink
    from scan.write_schema import build_schema
    encryption = file_encryption(value, registry)
    _, leaves = build_schema([str(n) for n in names], list(types))
    try:
        return EncryptingSink(encryption, leaves)
    except ProgrammingError as e:
        raise BinderError(f"ENCRYPTION_CONFIG: {e}") from None


__all__ = ["file_encryption", "encrypting_sink", "FIELDS"]
