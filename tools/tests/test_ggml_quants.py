#!/usr/bin/python3
"""Tests of tools/ggml_quants.py (ggml's block types: sizes, exact dequantization, a simple
encoder, random blocks) and of tools/gguf.py's writer for the types it adds (Q4_1, Q5_0, Q5_1,
Q2_K ... Q6_K).

Run from the repository root:  /usr/bin/python3 -m unittest discover -s tools/tests -v

Independence: the block sizes are summed here from the field lists of the layouts; the
hand-written blocks (`HandBlockTests`) are built byte by byte with struct and their values
worked out by hand from the format (the arithmetic is in each test's comments), not through
ggml_quants; GGUF files are parsed with test_import's own parser. The C++ twin
(kernels/ggml_blocks.cc) is compared with this dequantizer bit for bit on random blocks of every
type by verify/tests/test_ggml_blocks.cc.

Outside reference (by hand, not in CI; nothing of llama.cpp is committed): this dequantizer was
compared bit for bit with llama.cpp's own ggml/src/ggml-quants.c (snapshot c392e509, 2025-02-20)
compiled alone into a small C driver (dequantize_row_* for every type, F16 through
GGML_COMPUTE_FP16_TO_FP32, BF16 through GGML_BF16_TO_FP32; quantize_row_*_ref for the block
types): random blocks (random_blocks: 1M values per block type), blocks from ggml's own
quantize_row_*_ref and blocks from this module's encoder all gave identical float32 bits, with
the driver built both -O2 -ffp-contract=off and -O2 -march=native (FMA contraction on). And a
file written by write_gguf (Q4_K matrices with Q6_K, Q5_K, Q3_K, Q2_K, Q5_0, Q5_1, Q4_1, BF16 and
F32 tensors) was read by the same snapshot's gguf-py (GGUFReader: every tensor's name, type and
shape) and gguf-py's NumPy dequantizer agreed with this one bit for bit on every tensor.
"""
import sys

sys.dont_write_bytecode = True

import os
import shutil
import struct
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import ggml_quants as gq  # noqa: E402
import checkpoint  # noqa: E402
import gguf  # noqa: E402
import gen_random  # noqa: E402
import mlb  # noqa: E402
from test_import import parse_gguf  # noqa: E402

F16 = lambda v: struct.pack("<e", v)  # noqa: E731  (exact for the values used here)

# (name, ggml id, elements, [field byte counts]) from the published layouts
LAYOUTS = [("F32", 0, 1, [4]), ("F16", 1, 1, [2]), ("BF16", 30, 1, [2]),
           ("Q4_0", 2, 32, [2, 16]), ("Q4_1", 3, 32, [2, 2, 16]), ("Q5_0", 6, 32, [2, 4, 16]),
           ("Q5_1", 7, 32, [2, 2, 4, 16]), ("Q8_0", 8, 32, [2, 32]),
           ("Q2_K", 10, 256, [16, 64, 2, 2]), ("Q3_K", 11, 256, [32, 64, 12, 2]),
           ("Q4_K", 12, 256, [2, 2, 12, 128]), ("Q5_K", 13, 256, [2, 2, 12, 32, 128]),
           ("Q6_K", 14, 256, [128, 64, 16, 2])]


class LayoutTests(unittest.TestCase):
    def test_table(self):
        self.assertEqual(sorted(gq.TYPES), sorted(n for n, _, _, _ in LAYOUTS))
        for name, tid, elems, fields in LAYOUTS:
            t = gq.TYPES[name]
            self.assertEqual((t.id, t.block_elems, t.block_bytes), (tid, elems, sum(fields)), name)
            self.assertIs(gq.type_of(tid), t)
            self.assertIs(gq.type_of(name.lower()), t)
            self.assertEqual(gq.row_bytes(name, 4 * elems), 4 * sum(fields))
            self.assertEqual(len(gq.random_blocks(name, 3, np.random.default_rng(0))), 3 * sum(fields))
        for bad in ("Q8_1", "IQ4_NL", 4, 9, 15, 39):
            self.assertRaises(ValueError, gq.type_of, bad)
        self.assertRaises(ValueError, gq.row_bytes, "Q4_K", 128)
        self.assertRaises(ValueError, gq.dequantize, bytes(143), "Q4_K", 256)  # short input


