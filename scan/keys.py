"""Keys of encrypted Parquet files: the registry, what a read asks for
(``EncryptionConfig``), and the resolution of a file's key metadata to keys
(``KeyResolver``), scan/crypto.py's one question: "which key is this?".

Key metadata (the bytes a writer stores beside the footer and each column
key) is either

* a key name (the corpus' ``kf``, ``kc1``): served from the registry;
* parquet-java's / pyarrow's key material (``PKMT1`` JSON), internal or in
  the ``_KEY_MATERIAL_FOR_<file>.json`` sidecar: the data key is wrapped
  by a master key (``masterKeyID``), directly or through a key-encryption
  key (double wrapping).  Master keys come from the user's KMS client
  (``unwrap_key(wrapped: bytes, master_key_id: str) -> bytes``) or, as
  parquet-java's InMemoryKMS wraps them, from the registry: AES-GCM with
  the master key and its id as AAD.

An ``EncryptionConfig`` (read_parquet's ``encryption_config``) names keys
for files whose key metadata is empty, or overrides it; it holds key
*names* only.  Keys themselves never appear in a message, repr or log.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from dataclasses import dataclass

from scan.errors import AuthenticationError

KEY_LENGTHS = (16, 24, 32)
NONCE = 12


def parse_key(key) -> bytes:
    """A key given as its raw 16/24/32 bytes (bytes or text) or as their
    base64 (as DuckDB's add_parquet_key takes it).  ValueError names the
    lengths, never the key."""
    if isinstance(key, (bytes, bytearray, memoryview)):
        raw = bytes(key)
        if len(raw) in KEY_LENGTHS:
            return raw
        text = None
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            pass
    elif isinstance(key, str):
        text = key
        raw = key.encode("utf-8")
        if len(raw) in KEY_LENGTHS:
            return raw
    else:
        raise ValueError(f"a key is text or bytes, not {type(key).__name__}")
    if text is not None:
        try:
            decoded = base64.b64decode(text.strip(), validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if len(decoded) in KEY_LENGTHS:
            return decoded
    raise ValueError("a key must be 16, 24 or 32 bytes (AES-128, -192, -256), given as "
                     f"those bytes or as their base64 (got {len(raw)} bytes)")


class KeyRegistry:
    """A connection's named keys (``PRAGMA add_parquet_key``).  Thread-safe;
    ``generation`` counts changes (open files cached with keys are reopened)."""

    def __init__(self):
        self._keys: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.generation = 0

    def add(self, name: str, key) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a key name is a non-empty string")
        raw = parse_key(key)
        with self._lock:
            self._keys[name] = raw
            self.generation += 1

    def get(self, name: str) -> bytes | None:
        with self._lock:
            return self._keys.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._keys)

    def __contains__(self, name) -> bool:
        with self._lock:
            return name in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"<KeyRegistry names={self.names()!r}>"


@dataclass(frozen=True)
class EncryptionConfig:
    """What read_parquet(..., encryption_config = {...}) asks: key names
    (from the registry) for the footer and columns, the AAD prefix, and
    whether a plaintext footer's signature is checked."""
    footer_key: str | None = None
    column_keys: tuple = ()                 # ((column path, key name), ...)
    aad_prefix: bytes | None = None
    check_footer_integrity: bool = True

    def column_key(self, path: str) -> str | None:
        for name, key in self.column_keys:
            if name == path:
                return key
        lower = path.lower()
        for name, key in self.column_keys:
            if name.lower() == lower:
                return key
        return None


class KeyResolver:
    """The keys of one file: ``footer_key`` / ``column_key`` turn key
    metadata into key bytes (None: no key for it), ``aad_prefix`` is the
    user's prefix.  ``read_key_material(name)`` returns the text of a
    sidecar file beside the Parquet file (external key material)."""

    def __init__(self, registry: KeyRegistry | None = None, config: EncryptionConfig | None = None,
                 kms_client=None, read_key_material=None):
        self.registry = registry or KeyRegistry()
        self.config = config or EncryptionConfig()
        self.kms_client = kms_client
        self.read_key_material = read_key_material
        self._keks: dict = {}
        self._resolved: dict = {}
        self._external = None

    def bound(self, read_key_material) -> "KeyResolver":
        """This resolver for one file, whose key material file (when it keeps
        its keys outside) ``read_key_material()`` reads."""
        if self.read_key_material is not None:
            return self
        return KeyResolver(self.registry, self.config, self.kms_client, read_key_material)

    @property
    def aad_prefix(self) -> bytes | None:
        return self.config.aad_prefix

    @property
    def check_footer_integrity(self) -> bool:
        return self.config.check_footer_integrity

    def __repr__(self) -> str:
        return f"<KeyResolver registry={self.registry!r} config={self.config!r}>"

    # ---- the questions -------------------------------------------------------
    def footer_key(self, key_metadata) -> bytes | None:
        if self.config.footer_key is not None:
            return self._named(self.config.footer_key, "the footer")
        return self._from_metadata(key_metadata, "the footer")

    def column_key(self, path: str, key_metadata) -> bytes | None:
        name = self.config.column_key(path)
        if name is not None:
            return self._named(name, f"column {path}")
        # every row group's chunk of a column has the same key metadata: its
        # key material is parsed and unwrapped once
        memo = (path, bytes(key_metadata or b""))
        if memo not in self._resolved:
            self._resolved[memo] = self._from_metadata(key_metadata, f"column {path}")
        return self._resolved[memo]

    def missing(self, key_metadata, what: str) -> str:
        """Why there is no key for ``what``: the message of the error."""
        if what == "the footer" and self.config.footer_key is not None:
            return f"no key named {self.config.footer_key!r} for the footer (add it with " \
                   "PRAGMA add_parquet_key)"
        name = _key_name(key_metadata)
        if name is not None:
            return f"no key named {name!r} for {what} (add it with PRAGMA add_parquet_key, " \
                   "or name one in encryption_config)"
        if key_metadata:
            return f"no key for {what}: its key material names a master key the registry " \
                   "and KMS client do not have"
        return f"no key for {what}: the file names none (give encryption_config)"

    # ---- key metadata ----------------------------------------------------------
    def _named(self, name: str, what: str) -> bytes | None:
        return self.registry.get(name)

    def _from_metadata(self, key_metadata, what: str) -> bytes | None:
        if not key_metadata:
            return None
        material = _key_material(key_metadata)
        if material is None:
            name = _key_name(key_metadata)
            return None if name is None else self.registry.get(name)
        if not material.get("internalStorage", True):
            material = self._external_material(material, what)
            if material is None:
                return None
        return self._unwrap_material(material, what)

    def _external_material(self, ref: dict, what: str) -> dict | None:
        if self._external is None:
            text = self.read_key_material() if self.read_key_material is not None else None
            if text is None:
                raise AuthenticationError(f"the key of {what} is stored outside the file, and "
                                          "its key material file (_KEY_MATERIAL_FOR_...json) "
                                          "cannot be read", module="key material")
            try:
                self._external = json.loads(text)
            except ValueError:
                raise AuthenticationError("malformed key material file",
                                          module="key material") from None
        entry = self._external.get(ref.get("keyReference"))
        if entry is None:
            raise AuthenticationError(f"the key material file lacks the key of {what}",
                                      module="key material")
        try:
            return json.loads(entry) if isinstance(entry, str) else dict(entry)
        except (ValueError, TypeError):
            raise AuthenticationError(f"malformed key material for {what}",
                                      module="key material") from None

    def _unwrap_material(self, m: dict, what: str) -> bytes | None:
        master = m.get("masterKeyID")
        dek = m.get("wrappedDEK")
        if not isinstance(master, str) or not isinstance(dek, str):
            raise AuthenticationError(f"key material of {what} lacks masterKeyID or wrappedDEK",
                                      module="key material")
        if not m.get("doubleWrapping"):
            return self._master_unwrap(dek, master, what)
        kek_id, wrapped_kek = m.get("keyEncryptionKeyID"), m.get("wrappedKEK")
        if not isinstance(kek_id, str) or not isinstance(wrapped_kek, str):
            raise AuthenticationError(f"key material of {what} lacks its key-encryption key",
                                      module="key material")
        kek = self._keks.get(kek_id)
        if kek is None:
            kek = self._master_unwrap(wrapped_kek, master, what)
            if kek is None:
                return None
            self._keks[kek_id] = kek
        return unwrap_locally(dek, kek, _b64(kek_id, what), what)

    def _master_unwrap(self, wrapped: str, master: str, what: str) -> bytes | None:
        """The key ``wrapped`` by master key ``master``: by the KMS client
        when there is one (the registry's master key if it fails), else by
        the registry's master key (InMemoryKMS: AES-GCM, the id as AAD)."""
        failure = None
        if self.kms_client is not None:
            try:
                out = self.kms_client.unwrap_key(wrapped.encode("ascii"), master)
                return _checked_key(out, f"the KMS client's key for {what}")
            except AuthenticationError as e:
                failure = e
            except Exception as e:                   # noqa: BLE001 - the user's client
                failure = AuthenticationError(f"the KMS client could not unwrap the key of "
                                              f"{what} with master key {master!r} "
                                              f"({type(e).__name__})", module="key material")
        key = self.registry.get(master)
        if key is None:
            if failure is not None:
                raise failure
            return None
        return unwrap_locally(wrapped, key, master.encode("utf-8"), what)


def unwrap_locally(wrapped_b64: str, key: bytes, aad: bytes, what: str) -> bytes:
    """parquet-java's KeyToolkit.decryptKeyLocally: base64 of nonce |
    AES-GCM ciphertext | tag, ``aad`` authenticated."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    blob = _b64(wrapped_b64, what)
    if len(blob) < NONCE + 16:
        raise AuthenticationError(f"wrapped key of {what} is too short", module="key material")
    try:
        out = AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], aad)
    except InvalidTag:
        raise AuthenticationError(f"the key of {what} cannot be unwrapped: wrong master key or "
                                  "tampered key material", module="key material") from None
    return _checked_key(out, f"the unwrapped key of {what}")


def wrap_locally(key: bytes, wrapping_key: bytes, aad: bytes) -> str:
    """The inverse of unwrap_locally (tests; the encrypted writer)."""
    import os
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    nonce = os.urandom(NONCE)
    return base64.b64encode(nonce + AESGCM(wrapping_key).encrypt(nonce, key, aad)).decode()


def _checked_key(out, what: str) -> bytes:
    if not isinstance(out, (bytes, bytearray)) or len(out) not in KEY_LENGTHS:
        raise AuthenticationError(f"{what} is not a 16, 24 or 32 byte key", module="key material")
    return bytes(out)


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise AuthenticationError(f"key material of {what} is not base64",
                                  module="key material") from None


def _key_material(key_metadata) -> dict | None:
    """The PKMT1 key material of ``key_metadata``, or None for a key name."""
    raw = bytes(key_metadata)
    if not raw.lstrip().startswith(b"{"):
        return None
    try:
        m = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(m, dict) or m.get("keyMaterialType") != "PKMT1":
        return None
    return m


def _key_name(key_metadata) -> str | None:
    if not key_metadata or _key_material(key_metadata) is not None:
        return None
    try:
        return bytes(key_metadata).decode("utf-8")
    except UnicodeDecodeError:
        return None
