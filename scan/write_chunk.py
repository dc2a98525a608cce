"""One column chunk of a row group -> its pages, statistics, page index
entries and bloom filter (scan/writer.py writes them).

``encode_chunk`` is a pure function of the leaf's staged values, so the
writer runs the chunks of a row group (and row groups) on several threads:
its loops are numba kernels (scan/encodings/encode.py) and numpy, the
compressors release the GIL.

Pages hold at most ``page_rows`` rows and about ``page_bytes`` bytes of
values, and start at a row (nested columns: at repetition level 0), so
the OffsetIndex's first_row_index is exact.  Dictionary encoding is used
when the chunk has at most ``dictionary_size_limit`` distinct values (and
string dictionaries at most ``dictionary_page_bytes``) and the dictionary
page plus the bit-packed codes are smaller than the PLAIN values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scan.codecs import compress
from scan.encodings.encode import (bit_width, bytes_minmax_segments, codes_minmax_segments,
                                   dictionary_bytes, dictionary_u64, encode_hybrid,
                                   plain_byte_array)

PLAIN, RLE, RLE_DICTIONARY = 0, 3, 8
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
ORDERS = {"UNORDERED": 0, "ASCENDING": 1, "DESCENDING": 2}
TRUNCATE = 64                  # page index byte values longer than this are truncated


@dataclass
class Page:
    kind: int                  # DATA_PAGE, DATA_PAGE_V2 or DICTIONARY_PAGE
    header: dict               # PageHeader without compressed_page_size (set when written)
    body: bytes                # as stored: compressed (v2: levels, then compressed values)
    first_row: int = 0


@dataclass
class EncodedChunk:
    leaf: object
    pages: list
    num_values: int
    encodings: list
    encoding_stats: list
    statistics: dict | None
    column_index: dict | None
    bloom: tuple | None = None           # (BloomFilterHeader dict, bitset bytes)
    uncompressed: int = 0                # page bodies, uncompressed (headers come on top)
    rows: int = 0
    dictionary: bool = False
    extra: dict = field(default_factory=dict)


def concat_parts(leaf, parts) -> tuple:
    """(defs, reps, values, rows) of the leaf's LeafParts put together."""
    rows = sum(p.rows for p in parts)
    if any(p.defs is not None for p in parts):
        defs = np.concatenate([p.defs if p.defs is not None
                               else np.full(p.entries, leaf.max_def, np.uint8) for p in parts])
    else:
        defs = None
    reps = np.concatenate([p.reps for p in parts]) if leaf.max_rep else None
    vals = [p.values for p in parts]
    if isinstance(vals[0], tuple):
        if len(vals) == 1:
            values = vals[0]
        else:
            bases = np.cumsum([0] + [len(v[1]) for v in vals[:-1]])
            offsets = np.concatenate([vals[0][0][:1]] + [v[0][1:] + b for v, b in zip(vals, bases)])
            values = (offsets, np.concatenate([v[1] for v in vals]))
    else:
        values = vals[0] if len(vals) == 1 else np.concatenate(vals)
    return defs, reps, values, rows


def _count(values) -> int:
    return len(values[0]) - 1 if isinstance(values, tuple) else len(values)


def _value_bytes(values) -> int:
    if isinstance(values, tuple):
        return int(values[0][-1] - values[0][0]) + 4 * (len(values[0]) - 1)
    return values.nbytes


