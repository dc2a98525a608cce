"""Hot numba kernels against numpy doing comparable work, in one run.

    .venv/bin/python bench/kernels.py [--rows 6000000] [--repeat 5]

Every line times one of pqdb's hot kernels on generated data and a numpy
expression over the same data that does the same or strictly less work
(numpy has no grouped min/max or exact 128-bit sums), and prints both and
their ratio.  The ratios are not targets: they make a kernel that suddenly
runs several times slower stand out (a shared @njit helper once made the
grouped sum and min/max kernels ~10x slower, which TPC-H Q1 showed only as
"3x slower somewhere").
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from engine.kernels import aggregates as A
from planner.types import BIGINT
from engine.block import Vector
from engine.kernels.hashing import normalize_keys
from engine.kernels.hashtable import GroupTable
from scan.encodings.dictionary import dictionary_values
from scan.encodings.plain import decode_plain_decimal
from scan.encodings.rle import decode_hybrid


def _best(fn, repeat: int) -> float:
    fn()                                         # compile / warm caches
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _rle_dictionary_page(codes: np.ndarray, bit_width: int) -> np.ndarray:
    """One bit-packed run of ``codes`` (a multiple of 8 values) in the
    RLE/bit-packed hybrid, with the leading bit-width byte."""
    out = bytearray([bit_width]) + _uleb((len(codes) // 8) << 1 | 1)    # ULEB128 run header
    bits = ((codes[:, None] >> np.arange(bit_width)) & 1).astype(np.uint8).reshape(-1)
    out += np.packbits(bits, bitorder="little").tobytes()
    return np.frombuffer(bytes(out), np.uint8)


def _short_runs(rng, n: int, bit_width: int):
    """(hybrid stream, values) of about ``n`` values in short runs -- RLE
    runs of 1-19 values, bit-packed runs of 1-5 groups of 8 -- so that a run
    header (a ULEB128 varint) is read every ~15 values."""
    out, parts = bytearray(), []
    got = 0
    while got < n:
        if rng.random() < 0.7:
            run, v = int(rng.integers(1, 20)), int(rng.integers(0, 1 << bit_width))
            out += _uleb(run << 1) + v.to_bytes((bit_width + 7) // 8, "little")
            parts.append(np.full(run, v, np.int64))
        else:
            parts.append(rng.integers(0, 1 << bit_width, 8 * int(rng.integers(1, 6))))
            out += _rle_dictionary_page(parts[-1], bit_width)[1:].tobytes()
        got += len(parts[-1])
    return np.frombuffer(bytes(out), np.uint8), np.concatenate(parts)


def cases(rows: int):
    rng = np.random.default_rng(7)
    vals = rng.integers(-10**9, 10**9, rows).astype(np.int64)
    nulls = np.zeros(rows, np.bool_)
    gid4 = rng.integers(0, 4, rows).astype(np.int64)
    acc, carry, cnt = np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int64)
    has = np.zeros(4, np.uint8)
    yield ("grouped sum, 4 groups", lambda: A.sum_int_update(gid4, vals, nulls, acc, carry),
           "np.bincount weights", lambda: np.bincount(gid4, weights=vals, minlength=4))
    yield ("grouped sum+count", lambda: A.sum_count_int_update(gid4, vals, nulls, False, acc,
                                                               carry, cnt),
           "np.bincount weights", lambda: np.bincount(gid4, weights=vals, minlength=4))
    yield ("grouped max, 4 groups", lambda: A.minmax_int_update(gid4, vals, nulls, acc, has, True),
           "np.max (ungrouped)", lambda: vals.max())

    width = 7                                    # DECIMAL(15,2) as pyarrow writes it
    raw = (vals[:, None] >> (8 * np.arange(width - 1, -1, -1))).astype(np.uint8).reshape(-1)
    raw = np.ascontiguousarray(raw)
    padded = np.zeros((rows, 8), np.uint8)
    padded[:, 1:] = raw.reshape(rows, width)
    yield ("FLBA(7) decimal -> int64", lambda: decode_plain_decimal(raw, 0, len(raw), rows, width),
           "np '>i8' view + astype", lambda: padded.view(">i8").astype(np.int64))

    n8 = rows - rows % 8
    dictionary = rng.integers(0, 10**12, 4096).astype(np.int64)
    codes = rng.integers(0, 4096, n8).astype(np.int64)
    page = _rle_dictionary_page(codes, 12)
    yield ("dictionary page -> values", lambda: dictionary_values(page, 0, n8, dictionary),
           "np.take (codes decoded)", lambda: np.take(dictionary, codes))

    # short runs: a ULEB128 run header every ~15 values (scan/encodings/varint.py)
    levels_page, levels = _short_runs(rng, rows, 1)
    yield ("hybrid levels, short runs", lambda: decode_hybrid(levels_page, 0, len(levels_page),
                                                               1, len(levels)),
           "np astype int32 (decoded)", lambda: levels.astype(np.int32))
    page, codes = _short_runs(rng, rows, 12)
    page = np.concatenate([np.array([12], np.uint8), page])
    yield ("dictionary page, short runs", lambda: dictionary_values(page, 0, len(codes),
                                                                      dictionary),
           "np.take (codes decoded)", lambda: np.take(dictionary, codes))

    keys = rng.integers(0, 200_000, rows).astype(np.int64)
    kc = normalize_keys([Vector(BIGINT, keys)], rows, null_word=True)

    # Snappy: TPC-H-like pages (a dictionary of decimals, short text) in 64 KiB pages
    import cramjam                               # python-snappy's backend
    from scan.snappy_kernel import snappy_decompress
    text = b" ".join(rng.choice([b"carefully", b"final", b"deposits", b"sleep", b"quickly",
                                 b"furiously", b"ironic", b"requests"], rows // 8))
    for label, data in (("decimals", np.sort(vals[:rows // 4]).tobytes()), ("text", text)):
        pages = [np.frombuffer(bytes(cramjam.snappy.compress_raw(data[i:i + 65536])), np.uint8)
                 for i in range(0, len(data), 65536)]
        sizes = [min(65536, len(data) - i) for i in range(0, len(data), 65536)]
        out = np.empty(65536, np.uint8)

        def ours(pages=pages, sizes=sizes, out=out):
            for pg, n in zip(pages, sizes):
                snappy_decompress(pg, 0, len(pg), out, 0, n)

        def theirs(pages=pages, sizes=sizes, out=out):
            for pg, n in zip(pages, sizes):
                cramjam.snappy.decompress_raw_into(pg, out[:n])
        yield (f"snappy pages, {label}", ours, "cramjam (Rust snap)", theirs)

    def insert():
        GroupTable(kc.kw, (kc.keys.shape[1] - kc.kw) // 2).insert(kc)
    yield ("group-table insert, 200k keys", insert,
           "np.unique inverse", lambda: np.unique(keys, return_inverse=True))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"{args.rows:,} rows, best of {args.repeat}, 1 thread")
    print(f"{'kernel':32s} {'ms':>8s}   {'numpy peer':26s} {'ms':>8s}   kernel/peer")
    for name, fn, peer_name, peer in cases(args.rows):
        t, p = _best(fn, args.repeat), _best(peer, args.repeat)
        print(f"{name:32s} {t * 1e3:8.1f}   {peer_name:26s} {p * 1e3:8.1f}   {t / p:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
