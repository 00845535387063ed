#!/usr/bin/python3
"""Tests of the GGUF and Hugging Face importers (tools/gguf.py, tools/hf.py, tools/convert.py)
and of tools/export.py.

Run from the repository root:  /usr/bin/python3 -m unittest discover -s tools/tests -v
The shared test models come from $ML_SHARED (default <repo>/../shared); tests that need a
missing one are skipped loudly. The "converts and generates" test runs $ML_RUN (the C++ ml_run,
prefixed by $ML_EMULATOR, a '|'-separated command, when set) and is skipped without it.

Independence: GGUF files are parsed and built here by a separate minimal implementation of the
spec (`parse_gguf`, `build_gguf`); the Hugging Face export of stories260K is written here
(`write_hf`) with transformers' own q/k permutation formula, and that formula is checked
against the two RoPE conventions themselves (`RopeConventionTest`), so a permutation bug in
tools/hf.py cannot be mirrored by its own inverse.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import mlb  # noqa: E402
import convert  # noqa: E402
import export  # noqa: E402
from test_convert import (FileChecks, SHARED, read_bytes, read_llama2c, run_tool,  # noqa: E402
                          write_llama2c)

MODELS = os.path.join(SHARED, "models")
STORIES_BIN = os.path.join(MODELS, "stories260K", "stories260K.bin")
STORIES_GGUF = os.path.join(MODELS, "stories260K", "stories260K.gguf")
TOK512 = os.path.join(MODELS, "stories260K", "tok512.bin")
TOK32K = os.path.join(MODELS, "llama2-tokenizer", "tokenizer.bin")
TINY_GGUF = os.path.join(MODELS, "tiny-random", "llama-2-tiny-random.gguf")

F32, Q8, Q4 = 0, 8, 2
GG_F32, GG_F16, GG_Q4_0, GG_Q8_0, GG_Q4_K, GG_BF16 = 0, 1, 2, 8, 12, 30


def need(*paths):
    for p in paths:
        if not os.path.isfile(p):
            msg = "shared test model not found: %s (set ML_SHARED)" % p
            sys.stderr.write("\n*** SKIPPING: %s ***\n" % msg)
            raise unittest.SkipTest(msg)


# ------------------------------------------------------------ GGUF, independently of gguf.py

def parse_gguf(path):
    """(version, {key: value}, {name: (ggml type, ne dims, absolute data offset)})."""
    b = read_bytes(path)
    pos = [0]

    def rd(fmt):
        v = struct.unpack_from("<" + fmt, b, pos[0])
        pos[0] += struct.calcsize("<" + fmt)
        return v

    def rstr():
        (n,) = rd("Q")
        s = b[pos[0]:pos[0] + n]
        pos[0] += n
        return s

    scal = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q",
            12: "d"}

    def val(t):
        if t in scal:
            return rd(scal[t])[0]
        if t == 8:
            return rstr()
        et, n = rd("IQ")
        return [val(et) for _ in range(n)]

    magic, version, nt, nkv = rd("4sIQQ")
    assert magic == b"GGUF"
    kv = {}
    for _ in range(nkv):
        k = rstr().decode()
        (t,) = rd("I")
        kv[k] = val(t)
    infos = []
    for _ in range(nt):
        name = rstr().decode()
        (nd,) = rd("I")
        dims = rd("%dQ" % nd)
        typ, off = rd("IQ")
        infos.append((name, typ, dims, off))
    align = kv.get("general.alignment", 32)
    base = (pos[0] + align - 1) // align * align
    return version, kv, {n: (t, d, base + o) for n, t, d, o in infos}


def gguf_blocks(path, name):
    """(q, d float32) of a Q8_0/Q4_0 tensor, rows x blocks, read with plain struct/numpy."""
    _, _, tensors = parse_gguf(path)
    t, dims, off = tensors[name]
    cols, rows = dims[0], (dims[1] if len(dims) > 1 else 1)
    bs = 34 if t == GG_Q8_0 else 18
    nb = cols // 32
    raw = np.frombuffer(read_bytes(path), np.uint8, rows * nb * bs, off).reshape(rows, nb, bs)
    d = raw[:, :, :2].copy().view("<f2")[:, :, 0].astype(np.float32)
    q = raw[:, :, 2:].copy()
    if t == GG_Q8_0:
        q = q.view(np.int8).reshape(rows, cols)
    else:
        q = q.reshape(rows, cols // 2)
    return t, q, d


def gguf_floats(path, name):
    """The values of a tensor (F32, F16, Q8_0, Q4_0) as float32 (rows, cols)."""
    _, _, tensors = parse_gguf(path)
    t, dims, off = tensors[name]
    cols, rows = dims[0], (dims[1] if len(dims) > 1 else 1)
    b = read_bytes(path)
    if t == GG_F32:
        return np.frombuffer(b, "<f4", rows * cols, off).reshape(rows, cols)
    if t == GG_F16:
        return np.frombuffer(b, "<f2", rows * cols, off).reshape(rows, cols).astype(np.float32)
    _, q, d = gguf_blocks(path, name)
    if t == GG_Q8_0:
        v = q.reshape(rows, -1, 32).astype(np.float32)
    else:
        qb = q.reshape(rows, -1, 16)
        v = np.concatenate([qb & 15, qb >> 4], axis=2).astype(np.float32) - 8
    return (v * d[:, :, None]).reshape(rows, cols)


def _kv_bytes(key, typ, value):
    out = struct.pack("<Q", len(key)) + key.encode()
    if typ == "str":
        v = value.encode() if isinstance(value, str) else value
        return out + struct.pack("<IQ", 8, len(v)) + v
    if typ == "u32":
        return out + struct.pack("<II", 4, value)
    if typ == "f32":
        return out + struct.pack("<If", 6, value)
    if typ == "arr_str":
        items = b"".join(struct.pack("<Q", len(s)) + s for s in value)
        return out + struct.pack("<IIQ", 9, 8, len(value)) + items
    if typ == "arr_f32":
        return out + struct.pack("<IIQ", 9, 6, len(value)) + np.asarray(value, "<f4").tobytes()
    if typ == "arr_i32":
        return out + struct.pack("<IIQ", 9, 5, len(value)) + np.asarray(value, "<i4").tobytes()
    raise ValueError(typ)


def build_gguf(path, kv, tensors, version=3, alignment=32):
    """kv: [(key, 'str'|'u32'|'f32'|'arr_str'|'arr_f32'|'arr_i32', value)];
    tensors: [(name, ggml type, ne dims, data bytes)]."""
    if alignment != 32:
        kv = kv + [("general.alignment", "u32", alignment)]
    head = struct.pack("<4sIQQ", b"GGUF", version, len(tensors), len(kv))
    head += b"".join(_kv_bytes(*e) for e in kv)
    off, datas = 0, []
    for name, t, dims, data in tensors:
        head += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(dims))
        head += struct.pack("<%dQ" % len(dims), *dims) + struct.pack("<IQ", t, off)
        pad = -len(data) % alignment
        datas.append(data + bytes(pad))
        off += len(data) + pad
    head += bytes(-len(head) % alignment)
    with open(path, "wb") as f:
        f.write(head + b"".join(datas))


def llama_kv(dim=32, layers=1, heads=2, kv_heads=1, hidden=32, ctx=16, arch="llama", drop=()):
    kv = [("general.architecture", "str", arch), ("%s.context_length" % arch, "u32", ctx),
          ("%s.embedding_length" % arch, "u32", dim), ("%s.block_count" % arch, "u32", layers),
          ("%s.feed_forward_length" % arch, "u32", hidden),
          ("%s.attention.head_count" % arch, "u32", heads),
          ("%s.attention.head_count_kv" % arch, "u32", kv_heads),
          ("%s.attention.layer_norm_rms_epsilon" % arch, "f32", 1e-5),
          ("%s.rope.freq_base" % arch, "f32", 10000.0)]
    return [e for e in kv if e[0] not in drop]


def llama_tensors(dim=32, layers=1, heads=2, kv_heads=1, hidden=32, vocab=8, seed=0,
                  untied=True):
    """[(gguf name, float32 array (rows, cols) or (n,))] of a small random llama."""
    rng = np.random.default_rng(seed)
    kv = kv_heads * dim // heads
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    out = [("token_embd.weight", r(vocab, dim)), ("output_norm.weight", r(dim))]
    if untied:
        out.append(("output.weight", r(vocab, dim)))
    for l in range(layers):
        p = "blk.%d." % l
        out += [(p + "attn_norm.weight", r(dim)), (p + "attn_q.weight", r(dim, dim)),
                (p + "attn_k.weight", r(kv, dim)), (p + "attn_v.weight", r(kv, dim)),
                (p + "attn_output.weight", r(dim, dim)), (p + "ffn_norm.weight", r(dim)),
                (p + "ffn_gate.weight", r(hidden, dim)), (p + "ffn_down.weight", r(dim, hidden)),
                (p + "ffn_up.weight", r(hidden, dim))]
    return out


def f32_tensors(named):
    return [(n, GG_F32, tuple(reversed(a.shape)), a.astype("<f4").tobytes()) for n, a in named]


# ------------------------------------------------ Hugging Face, independently of hf.py

def hf_permute(w, n_heads):
    """transformers' convert_llama_weights_to_hf permute():
    w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)."""
    dim1, dim2 = w.shape
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def bf16_truncate(a):
    """float32 -> bfloat16 bits by truncation (this helper's own rounding)."""
    return (np.ascontiguousarray(a, np.float32).view("<u4") >> 16).astype("<u2")


def write_safetensors(path, tensors):
    """tensors: [(name, dtype 'F32'|'F16'|'BF16'|other, float32 array)]."""
    header, datas, off = {}, [], 0
    for name, dt, a in tensors:
        if dt == "F32":
            b = a.astype("<f4").tobytes()
        elif dt == "F16":
            b = a.astype("<f2").tobytes()
        elif dt == "BF16":
            b = bf16_truncate(a).tobytes()
        else:  # e.g. I8 (unsupported by the reader)
            b = a.astype(np.int8).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        datas.append(b)
        off += len(b)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(datas))


