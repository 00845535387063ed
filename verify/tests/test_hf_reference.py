#!/usr/bin/python3
"""Our F32 logits against an outside formulation: verify/hf_forward.py (float64, Hugging Face's
Qwen2 / Llama 3 equations on the un-permuted weights) on random-weight fixtures of the qwen2-tiny
(q/k/v biases, GQA 4:1, n_tokens < vocab, theta 1e6) and llama3-tiny (llama3 RoPE scaling in all
three bands, GQA 4:1, theta 5e5) shapes, over 32 positions, for ml_run with the scalar reference
kernels and with the build's kernels (through ML_EMULATOR, so cross builds run under qemu/node).
Passes when max |ours - HF| <= 1e-4 (logits of order 1). Also prints the Q8_0/Q4_0 files'
teacher-forced top-1 agreement with the F32 file (stated, not checked: random weights).

The qwen3_tiny fixture (gen_random's qwen3-tiny: head_dim 24 != 64 / 4, q/k norm) runs the same
checks. Qwen3 (Qwen3Reference): a random tiny Qwen3 made here in Hugging Face's own layout (head_dim 24
with hidden_size 64 and 4 heads, GQA 2:1, q_norm/k_norm, tied embeddings), written as a
safetensors folder (Qwen3ForCausalLM config.json) and as a GGUF `qwen3` the way llama.cpp's
converter writes one (HF's q/k row order kept, attention.key_length = head_dim), each converted by
tools/convert.py; the two .mlb files must be the same bytes, and ml_run's F32 logits (scalar
reference and build kernels) must be within 1e-4 of hf_forward.py's on the HF weights themselves.

Run by CTest (cmake/Tests.cmake) with ML_RUN, ML_EMULATOR ('|'-separated, may be empty), ML_MODELS.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import numpy as np  # noqa: E402
import hf_forward  # noqa: E402
import gguf  # noqa: E402  (tools/, on the path through hf_forward: the GGUF container writer only)
import rawtensor  # noqa: E402

RUN = os.environ.get("ML_RUN", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
MODELS = os.environ.get("ML_MODELS", "")
POSITIONS = 32
TOL = 1e-4
FIXTURES = ("qwen2_tiny", "llama3_tiny", "qwen3_tiny")


def model(name):
    return os.path.join(MODELS, name)


def token_ids(n_tokens, seed):
    """BOS, then ids drawn from the tokenizer's range without BOS (ml_run stops at a BOS)."""
    rng = np.random.default_rng(seed)
    ids = [1]
    while len(ids) < POSITIONS:
        t = int(rng.integers(0, n_tokens))
        if t != 1:
            ids.append(t)
    return ids


