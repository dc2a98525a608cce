"""A thrift compact-protocol encoder driven by scan/thrift.py's field
tables (the inverse of ``scan.thrift.decode_struct``), and footer rewriting:
tests build odd and corrupt files by decoding a pyarrow-written footer,
changing fields and writing it back (the data region stays as it was, so
every offset in it still holds)."""

from __future__ import annotations

import struct

from scan import thrift as T


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63) if n < 0 else n << 1)


def _value(ttype: int, nested, v) -> bytes:
    if ttype in (T.I16, T.I32, T.I64):
        return _zigzag(int(v))
    if ttype == T.BYTE:
        return bytes([v & 0xFF])
    if ttype == T.DOUBLE:
        return struct.pack("<d", v)
    if ttype == T.BINARY:
        raw = v.encode() if isinstance(v, str) else bytes(v)
        return _varint(len(raw)) + raw
    if ttype == T.STRUCT:
        return encode_struct(v, nested or {})
    if ttype in (T.LIST, T.SET):
        etype, espec = nested
        wire = T.BOOL_TRUE if etype in (T.BOOL_TRUE, T.BOOL_FALSE) else etype
        head = bytes([(len(v) << 4) | wire]) if len(v) < 15 else bytes([0xF0 | wire]) + _varint(len(v))
        if wire == T.BOOL_TRUE:
            return head + bytes(1 if x else 2 for x in v)
        return head + b"".join(_value(etype, espec, x) for x in v)
    raise ValueError(f"cannot encode thrift type {ttype}")


def encode_struct(d: dict, spec: dict) -> bytes:
    """``d`` (a decoded struct: field name -> value) as compact-protocol bytes."""
    by_name = {name: (fid, ttype, nested) for fid, (name, ttype, nested) in spec.items()}
    out = bytearray()
    last = 0
    for name in sorted(d, key=lambda k: by_name[k][0]):
        fid, ttype, nested = by_name[name]
        v = d[name]
        if v is None:
            continue
        wire = ttype
        if ttype in (T.BOOL_TRUE, T.BOOL_FALSE):
            wire = T.BOOL_TRUE if v else T.BOOL_FALSE
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | wire)
        else:
            out.append(wire)
            out += _zigzag(fid)
        last = fid
        if wire not in (T.BOOL_TRUE, T.BOOL_FALSE):
            out += _value(ttype, nested, v)
    out.append(T.STOP)
    return bytes(out)


def read_footer(path) -> tuple[bytes, dict]:
    """(the bytes before the footer, the decoded FileMetaData)."""
    data = open(path, "rb").read()
    n = int.from_bytes(data[-8:-4], "little")
    raw, _ = T.decode_struct(data, T.FILE_META_DATA, len(data) - 8 - n, len(data) - 8)
    return data[:len(data) - 8 - n], raw


def write_with_footer(path, body: bytes, raw: dict) -> None:
    footer = encode_struct(raw, T.FILE_META_DATA)
    with open(path, "wb") as f:
        f.write(body + footer + len(footer).to_bytes(4, "little") + b"PAR1")


def rewrite_footer(src, dst, mutate) -> None:
    """Copy ``src`` to ``dst`` with ``mutate(raw)`` applied to its footer."""
    body, raw = read_footer(src)
    mutate(raw)
    write_with_footer(dst, body, raw)
