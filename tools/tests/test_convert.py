#!/usr/bin/python3
"""Tests of tools/mlb.py, tools/convert.py and tools/gen_random.py.

Run from the repository root:  /usr/bin/python3 -m unittest discover -s tools/tests -v
Tests that need the shared test models read them from $ML_SHARED (default <repo>/../shared)
and are skipped, loudly, when that folder is missing.

The file layout is re-derived here from docs/mlb-format.md (`doc_layout`) rather than taken
from mlb.layout(), and the quantizers are checked against hand-computed blocks and a
one-element-at-a-time float32 transcription of the rules, so the tests do not only check the
module against itself.
"""
import sys

sys.dont_write_bytecode = True

import os
import shutil
import signal
import struct
import subprocess
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)

import numpy as np  # noqa: E402
import mlb  # noqa: E402
import convert  # noqa: E402
import gen_random  # noqa: E402

SHARED = os.environ.get("ML_SHARED") or os.path.join(REPO, "..", "shared")
STORIES = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")

F32, Q8, Q4 = 0, 8, 2
f32 = np.float32


# ------------------------------------------------------------------------------ helpers

def run_tool(script, *args):
    return subprocess.run([sys.executable, os.path.join(TOOLS, script)] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def llama2c_groups(dim, hidden, layers, heads, kv_heads, vocab, seq):
    """(name, shape) of a llama2.c legacy checkpoint's float arrays, in file order."""
    hs = dim // heads
    kv = kv_heads * hs
    return [("tok_emb", (vocab, dim)), ("attn_norm", (layers, dim)), ("wq", (layers, dim, dim)),
            ("wk", (layers, kv, dim)), ("wv", (layers, kv, dim)), ("wo", (layers, dim, dim)),
            ("ffn_norm", (layers, dim)), ("w1", (layers, hidden, dim)),
            ("w2", (layers, dim, hidden)), ("w3", (layers, hidden, dim)), ("final_norm", (dim,)),
            ("freq_cis_real", (seq, hs // 2)), ("freq_cis_imag", (seq, hs // 2))]


def write_llama2c(path, dim, hidden, layers, heads, kv_heads, vocab, seq, shared=True, seed=0):
    """Write a random llama2.c legacy checkpoint; return {group name: array}."""
    rng = np.random.default_rng(seed)
    groups = llama2c_groups(dim, hidden, layers, heads, kv_heads, vocab, seq)
    if not shared:
        groups.append(("wcls", (vocab, dim)))
    arrays = {n: rng.standard_normal(s).astype(np.float32) for n, s in groups}
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", dim, hidden, layers, heads, kv_heads,
                            vocab if shared else -vocab, seq))
        for n, _ in groups:
            f.write(arrays[n].astype("<f4").tobytes())
    return arrays


def read_llama2c(path):
    """Independent parse of a llama2.c checkpoint: (header tuple, {group: array}, shared)."""
    raw = read_bytes(path)
    dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", raw)
    shared = vocab > 0
    vocab = abs(vocab)
    floats = np.frombuffer(raw, "<f4", offset=28)
    groups = llama2c_groups(dim, hidden, layers, heads, kv_heads, vocab, seq)
    if not shared:
        groups.append(("wcls", (vocab, dim)))
    out, pos = {}, 0
    for n, s in groups:
        k = int(np.prod(s))
        out[n] = floats[pos:pos + k].reshape(s)
        pos += k
    assert pos == floats.size, "test checkpoint parse did not consume the file"
    return (dim, hidden, layers, heads, kv_heads, vocab, seq), out, shared


def doc_layout(h):
    """[(tensor name, type, shape, [(array, offset, nbytes)])] and file size, from the doc.
    Layouts 1 and 2 (h["layout"] 1, 2) store ceil(rows/16)·16 rows of every quantized tensor;
    layout 2's scales are 2-byte binary16s."""
    d = h["dim"]
    kv = h["n_kv_heads"] * (d // h["n_heads"])
    H, V, wt = h["hidden_dim"], h["vocab"], h["wtype"]
    tensors = [("tok_emb", wt, (V, d))]
    for layer in range(h["n_layers"]):
        p = "layers.%d." % layer
        tensors += [(p + "attn_norm", F32, (d,)), (p + "wq", wt, (d, d)), (p + "wk", wt, (kv, d)),
                    (p + "wv", wt, (kv, d)), (p + "wo", wt, (d, d)), (p + "ffn_norm", F32, (d,)),
                    (p + "w1", wt, (H, d)), (p + "w2", wt, (d, H)), (p + "w3", wt, (H, d))]
    tensors.append(("final_norm", F32, (d,)))
    if not h["shared_classifier"]:
        tensors.append(("wcls", wt, (V, d)))
    pos, out = 256, []
    for name, t, shape in tensors:
        n = int(np.prod(shape))
        if h["layout"] in (1, 2) and t != F32:
            n = (shape[0] + 15) // 16 * 16 * shape[1]
        sb = 2 if h["layout"] == 2 else 4  # bytes per scale
        sizes = {F32: [("data", 4 * n)], Q8: [("q", n), ("d", n // 32 * sb)],
                 Q4: [("q", n // 2), ("d", n // 32 * sb)]}[t]
        arrs = []
        for a, nb in sizes:
            pos = (pos + 63) // 64 * 64
            arrs.append((a, pos, nb))
            pos += nb
        out.append((name, t, shape, arrs))
    return out, pos


def raw_header(raw):
    """Header fields at the doc's offsets."""
    u = lambda off: struct.unpack_from("<I", raw, off)[0]  # noqa: E731
    fl = lambda off: struct.unpack_from("<f", raw, off)[0]  # noqa: E731
    return dict(magic=raw[0:4], version=u(4), dim=u(8), n_layers=u(12), n_heads=u(16),
                n_kv_heads=u(20), hidden_dim=u(24), vocab=u(28), max_seq=u(32),
                rope_theta=fl(36), norm_eps=fl(40), wtype=u(44), shared_classifier=u(48),
                layout=u(52))


def ref_q8_block(x):
    """Q8_0 of one block, one float32 operation at a time (the doc's rule, transcribed)."""
    amax = f32(0)
    for v in x:
        amax = max(amax, abs(f32(v)))
    if amax < f32(2.0 ** -100):  # tiny block = zero block
        return [0] * 32, f32(0)
    d = f32(amax / f32(127))
    inv = f32(f32(127) / amax) if amax != 0 else f32(0)
    q = []
    for v in x:
        v = f32(v)
        t = f32(f32(v * inv) + f32(np.copysign(f32(0.5), v)))
        q.append(int(min(127, max(-127, int(t)))))  # int() truncates toward zero
    return q, d


def ref_q4_block(x):
    amax, m = f32(0), f32(0)
    for v in x:
        if abs(f32(v)) > amax:
            amax, m = abs(f32(v)), f32(v)
    if amax < f32(2.0 ** -100):  # tiny block = zero block
        return b"\x88" * 16, f32(0)
    d = f32(m / f32(-8))
    inv = f32(f32(1) / d) if d != 0 else f32(0)
    q = [min(15, int(f32(f32(f32(v) * inv) + f32(8.5)))) for v in x]
    return bytes(q[j] | (q[j + 16] << 4) for j in range(16)), d


class FileChecks:
    """Mixin: structural checks of a written file against the doc."""

    def check_structure(self, path, layout=0):
        """Header, array offsets, padding and size of `path` by the doc, which must be in
        `layout` (0 rows, 1 16-row panels, 2 16-row panels with binary16 scales)."""
        raw = read_bytes(path)
        h = raw_header(raw)
        self.assertEqual(h["magic"], b"MLB1")
        self.assertEqual(h["version"], 1)
        self.assertEqual(h["layout"], layout)
        self.assertEqual(raw[56:256], bytes(200), "reserved header bytes must be zero")
        tensors, size = doc_layout(h)
        self.assertEqual(len(raw), size, "file size must be exactly what the header implies")
        prev = 256
        for name, t, shape, arrs in tensors:
            for a, off, nb in arrs:
                self.assertEqual(off % 64, 0)
                self.assertEqual(raw[prev:off], bytes(off - prev), "pad before %s.%s" % (name, a))
                prev = off + nb
        self.assertEqual(prev, len(raw))
        # the module's reader agrees with the doc's layout
        with mlb.MlbFile(path) as mf:
            self.assertEqual([n for n, *_ in tensors], list(mf.tensors))
            for name, t, shape, arrs in tensors:
                self.assertEqual(mf[name].spec.shape, shape)
                for a, off, nb in arrs:
                    self.assertEqual(mf[name].offsets[a], off)
                    self.assertEqual(mf[name].arrays[a].nbytes, nb)
        return h, raw

    def assert_one_line_error(self, r, *needles):
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("Traceback", r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, "expected one error line, got:\n" + r.stderr)
        for n in needles:
            self.assertIn(n, lines[0])

    def assert_no_output(self, directory, name):
        self.assertFalse(os.path.exists(os.path.join(directory, name)))
        left = [f for f in os.listdir(directory) if f.endswith(".tmp")]
        self.assertEqual(left, [], "temporary files left behind")


# ---------------------------------------------------------------------------- quantizers

class QuantizerTests(unittest.TestCase):

    def q8(self, x):
        q, d = mlb.quantize_q8_0(np.asarray(x, np.float32).reshape(1, 32))
        return q[0], d[0]

    def q4(self, x):
        q, d = mlb.quantize_q4_0(np.asarray(x, np.float32).reshape(1, 32))
        return q[0], d[0]

    def test_q8_zero_block(self):
        q, d = self.q8(np.zeros(32))
        self.assertEqual(q.tolist(), [0] * 32)
        self.assertEqual(d.tobytes(), f32(0).tobytes())  # +0.0

    def test_q8_extremes_clamp_to_127(self):
        x = np.zeros(32, np.float32)
        x[3], x[7], x[9] = 2.0, -2.0, 1.0
        q, d = self.q8(x)
        self.assertEqual((q[3], q[7], q[9]), (127, -127, 64))  # 63.5 rounds away from zero
        self.assertEqual(d.tobytes(), (f32(2) / f32(127)).tobytes())
        self.assertGreaterEqual(q.min(), -127)

    def test_q8_ties_round_half_away_from_zero(self):
        x = np.zeros(32, np.float32)
        x[0] = 127.0  # amax 127: d = 1, id = 1 exactly
        x[1:9] = [2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5, -126.5]
        q, d = self.q8(x)
        self.assertEqual(d, 1.0)
        self.assertEqual(q[:9].tolist(), [127, 3, -3, 1, -1, 2, -2, 127, -127])

    def test_q8_ties_with_negative_amax(self):
        # amax 127 from a negative element: d = 1 still; the ties round away from zero as above.
        x = np.zeros(32, np.float32)
        x[0] = -127.0
        x[1:7] = [63.5, -63.5, 125.5, -125.5, 0.5, -0.5]
        q, d = self.q8(x)
        self.assertEqual(d, 1.0)
        self.assertEqual(q[:7].tolist(), [-127, 64, -64, 126, -126, 1, -1])  # floor(v + .5): -63, -125, 0

    def test_q4_ties_round_half_up(self):
        # GGUF's rule q = trunc(x * id + 8.5): x * id + 8.5 >= 0.5, so ties round up (toward +inf
        # in units of d), not away from zero. m = -8: d = 1, id = 1 exactly.
        ties = [-7.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 6.5, 7.5]
        x = np.zeros(32, np.float32)
        x[0] = -8.0
        x[1:10] = ties
        q, d = self.q4(x)
        self.assertEqual(d, 1.0)
        nib = [int(b) & 15 for b in q] + [int(b) >> 4 for b in q]
        #                   -7.5 -2.5 -1.5 -0.5 0.5 1.5 2.5 6.5 7.5 (clamped)
        self.assertEqual(nib[:10], [0, 1, 6, 7, 8, 9, 10, 11, 15, 15])
        # m = +8: d = -1, id = -1; x = 2.5 -> -2.5 + 8.5 -> 6 (value -2, times d: 2)
        x[0] = 8.0
        q, d = self.q4(x)
        self.assertEqual(d, -1.0)
        nib = [int(b) & 15 for b in q] + [int(b) >> 4 for b in q]
        self.assertEqual(nib[:10], [0, 15, 11, 10, 9, 8, 7, 6, 2, 1])

    def test_q8_float32_semantics(self):
        # 0.49999997 + 0.5 is 0.99999997 in float64 but rounds to 1.0 in float32 → q = 1.
        x = np.zeros(32, np.float32)
        x[0] = 127.0
        x[1] = np.nextafter(f32(0.5), f32(0))
        x[2] = -x[1]
        q, _ = self.q8(x)
        self.assertEqual((q[1], q[2]), (1, -1))

    def test_q4_zero_block(self):
        q, d = self.q4(np.zeros(32))
        self.assertEqual(bytes(q), b"\x88" * 16)
        self.assertEqual(d.tobytes(), f32(0.0).tobytes())  # zero block: d = +0

    def test_tiny_blocks_are_zero_blocks(self):
        for scale in (1e-31, 3e-38, 1e-44):
            x = (np.arange(32) % 5 - 2).astype(np.float32) * f32(scale)
            q, d = self.q4(x)
            self.assertEqual((bytes(q), d.tobytes()), (b"\x88" * 16, f32(0).tobytes()))
            q, d = self.q8(x)
            self.assertEqual((bytes(q.astype(np.int8)), d.tobytes()), (bytes(32), f32(0).tobytes()))
        x = np.full(32, 2.0 ** -99, np.float32)  # just above the threshold: quantized normally
        q, d = self.q8(x)
        self.assertTrue((q == 127).all())

    def test_q4_nibble_order(self):
        x = np.zeros(32, np.float32)
        x[:16] = np.arange(16) - 8        # first element -8 is the max: d = 1, id = 1
        x[16:] = 7 - np.arange(16)        # q = 15 - j
        q, d = self.q4(x)
        self.assertEqual(d, 1.0)
        self.assertEqual(bytes(q), bytes(j | ((15 - j) << 4) for j in range(16)))

    def test_q4_sign_of_max_positive(self):
        x = np.zeros(32, np.float32)
        x[0], x[1], x[20] = 8.0, -8.0, 4.0  # largest |x| first seen: +8 → d = -1
        q, d = self.q4(x)
        self.assertEqual(d, -1.0)
        self.assertEqual(q[0] & 15, 0)       # 8·(-1) + 8.5 = 0.5 → 0 → value (0-8)·(-1) = 8
        self.assertEqual(q[1] & 15, 15)      # 16.5 → 16 → clamped to 15 → value -7
        self.assertEqual(q[4] >> 4, 4)       # x[20] = 4: -4 + 8.5 → 4 → value 4
        deq = mlb.dequantize_q4_0(q[None], np.array([d]))[0]
        self.assertEqual((deq[0], deq[1], deq[20]), (8.0, -7.0, 4.0))

    def test_q4_negative_max(self):
        x = np.zeros(32, np.float32)
        x[0], x[5], x[6], x[31] = 1.0, -4.0, 2.0, 4.0  # -4 comes first among |x| = 4
        q, d = self.q4(x)
        self.assertEqual(d, 0.5)
        deq = mlb.dequantize_q4_0(q[None], np.array([d]))[0]
        self.assertEqual((deq[0], deq[5], deq[6], deq[31]), (1.0, -4.0, 2.0, 3.5))

    def test_against_elementwise_reference(self):
        rng = np.random.default_rng(7)
        blocks = [rng.standard_normal(32), np.zeros(32), rng.integers(-20, 20, 32) / 4.0,
                  rng.standard_normal(32) * 1e-20, np.where(rng.random(32) < .5, 0, 1.0) * 3]
        blocks += [rng.standard_normal(32) * 10 ** rng.uniform(-5, 5) for _ in range(40)]
        x = np.array(blocks, np.float32)
        q8, d8 = mlb.quantize_q8_0(x)
        q4, d4 = mlb.quantize_q4_0(x)
        for i, b in enumerate(x):
            rq, rd = ref_q8_block(b)
            self.assertEqual(q8[i].tolist(), rq, "q8 block %d" % i)
            self.assertEqual(d8[i].tobytes(), rd.tobytes())
            rq4, rd4 = ref_q4_block(b)
            self.assertEqual(bytes(q4[i]), rq4, "q4 block %d" % i)
            self.assertEqual(d4[i].tobytes(), rd4.tobytes())

    def test_q8_roundtrip_error_at_most_half_step(self):
        rng = np.random.default_rng(3)
        x = (rng.standard_normal((64, 256)) * rng.uniform(0.01, 10, (64, 1))).astype(np.float32)
        q, d = mlb.quantize_q8_0(x)
        err = np.abs(x.astype(np.float64) - mlb.dequantize_q8_0(q, d).astype(np.float64))
        bound = np.repeat(d.astype(np.float64), 32, axis=1) * (0.5 + 1e-6)
        self.assertTrue((err <= bound).all(), "max err/d = %g" % (err / bound * 0.5).max())
        self.assertTrue(np.abs(q).max() <= 127)

    def test_q4_roundtrip_error_at_most_one_step(self):
        rng = np.random.default_rng(4)
        x = rng.standard_normal((32, 128)).astype(np.float32)
        q, d = mlb.quantize_q4_0(x)
        err = np.abs(x.astype(np.float64) - mlb.dequantize_q4_0(q, d).astype(np.float64))
        self.assertTrue((err <= np.repeat(np.abs(d.astype(np.float64)), 32, axis=1) * 1.0001).all())

    def test_shapes_and_dtypes(self):
        x = np.ones((3, 64), np.float32)
        q, d = mlb.quantize_q8_0(x)
        self.assertEqual((q.shape, q.dtype, d.shape, d.dtype), ((3, 64), np.int8, (3, 2), np.float32))
        q, d = mlb.quantize_q4_0(x)
        self.assertEqual((q.shape, q.dtype, d.shape), ((3, 32), np.uint8, (3, 2)))
        with self.assertRaises(ValueError):
            mlb.quantize_q8_0(np.ones((1, 40), np.float32))


def ref_half(v):
    """float32 v rounded to binary16 (round to nearest even) by CPython's own packer, not
    numpy's; None when it overflows."""
    try:
        return struct.unpack("<e", struct.pack("<e", float(v)))[0]
    except OverflowError:
        return None


class ScaleRoundingTests(unittest.TestCase):
    """mlb.round_scales_f16: layout 2's scales and the f16_scales option (docs/mlb-format.md,
    "Layout 2")."""

    def r(self, *vals):
        out = mlb.round_scales_f16(np.array(vals, np.float32))
        self.assertEqual(out.dtype, np.float32)
        return [float(v) for v in out]

    def test_ties_to_even_normal(self):
        u = 2.0 ** -10  # binary16's ulp at 1
        self.assertEqual(self.r(1.0, 1 + u / 2, 1 + 3 * u / 2, 1 + u / 2 + 2.0 ** -23, -(1 + u / 2)),
                         [1.0, 1.0, 1 + 2 * u, 1 + u, -1.0])
        self.assertEqual(self.r(2.0 ** -14, 2.0 ** 15, 65504.0, 0.1),
                         [2.0 ** -14, 2.0 ** 15, 65504.0, 0.0999755859375])

    def test_subnormals_and_zero(self):
        s = 2.0 ** -24  # the smallest subnormal half
        out = self.r(s, 2.0 ** -25, 2.0 ** -25 * (1 + 2.0 ** -23), 3 * 2.0 ** -26, 2.0 ** -26,
                     1.5 * s, 2.5 * s, 0.0, 2.0 ** -100)
        self.assertEqual(out, [s, 0.0, s, s, 0.0, 2 * s, 2 * s, 0.0, 0.0])
        neg = mlb.round_scales_f16(np.array([-2.0 ** -26], np.float32))
        self.assertEqual(neg.view(np.uint32)[0], 0x80000000, "-0: the sign is kept")

    def test_against_cpython_packer(self):
        rng = np.random.default_rng(3)
        v = (rng.standard_normal(20000) * np.exp2(rng.integers(-30, 16, 20000))).astype(np.float32)
        v = v[np.abs(v) < 65520]
        got = mlb.round_scales_f16(v)
        want = np.array([ref_half(x) for x in v], np.float32)
        self.assertEqual(got.tobytes(), want.tobytes())
        self.assertTrue(((np.abs(v) < 2.0 ** -14) & (got != 0)).any(), "subnormals covered")

    def test_overflow_boundary(self):
        below = np.nextafter(np.float32(65520), np.float32(0))
        self.assertEqual(self.r(below, -below), [65504.0, -65504.0])
        self.assertIsNone(ref_half(65520.0))
        for big in (65520.0, -65520.0, 1e30, 3.4e38):
            with self.assertRaisesRegex(mlb.MlbError, r"^tensor x: block scale -?[0-9.e+]+ is too "
                                        r"large for a binary16 scale \(\|d\| >= 65520"):
                mlb.round_scales_f16(np.array([1.0, big], np.float32), "tensor x")


# ----------------------------------------------------------------------- header / writer

def small_header(**kw):
    a = dict(dim=64, n_layers=1, n_heads=4, n_kv_heads=2, hidden_dim=96, vocab=64, max_seq=16,
             wtype=F32, shared_classifier=1)
    a.update(kw)
    return mlb.Header(**a)


class FormatTests(unittest.TestCase, FileChecks):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlbtest")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_small(self, name, **kw):
        return self.write_mlb(name, small_header(**kw))

    def write_mlb(self, name, h):
        """An .mlb file of header h in self.dir, tensors N(0, 1) from seed 0."""
        rng = np.random.default_rng(0)
        path = os.path.join(self.dir, name)
        with mlb.MlbWriter(path, h) as w:
            for spec in mlb.tensor_plan(h):
                w.write_tensor(spec.name, rng.standard_normal(spec.shape).astype(np.float32))
        return path

    def test_version_2_fields(self):
        """v1 unless a v2 field is used; v2 fields at bytes 56..87; biases after wv; round trip."""
        self.assertEqual(small_header().version, 1)
        self.assertFalse(any(small_header().pack()[56:]))
        h = small_header(arch=mlb.ARCH_QWEN2, qkv_bias=1, rope_scaling=mlb.ROPE_LLAMA3,
                         rope_factor=32.0, rope_low_freq_factor=1.0, rope_high_freq_factor=4.0,
                         rope_original_max_seq=8192, n_tokens=63)
        raw = h.pack()
        self.assertEqual(struct.unpack_from("<I", raw, 4)[0], 2)
        self.assertEqual(struct.unpack_from("<3I3f2I", raw, 56),
                         (1, 1, 1, 32.0, 1.0, 4.0, 8192, h.n_tokens))
        self.assertFalse(any(raw[88:]))
        self.assertEqual(mlb.Header.unpack(raw).pack(), raw)
        names = [t.base for t in mlb.tensor_plan(h) if t.layer == 0]
        self.assertEqual(names[names.index("wv") + 1:names.index("wo")], ["bq", "bk", "bv"])
        path = self.write_mlb("v2.mlb", h)
        self.assertEqual(mlb.MlbFile(path).header.pack(), raw)
        for bad in (dict(arch=3), dict(version=2, arch=2), dict(qkv_bias=2), dict(rope_scaling=2), dict(rope_factor=1.0),
                    dict(rope_scaling=1, rope_factor=32.0, rope_low_freq_factor=4.0,
                         rope_high_freq_factor=4.0, rope_original_max_seq=8192),
                    dict(n_tokens=10 ** 6), dict(version=1, arch=1)):
            with self.assertRaises(mlb.MlbError, msg=str(bad)):
                small_header(**bad).validate()

    def test_version_3_fields(self):
        """v3 only with a v3 field (or arch qwen3); head_size, qk_norm at bytes 88..95; q_norm and
        k_norm (head_dim each) after wv and the biases; wq (n_heads*head_dim, dim), wo the
        transpose; round trip; the rules."""
        h = small_header(arch=mlb.ARCH_QWEN3, head_size=24, qk_norm=1)  # dim 64, 4 heads, 2 kv heads
        raw = h.pack()
        self.assertEqual(struct.unpack_from("<I", raw, 4)[0], 3)
        self.assertEqual(struct.unpack_from("<I", raw, 56)[0], 2)
        self.assertEqual(struct.unpack_from("<2I", raw, 88), (24, 1))
        self.assertFalse(any(raw[96:]))
        self.assertEqual(mlb.Header.unpack(raw).pack(), raw)
        self.assertEqual((h.head_dim, h.q_dim, h.kv_dim), (24, 96, 48))
        plan = {t.base: t.shape for t in mlb.tensor_plan(h) if t.layer == 0}
        self.assertEqual((plan["wq"], plan["wk"], plan["wo"], plan["q_norm"], plan["k_norm"]),
                         ((96, 64), (48, 64), (64, 96), (24,), (24,)))
        names = [t.base for t in mlb.tensor_plan(small_header(qkv_bias=1, qk_norm=1)) if t.layer == 0]
        self.assertEqual(names[names.index("wv") + 1:names.index("wo")], ["bq", "bk", "bv", "q_norm", "k_norm"])
        self.assertEqual(small_header(arch=mlb.ARCH_QWEN2).version, 2)
        path = self.write_mlb("v3.mlb", h)
        self.assertEqual(mlb.MlbFile(path).header.pack(), raw)
        # a version-2 reader's reserved bytes: a v2 file with byte 88 set is refused
        v2 = small_header(arch=mlb.ARCH_QWEN2).pack()
        with self.assertRaisesRegex(mlb.MlbError, "reserved header bytes 88"):
            mlb.Header.unpack(v2[:88] + b"\x18" + v2[89:])
        for bad in (dict(head_size=25), dict(qk_norm=2), dict(version=2, head_size=24),
                    dict(version=2, qk_norm=1), dict(head_size=-2),
                    dict(head_size=20, wtype=Q8)):  # q_dim 80: wo's K not a multiple of 32
            with self.assertRaises(mlb.MlbError, msg=str(bad)):
                small_header(**bad).validate()
        with self.assertRaisesRegex(mlb.ShapeError, r"wo \(layer 0\) \(shape 64x80\) has 80 columns"):
            small_header(head_size=20, wtype=Q8).validate()
        small_header(dim=40, n_heads=3, n_kv_heads=1, head_size=24).validate()  # n_heads need not divide dim

    def test_header_pack_offsets(self):
        h = small_header(wtype=Q8, shared_classifier=0, rope_theta=500000.0, norm_eps=1e-6)
        raw = h.pack()
        self.assertEqual(len(raw), 256)
        r = raw_header(raw)
        self.assertEqual((r["magic"], r["version"], r["dim"], r["n_layers"], r["n_heads"],
                          r["n_kv_heads"], r["hidden_dim"], r["vocab"], r["max_seq"], r["wtype"],
                          r["shared_classifier"], r["layout"]),
                         (b"MLB1", 1, 64, 1, 4, 2, 96, 64, 16, 8, 0, 0))
        self.assertEqual(r["rope_theta"], 500000.0)
        self.assertEqual(r["norm_eps"], float(f32(1e-6)))
        self.assertEqual(mlb.Header.unpack(raw), mlb.Header.unpack(mlb.Header.unpack(raw).pack()))

    def test_header_rules(self):
        bad = [dict(dim=63, n_heads=7), dict(n_heads=5), dict(n_kv_heads=3), dict(dim=40, n_heads=8),
               dict(n_layers=0), dict(wtype=3), dict(shared_classifier=2), dict(layout=1),
               dict(layout=2), dict(layout=3), dict(wtype=Q8, layout=3),
               dict(rope_theta=0.0), dict(norm_eps=float("nan")), dict(rope_theta=1e39)]
        for kw in bad:
            with self.assertRaises(mlb.MlbError, msg=str(kw)):
                small_header(**kw).validate()
        with self.assertRaisesRegex(mlb.ShapeError, r"tensor tok_emb \(shape 64x40\) has 40 columns; "
                                                    r"q4_0 needs a multiple of 32"):
            small_header(dim=40, wtype=Q4).validate()
        with self.assertRaisesRegex(mlb.ShapeError, r"w2 \(layer 0\).*100 columns; q8_0"):
            small_header(hidden_dim=100, wtype=Q8).validate()
        small_header(dim=40, hidden_dim=100).validate()  # fine for f32

    def test_writer_layout_and_reader(self):
        for wt in (F32, Q8, Q4):
            path = self.write_small("s%d.mlb" % wt, wtype=wt, shared_classifier=0)
            h, raw = self.check_structure(path)
            self.assertEqual(h["wtype"], wt)
            with mlb.MlbFile(path) as mf:
                self.assertIn("wcls", mf.tensors)
                self.assertIsInstance(mf["layers.0.wq"].arrays[list(mf["layers.0.wq"].arrays)[0]],
                                      np.memmap)

    def test_reader_rejects_bad_files(self):
        path = self.write_small("ok.mlb", wtype=Q8)
        raw = read_bytes(path)
        cases = {"magic": b"MLB2" + raw[4:], "version": raw[:4] + b"\x04" + raw[5:],
                 "v2 field in v1": raw[:60] + b"\x01" + raw[61:],
                 "reserved": raw[:100] + b"\x01" + raw[101:], "truncated": raw[:-1],
                 "size": raw + b"\x00", "short": raw[:100],
                 "dim": raw[:8] + struct.pack("<I", 40) + raw[12:]}
        p2 = os.path.join(self.dir, "bad.mlb")
        for what, data in cases.items():
            with open(p2, "wb") as f:
                f.write(data)
            with self.assertRaises(mlb.MlbError, msg=what):
                mlb.MlbFile(p2)

    def test_reader_rejects_nonzero_padding(self):
        # f32 norms of dim 40 (160 bytes) are followed by pad bytes
        path = self.write_small("p.mlb", dim=40, n_heads=4, n_kv_heads=2)
        with mlb.MlbFile(path) as mf:
            t = mf["layers.0.attn_norm"]
            end = t.offsets["data"] + t.data.nbytes
        self.assertNotEqual(end % 64, 0)
        raw = bytearray(read_bytes(path))
        raw[end] = 7
        with open(path, "wb") as f:
            f.write(raw)
        with self.assertRaisesRegex(mlb.MlbError, "pad"):
            mlb.MlbFile(path)

    def test_writer_cleans_up_on_error_and_interrupt(self):
        h = small_header()
        path = os.path.join(self.dir, "x.mlb")
        for exc in (RuntimeError("boom"), KeyboardInterrupt()):
            def chunks():
                yield np.zeros((1, 64), np.float32)
                raise exc
            with self.assertRaises(type(exc)):
                with mlb.MlbWriter(path, h) as w:
                    w.write_tensor("tok_emb", chunks())
            self.assert_no_output(self.dir, "x.mlb")
        with self.assertRaisesRegex(mlb.MlbError, "expected tensor tok_emb"):
            with mlb.MlbWriter(path, h) as w:
                w.write_tensor("layers.0.wq", np.zeros((64, 64), np.float32))
        with self.assertRaisesRegex(mlb.MlbError, "NaN"):
            with mlb.MlbWriter(path, h) as w:
                w.write_tensor("tok_emb", np.full((64, 64), np.nan, np.float32))
        with self.assertRaisesRegex(mlb.MlbError, "tensors written"):
            with mlb.MlbWriter(path, h) as w:
                w.write_tensor("tok_emb", np.zeros((64, 64), np.float32))
        self.assert_no_output(self.dir, "x.mlb")

    def test_writer_replaces_existing_output_only_when_done(self):
        path = os.path.join(self.dir, "x.mlb")
        with open(path, "wb") as f:
            f.write(b"old")
        h = small_header()
        with self.assertRaises(RuntimeError):
            with mlb.MlbWriter(path, h) as w:
                raise RuntimeError
        self.assertEqual(read_bytes(path), b"old")


# ------------------------------------------------------------------- convert: stories260K

class StoriesTests(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(STORIES):
            msg = "shared test model not found: %s (set ML_SHARED)" % STORIES
            sys.stderr.write("\n*** SKIPPING StoriesTests: %s ***\n" % msg)
            raise unittest.SkipTest(msg)
        cls.dir = tempfile.mkdtemp(prefix="mlbstories")
        cls.out, cls.res = {}, {}
        # the layout-0 reference (test_panel.py checks layout 1 against it): the quantized
        # files with an explicit --layout rows, f32 with the default (rows for f32)
        for wt in ("f32", "q8_0", "q4_0"):
            cls.out[wt] = os.path.join(cls.dir, "stories_%s.mlb" % wt)
            cls.res[wt] = run_tool("convert.py", STORIES, cls.out[wt], "--wtype", wt,
                                   *(("--layout", "rows") if wt != "f32" else ()))
        cls.bin_header, cls.bin, cls.bin_shared = read_llama2c(STORIES)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_cli_succeeded_quietly(self):
        for wt, r in self.res.items():
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "", "small input: no progress without -v")

    def test_header_and_structure(self):
        self.assertEqual(self.bin_header, (64, 172, 5, 8, 4, 512, 512))
        for wt, code in (("f32", F32), ("q8_0", Q8), ("q4_0", Q4)):
            h, _ = self.check_structure(self.out[wt], layout=0)
            self.assertEqual((h["dim"], h["hidden_dim"], h["n_layers"], h["n_heads"],
                              h["n_kv_heads"], h["vocab"], h["max_seq"], h["wtype"],
                              h["shared_classifier"]), (64, 192, 5, 8, 4, 512, 512, code, 1))
            self.assertEqual(h["rope_theta"], 10000.0)
            self.assertEqual(h["norm_eps"], float(f32(1e-5)))

    def expected_f32(self, name):
        """The .bin tensor for an .mlb name, hidden padded 172 → 192."""
        b = self.bin
        if "." not in name:
            return b[name]
        _, layer, base = name.split(".")
        a = b[base][int(layer)]
        if base in ("w1", "w3"):
            a = np.concatenate([a, np.zeros((20, 64), np.float32)])
        elif base == "w2":
            a = np.concatenate([a, np.zeros((64, 20), np.float32)], axis=1)
        return a

    def test_f32_bit_identical_and_padding(self):
        with mlb.MlbFile(self.out["f32"]) as mf:
            self.assertNotIn("wcls", mf.tensors)
            self.assertEqual(len(mf.tensors), 1 + 5 * 9 + 1)
            for name, t in mf.tensors.items():
                exp = self.expected_f32(name)
                self.assertEqual(t.data.shape, exp.shape, name)
                self.assertEqual(t.data.tobytes(), exp.astype("<f4").tobytes(), name)
            w1, w2 = mf["layers.3.w1"].data, mf["layers.3.w2"].data
            self.assertEqual((w1.shape, w2.shape), ((192, 64), (64, 192)))
            self.assertFalse(w1[172:].any() or w2[:, 172:].any())
            self.assertTrue(w1[171].any() and w2[:, 171].any())

    def test_quantized_match_quantizer_of_f32(self):
        with mlb.MlbFile(self.out["f32"]) as ff:
            for wt, qf in (("q8_0", mlb.quantize_q8_0), ("q4_0", mlb.quantize_q4_0)):
                with mlb.MlbFile(self.out[wt]) as mf:
                    self.assertEqual(list(mf.tensors), list(ff.tensors))
                    for name, t in mf.tensors.items():
                        src = ff[name].data
                        if src.ndim == 1:
                            self.assertEqual(t.data.tobytes(), src.tobytes(), name)
                            continue
                        q, d = qf(np.array(src))
                        self.assertEqual(t.q.tobytes(), q.tobytes(), name)
                        self.assertEqual(t.d.tobytes(), d.tobytes(), name)

    def test_quantized_padding_blocks(self):
        with mlb.MlbFile(self.out["q8_0"]) as mf:
            w1, w2 = mf["layers.0.w1"], mf["layers.0.w2"]
            self.assertEqual((w1.q.shape, w2.q.shape), ((192, 64), (64, 192)))  # row-major
            self.assertFalse(w1.q[172:].any() or w1.d[172:].any())
            self.assertFalse(w2.q[:, 172:].any())  # block 5 mixes real cols 160..171 and zeros
        with mlb.MlbFile(self.out["q4_0"]) as mf:
            w1 = mf["layers.0.w1"]
            self.assertEqual(w1.q.shape, (192, 32))
            self.assertTrue((w1.q[172:] == 0x88).all())
            self.assertTrue((w1.d[172:].view(np.uint32) == 0).all())  # zero block: d = +0

    def test_dequantized_close_to_f32(self):
        with mlb.MlbFile(self.out["f32"]) as ff, mlb.MlbFile(self.out["q8_0"]) as mf:
            a, b = ff["layers.2.wq"].data, mf["layers.2.wq"].dequantize()
            self.assertLess(np.abs(a - b).max(), np.abs(a).max() / 127 * 0.51)

    def test_truncated_checkpoint(self):
        raw = read_bytes(STORIES)
        with tempfile.TemporaryDirectory() as d:
            for name, data, needle in (("cut.bin", raw[:-100], "truncated: 100 bytes missing"),
                                       ("long.bin", raw + b"\0" * 8, "8 unexpected trailing bytes"),
                                       ("tiny.bin", raw[:20], "too short")):
                p = os.path.join(d, name)
                with open(p, "wb") as f:
                    f.write(data)
                r = run_tool("convert.py", p, os.path.join(d, "o.mlb"), "--wtype", "q8_0")
                self.assert_one_line_error(r, name, needle)
                self.assertEqual(r.returncode, 1)
                self.assert_no_output(d, "o.mlb")

    def test_progress_with_verbose(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "o.mlb")
            r = run_tool("convert.py", STORIES, out, "--wtype", "q4_0", "-v")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("-> q4_0, 16-row panels\n", r.stderr)
            self.assertIn("layers.4.w2", r.stderr)
            self.assertIn("[47/47] final_norm", r.stderr)
            # no --layout: q4_0 is written in 16-row panels, the same blocks as layout 0
            self.check_structure(out, layout=1)
            with mlb.MlbFile(out) as mf, mlb.MlbFile(self.out["q4_0"]) as m0:
                for name, t in mf.tensors.items():
                    if t.spec.type != F32:
                        q, d = t.unpack()
                        self.assertEqual((q.tobytes(), d.tobytes()),
                                         (m0[name].q.tobytes(), m0[name].d.tobytes()), name)


# ------------------------------------------------------------ convert: synthetic checkpoints

class SyntheticConvertTests(unittest.TestCase, FileChecks):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlbsyn")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_dim40_refused_for_quantized_accepted_for_f32(self):
        src = os.path.join(self.dir, "d40.bin")
        arrays = write_llama2c(src, dim=40, hidden=100, layers=2, heads=4, kv_heads=2, vocab=48,
                               seq=8, shared=False)
        for wt in ("q8_0", "q4_0"):
            r = run_tool("convert.py", src, os.path.join(self.dir, "o.mlb"), "--wtype", wt)
            self.assert_one_line_error(r, "convert.py: tensor tok_emb (shape 48x40) has 40 columns; "
                                          "%s needs a multiple of 32" % wt)
            self.assertEqual(r.returncode, 2)
            self.assert_no_output(self.dir, "o.mlb")
        out = os.path.join(self.dir, "o.mlb")
        r = run_tool("convert.py", src, out, "--wtype", "f32")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        h, _ = self.check_structure(out)
        self.assertEqual((h["dim"], h["hidden_dim"], h["shared_classifier"]), (40, 128, 0))
        with mlb.MlbFile(out) as mf:
            np.testing.assert_array_equal(mf["wcls"].data, arrays["wcls"])
            np.testing.assert_array_equal(mf["layers.1.wk"].data, arrays["wk"][1])
            np.testing.assert_array_equal(mf["layers.1.w2"].data[:, :100], arrays["w2"][1])
            self.assertFalse(mf["layers.1.w2"].data[:, 100:].any())

    def test_separate_classifier_quantized(self):
        src = os.path.join(self.dir, "c.bin")
        arrays = write_llama2c(src, dim=64, hidden=64, layers=1, heads=2, kv_heads=1, vocab=40,
                               seq=4, shared=False, seed=5)
        out = os.path.join(self.dir, "c.mlb")
        mlb_h = convert.convert(src, out, "q4_0", progress=False)  # default layout: panel16
        self.assertEqual((mlb_h.hidden_dim, mlb_h.shared_classifier, mlb_h.layout), (64, 0, 1))
        self.check_structure(out, layout=1)  # vocab 40: 8 padding rows in wcls and tok_emb
        with mlb.MlbFile(out) as mf:
            q, d = mlb.quantize_q4_0(arrays["wcls"])
            wq, wd = mf["wcls"].unpack()
            self.assertEqual(wq.tobytes(), q.tobytes())
            self.assertEqual(wd.tobytes(), d.tobytes())

    def test_cli_errors(self):
        out = os.path.join(self.dir, "o.mlb")
        src = os.path.join(self.dir, "ok.bin")
        write_llama2c(src, dim=32, hidden=32, layers=1, heads=2, kv_heads=2, vocab=8, seq=4)
        notckpt = os.path.join(self.dir, "zero.bin")
        with open(notckpt, "wb") as f:
            f.write(bytes(64))
        gguf = os.path.join(self.dir, "m.gguf")
        with open(gguf, "wb") as f:
            f.write(b"GGUF" + bytes(60))
        odd = os.path.join(self.dir, "odd.bin")
        write_llama2c(odd, dim=36, hidden=32, layers=1, heads=4, kv_heads=2, vocab=8, seq=4)
        cases = [((os.path.join(self.dir, "missing.bin"), out), 1, "no such file"),
                 ((self.dir, out), 1, "no model.safetensors"),  # a folder is an HF checkpoint
                 ((notckpt, out), 1, "not a llama2.c checkpoint"),
                 ((gguf, out), 1, "GGUF"),
                 ((odd, out), 2, "head_dim"),
                 ((src, out, "--wtype", "q5_1"), 2, "invalid choice: 'q5_1'"),
                 ((src,), 2, "output"),
                 ((src, os.path.join(self.dir, "nodir", "o.mlb")), 1, "nodir"),
                 ((src, src), 1, "overwrite the input")]
        for args, code, needle in cases:
            r = run_tool("convert.py", *args)
            self.assert_one_line_error(r, needle)
            self.assertEqual(r.returncode, code, r.stderr)
            self.assert_no_output(self.dir, "o.mlb")
        if os.geteuid() != 0:  # root reads anything
            os.chmod(src, 0)
            r = run_tool("convert.py", src, out)
            self.assert_one_line_error(r, "cannot read")
        r = run_tool("convert.py", src, out, "--wtype", "Q8_0")
        self.assertEqual(r.returncode, 0, r.stderr)


# ----------------------------------------------------------------------------- gen_random

GEN_SHAPE = dict(dim=64, hidden=80, layers=2, heads=4, kv_heads=2, vocab=96, seq=32)


class GenRandomTests(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mlbgen")
        cls.files = {}
        for wt in ("f32", "q8_0", "q4_0"):
            p = os.path.join(cls.dir, "g_%s.mlb" % wt)
            gen_random.generate(p, wt, seed=11, progress=False, shared=False, **GEN_SHAPE)
            cls.files[wt] = p

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_structure(self):
        for wt, p in self.files.items():  # generate()'s default layout: rows for f32 only
            h, _ = self.check_structure(p, layout=0 if wt == "f32" else 1)
            self.assertEqual((h["dim"], h["hidden_dim"], h["n_layers"], h["vocab"],
                              h["shared_classifier"]), (64, 96, 2, 96, 0))

    def test_deterministic_cli(self):
        a, c = (os.path.join(self.dir, n) for n in ("a.mlb", "c.mlb"))
        r = run_tool("gen_random.py", a, "--seed", 11, "--dim", 64, "--hidden", 80, "--layers", 2,
                     "--heads", 4, "--kv-heads", 2, "--vocab", 96, "--seq", 32,
                     "--no-shared-classifier", "--wtype", "q8_0")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        raw = read_bytes(a)
        self.assertEqual(raw_header(raw)["layout"], 1, "no --layout: q8_0 in 16-row panels")
        # deterministic: the CLI's process and generate() in this one (setUpClass) agree
        self.assertEqual(raw, read_bytes(self.files["q8_0"]), "CLI == generate()")
        gen_random.generate(c, "q8_0", seed=12, progress=False, shared=False, **GEN_SHAPE)
        self.assertNotEqual(raw[256:], read_bytes(c)[256:])

    def test_quantized_files_are_quantized_f32_file(self):
        with mlb.MlbFile(self.files["f32"]) as ff:
            for wt, qf in (("q8_0", mlb.quantize_q8_0), ("q4_0", mlb.quantize_q4_0)):
                with mlb.MlbFile(self.files[wt]) as mf:
                    for name, t in mf.tensors.items():
                        src = ff[name].data
                        if src.ndim == 1:
                            self.assertEqual(t.data.tobytes(), src.tobytes(), name)
                            continue
                        q, d = qf(np.array(src))
                        tq, td = t.unpack()  # layout 1 (the default) as row-major blocks
                        self.assertEqual(tq.tobytes(), q.tobytes(), "%s %s" % (wt, name))
                        self.assertEqual(td.tobytes(), d.tobytes(), "%s %s" % (wt, name))

    def test_weights_statistics_and_padding(self):
        with mlb.MlbFile(self.files["f32"]) as mf:
            wq = mf["layers.0.wq"].data
            self.assertAlmostEqual(float(wq.std()), 1 / 8.0, delta=0.01)
            n = mf["layers.1.ffn_norm"].data
            self.assertTrue((np.abs(n - 1) < 0.3).all())
            w1, w2 = mf["layers.1.w1"].data, mf["layers.1.w2"].data
            self.assertFalse(w1[80:].any() or w2[:, 80:].any())
            self.assertTrue(w1[79].any() and w2[:, 79].any())
            self.assertFalse(np.array_equal(mf["wcls"].data, mf["tok_emb"].data))
        r = gen_random.RandomReader(seed=11, shared=False, **GEN_SHAPE)
        np.testing.assert_array_equal(r.tensor("layers.1.w2"), w2[:, :80])

    def test_shared_and_errors(self):
        p = os.path.join(self.dir, "s.mlb")
        gen_random.generate(p, "q4_0", seed=1, progress=False, shared=True, **GEN_SHAPE)
        with mlb.MlbFile(p) as mf:
            self.assertNotIn("wcls", mf.tensors)
        r = run_tool("gen_random.py", os.path.join(self.dir, "e.mlb"), "--dim", 40, "--heads", 4,
                     "--kv-heads", 2, "--wtype", "q8_0")
        self.assert_one_line_error(r, "tensor tok_emb (shape 512x40) has 40 columns")
        self.assertEqual(r.returncode, 2)
        self.assert_no_output(self.dir, "e.mlb")
        r = run_tool("gen_random.py", os.path.join(self.dir, "e.mlb"), "--heads", 6)
        self.assert_one_line_error(r, "n_heads = 6 does not divide dim = 256")
        r = run_tool("gen_random.py", os.path.join(self.dir, "e.mlb"), "--seed", -1)
        self.assert_one_line_error(r, "seed")
        self.assert_no_output(self.dir, "e.mlb")


# ----------------------------------------------------------------------- default --layout

DEF_SHAPE = dict(dim=64, hidden=64, layers=1, heads=4, kv_heads=2, vocab=40, seq=8)


class DefaultLayoutTests(unittest.TestCase, FileChecks):
    """No --layout (layout=None): panel16, layout 1, for q8_0 and q4_0; rows, layout 0, for
    f32 -- in both CLIs (their main(), in-process: the same argument parsing without a Python
    start-up each) and both Python APIs. An explicit rows writes layout 0, an explicit
    panel16 the default's bytes. vocab 40 and kv_dim 32: tensors with and without padding
    rows. The CLI defaults in a subprocess: StoriesTests.test_progress_with_verbose,
    GenRandomTests.test_deterministic_cli, test_import's GgufQuantizedTest."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mlbdef")
        cls.src = os.path.join(cls.dir, "m.bin")
        write_llama2c(cls.src, shared=False, seed=2, **DEF_SHAPE)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def api(self, tool, out, wt, **kw):
        if tool == "convert.py":
            return convert.convert(self.src, out, wt, progress=False, quiet=True, **kw)
        return gen_random.generate(out, wt, seed=2, progress=False, shared=False, **kw,
                                   **DEF_SHAPE)

    def cli(self, tool, out, *args):
        if tool == "convert.py":
            main, argv = convert.main, [self.src, out]
        else:
            main, argv = gen_random.main, [out, "--seed", "2", "--no-shared-classifier"]
            for k, v in DEF_SHAPE.items():
                argv += ["--" + k.replace("_", "-"), str(v)]
        old = signal.getsignal(signal.SIGTERM)  # main() installs its own handler
        try:
            self.assertEqual(main(argv + list(args) + ["-q"]), 0, (tool, args))
        finally:
            signal.signal(signal.SIGTERM, old)

    def test_resolve_types(self):
        for wt, want in (("f32", (F32, 0)), ("q8_0", (Q8, 1)), ("q4_0", (Q4, 1)), (F32, (F32, 0)),
                         (Q8, (Q8, 1)), (Q4, (Q4, 1))):
            self.assertEqual(convert.resolve_types(wt, None), want, wt)
            self.assertEqual(convert.resolve_types(wt, "rows"), (want[0], 0), wt)
            self.assertEqual(convert.resolve_types(wt, 0), (want[0], 0), wt)
        for wt in ("q8_0", "q4_0", Q8, Q4):
            w = mlb.WTYPES.get(wt, wt)
            self.assertEqual(convert.resolve_types(wt, "panel16-f16"), (w, 2), wt)
            self.assertEqual(convert.resolve_types(wt, 2, f16_scales=True), (w, 2), wt)
            self.assertEqual(convert.resolve_types(wt, None, f16_scales=True), (w, 1), wt)
        for layout, f16s in (("panel16-f16", False), (2, False), ("panel16", False),
                             ("rows", True), (None, True)):
            with self.assertRaises(mlb.ShapeError, msg=(layout, f16s)):
                convert.resolve_types("f32", layout, f16_scales=f16s)

    def test_panel16_f16_both_tools(self):
        for tool in ("convert.py", "gen_random.py"):
            for wt in ("q8_0", "q4_0"):
                p = lambda n: os.path.join(self.dir, "%s_%s_f16_%s.mlb" % (tool, wt, n))  # noqa: E731
                what = "%s %s" % (tool, wt)
                self.assertEqual(self.api(tool, p("api"), wt, layout="panel16-f16").layout, 2, what)
                h, _ = self.check_structure(p("api"), layout=2)
                self.assertEqual(h["wtype"], mlb.WTYPES[wt])
                self.cli(tool, p("cli"), "--wtype", wt, "--layout", "panel16-f16")
                self.assertEqual(read_bytes(p("cli")), read_bytes(p("api")), "CLI: " + what)
                # the values: layout 1's with each scale rounded to binary16
                self.api(tool, p("l1"), wt, layout="panel16")
                with mlb.MlbFile(p("api")) as m2, mlb.MlbFile(p("l1")) as m1:
                    for name, t in m2.tensors.items():
                        if t.spec.type != F32:
                            q, d = t.unpack()
                            q1, d1 = m1[name].unpack()
                            self.assertEqual(
                                (q.tobytes(), d.tobytes()),
                                (q1.tobytes(), d1.astype(np.float16).astype(np.float32).tobytes()),
                                (what, name))

    def test_defaults_and_explicit_rows(self):
        for tool in ("convert.py", "gen_random.py"):
            for wt, want in (("f32", 0), ("q8_0", 1), ("q4_0", 1)):
                p = lambda n: os.path.join(self.dir, "%s_%s_%s.mlb" % (tool, wt, n))  # noqa: E731
                what = "%s %s" % (tool, wt)
                h = self.api(tool, p("api"), wt)
                self.assertEqual(h.layout, want, what)
                default, _ = self.check_structure(p("api"), layout=want)
                self.assertEqual(default["wtype"], mlb.WTYPES[wt])
                self.api(tool, p("named"), wt, layout=["rows", "panel16"][want])
                self.assertEqual(read_bytes(p("named")), read_bytes(p("api")), what)
                self.cli(tool, p("cli"), "--wtype", wt)
                self.assertEqual(read_bytes(p("cli")), read_bytes(p("api")), "CLI: " + what)
                # explicit rows: layout 0 from both, the same values as the default
                rows = p("named") if not want else p("rows")
                if want:
                    self.assertEqual(self.api(tool, rows, wt, layout="rows").layout, 0, what)
                    self.check_structure(rows, layout=0)
                self.cli(tool, p("clirows"), "--wtype", wt, "--layout", "rows")
                self.assertEqual(read_bytes(p("clirows")), read_bytes(rows), "CLI: " + what)
                if want:
                    with mlb.MlbFile(p("api")) as m1, mlb.MlbFile(rows) as m0:
                        for name, t in m1.tensors.items():
                            if t.spec.type != F32:
                                q, d = t.unpack()
                                self.assertEqual((q.tobytes(), d.tobytes()),
                                                 (m0[name].q.tobytes(), m0[name].d.tobytes()),
                                                 (what, name))


if __name__ == "__main__":
    unittest.main()
