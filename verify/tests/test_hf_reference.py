#!/usr/bin/python3
"""Our F32 logits against an outside formulation: verify/hf_forward.py (float64, Hugging Face's
Qwen2 / Llama 3 equations on the un-permuted weights) on random-weight fixtures of the qwen2-tiny
(q/k/v biases, GQA 4:1, n_tokens < vocab, theta 1e6) and llama3-tiny (llama3 RoPE scaling in all
three bands, GQA 4:1, theta 5e5) shapes, over 32 positions, for ml_run with the scalar reference
kernels and with the build's kernels (through ML_EMULATOR, so cross builds run under qemu/node).
Passes when max |ours - HF| <= 1e-4 (logits of order 1). Also prints the Q8_0/Q4_0 files'
teacher-forced top-1 agreement with the F32 file (stated, not checked: random weights).

Run by CTest (cmake/Tests.cmake) with ML_RUN, ML_EMULATOR ('|'-separated, may be empty), ML_MODELS.
"""
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

RUN = os.environ.get("ML_RUN", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
MODELS = os.environ.get("ML_MODELS", "")
POSITIONS = 32
TOL = 1e-4
FIXTURES = ("qwen2_tiny", "llama3_tiny")


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
        """The check can fail: the model without its biases / without the llama3 scaling, or with
        q/k left in interleaved order, is far from our logits (>> TOL)."""
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


if __name__ == "__main__":
    unittest.main()