class HandBlockTests(unittest.TestCase):
    """One block per type, written byte by byte, values computed by hand."""

    def check(self, name, block, expected):
        got = gq.dequantize(block, name, len(expected))
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_array_equal(got, np.asarray(expected, np.float32), err_msg=name)

    def test_floats(self):
        self.check("F32", struct.pack("<3f", 1.5, -0.0, 3e38), [1.5, -0.0, 3e38])
        # binary16: 0x3C00 = 1, 0xC000 = -2, 0x0001 = 2^-24 (subnormal), 0x7BFF = 65504
        self.check("F16", struct.pack("<4H", 0x3C00, 0xC000, 0x0001, 0x7BFF),
                   [1.0, -2.0, 2.0 ** -24, 65504.0])
        # bfloat16: 0x3F80 = 1, 0xC0A0 = -5, 0x0001 -> f32 bits 0x00010000 (a subnormal)
        self.check("BF16", struct.pack("<3H", 0x3F80, 0xC0A0, 0x0001),
                   [1.0, -5.0, np.frombuffer(struct.pack("<I", 0x10000), "<f4")[0]])
        # a NaN half widens to a quiet NaN with its payload (as vcvtph2ps does)
        got = gq.dequantize(struct.pack("<2H", 0x7C01, 0xFE00), "F16", 2).view("<u4")
        self.assertEqual([hex(v) for v in got], ["0x7fc02000", "0xffc00000"])

    def test_q4_0(self):
        # d = 0.5; qs[0] = 0x1F: element 0 = (15 - 8) * 0.5 = 3.5, element 16 = (1 - 8) * 0.5 =
        # -3.5; every other byte 0x88: (8 - 8) * 0.5 = 0
        y = np.zeros(32)
        y[0], y[16] = 3.5, -3.5
        self.check("Q4_0", F16(0.5) + bytes([0x1F]) + bytes([0x88]) * 15, y)

    def test_q4_1(self):
        # d = 0.25, m = -1; qs[3] = 0xA2: element 3 = 2 * 0.25 - 1 = -0.5, element 19 =
        # 10 * 0.25 - 1 = 1.5; the rest q = 0: -1
        y = np.full(32, -1.0)
        y[3], y[19] = -0.5, 1.5
        qs = bytearray(16)
        qs[3] = 0xA2
        self.check("Q4_1", F16(0.25) + F16(-1.0) + bytes(qs), y)

    def test_q5_0(self):
        # d = 1; qh = bits 0 and 17; qs[0] = 0x0F, qs[1] = 0xF0: element 0 = (15 | 16) - 16 = 15,
        # element 16 = 0 - 16, element 1 = 0 - 16, element 17 = (15 | 16) - 16 = 15; rest -16
        y = np.full(32, -16.0)
        y[0], y[17] = 15, 15
        qs = bytearray(16)
        qs[0], qs[1] = 0x0F, 0xF0
        self.check("Q5_0", F16(1.0) + struct.pack("<I", 1 | 1 << 17) + bytes(qs), y)

    def test_q5_1(self):
        # d = 0.5, m = 2; qh = bit 31; qs[15] = 0x31: element 15 = 1 * 0.5 + 2 = 2.5, element 31 =
        # (3 | 16) * 0.5 + 2 = 11.5; rest 2
        y = np.full(32, 2.0)
        y[15], y[31] = 2.5, 11.5
        qs = bytearray(16)
        qs[15] = 0x31
        self.check("Q5_1", F16(0.5) + F16(2.0) + struct.pack("<I", 1 << 31) + bytes(qs), y)

    def test_q8_0(self):
        # d = 0.125; q[0] = -128 -> -16, q[31] = 127 -> 15.875, q[5] = -1 -> -0.125
        q = np.zeros(32, np.int8)
        q[0], q[31], q[5] = -128, 127, -1
        self.check("Q8_0", F16(0.125) + q.tobytes(), q.astype(np.float64) * 0.125)

    def test_q2_k(self):
        # d = 1, dmin = 0.5; scales[s] = 0x21 (sc 1, m 2: y = q - 1) but scales[15] = 0xF3 (sc 3,
        # m 15: y = 3q - 7.5). qs[0] = 0xE4 = 3,2,1,0 from the top: element 0 (shift 0) q 0 -> -1,
        # element 32 (shift 2) q 1 -> 0, element 64 (shift 4) q 2 -> 1, element 96 (shift 6)
        # q 3 -> 2. qs[63] = 0xC0: element 128 + 96 + 16 + 15 = 255 (shift 6) q 3 -> 9 - 7.5 = 1.5;
        # the rest q 0: -1, and -7.5 in sub-block 15 (elements 240..255)
        y = np.full(256, -1.0)
        y[240:] = -7.5
        y[0], y[32], y[64], y[96], y[255] = -1, 0, 1, 2, 1.5
        scales = bytearray([0x21] * 16)
        scales[15] = 0xF3
        qs = bytearray(64)
        qs[0], qs[63] = 0xE4, 0xC0
        self.check("Q2_K", bytes(scales) + bytes(qs) + F16(1.0) + F16(0.5), y)

    def test_q3_k(self):
        # d = 2. 6-bit scales (value - 32): all 32 (0) but sub-block 0 = 33 (+1) and 15 = 0 (-32):
        # low nibbles 0 except sub-block 0's (byte 0 = 1); high 2 bits 2 = 0b10 everywhere
        # (bytes 8..11 = 0xAA) except sub-block 15's (byte 11 bits 6-7 -> 0x2A).
        # hmask all 0xFF (no - 4) but hmask[1] bit 0 (element 1) and hmask[31] bit 7 (element 255).
        # element 0: qs[0] = 3 -> q 3, y = 2 * 1 * 3 = 6; element 1: qs[1] = 1, bit clear ->
        # q = 1 - 4 = -3, y = -6; element 255 (h 1, j 3, k 1, l 15): (qs[63] >> 6) = 2, bit clear
        # -> q = -2, y = (2 * -32) * -2 = 128; the rest of sub-block 0 and 15 q 0, others scale 0
        y = np.zeros(256)
        y[0], y[1], y[255] = 6, -6, 128
        hmask = bytearray([0xFF] * 32)
        hmask[1], hmask[31] = 0xFE, 0x7F
        qs = bytearray(64)
        qs[0], qs[1], qs[63] = 3, 1, 0x80
        scales = bytes([1, 0, 0, 0, 0, 0, 0, 0, 0xAA, 0xAA, 0xAA, 0x2A])
        self.check("Q3_K", bytes(hmask) + bytes(qs) + scales + F16(2.0), y)

    K4_SCALES = bytes([1, 0, 0, 0xC0, 2, 0, 0, 0x40, 0, 0, 0, 0xFF])
    # sub-block 0: sc 1 (byte 0), m 2 (byte 4); sub-block 7: sc = (byte 11 & 15) | (byte 3 >> 6)
    # << 4 = 15 | 48 = 63, m = (byte 11 >> 4) | (byte 7 >> 6) << 4 = 15 | 16 = 31; sub-block 3:
    # byte 3 & 63 = 0, byte 7 & 63 = 0; every other sc and m 0

    def test_q4_k(self):
        # d = 1, dmin = 0.5. qs[0] = 0x0F: element 0 (sub-block 0) = 1 * 15 - 0.5 * 2 = 14, its
        # high nibble (element 32, sub-block 1: sc 0, m 0) 0; qs[127] = 0xF0: element 255
        # (high nibble, sub-block 7) = 63 * 15 - 0.5 * 31 = 929.5; the rest of sub-block 0 (q 0)
        # -1, of sub-block 7 -15.5, others 0
        y = np.zeros(256)
        y[1:32] = -1
        y[224:255] = -15.5
        y[0], y[255] = 14, 929.5
        qs = bytearray(128)
        qs[0], qs[127] = 0x0F, 0xF0
        self.check("Q4_K", F16(1.0) + F16(0.5) + self.K4_SCALES + bytes(qs), y)

    def test_q5_k(self):
        # d = 0.25, dmin = 1, the scales above; qh[0] = 1 (bit 0: sub-block 0, l 0), qh[31] =
        # 0x80 (bit 7: sub-block 7, l 31). element 0 = (0.25 * 1) * (15 + 16) - 1 * 2 = 5.75;
        # element 255 = (0.25 * 63) * (15 + 16) - 31 = 457.25; the rest of sub-block 0 -2, of
        # sub-block 7 -31, others 0
        y = np.zeros(256)
        y[1:32] = -2
        y[224:255] = -31
        y[0], y[255] = 5.75, 457.25
        qh = bytearray(32)
        qh[0], qh[31] = 0x01, 0x80
        qs = bytearray(128)
        qs[0], qs[127] = 0x0F, 0xF0
        self.check("Q5_K", F16(0.25) + F16(1.0) + self.K4_SCALES + bytes(qh) + bytes(qs), y)

    def test_q6_k(self):
        # d = 0.5; int8 scales: sc[0] = -3, sc[15] = 127, others 0. element 0: low 4 bits ql[0] &
        # 15 = 5, high 2 bits qh[0] & 3 = 3 -> 53 - 32 = 21, y = (0.5 * -3) * 21 = -31.5; the rest
        # of sub-block 0 q = -32: (0.5 * -3) * -32 = 48. element 255 (h 1, g 3, l 31): ql[127] >> 4
        # = 15, (qh[63] >> 6) & 3 = 3 -> 31, y = (0.5 * 127) * 31 = 1968.5; the rest of sub-block
        # 15 (240..254): 63.5 * -32 = -2032; others scale 0
        y = np.zeros(256)
        y[1:16] = 48
        y[240:255] = -2032
        y[0], y[255] = -31.5, 1968.5
        ql = bytearray(128)
        ql[0], ql[127] = 0x05, 0xF0
        qh = bytearray(64)
        qh[0], qh[63] = 0x03, 0xC0
        sc = np.zeros(16, np.int8)
        sc[0], sc[15] = -3, 127
        self.check("Q6_K", bytes(ql) + bytes(qh) + sc.tobytes() + F16(0.5), y)

    def test_many_blocks_in_order(self):
        # two Q4_0 blocks: the second's values follow the first's
        b = F16(1.0) + bytes([0x99]) * 16 + F16(2.0) + bytes([0x77]) * 16
        self.check("Q4_0", b, [1.0] * 32 + [-2.0] * 32)
        self.assertEqual(len(gq.dequantize(b, "Q4_0", 32)), 32)  # n elements, not all of raw


