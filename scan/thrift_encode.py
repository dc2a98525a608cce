"""Thrift compact-protocol encoder driven by scan/thrift.py's field tables:
the inverse of ``scan.thrift.decode_struct``, used by the writer
(scan/writer.py) for page headers, the page index, bloom filter headers and
the footer.

A struct is a dict of field name -> value holding only the fields to write
(None values are skipped); values are ints (I16/I32/I64/BYTE), bools,
floats (DOUBLE), bytes or str (BINARY), dicts (STRUCT) and lists (LIST).
Fields are written in field-id order, as the protocol's delta headers need.
"""

from __future__ import annotations

import struct

from scan import thrift as T

_pack_double = struct.Struct("<d").pack
_BY_NAME: dict[int, dict] = {}       # id(spec) -> name -> (field id, type, nested)
_SPECS: list = []                    # keeps the specs of _BY_NAME alive


def _varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63) if n < 0 else n << 1)


def _names(spec: dict) -> dict:
    table = _BY_NAME.get(id(spec))
    if table is None:
        table = {name: (fid, ttype, nested) for fid, (name, ttype, nested) in spec.items()}
        _BY_NAME[id(spec)] = table
        _SPECS.append(spec)
    return table


def _value(out: bytearray, ttype: int, nested, v) -> None:
    if ttype in (T.I16, T.I32, T.I64):
        _zigzag(out, int(v))
    elif ttype == T.BINARY:
        raw = v.encode("utf-8") if isinstance(v, str) else v
        _varint(out, len(raw))
        out += raw
    elif ttype == T.STRUCT:
        _struct(out, v, nested or T.EMPTY)
    elif ttype in (T.LIST, T.SET):
        etype, espec = nested
        wire = T.BOOL_TRUE if etype in (T.BOOL_TRUE, T.BOOL_FALSE) else etype
        n = len(v)
        if n < 15:
            out.append((n << 4) | wire)
        else:
            out.append(0xF0 | wire)
            _varint(out, n)
        if wire == T.BOOL_TRUE:
            out += bytes(1 if x else 2 for x in v)
        elif etype in (T.I16, T.I32, T.I64):
            for x in v:
                _zigzag(out, int(x))
        else:
            for x in v:
                _value(out, etype, espec, x)
    elif ttype == T.BYTE:
        out.append(int(v) & 0xFF)
    elif ttype == T.DOUBLE:
        out += _pack_double(v)
    else:
        raise ValueError(f"cannot encode thrift type {ttype}")


def _struct(out: bytearray, d: dict, spec: dict) -> None:
    by_name = _names(spec)
    try:
        fields = sorted((by_name[k][0], k) for k, v in d.items() if v is not None)
    except KeyError as e:
        raise ValueError(f"thrift struct has no field {e.args[0]!r}") from None
    last = 0
    for fid, name in fields:
        _, ttype, nested = by_name[name]
        v = d[name]
        wire = ttype
        if ttype in (T.BOOL_TRUE, T.BOOL_FALSE):
            wire = T.BOOL_TRUE if v else T.BOOL_FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, fid)
        last = fid
        if wire not in (T.BOOL_TRUE, T.BOOL_FALSE):
            _value(out, ttype, nested, v)
    out.append(T.STOP)


def encode_struct(d: dict, spec: dict) -> bytes:
    """``d`` (field name -> value) as compact-protocol bytes of struct ``spec``."""
    out = bytearray()
    _struct(out, d, spec)
    return bytes(out)
