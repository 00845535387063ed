#!/usr/bin/python3
"""ggml's block types as GGUF files store them: sizes, an exact dequantizer, a simple encoder.

Standard library + numpy only. The C++ twin is kernels/ggml_blocks.{h,cc} (the same values bit
for bit: verify/tests/test_ggml_blocks.cc); tests: tools/tests/test_ggml_quants.py.

- `TYPES`: name -> GgmlType(name, id, block elements, block bytes); `BY_ID`: id -> the same.
  `type_of(t)` accepts a name ("Q4_K") or a ggml id (12); `row_bytes(t, n)`.
- `dequantize(raw, t, n)`: n elements of type t from the bytes raw -> float32 (n,), the value
  ggml's dequantize_row_* gives, bit for bit: every float operation is ggml's, in ggml's order,
  one IEEE float32 rounding each (numpy float32 arrays, no fused multiply-add). Binary16 scales
  widen exactly; a NaN half becomes a quiet NaN with its payload (as F16C's vcvtph2ps does, and
  kernels/format/f16.h's f32_from_f16).
- `quantize(x, t)`: float32 (n,) -> bytes of type t, a simple valid encoder (NOT llama.cpp's
  quantizer, whose search for scales is not needed here): max-abs / min-max scales, every field
  used over its full range (6-bit K-quant scales and mins up to 63, Q5/Q6 high bits, Q3_K
  scales -32..31, Q6_K scales -128..127). Error: at most half a step for the types with a
  minimum (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K; scales rounded up so nothing clips) and Q8_0, at most
  one step for the signed types whose largest-magnitude value takes the most negative level
  (Q4_0, Q5_0, Q3_K, Q6_K: the opposite sign's extreme clips one level short), plus float32
  rounding and the binary16 scales' granularity. Finite input only (ValueError otherwise).
- `random_blocks(t, nblocks, rng)`: random bytes of nblocks blocks whose binary16 scale fields
  are random finite halves (subnormals included): every other bit pattern of every field occurs.
- `write_fixture(path)` (command line: `ggml_quants.py fixture OUT.bin`, run by
  verify/make_fixtures.py): random and encoded blocks of every type with their dequantized
  values, for the C++ test.

Block layouts (bytes, little-endian; QK_K = 256; "f16" = IEEE binary16; element i of a block):

  type  id  elems bytes  fields in order                        value
  F32    0     1     4   f32                                    x
  F16    1     1     2   f16                                    x
  BF16  30     1     2   bf16 (the top half of an f32)          x
  Q4_0   2    32    18   d f16, qs[16]                          (q - 8)*d
  Q4_1   3    32    20   d f16, m f16, qs[16]                   q*d + m
  Q5_0   6    32    22   d f16, qh u32, qs[16]                  (q - 16)*d
  Q5_1   7    32    24   d f16, m f16, qh u32, qs[16]           q*d + m
  Q8_0   8    32    34   d f16, qs[32] int8                     q*d
  Q2_K  10   256    84   scales[16], qs[64], d f16, dmin f16    (d*sc)*q - dmin*m
  Q3_K  11   256   110   hmask[32], qs[64], scales[12], d f16   (d*(sc - 32))*q
  Q4_K  12   256   144   d f16, dmin f16, scales[12], qs[128]   (d*sc)*q - dmin*m
  Q5_K  13   256   176   d f16, dmin f16, scales[12], qh[32], qs[128]   (d*sc)*q - dmin*m
  Q6_K  14   256   210   ql[128], qh[64], scales[16] int8, d f16        (d*sc)*q

  Q4_0/Q4_1/Q5_0/Q5_1: byte qs[j] holds element j (low nibble) and j + 16 (high nibble); bit i
    of qh (u32) is bit 4 of element i's 5-bit q.
  Q2_K: 16 sub-blocks of 16; scales[s] = sc | m << 4 (4 bits each); element i = 128h + 32j +
    16k + l (h < 2, j < 4, k < 2, l < 16) has q = (qs[32h + 16k + l] >> 2j) & 3, sub-block i/16.
  Q3_K: 16 sub-blocks of 16, 6-bit scales: sc[s] for s < 4 = low nibble of scales[s], 4..7 low
    nibble of scales[s], 8..11 high nibble of scales[s - 8], 12..15 high nibble of scales[s - 8],
    i.e. bits 0-3 = (scales[s % 8] >> 4*(s / 8)) & 15, bits 4-5 = (scales[8 + s % 4] >> 2*(s / 4))
    & 3; element i as in Q2_K has q = ((qs[..] >> 2j) & 3) - (hmask[16k + l] bit (4h + j) ? 0 : 4).
  Q4_K/Q5_K: 8 sub-blocks of 32, 6-bit sc and m: for s < 4 sc = scales[s] & 63, m = scales[s + 4]
    & 63; for s >= 4 sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4, m = (scales[s + 4] >>
    4) | (scales[s] >> 6) << 4. Element 64c + l (c < 4, l < 32): low nibble of qs[32c + l],
    sub-block 2c; element 64c + 32 + l: its high nibble, sub-block 2c + 1. Q5_K: bit s of qh[l]
    is bit 4 of the element at l of sub-block s.
  Q6_K: 16 sub-blocks of 16, int8 scales; element 128h + 32g + l (g < 4, l < 32): low 4 bits =
    nibble g / 2 (low for g = 0, 1; high for g = 2, 3) of ql[64h + 32(g % 2) + l], high 2 bits =
    (qh[32h + l] >> 2g) & 3, q = that 6-bit value - 32, sub-block i/16.

Float operation order (ggml-quants.c, dequantize_row_*): Q4_0, Q5_0, Q8_0: float(q) * d;
Q4_1, Q5_1: float(q) * d + m; Q2_K, Q4_K, Q5_K: d1 = d * float(sc); m1 = dmin * float(m);
y = d1 * float(q) - m1; Q3_K: (d * float(sc - 32)) * float(q); Q6_K: (d * float(sc)) * float(q).
Every product is exact in float32 (a binary16 has 11 significant bits, the integers at most 7 + 5
together), so the one rounding is the final + m / - m1; it is done here as its own float32
operation, as ggml does (and a fused multiply-add would give the same value, the product being
exact).
"""
import collections
import struct
import sys

