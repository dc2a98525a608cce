"""upper() and lower() code point by code point, as DuckDB (utf8proc) does.

Python's str.upper/str.lower apply Unicode's full case mappings: 'ß' becomes
'SS', 'İ' becomes 'i' + U+0307, and a word-final 'Σ' becomes 'ς'.  DuckDB
maps each code point to one code point (Unicode's simple mappings): the
string keeps its length in characters.  The table below is built from what
unicodedata exposes: a code point whose full mapping is one character maps
to it; one whose full uppercase is longer takes its titlecase when that is
one character (the Greek letters with ypogegrammeni: U+1F80 -> U+1F88, their
simple uppercase), else stays as it is; plus utf8proc's two special cases.
tests/engine/test_casemap.py checks every assigned code point against DuckDB.
"""

from __future__ import annotations

import functools

# utf8proc's own choices where Unicode has no single-code-point mapping
_SPECIAL_UPPER = {0x00DF: 0x1E9E}         # ß -> ẞ (DuckDB: upper('straße') = 'STRAẞE')
_SPECIAL_LOWER = {0x0130: 0x0069}         # İ -> i (Unicode's simple lowercase)
_LAST_CASED = 0x20000                     # no code point from here on has a case mapping


def _single_upper(ch: str) -> str:
    u = ch.upper()
    if len(u) == 1:
        return u
    t = ch.title()
    return t if len(t) == 1 else ch


def _single_lower(ch: str) -> str:
    low = ch.lower()
    return low if len(low) == 1 else ch


@functools.lru_cache(maxsize=None)
def tables() -> tuple[dict, dict]:
    """(upper, lower): str.translate tables of every code point that changes.
    Built 256 code points at a time (a block whose mapped text keeps its
    length maps one to one, as no full mapping shortens a character);
    blocks with expansions map character by character."""
    upper, lower = {}, {}
    for start in range(0, _LAST_CASED, 256):
        block = "".join(map(chr, range(start, start + 256)))
        for table, whole, single in ((upper, str.upper, _single_upper),
                                     (lower, str.lower, _single_lower)):
            out = whole(block)
            if len(out) != len(block):
                out = "".join(map(single, block))
            for i, (a, b) in enumerate(zip(block, out)):
                if a != b:
                    table[start + i] = ord(b)
    upper.update(_SPECIAL_UPPER)
    lower.update(_SPECIAL_LOWER)
    return upper, lower


def to_upper(text: str) -> str:
    return text.upper() if text.isascii() else text.translate(tables()[0])


def to_lower(text: str) -> str:
    return text.lower() if text.isascii() else text.translate(tables()[1])