def hf_tensors(hdr, arrays, tie=True):
    """[(HF name, float32 array)] of a llama2.c model (read_llama2c output)."""
    dim, hidden, layers, heads, kv_heads, vocab, seq = hdr
    out = [("model.embed_tokens.weight", arrays["tok_emb"])]
    for l in range(layers):
        p = "model.layers.%d." % l
        out += [(p + "input_layernorm.weight", arrays["attn_norm"][l]),
                (p + "self_attn.q_proj.weight", hf_permute(arrays["wq"][l], heads)),
                (p + "self_attn.k_proj.weight", hf_permute(arrays["wk"][l], kv_heads)),
                (p + "self_attn.v_proj.weight", arrays["wv"][l]),
                (p + "self_attn.o_proj.weight", arrays["wo"][l]),
                (p + "post_attention_layernorm.weight", arrays["ffn_norm"][l]),
                (p + "mlp.gate_proj.weight", arrays["w1"][l]),
                (p + "mlp.down_proj.weight", arrays["w2"][l]),
                (p + "mlp.up_proj.weight", arrays["w3"][l])]
    out.append(("model.norm.weight", arrays["final_norm"]))
    if not tie:
        out.append(("lm_head.weight", arrays["wcls"] if "wcls" in arrays else arrays["tok_emb"]))
    return out