import numpy as np

QK_K = 256

GgmlType = collections.namedtuple("GgmlType", "name id block_elems block_bytes")

TYPES = collections.OrderedDict((t.name, t) for t in (
    GgmlType("F32", 0, 1, 4), GgmlType("F16", 1, 1, 2), GgmlType("Q4_0", 2, 32, 18),
    GgmlType("Q4_1", 3, 32, 20), GgmlType("Q5_0", 6, 32, 22), GgmlType("Q5_1", 7, 32, 24),
    GgmlType("Q8_0", 8, 32, 34), GgmlType("Q2_K", 10, QK_K, 84), GgmlType("Q3_K", 11, QK_K, 110),
    GgmlType("Q4_K", 12, QK_K, 144), GgmlType("Q5_K", 13, QK_K, 176),
    GgmlType("Q6_K", 14, QK_K, 210), GgmlType("BF16", 30, 1, 2)))
BY_ID = {t.id: t for t in TYPES.values()}

# where each block type keeps its binary16 scale fields (byte offsets in the block)
F16_FIELDS = {"Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
              "Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}

_F32 = np.float32


def type_of(t):
    """A GgmlType from a name ("Q4_K", any case) or a ggml type id (12)."""
    if isinstance(t, GgmlType):
        return t
    if isinstance(t, str):
        if t.upper() in TYPES:
            return TYPES[t.upper()]
    elif isinstance(t, (int, np.integer)) and int(t) in BY_ID:
        return BY_ID[int(t)]
    raise ValueError("ggml type %r is not one of %s" % (t, ", ".join(TYPES)))


def row_bytes(t, n):
    """Bytes of n elements of type t (n a multiple of the block size)."""
    t = type_of(t)
    if n % t.block_elems:
        raise ValueError("%d elements of %s: not a multiple of its block size %d"
                         % (n, t.name, t.block_elems))
    return n // t.block_elems * t.block_bytes


# ------------------------------------------------------------------------------- dequantize

def f16_to_f32(h):
    """binary16 bits (uint16 array) -> float32, exact; a NaN becomes quiet, payload kept."""
    h = np.asarray(h, "<u2")
    f = h.view("<f2").astype(_F32)
    nan = (h & 0x7C00) == 0x7C00
    nan &= (h & 0x03FF) != 0
    if nan.any():
        bits = f.view("<u4")
        hb = h[nan].astype(np.uint32)
        bits[nan] = ((hb & 0x8000) << 16) | 0x7FC00000 | ((hb & 0x3FF) << 13)
    return f


def _blocks(raw, t, n):
    t = type_of(t)
    nb_bytes = row_bytes(t, n)
    b = np.frombuffer(raw, np.uint8) if not isinstance(raw, np.ndarray) else raw.reshape(-1)
    if b.dtype != np.uint8:
        b = b.view(np.uint8)
    if b.size < nb_bytes:
        raise ValueError("%d elements of %s need %d bytes, got %d"
                         % (n, t.name, nb_bytes, b.size))
    return b[:nb_bytes].reshape(-1, t.block_bytes)


def _f16_field(b, off):
    """The binary16 at byte off of every block -> float32 (nb, 1)."""
    h = b[:, off].astype(np.uint16) | (b[:, off + 1].astype(np.uint16) << 8)
    return f16_to_f32(h)[:, None]


def _nibbles32(qs):
    """(nb, 16) bytes -> (nb, 32) values: element j is the low nibble of byte j, j + 16 the high."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


def _qh_bits32(qh4):
    """(nb, 4) bytes (a little-endian u32) -> (nb, 32): bit i of it, times 16."""
    bits = np.unpackbits(qh4, axis=1, bitorder="little")
    return bits << 4


def _scale_min_k4(sc12):
    """(nb, 12) bytes of Q4_K/Q5_K packed scales -> (sc, m), each (nb, 8) ints 0..63."""
    s = sc12.astype(np.int32)
    sc = np.empty((s.shape[0], 8), np.int32)
    m = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    m[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def _q3_scales(sc12):
    """(nb, 12) bytes of Q3_K packed scales -> (nb, 16) ints 0..63 (before the - 32)."""
    s = sc12.astype(np.int32)
    out = np.empty((s.shape[0], 16), np.int32)
    for i in range(16):
        low = (s[:, i % 8] >> (4 * (i // 8))) & 0xF
        high = (s[:, 8 + i % 4] >> (2 * (i // 4))) & 3
        out[:, i] = low | (high << 4)
    return out


def _k_order_2bit(qs64):
    """(nb, 64) bytes -> (nb, 256) 2-bit values in Q2_K/Q3_K element order: element 128h + 32j +
    16k + l is (qs[32h + 16k + l] >> 2j) & 3."""
    nb = qs64.shape[0]
    q = qs64.reshape(nb, 2, 1, 32)                     # h, -, (16k + l)
    shifts = np.arange(0, 8, 2, dtype=np.uint8).reshape(1, 1, 4, 1)
    return ((q >> shifts) & 3).reshape(nb, QK_K)       # h, j, 16k + l


def _deq_q2_k(b):
    sc = b[:, 0:16].astype(np.int32)
    q = _k_order_2bit(b[:, 16:80]).astype(_F32)
    d, dmin = _f16_field(b, 80), _f16_field(b, 82)
    dl = d * (sc & 0xF).astype(_F32)                   # (nb, 16)
    ml = dmin * (sc >> 4).astype(_F32)
    y = np.repeat(dl, 16, axis=1) * q
    return y - np.repeat(ml, 16, axis=1)


def _deq_q3_k(b):
    nb = b.shape[0]
    hm = b[:, 0:32]
    q = _k_order_2bit(b[:, 32:96]).astype(np.int32)
    sc = _q3_scales(b[:, 96:108]) - 32
    d = _f16_field(b, 108)
    # the high bit of element 128h + 32j + 16k + l: bit (4h + j) of hmask[16k + l]
    bits = np.unpackbits(hm, axis=1, bitorder="little").reshape(nb, 32, 8)  # [16k + l][bit]
    hb = bits.transpose(0, 2, 1).reshape(nb, 2, 4, 32)  # [h][j][16k + l]
    q = q - np.where(hb.reshape(nb, QK_K) != 0, 0, 4)
    dl = d * sc.astype(_F32)
    return np.repeat(dl, 16, axis=1) * q.astype(_F32)


def _q4k_values(b, qs_off):
    """(nb, 256) 4-bit values of Q4_K/Q5_K: element 64c + l low nibble of qs[32c + l], 64c + 32 +
    l its high nibble."""
    nb = b.shape[0]
    qs = b[:, qs_off:qs_off + 128].reshape(nb, 4, 1, 32)
    return np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(nb, QK_K)


def _deq_q4_k_q5_k(b, five):
    nb = b.shape[0]
    d, dmin = _f16_field(b, 0), _f16_field(b, 2)
    sc, m = _scale_min_k4(b[:, 4:16])
    if five:
        q = _q4k_values(b, 48).astype(np.int32)
        bits = np.unpackbits(b[:, 16:48], axis=1, bitorder="little").reshape(nb, 32, 8)
        q = q + (bits.transpose(0, 2, 1).reshape(nb, QK_K).astype(np.int32) << 4)
    else:
        q = _q4k_values(b, 16)
    d1 = d * sc.astype(_F32)                           # (nb, 8)
    m1 = dmin * m.astype(_F32)
    y = np.repeat(d1, 32, axis=1) * q.astype(_F32)
    return y - np.repeat(m1, 32, axis=1)


def _deq_q6_k(b):
    nb = b.shape[0]
    ql = b[:, 0:128].reshape(nb, 2, 2, 32)             # [h][g % 2][l]
    qh = b[:, 128:192].reshape(nb, 2, 1, 32)           # [h][-][l]
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=2)  # [h][g][l], g = 2*(nibble) + g % 2
    high = (qh >> np.arange(0, 8, 2, dtype=np.uint8).reshape(1, 1, 4, 1)) & 3
    q = (low.astype(np.int32) | (high.astype(np.int32) << 4)).reshape(nb, QK_K) - 32
    sc = b[:, 192:208].view(np.int8).astype(_F32)
    d = _f16_field(b, 208)
    ds = d * sc                                        # (nb, 16): d * sc first, then * q
    return np.repeat(ds, 16, axis=1) * q.astype(_F32)


def dequantize(raw, t, n):
    """The first n elements (a multiple of t's block size) of type t stored in raw (bytes or a
    uint8 array) -> float32 array (n,), ggml's dequantize_row_* values bit for bit."""
    t = type_of(t)
    if t.name == "F32":
        return _blocks(raw, t, n).reshape(-1).view("<f4").astype(_F32)
    if t.name == "F16":
        return f16_to_f32(_blocks(raw, t, n).reshape(-1).view("<u2"))
    if t.name == "BF16":
        u = _blocks(raw, t, n).reshape(-1).view("<u2").astype(np.uint32) << 16
        return u.astype("<u4").view("<f4").astype(_F32)
    b = _blocks(raw, t, n)
    nb = b.shape[0]
    if t.name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        m = _f16_field(b, 2) if t.name in ("Q4_1", "Q5_1") else None
        qs_off = {"Q4_0": 2, "Q4_1": 4, "Q5_0": 6, "Q5_1": 8}[t.name]
        q = _nibbles32(b[:, qs_off:qs_off + 16]).astype(np.int32)
        if t.name in ("Q5_0", "Q5_1"):
            qh_off = qs_off - 4
            q |= _qh_bits32(b[:, qh_off:qh_off + 4]).astype(np.int32)
        if t.name == "Q4_0":
            q -= 8
        elif t.name == "Q5_0":
            q -= 16
        y = q.astype(_F32) * _f16_field(b, 0)
        if m is not None:
            y = y + m
    elif t.name == "Q8_0":
        y = b[:, 2:34].view(np.int8).astype(_F32) * _f16_field(b, 0)
    elif t.name == "Q2_K":
        y = _deq_q2_k(b)
    elif t.name == "Q3_K":
        y = _deq_q3_k(b)
    elif t.name in ("Q4_K", "Q5_K"):
        y = _deq_q4_k_q5_k(b, t.name == "Q5_K")
    elif t.name == "Q6_K":
        y = _deq_q6_k(b)
    else:  # pragma: no cover (TYPES and this function list the same types)
        raise ValueError(t.name)
    assert y.dtype == _F32 and y.shape == (nb, t.block_elems)
    return y.reshape(-1)


# --------------------------------------------------------------------------------- quantize

def _f16_round(v):
    """float64 array -> nearest binary16 values (as float64; inf beyond its range)."""
    with np.errstate(over="ignore"):
        return np.asarray(v, np.float64).astype(np.float16).astype(np.float64)


def _f16_up(v):
    """float64 array (>= 0) -> the least binary16 value >= v (as float64; inf beyond its range)."""
    with np.errstate(over="ignore"):
        h = np.asarray(v, np.float64).astype(np.float16)
    low = h.astype(np.float64) < v
    h[low] = np.nextafter(h[low], np.float16(np.inf))
    return h.astype(np.float64)


def _f16_down(v):
    """float64 array -> the greatest binary16 value <= v (as float64; -inf beyond its range)."""
    with np.errstate(over="ignore"):
        h = np.asarray(v, np.float64).astype(np.float16)
    high = h.astype(np.float64) > v
    h[high] = np.nextafter(h[high], np.float16(-np.inf))
    return h.astype(np.float64)


def _f16_bytes(v):
    """float64 values exactly representable in binary16 -> (nb, 2) uint8."""
    return np.asarray(v, np.float64).astype("<f2").reshape(-1, 1).view(np.uint8)


def _div0(a, b):
    """a / b, 0 where b == 0."""
    out = np.zeros(np.broadcast(a, b).shape)
    np.divide(a, b, out=out, where=b != 0)
    return out


def _signed_max(x):
    """The value of largest magnitude along the last axis (the first such one)."""
    idx = np.argmax(np.abs(x), axis=-1)
    return np.take_along_axis(x, idx[..., None], axis=-1)[..., 0]


def _pack_nibbles32(q):
    """(nb, 32) values 0..15 -> (nb, 16) bytes: byte j = q[j] | q[j + 16] << 4."""
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def _pack_qh32(q5):
    """(nb, 32) values 0..31 -> (nb, 4) bytes: bit i = bit 4 of element i."""
    return np.packbits((q5 >> 4).astype(np.uint8), axis=1, bitorder="little")


def _quant_legacy(x, name):
    """Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 blocks of 32 -> (nb, block bytes) uint8."""
    nb = x.shape[0]
    if name in ("Q4_0", "Q5_0", "Q8_0"):
        if name == "Q8_0":  # symmetric: max |x| -> 127
            d = _f16_up(np.max(np.abs(x), axis=1) / 127)
            q = np.clip(np.rint(_div0(x, d[:, None])), -127, 127).astype(np.int32)
            return np.concatenate([_f16_bytes(d), q.astype(np.int8).view(np.uint8)], axis=1)
        half = 8 if name == "Q4_0" else 16      # the largest-magnitude value -> level 0 (-half)
        d = _f16_round(_signed_max(x) / -half)
        q = np.clip(np.rint(_div0(x, d[:, None])) + half, 0, 2 * half - 1).astype(np.int32)
        q[d == 0] = half
        parts = [_f16_bytes(d)]
    else:  # Q4_1, Q5_1: min-max
        top = 15 if name == "Q4_1" else 31
        m = _f16_down(np.min(x, axis=1))
        d = _f16_up((np.max(x, axis=1) - m) / top)
        q = np.clip(np.rint(_div0(x - m[:, None], d[:, None])), 0, top).astype(np.int32)
        parts = [_f16_bytes(d), _f16_bytes(m)]
    if name in ("Q5_0", "Q5_1"):
        parts.append(_pack_qh32(q))
    parts.append(_pack_nibbles32(q & 0xF))
    out = np.concatenate(parts, axis=1)
    assert out.shape == (nb, TYPES[name].block_bytes)
    return out


def _min_scales(x, nsub, top, stop):
    """Scale and minimum of a K-quant with a minimum, rounded up so nothing clips: x (nb, 256) in
    nsub sub-blocks; q levels 0..top; 6-bit (stop = 63) or 4-bit (stop = 15) sc and m.
    -> (d, dmin (nb,), sc, m (nb, nsub) ints, q (nb, 256) ints)."""
    nb = x.shape[0]
    xs = x.reshape(nb, nsub, -1)
    lo = np.minimum(np.min(xs, axis=2), 0.0)
    mins = -lo                                          # >= 0: y = step*q - dmin*m
    dmin = _f16_up(np.max(mins, axis=1) / stop)
    m = np.minimum(np.ceil(_div0(mins, dmin[:, None])), stop)
    off = dmin[:, None] * m                             # >= mins
    need = (np.max(xs, axis=2) + off) / top             # the step that reaches the top
    d = _f16_up(np.max(need, axis=1) / stop)
    sc = np.minimum(np.ceil(_div0(need, d[:, None])), stop)
    step = d[:, None] * sc
    q = np.rint(_div0(xs + off[:, :, None], step[:, :, None]))
    q = np.clip(q, 0, top).astype(np.int32).reshape(nb, QK_K)
    return d, dmin, sc.astype(np.int32), m.astype(np.int32), q


def _pack_scale_min_k4(sc, m):
    """(nb, 8) 6-bit sc and m -> (nb, 12) bytes (the inverse of _scale_min_k4)."""
    out = np.empty((sc.shape[0], 12), np.int32)
    out[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0xF) | ((m[:, 4:8] & 0xF) << 4)
    return out.astype(np.uint8)


def _pack_k_order_2bit(q2):
    """(nb, 256) values 0..3 in Q2_K/Q3_K element order -> (nb, 64) bytes."""
    nb = q2.shape[0]
    q = q2.reshape(nb, 2, 4, 32).astype(np.uint8)       # h, j, 16k + l
    shifts = np.arange(0, 8, 2, dtype=np.uint8).reshape(1, 1, 4, 1)
    return np.bitwise_or.reduce(q << shifts, axis=2).reshape(nb, 64)


def _quant_q2_k(x):
    d, dmin, sc, m, q = _min_scales(x, 16, 3, 15)
    scales = (sc | (m << 4)).astype(np.uint8)
    return np.concatenate([scales, _pack_k_order_2bit(q), _f16_bytes(d), _f16_bytes(dmin)], axis=1)


def _signed_scales(x, nsub, half, smax):
    """Scales of a signed K-quant (sub-block scales sc in -smax - 1 .. smax): each sub-block's
    scale s puts its largest-magnitude value at level -half; the super-block scale d (binary16,
    rounded up) makes -s / d <= smax + 1 and s / d <= smax, so sc = sign(s) * ceil(|s| / d) never
    clips and every step d * |sc| >= |s|. -> (d (nb,), sc (nb, nsub) ints)."""
    nb = x.shape[0]
    s = _signed_max(x.reshape(nb, nsub, -1)) / -half
    need = np.maximum(np.max(np.maximum(-s, 0), axis=1) / (smax + 1),
                      np.max(np.maximum(s, 0), axis=1) / smax)
    d = _f16_up(need)
    sc = np.sign(s) * np.ceil(_div0(np.abs(s), d[:, None]))
    return d, np.clip(sc, -smax - 1, smax).astype(np.int32)


def _quant_q3_k(x):
    nb = x.shape[0]
    d, sc = _signed_scales(x, 16, 4, 31)
    step = d[:, None] * sc
    q = np.rint(_div0(x.reshape(nb, 16, 16), step[:, :, None]))
    q = np.clip(q, -4, 3).astype(np.int32).reshape(nb, QK_K)
    u = q + 4                                               # 0..7: bit 2 is the hmask bit
    # hmask[16k + l] bit (4h + j) for element 128h + 32j + 16k + l
    hb = (u >> 2).reshape(nb, 2, 4, 32).reshape(nb, 8, 32).transpose(0, 2, 1).astype(np.uint8)
    hmask = np.packbits(hb, axis=2, bitorder="little").reshape(nb, 32)
    six = (sc + 32).astype(np.int32)                         # 0..63
    sb = np.zeros((nb, 12), np.int32)
    for i in range(16):
        sb[:, i % 8] |= (six[:, i] & 0xF) << (4 * (i // 8))
        sb[:, 8 + i % 4] |= (six[:, i] >> 4) << (2 * (i // 4))
    return np.concatenate([hmask, _pack_k_order_2bit(u & 3), sb.astype(np.uint8), _f16_bytes(d)],
                          axis=1)


def _quant_q4_k_q5_k(x, five):
    nb = x.shape[0]
    d, dmin, sc, m, q = _min_scales(x, 8, 31 if five else 15, 63)
    low = (q & 0xF).reshape(nb, 4, 2, 32).astype(np.uint8)  # [c][nibble][l]
    qs = (low[:, :, 0, :] | (low[:, :, 1, :] << 4)).reshape(nb, 128)
    parts = [_f16_bytes(d), _f16_bytes(dmin), _pack_scale_min_k4(sc, m)]
    if five:  # bit s of qh[l]: bit 4 of the element at l of sub-block s
        hb = (q >> 4).reshape(nb, 8, 32).transpose(0, 2, 1).astype(np.uint8)
        parts.append(np.packbits(hb, axis=2, bitorder="little").reshape(nb, 32))
    parts.append(qs)
    return np.concatenate(parts, axis=1)


def _quant_q6_k(x):
    nb = x.shape[0]
    d, sc = _signed_scales(x, 16, 32, 127)
    step = d[:, None] * sc
    q = np.rint(_div0(x.reshape(nb, 16, 16), step[:, :, None]))
    u = (np.clip(q, -32, 31) + 32).astype(np.int32).reshape(nb, 2, 4, 32)  # [h][g][l]
    low = (u & 0xF).astype(np.uint8)
    ql = np.empty((nb, 2, 2, 32), np.uint8)               # [h][g % 2][l]
    ql[:, :, 0] = low[:, :, 0] | (low[:, :, 2] << 4)
    ql[:, :, 1] = low[:, :, 1] | (low[:, :, 3] << 4)
    high = (u >> 4).astype(np.uint8)
    qh = high[:, :, 0] | (high[:, :, 1] << 2) | (high[:, :, 2] << 4) | (high[:, :, 3] << 6)
    return np.concatenate([ql.reshape(nb, 128), qh.reshape(nb, 64),
                           sc.astype(np.int8).view(np.uint8), _f16_bytes(d)], axis=1)


def quantize(x, t):
    """float32 values (any shape; the count a multiple of t's block size, finite) -> bytes of
    type t, blocks in order (see the module doc: a simple valid encoder, not llama.cpp's)."""
    t = type_of(t)
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    if t.name == "F32":
        return x.astype("<f4").tobytes()
    if t.name == "F16":
        return x.astype("<f2").tobytes()
    if t.name == "BF16":
        u = x.view("<u4").astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()
    if x.size % t.block_elems:
        raise ValueError("%d values cannot be %s: not a multiple of its block size %d"
                         % (x.size, t.name, t.block_elems))
    if not np.all(np.isfinite(x)):
        raise ValueError("%s: the values to quantize must be finite" % t.name)
    if x.size == 0:
        return b""
    xb = x.astype(np.float64).reshape(-1, t.block_elems)
    if t.block_elems == 32:
        out = _quant_legacy(xb, t.name)
    elif t.name == "Q2_K":
        out = _quant_q2_k(xb)
    elif t.name == "Q3_K":
        out = _quant_q3_k(xb)
    elif t.name in ("Q4_K", "Q5_K"):
        out = _quant_q4_k_q5_k(xb, t.name == "Q5_K")
    else:
        out = _quant_q6_k(xb)
    out = np.ascontiguousarray(out, np.uint8)
    assert out.shape == (xb.shape[0], t.block_bytes), (t.name, out.shape)
    for off in F16_FIELDS[t.name]:
        h = out[:, off:off + 2].copy().view("<f2")
        if not np.all(np.isfinite(h)):
            raise ValueError("%s: values too large for its binary16 scales" % t.name)
    return out.tobytes()


# ---------------------------------------------------------------------------- random blocks

def random_f16_bits(rng, n):
    """n random finite binary16 bit patterns (uint16): every sign, exponent 0..30, mantissa."""
    h = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
    exp = (h >> 10) & 0x1F
    bad = exp == 31
    h[bad] = h[bad] & ~np.uint16(0x4000)                 # exponent 31 -> 15: finite
    return h


def random_blocks(t, nblocks, rng):
    """nblocks random blocks of type t as bytes: uniformly random bytes, the binary16 scale
    fields replaced by random finite halves (F16/BF16/F32 elements: every bit pattern)."""
    t = type_of(t)
    b = rng.integers(0, 256, (nblocks, t.block_bytes), dtype=np.int32).astype(np.uint8)
    for off in F16_FIELDS.get(t.name, ()):
        h = random_f16_bits(rng, nblocks)
        b[:, off] = h & 0xFF
        b[:, off + 1] = h >> 8
    return b.tobytes()


# ------------------------------------------------------------------- the C++ test's fixture

FIXTURE_MAGIC = b"GGBT"
FIXTURE_VERSION = 1


def fixture_cases(seed=20261203):
    """[(GgmlType, raw bytes, n, expected float32 (n,))] for the C++ test: per type, random
    blocks (random_blocks) and, for the block types, this module's encoding of random values."""
    rng = np.random.default_rng(seed)
    cases = []
    for t in TYPES.values():
        n = 64 * QK_K  # 64 K-quant blocks, 512 blocks of 32, 16384 floats
        raw = random_blocks(t, n // t.block_elems, rng)
        cases.append((t, raw, n))
        if t.block_elems > 1:
            n = 8 * QK_K
            scale = np.exp(rng.uniform(-8, 6, n // t.block_elems)).repeat(t.block_elems)
            cases.append((t, quantize(rng.standard_normal(n) * scale, t), n))
    return [(t, raw, n, dequantize(raw, t, n)) for t, raw, n in cases]


def write_fixture(path, seed=20261203):
    """The fixture verify/tests/test_ggml_blocks.cc reads (little-endian): "GGBT", u32 version 1,
    u32 case count; per case u32 ggml type id, u32 block elements, u32 block bytes, u32 n
    elements, then the row_bytes(type, n) bytes of blocks and the n float32 dequantized values."""
    cases = fixture_cases(seed)
    out = [FIXTURE_MAGIC, struct.pack("<II", FIXTURE_VERSION, len(cases))]
    for t, raw, n, y in cases:
        out.append(struct.pack("<IIII", t.id, t.block_elems, t.block_bytes, n))
        out.append(raw)
        out.append(y.astype("<f4").tobytes())
    with open(path, "wb") as f:
        f.write(b"".join(out))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "fixture":
        sys.exit("usage: ggml_quants.py fixture OUT.bin   (the C++ test's fixture: random and "
                 "encoded blocks of every type with their dequantized values)")
    write_fixture(argv[1])


if __name__ == "__main__":
    main()
