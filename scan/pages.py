"""Page iteration over one column chunk: headers, bounds, CRC checks and
decompression into the parts the decoders need."""

from __future__ import annotations

import threading
import weakref
import zlib
from dataclasses import dataclass

import numpy as np

from scan import thrift as T
from scan.codecs import decompress
from scan.errors import FileFormatError

DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
# bytes a dictionary page header takes at most: parquet-mr before 1.2.9 left
# it out of the chunk's total_compressed_size (PARQUET-816), so readers of
# such files read this much past the chunk's stated end
MAX_DICT_HEADER = 100
ARENA_LIMIT = 1 << 31           # bytes of one chunk's Arena at most


@dataclass
class Page:
    """One dictionary or data page, decompressed.

    ``levels`` (v2 only) holds the uncompressed repetition+definition level
    bytes; ``data`` the decompressed rest (v1: levels and values)."""
    ordinal: int
    kind: int
    num_values: int
    encoding: str
    data: np.ndarray
    levels: np.ndarray | None = None
    rep_length: int = 0
    def_length: int = 0
    num_nulls: int | None = None
    num_rows: int | None = None
    def_encoding: str = "RLE"
    rep_encoding: str = "RLE"
    owner: np.ndarray | None = None   # the buffer ``data`` lies in (chunk or arena)
    base: int = 0                     # offset of ``data`` in ``owner``


class Arena:
    """One buffer that the decompressed pages of a chunk are laid out in, so
    string views of all pages share one heap (zero copy)."""

    def __init__(self, size: int):
        self.buf = np.empty(max(int(size), 0), dtype=np.uint8)
        self.used = 0

    def take(self, n: int):
        """(array, base) for ``n`` bytes, or (None, 0) when full."""
        if self.used + n > len(self.buf):
            return None, 0
        base = self.used
        self.used += n
        return self.buf[base:base + n], base


def chunk_arena(chunk, is_view: bool) -> Arena | None:
    """One buffer that every decompressed page of a string chunk is written
    into, so the pages share one heap (None when nothing needs it)."""
    if is_view and chunk.codec != "UNCOMPRESSED":
        return Arena(min(max(chunk.total_uncompressed_size, 0), ARENA_LIMIT))
    return None


def _int(h: dict, key: str, what: str, page: int) -> int:
    v = h.get(key)
    if v is None:
        raise FileFormatError(f"{what} lacks {key}", page=page)
    if v < 0:
        raise FileFormatError(f"{what} has negative {key} {v}", page=page)
    return v


# chunk buffer -> {position: (header, body position), ("crc", position): True}.
# Chunk buffers come from the buffer manager and are immutable while alive, so
# a page header is parsed (and its CRC checked) once per cached chunk, not on
# every query; an entry dies with its buffer.  Keyed by identity (arrays are
# unhashable), guarded by a weak reference.
_HEADER_MEMO: dict = {}
_MEMO_LOCK = threading.Lock()


def _forget(key, ref, memos=_HEADER_MEMO) -> None:
    # (the dict bound as a default: a buffer freed at interpreter exit, when
    # module globals are already None, still finds it -- an encrypted chunk's
    # memo holds its plaintext buffer, so such frees cascade)
    entry = memos.get(key)
    if entry is not None and entry[0] is ref:
        memos.pop(key, None)


def chunk_memo(buf) -> dict | None:
    """The memo kept with the cached chunk buffer ``buf`` (parsed headers,
    and what the decode paths derive once per chunk: page tables, plans,
    dictionaries), or None when ``buf`` cannot be weakly referenced."""
    key = id(buf)
    with _MEMO_LOCK:
        entry = _HEADER_MEMO.get(key)
        if entry is not None and entry[0]() is buf:
            return entry[1]
        try:
            ref = weakref.ref(buf, lambda r, key=key, forget=_forget: forget(key, r))
        except TypeError:             # not weak-referenceable: no memo
            return None
        memo: dict = {}
        _HEADER_MEMO[key] = (ref, memo)
        return memo


def iter_pages(buf: np.ndarray, codec: str, num_values: int, verify_checksums: bool = True,
               arena: Arena | None = None):
    """Yield the dictionary and data pages of a column chunk held in ``buf``.

    Stops after ``num_values`` values (data pages) or at the end of the chunk;
    index pages and unknown page types are skipped.  Errors carry the page
    ordinal; the caller adds file, row group and column."""
    pos, end = 0, len(buf)
    seen = 0
    ordinal = 0
    memo = chunk_memo(buf)
    while pos < end and seen < num_values:
        recipe = memo.get(("page", pos)) if memo is not None else None
        if recipe is None:
            recipe = page_recipe(buf, pos, end, ordinal, memo)
        header, body_pos, csize, usize, fields = recipe
        header_pos = pos
        body = buf[body_pos:body_pos + csize]
        pos = body_pos + csize
        if verify_checksums:
            check_crc(header, body, header_pos, memo, ordinal)
        page = make_page(header, header["type"], body, usize, codec, ordinal, buf, body_pos,
                          arena, fields)
        ordinal += 1
        if page is None:
            continue
        if page.kind != DICTIONARY_PAGE:
            seen += page.num_values
        yield page