def error_bound(name, x):
    """The encoder's documented error bound per block for values x (nb, block elements), from the
    values alone: half a step of the block's range for types with a minimum (plus the slack of
    the 6-bit / 4-bit scale and min), one step of the largest magnitude for the signed ones; plus
    float32 rounding and the binary16 scales' absolute granularity (2^-24, scaled by the levels
    and the sub-block scale's range: it matters only for tiny values)."""
    x = x.astype(np.float64)
    amax = np.max(np.abs(x), axis=1)
    rng_ = np.max(x, axis=1) - np.minimum(np.min(x, axis=1), 0)
    levels = {"Q4_0": 8, "Q4_1": 15, "Q5_0": 16, "Q5_1": 31, "Q8_0": 127, "Q2_K": 3 * 15,
              "Q3_K": 4 * 32, "Q4_K": 15 * 63, "Q5_K": 31 * 63, "Q6_K": 32 * 127}[name]
    fp32 = 2.0 ** -22 * (amax + rng_) + 2.0 ** -24 * levels
    if name in ("Q4_1", "Q5_1"):      # m rounded down, d up to binary16
        top = 15 if name == "Q4_1" else 31
        b = 0.5 * (np.max(x, axis=1) - np.min(x, axis=1)) / top * (1 + 2.0 ** -9)
    elif name in ("Q4_K", "Q5_K", "Q2_K"):
        top = {"Q4_K": 15, "Q5_K": 31, "Q2_K": 3}[name]
        smax = 15 if name == "Q2_K" else 63
        b = 0.5 * rng_ / top * (1 + 1.0 / smax) ** 2 * (1 + 2.0 ** -9)
    elif name == "Q8_0":
        b = 0.5 * amax / 127 * (1 + 2.0 ** -9)
    else:                             # one step: the opposite sign's extreme clips one level short
        half = {"Q4_0": 8, "Q5_0": 16, "Q3_K": 4, "Q6_K": 32}[name]
        smax = {"Q3_K": 32, "Q6_K": 127}.get(name)
        b = amax / half * (1 + (1.0 / smax if smax else 0)) * (1 + 2.0 ** -9)
    return b + fp32