def write_tokenizer(path, n):
    """A llama2.c tokenizer.bin with n pieces (ml_run needs one; --token-ids skips encoding)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<i", 8))
        for i in range(n):
            p = b"t%d" % i
            f.write(struct.pack("<fi", 0.0, len(p)) + p)


def ml_run_logits(path, ids, vocab, n_tokens, reference, d):
    tok = os.path.join(d, "tok%d.bin" % n_tokens)
    if not os.path.exists(tok):
        write_tokenizer(tok, n_tokens)
    out = os.path.join(d, "logits.f32")
    args = [path, "-z", tok, "--token-ids", " ".join(map(str, ids)), "-n", str(len(ids)),
            "--temp", "0", "-t", "1", "--logits", out] + (["--reference"] if reference else [])
    r = subprocess.run(EMU + [RUN] + args, capture_output=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError("ml_run %s failed (%d): %s" % (" ".join(args), r.returncode,
                                                           r.stderr.decode("utf-8", "replace")))
    logits = np.fromfile(out, dtype="<f4")
    assert logits.size == len(ids) * vocab, (logits.size, len(ids), vocab)
    return logits.reshape(len(ids), vocab).astype(np.float64), r.stderr.decode("utf-8", "replace")


class HfReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RUN or not os.path.exists(RUN):
            raise unittest.SkipTest("ML_RUN is not set to a built ml_run")

    def header(self, name):
        return hf_forward.mlb.MlbFile(model(name + "_f32.mlb")).header

    def test_f32_logits_match_hugging_face_equations(self):
        with tempfile.TemporaryDirectory() as d:
            for i, name in enumerate(FIXTURES):
                h = self.header(name)
                n_tokens = h.n_tokens or h.vocab
                ids = token_ids(n_tokens, 100 + i)
                hf = hf_forward.forward(hf_forward.load_hf(model(name + "_f32.mlb")), ids)
                scale = np.abs(hf).max()
                self.assertTrue(0.5 < scale < 20, "%s: logits should be of order 1, max |logit| %.3f"
                                % (name, scale))
                for reference in (True, False):
                    ours, err = ml_run_logits(model(name + "_f32.mlb"), ids, h.vocab, n_tokens,
                                              reference, d)
                    diff = np.abs(ours - hf).max()
                    print("%s F32 (%s kernels): max |ours - HF float64| = %.3g over %d positions x %d "
                          "(max |logit| %.2f)" % (name, "scalar reference" if reference else "build",
                                                  diff, len(ids), h.vocab, scale))
                    self.assertLessEqual(diff, TOL, name)
                    self.assertIn(hf_forward.mlb.ARCH_NAMES[h.arch], err.split("\n")[0], "load line names the arch")

    def test_the_reference_sees_what_it_checks(self):
        """The check can fail: the model without its biases / without the llama3 scaling, with its
        q norm's entries in the wrong order, or with q/k left in interleaved order, is far from our
        logits (>> TOL)."""
        for i, name in enumerate(FIXTURES):
            h = self.header(name)
            ids = token_ids(h.n_tokens or h.vocab, 100 + i)
            m = hf_forward.load_hf(model(name + "_f32.mlb"))
            good = hf_forward.forward(m, ids)
            if h.qkv_bias:
                for b in ("q", "k", "v"):
                    w = dict(m.weights)
                    del w["model.layers.0.self_attn.%s_proj.bias" % b]
                    off = np.abs(hf_forward.forward(hf_forward.HfModel(m.config, w), ids) - good).max()
                    print("%s without layer 0's b%s: max diff %.3g" % (name, b, off))
                    self.assertGreater(off, 100 * TOL)
            if h.rope_scaling:
                c = dict(m.config, rope_scaling=None)
                off = np.abs(hf_forward.forward(hf_forward.HfModel(c, m.weights), ids) - good).max()
                print("%s without llama3 RoPE scaling: max diff %.3g" % (name, off))
                self.assertGreater(off, 100 * TOL)
            if h.qk_norm:  # Qwen3: the q norm's entries in the .mlb's order, not HF's
                w = dict(m.weights)
                qn = "model.layers.0.self_attn.q_norm.weight"
                w[qn] = hf_forward.interleaved_to_half_split(w[qn], 1)  # twice
                off = np.abs(hf_forward.forward(hf_forward.HfModel(m.config, w), ids) - good).max()
                print("%s with layer 0's q_norm permuted wrongly: max diff %.3g" % (name, off))
                self.assertGreater(off, 100 * TOL)
            w = dict(m.weights)
            k = "model.layers.0.self_attn.k_proj.weight"
            w[k] = hf_forward.interleaved_to_half_split(w[k], m.config["num_key_value_heads"])  # twice
            off = np.abs(hf_forward.forward(hf_forward.HfModel(m.config, w), ids) - good).max()
            print("%s with layer 0's wk rows permuted wrongly: max diff %.3g" % (name, off))
            self.assertGreater(off, 100 * TOL)

    def test_quantized_teacher_forced_agreement_stated(self):
        with tempfile.TemporaryDirectory() as d:
            for i, name in enumerate(FIXTURES):
                h = self.header(name)
                n_tokens = h.n_tokens or h.vocab
                ids = token_ids(n_tokens, 100 + i)
                f32, _ = ml_run_logits(model(name + "_f32.mlb"), ids, h.vocab, n_tokens, False, d)
                top = f32.argmax(axis=1)
                for w in ("q8_0", "q4_0"):
                    q, _ = ml_run_logits(model(name + "_" + w + ".mlb"), ids, h.vocab, n_tokens, False, d)
                    agree = float((q.argmax(axis=1) == top).mean())
                    print("%s %s: teacher-forced top-1 agreement with F32 %.1f %% of %d positions; "
                          "max |logit diff| %.3f" % (name, w, 100 * agree, len(ids), np.abs(q - f32).max()))
                    self.assertGreater(agree, 0.0)  # stated, not a floor; zero would be a broken file


# ------------------------------------------------------------------------------------- Qwen3

QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64,
         "intermediate_size": 192, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 24, "vocab_size": 384,
         "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
         "rope_scaling": None, "tie_word_embeddings": True, "attention_bias": False,
         "hidden_act": "silu", "use_sliding_window": False, "sliding_window": None,
         "torch_dtype": "float32"}


def qwen3_weights(c, seed=32):
    """{HF name: float32 array} of a random Qwen3: matrices ~ N(0, 1/fan_in), norms ~ 1 + N(0, 0.05^2),
    q_norm/k_norm ~ 1 + N(0, 0.5^2) (uneven, as real ones: a wrong order of their entries shows)."""
    rng = np.random.default_rng(seed)
    D, F, hd = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(n, std=0.05):
        return (1 + std * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": mat(c["vocab_size"], D), "model.norm.weight": norm(D)}
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        w.update({p + "input_layernorm.weight": norm(D), p + "self_attn.q_proj.weight": mat(nh * hd, D),
                  p + "self_attn.k_proj.weight": mat(nkv * hd, D), p + "self_attn.v_proj.weight": mat(nkv * hd, D),
                  p + "self_attn.q_norm.weight": norm(hd, 0.5), p + "self_attn.k_norm.weight": norm(hd, 0.5),
                  p + "self_attn.o_proj.weight": mat(D, nh * hd), p + "post_attention_layernorm.weight": norm(D),
                  p + "mlp.gate_proj.weight": mat(F, D), p + "mlp.up_proj.weight": mat(F, D),
                  p + "mlp.down_proj.weight": mat(D, F)})
    return w


def write_safetensors_folder(folder, config, weights):
    """config.json and model.safetensors (u64 header length, JSON header, F32 data), as written by
    transformers' save_pretrained."""
    os.makedirs(folder, exist_ok=True)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, a in weights.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    text = json.dumps(header).encode("utf-8")
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in weights.values():
            f.write(np.ascontiguousarray(a, "<f4").tobytes())
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