def check_crc(header, body, pos: int, memo, ordinal: int) -> None:
    """The page CRC32 of the page at ``pos`` (when its header has one),
    checked once per cached chunk (remembered in the chunk memo)."""
    crc = header.get("crc")
    if crc is None or (memo is not None and ("crc", pos) in memo):
        return
    if zlib.crc32(body) != crc & 0xFFFFFFFF:
        raise FileFormatError("page CRC32 checksum mismatch", page=ordinal)
    if memo is not None:
        memo[("crc", pos)] = True


def page_recipe(buf, pos, end, ordinal, memo):
    """(header, body position, compressed size, uncompressed size, page
    fields) of the page at ``pos``, validated; kept in ``memo`` (per cached
    chunk) so later reads of the chunk skip parsing and checks."""
    parsed = memo.get(pos) if memo is not None else None
    if parsed is None:
        try:
            parsed = T.decode_struct(buf, T.PAGE_HEADER, pos, end)
        except FileFormatError as e:
            raise FileFormatError(f"bad page header: {e}", page=ordinal) from None
        if memo is not None:
            memo[pos] = parsed
    header, body_pos = parsed
    ptype = header.get("type")
    if ptype is None:
        raise FileFormatError("page header lacks type", page=ordinal)
    csize = _int(header, "compressed_page_size", "page header", ordinal)
    usize = _int(header, "uncompressed_page_size", "page header", ordinal)
    if csize > end - body_pos:
        raise FileFormatError(f"page of {csize} bytes runs past the end of the column "
                              f"chunk ({end - body_pos} bytes left)", page=ordinal)
    recipe = (header, body_pos, csize, usize, _page_fields(header, ptype, csize, usize, ordinal))
    if memo is not None:
        memo[("page", pos)] = recipe
    return recipe


def _place(codec, body, usize, buf, body_pos, arena):
    """Decompress ``body``; returns (data, owner, base)."""
    if codec == "UNCOMPRESSED":
        return decompress(codec, body, usize), buf, body_pos
    out, base = arena.take(usize) if arena is not None else (None, 0)
    data = decompress(codec, body, usize, out)
    return data, (arena.buf if out is not None else data), base


def _page_fields(header, ptype, csize, usize, ordinal):
    """The validated, decoded header fields a page is built from (they
    depend on the header alone, so iter_pages keeps them per cached chunk):
    (kind, num_values, encoding, extra) or None for a page to skip."""
    if ptype == DICTIONARY_PAGE:
        h = header.get("dictionary_page_header")
        if h is None:
            raise FileFormatError("dictionary page lacks its header", page=ordinal)
        n = _int(h, "num_values", "dictionary page header", ordinal)
        return ptype, n, _enc(h.get("encoding", 0)), None
    if ptype == DATA_PAGE:
        h = header.get("data_page_header")
        if h is None:
            raise FileFormatError("data page lacks its header", page=ordinal)
        n = _int(h, "num_values", "data page header", ordinal)
        return ptype, n, _enc(h.get("encoding", 0)), (
            _enc(h.get("definition_level_encoding", 3)),
            _enc(h.get("repetition_level_encoding", 3)))
    if ptype == DATA_PAGE_V2:
        h = header.get("data_page_header_v2")
        if h is None:
            raise FileFormatError("data page v2 lacks its header", page=ordinal)
        n = _int(h, "num_values", "data page v2 header", ordinal)
        rl = _int(h, "repetition_levels_byte_length", "data page v2 header", ordinal)
        dl = _int(h, "definition_levels_byte_length", "data page v2 header", ordinal)
        if rl + dl > csize or rl + dl > usize:
            raise FileFormatError(f"data page v2 level lengths {rl}+{dl} exceed the page",
                                  page=ordinal)
        return ptype, n, _enc(h.get("encoding", 0)), (
            rl, dl, h.get("is_compressed", True), h.get("num_nulls"), h.get("num_rows"))
    return None                           # INDEX_PAGE or an unknown page type: skip


def make_page(header, ptype, body, usize, codec, ordinal, buf, body_pos, arena,
               fields=None) -> Page | None:
    """The decompressed page; ``fields``: _page_fields of its header, when
    the caller kept them."""
    try:
        if fields is None:
            fields = _page_fields(header, ptype, len(body), usize, ordinal)
        if fields is None:
            return None
        kind, n, encoding, extra = fields
        if kind == DICTIONARY_PAGE:
            data, owner, base = _place(codec, body, usize, buf, body_pos, arena)
            return Page(ordinal, kind, n, encoding, data, owner=owner, base=base)
        if kind == DATA_PAGE:
            data, owner, base = _place(codec, body, usize, buf, body_pos, arena)
            return Page(ordinal, kind, n, encoding, data, owner=owner, base=base,
                        def_encoding=extra[0], rep_encoding=extra[1])
        rl, dl, compressed, num_nulls, num_rows = extra
        levels = body[:rl + dl]
        rest = body[rl + dl:]
        data, owner, base = _place(codec if compressed else "UNCOMPRESSED", rest,
                                   usize - rl - dl, buf, body_pos + rl + dl, arena)
        return Page(ordinal, kind, n, encoding, data, levels=levels, owner=owner, base=base,
                    rep_length=rl, def_length=dl, num_nulls=num_nulls, num_rows=num_rows)
    except FileFormatError as e:
        if e.page is None:
            raise FileFormatError(str(e), page=ordinal) from None
        raise


def _enc(code) -> str:
    return T.enum_name(T.ENCODINGS, code, "encoding")