BLOCK_TYPES = [n for n, t in gq.TYPES.items() if t.block_elems > 1]


class RoundTripTests(unittest.TestCase):
    def inputs(self, t, rng):
        n = 16 * t.block_elems
        scale = np.exp(rng.uniform(-10, 8, 16)).repeat(t.block_elems)
        yield "normal", rng.standard_normal(n) * scale
        yield "positive", np.abs(rng.standard_normal(n)) * scale + 3 * scale
        yield "negative", -np.abs(rng.standard_normal(n)) * scale
        yield "uniform", rng.uniform(-1, 1, n)
        yield "zeros", np.zeros(n)
        yield "constant", np.full(n, 0.75)
        yield "one spike", np.where(np.arange(n) % t.block_elems == 7, 100.0, 0.0)
        yield "tiny", rng.standard_normal(n) * 1e-6

    def test_within_bound(self):
        rng = np.random.default_rng(5)
        for name in BLOCK_TYPES:
            t = gq.TYPES[name]
            for what, x in self.inputs(t, rng):
                x = x.astype(np.float32)
                raw = gq.quantize(x, name)
                self.assertEqual(len(raw), gq.row_bytes(name, x.size))
                y = gq.dequantize(raw, name, x.size)
                err = np.max(np.abs(y.astype(np.float64) - x).reshape(-1, t.block_elems), axis=1)
                bound = error_bound(name, x.reshape(-1, t.block_elems))
                worst = int(np.argmax(err - bound))
                self.assertTrue(np.all(err <= bound), "%s %s: block %d error %g > bound %g"
                                % (name, what, worst, err[worst], bound[worst]))
                if what == "zeros":
                    np.testing.assert_array_equal(y, 0)

    def test_floats_round_trip(self):
        x = np.array([1.0, -2.5, 65504.0, 2.0 ** -24, 0.0], np.float32)
        np.testing.assert_array_equal(gq.dequantize(gq.quantize(x, "F16"), "F16", 5), x)
        np.testing.assert_array_equal(gq.dequantize(gq.quantize(x, "F32"), "F32", 5), x)
        b = np.array([1.0, -2.5, 3.0, 0.0], np.float32)
        np.testing.assert_array_equal(gq.dequantize(gq.quantize(b, "BF16"), "BF16", 4), b)
        # BF16 rounds to nearest even: 1 + 2^-8 is a tie -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6
        r = gq.dequantize(gq.quantize(np.float32([1 + 2 ** -8, 1 + 3 * 2 ** -8]), "BF16"), "BF16", 2)
        np.testing.assert_array_equal(r, [1.0, 1 + 2 ** -6])

    def test_refusals(self):
        self.assertRaises(ValueError, gq.quantize, np.zeros(100, np.float32), "Q4_K")
        self.assertRaises(ValueError, gq.quantize, np.full(32, np.nan, np.float32), "Q8_0")
        self.assertRaises(ValueError, gq.quantize, np.full(32, 1e30, np.float32), "Q4_1")
        self.assertEqual(gq.quantize(np.zeros(0, np.float32), "Q6_K"), b"")


