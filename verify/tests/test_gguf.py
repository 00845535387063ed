#!/usr/bin/python3
"""GGUF files run as they are (runtime/gguf.h): ml_run, ml_tokenize and ml_bench take a .gguf.

- stories260K.gguf (F32 weights, a SentencePiece tokenizer in its metadata), no -z: llama2.c's
  golden text, byte for byte.
- GGUFs written by tools/export.py (F16, BF16, Q8_0, Q4_0; llama with tok512's SentencePiece
  tokenizer, and qwen2 — q/k rows and biases in Hugging Face's half-split order — with a
  byte-level tokenizer of fewer tokens than the 544-row vocabulary, padded with [PAD<i>] as llama.cpp
  pads): the logits of the GGUF run directly are bit for bit those of the .mlb tools/convert.py
  makes of it (the outside-tested converter), the generated text the same, and ml_tokenize on the
  GGUF gives the ids of the tokenizer file convert.py writes. F16/BF16 compare with --reference:
  convert.py pads hidden_dim 172 to 192 and the build's matvec_f32 may sum a padded row in another
  order (kernels/kernels.h); the scalar reference sums left to right, so zeros change nothing.
- qwen3 (head_dim 24 under dim 64 / 4 heads, per-head q/k norms) F32 and Q8_0, as the qwen2 case.
- A Q8_0 GGUF whose ffn_down stays F16 (K = 172, as llama.cpp keeps a matrix it cannot quantize)
  runs, its products quantizing only the activations of quantized matrices.
- Hostile files (truncated, offsets past the end or overlapping, dimensions that overflow, a type
  id out of range, an unsupported type, merges naming unknown tokens, absurd array lengths): one
  line naming the field, exit status 2, nothing on stdout.
Environment: ML_RUN, ML_TOKENIZE, ML_EMULATOR ('|'-separated), ML_MODELS, ML_SHARED, ML_SOURCE.
"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest

RUN = os.environ.get("ML_RUN", "")
TOKENIZE = os.environ.get("ML_TOKENIZE", "")
EMU = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
SHARED = os.environ.get("ML_SHARED", "")
SOURCE = os.environ.get("ML_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "tools"))
import bpe  # noqa: E402
import gguf  # noqa: E402

S260 = os.path.join(SHARED, "models", "stories260K")
GOLDEN = os.path.join(SHARED, "golden", "once_upon_a_time.txt")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
CORPUS = ["Once upon a time there was a little girl named Lily.", "Hello world, hello there! 123 4567",
          "<|im_start|>user\nHi<|im_end|>\n", "  spaces\tand\nnewlines  ", "caf\u00e9 na\u00efve \u00fcber \u4f60\u597d",
          "", "It's 10:30, isn't it?"]


def run(*args, timeout=300):
    return subprocess.run(EMU + list(args), capture_output=True, timeout=timeout)


def tool(name, *args):
    r = subprocess.run([PY, os.path.join(SOURCE, "tools", name), *args], capture_output=True)
    if r.returncode != 0:
        raise AssertionError("%s %s failed: %s" % (name, " ".join(args), r.stderr.decode()))


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not RUN or not os.path.exists(RUN):
            raise unittest.SkipTest("ML_RUN is not set to a built ml_run")
        if not os.path.exists(os.path.join(S260, "stories260K.gguf")):
            print("\n*** SKIPPED: %s is absent (the shared data folder); see README.md\n" % S260, file=sys.stderr)
            raise unittest.SkipTest("shared data absent")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def ok(self, r):
        self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace"))
        return r

    def logits(self, model, *args):
        out = self.path("logits-%d.f32" % len(os.listdir(self.dir)))
        r = self.ok(run(RUN, model, "-n", "24", "--temp", "0", "-i", "Once upon a time", "--logits", out, *args))
        with open(out, "rb") as f:
            return r.stdout, f.read()

    def same(self, a, b):
        """a and b, each (text, logits bytes) of self.logits, are equal; on failure a short message
        (assertEqual's diff of megabytes of bytes takes minutes)."""
        if a[0] != b[0]:
            self.fail("the texts differ: %r != %r" % (a[0][:200], b[0][:200]))
        if a[1] != b[1]:
            first = next((i for i in range(min(len(a[1]), len(b[1]))) if a[1][i] != b[1][i]), None)
            self.fail("the logits differ (%d and %d bytes; first differing byte %s)" % (len(a[1]), len(b[1]), first))

    def tokenize(self, tok):
        ids = []
        for text in CORPUS:
            ids.append(self.ok(run(TOKENIZE, tok, "-i", text)).stdout)
        return ids


class Runs(Base):
    def test_golden_text_from_the_gguf_alone(self):
        r = self.ok(run(RUN, os.path.join(S260, "stories260K.gguf"), "-n", "200", "--temp", "0", "-i",
                        "Once upon a time"))
        with open(GOLDEN, "rb") as f:
            self.assertEqual(r.stdout, f.read())
        err = r.stderr.decode()
        self.assertIn("GGUF v3 llama", err)
        self.assertIn("36 matrices (36 F32)", err)
        self.assertIn("SentencePiece", err)

    def export_and_convert(self, src, name, dtype, tok, wtype, layout, extra=()):
        g, m = self.path(name + ".gguf"), self.path(name + ".mlb")
        tool("export.py", src, g, "--format", "gguf", "--dtype", dtype, "--tokenizer", tok, *extra)
        tool("convert.py", g, m, "--wtype", wtype, "--layout", layout, "-q")
        return g, m, self.path(name + ".tokenizer.bin")

    def test_llama_float_types_match_the_converter(self):
        for dtype in ("f16", "bf16"):
            with self.subTest(dtype=dtype):
                g, m, t = self.export_and_convert(os.path.join(S260, "stories260K.bin"), "s_" + dtype, dtype,
                                                  os.path.join(S260, "tok512.bin"), "f32", "rows")
                self.same(self.logits(g, "--reference"), self.logits(m, "-z", t, "--reference"))

    def test_qwen2_quantized_match_the_converter(self):
        src, tok = self.path("qwen_src.mlb"), self.path("q.mltk")
        texts = ["Once upon a time there was a little girl named Lily who liked 123 apples.",
                 "Hello world, hello there! It's a caf\u00e9."] * 30
        v = bpe.train(texts, 300, bpe.PRE_QWEN2, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        n = len(v.tokens)
        self.assertLess(n, 544)  # fewer than the vocabulary's rows: the GGUF pads them with [PAD<i>]
        tool("gen_random.py", src, "--preset", "qwen2-tiny", "--n-tokens", str(n), "--seed", "5", "-q")
        with open(tok, "wb") as f:
            f.write(v.to_mltk())
        for dtype in ("q8_0", "q4_0"):
            with self.subTest(dtype=dtype):
                g, m, t = self.export_and_convert(src, "qwen_" + dtype, dtype, tok, dtype, "panel16")
                self.same(self.logits(g), self.logits(m, "-z", t))
                self.same(self.logits(g, "-t", "1"), self.logits(m, "-z", t, "-t", "1"))
                if TOKENIZE and os.path.exists(TOKENIZE):
                    self.assertEqual(self.tokenize(g), self.tokenize(t))
        err = run(RUN, self.path("qwen_q4_0.gguf"), "-n", "2").stderr.decode()
        self.assertIn("GGUF v3 qwen2", err)
        self.assertIn("15 matrices (15 Q4_0)", err)
        self.assertIn("byte-level BPE ('gpt2'), %d tokens" % n, err)

    def test_qwen3_matches_the_converter(self):
        # head_dim 24 != dim 64 / 4 heads, per-head q/k norms in the half-split order llama.cpp keeps
        src, tok = self.path("qwen3_src.mlb"), self.path("q3.mltk")
        tool("gen_random.py", src, "--preset", "qwen3-tiny", "--seed", "3", "-q")
        v = bpe.train(["Once upon a time there was a little girl named Lily."] * 20, 40, bpe.PRE_QWEN2,
                      ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        with open(tok, "wb") as f:
            f.write(v.to_mltk())
        for dtype, layout in (("f32", "rows"), ("q8_0", "panel16")):
            with self.subTest(dtype=dtype):
                g, m = self.path("q3_%s.gguf" % dtype), self.path("q3_%s.mlb" % dtype)
                tool("export.py", src, g, "--format", "gguf", "--dtype", dtype)
                tool("convert.py", g, m, "--wtype", dtype, "--layout", layout, "--no-tokenizer", "-q")
                self.same(self.logits(g, "-z", tok), self.logits(m, "-z", tok))
        self.assertIn("GGUF v3 qwen3", run(RUN, g, "-z", tok, "-n", "2").stderr.decode())

    def test_llama_tokenizer_matches_the_converter(self):
        if not TOKENIZE or not os.path.exists(TOKENIZE):
            self.skipTest("ML_TOKENIZE absent")
        self.assertEqual(self.tokenize(os.path.join(S260, "stories260K.gguf")),
                         self.tokenize(os.path.join(S260, "tok512.bin")))

    def test_quantized_with_a_float_matrix(self):
        g = self.path("s_q8_0.gguf")
        tool("export.py", os.path.join(S260, "stories260K.bin"), g, "--format", "gguf", "--dtype", "q8_0",
             "--tokenizer", os.path.join(S260, "tok512.bin"))
        r = self.ok(run(RUN, g, "-n", "60", "--temp", "0", "-i", "Once upon a time"))
        self.assertTrue(r.stdout.startswith(b"Once upon a time, there was a little girl named Lily."), r.stdout)
        self.assertIn("36 matrices (5 F16, 31 Q8_0)", r.stderr.decode())

    def test_cache(self):
        g = self.path("s_q4_0.gguf")
        tool("export.py", os.path.join(S260, "stories260K.bin"), g, "--format", "gguf", "--dtype", "q4_0",
             "--tokenizer", os.path.join(S260, "tok512.bin"))
        cache = self.path("cache")
        want = self.logits(g)
        first = run(RUN, g, "--cache", cache, "-n", "2").stderr.decode()
        self.assertIn("repacked into 16-row panels", first)
        self.assertIn("kept in the cache", first)
        files = os.listdir(cache)
        self.assertEqual(len(files), 1)
        self.assertTrue(files[0].startswith("s_q4_0.gguf.") and files[0].endswith(".mlcache"), files)
        second = run(RUN, g, "--cache", cache, "-n", "2").stderr.decode()
        self.assertIn("mapped, not converted", second)
        self.assertIn("mapped from the cache", second)
        self.same(self.logits(g, "--cache", cache), want)
        # A cache whose header is not this file's is not used, and is written anew.
        c = os.path.join(cache, files[0])
        with open(c, "r+b") as f:
            f.seek(8)
            f.write(b"\0" * 8)
        third = run(RUN, g, "--cache", cache, "-n", "2").stderr.decode()
        self.assertIn("kept in the cache", third)
        self.same(self.logits(g, "--cache", cache), want)
        # A changed file has another key: a second cache file, the old one left alone.
        with open(g, "ab") as f:
            f.write(b"\0" * 32)
        fourth = run(RUN, g, "--cache", cache, "-n", "2").stderr.decode()
        self.assertIn("kept in the cache", fourth)
        self.assertEqual(len(os.listdir(cache)), 2)
        # A folder that cannot be made: said in the note, the model runs.
        r = self.ok(run(RUN, g, "--cache", self.path("no/such/dir"), "-n", "2"))
        self.assertIn("not cached: cannot write", r.stderr.decode())

    def test_mlb_still_needs_a_tokenizer(self):
        m = self.path("t.mlb")
        tool("convert.py", os.path.join(S260, "stories260K.bin"), m, "--no-tokenizer", "-q")
        r = run(RUN, m, "-n", "4")
        self.assertEqual(r.returncode, 6)
        self.assertIn(b"no tokenizer given: pass -z", r.stderr)


# ---- hostile files: a small valid GGUF, re-serialized with one field wrong

T_U32, T_STRING, T_ARRAY = gguf.T_U32, gguf.T_STRING, gguf.T_ARRAY


def serialize(kv, tensors, data, version=3, align=32, n_kv=None, n_tensors=None):
    """kv: [(key, type, value)] (type as tools/gguf.py: an int or (T_ARRAY, item)); tensors:
    [(name, ne list, ggml type, offset)]; data: the data section's bytes."""
    out = [struct.pack("<4sIQQ", b"GGUF", version, len(tensors) if n_tensors is None else n_tensors,
                       len(kv) if n_kv is None else n_kv)]
    for k, t, v in kv:
        out.append(gguf._pack_string(k))
        out.append(struct.pack("<I", T_ARRAY if isinstance(t, tuple) else t))
        out.append(v if isinstance(v, bytes) and t == "raw" else gguf._pack_value(t, v))
    for name, ne, ty, off in tensors:
        out.append(gguf._pack_string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne) +
                   struct.pack("<IQ", ty, off))
    head = b"".join(out)
    return head + bytes(-len(head) % align) + data


class Hostile(Base):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        g = gguf.GgufFile(os.path.join(S260, "stories260K.gguf"))
        cls.kv = [(k, g.value_types[k] if g.value_types[k] != T_ARRAY else cls.array_type(g.metadata[k]),
                   g.metadata[k]) for k in g.metadata]
        with open(os.path.join(S260, "stories260K.gguf"), "rb") as f:
            raw = f.read()
        cls.data = raw[g.data_offset:]
        cls.tensors = [(t.name, list(t.dims), t.ggml_type, t.offset) for t in g.tensors.values()]

    @staticmethod
    def array_type(v):
        if isinstance(v, list):
            return (T_ARRAY, T_STRING)
        return (T_ARRAY, {"f": gguf.T_F32, "i": gguf.T_I32, "u": gguf.T_U32}[v.dtype.kind])

    def write(self, blob, name="bad.gguf"):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(blob)
        return p

    def refused(self, blob, *needles, code=2):
        p = self.write(blob)
        r = run(RUN, p, "-n", "4")
        err = r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, code, err)
        self.assertEqual(r.stdout, b"")
        self.assertEqual(err.count("\n"), 1, err)
        for n in needles:
            self.assertIn(n, err)
        return err

    def good(self, **kw):
        return serialize(kw.get("kv", self.kv), kw.get("tensors", self.tensors), kw.get("data", self.data))

    def test_the_rebuilt_file_runs(self):  # the baseline of every case below
        r = self.ok(run(RUN, self.write(self.good(), "good.gguf"), "-n", "200", "--temp", "0", "-i", "Once upon a time"))
        with open(GOLDEN, "rb") as f:
            self.assertEqual(r.stdout, f.read())

    def test_truncated(self):
        blob = self.good()
        for cut, needle in ((10, "too short for a GGUF header"), (60, "n_kv = 19"), (400, "n_tensors = 48"), (len(blob) // 3, "truncated"),
                            (len(blob) - 100, "runs past the end of the file")):
            with self.subTest(cut=cut):
                self.refused(blob[:cut], needle)

    def test_tensor_offset_past_the_end(self):
        t = [list(x) for x in self.tensors]
        t[3][3] = len(self.data) + 64
        self.refused(self.good(tensors=[tuple(x) for x in t]), "tensor " + t[3][0], "runs past the end")

    def test_overlapping_tensors(self):
        t = [list(x) for x in self.tensors]
        t[5][3] = t[4][3]
        self.refused(self.good(tensors=[tuple(x) for x in t]), "overlap")

    def test_sizes_that_overflow(self):
        t = [list(x) for x in self.tensors]
        t[2][1] = [1 << 40, 1 << 40]
        self.refused(self.good(tensors=[tuple(x) for x in t]), "tensor " + t[2][0], "dimension 0")
        t[2][1] = [(1 << 31) - 1, (1 << 31) - 1, (1 << 31) - 1, (1 << 31) - 1]
        self.refused(self.good(tensors=[tuple(x) for x in t]), "tensor " + t[2][0])

    def test_type_id_out_of_range(self):
        t = [list(x) for x in self.tensors]
        t[1][2] = 99
        self.refused(self.good(tensors=[tuple(x) for x in t]), "tensor " + t[1][0], "type id 99")

    def test_unsupported_type_is_named(self):
        t = [list(x) for x in self.tensors]
        i = next(k for k, x in enumerate(t) if x[0] == "blk.0.attn_q.weight")
        t[i][2] = 20  # IQ4_NL: 32-element blocks of 18 bytes, as the F32 data's first bytes can hold
        err = self.refused(self.good(tensors=[tuple(x) for x in t]), "blk.0.attn_q.weight", "IQ4_NL")
        self.assertIn("F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K", err)
        t[i][2] = 10  # Q2_K: 256-element blocks; 64 columns are not a whole block
        self.refused(self.good(tensors=[tuple(x) for x in t]), "blk.0.attn_q.weight", "Q2_K", "not a multiple of its block")

    def test_absurd_array_length(self):
        kv = [(k, t, v) for k, t, v in self.kv if k != "tokenizer.ggml.scores"]
        blob = serialize(kv, self.tensors, self.data)
        key = gguf._pack_string("tokenizer.ggml.scores") + struct.pack("<IIQ", T_ARRAY, gguf.T_F32, 1 << 60)
        head = struct.pack("<4sIQQ", b"GGUF", 3, len(self.tensors), len(kv) + 1)
        self.refused(head + blob[24:24] + key + blob[24:], "tokenizer.ggml.scores", "array of")

    def test_counts_larger_than_the_file(self):
        blob = self.good()
        self.refused(blob[:8] + struct.pack("<Q", 1 << 50) + blob[16:], "n_tensors")
        self.refused(blob[:16] + struct.pack("<Q", 1 << 50) + blob[24:], "n_kv")

    def test_value_type_out_of_range(self):
        plain = self.good()
        infos_at = 24 + sum(len(gguf._pack_string(k)) + 4 + len(gguf._pack_value(t, v)) for k, t, v in self.kv)
        extra = gguf._pack_string("x.bad") + struct.pack("<I", 13)
        blob = plain[:16] + struct.pack("<Q", len(self.kv) + 1) + plain[24:infos_at] + extra + plain[infos_at:]
        self.refused(blob, "metadata x.bad", "value type 13")

    def test_wrong_shape_is_named(self):
        t = [list(x) for x in self.tensors]
        i = next(k for k, x in enumerate(t) if x[0] == "blk.1.ffn_up.weight")
        t[i][1] = list(reversed(t[i][1]))
        self.refused(self.good(tensors=[tuple(x) for x in t]), "blk.1.ffn_up.weight", "expected 172x64")

    def test_missing_tensor_and_key(self):
        t = [x for x in self.tensors if x[0] != "blk.2.attn_v.weight"]
        self.refused(self.good(tensors=t), "missing tensor blk.2.attn_v.weight")
        kv = [x for x in self.kv if x[0] != "llama.attention.layer_norm_rms_epsilon"]
        self.refused(self.good(kv=kv), "missing metadata key llama.attention.layer_norm_rms_epsilon")

    def gpt2_kv(self, merges):
        kv = [x for x in self.kv if not x[0].startswith("tokenizer.")]
        toks = [bpe.remap(bytes([b])).encode() for b in range(256)]
        toks += [bpe.remap(b"ab").encode()] + [b"[PAD%d]" % i for i in range(257, 512)]
        types = [1] * 257 + [5] * 255
        return kv + [("tokenizer.ggml.model", T_STRING, "gpt2"), ("tokenizer.ggml.pre", T_STRING, "qwen2"),
                     ("tokenizer.ggml.tokens", (T_ARRAY, T_STRING), toks),
                     ("tokenizer.ggml.token_type", (T_ARRAY, gguf.T_I32), types),
                     ("tokenizer.ggml.merges", (T_ARRAY, T_STRING), merges)]

    def test_merges_naming_unknown_tokens(self):
        ok = self.good(kv=self.gpt2_kv([b"a b"]))
        self.ok(run(RUN, self.write(ok, "gpt2.gguf"), "-n", "4", "-i", "abab"))
        self.refused(self.good(kv=self.gpt2_kv([b"a b", b"q z"])), "tokenizer.ggml.merges[1]", "not a token")
        self.refused(self.good(kv=self.gpt2_kv([b"ab"])), "tokenizer.ggml.merges[0]", "not two tokens")

    def test_architecture_not_supported(self):
        kv = [(k, t, "gemma" if k == "general.architecture" else v) for k, t, v in self.kv]
        self.refused(self.good(kv=kv), "general.architecture = 'gemma'")


if __name__ == "__main__":
    unittest.main()
