"""Row-range reads below the row group (docs/design.md, "How a query flows"
step 5; the paper's Fig. 5).

A morsel asks for rows [start, start+count) of one flat column chunk.  Only
the pages covering the range are decoded.  Per chunk, a ``ChunkState``
shared by all morsels holds

  * the page directory (first row, row count, header position of every data
    page), from the OffsetIndex when present, else from walking the headers;
  * the decompressed pages: one thread decompresses a page, concurrent
    requesters wait for it; a page is dropped again once every one of its rows
    has been handed out (a later request decompresses it anew), except
    string pages, which share one arena per chunk (one heap: no copy when
    morsels concatenate pages) and stay while the state lives;
  * the dictionary, decoded and converted to engine storage once;
  * sparse offsets recorded by the first morsel that touches a page: for
    dictionary pages the RLE/bit-packed run directory (value index -> byte
    position of the run), for PLAIN BYTE_ARRAY pages the byte position of
    every ``OFFSET_EVERY``-th value, so later morsels jump to their start row
    instead of decoding from the start of the page.

States live in a small LRU bounded by bytes (``set_chunk_cache_budget``), and
no longer than their compressed chunk stays in the buffer manager.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from scan import thrift as T
from scan.column_data import to_storage
from scan.errors import FileFormatError
from scan.io.buffer_manager import add_eviction_listener
from scan.pages import (ARENA_LIMIT, DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, Arena,
                        check_crc, chunk_memo, make_page)

OFFSET_EVERY = 1024
_FIXED_WIDTH = {"INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}


class _PageSlot:
    __slots__ = ("first_row", "num_rows", "header_pos", "page", "loading", "remaining",
                 "runs", "offsets")

    def __init__(self, first_row, num_rows, header_pos):
        self.first_row, self.num_rows, self.header_pos = first_row, num_rows, header_pos
        self.page = None
        self.loading = False
        self.remaining = num_rows
        self.runs = None
        self.offsets = None


class _SharedArena(Arena):
    """An Arena that threads decompressing different pages take space from."""

    def __init__(self, size):
        super().__init__(size)
        self.lock = threading.Lock()

    def take(self, n):
        with self.lock:
            return super().take(n)


class ChunkState:
    """Shared decoding state of one flat column chunk (see module doc)."""

    def __init__(self, buf, col, chunk, num_rows, verify_checksums, directory=None):
        self.buf, self.col, self.chunk = buf, col, chunk
        self.num_rows = num_rows
        self.verify = verify_checksums
        self.lock = threading.Lock()
        self.loaded = threading.Condition(self.lock)   # a page finished decompressing
        self.memo = chunk_memo(buf)
        self.arena = None                 # strings: pages share one heap (no copy on concat)
        if col.physical_type == "BYTE_ARRAY" and chunk.codec != "UNCOMPRESSED":
            self.arena = _SharedArena(min(max(chunk.total_uncompressed_size, 0), ARENA_LIMIT))
        self.dictionary = None            # (physical values, heap, storage values, storage heap)
        self.dict_pos = None
        self.slots = self._directory(directory)
        self.starts = np.array([s.first_row for s in self.slots], np.int64)
        self.nbytes = 0                   # live decompressed pages outside the arena

    # -- directory -------------------------------------------------------
    def _header(self, pos):
        """(header, body position) of the page at ``pos``, parsed once per
        cached chunk buffer (the memo scan/pages.py keeps for it)."""
        memo = self.memo
        parsed = memo.get(pos) if memo is not None else None
        if parsed is not None:
            return parsed
        try:
            parsed = T.decode_struct(self.buf, T.PAGE_HEADER, pos, len(self.buf))
        except FileFormatError as e:
            raise FileFormatError(f"bad page header: {e}") from None
        if memo is not None:
            memo[pos] = parsed
        return parsed

    def _directory(self, directory):
        slots = []
        if directory is not None:          # OffsetIndex: (position in chunk, first row)
            for i, (pos, first) in enumerate(directory):
                stop = directory[i + 1][1] if i + 1 < len(directory) else self.num_rows
                slots.append(_PageSlot(first, stop - first, pos))
            if self._agrees(slots):
                if directory and directory[0][0] > 0:
                    self.dict_pos = 0
                return slots
            slots = []                     # an offset index the pages contradict:
        pos, end, row = 0, len(self.buf), 0  # walk the page headers instead
        while pos < end and row < self.num_rows:
            header, body = self._header(pos)
            ptype = header.get("type")
            csize = header.get("compressed_page_size")
            if ptype is None or csize is None or csize < 0 or body + csize > end:
                raise FileFormatError("bad page header (size or type)")
            if ptype == DICTIONARY_PAGE:
                self.dict_pos = pos
            elif ptype in (DATA_PAGE, DATA_PAGE_V2):
                h = header.get("data_page_header" if ptype == DATA_PAGE else "data_page_header_v2")
                n = (h or {}).get("num_values")
                if n is None or n < 0:
                    raise FileFormatError("data page header lacks num_values")
                slots.append(_PageSlot(row, n, pos))
                row += n
            pos = body + csize
        if row != self.num_rows:
            raise FileFormatError(f"column chunk has {row} values, row group has "
                                  f"{self.num_rows} rows")
        return slots

    def _agrees(self, slots) -> bool:
        """True when every page the offset index names is a data page of
        the row count it claims, inside the chunk: an index that disagrees
        with the pages is not used (the file is read by its headers)."""
        end = len(self.buf)
        for slot in slots:
            if not 0 <= slot.header_pos < end or slot.num_rows <= 0:
                return False
            try:
                header, body = self._header(slot.header_pos)
            except FileFormatError:
                return False
            ptype = header.get("type")
            csize = header.get("compressed_page_size")
            if ptype not in (DATA_PAGE, DATA_PAGE_V2) or csize is None or csize < 0 \
                    or body + csize > end:
                return False
            h = header.get("data_page_header" if ptype == DATA_PAGE else "data_page_header_v2")
            if (h or {}).get("num_values") != slot.num_rows:
                return False
        return True

    # -- pages -------------------------------------------------------------
    def _decompress(self, pos, ordinal):
        header, body_pos = self._header(pos)
        csize = header.get("compressed_page_size", -1)
        usize = header.get("uncompressed_page_size", -1)
        if csize < 0 or usize < 0 or body_pos + csize > len(self.buf):
            raise FileFormatError("page runs past the end of the column chunk", page=ordinal)
        body = self.buf[body_pos:body_pos + csize]
        if self.verify:
            check_crc(header, body, pos, self.memo, ordinal)
        return make_page(header, header.get("type"), body, usize, self.chunk.codec, ordinal,
                         self.buf, body_pos, self.arena)

    def page(self, i):
        """The decompressed data page i: decompressed by one thread, the
        others wait for it (on the state's condition; waits are rare, so
        one condition per chunk costs less than an event per page)."""
        slot = self.slots[i]
        page = slot.page
        if page is not None:
            return page
        with self.loaded:
            while slot.loading:
                self.loaded.wait()
            if slot.page is not None:
                return slot.page
            slot.loading = True
        page = None
        try:
            page = self._decompress(slot.header_pos, i)
            if page is None or page.kind not in (DATA_PAGE, DATA_PAGE_V2):
                raise FileFormatError("expected a data page", page=i)
            if page.num_values != slot.num_rows:
                raise FileFormatError(f"data page has {page.num_values} values, the page "
                                      f"index says {slot.num_rows}", page=i)
            return page
        finally:
            with self.loaded:
                slot.loading = False
                if page is not None and page.kind in (DATA_PAGE, DATA_PAGE_V2) and \
                        page.num_values == slot.num_rows:
                    slot.page = page
                    slot.remaining = slot.num_rows
                    self.nbytes += self._own_bytes(page)
                self.loaded.notify_all()

    def _own_bytes(self, page) -> int:
        arena = self.arena
        return 0 if arena is not None and page.owner is arena.buf else page.data.nbytes

    def size(self) -> int:
        """Bytes this state keeps alive (the compressed chunk is the buffer
        manager's, not counted)."""
        return self.nbytes + (self.arena.used if self.arena is not None else 0)

    def consumed(self, i, rows):
        """``rows`` rows of page i were handed out; drop the page when all were."""
        slot = self.slots[i]
        with self.lock:
            slot.remaining -= rows
            # pages in the string arena stay: their bytes live as long as the
            # arena does, and a later query reuses them decompressed
            if slot.remaining <= 0 and slot.page is not None and self._own_bytes(slot.page):
                self.nbytes -= self._own_bytes(slot.page)
                slot.page = None
                slot.runs = slot.offsets = None

    def dictionary_values(self):
        """(physical values, heap, storage values, storage heap), decoded and
        converted once per chunk."""
        from scan.page_values import VIEW_TYPES, decode_dictionary_page
        from scan.views import compact_heap
        d = self.dictionary
        if d is not None:
            return d
        with self.lock:
            if self.dictionary is not None:
                return self.dictionary
            if self.dict_pos is None:
                raise FileFormatError("dictionary-encoded page without a dictionary page")
            page = self._decompress(self.dict_pos, 0)
            if page is None or page.kind != DICTIONARY_PAGE:
                raise FileFormatError("dictionary-encoded page without a dictionary page")
            col = self.col
            phys, heap = decode_dictionary_page(
                page, None, col.physical_type, col.type_length,
                col.physical_type in VIEW_TYPES)
            values, sheap = to_storage(phys, heap, col)
            if values.ndim == 2:                # string views: not the whole arena as heap
                values, sheap = compact_heap(values, sheap)
            self.dictionary = (phys, heap, values, sheap)
            self.nbytes += self._own_bytes(page) + getattr(values, "nbytes", 0)
            return self.dictionary

    def identity(self):
        """0..len(dictionary)-1 as int32: the fused kernel over it yields codes."""
        ident = getattr(self, "_identity", None)
        if ident is None:
            ident = self._identity = np.arange(len(self.dictionary[2]), dtype=np.int32)
        return ident

    def fused(self, codes: bool):
        """(dictionary for the fused kernel, its fused_form or None): the
        storage values, or the identity when codes are wanted; once per chunk."""
        from scan.encodings.dictionary import fused_form
        key = "_fused_codes" if codes else "_fused_values"
        got = getattr(self, key, None)
        if got is None:
            d = self.identity() if codes else self.dictionary[2]
            got = (d, fused_form(d))
            setattr(self, key, got)
        return got

    def run_directory(self, i, data, pos, count):
        """(value starts, byte positions) of the runs of dictionary page i,
        recorded by the first morsel that asks (others compute their own
        copy rather than wait)."""
        from scan.sparse_offsets import run_directory
        slot = self.slots[i]
        runs = slot.runs
        if runs is None:
            cap = max(count, 1)
            starts = np.empty(cap, np.int64)
            positions = np.empty(cap, np.int64)
            r = run_directory(data, pos + 1, len(data), count, starts, positions)
            runs = (starts[:r].copy(), positions[:r].copy()) if r > 0 else False
            slot.runs = runs
        return runs

    def byte_offsets(self, i, data, pos, count):
        from scan.sparse_offsets import byte_array_offsets
        slot = self.slots[i]
        offs = slot.offsets
        if offs is None:
            out = np.empty(count // OFFSET_EVERY + 1, np.int64)
            k = byte_array_offsets(data, pos, len(data), count, OFFSET_EVERY, out)
            offs = slot.offsets = out[:k]
        return offs


# -- the chunk-state cache ------------------------------------------------
# An LRU bounded by what the states keep alive: decompressed pages,
# dictionaries, string arenas and the compressed chunk each one reads.  A
# state goes when the buffer manager evicts its chunk (forget_buffer), so
# evicted chunks stay pinned no longer than a morsel uses them.
# engine/context.py counts ``chunk_cache`` (the decoded bytes; the chunks are
# the manager's) against memory_limit and shrinks it first.
_STATES: OrderedDict = OrderedDict()
_BY_BUFFER: dict = {}                    # id(compressed chunk) -> key of its state
_STATES_LOCK = threading.Lock()
DEFAULT_CHUNK_CACHE_BUDGET = 1 << 30          # the row groups in flight (issue 5: 1 GiB)
_BUDGET = [DEFAULT_CHUNK_CACHE_BUDGET]


def _drop(key) -> ChunkState:
    st = _STATES.pop(key)
    if _BY_BUFFER.get(id(st.buf)) == key:
        del _BY_BUFFER[id(st.buf)]
    return st


def _evict_to(budget: int, keep=None) -> None:
    """Drop least-recently-used states until they fit (lock held)."""
    total = sum(st.size() + st.buf.nbytes for st in _STATES.values())
    for key in [k for k in _STATES if k != keep]:
        if total <= budget:
            break
        st = _drop(key)
        total -= st.size() + st.buf.nbytes


def set_chunk_cache_budget(nbytes: int) -> None:
    """Bytes the chunk states may keep alive; states past it go now."""
    with _STATES_LOCK:
        _BUDGET[0] = max(int(nbytes), 0)
        _evict_to(_BUDGET[0])


def chunk_cache_budget() -> int:
    return _BUDGET[0]


def chunk_state(key, make) -> ChunkState:
    with _STATES_LOCK:
        st = _STATES.get(key)
        if st is not None:
            _STATES.move_to_end(key)
            return st
    st = make()
    with _STATES_LOCK:
        have = _STATES.get(key)
        if have is not None:
            return have
        _STATES[key] = st
        _BY_BUFFER[id(st.buf)] = key
        _evict_to(_BUDGET[0], keep=key)
    return st


def forget_buffer(buf) -> None:
    """The buffer manager evicted ``buf``: drop the state reading it."""
    with _STATES_LOCK:
        key = _BY_BUFFER.get(id(buf))
        if key is not None and _STATES[key].buf is buf:
            _drop(key)


def clear_chunk_states() -> None:
    with _STATES_LOCK:
        _STATES.clear()
        _BY_BUFFER.clear()


class _ChunkStateCache:
    """The chunk states as memory accounting sees them (engine/context.py)."""

    @property
    def bytes_cached(self) -> int:
        """Decoded bytes kept alive (not the compressed chunks)."""
        with _STATES_LOCK:
            return sum(st.size() for st in _STATES.values())

    @property
    def bytes_bound(self) -> int:
        """Most decoded bytes the states may hold (their budget)."""
        return _BUDGET[0]

    def shrink(self, nbytes: int) -> int:
        """Drop least-recently-used states until ``nbytes`` decoded bytes
        are freed or none is left; the bytes freed."""
        freed = 0
        with _STATES_LOCK:
            for key in list(_STATES):
                if freed >= nbytes:
                    break
                freed += _drop(key).size()
        return freed


chunk_cache = _ChunkStateCache()
add_eviction_listener(forget_buffer)


def read_range(state: ChunkState, start: int, count: int, want_codes=False, rows=None):
    """Rows [start, start+count) of the chunk: (values, nulls or None, heap,
    codes or None, dictionary storage or None), values in engine storage.
    ``rows``: a bool mask over the range; only those rows are returned,
    selected page by page (a page without any is not decoded)."""
    from scan.required_chunk import decode_whole_pages, range_table
    from scan.encodings.dictionary import gather
    stop = start + count
    first = int(np.searchsorted(state.starts, start, "right")) - 1
    parts = []
    any_nulls = False
    all_codes = want_codes
    i = max(first, 0)
    slots = state.slots
    table = range_table(state)
    while i < len(slots) and slots[i].first_row < stop:
        slot = slots[i]
        a = max(start - slot.first_row, 0)
        b = min(stop - slot.first_row, slot.num_rows)
        if b <= a:
            i += 1
            continue
        if table is not None and a == 0 and b == slot.num_rows:
            k = i + 1                       # pages i..k-1 lie wholly in the range
            while k < len(slots) and slots[k].first_row + slots[k].num_rows <= stop:
                k += 1
            lo, hi = slot.first_row - start, slots[k - 1].first_row + slots[k - 1].num_rows - start
            sel = None if rows is None else rows[lo:hi]
            if sel is not None and not sel.any():
                part = ()                   # no row of these pages is wanted
            else:
                part = decode_whole_pages(state, table, i, k, sel, want_codes)
            if part is not None:            # (None: a defect, the page path names it)
                if part:
                    parts.append(part)
                    any_nulls |= part[1] is not None
                    all_codes &= part[3] is not None
                for p in range(i, k):
                    state.consumed(p, slots[p].num_rows)
                i = k
                continue
        sel = None
        if rows is not None:
            sel = rows[slot.first_row + a - start:slot.first_row + b - start]
            if not sel.any():                   # no row of this page is wanted
                state.consumed(i, b - a)
                i += 1
                continue
        page = state.page(i)
        try:
            part = _page_range(state, i, page, a, b, want_codes, sel)
        except FileFormatError as e:
            raise FileFormatError(str(e), page=i) from None
        parts.append(part)
        any_nulls |= part[1] is not None
        all_codes &= part[3] is not None
        state.consumed(i, b - a)
        i += 1
    if not parts:
        return _empty_part(state)
    if all_codes and not any_nulls:     # views gathered from the codes when first read
        codes = parts[0][3] if len(parts) == 1 else np.concatenate([p[3] for p in parts])
        return None, None, parts[0][2], codes, state.dictionary[2]
    # a part of codes alone (values None) gets its views now
    parts = [p if p[0] is not None else (gather(state.dictionary[2], p[3]),) + p[1:]
             for p in parts]
    values, heap = _concat_storage([(p[0], p[2]) for p in parts])
    nulls = None
    if any_nulls:
        nulls = np.concatenate([p[1] if p[1] is not None else np.zeros(len(p[0]), np.uint8)
                                for p in parts])
    return values, nulls, heap, None, None


def _empty_part(state):
    from scan.page_values import empty_values
    v, h = to_storage(empty_values(state.col.physical_type), None, state.col)
    if v.ndim == 2 and h is None:
        h = np.zeros(0, np.uint8)
    return v, None, h, None, None


def _concat_storage(parts):
    from scan.views import concat_views
    if len(parts) == 1:
        return parts[0]
    if parts[0][0].ndim == 2:
        heaps = {id(h) for _, h in parts if h is not None}
        if len(heaps) <= 1:
            heap = next((h for _, h in parts if h is not None), np.zeros(0, np.uint8))
            return np.concatenate([v for v, _ in parts]), heap
        return concat_views(parts)
    return np.concatenate([v for v, _ in parts]), None


def _page_range(state, i, page, a, b, want_codes, sel=None):
    """Rows [a, b) of data page i: (storage values, nulls, heap, codes); of
    those only the rows the bool mask ``sel`` keeps, when given (dictionary
    pages select inside the fused kernel)."""
    from scan.page_values import DICT_ENCODINGS, decode_page_values, empty_values, is_fixed_decimal
    from scan.encodings.dictionary import decode_dictionary_indices, dictionary_values, gather
    from scan.encodings.plain import decode_plain, decode_plain_decimal
    from scan.levels import nulls_from_def_levels, page_def_levels, scatter_dense, values_start
    from scan.column import select_rows
    col = state.col
    ptype, tlen, max_def = col.physical_type, col.type_length, col.max_def_level
    n = page.num_values
    data = page.data
    nulls = None
    n_valid = n
    levels = page_def_levels(page, max_def)
    if levels is not None:
        nulls = nulls_from_def_levels(levels, max_def)
        n_valid = n - int(np.count_nonzero(nulls))
        if n_valid == n:
            nulls = None
    pos = values_start(page, max_def)
    enc = page.encoding
    count = b - a
    codes = None
    if nulls is not None or n_valid == 0:        # decode the whole page, then slice
        a0, cnt = 0, n_valid
    else:
        a0, cnt = a, count
    if cnt == 0:
        values, heap = to_storage(empty_values(ptype), None, col)
    elif enc in DICT_ENCODINGS:
        _, _, dvals, dheap = state.dictionary_values()
        runs = state.run_directory(i, data, pos, n_valid) if a0 else False
        if runs is not False and len(runs[0]):
            starts, positions = runs
            r0 = int(np.searchsorted(starts, a0, "right")) - 1
            r1 = int(np.searchsorted(starts, a0 + cnt, "left"))
            p1 = int(positions[r1]) if r1 < len(positions) else len(data)
            sub = np.empty(p1 - int(positions[r0]) + 1, np.uint8)
            sub[0] = data[pos]
            sub[1:] = data[int(positions[r0]):p1]
            src, spos, skip = sub, 0, a0 - int(starts[r0])
        else:
            src, spos, skip = data, pos, a0
        # fused kernel (indices straight to values, or to codes for strings)
        fdict, form = state.fused(want_codes)
        if sel is not None and nulls is None and not want_codes and form is not None:
            ksel = sel if not skip else np.concatenate([np.zeros(skip, np.bool_), sel])
            fused = dictionary_values(src, spos, skip + cnt, fdict, None, ksel, form)
            if fused is not None:              # selected in the kernel
                sel, skip = None, 0
        else:
            fused = (dictionary_values(src, spos, skip + cnt, fdict, None, None, form)
                     if form is not None else None)
        if fused is None:                      # no fused form, or a defect: checked path
            idx = decode_dictionary_indices(src, spos, len(src), skip + cnt)[skip:]
        elif want_codes:
            idx = fused[skip:]
        else:
            idx = None
            values, heap = fused[skip:], dheap
        if idx is not None:
            codes = idx
            heap = dheap
            # codes the fused kernel checked: views gathered when first read
            # (read_range, ColumnData); the checked path gathers (bounds check)
            values = None if fused is not None and nulls is None else gather(dvals, idx)
    elif enc == "PLAIN" and ptype == "BYTE_ARRAY":
        skip = 0
        start_pos = pos
        if a0:
            offs = state.byte_offsets(i, data, pos, n_valid)
            k = min(a0 // OFFSET_EVERY, len(offs) - 1)
            if k >= 0:
                start_pos, skip = int(offs[k]), a0 - k * OFFSET_EVERY
            else:
                skip = a0
        base = page.base
        v, _ = decode_plain(page.owner, base + start_pos, base + len(data), ptype, skip + cnt, tlen)
        values, heap = to_storage(v[skip:], page.owner, col)
    elif enc == "PLAIN" and (ptype in _FIXED_WIDTH or ptype == "FIXED_LEN_BYTE_ARRAY"):
        w = tlen if ptype == "FIXED_LEN_BYTE_ARRAY" else _FIXED_WIDTH[ptype]
        if is_fixed_decimal(col):               # straight to int64 storage
            values, heap = decode_plain_decimal(data, pos + a0 * w, len(data), cnt, tlen)[0], None
        elif ptype == "FIXED_LEN_BYTE_ARRAY":
            base = page.base
            v, _ = decode_plain(page.owner, base + pos + a0 * w, base + len(data), ptype, cnt, tlen)
            values, heap = to_storage(v, page.owner, col)
        else:
            v, _ = decode_plain(data, pos + a0 * w, len(data), ptype, cnt, tlen)
            values, heap = to_storage(v, None, col)
    else:       # PLAIN booleans and RLE ones need only the values up to the range's end
        need = a0 + cnt if enc in ("PLAIN", "RLE") else n_valid
        v, h = decode_page_values(page, pos, need, ptype, tlen)
        values, heap = to_storage(v[a0:a0 + cnt], h, col)
    if nulls is not None:
        values = scatter_dense(values, nulls)[a:b]
        nulls = nulls[a:b]
        codes = None
    if sel is not None:
        values = None if values is None else select_rows(values, sel)
        nulls = None if nulls is None else nulls[sel]
        codes = None if codes is None else codes[sel]
    if values is not None and values.ndim == 2 and heap is None:
        heap = np.zeros(0, np.uint8)
    return values, nulls, heap, codes