class FieldRangeTests(unittest.TestCase):
    """The encoder uses every field over its range (read back here at the layouts' offsets)."""

    def blocks(self, name, seed=3, nb=64):
        rng = np.random.default_rng(seed)
        t = gq.TYPES[name]
        x = rng.standard_normal(nb * t.block_elems) * np.exp(rng.uniform(-3, 3, nb * t.block_elems // 16)).repeat(16)
        return np.frombuffer(gq.quantize(x.astype(np.float32), name), np.uint8).reshape(nb, -1)

    def test_k4_scales_and_mins_reach_63(self):
        for name in ("Q4_K", "Q5_K"):
            b = self.blocks(name)
            s = b[:, 4:16].astype(int)
            sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | (s[:, 0:4] >> 6) << 4], axis=1)
            m = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | (s[:, 4:8] >> 6) << 4], axis=1)
            self.assertEqual((sc.max(), m.max()), (63, 63), name)
            self.assertTrue(((sc >> 4) > 0).any() and ((sc >> 4) < 3).any(), name)  # the packed high bits vary
            qs = b[:, -128:]
            self.assertEqual((int((qs & 15).max()), int((qs >> 4).max()), int((qs & 15).min())), (15, 15, 0))
            if name == "Q5_K":
                self.assertEqual(set(np.unique(b[:, 16:48])) >= {0, 255}, True)  # high bits used

    def test_q6_k_negative_scales_and_high_bits(self):
        b = self.blocks("Q6_K")
        sc = b[:, 192:208].view(np.int8)
        self.assertTrue((sc < 0).any() and (sc > 0).any())
        self.assertEqual((int(sc.min()), int(sc.max())), (-128, 127))  # the whole int8 range
        qh = b[:, 128:192]
        self.assertEqual({int(v) for v in np.unique(qh & 3)}, {0, 1, 2, 3})
        self.assertEqual(int(b[:, :128].max()), 255)

    def test_q3_k_q2_k_scales(self):
        b = self.blocks("Q3_K")
        hm = b[:, 0:32]
        self.assertTrue((hm == 0).any() or (hm != 255).any())
        s = b[:, 96:108].astype(int)
        six = np.array([((s[:, i % 8] >> 4 * (i // 8)) & 15) | (((s[:, 8 + i % 4] >> 2 * (i // 4)) & 3) << 4)
                        for i in range(16)]).T
        self.assertEqual((int(six.min()), int(six.max())), (0, 63))  # scales -32 and 31
        b = self.blocks("Q2_K")
        self.assertEqual((int((b[:, :16] & 15).max()), int((b[:, :16] >> 4).max())), (15, 15))

    def test_legacy_types(self):
        for name, hb in (("Q5_0", 2), ("Q5_1", 4)):
            b = self.blocks(name)
            self.assertTrue((b[:, hb:hb + 4] != 0).any() and (b[:, hb:hb + 4] != 255).any())
        b = self.blocks("Q8_0")
        q = b[:, 2:].view(np.int8)
        self.assertEqual((int(q.min()), int(q.max())) in ((-127, 127),), True)


class RandomBlockTests(unittest.TestCase):
    def test_scales_finite_bits_everywhere(self):
        rng = np.random.default_rng(9)
        for name, offs in gq.F16_FIELDS.items():
            t = gq.TYPES[name]
            b = np.frombuffer(gq.random_blocks(name, 4000, rng), np.uint8).reshape(4000, t.block_bytes)
            for o in offs:
                h = b[:, o:o + 2].copy().view("<u2")[:, 0]
                self.assertTrue(np.all((h & 0x7C00) != 0x7C00), name)  # finite
                self.assertTrue(np.any((h & 0x7C00) == 0) and np.any(h & 0x8000), name)  # subnormal, negative
            other = np.delete(b, [o + i for o in offs for i in (0, 1)], axis=1)
            self.assertEqual(len(np.unique(other)), 256, name)
            self.assertTrue(np.all(np.isfinite(gq.dequantize(b.tobytes(), name, 4000 * t.block_elems))))

    def test_fixture_file(self):
        d = tempfile.mkdtemp()
        try:
            p = os.path.join(d, "f.bin")
            gq.write_fixture(p)
            with open(p, "rb") as f:
                b = f.read()
            self.assertEqual(b[:4], b"GGBT")
            version, n = struct.unpack_from("<II", b, 4)
            self.assertEqual(version, 1)
            off, seen = 12, set()
            for _ in range(n):
                tid, elems, bb, cnt = struct.unpack_from("<IIII", b, off)
                off += 16
                t = gq.BY_ID[tid]
                self.assertEqual((elems, bb), (t.block_elems, t.block_bytes))
                raw = b[off:off + gq.row_bytes(t, cnt)]
                off += len(raw)
                want = np.frombuffer(b, "<u4", cnt, off)
                off += 4 * cnt
                np.testing.assert_array_equal(gq.dequantize(raw, t, cnt).view("<u4"), want)
                seen.add(t.name)
            self.assertEqual((off, seen), (len(b), set(gq.TYPES)))
        finally:
            shutil.rmtree(d, ignore_errors=True)


class WriterTests(unittest.TestCase):
    """tools/gguf.py writes the added types; GgufFile parses them; GgufReader still refuses them."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_every_type_as_a_tensor(self):
        rng = np.random.default_rng(2)
        path = os.path.join(self.dir, "all.gguf")
        w = gguf.GgufWriter(path)
        w.add("general.architecture", gguf.T_STRING, "llama")
        data = {}
        for name in gq.TYPES:
            x = rng.standard_normal((3, 512)).astype(np.float32)
            data["t." + name] = x
            w.add_tensor("t." + name, name, x.shape)
        w.write(lambda n: [data[n][:2], data[n][2:]])  # two chunks: rows are whole blocks
        g = gguf.GgufFile(path)
        _, _, indep = parse_gguf(path)
        with open(path, "rb") as f:
            raw = f.read()
        for name, t in gq.TYPES.items():
            ti = g.tensors["t." + name]
            self.assertEqual((ti.ggml_type, ti.shape, ti.type_name), (t.id, (3, 512), name))
            self.assertEqual(ti.nbytes(), 3 * 512 // t.block_elems * t.block_bytes)
            tid, dims, off = indep["t." + name]
            self.assertEqual((tid, dims), (t.id, (512, 3)))
            self.assertEqual(off, g.data_offset + ti.offset)
            stored = raw[off:off + ti.nbytes()]
            if name in ("Q8_0", "Q4_0"):  # .mlb's quantizers, as before
                y = gq.dequantize(stored, name, 3 * 512).reshape(3, 512)
                self.assertLess(float(np.max(np.abs(y - data["t." + name]))), 0.6)
            else:
                self.assertEqual(stored, gq.quantize(data["t." + name], name), name)
            if name in gguf.READ_TYPES:
                g.raw_tensor("t." + name)
            else:  # the Python reader stays as it was: the C++ runtime reads these
                with self.assertRaisesRegex(gguf.GgufError, "has type %s, which is not supported" % name):
                    g.raw_tensor("t." + name)
        g.close()
        self.assertRaises(mlb.MlbError, w.add_tensor, "x", "IQ4_NL", (1, 32))

    def test_q4_k_m_like_model(self):
        shape = dict(dim=256, hidden=512, layers=2, heads=4, kv_heads=2, vocab=300, seq=32, shared=False,
                     seed=4)
        path = os.path.join(self.dir, "q4km.gguf")
        gguf.write_gguf(gen_random.RandomReader(**shape), path, "Q4_K",
                        tensor_types={"output.weight": "Q6_K", "blk.0.attn_v.weight": "Q6_K",
                                      "blk.1.ffn_down.weight": "Q5_K"})
        g = gguf.GgufFile(path)
        types = {n: ti.type_name for n, ti in g.tensors.items()}
        self.assertEqual(types["output.weight"], "Q6_K")
        self.assertEqual(types["blk.0.attn_v.weight"], "Q6_K")
        self.assertEqual(types["blk.1.attn_v.weight"], "Q4_K")
        self.assertEqual(types["blk.1.ffn_down.weight"], "Q5_K")
        self.assertEqual(types["token_embd.weight"], "Q4_K")
        self.assertEqual(types["blk.0.ffn_down.weight"], "Q4_K")  # cols 512: whole blocks
        self.assertEqual(types["output_norm.weight"], "F32")
        _, _, indep = parse_gguf(path)
        with open(path, "rb") as f:
            raw = f.read()
        reader = gen_random.RandomReader(**shape)
        for mname, arr in reader.tensors():
            gname = gguf.gguf_name(mname)
            x = np.concatenate([np.asarray(c, np.float32).reshape(-1) for c in checkpoint.float_chunks(arr)])
            tid, dims, off = indep[gname]
            t = gq.BY_ID[tid]
            n = int(np.prod(dims))
            y = gq.dequantize(raw[off:off + gq.row_bytes(t, n)], t, n)
            xb = np.asarray(x, np.float32).reshape(-1, t.block_elems)
            err = np.max(np.abs(y.reshape(-1, t.block_elems).astype(np.float64) - xb), axis=1)
            if t.name != "F32":
                self.assertTrue(np.all(err <= error_bound(t.name, xb)), gname)
            else:
                self.assertEqual(float(err.max()), 0.0)
        g.close()
        with self.assertRaisesRegex(gguf.GgufError, "Q[456]_K, which is not supported"):
            gguf.GgufReader(path)
        with self.assertRaisesRegex(mlb.MlbError, "tensor_types names tensors"):
            gguf.write_gguf(gen_random.RandomReader(**shape), path, "Q4_K",
                            tensor_types={"blk.9.attn_q.weight": "Q6_K"})

    def test_fallback_for_columns_not_whole_blocks(self):
        shape = dict(dim=64, hidden=96, layers=1, heads=2, kv_heads=1, vocab=40, seq=8, seed=1)
        path = os.path.join(self.dir, "small.gguf")
        gguf.write_gguf(gen_random.RandomReader(**shape), path, "Q4_K")
        g = gguf.GgufFile(path)
        self.assertEqual({ti.type_name for ti in g.tensors.values()}, {"F16", "F32"})
        g.close()
        path = os.path.join(self.dir, "q5_1.gguf")
        gguf.write_gguf(gen_random.RandomReader(**shape), path, "Q5_1")
        g = gguf.GgufFile(path)
        self.assertEqual(g.tensors["blk.0.ffn_down.weight"].type_name, "Q5_1")  # 96 = 3 blocks of 32
        g.close()


if __name__ == "__main__":
    unittest.main()