# llama.cpp's tensor names for qwen3 (its convert_hf_to_gguf.py, Qwen3Model: no permutation of the
# q/k rows or of the q/k norm weights; tied embeddings: no output.weight)
GGUF_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.q_norm": "attn_q_norm",
              "self_attn.k_norm": "attn_k_norm", "self_attn.o_proj": "attn_output",
              "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
              "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_name(hf_name):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    p = hf_name.split(".")
    return "blk.%s.%s.weight" % (p[2], GGUF_NAMES[".".join(p[3:-1])])


def write_qwen3_gguf(path, c, weights):
    """A GGUF qwen3 with the metadata keys and tensors llama.cpp's converter writes (F32)."""
    w = gguf.GgufWriter(path)
    w.add("general.architecture", gguf.T_STRING, "qwen3")
    w.add("general.name", gguf.T_STRING, "random tiny qwen3")
    for k, v in (("block_count", c["num_hidden_layers"]), ("context_length", c["max_position_embeddings"]),
                 ("embedding_length", c["hidden_size"]), ("feed_forward_length", c["intermediate_size"]),
                 ("attention.head_count", c["num_attention_heads"]),
                 ("attention.head_count_kv", c["num_key_value_heads"]),
                 ("attention.key_length", c["head_dim"]), ("attention.value_length", c["head_dim"])):
        w.add("qwen3." + k, gguf.T_U32, v)
    w.add("qwen3.rope.freq_base", gguf.T_F32, c["rope_theta"])
    w.add("qwen3.attention.layer_norm_rms_epsilon", gguf.T_F32, c["rms_norm_eps"])
    by_gguf = {gguf_name(n): a for n, a in weights.items()}
    for n, a in by_gguf.items():
        w.add_tensor(n, rawtensor.F32, a.shape)
    w.write(lambda n: [by_gguf[n].reshape(-1, by_gguf[n].shape[-1])])


