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


@functools.lru_cache(maxsize=None)
def tables() -> tuple[dict, dict]:
    """(upper, lower): str.translate tables of every code point that changes."""
    upper, lower = {}, {}
    for cp in range(0x80, _LAST_CASED):
        ch = chr(cp)
        u = ch.upper()
        if len(u) != 1:
            t = ch.title()
            u = t if len(t) == 1 else ch
        if u != ch:
            upper[cp] = ord(u)
        low = ch.lower()
        if len(low) == 1 and low != ch:
            lower[cp] = ord(low)
    upper.update(_SPECIAL_UPPER)
    lower.update(_SPECIAL_LOWER)
    for i in range(0x80):                 # ASCII too, for mixed strings
        c = chr(i)
        if c != c.upper():
            upper[i] = ord(c.upper())
        if c != c.lower():
            lower[i] = ord(c.lower())
    return upper, lower


def to_upper(text: str) -> str:
    return text.upper() if text.isascii() else text.translate(tables()[0])


def to_lower(text: str) -> str:
    return text.lower() if text.isascii() else text.translate(tables()[1])
