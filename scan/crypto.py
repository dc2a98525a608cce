"""Parquet Modular Encryption, reading, and the ciphers and AADs the writer
(scan/write_crypto.py) shares (the spec: docs/references,
parquet-modular-encryption-spec.txt).

Every encrypted part of a file is a *module*: 4-byte little-endian length,
12-byte nonce, ciphertext, and (AES-GCM) a 16-byte tag.  AES_GCM_V1
encrypts every module with GCM; AES_GCM_CTR_V1 the pages with CTR (not
authenticated) and all else with GCM.  A module's AAD is the file's AAD
(prefix + aad_file_unique) + module type + row group and column ordinals
(int16 LE) + for data pages and their headers the page ordinal; a module
decrypted at another position, from another file or with another key fails
its tag: ``AuthenticationError`` naming file and module.

* ``open_encrypted_footer`` (``PARE`` files): FileCryptoMetaData, then the
  footer decrypted with the footer key.  ``open_plaintext_footer``: the
  footer is plain and signed (nonce + tag after it), checked when the
  footer key is known (``check_footer_integrity``).
* ``FileCrypto.column_chunk``: a chunk's key (footer key, or its column key
  from the KeyResolver, scan/keys.py); its ColumnMetaData decrypted when
  stored encrypted.  Without its key a chunk is *locked*: reading it raises
  the error kept for it, naming the column; the other columns read.
* ``ColumnCrypto.plaintext_chunk``: the chunk's pages decrypted once per
  cached chunk buffer into one plaintext chunk buffer -- page headers
  re-encoded with their plaintext sizes, bodies decrypted in place -- kept
  in the cipher buffer's chunk memo and charged to it, so every decode path
  (whole chunk, row ranges, nested) runs unchanged on it, and every morsel
  and query shares it.  Which thread decrypts: the first one to need the
  chunk; the others wait on the chunk's lock.
* ``ColumnCrypto.open``: the other modules (page index, bloom filter).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
import threading
import zlib

import numpy as np

from scan import thrift as T
from scan.errors import AuthenticationError, FileFormatError, UnsupportedFeatureError
from scan.io.buffer_manager import charge, derive
from scan.pages import DICTIONARY_PAGE, chunk_memo

(FOOTER, COLUMN_META_DATA, DATA_PAGE, DICTIONARY_PAGE_MODULE, DATA_PAGE_HEADER,
 DICTIONARY_PAGE_HEADER, COLUMN_INDEX, OFFSET_INDEX, BLOOM_FILTER_HEADER,
 BLOOM_FILTER_BITSET) = range(10)
MODULE_NAMES = ("footer", "column metadata", "data page", "dictionary page", "data page header",
                "dictionary page header", "column index", "offset index",
                "bloom filter header", "bloom filter bitset")
GCM_V1, GCM_CTR_V1 = "AES_GCM_V1", "AES_GCM_CTR_V1"
NONCE, TAG, LENGTH = 12, 16, 4
SIGNATURE = NONCE + TAG
_MAX_ORDINAL = 32767
_ORDINAL = struct.Struct("<h").pack
_FAILED = "failed authentication: wrong key, or tampered, truncated or misplaced data"


def module_aad(file_aad: bytes, module: int, row_group: int = 0, column: int = 0,
               page: int | None = None) -> bytes:
    """The AAD of one module (spec 4.4)."""
    if module == FOOTER:
        return file_aad + b"\x00"
    for what, v in (("row group", row_group), ("column", column), ("page", page)):
        if v is not None and not 0 <= v <= _MAX_ORDINAL:
            raise UnsupportedFeatureError(f"encrypted file with {what} ordinal {v} "
                                          f"(the format allows {_MAX_ORDINAL} at most)")
    out = file_aad + struct.pack("<Bhh", module, row_group, column)
    if page is not None:
        out += struct.pack("<h", page)
    return out


_LIB: dict = {}


def _lib() -> dict:
    """The cryptography package's parts, imported once (on first use: a
    plain file never imports it)."""
    if not _LIB:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers import Cipher as C, algorithms, modes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        _LIB.update(InvalidTag=InvalidTag, Cipher=C, AES=algorithms.AES, CTR=modes.CTR,
                    GCM=modes.GCM, AESGCM=AESGCM)
    return _LIB


class Cipher:
    """AES with one key: GCM modules, and pages by GCM or CTR."""
    __slots__ = ("_key", "_aead", "ctr", "_invalid", "_into")

    def __init__(self, key: bytes, ctr_pages: bool):
        lib = _lib()
        self._key = key
        self._aead = lib["AESGCM"](key)
        self.ctr = ctr_pages
        self._invalid = lib["InvalidTag"]
        # AESGCM.decrypt_into (cryptography >= 45): a page straight into the
        # chunk buffer, without a Cipher context per page
        self._into = getattr(self._aead, "decrypt_into", None)

    def __repr__(self) -> str:
        return f"<Cipher AES-{len(self._key) * 8}{' CTR pages' if self.ctr else ''}>"

    def gcm(self, module, aad: bytes) -> bytes | None:
        """Plaintext of ``module`` (nonce | ciphertext | tag), or None when
        its tag fails."""
        module = bytes(module)
        try:
            return self._aead.decrypt(module[:NONCE], module[NONCE:], aad)
        except self._invalid:
            return None

    def page_into(self, module: memoryview, aad: bytes, out: memoryview) -> int | None:
        """Decrypt page ``module`` into ``out`` (with 15 bytes to spare);
        its plaintext length, or None when its tag fails."""
        nonce = bytes(module[:NONCE])
        lib = _LIB
        if self.ctr:
            dec = lib["Cipher"](lib["AES"](self._key), lib["CTR"](nonce + b"\x00\x00\x00\x01")
                                ).decryptor()
            n = dec.update_into(module[NONCE:], out)
            dec.finalize()
            return n
        n = len(module) - NONCE - TAG
        try:
            if self._into is not None:
                self._into(nonce, module[NONCE:], aad, out[:n])
                return n
            dec = lib["Cipher"](lib["AES"](self._key), lib["GCM"](nonce, bytes(module[NONCE + n:]))
                                ).decryptor()
            dec.authenticate_additional_data(aad)
            got = dec.update_into(module[NONCE:NONCE + n], out)
            dec.finalize()
            return got
        except self._invalid:
            return None

    def seal(self, data, aad: bytes) -> bytes:
        """GCM module body of plaintext ``data``: a fresh random nonce,
        ciphertext, tag (the writer's side of ``gcm``)."""
        import os
        nonce = os.urandom(NONCE)
        return nonce + self._aead.encrypt(nonce, bytes(data), aad)

    def seal_page(self, data, aad: bytes) -> bytes:
        """A page module body: GCM, or under AES_GCM_CTR_V1 a fresh nonce and
        the CTR ciphertext (counter block nonce | 00000001, no tag)."""
        if not self.ctr:
            return self.seal(data, aad)
        import os
        lib = _LIB
        nonce = os.urandom(NONCE)
        enc = lib["Cipher"](lib["AES"](self._key), lib["CTR"](nonce + b"\x00\x00\x00\x01")
                            ).encryptor()
        return nonce + enc.update(bytes(data)) + enc.finalize()

    def sign(self, data, nonce: bytes, aad: bytes) -> bytes:
        """The GCM tag of ``data`` under ``nonce`` (plaintext footer signature)."""
        lib = _lib()
        enc = lib["Cipher"](lib["AES"](self._key), lib["GCM"](nonce)).encryptor()
        enc.authenticate_additional_data(aad)
        enc.update(bytes(data))
        enc.finalize()
        return enc.tag


def length_prefixed(body: bytes) -> bytes:
    """A module as stored: its 4-byte little-endian length, then ``body``."""
    return len(body).to_bytes(LENGTH, "little") + body


def module_span(buf, pos: int, end: int, min_length: int, err) -> tuple[int, int]:
    """(start, end) of the module whose length prefix is at ``pos``: the
    bytes after the prefix.  A length past ``end`` or below ``min_length``
    is ``err("...")``."""
    if pos + LENGTH > end:
        raise err("is truncated (no room for its length)")
    n = int.from_bytes(bytes(buf[pos:pos + LENGTH]), "little")
    if n < min_length:
        raise err(f"is damaged (length {n})")
    if pos + LENGTH + n > end:
        raise err(f"is truncated ({n} bytes stated, {end - pos - LENGTH} present)")
    return pos + LENGTH, pos + LENGTH + n


# ---- the footer -------------------------------------------------------------------

class FileCrypto:
    """The encryption of one file: algorithm, file AAD, footer key, and the
    KeyResolver for column keys."""

    def __init__(self, algorithm: dict | None, resolver, path: str, footer_key_metadata):
        if not algorithm:
            raise FileFormatError("encrypted file without encryption_algorithm", file=path)
        name, body = next(iter(algorithm.items()))
        if name not in (GCM_V1, GCM_CTR_V1):
            raise UnsupportedFeatureError(f"encryption algorithm {name}")
        self.algorithm = name
        self.ctr = name == GCM_CTR_V1
        self.path = path
        self.resolver = resolver
        stored = body.get("aad_prefix")
        given = resolver.aad_prefix if resolver is not None else None
        if given is not None and stored is not None and bytes(given) != bytes(stored):
            raise AuthenticationError("the AAD prefix given differs from the one the file "
                                      "stores", file=path)
        prefix = given if given is not None else stored
        if prefix is None and body.get("supply_aad_prefix"):
            raise AuthenticationError("the file was encrypted with an AAD prefix it does not "
                                      "store: give it (encryption_config aad_prefix)", file=path)
        self.file_aad = bytes(prefix or b"") + bytes(body.get("aad_file_unique") or b"")
        self.footer_key_metadata = footer_key_metadata
        key = resolver.footer_key(footer_key_metadata) if resolver is not None else None
        self._ciphers: dict = {}
        self.footer_cipher = self.cipher(key) if key is not None else None

    def __repr__(self) -> str:
        return f"<FileCrypto {self.algorithm} {self.path!r}>"

    def cipher(self, key: bytes) -> Cipher:
        c = self._ciphers.get(key)
        if c is None:
            c = self._ciphers[key] = Cipher(key, self.ctr)
        return c

    def missing_footer_key(self) -> AuthenticationError:
        why = (self.resolver.missing(self.footer_key_metadata, "the footer")
               if self.resolver is not None else "no key for the footer (add it with PRAGMA "
               "add_parquet_key, or name one in encryption_config)")
        return AuthenticationError(why, file=self.path, module="footer")

    def column_chunk(self, cc: dict, row_group: int, ordinal: int, column: int, col):
        """(chunk dict, ColumnCrypto or the AuthenticationError that locks
        it) of encrypted column chunk ``cc``: its ColumnMetaData decrypted
        when stored encrypted."""
        cm = cc.get("crypto_metadata") or {}
        err = dict(file=self.path, row_group=row_group, column=col.name)
        if "ENCRYPTION_WITH_COLUMN_KEY" in cm:
            km = cm["ENCRYPTION_WITH_COLUMN_KEY"].get("key_metadata")
            try:
                key = self.resolver.column_key(col.name, km) if self.resolver is not None else None
            except AuthenticationError as e:
                return _locked(cc), e.again(**err)
            if key is None:
                why = (self.resolver.missing(km, f"column {col.name}") if self.resolver
                       else f"no key for encrypted column {col.name}")
                return _locked(cc), AuthenticationError(why, **err)
            cipher = self.cipher(key)
        elif "ENCRYPTION_WITH_FOOTER_KEY" in cm:
            if self.footer_cipher is None:
                return _locked(cc), AuthenticationError(
                    f"column {col.name} is encrypted with the footer key, which is missing", **err)
            cipher = self.footer_cipher
        else:
            raise UnsupportedFeatureError(f"column crypto metadata {sorted(cm)}")
        crypto = ColumnCrypto(self, cipher, row_group, ordinal, column, col.name)
        enc = cc.get("encrypted_column_metadata")
        if enc is not None:
            try:
                plain = crypto.open(enc, COLUMN_META_DATA, prefixed=None)
            except AuthenticationError as e:
                return _locked(cc), e
            md, _ = T.decode_struct(plain, T.COLUMN_META_DATA)
            cc = dict(cc, meta_data=md)
        elif cc.get("meta_data") is None:
            raise FileFormatError("encrypted column chunk has no metadata", **err)
        return cc, crypto


_FIRST = {1: ("type", T.I32, None), 2: ("uncompressed_page_size", T.I32, None),
          3: ("compressed_page_size", T.I32, None)}


def plaintext_header(plain: bytes, header: dict) -> bytes:
    """The bytes of page header ``header`` -- decoded from ``plain``, now
    with its plaintext compressed_page_size and no crc -- as ``plain`` with
    fields 1-3 encoded anew and the rest (the page-type header, statistics)
    copied: encoding every header in full was a third of a chunk's
    decryption.  A header not laid out as writers lay it out (fields 1-4 in
    order, then a page-type header) is encoded in full."""
    pos, last, n = 0, 0, len(plain)
    while pos < n:
        delta, ttype = plain[pos] >> 4, plain[pos] & 0x0F
        if delta == 0 or last + delta > 4:
            break
        if ttype != T.I32:
            return T.encode_struct(header, T.PAGE_HEADER)
        pos += 1
        while pos < n and plain[pos] & 0x80:
            pos += 1
        pos += 1
        last += delta
    if pos >= n or plain[pos] >> 4 == 0 or plain[pos] & 0x0F != T.STRUCT or \
            last + (plain[pos] >> 4) - 3 > 15 or \
            any(header.get(f[0]) is None for f in _FIRST.values()):
        return T.encode_struct(header, T.PAGE_HEADER)
    out = bytearray(T.encode_struct(header, _FIRST)[:-1])         # (without its STOP)
    out.append(((last + (plain[pos] >> 4) - 3) << 4) | T.STRUCT)  # the page-type header
    out += plain[pos + 1:]
    return bytes(out)


def _locked(cc: dict) -> dict:
    """A chunk without its key, its plaintext statistics dropped: nothing
    may be skipped on a column that cannot be read (the read names it)."""
    md = cc.get("meta_data")
    if md is None or "statistics" not in md:
        return cc
    return dict(cc, meta_data={k: v for k, v in md.items() if k != "statistics"})


def open_encrypted_footer(footer, resolver, path: str):
    """(FileCrypto, plaintext FileMetaData bytes) of a ``PARE`` file whose
    footer region (FileCryptoMetaData + encrypted footer) is ``footer``."""
    try:
        fcm, pos = T.decode_struct(footer, T.FILE_CRYPTO_META_DATA)
        fc = FileCrypto(fcm.get("encryption_algorithm"), resolver, path, fcm.get("key_metadata"))
    except FileFormatError as e:
        raise AuthenticationError(f"the file crypto metadata is damaged or truncated ({e})",
                                  file=path, module="footer") from None
    if fc.footer_cipher is None:
        raise fc.missing_footer_key()

    def err(what):
        return AuthenticationError(f"the encrypted footer {what}", file=path, module="footer")

    start, end = module_span(footer, pos, len(footer), NONCE + TAG, err)
    plain = fc.footer_cipher.gcm(footer[start:end], module_aad(fc.file_aad, FOOTER))
    if plain is None:
        raise AuthenticationError(f"the footer {_FAILED}", file=path, module="footer")
    return fc, plain


def open_plaintext_footer(raw: dict, footer, end: int, resolver, path: str) -> FileCrypto:
    """The FileCrypto of a file with a plaintext, signed footer (``raw``,
    decoded from ``footer``[:end]); the signature is checked when the
    footer key is known and the resolver asks for it."""
    fc = FileCrypto(raw.get("encryption_algorithm"), resolver, path,
                    raw.get("footer_signing_key_metadata"))
    if fc.footer_cipher is None or (resolver is not None and not resolver.check_footer_integrity):
        return fc
    footer = bytes(footer)
    if len(footer) - end != SIGNATURE:
        raise AuthenticationError(f"the footer signature is missing or damaged ({len(footer) - end}"
                                  f" bytes after the footer, {SIGNATURE} expected)",
                                  file=path, module="footer")
    nonce, tag = footer[end:end + NONCE], footer[end + NONCE:]
    want = fc.footer_cipher.sign(footer[:end], nonce, module_aad(fc.file_aad, FOOTER))
    if not hmac.compare_digest(want, tag):
        raise AuthenticationError("the plaintext footer's signature does not verify: wrong "
                                  "footer key, or a tampered footer", file=path, module="footer")
    return fc


def file_keys(resolver, source, buffer_manager):
    """``resolver`` (a scan.keys.KeyResolver; None: no keys) bound to the
    file of ``source``: external key material is read from the
    ``_KEY_MATERIAL_FOR_<file name>.json`` beside it, through the buffer
    manager."""
    from scan.keys import KeyResolver
    if resolver is None:
        resolver = KeyResolver()

    def read():
        import os
        from scan.errors import PqdbError
        from scan.io.source import as_source
        path = getattr(source, "path", None)
        if not path or "://" in path:
            return None
        sidecar = os.path.join(os.path.dirname(path),
                               "_KEY_MATERIAL_FOR_" + os.path.basename(path) + ".json")
        try:
            src = as_source(sidecar)
            try:
                return bytes(buffer_manager.get(src, 0, src.size())).decode("utf-8")
            finally:
                src.close()
        except (PqdbError, UnicodeDecodeError):
            return None
    return resolver.bound(read)


# ---- column chunks ----------------------------------------------------------------

class ColumnCrypto:
    """The key and AAD position of one encrypted column chunk."""
    __slots__ = ("file", "cipher", "row_group", "rg_ordinal", "column", "name", "fingerprint")

    def __init__(self, file: FileCrypto, cipher: Cipher, row_group: int, rg_ordinal: int,
                 column: int, name: str):
        self.file, self.cipher = file, cipher
        self.row_group, self.rg_ordinal, self.column, self.name = row_group, rg_ordinal, column, name
        # what the plaintext of a cached chunk is kept under: another key
        # (or AAD) must decrypt for itself, never be handed the plaintext
        self.fingerprint = hashlib.sha256(cipher._key + b"|" + file.file_aad + b"|"
                                          + struct.pack("<qq", rg_ordinal, column)).digest()

    def __repr__(self) -> str:
        return f"<ColumnCrypto {self.name!r} row group {self.row_group}>"

    def aad(self, module: int, page: int | None = None) -> bytes:
        return module_aad(self.file.file_aad, module, self.rg_ordinal, self.column, page)

    def error(self, module: int, text: str, page: int | None = None) -> AuthenticationError:
        return AuthenticationError(f"the {MODULE_NAMES[module]} {text}", file=self.file.path,
                                   module=MODULE_NAMES[module], row_group=self.row_group,
                                   column=self.name, page=page)

    def open(self, buf, module: int, prefixed: bool | None = True) -> bytes:
        """The plaintext of GCM module ``module`` held in ``buf``
        (``prefixed``: with its length prefix; None: either)."""
        data = bytes(buf)
        if prefixed is None:
            prefixed = len(data) >= LENGTH and \
                int.from_bytes(data[:LENGTH], "little") == len(data) - LENGTH
        if prefixed:
            start, end = module_span(data, 0, len(data), NONCE + TAG,
                                     lambda t: self.error(module, t))
            data = data[start:end]
        if len(data) < NONCE + TAG:
            raise self.error(module, "is truncated")
        plain = self.cipher.gcm(data, self.aad(module))
        if plain is None:
            raise self.error(module, _FAILED)
        return plain

    def open_at(self, buf, pos: int, module: int) -> tuple[bytes, int]:
        """(plaintext, end) of the length-prefixed GCM module at ``pos``."""
        start, end = module_span(buf, pos, len(buf), NONCE + TAG, lambda t: self.error(module, t))
        plain = self.cipher.gcm(buf[start:end], self.aad(module))
        if plain is None:
            raise self.error(module, _FAILED)
        return plain, end

    # -- pages ----------------------------------------------------------------------
    def plaintext_chunk(self, buf, num_values: int, has_dictionary: bool):
        """The plaintext chunk of cipher chunk buffer ``buf`` (see the module
        doc): (buffer, {cipher header position: (plain position, plain page
        size)}), decrypted once per cached buffer."""
        memo = chunk_memo(buf)
        if memo is None:
            return self._decrypt_chunk(buf, num_values, has_dictionary)
        key = ("plaintext", self.fingerprint)
        got = memo.get(key)
        if got is not None:
            return got
        lock = memo.setdefault(("plaintext-lock", self.fingerprint), threading.Lock())
        with lock:
            got = memo.get(key)
            if got is None:
                got = self._decrypt_chunk(buf, num_values, has_dictionary)
                charge(buf, got[0].base.nbytes if got[0].base is not None else got[0].nbytes)
                derive(buf, got[0])  # state kept with the plaintext is charged to buf
                memo[key] = got
        return got

    def _decoded(self, plain: bytes, ordinal: int) -> dict:
        try:
            return T.decode_struct(plain, T.PAGE_HEADER)
        except FileFormatError as e:
            raise FileFormatError(f"bad page header: {e}", file=self.file.path,
                                  row_group=self.row_group, column=self.name,
                                  page=ordinal) from None

    def _decrypt_chunk(self, buf, num_values: int, has_dictionary: bool):
        n = len(buf)
        out = np.empty(n + 16, np.uint8)        # (+16: CTR/GCM output slack)
        view = memoryview(out)
        cview = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else \
            memoryview(buf)
        cipher, ctr = self.cipher, self.cipher.ctr
        page_min = NONCE if ctr else NONCE + TAG
        # the AADs without their page ordinal, worked out once per chunk
        base = {m: self.aad(m) for m in (DATA_PAGE_HEADER, DICTIONARY_PAGE_HEADER, DATA_PAGE,
                                          DICTIONARY_PAGE_MODULE)}

        def aad(module, page):
            if page is None:
                return base[module]
            if page > _MAX_ORDINAL:
                self.aad(module, page)               # (raises: too many pages)
            return base[module] + _ORDINAL(page)

        def span(at, module, page, least):
            if at + LENGTH > n:
                raise self.error(module, "is truncated (no room for its length)", page)
            m = int.from_bytes(cview[at:at + LENGTH], "little")
            if m < least or at + LENGTH + m > n:
                raise self.error(module, f"is truncated or damaged (length {m}, "
                                 f"{n - at - LENGTH} bytes left in the chunk)", page)
            return at + LENGTH, at + LENGTH + m

        pos = used = seen = ordinal = 0
        first = True
        positions: dict = {}
        parsed: list = []
        while pos < n and seen < num_values:
            is_dict = first and has_dictionary
            hmod = DICTIONARY_PAGE_HEADER if is_dict else DATA_PAGE_HEADER
            page = None if is_dict else ordinal
            hs, he = span(pos, hmod, page, NONCE + TAG)
            plain = cipher.gcm(cview[hs:he], aad(hmod, page))
            if plain is None and first:         # the dictionary page hint was wrong?
                other = DATA_PAGE_HEADER if is_dict else DICTIONARY_PAGE_HEADER
                plain = cipher.gcm(cview[hs:he], aad(other, None if is_dict else 0))
                if plain is not None:
                    is_dict, hmod = not is_dict, other
                    page = None if is_dict else ordinal
            if plain is None:
                raise self.error(hmod, _FAILED, page)
            header, end = self._decoded(plain, ordinal)
            plain = plain[:end]             # (parquet-java pads some headers)
            ptype, csize, crc = (header.get(k) for k in ("type", "compressed_page_size", "crc"))
            h = header.get("data_page_header") or header.get("data_page_header_v2") or {}
            if (ptype == DICTIONARY_PAGE) != is_dict:
                raise FileFormatError("a page header's type disagrees with its module type",
                                      file=self.file.path, row_group=self.row_group,
                                      column=self.name, page=ordinal)
            bmod = DICTIONARY_PAGE_MODULE if is_dict else DATA_PAGE
            bs, be = span(he, bmod, page, page_min)
            if csize != be - he:
                raise self.error(bmod, f"is {be - he} bytes, its authenticated header says "
                                 f"{csize}: tampered or damaged", page)
            if crc is not None and ctr and zlib.crc32(cview[he:be]) != crc & 0xFFFFFFFF:
                # CTR pages have no tag: their CRC (of the encrypted page, as
                # parquet-java and Arrow write it) is all that catches damage
                raise self.error(bmod, "failed its CRC32 check: tampered or damaged "
                                 "(AES_GCM_CTR_V1 pages are not authenticated)", page)
            # the plaintext size; no crc (it covers the encrypted page; GCM: the tag does)
            header.pop("crc", None)
            header["compressed_page_size"] = be - bs - page_min
            head = plaintext_header(plain, header)
            parsed.append((used, header, used + len(head)))
            body = used + len(head)
            view[used:body] = head
            got = cipher.page_into(cview[bs:be], aad(bmod, page), view[body:])
            if got is None:
                raise self.error(bmod, _FAILED, page)
            positions[pos] = (used, body + got - used)
            used = body + got
            pos = be
            first = False
            if not is_dict:
                seen += max(int(h.get("num_values") or 0), 0)
                ordinal += 1
        plain_buf = out[:used]
        memo = chunk_memo(plain_buf)
        if memo is not None:         # the headers decoded in full: pages.py finds them here
            for at, header, body in parsed:
                memo[at] = (header, body)
        return plain_buf, positions