def convert(src, out):
    conv = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "convert.py")
    r = subprocess.run([sys.executable, conv, src, out, "--no-tokenizer", "-q"], capture_output=True,
                       timeout=300)
    if r.returncode != 0:
        raise AssertionError("convert.py %s failed (%d): %s" % (src, r.returncode,
                                                               r.stderr.decode("utf-8", "replace")))
    with open(out, "rb") as f:
        return f.read()


class Qwen3Reference(unittest.TestCase):
    """A Qwen3 with head_dim != hidden_size / heads, from an HF folder and from GGUF."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.d = cls.tmp.name
        cls.config, cls.weights = QWEN3, qwen3_weights(QWEN3)
        write_safetensors_folder(os.path.join(d, "hf"), cls.config, cls.weights)
        write_qwen3_gguf(os.path.join(d, "m.gguf"), cls.config, cls.weights)
        cls.from_hf = os.path.join(d, "from_hf.mlb")
        cls.from_gguf = os.path.join(d, "from_gguf.mlb")
        cls.bytes = convert(os.path.join(d, "hf"), cls.from_hf), convert(os.path.join(d, "m.gguf"), cls.from_gguf)
        cls.ids = token_ids(cls.config["vocab_size"], 300)
        cls.model = hf_forward.HfModel(cls.config, {k: v.astype(np.float64) for k, v in cls.weights.items()})
        cls.hf = hf_forward.forward(cls.model, cls.ids)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_hf_folder_and_gguf_convert_to_the_same_file(self):
        self.assertEqual(self.bytes[0], self.bytes[1])
        h = hf_forward.mlb.MlbFile(self.from_hf).header
        self.assertEqual((h.version, hf_forward.mlb.ARCH_NAMES[h.arch], h.head_size, h.qk_norm, h.dim, h.n_heads),
                         (3, "qwen3", 24, 1, 64, 4))

    def test_f32_logits_match_hugging_face_equations(self):
        if not RUN or not os.path.exists(RUN):
            self.skipTest("ML_RUN is not set to a built ml_run")
        scale = np.abs(self.hf).max()
        self.assertTrue(0.5 < scale < 20, "logits should be of order 1, max |logit| %.3f" % scale)
        for path, route in ((self.from_hf, "HF folder"), (self.from_gguf, "GGUF")):
            for reference in (True, False):
                ours, err = ml_run_logits(path, self.ids, 384, 384, reference, self.d)
                diff = np.abs(ours - self.hf).max()
                print("qwen3 tiny (head_dim 24, dim 64, 4/2 heads) F32 from the %s (%s kernels): max |ours - "
                      "HF float64| = %.3g over %d positions x 384 (max |logit| %.2f)"
                      % (route, "scalar reference" if reference else "build", diff, len(self.ids), scale))
                self.assertLessEqual(diff, TOL, route)
                self.assertIn("qwen3", err.split("\n")[0], "load line names the arch")
                self.assertIn("4/2 heads of 24", err.split("\n")[0], "load line names the head size")

    def test_the_reference_sees_what_it_checks(self):
        """Without layer 0's q_norm, without its k_norm, or with layer 1's k_norm in the wrong
        (interleaved) order, the reference is far from itself (>> TOL)."""
        w = self.model.weights
        cases = []
        for drop in ("q_norm", "k_norm"):
            v = dict(w)
            del v["model.layers.0.self_attn.%s.weight" % drop]
            cases.append(("without layer 0's " + drop, v))
        v = dict(w)
        k = "model.layers.1.self_attn.k_norm.weight"
        v[k] = hf_forward.interleaved_to_half_split(w[k], 1)
        cases.append(("with layer 1's k_norm permuted wrongly", v))
        for what, weights in cases:
            off = np.abs(hf_forward.forward(hf_forward.HfModel(self.config, weights), self.ids) - self.hf).max()
            print("qwen3 tiny %s: max diff %.3g" % (what, off))
            self.assertGreater(off, 100 * TOL, what)

if __name__ == "__main__":
    unittest.main()
