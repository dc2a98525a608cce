"""The numba kernels of the whole-chunk decode (scan/required_chunk.py): one
call decodes a run of data pages -- PLAIN or dictionary-encoded, with or
without v1 definition levels -- into the output, keeping only selected
rows; the SNAPPY variant decompresses each page into a page-sized scratch
(or its kept slot, scan/kept_pages.py) first."""

from __future__ import annotations

import numpy as np
from numba import njit

from scan.encodings.dictionary import dictionary_page_kernel
from scan.encodings.plain import be_decimal_at
from scan.levels import v1_defined
from scan.memops import copy_bytes, load4, load8, store4, store8
from scan.snappy_kernel import snappy_decompress

# added to a page's encoding code (0 PLAIN, 1 dictionary): the page is a
# DATA_PAGE (v1) of an optional column, its RLE definition levels (4-byte
# length first) precede the values (scan.levels.v1_defined reads them)
LEVELS = 2


@njit(nogil=True, cache=True)
def _decode_page(src, pos, end, n, enc, dictionary, out, out_bytes, j, sel, r, use_sel, width,
                 nulls):
    """Decode one data page (src[pos:end], n rows) into out[j:]: PLAIN
    (``width``-byte values copied) or dictionary-encoded (the fused gather of
    scan/encodings/dictionary.py).  With ``use_sel`` only rows r + k with sel[r + k] != 0 are
    kept.  Returns the number of rows kept, or -1 on a defect.  An encoding
    code with LEVELS added: the v1 definition levels come first; the page's
    rows get nulls[j:] (1 = NULL; the value slot holds 0) and its dense
    values are spread over the defined rows."""
    if end > src.shape[0]:
        return -1
    if enc < LEVELS:
        return _decode_values(src, pos, end, n, enc, dictionary, out, out_bytes, j, sel, r,
                              use_sel, width)
    defined = np.empty(n, np.int32)
    vpos, valid = v1_defined(src, pos, end, n, defined)
    if vpos < 0:
        return -1
    enc -= LEVELS
    if valid == n:                              # no NULL in this page
        kept = _decode_values(src, vpos, end, n, enc, dictionary, out, out_bytes, j, sel, r,
                              use_sel, width)
        if kept > 0:
            nulls[j:j + kept] = 0
        return kept
    tmp = np.empty(n, out.dtype)                # dense values at the end, spread forward
    d = n - valid
    if valid and _decode_values(src, vpos, end, valid, enc, dictionary, tmp, tmp.view(np.uint8),
                                d, sel, 0, False, width) != valid:
        return -1
    for k in range(n):
        if defined[k]:
            tmp[k] = tmp[d]
            d += 1
        else:
            tmp[k] = 0
    jj = j
    for k in range(n):
        if use_sel and sel[r + k] == 0:
            continue
        out[jj] = tmp[k]
        nulls[jj] = 1 - defined[k]
        jj += 1
    return jj - j


@njit(nogil=True, cache=True)
def _decode_values(src, pos, end, n, enc, dictionary, out, out_bytes, j, sel, r, use_sel, width):
    """_decode_page's values: n of them, no levels."""
    if enc == 1:
        if use_sel:
            return dictionary_page_kernel(src, pos, end, n, dictionary, out[j:],
                                          sel[r:r + n], True)
        return dictionary_page_kernel(src, pos, end, n, dictionary, out[j:], sel, False)
    if width < 0:
        return _plain_decimals(src, pos, end, n, -width, out, j, sel, r, use_sel)
    if width == 0 or pos + n * width > end:
        return -1
    if not use_sel:
        copy_bytes(out_bytes, j * width, src, pos, n * width)
        return n
    j0 = j
    if width == 8:
        for k in range(n):
            store8(out_bytes, j * 8, load8(src, pos + k * 8))
            j += np.int64(sel[r + k])
    else:
        for k in range(n):
            store4(out_bytes, j * 4, load4(src, pos + k * 4))
            j += np.int64(sel[r + k])
    return j - j0