def _page_bounds(defs, reps, values, rows, max_def, opts):
    """(entry bounds, value bounds, first rows) of the pages."""
    entries = len(defs) if defs is not None else _count(values)
    per_row = max(_value_bytes(values) / max(rows, 1), 1e-9)
    step = int(max(1, min(opts.page_rows, opts.page_bytes // per_row)))
    if rows == 0:
        row_bounds = np.zeros(1, np.int64)
        ebounds = np.array([0, entries], np.int64)
    else:
        row_bounds = np.arange(0, rows, step, dtype=np.int64)
        if reps is None:
            ebounds = np.append(row_bounds, entries)
        else:
            ebounds = np.append(np.flatnonzero(reps == 0)[row_bounds], entries)
    if defs is None:
        vbounds = ebounds
    else:
        present = np.zeros(entries + 1, np.int64)
        np.cumsum(defs == max_def, out=present[1:])
        vbounds = present[ebounds]
    return ebounds.astype(np.int64), vbounds.astype(np.int64), row_bounds


# ---- statistics ----------------------------------------------------------------

def _fixed_domain(leaf, values):
    """The values as an array min/max may be taken on (unsigned: its view)."""
    if leaf.order == "unsigned":
        return values.view(np.uint32 if values.dtype.itemsize == 4 else np.uint64)
    if values.dtype == np.bool_:
        return values.view(np.uint8)
    return values


def _raw_fixed(leaf, v) -> bytes:
    if leaf.physical == "BOOLEAN":
        return bytes([int(v)])
    dtype = {"INT32": "<i4", "INT64": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}[leaf.physical]
    if leaf.order == "unsigned":
        dtype = dtype.replace("i", "u")
    return np.array([v], dtype).tobytes()


def _segments(leaf, values, bounds, dict_codes=None, dict_ranks=None):
    """Per segment (bounds): (min raw bytes, max raw bytes, min key, max key),
    or None for a segment without values."""
    nseg = len(bounds) - 1
    out = [None] * nseg
    if leaf.order == "none" or nseg == 0:
        return out
    if isinstance(values, tuple):                      # BYTE_ARRAY
        offsets, data = values
        lo = np.empty(nseg, np.int64)
        hi = np.empty(nseg, np.int64)
        if dict_codes is not None:                     # values: the dictionary
            codes_minmax_segments(dict_codes, dict_ranks, bounds, lo, hi)
        else:
            bytes_minmax_segments(offsets, data, bounds, lo, hi)
        for s in range(nseg):
            if lo[s] >= 0:
                a = data[offsets[lo[s]]:offsets[lo[s] + 1]].tobytes()
                b = data[offsets[hi[s]]:offsets[hi[s] + 1]].tobytes()
                out[s] = (a, b, a, b)
        return out
    if values.ndim == 2:                               # FIXED_LEN_BYTE_ARRAY
        n = len(values)
        if n == 0:
            return out
        words = values.reshape(n, -1)
        hi_w = words[:, :8].copy().view(">i8" if leaf.order == "decimal" else ">u8").ravel()
        lo_w = words[:, 8:16].copy().view(">u8").ravel()
        order = np.lexsort((lo_w, hi_w))
        ranks = np.empty(n, np.int64)
        ranks[order] = np.arange(n)
        lo = np.empty(nseg, np.int64)
        hi = np.empty(nseg, np.int64)
        codes_minmax_segments(np.arange(n, dtype=np.int64), ranks, bounds, lo, hi)
        for s in range(nseg):
            if lo[s] >= 0:
                a, b = values[lo[s]].tobytes(), values[hi[s]].tobytes()
                ka = int.from_bytes(a, "big", signed=leaf.order == "decimal")
                kb = int.from_bytes(b, "big", signed=leaf.order == "decimal")
                out[s] = (a, b, ka, kb)
        return out
    dom = _fixed_domain(leaf, values)
    nonempty = np.flatnonzero(bounds[1:] > bounds[:-1])
    if len(nonempty) == 0:
        return out
    starts = bounds[:-1][nonempty]
    if leaf.order == "float":
        mins, maxs = np.fmin.reduceat(dom, starts), np.fmax.reduceat(dom, starts)
    else:
        mins, maxs = np.minimum.reduceat(dom, starts), np.maximum.reduceat(dom, starts)
    for s, a, b in zip(nonempty.tolist(), mins.tolist(), maxs.tolist()):
        if leaf.order == "float":
            if a != a:                                 # only NaN: no usable bounds
                out[s] = (_raw_fixed(leaf, a), _raw_fixed(leaf, b), None, None)
                continue
            a = -0.0 if a == 0 else a
            b = 0.0 if b == 0 else b
        out[s] = (_raw_fixed(leaf, a), _raw_fixed(leaf, b), a, b)
    return out


def _truncate_min(b: bytes) -> bytes:
    if len(b) <= TRUNCATE:
        return b
    cut = TRUNCATE
    while cut > 0 and (b[cut] & 0xC0) == 0x80:        # keep UTF-8 characters whole
        cut -= 1
    return b[:cut]


def _truncate_max(b: bytes) -> bytes:
    if len(b) <= TRUNCATE:
        return b
    for i in range(TRUNCATE - 1, -1, -1):
        if b[i] < 0x7F:                                # an ASCII byte: +1 stays ASCII
            return b[:i] + bytes([b[i] + 1])
    return b


def _boundary_order(seg) -> int:
    """ASCENDING / DESCENDING when the non-null pages' minima and maxima
    both are (pages of NaN only: UNORDERED)."""
    present = [x for x in seg if x is not None]
    if any(x[2] is None for x in present):
        return ORDERS["UNORDERED"]
    lo = [x[2] for x in present]
    hi = [x[3] for x in present]
    if all(a <= b for a, b in zip(lo, lo[1:])) and all(a <= b for a, b in zip(hi, hi[1:])):
        return ORDERS["ASCENDING"]
    if all(a >= b for a, b in zip(lo, lo[1:])) and all(a >= b for a, b in zip(hi, hi[1:])):
        return ORDERS["DESCENDING"]
    return ORDERS["UNORDERED"]


# ---- dictionary -------------------------------------------------------------------

def _try_dictionary(leaf, values, opts):
    """(codes, firsts) when dictionary encoding pays, else None."""
    if not opts.dictionary or leaf.physical not in ("INT32", "INT64", "FLOAT", "DOUBLE",
                                                      "BYTE_ARRAY") or leaf.type.id == "NULL":
        return None
    n = _count(values)
    if n < 2:
        return None
    limit = max(1, min(opts.dictionary_size_limit, n - 1))
    codes = np.empty(n, np.int32)
    if isinstance(values, tuple):
        count, firsts = dictionary_bytes(values[0], values[1], limit, opts.dictionary_page_bytes,
                                         codes)
        if count < 0:
            return None
        lengths = np.diff(values[0])
        dict_bytes = int(lengths[firsts].sum()) + 4 * count
    else:
        keys = values.view(np.uint32).astype(np.uint64) if values.dtype.itemsize == 4 \
            else values.view(np.uint64)
        count, firsts = dictionary_u64(keys, limit, codes)
        if count < 0:
            return None
        dict_bytes = count * values.dtype.itemsize
    bw = max(bit_width(count - 1), 1)
    if dict_bytes + n * bw / 8 >= _value_bytes(values):
        return None
    return codes, firsts


def _dictionary_values(values, firsts):
    if isinstance(values, tuple):
        offsets, data = values
        starts, ends = offsets[firsts], offsets[firsts + 1]
        lengths = ends - starts
        uoff = np.zeros(len(firsts) + 1, np.int64)
        np.cumsum(lengths, out=uoff[1:])
        idx = np.repeat(starts - uoff[:-1], lengths) + np.arange(int(uoff[-1]), dtype=np.int64)
        return uoff, data[idx]
    return values[firsts]


def _ranks_of(uniques) -> np.ndarray:
    offsets, data = uniques
    items = [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(offsets) - 1)]
    order = sorted(range(len(items)), key=items.__getitem__)
    ranks = np.empty(len(items), np.int64)
    ranks[np.array(order, np.int64)] = np.arange(len(items))
    return ranks


# ---- bloom filters -----------------------------------------------------------------

def _bloom(leaf, values, fpp: float):
    """(BloomFilterHeader, bitset) of the distinct values (plain-encoded, as
    the spec hashes them) of a chunk or its dictionary."""
    from scan.bloom import sbbf_insert, xxh64_many
    if isinstance(values, tuple):
        offsets, buf = values
        n = len(offsets) - 1
    else:
        n = len(values)
        width = values.dtype.itemsize if values.ndim == 1 else values.shape[1]
        buf = np.ascontiguousarray(values).view(np.uint8).ravel()
        offsets = np.arange(0, n * width + 1, width, dtype=np.int64)
    hashes = np.empty(n, np.uint64)
    xxh64_many(buf, offsets, hashes)
    ndv = len(np.unique(hashes))
    bits = -8.0 * max(ndv, 1) / math.log(1 - fpp ** (1 / 8))
    nbytes = 32
    while nbytes * 8 < bits and nbytes < (128 << 20):
        nbytes <<= 1
    words = np.zeros(nbytes // 4, np.uint32)
    sbbf_insert(words, hashes)
    header = {"numBytes": nbytes, "algorithm": {"BLOCK": {}}, "hash": {"XXHASH": {}},
              "compression": {"UNCOMPRESSED": {}}}
    return header, words.tobytes()


# ---- pages ---------------------------------------------------------------------------

def _levels(levels, n: int, max_level: int) -> bytes:
    """Hybrid-encoded levels (``levels`` None: n times max_level)."""
    if max_level == 0:
        return b""
    bw = bit_width(max_level)
    if levels is None:
        out = bytearray()
        run = n << 1
        while run > 0x7F:
            out.append((run & 0x7F) | 0x80)
            run >>= 7
        out.append(run)
        out += max_level.to_bytes((bw + 7) // 8, "little")
        return bytes(out)
    return encode_hybrid(levels, bw)


def _plain(leaf, values, a: int, b: int) -> bytes:
    if isinstance(values, tuple):
        return plain_byte_array(values[0], values[1], a, b).tobytes()
    part = values[a:b]
    if leaf.physical == "BOOLEAN":
        return np.packbits(part.view(np.uint8), bitorder="little").tobytes()
    return part.tobytes()


def encode_chunk(leaf, parts, opts) -> EncodedChunk:
    """The pages and metadata of one column chunk from its LeafParts."""
    defs, reps, values, rows = concat_parts(leaf, parts)
    ebounds, vbounds, row_bounds = _page_bounds(defs, reps, values, rows, leaf.max_def, opts)
    entries = int(ebounds[-1])
    nvalues = _count(values)
    codec = opts.compression
    dictionary = _try_dictionary(leaf, values, opts)
    pages = []
    uncompressed = 0
    bloom = None
    want_bloom = opts.bloom_for(leaf, dictionary is not None)
    if dictionary is not None:
        codes, firsts = dictionary
        uniques = _dictionary_values(values, firsts)
        body = _plain(leaf, uniques, 0, len(firsts))
        uncompressed += len(body)
        header = {"type": DICTIONARY_PAGE, "uncompressed_page_size": len(body),
                  "dictionary_page_header": {"num_values": len(firsts), "encoding": PLAIN}}
        pages.append(Page(DICTIONARY_PAGE, header, compress(codec, body, opts.level)))
        bw = max(bit_width(len(firsts) - 1), 1)
        if isinstance(values, tuple):
            ranks = _ranks_of(uniques)
            seg = _segments(leaf, uniques, vbounds, codes, ranks)
            whole = _segments(leaf, uniques, np.array([0, nvalues], np.int64), codes, ranks)
        else:
            seg = _segments(leaf, values, vbounds)
            whole = _segments(leaf, values, np.array([0, nvalues], np.int64))
        if want_bloom:
            bloom = _bloom(leaf, uniques, opts.bloom_fpp)
    else:
        seg = _segments(leaf, values, vbounds)
        whole = _segments(leaf, values, np.array([0, nvalues], np.int64))
        if want_bloom and nvalues:
            bloom = _bloom(leaf, values, opts.bloom_fpp)
    encoding = RLE_DICTIONARY if dictionary is not None else PLAIN
    v2 = opts.data_page_version == 2
    null_counts = []
    for p in range(len(ebounds) - 1):
        e0, e1 = int(ebounds[p]), int(ebounds[p + 1])
        v0, v1 = int(vbounds[p]), int(vbounds[p + 1])
        rep = _levels(None if reps is None else reps[e0:e1], e1 - e0, leaf.max_rep)
        dfl = _levels(None if defs is None else defs[e0:e1], e1 - e0, leaf.max_def)
        if dictionary is not None:
            vals = bytes([bw]) + encode_hybrid(codes[v0:v1], bw)
        else:
            vals = _plain(leaf, values, v0, v1)
        nulls = (e1 - e0) - (v1 - v0)
        null_counts.append(nulls)
        first_row = int(row_bounds[p])
        page_rows = int((row_bounds[p + 1] if p + 1 < len(row_bounds) else rows) - first_row)
        size = len(rep) + len(dfl) + len(vals)
        if v2:
            body = rep + dfl + (compress(codec, vals, opts.level) if codec != "UNCOMPRESSED"
                                else vals)
            header = {"type": DATA_PAGE_V2, "uncompressed_page_size": size,
                      "data_page_header_v2": {
                          "num_values": e1 - e0, "num_nulls": nulls, "num_rows": page_rows,
                          "encoding": encoding, "definition_levels_byte_length": len(dfl),
                          "repetition_levels_byte_length": len(rep),
                          "is_compressed": codec != "UNCOMPRESSED"}}
            kind = DATA_PAGE_V2
        else:
            raw = b"".join([len(rep).to_bytes(4, "little"), rep] if rep else []) \
                + b"".join([len(dfl).to_bytes(4, "little"), dfl] if dfl else []) + vals
            size = len(raw)
            body = compress(codec, raw, opts.level)
            header = {"type": DATA_PAGE, "uncompressed_page_size": size,
                      "data_page_header": {"num_values": e1 - e0, "encoding": encoding,
                                           "definition_level_encoding": RLE,
                                           "repetition_level_encoding": RLE}}
            kind = DATA_PAGE
        uncompressed += size
        pages.append(Page(kind, header, body, first_row))
    statistics = {"null_count": entries - nvalues}
    if whole and whole[0] is not None and whole[0][2] is not None:
        statistics.update(min_value=whole[0][0], max_value=whole[0][1],
                          is_min_value_exact=True, is_max_value_exact=True)
    if dictionary is not None:
        statistics["distinct_count"] = len(dictionary[1])
    column_index = None
    if leaf.order != "none":
        is_null = [s is None for s in seg]
        column_index = {
            "null_pages": is_null,
            "min_values": [b"" if s is None else _truncate_min(s[0]) for s in seg],
            "max_values": [b"" if s is None else _truncate_max(s[1]) for s in seg],
            "boundary_order": _boundary_order(seg),
            "null_counts": null_counts}
    kinds = sorted({p.kind for p in pages if p.kind != DICTIONARY_PAGE})
    encodings = sorted({RLE, encoding} | ({PLAIN} if dictionary is not None else set()))
    enc_stats = [{"page_type": k, "encoding": encoding,
                  "count": sum(1 for p in pages if p.kind == k)} for k in kinds]
    if dictionary is not None:
        enc_stats.insert(0, {"page_type": DICTIONARY_PAGE, "encoding": PLAIN, "count": 1})
    return EncodedChunk(leaf, pages, entries, encodings, enc_stats, statistics, column_index,
                        bloom, uncompressed, rows, dictionary is not None)