def hf_config(hdr, tie=True, **extra):
    dim, hidden, layers, heads, kv_heads, vocab, seq = hdr
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
           "intermediate_size": hidden, "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
           "max_position_embeddings": seq, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
           "tie_word_embeddings": tie, "hidden_act": "silu", "torch_dtype": "float32"}
    cfg.update(extra)
    return {k: v for k, v in cfg.items() if v is not None}


def write_hf(folder, hdr, arrays, dtype="F32", shards=1, tie=True, config=None, tensors=None):
    """An HF Llama folder: config.json + model.safetensors or `shards` shards and the index.
    Norms are always F32 (as many real checkpoints keep them in the model dtype; either works)."""
    os.makedirs(folder, exist_ok=True)
    named = tensors if tensors is not None else hf_tensors(hdr, arrays, tie)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config if config is not None else hf_config(hdr, tie), f)
    items = [(n, "F32" if a.ndim == 1 else dtype, a) for n, a in named]
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), items)
        return
    parts = np.array_split(np.arange(len(items)), shards)
    wm = {}
    for k, idx in enumerate(parts):
        fname = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
        write_safetensors(os.path.join(folder, fname), [items[i] for i in idx])
        for i in idx:
            wm[items[i][0]] = fname
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f)


def mlb_values(path):
    """{name: float32 values} of an .mlb file (dequantized)."""
    with mlb.MlbFile(path) as mf:
        return {n: np.array(t.dequantize()) for n, t in mf.tensors.items()}


def convert_q(src, out, wtype, **kw):
    """In-process conversion without notes."""
    kw.setdefault("tokenizer", False)
    return convert.convert(src, out, wtype, progress=False, quiet=True, **kw)


# =========================================================================== GGUF: stories

class GgufStoriesTest(unittest.TestCase, FileChecks):

    # name: (wtype, layout, expected header layout): each type's default layout (rows for
    # f32, panel16 for q8_0 and q4_0) and the quantized types in rows too
    KINDS = {"f32": ("f32", None, 0), "q8_0": ("q8_0", None, 1), "q4_0": ("q4_0", None, 1),
             "q8_0_rows": ("q8_0", "rows", 0), "q4_0_rows": ("q4_0", "rows", 0)}

    @classmethod
    def setUpClass(cls):
        need(STORIES_BIN, STORIES_GGUF, TOK512)
        cls.dir = tempfile.mkdtemp(prefix="mlbimp")
        cls.bin, cls.gguf, cls.res = {}, {}, {}
        for k, (wt, lay, _) in cls.KINDS.items():
            cls.bin[k] = os.path.join(cls.dir, "bin_%s.mlb" % k)
            convert_q(STORIES_BIN, cls.bin[k], wt, layout=lay)
            cls.gguf[k] = os.path.join(cls.dir, "gguf_%s.mlb" % k)
            if k in ("f32", "q8_0"):  # through the CLI, tokenizer written beside the output
                cls.res[k] = run_tool("convert.py", STORIES_GGUF, cls.gguf[k], "--wtype", wt,
                                      "--max-seq", 512)
            else:
                convert_q(STORIES_GGUF, cls.gguf[k], wt, max_seq=512, layout=lay)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_gguf_and_bin_convert_to_byte_identical_mlb(self):
        for k, (_, _, lay) in self.KINDS.items():  # in both layouts
            if k in self.res:
                self.assertEqual(self.res[k].returncode, 0, self.res[k].stderr)
            self.check_structure(self.gguf[k], layout=lay)
            self.assertEqual(read_bytes(self.gguf[k]), read_bytes(self.bin[k]), k)

    def test_stderr_notes(self):
        err = self.res["f32"].stderr
        self.assertIn("note: output.weight is identical to token_embd.weight: stored as a shared "
                      "classifier", err)
        self.assertIn("note: max_seq 512 (the input's context length is 2048)", err)
        self.assertIn("wrote the tokenizer (512 tokens)", err)
        self.assertNotIn("Traceback", err)

    def test_context_length_from_metadata(self):
        out = os.path.join(self.dir, "ctx.mlb")
        h = convert_q(STORIES_GGUF, out, "f32")
        self.assertEqual(h.max_seq, 2048)
        a, b = read_bytes(out), read_bytes(self.bin["f32"])
        diff = [i for i in range(len(a)) if a[i] != b[i]] if len(a) == len(b) else None
        self.assertEqual(diff, [33], "only max_seq (offset 32, 2048 vs 512) may differ")

    def test_tokenizer_equals_tok512(self):
        for wt in ("f32", "q8_0"):
            tok = os.path.join(self.dir, "gguf_%s.tokenizer.bin" % wt)
            assert_same_tokenizer(self, tok, TOK512)


def read_tokenizer(path):
    b = read_bytes(path)
    (mtl,) = struct.unpack_from("<i", b)
    off, toks = 4, []
    while off < len(b):
        score, n = struct.unpack_from("<fi", b, off)
        toks.append((b[off:off + 4], b[off + 8:off + 8 + n]))
        off += 8 + n
    return mtl, toks


def assert_same_tokenizer(tc, got_path, want_path):
    gm, got = read_tokenizer(got_path)
    wm, want = read_tokenizer(want_path)
    tc.assertEqual(gm, wm, "max_token_length")
    tc.assertEqual(len(got), len(want), "token count")
    for i, (g, w) in enumerate(zip(got, want)):
        tc.assertEqual(g[1], w[1], "token %d piece" % i)
        tc.assertEqual(g[0], w[0], "token %d score bits (%r vs %r)" % (i, g[0], w[0]))
    tc.assertEqual(read_bytes(got_path), read_bytes(want_path))


# ====================================================================== GGUF: tiny random

