#!/usr/bin/python3
"""Qwen2 and Llama 3 import (issue 14), Qwen3 (issue 32): tools/hf.py, tools/gguf.py, tools/convert.py,
tools/export.py.

Run from the repository root:  /usr/bin/python3 -m unittest discover -s tools/tests -v

- Round trips: `export.py random:qwen2-tiny|llama3-tiny|qwen3-tiny` to a Hugging Face folder and to GGUF,
  each converted back, give the same .mlb bytes as gen_random.py's own file (F32, and Q8_0 /
  Q4_0 from the F32 exports). Byte identity with gen_random's file means the converted model is
  the model verify/hf_forward.py checks the runtime against.
- Independence of the q/k permutation: the exported HF q_proj/k_proj rows and biases are
  compared with verify/hf_forward.py's own interleaved -> half-split function, and the GGUF qwen2
  tensors with the HF ones (llama.cpp keeps HF's order for qwen2).
- Llama 3's GGUF form: rope_freqs.weight alone (as llama.cpp writes it, without the exporter's
  mlb.rope.llama3.* keys) is recognised for Llama 3.1/3.2's parameters and refused otherwise.
- Every refusal is one line naming its key.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import struct
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "verify"))

import numpy as np  # noqa: E402
import mlb  # noqa: E402
import bpe  # noqa: E402
import gguf  # noqa: E402
import hf  # noqa: E402
import export  # noqa: E402
import gen_random  # noqa: E402
import hf_forward  # noqa: E402  (verify/: the outside formulation's own permutation)
from test_convert import FileChecks, read_bytes, run_tool  # noqa: E402

PRESETS = ("qwen2-tiny", "llama3-tiny", "qwen3-tiny")


def tokenizer_with(n, path):
    """An MLTK byte-level BPE tokenizer of exactly n tokens (n - 256 special tokens + the bytes)."""
    v = bpe.train(["hello world"], 0, pre=bpe.PRE_QWEN2, normalizer=bpe.NORM_NFC,
                  specials=["<|x%d|>" % i for i in range(n - 256)])
    v.eos = 0  # as Qwen2.5's <|endoftext|>: no BOS
    assert len(v.tokens) == n
    with open(path, "wb") as f:
        f.write(v.to_mltk())
    return path


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_st(folder):
    sf = hf.SafetensorsFile(os.path.join(folder, "model.safetensors"))
    out = {}
    for name in sf.tensors:
        t = sf.raw_tensor(name)
        out[name] = np.concatenate(list(t.float_chunks())).reshape(t.shape)
    sf.close()
    return out


def save_st(folder, st):
    """Tensors {name: array} as the folder's model.safetensors, F32 (load_st's inverse)."""
    items, off = {}, 0
    for n, a in st.items():
        items[n] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    text = json.dumps(items).encode()
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in st.values():
            f.write(np.ascontiguousarray(a, "<f4").tobytes())


class ArchRoundTripTest(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mlbarch")
        cls.tok = tokenizer_with(500, os.path.join(cls.dir, "t500.bin"))  # qwen2-tiny's n_tokens
        cls.ref, cls.hf, cls.gguf = {}, {}, {}
        for p in PRESETS:
            for wt in ("f32", "q8_0", "q4_0"):
                cls.ref[p, wt] = os.path.join(cls.dir, "%s_%s.mlb" % (p, wt))
                gen_random.generate(cls.ref[p, wt], wt, progress=False, **gen_random.preset_args(p))
            tok = cls.tok if p == "qwen2-tiny" else None
            cls.hf[p] = os.path.join(cls.dir, "hf_" + p)
            export.export("random:" + p, cls.hf[p], "hf", tokenizer=tok)
            cls.gguf[p] = os.path.join(cls.dir, p + ".gguf")
            export.export("random:" + p, cls.gguf[p], "gguf", tokenizer=tok)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def convert(self, src, wt, *extra):
        out = os.path.join(self.dir, "out_%s.mlb" % wt)
        r = run_tool("convert.py", src, out, "--wtype", wt, "-q", *extra)
        self.assertEqual((r.returncode, r.stderr), (0, ""), src)
        return read_bytes(out)

    def test_hf_and_gguf_give_gen_randoms_bytes(self):
        for p in PRESETS:
            for wt in ("f32", "q8_0", "q4_0"):
                want = read_bytes(self.ref[p, wt])
                self.assertEqual(self.convert(self.hf[p], wt, "--no-tokenizer"), want, (p, wt, "hf"))
                self.assertEqual(self.convert(self.gguf[p], wt, "--no-tokenizer"), want,
                                 (p, wt, "gguf"))

    def test_header_fields(self):
        h = mlb.MlbFile(self.ref["qwen2-tiny", "f32"]).header
        self.assertEqual((h.version, h.arch, h.qkv_bias, h.n_tokens), (2, mlb.ARCH_QWEN2, 1, 500))
        h = mlb.MlbFile(self.ref["llama3-tiny", "f32"]).header
        self.assertEqual((h.version, h.arch, h.rope_scaling, h.rope_factor, h.rope_low_freq_factor,
                          h.rope_high_freq_factor, h.rope_original_max_seq),
                         (2, mlb.ARCH_LLAMA, mlb.ROPE_LLAMA3, 32.0, 1.0, 4.0, 64))
        h = mlb.MlbFile(self.ref["qwen3-tiny", "f32"]).header
        self.assertEqual((h.version, h.arch, h.qkv_bias, h.head_size, h.qk_norm, h.head_dim, h.q_dim),
                         (3, mlb.ARCH_QWEN3, 0, 24, 1, 24, 96))
        # the version-3 fields are bytes 88..95; a version-2 file keeps them zero
        raw = read_bytes(self.ref["qwen3-tiny", "f32"])[:256]
        self.assertEqual(struct.unpack_from("<3I", raw, 88), (24, 1, 0))
        self.assertEqual(struct.unpack_from("<I", raw, 4), (3,))

    def test_tokenizer_comes_along(self):
        """Both exports give the tokenizer back, the same bytes as the one exported."""
        for src in (self.hf["qwen2-tiny"], self.gguf["qwen2-tiny"]):
            out = os.path.join(self.dir, "tk.mlb")
            r = run_tool("convert.py", src, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("wrote the tokenizer (500 tokens, MLTK)", r.stderr)
            v = bpe.read_mltk(read_bytes(os.path.join(self.dir, "tk.tokenizer.bin")))
            self.assertEqual(len(v.tokens), 500)
            self.assertEqual(mlb.MlbFile(out).header.n_tokens, 500)
            self.assertEqual(read_bytes(os.path.join(self.dir, "tk.tokenizer.bin")),
                             read_bytes(self.tok), src)

    def test_gguf_pads_tokens_like_llama_cpp(self):
        g = gguf.GgufFile(self.gguf["qwen2-tiny"])
        toks = g.metadata["tokenizer.ggml.tokens"]
        self.assertEqual(len(toks), 544)
        self.assertEqual(toks[500], b"[PAD500]")
        self.assertEqual(g.metadata["general.architecture"], "qwen2")
        self.assertIn("blk.1.attn_v.bias", g.tensors)

    def test_hf_layout_matches_outside_permutation(self):
        r = gen_random.RandomReader(**gen_random.preset_args("qwen2-tiny"))
        st = load_st(self.hf["qwen2-tiny"])
        cfg = read_json(os.path.join(self.hf["qwen2-tiny"], "config.json"))
        self.assertEqual((cfg["model_type"], cfg["use_sliding_window"]), ("qwen2", False))
        nh, nkv = 4, 1
        for m, h, heads in (("wq", "q_proj.weight", nh), ("wk", "k_proj.weight", nkv),
                            ("bq", "q_proj.bias", nh), ("bk", "k_proj.bias", nkv),
                            ("bv", "v_proj.bias", None)):
            ours = r.tensor("layers.1." + m)
            want = ours if heads is None else hf_forward.interleaved_to_half_split(ours, heads)
            np.testing.assert_array_equal(st["model.layers.1.self_attn." + h], want, m)
        # GGUF qwen2 keeps HF's order (llama.cpp's qwen2 conversion does not permute)
        g = gguf.GgufFile(self.gguf["qwen2-tiny"])
        for gname, hname in (("blk.1.attn_q.weight", "q_proj.weight"),
                             ("blk.1.attn_k.bias", "k_proj.bias")):
            t = g.raw_tensor(gname)
            got = np.concatenate(list(t.float_chunks())).reshape(-1)
            np.testing.assert_array_equal(got, st["model.layers.1.self_attn." + hname].reshape(-1))
        g.close()
        cfg = read_json(os.path.join(self.hf["llama3-tiny"], "config.json"))
        self.assertEqual(cfg["rope_scaling"], {"rope_type": "llama3", "factor": 32.0,
                                               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                               "original_max_position_embeddings": 64})

    def test_qwen3_layout_matches_outside_permutation(self):
        """Qwen3: q_proj/k_proj rows and the q_norm/k_norm entries of the HF export are .mlb's put
        back by verify/hf_forward.py's own function (one head for the norms); GGUF qwen3 keeps
        HF's order (llama.cpp's conversion does not permute) and names the head size."""
        r = gen_random.RandomReader(**gen_random.preset_args("qwen3-tiny"))
        st = load_st(self.hf["qwen3-tiny"])
        cfg = read_json(os.path.join(self.hf["qwen3-tiny"], "config.json"))
        self.assertEqual((cfg["model_type"], cfg["architectures"], cfg["head_dim"]),
                         ("qwen3", ["Qwen3ForCausalLM"], 24))
        self.assertEqual(st["model.layers.1.self_attn.q_proj.weight"].shape, (96, 64))
        self.assertEqual(st["model.layers.1.self_attn.o_proj.weight"].shape, (64, 96))
        for m, h, heads in (("wq", "q_proj.weight", 4), ("wk", "k_proj.weight", 2),
                            ("q_norm", "q_norm.weight", 1), ("k_norm", "k_norm.weight", 1)):
            ours = r.tensor("layers.1." + m)
            np.testing.assert_array_equal(st["model.layers.1.self_attn." + h],
                                          hf_forward.interleaved_to_half_split(ours, heads), m)
        self.assertFalse(any(n.endswith(".bias") for n in st))
        g = gguf.GgufFile(self.gguf["qwen3-tiny"])
        self.assertEqual(g.metadata["general.architecture"], "qwen3")
        self.assertEqual((g.metadata["qwen3.attention.key_length"],
                          g.metadata["qwen3.attention.value_length"]), (24, 24))
        for gname, hname in (("blk.1.attn_q.weight", "q_proj.weight"),
                             ("blk.1.attn_k_norm.weight", "k_norm.weight"),
                             ("blk.0.attn_q_norm.weight", "q_norm.weight")):
            t = g.raw_tensor(gname)
            got = np.concatenate(list(t.float_chunks())).reshape(-1)
            want = st["model.layers.%s.self_attn.%s" % (gname.split(".")[1], hname)].reshape(-1)
            np.testing.assert_array_equal(got, want, gname)
        g.close()

    def test_quantized_gguf_qwen2_rows_permuted(self):
        """Q8_0 blocks of a GGUF qwen2 are copied row-permuted: the .mlb's wq, put back in HF's
        order by verify/hf_forward.py's function, is the GGUF's attn_q, value for value."""
        src = os.path.join(self.dir, "q8.gguf")
        export.export("random:qwen2-tiny", src, "gguf", "q8_0", tokenizer=self.tok)
        out = os.path.join(self.dir, "q8.mlb")
        r = run_tool("convert.py", src, out, "--wtype", "q8_0", "--layout", "rows")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("copied without re-quantizing", r.stderr)
        f = mlb.MlbFile(out)
        g = gguf.GgufFile(src)
        for name, gname, heads in (("layers.0.wq", "blk.0.attn_q.weight", 4),
                                   ("layers.1.wk", "blk.1.attn_k.weight", 1),
                                   ("layers.0.bq", "blk.0.attn_q.bias", 4)):
            ours = np.asarray(f.tensors[name].dequantize(), np.float32)
            t = g.raw_tensor(gname)
            theirs = np.concatenate(list(t.float_chunks())).reshape(ours.shape)
            np.testing.assert_array_equal(hf_forward.interleaved_to_half_split(ours, heads), theirs)
        f.close()
        g.close()

    def test_hf_config_variants_accepted(self):
        """Forms real configs use: 'type' for 'rope_type', an integral float context, Qwen2's
        sliding_window / max_window_layers with use_sliding_window false."""
        for p, edit in (("llama3-tiny", lambda c: c["rope_scaling"].update(
                            type=c["rope_scaling"].pop("rope_type"),
                            original_max_position_embeddings=64.0)),
                        ("qwen2-tiny", lambda c: c.update(sliding_window=32768,
                                                          max_window_layers=21))):
            folder = os.path.join(self.dir, "var_" + p)
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(self.hf[p], folder)
            cfg = read_json(os.path.join(folder, "config.json"))
            edit(cfg)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(cfg, f)
            self.assertEqual(self.convert(folder, "f32", "--no-tokenizer"),
                             read_bytes(self.ref[p, "f32"]), p)

    def test_hf_forward_on_converted_file(self):
        """The converted HF export runs through verify/hf_forward.py (finite logits, and the same
        as on gen_random's file: the files are the same bytes)."""
        out = os.path.join(self.dir, "fw.mlb")
        r = run_tool("convert.py", self.hf["qwen2-tiny"], out, "-q", "--no-tokenizer")
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = [1, 5, 9, 77, 499]
        a = hf_forward.forward(hf_forward.load_hf(out), ids)
        b = hf_forward.forward(hf_forward.load_hf(self.ref["qwen2-tiny", "f32"]), ids)
        self.assertTrue(np.all(np.isfinite(a)))
        np.testing.assert_array_equal(a, b)


class Llama3GgufTest(unittest.TestCase):
    """rope_freqs.weight as llama.cpp writes it, without the exporter's parameter keys."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlbl3")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, **args):
        shape = dict(gen_random.preset_args("llama3-tiny"), **args)
        ref = os.path.join(self.dir, name + ".mlb")
        gen_random.generate(ref, "f32", progress=False, **shape)
        path = os.path.join(self.dir, name + ".gguf")
        saved = gguf.LLAMA3_KEYS
        gguf.LLAMA3_KEYS = ()  # llama.cpp writes no parameters, only the tensor
        try:
            gguf.write_gguf(gen_random.RandomReader(**shape), path)
        finally:
            gguf.LLAMA3_KEYS = saved
        return ref, path

    def test_llama32_parameters_recognised(self):
        ref, path = self.write("l32", rope_original_max_seq=8192)
        out = os.path.join(self.dir, "o.mlb")
        r = run_tool("convert.py", path, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rope_freqs.weight: Llama 3 RoPE scaling with factor 32", r.stderr)
        self.assertEqual(read_bytes(out), read_bytes(ref))

    def test_scaling_type_llama3_with_tensor_accepted(self):
        ref, path = self.write("l32t", rope_original_max_seq=8192)
        g = gguf.GgufFile(path)
        w = gguf.GgufWriter(os.path.join(self.dir, "t.gguf"))
        for k, v in g.metadata.items():
            w.add(k, g.value_types[k], v)
        w.add("llama.rope.scaling.type", gguf.T_STRING, "llama3")
        for name, ti in g.tensors.items():
            w.add_tensor(name, gguf.GGML_TYPES[ti.ggml_type], ti.shape)
        w.write(lambda name: g.raw_tensor(name).float_chunks())
        g.close()
        out = os.path.join(self.dir, "o.mlb")
        r = run_tool("convert.py", os.path.join(self.dir, "t.gguf"), out, "-q")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(read_bytes(out), read_bytes(ref))

    def test_other_parameters_refused(self):
        _, path = self.write("l64")  # original context 64: not recoverable from the tensor alone
        r = run_tool("convert.py", path, os.path.join(self.dir, "o.mlb"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("tensor rope_freqs.weight: RoPE frequency divisors that are not Llama 3's",
                      r.stderr)


class RefusalTest(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mlbref")
        cls.tok = tokenizer_with(500, os.path.join(cls.dir, "t500.bin"))
        cls.hf = {}
        for p in PRESETS:
            cls.hf[p] = os.path.join(cls.dir, "hf_" + p)
            export.export("random:" + p, cls.hf[p], "hf", tokenizer=cls.tok if p == "qwen2-tiny" else None)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def refused(self, src, needle):
        out = os.path.join(self.dir, "x.mlb")
        r = run_tool("convert.py", src, out)
        self.assert_one_line_error(r, needle)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertFalse(os.path.exists(out))

    def hf_case(self, preset, needle, drop=(), extra_tensor=None, **config):
        folder = os.path.join(self.dir, "case")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.hf[preset], folder)
        cpath = os.path.join(folder, "config.json")
        cfg = read_json(cpath)
        cfg.update(config)
        for k in drop:
            cfg.pop(k, None)
        with open(cpath, "w") as f:
            json.dump(cfg, f)
        if extra_tensor:
            st = load_st(folder)
            st[extra_tensor] = np.ones(64, np.float32)
            save_st(folder, st)
        self.refused(folder, needle)

    def test_hf_refusals(self):
        self.hf_case("qwen2-tiny", "use_sliding_window = true", use_sliding_window=True)
        self.hf_case("qwen2-tiny", "tensor model.layers.0.self_attn.q_proj.bias (F32) is not "
                     "part of the Qwen3 architecture", model_type="qwen3")
        self.hf_case("qwen3-tiny", "model_type = 'qwen3_moe': mixture-of-experts", model_type="qwen3_moe")
        self.hf_case("qwen3-tiny", "head_dim = 25 must be even", head_dim=25)
        self.hf_case("qwen3-tiny", "tensor model.layers.0.self_attn.q_proj.weight (F32) has shape "
                     "96x64, expected 128x64", head_dim=32)
        self.hf_case("qwen3-tiny", "tensor model.layers.0.self_attn.q_norm.weight (F32) is not part "
                     "of the Llama architecture", model_type="llama", drop=("head_dim",))
        self.hf_case("qwen2-tiny", "tensor model.layers.0.self_attn.q_norm.weight (F32) is not "
                     "part of the Qwen2 architecture", extra_tensor="model.layers.0.self_attn.q_norm.weight")
        self.hf_case("qwen2-tiny", "head_dim = 32 differs from hidden_size / num_attention_heads",
                     head_dim=32)
        self.hf_case("llama3-tiny", "rope_scaling = {\"rope_type\": \"yarn\", \"factor\": 4.0}: "
                     "rope_type \"yarn\" is not supported", rope_scaling={"rope_type": "yarn", "factor": 4.0})
        self.hf_case("llama3-tiny", "rope_scaling.original_max_position_embeddings = null",
                     rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0})
        self.hf_case("llama3-tiny", "attention_bias = true", attention_bias=True)
        self.hf_case("llama3-tiny", "mlp_bias = true", mlp_bias=True)
        self.hf_case("llama3-tiny", "tensor model.layers.0.self_attn.q_proj.bias (F32) is not part "
                     "of the Llama architecture", extra_tensor="model.layers.0.self_attn.q_proj.bias")
        self.hf_case("llama3-tiny", "model_type 'mistral') is not supported", model_type="mistral")

    def test_hf_qwen2_bias_missing(self):
        folder = os.path.join(self.dir, "nobias")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.hf["qwen2-tiny"], folder)
        st = load_st(folder)
        del st["model.layers.1.self_attn.k_proj.bias"]
        save_st(folder, st)
        self.refused(folder, "missing tensor model.layers.1.self_attn.k_proj.bias")

    def gguf_case(self, preset, needle, kv=None, drop_tensors=(), arch=None):
        """Rewrite an exported GGUF with changed metadata (a minimal re-writer using gguf.py's
        parser and writer primitives)."""
        src = os.path.join(self.dir, preset + ".gguf")
        if not os.path.exists(src):
            export.export("random:" + preset, src, "gguf",
                          tokenizer=self.tok if preset == "qwen2-tiny" else None)
        g = gguf.GgufFile(src)
        w = gguf.GgufWriter(os.path.join(self.dir, "case.gguf"))
        for k, v in g.metadata.items():
            t = g.value_types[k]
            if arch and k == "general.architecture":
                v = arch
            if arch and k.startswith(g.metadata["general.architecture"] + "."):
                k = arch + k[k.index("."):]
            if t == gguf.T_ARRAY or k in (kv or {}):
                continue
            w.add(k, t, v)
        for k, (t, v) in (kv or {}).items():
            w.add(k, t, v)
        for name, ti in g.tensors.items():
            if name not in drop_tensors:
                w.add_tensor(name, gguf.GGML_TYPES[ti.ggml_type], ti.shape)
        w.write(lambda name: g.raw_tensor(name).float_chunks())
        g.close()
        self.refused(os.path.join(self.dir, "case.gguf"), needle)

    def test_gguf_refusals(self):
        self.gguf_case("qwen2-tiny", "tensor blk.0.attn_q.bias (F32) is not part of the qwen3 "
                       "architecture", arch="qwen3")
        self.gguf_case("qwen3-tiny", "general.architecture = 'qwen3moe': mixture-of-experts",
                       arch="qwen3moe")
        self.gguf_case("qwen3-tiny", "missing tensor blk.1.attn_k_norm.weight",
                       drop_tensors=("blk.1.attn_k_norm.weight",))
        self.gguf_case("qwen3-tiny", "metadata qwen3.attention.value_length = 24 differs from the "
                       "head size 32 (attention.key_length)",
                       kv={"qwen3.attention.key_length": (gguf.T_U32, 32)})
        self.gguf_case("qwen3-tiny", "metadata qwen2.attention.key_length = 24 differs from the "
                       "head size 16 (embedding_length / head_count)", arch="qwen2")
        self.gguf_case("llama3-tiny", "metadata llama.rope.scaling.type = 'linear'",
                       kv={"llama.rope.scaling.type": (gguf.T_STRING, "linear")})
        self.gguf_case("qwen2-tiny", "metadata qwen2.attention.sliding_window = 4096",
                       kv={"qwen2.attention.sliding_window": (gguf.T_U32, 4096)})
        self.gguf_case("qwen2-tiny", "missing tensor blk.0.attn_q.bias",
                       drop_tensors=("blk.0.attn_q.bias",))
        self.gguf_case("llama3-tiny", "metadata llama.attention.key_length = 64 differs",
                       kv={"llama.attention.key_length": (gguf.T_U32, 64)})


if __name__ == "__main__":
    unittest.main()
