"""Raw memory moves for numba kernels: unaligned 4/8-byte loads and stores
and memmove between uint8 arrays, as LLVM intrinsics (numba has no unaligned
typed access to byte arrays).  No bounds checks: callers check ranges."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _byte_pointer(context, builder, arr_type, arr, offset):
    a = context.make_array(arr_type)(context, builder, arr)
    return builder.gep(builder.bitcast(a.data, ir.IntType(8).as_pointer()), [offset])


@intrinsic
def copy_bytes(typingctx, dst, dst_off, src, src_off, n):
    """memmove(dst + dst_off, src + src_off, n) on uint8 arrays."""
    sig = types.void(dst, dst_off, src, src_off, n)

    def codegen(context, builder, signature, args):
        d, doff, s, soff, cnt = args
        dp = _byte_pointer(context, builder, signature.args[0], d, doff)
        sp = _byte_pointer(context, builder, signature.args[2], s, soff)
        cgutils.raw_memmove(builder, dp, sp, cnt, 1)
        return context.get_dummy_value()
    return sig, codegen


def _load(bits):
    def load(typingctx, arr, off):
        sig = getattr(types, f"uint{bits}")(arr, off)

        def codegen(context, builder, signature, args):
            p = _byte_pointer(context, builder, signature.args[0], args[0], args[1])
            return builder.load(builder.bitcast(p, ir.IntType(bits).as_pointer()), align=1)
        return sig, codegen
    load.__name__ = load.__qualname__ = f"load{bits // 8}"
    return load


def _store(bits):
    def store(typingctx, arr, off, val):
        sig = types.void(arr, off, getattr(types, f"uint{bits}"))

        def codegen(context, builder, signature, args):
            p = _byte_pointer(context, builder, signature.args[0], args[0], args[1])
            builder.store(args[2], builder.bitcast(p, ir.IntType(bits).as_pointer()), align=1)
            return context.get_dummy_value()
        return sig, codegen
    store.__name__ = store.__qualname__ = f"store{bits // 8}"
    return store


@intrinsic
def load8_be(typingctx, arr, off):
    """The 8 bytes at arr[off] as a big-endian uint64 (one load and a bswap)."""
    sig = types.uint64(arr, off)

    def codegen(context, builder, signature, args):
        p = _byte_pointer(context, builder, signature.args[0], args[0], args[1])
        return builder.bswap(builder.load(builder.bitcast(p, ir.IntType(64).as_pointer()),
                                          align=1))
    return sig, codegen


load1 = intrinsic(_load(8))
load4 = intrinsic(_load(32))
load8 = intrinsic(_load(64))
store4 = intrinsic(_store(32))
store8 = intrinsic(_store(64))