class TinyRandomGgufTest(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        need(TINY_GGUF, TOK32K)
        cls.dir = tempfile.mkdtemp(prefix="mlbtiny")
        cls.out = os.path.join(cls.dir, "tiny.mlb")
        cls.tok = os.path.join(cls.dir, "tiny.tokenizer.bin")
        cls.res = run_tool("convert.py", TINY_GGUF, cls.out, "--wtype", "f32")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_converts_f16_untied(self):
        self.assertEqual(self.res.returncode, 0, self.res.stderr)
        self.assertIn("note: 9 F16 tensors widened to float32 (exact)", self.res.stderr)
        h, _ = self.check_structure(self.out)
        self.assertEqual((h["dim"], h["hidden_dim"], h["n_layers"], h["n_heads"],
                          h["n_kv_heads"], h["vocab"], h["max_seq"], h["wtype"],
                          h["shared_classifier"]), (8, 32, 1, 2, 2, 32000, 4096, F32, 0))
        v = mlb_values(self.out)
        for name, gname in (("tok_emb", "token_embd.weight"), ("wcls", "output.weight"),
                            ("layers.0.wq", "blk.0.attn_q.weight"),
                            ("layers.0.w2", "blk.0.ffn_down.weight"),
                            ("final_norm", "output_norm.weight")):
            want = gguf_floats(TINY_GGUF, gname)
            self.assertEqual(v[name].tobytes(), want.reshape(v[name].shape).tobytes(), name)
        self.assertFalse(np.array_equal(v["wcls"], v["tok_emb"]))

    def test_tokenizer_equals_llama2_tokenizer_bin(self):
        assert_same_tokenizer(self, self.tok, TOK32K)

    def test_quantized_type_refused_naming_the_tensor(self):
        for wt in ("q8_0", "q4_0"):
            out = os.path.join(self.dir, "q.mlb")
            r = run_tool("convert.py", TINY_GGUF, out, "--wtype", wt)
            self.assert_one_line_error(r, "tensor tok_emb (shape 32000x8) has 8 columns; "
                                          "%s needs a multiple of 32" % wt)
            self.assertEqual(r.returncode, 2)
            self.assert_no_output(self.dir, "q.mlb")
            self.assertFalse(os.path.exists(os.path.join(self.dir, "q.tokenizer.bin")))

    def test_generates_with_ml_run(self):
        ml_run = os.environ.get("ML_RUN")
        if not ml_run:
            msg = "ML_RUN is not set (ctest sets it to the ml_run binary)"
            sys.stderr.write("\n*** SKIPPING test_generates_with_ml_run: %s ***\n" % msg)
            self.skipTest(msg)
        emu = [a for a in os.environ.get("ML_EMULATOR", "").split("|") if a]
        self.assertEqual(self.res.returncode, 0, self.res.stderr)
        r = subprocess.run(emu + [ml_run, self.out, "-z", self.tok, "-n", "16", "--temp", "0",
                                  "-i", "Hello"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace"))
        text = r.stdout.decode("utf-8", "replace")
        self.assertIn("Hello", text)
        self.assertGreater(len(text.strip()), len("Hello"), "nothing generated")


# ================================================================= GGUF: quantized tensors

class GgufQuantizedTest(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        need(STORIES_BIN, TOK512)
        cls.dir = tempfile.mkdtemp(prefix="mlbggq")
        cls.g = {}
        for dt in ("q8_0", "q4_0"):
            cls.g[dt] = os.path.join(cls.dir, "s_%s.gguf" % dt)
            export.export(STORIES_BIN, cls.g[dt], "gguf", dt, tokenizer=TOK512)
        cls.hdr, cls.arrays, _ = read_llama2c(STORIES_BIN)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_export_types(self):
        _, kv, tensors = parse_gguf(self.g["q8_0"])
        self.assertEqual(tensors["blk.0.attn_q.weight"][0], GG_Q8_0)
        self.assertEqual(tensors["blk.0.ffn_gate.weight"][0], GG_Q8_0)  # 172 rows x 64 cols
        self.assertEqual(tensors["blk.0.ffn_down.weight"][0], GG_F16)  # K = 172: F16 fallback
        self.assertEqual(tensors["blk.0.attn_norm.weight"][0], GG_F32)
        self.assertEqual(kv["general.architecture"], b"llama")

    def check_copied(self, gpath, wt):
        out = os.path.join(self.dir, "copy_%s.mlb" % wt)
        r = run_tool("convert.py", gpath, out, "--wtype", wt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("31 %s tensors copied without re-quantizing" % wt.upper(), r.stderr)
        self.assertIn("5 F16 tensors widened to float32 and quantized as %s" % wt, r.stderr)
        self.check_structure(out, layout=1)  # no --layout: 16-row panels
        qf = mlb.quantize_q8_0 if wt == "q8_0" else mlb.quantize_q4_0
        with mlb.MlbFile(out) as mf:
            for layer in range(5):
                for base, gname in (("wq", "attn_q"), ("wk", "attn_k"), ("w1", "ffn_gate")):
                    t, q, d = gguf_blocks(gpath, "blk.%d.%s.weight" % (layer, gname))
                    mq, md = mf["layers.%d.%s" % (layer, base)].unpack()
                    rows = q.shape[0]
                    self.assertEqual(mq[:rows].tobytes(), q.tobytes(), (layer, base))
                    self.assertEqual(md[:rows].tobytes(), d.tobytes(), (layer, base))
                    if base == "w1":  # hidden 172 -> 192: zero blocks appended
                        self.assertEqual((rows, mq.shape[0]), (172, 192))
                        self.assertTrue((mq[172:] == (0 if wt == "q8_0" else 0x88)).all())
                        self.assertFalse(md[172:].view(np.uint32).any())
                w2 = gguf_floats(gpath, "blk.%d.ffn_down.weight" % layer)
                padded = np.concatenate([w2, np.zeros((64, 20), np.float32)], axis=1)
                q, d = qf(padded)
                mq, md = mf["layers.%d.w2" % layer].unpack()
                self.assertEqual((mq.tobytes(), md.tobytes()), (q.tobytes(), d.tobytes()))
        return out

    def test_q8_0_blocks_copied(self):
        self.check_copied(self.g["q8_0"], "q8_0")

    def test_q4_0_blocks_copied(self):
        self.check_copied(self.g["q4_0"], "q4_0")

    def test_requantized_when_types_differ(self):
        out = os.path.join(self.dir, "re.mlb")
        r = run_tool("convert.py", self.g["q4_0"], out, "--wtype", "q8_0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("note: 31 Q4_0 tensors dequantized to float32 and re-quantized as q8_0",
                      r.stderr)
        with mlb.MlbFile(out) as mf:
            x = gguf_floats(self.g["q4_0"], "blk.2.attn_v.weight")
            q, d = mlb.quantize_q8_0(x)
            mq, md = mf["layers.2.wv"].unpack()
            self.assertEqual(mq.tobytes(), q.tobytes())
            self.assertEqual(md.tobytes(), d.tobytes())
        out32 = os.path.join(self.dir, "deq.mlb")
        r = run_tool("convert.py", self.g["q8_0"], out32, "--wtype", "f32", "-q")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        v = mlb_values(out32)
        self.assertEqual(v["tok_emb"].tobytes(), gguf_floats(self.g["q8_0"],
                                                             "token_embd.weight").tobytes())
        # the dequantized GGUF is close to the original weights
        self.assertLess(np.abs(v["layers.1.wo"] - self.arrays["wo"][1]).max(),
                        np.abs(self.arrays["wo"][1]).max() / 127 * 0.51 + 1e-3)

    def test_exported_tokenizer_round_trip(self):
        tok = os.path.join(self.dir, "rt.tokenizer.bin")
        convert_q(self.g["q8_0"], os.path.join(self.dir, "rt.mlb"), "q8_0", tokenizer=tok)
        assert_same_tokenizer(self, tok, TOK512)


# ========================================================= GGUF: versions, layout, errors

class GgufFormatTest(unittest.TestCase, FileChecks):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlbggf")
        self.out = os.path.join(self.dir, "o.mlb")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def gguf(self, name="m.gguf", kv=None, tensors=None, **kw):
        p = os.path.join(self.dir, name)
        build_gguf(p, llama_kv() if kv is None else kv,
                   f32_tensors(llama_tensors()) if tensors is None else tensors, **kw)
        return p

    def test_v2_v3_and_alignment(self):
        named = llama_tensors(dim=64, hidden=64, heads=4, kv_heads=2, vocab=40, layers=2, seed=3)
        kv = llama_kv(dim=64, hidden=64, heads=4, kv_heads=2, layers=2)
        outs = []
        for version, align in ((3, 32), (2, 32), (3, 64), (2, 256)):
            p = self.gguf("v%d_%d.gguf" % (version, align), kv, f32_tensors(named),
                          version=version, alignment=align)
            o = os.path.join(self.dir, "v%d_%d.mlb" % (version, align))
            convert_q(p, o, "q4_0")
            outs.append(read_bytes(o))
        self.assertEqual(len(set(outs)), 1)
        self.check_structure(o, layout=1)  # the default for q4_0
        with mlb.MlbFile(o) as mf:
            q, d = mlb.quantize_q4_0(dict(named)["blk.1.attn_k.weight"])
            mq, md = mf["layers.1.wk"].unpack()
            self.assertEqual(mq.tobytes(), q.tobytes())
            self.assertEqual(md.tobytes(), d.tobytes())

    def test_hparams_from_metadata(self):
        kv = llama_kv()
        kv = [e if e[0] != "llama.rope.freq_base" else (e[0], "f32", 500000.0) for e in kv]
        kv = [e if e[0] != "llama.attention.layer_norm_rms_epsilon" else (e[0], "f32", 1e-6)
              for e in kv]
        p = self.gguf(kv=kv)
        h = convert_q(p, self.out, "f32")
        self.assertEqual((h.rope_theta, float(np.float32(h.norm_eps)), h.max_seq, h.n_kv_heads),
                         (500000.0, float(np.float32(1e-6)), 16, 1))
        p = self.gguf(kv=[e for e in llama_kv() if e[0] != "llama.rope.freq_base"])
        self.assertEqual(convert_q(p, self.out, "f32").rope_theta, 10000.0)

    def run_error(self, path, *needles, code=1, args=()):
        r = run_tool("convert.py", path, self.out, *args)
        self.assert_one_line_error(r, *needles)
        self.assertEqual(r.returncode, code, r.stderr)
        self.assert_no_output(self.dir, "o.mlb")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "o.tokenizer.bin")))

    def test_errors(self):
        named = llama_tensors()
        t = f32_tensors(named)
        q4k = [(n, GG_Q4_K if n == "blk.0.attn_v.weight" else ty, d, b) for n, ty, d, b in t]
        bias = t + [("blk.0.attn_q.bias", GG_F32, (32,), bytes(128))]
        short = [e for e in t if e[0] != "blk.0.ffn_up.weight"]
        wrong = [(n, ty, (16, 32) if n == "blk.0.attn_k.weight" else d,
                  b[:2048] if n == "blk.0.attn_k.weight" else b) for n, ty, d, b in t]
        cases = [
            (self.gguf("a.gguf", kv=llama_kv(arch="gpt2")), "architecture 'gpt2' is not supported"),
            (self.gguf("b.gguf", kv=llama_kv(drop=("llama.embedding_length",))),
             "missing metadata key llama.embedding_length"),
            (self.gguf("c.gguf", tensors=q4k),
             "tensor blk.0.attn_v.weight has type Q4_K, which is not supported"),
            (self.gguf("d.gguf", tensors=bias), "tensor blk.0.attn_q.bias (F32) is not part of"),
            (self.gguf("e.gguf", tensors=short), "missing tensor blk.0.ffn_up.weight"),
            (self.gguf("f.gguf", tensors=wrong),
             "tensor blk.0.attn_k.weight (F32) has shape 32x16, expected 16x32"),
            (self.gguf("g.gguf", version=1), "GGUF version 1 is not supported"),
            (self.gguf("h.gguf", kv=llama_kv() + [("llama.rope.scaling.type", "str", "yarn")]),
             "llama.rope.scaling.type = 'yarn'"),
        ]
        for path, needle in cases:
            self.run_error(path, needle)
        full = read_bytes(self.gguf("t.gguf"))
        cut = os.path.join(self.dir, "cut.gguf")
        with open(cut, "wb") as f:
            f.write(full[:-100])
        self.run_error(cut, "runs past the end of the file")
        with open(cut, "wb") as f:
            f.write(full[:200])
        self.run_error(cut, "truncated or corrupt GGUF")

    def test_failure_late_leaves_nothing(self):
        named = llama_tensors()
        t = f32_tensors(named)
        bad = np.full((32,), np.nan, np.float32).tobytes()
        t = [(n, ty, d, bad if n == "output_norm.weight" else b) for n, ty, d, b in t]
        kv = llama_kv() + [("tokenizer.ggml.model", "str", "llama"),
                           ("tokenizer.ggml.tokens", "arr_str", [b"<unk>", b"<s>", b"</s>"] +
                            [b"\xe2\x96\x81t%d" % i for i in range(5)]),
                           ("tokenizer.ggml.scores", "arr_f32", [0.0] * 8)]
        p = self.gguf(kv=kv, tensors=t)
        self.run_error(p, "tensor final_norm contains NaN", args=("-q",))
        # the tokenizer of the same file is fine and is written on success
        good = self.gguf("good.gguf", kv=kv)
        r = run_tool("convert.py", good, self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        mtl, toks = read_tokenizer(os.path.join(self.dir, "o.tokenizer.bin"))
        self.assertEqual([p for _, p in toks][:4], [b"<unk>", b"<s>", b"</s>", b" t0"])
        self.assertIn("ml_run's encoder assumes llama2.c's layout", r.stderr)  # no byte tokens

    def test_tokenizer_options(self):
        need(STORIES_GGUF, TOK512, STORIES_BIN)
        tok = os.path.join(self.dir, "custom.bin")
        r = run_tool("convert.py", STORIES_GGUF, self.out, "--tokenizer", tok, "-q")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(read_bytes(tok), read_bytes(TOK512))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "o.tokenizer.bin")))
        os.unlink(self.out)
        r = run_tool("convert.py", STORIES_GGUF, self.out, "--no-tokenizer")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["custom.bin", "o.mlb"])
        os.unlink(self.out)
        self.run_error(STORIES_GGUF, "the tokenizer would overwrite the output",
                       args=("--tokenizer", self.out))
        self.run_error(STORIES_BIN, "carries no tokenizer", args=("--tokenizer", tok))
        no_tok = self.gguf("nt.gguf")
        r = run_tool("convert.py", no_tok, self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("note: no tokenizer written: the GGUF has no tokenizer", r.stderr)
        os.unlink(self.out)
        self.run_error(no_tok, "cannot write the tokenizer", args=("--tokenizer", tok))

    def test_progress_with_verbose(self):
        need(STORIES_GGUF)
        r = run_tool("convert.py", STORIES_GGUF, self.out, "-v", "--no-tokenizer")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GGUF v3 llama: dim 64, hidden 172", r.stderr)
        self.assertIn("[47/47] final_norm", r.stderr)
        self.assertIn("MB/s", r.stderr)


# ============================================================================ Hugging Face

class RopeConventionTest(unittest.TestCase):
    """transformers' permute() maps llama2.c's interleaved-pair RoPE onto HF's rotate_half RoPE:
    attention scores computed both ways agree. This validates the formula the HF tests use."""

    def test_scores_agree(self):
        rng = np.random.default_rng(1)
        dim, heads, theta = 64, 4, 10000.0
        hd = dim // heads
        wq = rng.standard_normal((dim, dim))
        wk = rng.standard_normal((dim, dim))
        x1, x2 = rng.standard_normal(dim), rng.standard_normal(dim)

        def rope_interleaved(v, pos):  # llama2.c run.c
            v = v.copy()
            for i in range(0, dim, 2):
                f = 1.0 / theta ** ((i % hd) / hd)
                c, s = np.cos(pos * f), np.sin(pos * f)
                v[i], v[i + 1] = v[i] * c - v[i + 1] * s, v[i] * s + v[i + 1] * c
            return v

        def rope_hf(v, pos):  # transformers apply_rotary_pos_emb with rotate_half
            v = v.reshape(heads, hd)
            inv = 1.0 / theta ** (np.arange(0, hd, 2) / hd)
            emb = np.concatenate([pos * inv, pos * inv])
            rot = np.concatenate([-v[:, hd // 2:], v[:, :hd // 2]], axis=1)
            return (v * np.cos(emb) + rot * np.sin(emb)).reshape(-1)

        q_a = rope_interleaved(wq @ x1, 5).reshape(heads, hd)
        k_a = rope_interleaved(wk @ x2, 2).reshape(heads, hd)
        q_b = rope_hf(hf_permute(wq, heads) @ x1, 5).reshape(heads, hd)
        k_b = rope_hf(hf_permute(wk, heads) @ x2, 2).reshape(heads, hd)
        np.testing.assert_allclose((q_a * k_a).sum(1), (q_b * k_b).sum(1), rtol=1e-9, atol=1e-9)
        # and the unpermuted matrix does not (the test can fail)
        q_c = rope_hf(wq @ x1, 5).reshape(heads, hd)
        k_c = rope_hf(wk @ x2, 2).reshape(heads, hd)
        self.assertGreater(np.abs((q_a * k_a).sum(1) - (q_c * k_c).sum(1)).max(), 1e-3)


class HfStoriesTest(unittest.TestCase, FileChecks):

    @classmethod
    def setUpClass(cls):
        need(STORIES_BIN)
        cls.dir = tempfile.mkdtemp(prefix="mlbhf")
        cls.hdr, cls.arrays, _ = read_llama2c(STORIES_BIN)
        cls.bin = {}
        for wt in ("f32", "q8_0"):
            cls.bin[wt] = os.path.join(cls.dir, "bin_%s.mlb" % wt)
            convert_q(STORIES_BIN, cls.bin[wt], wt)
        cls.hf = os.path.join(cls.dir, "hf")
        write_hf(cls.hf, cls.hdr, cls.arrays)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_hf_export_converts_to_byte_identical_mlb(self):
        for wt in ("f32", "q8_0"):
            out = os.path.join(self.dir, "hf_%s.mlb" % wt)
            r = run_tool("convert.py", self.hf, out, "--wtype", wt)
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            self.assertEqual(read_bytes(out), read_bytes(self.bin[wt]), wt)

    def test_input_forms(self):
        want = read_bytes(self.bin["f32"])
        for src in (os.path.join(self.hf, "model.safetensors"),
                    os.path.join(self.hf, "config.json"), self.hf + "/"):
            out = os.path.join(self.dir, "form.mlb")
            convert_q(src, out, "f32")
            self.assertEqual(read_bytes(out), want, src)

    def test_sharded_f16_bf16(self):
        for dtype, shards in (("F16", 3), ("BF16", 2), ("BF16", 1)):
            folder = os.path.join(self.dir, "%s_%d" % (dtype, shards))
            write_hf(folder, self.hdr, self.arrays, dtype=dtype, shards=shards)
            out = os.path.join(self.dir, "%s_%d.mlb" % (dtype, shards))
            r = run_tool("convert.py", folder, out, "--wtype", "f32")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("note: 36 %s tensors widened to float32 (exact)" % dtype, r.stderr)
            self.check_structure(out)
            v = mlb_values(out)
            for name, src in (("tok_emb", self.arrays["tok_emb"]),
                              ("layers.3.wk", self.arrays["wk"][3]),
                              ("layers.4.w2", self.arrays["w2"][4])):
                if dtype == "F16":
                    want = src.astype(np.float16).astype(np.float32)
                else:
                    want = (bf16_truncate(src).astype(np.uint32) << 16).view(np.float32)
                got = v[name][:, :172] if name.endswith("w2") else v[name]
                self.assertEqual(got.tobytes(), want.tobytes(), (dtype, name))
            self.assertEqual(v["final_norm"].tobytes(), self.arrays["final_norm"].tobytes())

    def test_untied_identical_lm_head_is_shared(self):
        folder = os.path.join(self.dir, "untied_copy")
        write_hf(folder, self.hdr, self.arrays, tie=False)
        out = os.path.join(self.dir, "uc.mlb")
        r = run_tool("convert.py", folder, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("lm_head.weight is identical to model.embed_tokens.weight", r.stderr)
        self.assertEqual(read_bytes(out), read_bytes(self.bin["f32"]))

    def test_errors(self):
        out = os.path.join(self.dir, "e.mlb")
        base = hf_config(self.hdr)

        def case(name, needle, config=None, tensors=None, code=1, src=None):
            folder = os.path.join(self.dir, "err_" + name)
            write_hf(folder, self.hdr, self.arrays, config=config or base, tensors=tensors)
            r = run_tool("convert.py", src(folder) if src else folder, out)
            self.assert_one_line_error(r, needle)
            self.assertEqual(r.returncode, code, r.stderr)
            self.assertFalse(os.path.exists(out))
            self.assertEqual([f for f in os.listdir(self.dir) if f.endswith(".tmp")], [])

        named = hf_tensors(self.hdr, self.arrays)
        cfg = lambda **kw: dict(base, **kw)  # noqa: E731
        case("arch", "architecture MistralForCausalLM (model_type 'mistral') is not supported",
             cfg(model_type="mistral", architectures=["MistralForCausalLM"]))
        case("key", "missing key hidden_size",
             {k: v for k, v in base.items() if k != "hidden_size"})
        case("scaling", "rope_scaling = {\"type\": \"linear\", \"factor\": 2.0}",
             cfg(rope_scaling={"type": "linear", "factor": 2.0}))
        case("missing", "missing tensor model.layers.2.mlp.up_proj.weight",
             tensors=[t for t in named if t[0] != "model.layers.2.mlp.up_proj.weight"])
        case("nolm", "missing tensor lm_head.weight (tie_word_embeddings is false)",
             cfg(tie_word_embeddings=False))
        case("extra", "tensor model.layers.0.self_attn.q_proj.bias (F32) is not part of",
             tensors=named + [("model.layers.0.self_attn.q_proj.bias", np.zeros(64, np.float32))])
        case("shape", "tensor model.layers.1.self_attn.k_proj.weight (F32) has shape 64x64, "
                      "expected 32x64",
             tensors=[(n, self.arrays["wq"][1] if n == "model.layers.1.self_attn.k_proj.weight"
                       else a) for n, a in named])

        # an unsupported dtype, a missing shard, a truncated file: built by hand
        folder = os.path.join(self.dir, "err_dtype")
        os.makedirs(folder)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(base, f)
        items = [(n, "I8" if n == "model.layers.0.mlp.down_proj.weight" else "F32", a)
                 for n, a in named]
        write_safetensors(os.path.join(folder, "model.safetensors"), items)
        r = run_tool("convert.py", folder, out)
        self.assert_one_line_error(r, "tensor model.layers.0.mlp.down_proj.weight has dtype I8, "
                                      "which is not supported")
        folder = os.path.join(self.dir, "err_shard")
        write_hf(folder, self.hdr, self.arrays, shards=2)
        os.unlink(os.path.join(folder, "model-00002-of-00002.safetensors"))
        r = run_tool("convert.py", folder, out)
        self.assert_one_line_error(r, "model-00002-of-00002.safetensors: no such file")
        folder = os.path.join(self.dir, "err_cut")
        write_hf(folder, self.hdr, self.arrays)
        p = os.path.join(folder, "model.safetensors")
        raw = read_bytes(p)
        with open(p, "wb") as f:
            f.write(raw[:-1000])
        r = run_tool("convert.py", folder, out)
        self.assert_one_line_error(r, "outside the", "truncated?")
        os.makedirs(os.path.join(self.dir, "empty"))
        r = run_tool("convert.py", os.path.join(self.dir, "empty"), out)
        self.assert_one_line_error(r, "no model.safetensors or model.safetensors.index.json")
        self.assertFalse(os.path.exists(out))


class HfSyntheticTest(unittest.TestCase, FileChecks):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mlbhfs")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_untied_gqa_and_config_values(self):
        src = os.path.join(self.dir, "u.bin")
        write_llama2c(src, dim=64, hidden=96, layers=2, heads=8, kv_heads=2, vocab=48, seq=32,
                      shared=False, seed=9)
        hdr, arrays, shared = read_llama2c(src)
        self.assertFalse(shared)
        folder = os.path.join(self.dir, "hf")
        write_hf(folder, hdr, arrays, tie=False, shards=2,
                 config=hf_config(hdr, tie=False, rope_theta=500000.0, rms_norm_eps=1e-6))
        for wt in ("f32", "q4_0"):
            a, b = os.path.join(self.dir, "a.mlb"), os.path.join(self.dir, "b.mlb")
            convert_q(src, a, wt)
            h = convert_q(folder, b, wt)
            self.assertEqual((h.shared_classifier, h.n_kv_heads, h.rope_theta), (0, 2, 500000.0))
            self.assertEqual(h.norm_eps, 1e-6)
            ra, rb = read_bytes(a), read_bytes(b)
            # identical except the two header floats taken from config.json
            self.assertEqual(ra[44:], rb[44:], wt)
            self.assertEqual(ra[:36], rb[:36], wt)
        # num_key_value_heads absent: multi-head attention (= num_attention_heads)
        src2 = os.path.join(self.dir, "m.bin")
        write_llama2c(src2, dim=32, hidden=32, layers=1, heads=2, kv_heads=2, vocab=8, seq=4)
        hdr2, arrays2, _ = read_llama2c(src2)
        folder2 = os.path.join(self.dir, "hf2")
        write_hf(folder2, hdr2, arrays2, config=hf_config(hdr2, num_key_value_heads=None))
        a = os.path.join(self.dir, "m.mlb")
        b = os.path.join(self.dir, "m2.mlb")
        convert_q(src2, a, "f32")
        self.assertEqual(convert_q(folder2, b, "f32").n_kv_heads, 2)
        self.assertEqual(read_bytes(a), read_bytes(b))


# ============================================================================== export.py

class ExportToolTest(unittest.TestCase, FileChecks):

    def setUp(self):
        need(STORIES_BIN, TOK512)
        self.dir = tempfile.mkdtemp(prefix="mlbexp")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_cli_round_trips(self):
        base = os.path.join(self.dir, "base.mlb")
        convert_q(STORIES_BIN, base, "f32")
        want = read_bytes(base)
        # HF through export.py (its own permutation code) and back
        hfdir = os.path.join(self.dir, "hf")
        r = run_tool("export.py", STORIES_BIN, hfdir, "--format", "hf", "--shards", "2")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertTrue(os.path.isfile(os.path.join(hfdir, "model.safetensors.index.json")))
        out = os.path.join(self.dir, "o.mlb")
        convert_q(hfdir, out, "f32")
        self.assertEqual(read_bytes(out), want)
        # export.py's q_proj equals transformers' permutation of the llama2.c rows
        hdr, arrays, _ = read_llama2c(STORIES_BIN)
        hf_single = os.path.join(self.dir, "hf1")
        export.export(STORIES_BIN, hf_single, "hf")
        raw = read_bytes(os.path.join(hf_single, "model.safetensors"))
        (n,) = struct.unpack_from("<Q", raw)
        header = json.loads(raw[8:8 + n])
        b, e = header["model.layers.2.self_attn.q_proj.weight"]["data_offsets"]
        q = np.frombuffer(raw, "<f4", (e - b) // 4, 8 + n + b).reshape(64, 64)
        np.testing.assert_array_equal(q, hf_permute(arrays["wq"][2], 8))
        # GGUF v2 F16 from an .mlb file, tokenizer embedded
        g = os.path.join(self.dir, "m.gguf")
        r = run_tool("export.py", base, g, "--format", "gguf", "--dtype", "f16",
                     "--gguf-version", "2", "--tokenizer", TOK512)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        version, kv, tensors = parse_gguf(g)
        self.assertEqual((version, tensors["blk.0.attn_q.weight"][0]), (2, GG_F16))
        self.assertEqual(kv["llama.feed_forward_length"], 192)  # the .mlb's padded hidden_dim
        convert_q(g, out, "f32", tokenizer=os.path.join(self.dir, "t.bin"))
        assert_same_tokenizer(self, os.path.join(self.dir, "t.bin"), TOK512)
        v, w = mlb_values(out), mlb_values(base)
        np.testing.assert_array_equal(v["layers.0.wq"], w["layers.0.wq"].astype(np.float16)
                                      .astype(np.float32))
        # errors are one line
        r = run_tool("export.py", STORIES_BIN, hfdir, "--format", "hf", "--dtype", "q8_0")
        self.assert_one_line_error(r, "Hugging Face export writes f32, f16 or bf16")
        r = run_tool("export.py", "random:nope", g, "--format", "gguf")
        self.assert_one_line_error(r, "random:PRESET")


if __name__ == "__main__":
    unittest.main()
