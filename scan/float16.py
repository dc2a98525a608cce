"""FLOAT16: IEEE 754 half floats stored as FIXED_LEN_BYTE_ARRAY(2), little
endian.  pqdb widens them to float32 storage (exact: every half is a float)."""

from __future__ import annotations

import numpy as np


def float16_views_to_float32(views: np.ndarray) -> np.ndarray:
    """(n, 2) string views of 2-byte values -> float32.  The two bytes sit in
    the view's inline prefix (bits 32..47 of word 0); null gaps (zero views)
    become 0.0."""
    bits = ((views[:, 0] >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.uint16)
    return bits.view(np.float16).astype(np.float32)
