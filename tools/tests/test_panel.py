#!/usr/bin/python3
"""Tests of .mlb layout 1, 16-row panels (docs/mlb-format.md, "Layout 1"), and layout 2, the
same panels with binary16 scales ("Layout 2"), in tools/mlb.py, tools/convert.py,
tools/gen_random.py and tools/export.py.

Run from the repository root:  /usr/bin/python3 -m unittest discover -s tools/tests -v

Independence: array offsets and file sizes are computed here from the doc (`doc_arrays`), and
single elements are read from the raw bytes of both files at the doc's offsets (layout 0:
r·cols + c; layout 1: ((p·nb + b)·8 + k)·64 + 4i + t and its Q4 and scale twins) with plain
index arithmetic (`element0`, `element1`), not through mlb's pack/unpack code. Layout 0 itself
is checked against the quantizers in test_convert.py, so "layout 1 = layout 0 by the doc's
formulas" pins layout 1 down. Layout 2 is checked the same way against layout 1: the same
quant bytes, each scale the binary16 of layout 1's float32 (read at the doc's offsets with
struct's 'e'), and the writer's f16_scales option giving layout 2's values in float32 storage.
Whole-tensor comparisons use mlb's Tensor.unpack().
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
import mlb  # noqa: E402
import convert  # noqa: E402
import gen_random  # noqa: E402
from test_convert import FileChecks, SHARED, read_bytes, run_tool  # noqa: E402
from test_import import GG_F32, GG_Q4_0, GG_Q8_0, build_gguf, llama_kv, need  # noqa: E402

STORIES_BIN = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")

F32, Q8, Q4 = 0, 8, 2
WT = {"q8_0": Q8, "q4_0": Q4}

# rows not a multiple of 16: kv_dim = 3 * 96/12 = 24 (2 panels, 8 padding rows), vocab 100
# (7 panels, 12 padding rows); hidden 80 -> 96; a separate (paneled) wcls
GEN = dict(dim=96, hidden=80, layers=2, heads=12, kv_heads=3, vocab=100, seq=16, shared=False)


# ------------------------------------------------------------------- the doc, transcribed

def header_fields(raw):
    u = lambda off: struct.unpack_from("<I", raw, off)[0]  # noqa: E731
    return dict(dim=u(8), n_layers=u(12), n_heads=u(16), n_kv_heads=u(20), hidden_dim=u(24),
                vocab=u(28), wtype=u(44), shared_classifier=u(48), layout=u(52))


def doc_arrays(h):
    """({tensor name: (type, (rows, cols), {array: (offset, nbytes)})}, file size) from the
    doc: layouts 1 and 2 store P·16 rows (P = ceil(rows/16)) of every quantized tensor, layout
    2 its scales as 2-byte binary16s."""
    d, wt, lay = h["dim"], h["wtype"], h["layout"]
    kv = h["n_kv_heads"] * (d // h["n_heads"])
    H, V = h["hidden_dim"], h["vocab"]
    tensors = [("tok_emb", wt, (V, d))]
    for layer in range(h["n_layers"]):
        p = "layers.%d." % layer
        tensors += [(p + "attn_norm", F32, (1, d)), (p + "wq", wt, (d, d)), (p + "wk", wt, (kv, d)),
                    (p + "wv", wt, (kv, d)), (p + "wo", wt, (d, d)), (p + "ffn_norm", F32, (1, d)),
                    (p + "w1", wt, (H, d)), (p + "w2", wt, (d, H)), (p + "w3", wt, (H, d))]
    tensors.append(("final_norm", F32, (1, d)))
    if not h["shared_classifier"]:
        tensors.append(("wcls", wt, (V, d)))
    pos, out = 256, {}
    for name, t, (rows, cols) in tensors:
        r = (rows + 15) // 16 * 16 if lay in (1, 2) and t != F32 else rows
        sb = 2 if lay == 2 else 4  # bytes per scale
        sizes = {F32: [("data", 4 * r * cols)], Q8: [("q", r * cols), ("d", r * cols // 32 * sb)],
                 Q4: [("q", r * cols // 2), ("d", r * cols // 32 * sb)]}[t]
        arrs = {}
        for a, nb in sizes:
            pos = (pos + 63) // 64 * 64
            arrs[a] = (pos, nb)
            pos += nb
        out[name] = (t, (rows, cols), arrs)
    return out, pos


def element0(raw, arrs, t, cols, r, c):
    """(quant value, scale bytes) of element (r, c) of a layout-0 tensor."""
    nb, b = cols // 32, c // 32
    s = raw[arrs["d"][0] + 4 * (r * nb + b):][:4]
    if t == Q8:
        return struct.unpack_from("<b", raw, arrs["q"][0] + r * cols + c)[0], s
    e = c % 32
    byte = raw[arrs["q"][0] + (r * nb + b) * 16 + e % 16]
    return (byte >> 4 if e >= 16 else byte & 15) - 8, s


def element1(raw, arrs, t, cols, r, c):
    """(quant value, scale bytes) of element (r, c) of a layout-1 tensor, by the doc's table."""
    nb, b = cols // 32, c // 32
    p, i = divmod(r, 16)
    s = raw[arrs["d"][0] + 4 * ((p * nb + b) * 16 + i):][:4]
    e = c % 32
    if t == Q8:
        k, tt = divmod(e, 4)
        return struct.unpack_from("<b", raw, arrs["q"][0] + ((p * nb + b) * 8 + k) * 64
                                  + 4 * i + tt)[0], s
    j, tt = divmod(e % 16, 4)
    byte = raw[arrs["q"][0] + ((p * nb + b) * 4 + j) * 64 + 4 * i + tt]
    return (byte >> 4 if e >= 16 else byte & 15) - 8, s