@njit(nogil=True, cache=True)
def _plain_decimals(src, pos, end, n, tl, out, j, sel, r, use_sel):
    """PLAIN FIXED_LEN_BYTE_ARRAY decimals of ``tl`` bytes (big-endian two's
    complement) into int64 ``out[j:]``; -1 when one does not fit 64 bits."""
    if tl == 0 or pos + n * tl > end:
        return -1
    j0 = j
    for k in range(n):
        v, fits = be_decimal_at(src, pos + k * tl, tl)
        if not fits:
            return -1
        out[j] = v
        if use_sel:
            j += np.int64(sel[r + k])
        else:
            j += 1
    return j - j0


@njit(nogil=True, cache=True)
def none_selected(sel, r, n):
    """Whether no row of [r, r + n) is selected (an OR over the bytes: no
    early exit, so the loop vectorizes)."""
    acc = np.uint8(0)
    for k in range(r, r + n):
        acc |= sel[k]
    return acc == 0


@njit(nogil=True, cache=True)
def decode_pages(src, starts, usizes, nvals, encs, dictionary, out, out_bytes, sel, use_sel,
                  width, nulls):
    """Decode every data page of a required chunk into ``out``; page i's
    bytes are src[starts[i]:starts[i] + usizes[i]].  ``out`` has one slot of
    slack.  Returns the number of values kept, or -1 on a defect.  With
    ``use_sel`` a page none of whose rows is selected is skipped."""
    j = 0
    r = 0
    for i in range(starts.shape[0]):
        if use_sel and none_selected(sel, r, nvals[i]):
            r += nvals[i]
            continue
        kept = _decode_page(src, starts[i], starts[i] + usizes[i], nvals[i], encs[i],
                            dictionary, out, out_bytes, j, sel, r, use_sel, width, nulls)
        if kept < 0:
            return -1
        j += kept
        r += nvals[i]
    return j


@njit(nogil=True, cache=True)
def decode_snappy_pages(buf, starts, csizes, usizes, compressed, nvals, encs, dictionary,
                         out, out_bytes, sel, use_sel, width, scratch, nulls, arena, slots,
                         fill):
    """decode_pages for a SNAPPY chunk: each page is decompressed into
    ``scratch`` (big enough for the largest page) and decoded while it is
    still in cache -- one call for the whole chunk.  A page with a slot in
    the kept ``arena`` (``slots[i]`` >= 0; no slots when ``slots`` is
    empty) is read from there, decompressed into it first when ``fill[i]``
    (scan/kept_pages.py).  With ``use_sel`` a page none of whose rows is
    selected is neither decompressed nor decoded (unless its kept slot is
    to be filled: the slot's page counts as filled after this call)."""
    j = 0
    r = 0
    keeping = slots.shape[0] > 0
    filling = fill.shape[0] > 0
    for i in range(starts.shape[0]):
        usize = usizes[i]
        if use_sel and not (keeping and filling and slots[i] >= 0 and fill[i]) \
                and none_selected(sel, r, nvals[i]):
            r += nvals[i]
            continue
        src, pos = scratch, 0
        if keeping and slots[i] >= 0:
            src, pos = arena, slots[i]
            if filling and fill[i] and snappy_decompress(buf, starts[i], starts[i] + csizes[i],
                                                         arena, pos, usize) < 0:
                return -1
        elif compressed[i]:
            if snappy_decompress(buf, starts[i], starts[i] + csizes[i], scratch, 0, usize) < 0:
                return -1
        else:
            if csizes[i] != usize or starts[i] + usize > buf.shape[0]:
                return -1
            copy_bytes(scratch, 0, buf, starts[i], usize)
        kept = _decode_page(src, pos, pos + usize, nvals[i], encs[i], dictionary, out, out_bytes,
                            j, sel, r, use_sel, width, nulls)
        if kept < 0:
            return -1
        j += kept
        r += nvals[i]
    return j