def element2(raw, arrs, t, cols, r, c):
    """(quant value, scale as a Python float) of element (r, c) of a layout-2 tensor: the quant
    at layout 1's offset, the scale the binary16 at byte 2·((p·nb + b)·16 + i)."""
    q, _ = element1(raw, arrs, t, cols, r, c)
    p, i = divmod(r, 16)
    return q, struct.unpack_from("<e", raw, arrs["d"][0] + 2 * ((p * (cols // 32) + c // 32) * 16 + i))[0]


def padding_cells(t, rows, cols):
    """[(q byte offset, expected byte)], [d float index] of the padding rows, by the doc."""
    nb, P = cols // 32, (rows + 15) // 16
    qs, ds = [], []
    p = P - 1
    for i in range(rows - 16 * p, 16):
        for b in range(nb):
            ds.append((p * nb + b) * 16 + i)
            for k in range(8 if t == Q8 else 4):
                for tt in range(4):
                    qs.append((((p * nb + b) * (8 if t == Q8 else 4) + k) * 64 + 4 * i + tt,
                               0 if t == Q8 else 0x88))
    return qs, ds


class PanelChecks(FileChecks):
    """Checks of a layout-1 file against the layout-0 file of the same model."""

    def check_pair(self, rows_path, panel_path, full=("layers.0.wk",)):
        r0, r1 = read_bytes(rows_path), read_bytes(panel_path)
        h0, h1 = header_fields(r0), header_fields(r1)
        self.assertEqual((h0["layout"], h1["layout"]), (0, 1))
        self.assertEqual(r0[:52] + r0[56:256], r1[:52] + r1[56:256],
                         "only the layout field differs")
        self.assertEqual(struct.unpack_from("<I", r1, 52)[0], 1)
        t0, size0 = doc_arrays(h0)
        t1, size1 = doc_arrays(h1)
        self.assertEqual((len(r0), len(r1)), (size0, size1), "file sizes")
        with mlb.MlbFile(rows_path) as m0, mlb.MlbFile(panel_path) as m1:
            self.assertEqual(m1.size, size1)
            self.assertEqual(list(m0.tensors), list(t1))
            prev = 256
            for name, (t, (rows, cols), arrs) in t1.items():
                a, b = m0[name], m1[name]
                for an, (off, nbytes) in arrs.items():
                    self.assertEqual((b.offsets[an], b.arrays[an].nbytes), (off, nbytes), name)
                    self.assertEqual(r1[prev:off], bytes(off - prev), "pad before " + name)
                    prev = off + nbytes
                if t == F32:
                    self.assertEqual(a.data.tobytes(), b.data.tobytes(), name)
                    continue
                # whole tensor: unpacking layout 1 gives layout 0's q and d byte for byte
                q0, d0 = a.unpack()
                q1, d1 = b.unpack()
                self.assertEqual((q1.shape, d1.shape), (q0.shape, d0.shape), name)
                self.assertEqual(q1.tobytes(), q0.tobytes(), name)
                self.assertEqual(d1.tobytes(), d0.tobytes(), name)
                self.assertEqual(b.dequantize().tobytes(), a.dequantize().tobytes(), name)
                # hand-picked elements at the doc's offsets, raw bytes of both files
                a0 = t0[name][2]
                picks = {(0, 0), (0, cols - 1), (rows - 1, 0), (rows - 1, cols - 1),
                         (min(rows - 1, 17), min(cols - 1, 37)), (rows // 2, cols // 2 + 5),
                         (min(rows - 1, 15), 16), (min(rows - 1, 16), 47 % cols)}
                if name in full:
                    picks = {(r, c) for r in range(rows) for c in range(cols)}
                for r, c in sorted(picks):
                    self.assertEqual(element1(r1, arrs, t, cols, r, c),
                                     element0(r0, a0, t, cols, r, c), (name, r, c))
                # padding rows: Q8 quants 0 / Q4 nibbles 8, scales +0
                qs, ds = padding_cells(t, rows, cols)
                self.assertEqual(len(ds), ((rows + 15) // 16 * 16 - rows) * (cols // 32))
                for off, want in qs:
                    self.assertEqual(r1[arrs["q"][0] + off], want, (name, off))
                for i in ds:
                    self.assertEqual(r1[arrs["d"][0] + 4 * i:][:4], bytes(4), (name, i))
        return h1


# --------------------------------------------------------------------------------- tests

class PackTests(unittest.TestCase):

    def test_pack_unpack_round_trip_and_padding(self):
        rng = np.random.default_rng(1)
        for t, qcols, dt in ((Q8, 64, np.int8), (Q4, 32, np.uint8)):
            for n in (1, 15, 16, 37):
                q = rng.integers(-127 if t == Q8 else 0, 128 if t == Q8 else 256,
                                 (n, qcols)).astype(dt)
                d = rng.standard_normal((n, 2)).astype(np.float32)
                qp, dp = mlb.pack_panels(q, d, t)
                P = (n + 15) // 16
                self.assertEqual(qp.shape, (P, 2, 8 if t == Q8 else 4, 16, 4))
                self.assertEqual(dp.shape, (P, 2, 16))
                # unit k of block b, row i, byte t = byte 4k + t of the row's block
                self.assertEqual(qp[(n - 1) // 16, 1, 2, (n - 1) % 16, 3],
                                 q[n - 1, (32 if t == Q8 else 16) + 11])
                self.assertEqual(dp[-1, 1, (n - 1) % 16], d[n - 1, 1])
                uq, ud = mlb.unpack_panels(qp, dp, n)
                self.assertEqual((uq.tobytes(), ud.tobytes()), (q.tobytes(), d.tobytes()))
                pad = (n - 1) % 16 + 1
                fill = 0 if t == Q8 else 0x88
                self.assertTrue((qp[-1, :, :, pad:].view(np.uint8) == fill).all())
                self.assertFalse(dp[-1, :, pad:].view(np.uint32).any())

    def test_header_rules(self):
        h = dict(dim=64, n_layers=1, n_heads=4, n_kv_heads=2, hidden_dim=64, vocab=40, max_seq=8,
                 shared_classifier=1)
        mlb.Header(wtype=Q8, layout=1, **h).validate()
        mlb.Header(wtype=Q4, layout=1, **h).validate()
        with self.assertRaisesRegex(mlb.ShapeError, "layout 1 .* needs a quantized wtype"):
            mlb.Header(wtype=F32, layout=1, **h).validate()
        mlb.Header(wtype=Q8, layout=2, **h).validate()
        mlb.Header(wtype=Q4, layout=2, **h).validate()
        with self.assertRaisesRegex(mlb.ShapeError, r"layout 2 \(panel16-f16\) needs a quantized "
                                    "wtype"):
            mlb.Header(wtype=F32, layout=2, **h).validate()
        with self.assertRaisesRegex(mlb.MlbError, "layout = 3"):
            mlb.Header(wtype=Q8, layout=3, **h).validate()
        raw = mlb.Header(wtype=Q4, layout=1, **h).pack()
        self.assertEqual(struct.unpack_from("<I", raw, 52)[0], 1)
        raw = mlb.Header(wtype=Q8, layout=2, **h).pack()
        self.assertEqual(struct.unpack_from("<I", raw, 52)[0], 2)
        self.assertEqual((mlb.LAYOUT_PANEL16_F16, mlb.LAYOUTS["panel16-f16"],
                          mlb.LAYOUT_NAMES[2]), (2, 2, "panel16-f16"))


class GenRandomPanelTests(unittest.TestCase, PanelChecks):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mlbpanel")
        cls.files = {}
        for wt in WT:
            for lay in ("rows", "panel16"):
                p = os.path.join(cls.dir, "g_%s_%s.mlb" % (wt, lay))
                gen_random.generate(p, wt, seed=5, progress=False, layout=lay, **GEN)
                cls.files[wt, lay] = p

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_same_values_as_layout_0(self):
        for wt in WT:
            h = self.check_pair(self.files[wt, "rows"], self.files[wt, "panel16"])
            self.assertEqual((h["wtype"], h["hidden_dim"], h["vocab"], h["n_kv_heads"] * 8),
                             (WT[wt], 96, 100, 24))

    def test_file_sizes(self):
        # per quantized tensor: padding rows add (P·16 - rows)·cols·(1 or 1/2) + scales, then
        # the 64-byte alignment; checked against the doc's sum and against mlb
        for wt in WT:
            raw = read_bytes(self.files[wt, "panel16"])
            _, size = doc_arrays(header_fields(raw))
            self.assertEqual(len(raw), size)
            with mlb.MlbFile(self.files[wt, "panel16"]) as mf:
                self.assertEqual(mlb.file_size(mf.header), size)
        self.assertEqual([os.path.getsize(self.files[k]) for k in sorted(self.files)],
                         [80896, 77680, 143872, 137968])  # q4 panel/rows, q8 panel/rows

    def test_cli_small_kv_dim_and_vocab(self):
        # kv_dim = 1 * 64/8 = 8 rows: one panel, half of it padding; vocab 40; shared classifier
        args = ["--dim", 64, "--hidden", 64, "--layers", 1, "--heads", 8, "--kv-heads", 1,
                "--vocab", 40, "--seq", 8, "--seed", 3, "--wtype", "q4_0"]
        p1 = os.path.join(self.dir, "c1.mlb")
        r = run_tool("gen_random.py", p1, "--layout", "panel16", *args)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        p0 = os.path.join(self.dir, "c0.mlb")
        gen_random.generate(p0, "q4_0", seed=3, progress=False, layout="rows", dim=64, hidden=64,
                            layers=1, heads=8, kv_heads=1, vocab=40, seq=8)
        self.check_pair(p0, p1, full=("layers.0.wk", "tok_emb"))

    def test_f32_refused(self):
        p = os.path.join(self.dir, "f.mlb")
        for script, args in (("gen_random.py", (p,)),  # f32 as the default wtype
                             ("convert.py", (STORIES_BIN, p, "--wtype", "f32"))):
            r = run_tool(script, *args, "--layout", "panel16")
            self.assert_one_line_error(r, "%s: --layout panel16 needs --wtype q8_0 or q4_0"
                                       % script)
            self.assertEqual(r.returncode, 2)
            self.assert_no_output(self.dir, "f.mlb")
        r = run_tool("gen_random.py", p, "--layout", "cols", "--wtype", "q8_0")
        self.assert_one_line_error(r, "invalid choice: 'cols'")
        self.assertEqual(r.returncode, 2)
        with self.assertRaisesRegex(mlb.ShapeError, "needs --wtype q8_0 or q4_0"):
            convert.convert(STORIES_BIN, p, "f32", layout="panel16")
        self.assert_no_output(self.dir, "f.mlb")

    def test_reader_rejects_bad_padding_and_sizes(self):
        src = self.files["q8_0", "panel16"]
        raw = read_bytes(src)
        t, _ = doc_arrays(header_fields(raw))
        _, (rows, cols), arrs = t["layers.1.wv"]  # 24 rows: rows 24..31 of panel 1 are padding
        qs, ds = padding_cells(Q8, rows, cols)
        bad = os.path.join(self.dir, "bad.mlb")
        cases = [(arrs["q"][0] + qs[5][0], 1, "padding rows 24..31 of the last panel have quants"),
                 (arrs["d"][0] + 4 * ds[-1] + 3, 0x3F, "padding rows 24..31 of the last panel "
                                                       "have non-zero scales")]
        for off, val, needle in cases:
            b = bytearray(raw)
            b[off] = val
            with open(bad, "wb") as f:
                f.write(b)
            with self.assertRaisesRegex(mlb.MlbError, "tensor layers.1.wv: " + needle):
                mlb.MlbFile(bad)
            with mlb.MlbFile(bad, check_padding=False) as mf:  # the values themselves are fine
                self.assertEqual(mf["layers.1.wv"].unpack()[0].shape, (24, 96))
        # the real rows of the last panel are not padding
        b = bytearray(raw)
        b[arrs["q"][0] + ((1 * 3 + 2) * 8 + 7) * 64 + 4 * 7 + 3] ^= 1  # row 23, col 95
        with open(bad, "wb") as f:
            f.write(b)
        mlb.MlbFile(bad).close()
        for data, needle in ((raw[:-64], "file size"), (raw + bytes(64), "file size"),
                             (raw[:44] + struct.pack("<I", 0) + raw[48:], "needs a quantized"),
                             (raw[:52] + struct.pack("<I", 3) + raw[56:], "layout = 3"),
                             # layout 2's scales take half the bytes: the size no longer fits
                             (raw[:52] + struct.pack("<I", 2) + raw[56:], "file size")):
            with open(bad, "wb") as f:
                f.write(data)
            with self.assertRaisesRegex(mlb.MlbError, needle):
                mlb.MlbFile(bad)

    def test_writer_streams_panels_from_any_chunking(self):
        h = mlb.Header(dim=64, n_layers=1, n_heads=4, n_kv_heads=1, hidden_dim=64, vocab=1000,
                       max_seq=8, wtype=Q4, shared_classifier=1, layout=1)
        rng = np.random.default_rng(9)
        data = {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in mlb.tensor_plan(h)}
        whole = os.path.join(self.dir, "whole.mlb")
        with mlb.MlbWriter(whole, h) as w:
            for s in mlb.tensor_plan(h):
                w.write_tensor(s.name, data[s.name])
        sizes = [1, 5, 17, 3, 16, 7, 33]

        def odd_chunks(a):
            r, k = 0, 0
            while r < len(a):
                yield a[r:r + sizes[k % len(sizes)]]
                r += sizes[k % len(sizes)]
                k += 1

        packed = []
        real_pack = mlb.pack_panels

        def spy(q, d, t):
            packed.append(q.shape[0])
            return real_pack(q, d, t)

        mlb.pack_panels = spy
        try:
            for pre in (False, True):
                p = os.path.join(self.dir, "odd%d.mlb" % pre)
                with mlb.MlbWriter(p, h) as w:
                    for s in mlb.tensor_plan(h):
                        a = data[s.name]
                        if s.type == F32:
                            w.write_tensor(s.name, a)
                        elif pre:  # row-major blocks copied as they are (the GGUF path)
                            w.write_tensor(s.name, mlb.Prequantized(
                                Q4, (mlb.quantize_q4_0(c) for c in odd_chunks(a))))
                        else:
                            w.write_tensor(s.name, odd_chunks(a))
                self.assertEqual(read_bytes(p), read_bytes(whole), "pre=%s" % pre)
        finally:
            mlb.pack_panels = real_pack
        self.assertLessEqual(max(packed), 48, "buffers at most a chunk + 15 rows")
        with mlb.MlbFile(whole) as mf:
            q, d = mf["tok_emb"].unpack()
            rq, rd = mlb.quantize_q4_0(data["tok_emb"])
            self.assertEqual((q.tobytes(), d.tobytes()), (rq.tobytes(), rd.tobytes()))
            self.assertEqual(mf["tok_emb"].q.shape, (63, 2, 4, 16, 4))  # 1000 rows: 62.5 panels


class F16ScaleTests(unittest.TestCase, PanelChecks):
    """Layout 2 (binary16 scales) and the f16_scales option, against layout 1 of the same seed:
    same quants byte for byte, each scale float32(float16(layout 1's)); a layout-1 file with
    f16_scales and the layout-2 file read back equal."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mlbf16")
        cls.files = {}
        for wt in WT:
            for lay, f16s in (("rows", False), ("panel16", False), ("rows", True),
                              ("panel16", True), ("panel16-f16", False)):
                p = os.path.join(cls.dir, "g_%s_%s%s.mlb" % (wt, lay, "_f16s" if f16s else ""))
                gen_random.generate(p, wt, seed=5, progress=False, layout=lay, f16_scales=f16s,
                                    **GEN)
                cls.files[wt, lay, f16s] = p

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_header_arrays_and_sizes(self):
        for wt in WT:
            r1 = read_bytes(self.files[wt, "panel16", False])
            r2 = read_bytes(self.files[wt, "panel16-f16", False])
            self.assertEqual(r1[:52] + r1[56:256], r2[:52] + r2[56:256], "only the layout differs")
            self.assertEqual(struct.unpack_from("<I", r2, 52)[0], 2)
            t1, size1 = doc_arrays(header_fields(r1))
            t2, size2 = doc_arrays(header_fields(r2))
            self.assertEqual((len(r1), len(r2)), (size1, size2))
            self.assertLess(size2, size1)
            with mlb.MlbFile(self.files[wt, "panel16-f16", False]) as m2:
                self.assertEqual(mlb.file_size(m2.header), size2)
                prev = 256
                for name, (t, (rows, cols), arrs) in t2.items():
                    spec = m2[name].spec
                    for an, (off, nbytes) in arrs.items():
                        self.assertEqual((m2[name].offsets[an], m2[name].arrays[an].nbytes),
                                         (off, nbytes), (name, an))
                        self.assertEqual(r2[prev:off], bytes(off - prev), "pad before " + name)
                        prev = off + nbytes
                    if t == F32:
                        self.assertFalse(spec.paneled)
                        self.assertEqual(spec.arrays()[0][1], np.dtype("<f4"))
                        continue
                    P, nb = (rows + 15) // 16, cols // 32
                    self.assertTrue(spec.paneled)
                    (qn, qdt, qshape, qbytes), (dn, ddt, dshape, dbytes) = spec.arrays()
                    self.assertEqual((dn, ddt, dshape, dbytes),
                                     ("d", np.dtype("<f2"), (P, nb, 16), P * nb * 16 * 2), name)
                    self.assertEqual(m2[name].d.dtype, np.dtype("<f2"))
                    # q exactly as layout 1, d half of layout 1's float32 bytes
                    l1 = mlb.TensorSpec(spec.base, spec.layer, spec.shape, spec.type,
                                        mlb.LAYOUT_PANEL16).arrays()
                    self.assertEqual((qn, qdt, qshape, qbytes), l1[0], name)
                    self.assertEqual(dbytes * 2, l1[1][3], name)
                    self.assertEqual(arrs["d"][1], t1[name][2]["d"][1] // 2, name)
                self.assertEqual(prev, len(r2))
        # 5.6 % / 10 % of a panel's bytes, diluted a little by the F32 norms and the alignment:
        # 9.7 % (q4_0), 5.4 % (q8_0)
        self.assertEqual([os.path.getsize(self.files[wt, lay, False]) for wt in ("q4_0", "q8_0")
                          for lay in ("panel16", "panel16-f16")],
                         [80896, 73056, 143872, 136032])

    def test_round_trip_against_layout_1(self):
        for wt in WT:
            raw1 = read_bytes(self.files[wt, "panel16", False])
            raw2 = read_bytes(self.files[wt, "panel16-f16", False])
            t1, _ = doc_arrays(header_fields(raw1))
            t2, _ = doc_arrays(header_fields(raw2))
            _, m1 = mlb.read_mlb(self.files[wt, "panel16", False])
            _, m2 = mlb.read_mlb(self.files[wt, "panel16-f16", False])
            self.assertEqual(list(m1), list(m2))
            rounded = 0
            for name, a in m1.items():
                b = m2[name]
                if a.spec.type == F32:
                    self.assertEqual(b.data.tobytes(), a.data.tobytes(), name)
                    continue
                # the file's arrays: q byte-identical (padding rows too), d the binary16s of d
                self.assertEqual(b.q.tobytes(), a.q.tobytes(), name)
                self.assertEqual(b.d.tobytes(), np.asarray(a.d).astype("<f2").tobytes(), name)
                # read back: float32 scales equal to float32(float16(layout 1's))
                q1, d1 = a.unpack()
                q2, d2 = b.unpack()
                self.assertEqual((d2.dtype, d2.shape), (np.dtype(np.float32), d1.shape), name)
                self.assertEqual(q2.tobytes(), q1.tobytes(), name)
                want = d1.astype(np.float16).astype(np.float32)
                self.assertEqual(d2.tobytes(), want.tobytes(), name)
                rounded += int((d2 != d1).sum())
                live = d1 != 0  # zero blocks (the hidden padding) stay +0
                self.assertFalse(d2[~live].view(np.uint32).any(), name)
                self.assertLessEqual(float(np.max(np.abs(d2[live] - d1[live]) / np.abs(d1[live]))),
                                     2.0 ** -11, name)  # these scales are all normal halves
                f = mlb.dequantize_q8_0 if a.spec.type == Q8 else mlb.dequantize_q4_0
                self.assertEqual(b.dequantize().tobytes(),
                                 f(q1, want).reshape(a.spec.shape).tobytes(), name)
                # single elements at the doc's offsets, raw bytes of both files
                t, (rows, cols), arrs = t2[name]
                picks = {(0, 0), (rows - 1, cols - 1), (rows // 2, cols // 2 + 5),
                         (min(rows - 1, 17), min(cols - 1, 37)), (min(rows - 1, 15), 16)}
                for r, c in sorted(picks):
                    q, half = element2(raw2, arrs, t, cols, r, c)
                    q0, s1 = element1(raw1, t1[name][2], t, cols, r, c)
                    self.assertEqual(q, q0, (name, r, c))
                    self.assertEqual(half, float(np.float16(struct.unpack("<f", s1)[0])),
                                     (name, r, c))
                # padding rows of the last panel: zero halves
                _, ds = padding_cells(t, rows, cols)
                for i in ds:
                    self.assertEqual(raw2[arrs["d"][0] + 2 * i:][:2], bytes(2), (name, i))
            self.assertGreater(rounded, 1000, "most float32 scales are not binary16 values")

    def test_f16_scales_option_same_values_as_layout_2(self):
        for wt in WT:
            f16s = self.files[wt, "panel16", True]
            h = self.check_pair(self.files[wt, "rows", True], f16s)  # layout 0 and 1 agree
            self.assertEqual(h["layout"], 1)
            self.assertEqual(os.path.getsize(f16s),
                             os.path.getsize(self.files[wt, "panel16", False]), "float32 storage")
            self.assertNotEqual(read_bytes(f16s), read_bytes(self.files[wt, "panel16", False]))
            with mlb.MlbFile(f16s) as m1, \
                    mlb.MlbFile(self.files[wt, "panel16-f16", False]) as m2, \
                    mlb.MlbFile(self.files[wt, "panel16", False]) as m0:
                for name, a in m1.tensors.items():
                    b = m2[name]
                    if a.spec.type == F32:
                        self.assertEqual(a.data.tobytes(), b.data.tobytes(), name)
                        continue
                    self.assertEqual(a.d.dtype, np.dtype("<f4"))
                    q1, d1 = a.unpack()
                    q2, d2 = b.unpack()
                    self.assertEqual((q1.tobytes(), d1.tobytes()), (q2.tobytes(), d2.tobytes()),
                                     name)
                    self.assertEqual(a.dequantize().tobytes(), b.dequantize().tobytes(), name)
                    # the quants are layout 1's (computed from the float32 scale)
                    self.assertEqual(q1.tobytes(), m0[name].unpack()[0].tobytes(), name)
        # the option is implied by layout 2; the CLI writes the API's bytes
        p = self.path("implied.mlb")
        gen_random.generate(p, "q4_0", seed=5, progress=False, layout="panel16-f16",
                            f16_scales=True, **GEN)
        self.assertEqual(read_bytes(p), read_bytes(self.files["q4_0", "panel16-f16", False]))
        args = ["--dim", 96, "--hidden", 80, "--layers", 2, "--heads", 12, "--kv-heads", 3,
                "--vocab", 100, "--seq", 16, "--no-shared-classifier", "--seed", 5,
                "--wtype", "q8_0"]
        for extra, key in ((["--layout", "panel16", "--f16-scales"], ("q8_0", "panel16", True)),
                           (["--layout", "panel16-f16"], ("q8_0", "panel16-f16", False)),
                           (["--layout", "rows", "--f16-scales"], ("q8_0", "rows", True))):
            c = self.path("cli.mlb")
            r = run_tool("gen_random.py", c, *args, *extra)
            self.assertEqual((r.returncode, r.stderr), (0, ""), extra)
            self.assertEqual(read_bytes(c), read_bytes(self.files[key]), extra)
        r = run_tool("gen_random.py", self.path("v.mlb"), *args, "--layout", "panel16-f16", "-v")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("-> q8_0, 16-row panels, binary16 scales\n", r.stderr)

    def test_export_reads_layout_2(self):
        import export
        readers = [export.MlbReader(self.files["q8_0", lay, f16s])
                   for lay, f16s in (("panel16", True), ("panel16-f16", False))]
        try:
            self.assertEqual(readers[0].hparams, readers[1].hparams)
            got = [dict((n, np.asarray(a, np.float32)) for n, a in r.tensors()) for r in readers]
            self.assertEqual(list(got[0]), list(got[1]))
            for name in got[0]:
                self.assertEqual(got[0][name].tobytes(), got[1][name].tobytes(), name)
        finally:
            for r in readers:
                r.close()
        outs = []
        for lay, f16s in (("panel16", True), ("panel16-f16", False)):
            o = self.path("e_%s.gguf" % lay)
            r = run_tool("export.py", self.files["q4_0", lay, f16s], o, "--format", "gguf",
                         "--dtype", "q4_0")
            self.assertEqual((r.returncode, r.stderr), (0, ""), lay)
            outs.append(read_bytes(o))
        self.assertEqual(outs[0], outs[1])

    def test_f32_refused(self):
        p = self.path("f.mlb")
        for script, args, needle in (
                ("gen_random.py", ("--layout", "panel16-f16"),
                 "--layout panel16-f16 needs --wtype q8_0 or q4_0"),
                ("gen_random.py", ("--f16-scales",), "--f16-scales needs --wtype q8_0 or q4_0"),
                ("gen_random.py", ("--f16-scales", "--layout", "rows", "--wtype", "f32"),
                 "--f16-scales needs --wtype q8_0 or q4_0"),
                ("convert.py", (STORIES_BIN, "--wtype", "f32", "--layout", "panel16-f16"),
                 "--layout panel16-f16 needs --wtype q8_0 or q4_0")):
            argv = (p,) + args if script == "gen_random.py" else (args[0], p) + args[1:]
            r = run_tool(script, *argv)
            self.assert_one_line_error(r, "%s: %s" % (script, needle))
            self.assertEqual(r.returncode, 2)
            self.assert_no_output(self.dir, "f.mlb")
        r = run_tool("convert.py", STORIES_BIN, p, "--wtype", "q8_0", "--f16-scales")
        self.assert_one_line_error(r, "unrecognized arguments: --f16-scales")  # gen_random only
        with self.assertRaisesRegex(mlb.ShapeError, "needs --wtype q8_0 or q4_0"):
            convert.convert(STORIES_BIN, p, "f32", layout="panel16-f16")
        with self.assertRaisesRegex(mlb.ShapeError, "--f16-scales needs --wtype"):
            gen_random.generate(p, "f32", layout="rows", f16_scales=True, progress=False, **GEN)
        reader = gen_random.RandomReader(seed=1, **dict(GEN, dim=64, heads=4, kv_heads=2))
        with self.assertRaisesRegex(mlb.ShapeError, "--f16-scales needs --wtype"):
            convert.write_mlb(reader, p, mlb.F32, progress=False, f16_scales=True)
        with self.assertRaisesRegex(mlb.ShapeError, r"layout 2 \(panel16-f16\) needs"):
            convert.write_mlb(reader, p, mlb.F32, progress=False, layout=mlb.LAYOUT_PANEL16_F16)
        self.assertEqual(convert.resolve_types("q4_0", "panel16-f16"), (Q4, 2))
        self.assertEqual(convert.resolve_types(Q8, 2, f16_scales=True), (Q8, 2))
        self.assert_no_output(self.dir, "f.mlb")

    def test_scale_overflow_names_the_tensor(self):
        base = dict(dim=64, n_layers=1, n_heads=4, n_kv_heads=2, hidden_dim=64, vocab=40,
                    max_seq=8, shared_classifier=1)
        rng = np.random.default_rng(4)
        out = self.path("o.mlb")
        # Q8_0: d = amax / 127; Q4_0: d = m / -8; binary16's largest finite value is 65504 and
        # |d| >= 65520 rounds to infinity
        for wt, ok, bad in ((Q8, 65504.0 * 127, 65520.0 * 127), (Q4, -65516.0 * 8, -65520.0 * 8)):
            for layout, f16s in ((2, False), (1, True), (0, True), (1, False)):
                h = mlb.Header(wtype=wt, layout=layout, **base)
                for big, fails in ((ok, False), (bad, layout == 2 or f16s)):
                    data = {s.name: rng.standard_normal(s.shape).astype(np.float32)
                            for s in mlb.tensor_plan(h)}
                    data["layers.0.wk"][5, 40] = big
                    what = (wt, layout, f16s, big)

                    def write():
                        with mlb.MlbWriter(out, h, f16_scales=f16s) as w:
                            for s in mlb.tensor_plan(h):
                                w.write_tensor(s.name, data[s.name])

                    if not fails:
                        write()
                        with mlb.MlbFile(out) as mf:
                            _, d = mf["layers.0.wk"].unpack()
                            want = 65504.0 if wt == Q8 else 65504.0 * np.sign(-big)
                            self.assertEqual(float(d[5, 1]), want if (layout == 2 or f16s)
                                             else float(np.float32(big) / np.float32(127 if wt == Q8 else -8)),
                                             what)
                        os.unlink(out)
                        continue
                    with self.assertRaisesRegex(mlb.MlbError, r"^tensor wk \(layer 0\): block "
                                                r"scale -?65520 is too large for a binary16 "
                                                r"scale") as cm:
                        write()
                    self.assertNotIsInstance(cm.exception, mlb.ShapeError)  # exit 1: bad input
                    self.assertEqual(cm.exception.exit_code, 1)
                    self.assert_no_output(self.dir, "o.mlb")
        # the CLI: a llama2.c checkpoint with one huge weight in wq of layer 0
        from test_convert import write_llama2c
        src = self.path("big.bin")
        write_llama2c(src, 64, 64, 1, 4, 2, 40, 8, seed=1)
        raw = bytearray(read_bytes(src))
        struct.pack_into("<f", raw, 28 + 4 * (40 * 64 + 64) + 4 * 70, 1e7)  # wq row 1, col 6
        with open(src, "wb") as f:
            f.write(raw)
        r = run_tool("convert.py", src, out, "--wtype", "q8_0", "--layout", "panel16-f16")
        self.assert_one_line_error(r, "convert.py: tensor wq (layer 0): block scale 78740.16 is "
                                   "too large for a binary16 scale")
        self.assertEqual(r.returncode, 1)
        self.assert_no_output(self.dir, "o.mlb")
        r = run_tool("convert.py", src, out, "--wtype", "q8_0", "--layout", "panel16")
        self.assertEqual((r.returncode, r.stderr), (0, ""))  # float32 scales hold it


class StoriesPanelTests(unittest.TestCase, PanelChecks):

    @classmethod
    def setUpClass(cls):
        need(STORIES_BIN)
        cls.dir = tempfile.mkdtemp(prefix="mlbpanels")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.dir, name)

    def test_bin(self):
        # (GGUF and .bin convert to the same bytes in both layouts: test_import.GgufStoriesTest)
        for wt in WT:
            rows, panel = self.out("r_%s.mlb" % wt), self.out("p_%s.mlb" % wt)
            convert.convert(STORIES_BIN, rows, wt, progress=False, layout="rows")
            if wt == "q4_0":  # the CLI option
                r = run_tool("convert.py", STORIES_BIN, panel, "--wtype", wt, "--layout", "panel16")
                self.assertEqual((r.returncode, r.stderr), (0, ""))
            else:
                convert.convert(STORIES_BIN, panel, wt, progress=False, layout="panel16")
            self.check_pair(rows, panel)
            # every row count is a multiple of 16 here: same size, no padding rows
            self.assertEqual(os.path.getsize(rows), os.path.getsize(panel))


class GgufBlocksPanelTests(unittest.TestCase, PanelChecks):
    """Q8_0/Q4_0 blocks of a GGUF copied without re-quantizing, then paneled; kv_dim 8 and
    vocab 40 leave padding rows, hidden 72 -> 96 appends zero-block rows to w1/w3 (72 rows
    end mid-panel, so the carried rows and the appended ones share a panel)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlbpgg")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def gguf(self, gt):
        rng = np.random.default_rng(gt)
        dim, hidden, vocab, kv = 64, 72, 40, 8
        shapes = [("token_embd.weight", (vocab, dim)), ("output_norm.weight", (dim,)),
                  ("output.weight", (vocab, dim)), ("blk.0.attn_norm.weight", (dim,)),
                  ("blk.0.attn_q.weight", (dim, dim)), ("blk.0.attn_k.weight", (kv, dim)),
                  ("blk.0.attn_v.weight", (kv, dim)), ("blk.0.attn_output.weight", (dim, dim)),
                  ("blk.0.ffn_norm.weight", (dim,)), ("blk.0.ffn_gate.weight", (hidden, dim)),
                  ("blk.0.ffn_down.weight", (dim, hidden)), ("blk.0.ffn_up.weight", (hidden, dim))]
        blocks = {}
        tensors = []
        for name, shape in shapes:
            if len(shape) == 1 or shape[1] % 32:  # norms, and ffn_down (K = 72) as F32
                a = rng.standard_normal(shape).astype("<f4")
                tensors.append((name, GG_F32, tuple(reversed(shape)), a.tobytes()))
                continue
            rows, nb = shape[0], shape[1] // 32
            d = (rng.standard_normal((rows, nb)) * 0.01).astype("<f2")
            if gt == GG_Q8_0:  # any int8 quants, not only what a quantizer would give
                q = rng.integers(-128, 128, (rows, nb, 32)).astype(np.int8).view(np.uint8)
            else:
                q = rng.integers(0, 256, (rows, nb, 16)).astype(np.uint8)
            b = np.concatenate([d.view(np.uint8).reshape(rows, nb, 2), q], axis=2)
            tensors.append((name, gt, tuple(reversed(shape)), b.tobytes()))
            blocks[name] = (q.reshape(rows, -1), d.astype(np.float32))
        p = os.path.join(self.dir, "m%d.gguf" % gt)
        build_gguf(p, llama_kv(dim=dim, heads=8, kv_heads=1, hidden=hidden), tensors)
        return p, blocks

    def test_blocks_copied_and_paneled(self):
        for wt, gt in (("q8_0", GG_Q8_0), ("q4_0", GG_Q4_0)):
            src, blocks = self.gguf(gt)
            rows, panel = (os.path.join(self.dir, n) for n in ("r.mlb", "p.mlb"))
            convert.convert(src, rows, wt, progress=False, quiet=True, tokenizer=False,
                            layout="rows")
            r = run_tool("convert.py", src, panel, "--wtype", wt, "--layout", "panel16",
                         "--no-tokenizer")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("8 %s tensors copied without re-quantizing" % wt.upper(), r.stderr)
            h = self.check_pair(rows, panel, full=("layers.0.wk", "layers.0.w1"))
            self.assertEqual((h["hidden_dim"], h["vocab"], h["shared_classifier"]), (96, 40, 0))
            with mlb.MlbFile(panel) as mf:
                for name, gname in (("tok_emb", "token_embd.weight"), ("wcls", "output.weight"),
                                    ("layers.0.wv", "blk.0.attn_v.weight"),
                                    ("layers.0.w3", "blk.0.ffn_up.weight")):
                    q, d = mf[name].unpack()
                    gq, gd = blocks[gname]
                    n = gq.shape[0]
                    self.assertEqual(q[:n].view(np.uint8).tobytes(), gq.tobytes(), name)
                    self.assertEqual(d[:n].tobytes(), gd.tobytes(), name)
                    if name == "layers.0.w3":  # rows 72..95: zero blocks from the hidden padding
                        fill = 0 if wt == "q8_0" else 0x88
                        self.assertTrue((q[n:].view(np.uint8) == fill).all())
                        self.assertFalse(d[n:].view(np.uint32).any())
            os.unlink(rows)
            os.unlink(panel)

    def test_blocks_copied_into_layout_2_losslessly(self):
        # GGUF's scales are binary16: layout 2 stores them as they are, the values of layout 1
        for wt, gt in (("q8_0", GG_Q8_0), ("q4_0", GG_Q4_0)):
            src, blocks = self.gguf(gt)
            p1, p2 = (os.path.join(self.dir, n) for n in ("p1.mlb", "p2.mlb"))
            convert.convert(src, p1, wt, progress=False, quiet=True, tokenizer=False,
                            layout="panel16")
            r = run_tool("convert.py", src, p2, "--wtype", wt, "--layout", "panel16-f16",
                         "--no-tokenizer")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("8 %s tensors copied without re-quantizing (fp16 scales kept as "
                          "binary16, exact)" % wt.upper(), r.stderr)
            self.assertEqual(struct.unpack_from("<I", read_bytes(p2), 52)[0], 2)
            with mlb.MlbFile(p1) as m1, mlb.MlbFile(p2) as m2:
                for name, t in m2.tensors.items():
                    if t.spec.type == F32:
                        continue
                    q1, d1 = m1[name].unpack()
                    q2, d2 = t.unpack()
                    self.assertEqual(q2.tobytes(), q1.tobytes(), name)
                    self.assertEqual(t.d.tobytes(), np.asarray(m1[name].d).astype("<f2").tobytes())
                    if name != "layers.0.w2":  # copied blocks: no scale changes
                        self.assertEqual(d2.tobytes(), d1.tobytes(), name)
                    else:  # F32 in the GGUF (K = 72), quantized here: scales rounded
                        self.assertEqual(d2.tobytes(),
                                         d1.astype(np.float16).astype(np.float32).tobytes())
                        self.assertNotEqual(d2.tobytes(), d1.tobytes())
                for name, gname in (("tok_emb", "token_embd.weight"), ("wcls", "output.weight"),
                                    ("layers.0.wk", "blk.0.attn_k.weight")):
                    q, d = m2[name].unpack()
                    gq, gd = blocks[gname]
                    n = gq.shape[0]
                    self.assertEqual(q[:n].view(np.uint8).tobytes(), gq.tobytes(), name)
                    self.assertEqual(d[:n].tobytes(), gd.tobytes(), name)
            os.unlink(p1)
            os.unlink(p2)


if __name__ == "__main__":
    unittest.main()
