#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus (fuzz/corpus/<target>/) and the encode target's tokenizer
(fuzz/data/encode_tokenizer.bin). Standard library only, deterministic: the committed files are
exactly what this script writes, and `gen_corpus.py --check` (a CTest test of the fuzz and
sanitizer presets) fails when they differ.

    fuzz/gen_corpus.py            rewrite fuzz/corpus/ and fuzz/data/
    fuzz/gen_corpus.py --check    compare instead of writing; exit 1 on any difference

File names state what the replay driver (fuzz/replay_main.cc) expects of each seed:
`ok-*` must be accepted by the target's loader, `bad-*` must be rejected with a clean error.

Corpora (one folder per input format; fuzz/README.md says which targets read which):
  mlb/        .mlb models (docs/mlb-format.md): small valid F32/Q8_0/Q4_0 models, and one broken
              file per rule of the loader (truncations, every header field out of range, ...)
  tokenizer/  u16 little-endian vocab, then a tokenizer image: llama2.c tokenizer.bin (the vocab is
              the model's, which the file does not store; 0 = as many tokens as the file holds)
              or a byte-level MLTK image (docs/tokenizer-format.md; n_tokens <= the vocab, 0 = any)
  encode/     prompt bytes, valid and invalid UTF-8 of every class
  chat/       a format byte, then NUL-separated template source, bos, eos, today and the messages'
              role / content pairs (fuzz/fuzz_chat.cc); the templates are short stand-ins holding
              each format's markers, written here
The .mlb writer here is written from docs/mlb-format.md, independently of tools/mlb.py.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
DATA = os.path.join(HERE, "data")

F32, Q8_0, Q4_0 = 0, 8, 2
QK = 32


# ------------------------------------------------------------------------------ .mlb writer

class Rng:
    """xorshift64*: integers only, so the bytes are the same on every Python and platform."""

    def __init__(self, seed):
        self.s = (seed * 0x9E3779B97F4A7C15 + 1) & 0xFFFFFFFFFFFFFFFF

    def next(self):
        s = self.s
        s ^= s >> 12
        s ^= (s << 25) & 0xFFFFFFFFFFFFFFFF
        s ^= s >> 27
        self.s = s
        return ((s * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF) >> 32

    def randrange(self, n):
        return self.next() % n

    def uniform(self, scale_log2):
        """A float in (-2^scale_log2, 2^scale_log2), a multiple of 2^(scale_log2 - 15): exact."""
        return (self.next() % 65535 - 32767) * 2.0 ** (scale_log2 - 15)


def align64(n):
    return (n + 63) & ~63


def f32_bytes(vals):
    return struct.pack("<%df" % len(vals), *vals)


def f16_bytes(vals):
    """IEEE binary16, little-endian (struct's 'e': round to nearest even)."""
    return struct.pack("<%de" % len(vals), *vals)


def quant_arrays(wtype, rows, cols, rng, half_scales=False):
    """(q bytes, d bytes) of a random quantized matrix; d float32, or binary16 (layout 2)."""
    nb = rows * cols // QK
    if wtype == Q8_0:
        q = bytes(rng.randrange(256) for _ in range(rows * cols))
    else:
        q = bytes(rng.randrange(256) for _ in range(rows * cols // 2))
    d = (f16_bytes if half_scales else f32_bytes)([rng.uniform(-6) for _ in range(nb)])
    return q, d


def tensor_arrays(wtype, rows, cols, rng, layout=0):
    if wtype == F32:
        return [f32_bytes([rng.uniform(-1) for _ in range(rows * cols)])]
    if layout in (1, 2):  # 16-row panels: rows rounded up to whole panels (the byte order is opaque here)
        rows = (rows + 15) // 16 * 16
    return list(quant_arrays(wtype, rows, cols, rng, half_scales=layout == 2))


def mlb_model(dim, n_layers, n_heads, n_kv_heads, hidden, vocab, max_seq, wtype, shared,
              seed=1, theta=10000.0, eps=1e-5, layout=0, arch=0, qkv_bias=0, n_tokens=0):
    """A complete .mlb file with random weights (layout 0: rows, 1: 16-row panels, 2: 16-row
    panels with binary16 scales); version 2 when arch, qkv_bias or n_tokens is set."""
    rng = Rng(seed)
    version = 2 if (arch or qkv_bias or n_tokens) else 1
    header = struct.pack("<4s12I", b"MLB1", version, dim, n_layers, n_heads, n_kv_heads, hidden, vocab,
                         max_seq, 0, 0, wtype, 1 if shared else 0)
    header = header[:36] + struct.pack("<ff", theta, eps) + header[44:]
    header += struct.pack("<I", layout)
    if version == 2:
        header += struct.pack("<3I3f2I", arch, qkv_bias, 0, 0.0, 0.0, 0.0, 0, n_tokens)
    header += bytes(256 - len(header))
    assert len(header) == 256
    kv_dim = n_kv_heads * (dim // n_heads)
    arrays = []

    def norm():
        arrays.append(f32_bytes([1.0 + rng.uniform(-4) for _ in range(dim)]))

    def matrix(rows, cols):
        arrays.extend(tensor_arrays(wtype, rows, cols, rng, layout))

    matrix(vocab, dim)
    for _ in range(n_layers):
        norm()
        matrix(dim, dim)
        matrix(kv_dim, dim)
        matrix(kv_dim, dim)
        if qkv_bias:  # bq, bk, bv: F32 vectors
            for n in (dim, kv_dim, kv_dim):
                arrays.append(f32_bytes([rng.uniform(-2) for _ in range(n)]))
        matrix(dim, dim)
        norm()
        matrix(hidden, dim)
        matrix(dim, hidden)
        matrix(hidden, dim)
    norm()
    if not shared:
        matrix(vocab, dim)
    out = bytearray(header)
    for a in arrays:
        out += bytes(align64(len(out)) - len(out))
        out += a
    return bytes(out)


def put_u32(b, off, v):
    b = bytearray(b)
    b[off:off + 4] = struct.pack("<I", v)
    return bytes(b)


def put_f32(b, off, v):
    b = bytearray(b)
    b[off:off + 4] = struct.pack("<f", v)
    return bytes(b)


def mlb_corpus():
    out = {}
    # valid models: every weight type, GQA, a separate classifier, odd F32 shapes
    out["ok-f32-minimal.mlb"] = mlb_model(2, 1, 1, 1, 1, 1, 1, F32, True, seed=1)
    out["ok-f32-gqa-wcls.mlb"] = mlb_model(8, 2, 4, 2, 6, 7, 5, F32, False, seed=2)
    out["ok-f32-odd-hidden.mlb"] = mlb_model(4, 1, 2, 1, 3, 5, 3, F32, True, seed=3)
    out["ok-q8_0-small.mlb"] = mlb_model(32, 1, 2, 1, 32, 6, 4, Q8_0, True, seed=4)
    out["ok-q8_0-wcls.mlb"] = mlb_model(32, 1, 4, 4, 64, 3, 2, Q8_0, False, seed=5)
    out["ok-q4_0-small.mlb"] = mlb_model(32, 1, 2, 2, 32, 5, 4, Q4_0, True, seed=6)
    out["ok-q4_0-gqa-wcls.mlb"] = mlb_model(32, 2, 4, 1, 32, 4, 3, Q4_0, False, seed=7)
    out["ok-q8_0-panel16.mlb"] = mlb_model(32, 1, 2, 1, 32, 6, 4, Q8_0, True, seed=8, layout=1)
    out["ok-q4_0-panel16-wcls.mlb"] = mlb_model(64, 1, 4, 2, 96, 17, 3, Q4_0, False, seed=9, layout=1)
    # layout 2: the same models with binary16 scales (the same draws, each scale rounded to binary16)
    out["ok-q8_0-panel16f16.mlb"] = mlb_model(32, 1, 2, 1, 32, 6, 4, Q8_0, True, seed=8, layout=2)
    out["ok-q4_0-panel16f16-wcls.mlb"] = mlb_model(64, 1, 4, 2, 96, 17, 3, Q4_0, False, seed=9, layout=2)
    good = out["ok-q8_0-small.mlb"]
    f32 = out["ok-f32-gqa-wcls.mlb"]
    # broken files: one per rule of runtime/model.cc
    out["bad-empty.mlb"] = b""
    out["bad-short-header.mlb"] = good[:100]
    out["bad-header-only.mlb"] = good[:256]
    out["bad-magic.mlb"] = b"GGUF" + good[4:]
    out["bad-version.mlb"] = put_u32(good, 4, 3)
    # version 2 (bytes 56..87): arch, qkv_bias (+ bq/bk/bv F32 after wv), llama3 RoPE scaling, n_tokens
    v2 = put_u32(good, 4, 2)
    llama3 = put_u32(put_f32(put_f32(put_f32(put_u32(put_u32(v2, 56, 0), 64, 1), 68, 32.0), 72, 1.0),
                             76, 4.0), 80, 8192)
    out["ok-v2-zero-fields.mlb"] = v2
    out["ok-v2-llama3-rope.mlb"] = put_u32(llama3, 84, 5)
    out["ok-v2-qwen2-bias.mlb"] = mlb_model(32, 2, 4, 2, 32, 7, 4, Q8_0, True, seed=10, arch=1, qkv_bias=1,
                                            n_tokens=6)
    out["ok-v2-qwen2-bias-f32.mlb"] = mlb_model(8, 1, 2, 1, 6, 5, 3, F32, False, seed=11, arch=1, qkv_bias=1)
    out["bad-v1-arch.mlb"] = put_u32(good, 56, 1)
    out["bad-v2-arch.mlb"] = put_u32(v2, 56, 2)
    out["bad-v2-qkv-bias-2.mlb"] = put_u32(v2, 60, 2)
    out["bad-v2-qkv-bias-absent.mlb"] = put_u32(v2, 60, 1)
    out["bad-v2-qkv-bias-dropped.mlb"] = put_u32(out["ok-v2-qwen2-bias.mlb"], 60, 0)
    out["bad-v2-rope-scaling.mlb"] = put_u32(v2, 64, 2)
    out["bad-v2-rope-params-without-scaling.mlb"] = put_f32(v2, 68, 8.0)
    out["bad-v2-rope-factor-nan.mlb"] = put_f32(llama3, 68, float("nan"))
    out["bad-v2-rope-factor-zero.mlb"] = put_f32(llama3, 68, 0.0)
    out["bad-v2-rope-low-not-below-high.mlb"] = put_f32(llama3, 72, 4.0)
    out["bad-v2-rope-high-inf.mlb"] = put_f32(llama3, 76, float("inf"))
    out["bad-v2-rope-original-zero.mlb"] = put_u32(llama3, 80, 0)
    out["bad-v2-n-tokens-over-vocab.mlb"] = put_u32(v2, 84, 7)
    out["bad-v2-reserved.mlb"] = v2[:88] + b"\x01" + v2[89:]
    for name, off in (("dim", 8), ("n_layers", 12), ("n_heads", 16), ("n_kv_heads", 20),
                      ("hidden_dim", 24), ("vocab", 28), ("max_seq", 32)):
        out["bad-%s-zero.mlb" % name] = put_u32(good, off, 0)
        out["bad-%s-huge.mlb" % name] = put_u32(good, off, 0xFFFFFFFF)
    out["bad-dim-odd.mlb"] = put_u32(f32, 8, 7)
    out["bad-dim-not-k32.mlb"] = put_u32(good, 8, 40)
    out["bad-hidden-not-k32.mlb"] = put_u32(good, 24, 80)
    out["bad-heads-not-dividing.mlb"] = put_u32(good, 16, 3)
    out["bad-head-dim-odd.mlb"] = put_u32(put_u32(f32, 16, 8), 20, 8)
    out["bad-kv-heads-not-dividing.mlb"] = put_u32(f32, 20, 3)
    out["bad-kv-heads-more.mlb"] = put_u32(f32, 20, 8)
    out["bad-theta-nan.mlb"] = put_f32(good, 36, float("nan"))
    out["bad-theta-inf.mlb"] = put_f32(good, 36, float("inf"))
    out["bad-theta-zero.mlb"] = put_f32(good, 36, 0.0)
    out["bad-eps-negative.mlb"] = put_f32(good, 40, -1e-5)
    out["bad-wtype.mlb"] = put_u32(good, 44, 1)
    out["bad-shared-2.mlb"] = put_u32(good, 48, 2)
    out["bad-shared-flipped.mlb"] = put_u32(good, 48, 0)
    out["bad-layout.mlb"] = put_u32(good, 52, 3)
    out["bad-layout-panel-as-rows.mlb"] = put_u32(out["ok-q8_0-panel16.mlb"], 52, 0)
    out["bad-layout-rows-as-panel.mlb"] = put_u32(good, 52, 1)
    out["bad-layout-panel-f32.mlb"] = put_u32(out["ok-f32-gqa-wcls.mlb"], 52, 1)
    out["bad-layout-panel16f16-f32.mlb"] = put_u32(out["ok-f32-gqa-wcls.mlb"], 52, 2)
    # layout 2's d arrays are half layout 1's: one read as the other has the wrong size
    out["bad-layout-panel-as-panel16f16.mlb"] = put_u32(out["ok-q8_0-panel16.mlb"], 52, 2)
    out["bad-layout-panel16f16-as-panel.mlb"] = put_u32(out["ok-q8_0-panel16f16.mlb"], 52, 1)
    out["bad-reserved.mlb"] = good[:255] + b"\x01" + good[256:]
    out["bad-truncated-mid.mlb"] = good[:len(good) // 2]
    out["bad-minus-one.mlb"] = good[:-1]
    out["bad-trailing.mlb"] = good + bytes(64)
    out["bad-vocab-larger.mlb"] = put_u32(good, 28, 1000)
    out["bad-layers-more.mlb"] = put_u32(good, 12, 2)
    out["bad-wtype-q4-as-q8.mlb"] = put_u32(out["ok-q4_0-small.mlb"], 44, Q8_0)
    return out


# ----------------------------------------------------------------------------- tokenizers

def tokenizer_bin(pieces, scores, max_len=None):
    if max_len is None:
        max_len = max(len(p) for p in pieces)
    out = [struct.pack("<i", max_len)]
    for p, s in zip(pieces, scores):
        out.append(struct.pack("<fi", s, len(p)))
        out.append(p)
    return b"".join(out)


# Merges of the encode tokenizer, in the order a sentencepiece-like vocabulary would list them
# (each is the concatenation of two pieces that are already in the vocabulary).
MERGES = ["th", "he", "in", "an", "on", "er", " t", " a", " s", " w", " th", " the", "re", "at",
          "en", "nd", " an", " and", "ce", "up", " up", " on", " o", "On", "Onc", "Once", " ti",
          " tim", " time", "im", "me", "as", " was", "ll", "il", " L", " Li", " Lil", " Lily",
          "  ", "   ", "    ", "é", " é", "你好", "ed", "ing"]


def encode_tokenizer():
    """A small llama2.c-layout vocabulary: <unk>, BOS, EOS, the 256 byte tokens <0x00>..<0xFF>
    at ids 3..258, printable ASCII, a few non-ASCII characters, then merges with scores rising
    towards the longer pieces. No merged piece contains a control byte."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"]
    pieces += [("<0x%02X>" % b).encode() for b in range(256)]
    scores = [0.0] * len(pieces)
    chars = [chr(c) for c in range(32, 127)] + ["é", "ü", "你", "好", "—", "🙂"]
    for i, c in enumerate(chars):
        pieces.append(c.encode("utf-8"))
        scores.append(-1000.0 - i)
    have = set(pieces)
    for i, m in enumerate(MERGES):
        b = m.encode("utf-8")
        if b in have:
            continue
        # reachable: some split point gives two pieces already present
        assert any(b[:k] in have and b[k:] in have for k in range(1, len(b))), m
        pieces.append(b)
        scores.append(-500.0 + i)
        have.add(b)
    return pieces, scores


# ------------------------------------------------------------------ MLTK (byte-level BPE)

def mltk(tokens, merges, pretok=0, norm=0, flags=0, bos=-1, eos=-1, eot=-1, pad=-1, stops=(), tmpl=b""):
    """An MLTK v1 image (docs/tokenizer-format.md), written from the doc: tokens are (kind, bytes),
    merges (left, right, result) ids in rank order."""
    out = [b"MLTK", struct.pack("<III", 1, len(tokens), len(merges)), bytes([pretok, norm, flags, 0]),
           struct.pack("<iiiiII", bos, eos, eot, pad, len(stops), len(tmpl)), bytes(20)]
    for kind, b in tokens:
        out.append(struct.pack("<BH", kind, len(b)) + b)
    for m in merges:
        out.append(struct.pack("<iii", *m))
    out.append(b"".join(struct.pack("<i", v) for v in stops))
    out.append(tmpl)
    return b"".join(out)


# Merges of the byte-level encode vocabulary (GPT-2 spells a leading space as part of the word).
BPE_MERGES = ["t h", "h e", "th e", "i n", "a n", "o n", "e r", "\u0120 t", "\u0120 a", "\u0120 s", "\u0120 w",
              "\u0120t he", "\u0120 the", "r e", "a t", "e n", "n d", "an d", "\u0120 and", "\u0120a nd",
              "O n", "On c", "Onc e", "\u0120 u", "\u0120u p", "\u0120 o", "\u0120o n", "i m", "\u0120t im",
              "\u0120t i", "m e", "\u0120ti me", "\u0120tim e", "l l", "i l", "\u0120 L", "\u0120L il", "l y",
              "\u0120Lil y", "\u0120 \u0120", "\u0120\u0120 \u0120\u0120", "\u00c3 \u00a9", "\u0120 \u00c3\u00a9",
              "\u00f0 \u0141", "\u00f0\u0141 \u013b", "\u00f0\u0141\u013b \u0124", "1 2", "12 3", "\u00e4 \u00bd",
              "\u00e4\u00bd \u0142", "e d", "in g", "a a", "aa aa", "aa a"]


def gpt2_bytes(s):
    """The bytes a GPT-2 byte-to-unicode string stands for (tokenizer.json's token spelling)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    inv = {chr(c): b for b, c in zip(bs, cs)}
    return bytes(inv[ch] for ch in s)


def bpe_vocab(pretok=0, norm=0, flags=0, absent=True):
    """A small byte-level vocabulary: the 256 byte tokens (in GPT-2's order, not id = byte),
    merged tokens, then special, added and absent tokens; returns (tokens, merges, ids)."""
    order = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    order += [b for b in range(256) if b not in order]
    tokens = [(0, bytes([b])) for b in order]
    ids = {t[1]: i for i, t in enumerate(tokens)}
    merges = []
    for m in BPE_MERGES:
        l, r = (gpt2_bytes(x) for x in m.split(" "))
        assert l in ids and r in ids, m
        if l + r not in ids:
            ids[l + r] = len(tokens)
            tokens.append((0, l + r))
        merges.append((ids[l], ids[r], ids[l + r]))
    named = {}
    for kind, text in ((1, "<|endoftext|>"), (1, "<|im_start|>"), (1, "<|im_end|>"), (2, "<added>"),
                       (2, "<added>x"), (1, "<|é|>")):
        named[text] = len(tokens)
        tokens.append((kind, text.encode("utf-8")))
    if absent:
        tokens.append((3, b""))
    return tokens, merges, named


def encode_mltk():
    """The byte-level encode target's tokenizer (fuzz/data/encode_tokenizer.mltk): qwen2
    pre-tokenizer, NFC, add_bos with <|endoftext|> as BOS/EOS."""
    tokens, merges, named = bpe_vocab()
    return mltk(tokens, merges, pretok=2, norm=1, flags=1, bos=named["<|endoftext|>"], eos=named["<|endoftext|>"],
                eot=named["<|im_end|>"], stops=[named["<|im_end|>"]], tmpl=b"{{ chatml }}")


def mltk_corpus():
    out = {}

    def seed(name, vocab, body):
        out[name] = struct.pack("<H", vocab) + body

    tokens, merges, named = bpe_vocab()
    n = len(tokens)
    good = encode_mltk()
    seed("ok-mltk-encode.bin", n, good)
    seed("ok-mltk-standalone.bin", 0, good)
    seed("ok-mltk-larger-vocab.bin", n + 100, good)
    for pretok, norm, flags, name in ((0, 0, 0, "gpt2"), (1, 1, 3, "llama3-ignore-merges"), (3, 0, 2, "smollm")):
        seed("ok-mltk-%s.bin" % name, n, mltk(tokens, merges, pretok, norm, flags, bos=named["<|im_start|>"]))
    byte_only = [(0, bytes([b])) for b in range(256)]
    seed("ok-mltk-bytes-only.bin", 256, mltk(byte_only, []))
    # broken: one per rule of runtime/bpe_tokenizer.cc
    seed("bad-mltk-vocab-smaller.bin", n - 1, good)
    seed("bad-mltk-magic-case.bin", n, b"mltk" + good[4:])
    seed("bad-mltk-version.bin", n, put_u32(good, 4, 2))
    seed("bad-mltk-n-tokens-zero.bin", 0, put_u32(good, 8, 0))
    seed("bad-mltk-n-merges-huge.bin", n, put_u32(good, 12, 0x7FFFFFFF))
    seed("bad-mltk-pretokenizer.bin", n, good[:16] + b"\x04" + good[17:])
    seed("bad-mltk-normalizer.bin", n, good[:17] + b"\x02" + good[18:])
    seed("bad-mltk-flags.bin", n, good[:18] + b"\x80" + good[19:])
    seed("bad-mltk-bos-range.bin", n, put_u32(good, 20, n))
    seed("bad-mltk-n-stop.bin", n, put_u32(good, 36, 65))
    seed("bad-mltk-reserved.bin", n, good[:63] + b"\x01" + good[64:])
    seed("bad-mltk-truncated-header.bin", n, good[:63])
    seed("bad-mltk-truncated.bin", n, good[:-1])
    seed("bad-mltk-truncated-tokens.bin", n, good[:64 + 700])
    seed("bad-mltk-trailing.bin", n, good + b"\0")
    dup = list(tokens)
    dup[0] = dup[1]
    seed("bad-mltk-duplicate-byte.bin", n, mltk(dup, merges))
    m2 = list(merges)
    m2[3] = (m2[3][0], m2[3][1], m2[4][2])
    seed("bad-mltk-merge-result.bin", n, mltk(tokens, m2))
    m3 = list(merges)
    m3[0] = (n, m3[0][1], m3[0][2])
    seed("bad-mltk-merge-id-range.bin", n, mltk(tokens, m3))
    seed("bad-mltk-merge-repeated.bin", n, mltk(tokens, merges + [merges[0]]))
    seed("bad-mltk-merge-special.bin", n, mltk(tokens, merges + [(named["<added>"], 0, named["<added>x"])]))
    t2 = list(tokens)
    t2[-2] = (1, b"\xff\xfe")
    seed("bad-mltk-special-not-utf8.bin", n, mltk(t2, merges))
    t3 = list(tokens)
    t3[-1] = (3, b"x")
    seed("bad-mltk-absent-with-bytes.bin", n, mltk(t3, merges))
    t4 = list(tokens)
    t4[5] = (4, t4[5][1])
    seed("bad-mltk-kind.bin", n, mltk(t4, merges))
    seed("bad-mltk-stop-range.bin", n, mltk(tokens, merges, stops=[n]))
    return out


def tokenizer_corpus(enc_pieces, enc_scores):
    out = {}

    def seed(name, vocab, body):
        out[name] = struct.pack("<H", vocab) + body

    enc = tokenizer_bin(enc_pieces, enc_scores)
    V = len(enc_pieces)
    seed("ok-encode-tokenizer.bin", V, enc)
    small = [b"<unk>", b"\n<s>\n", b"\n</s>\n", b"a", b"b", b" ", b"ab", b" a", b""]
    seed("ok-small.bin", len(small), tokenizer_bin(small, [0.0, 0, 0, -1, -2, -3, 5, 4, 0]))
    seed("ok-one-token.bin", 1, tokenizer_bin([b"x"], [0.0]))
    seed("ok-empty-pieces.bin", 3, tokenizer_bin([b"", b"", b""], [0.0, 0.0, 0.0], max_len=1))
    seed("ok-embedded-nul.bin", 4, tokenizer_bin([b"a\0b", b"\0", b" ", b"a"], [1.0, 2, 3, 4]))
    nan = struct.unpack("<f", struct.pack("<I", 0x7FC00000))[0]
    seed("ok-nan-scores.bin", 4, tokenizer_bin([b"a", b"b", b"ab", b" "], [nan, nan, nan, nan]))
    seed("ok-bytes-only.bin", 259, tokenizer_bin(enc_pieces[:259], enc_scores[:259]))
    seed("ok-byte-pieces-lowercase.bin", 259,
         tokenizer_bin(enc_pieces[:3] + [("<0x%02x>" % b).encode() for b in range(256)],
                       [0.0] * 259))
    # broken: vocab mismatches both ways, truncations, bad lengths
    seed("bad-empty.bin", 4, b"")
    seed("bad-short-header.bin", 4, b"\x05\x00")
    seed("bad-mtl-zero.bin", 1, struct.pack("<i", 0) + enc[4:])
    seed("bad-mtl-negative.bin", V, struct.pack("<i", -1) + enc[4:])
    seed("bad-mtl-huge.bin", V, struct.pack("<i", 1 << 30) + enc[4:])
    seed("bad-fewer-tokens.bin", V + 1, enc)
    seed("bad-more-tokens.bin", V - 1, enc)
    seed("bad-truncated-score.bin", V, enc[:-3 - len(enc_pieces[-1]) - 4])
    seed("bad-truncated-piece.bin", V, enc[:-1])
    seed("bad-length-negative.bin", 2, struct.pack("<i", 4) + struct.pack("<fi", 0, -1) + b"")
    seed("bad-length-over-mtl.bin", 1, struct.pack("<i", 2) + struct.pack("<fi", 0, 3) + b"abc")
    seed("bad-length-past-end.bin", 1, struct.pack("<i", 64) + struct.pack("<fi", 0, 60) + b"abc")
    seed("bad-trailing.bin", 1, tokenizer_bin([b"x"], [0.0]) + b"\0")
    seed("ok-standalone-count.bin", 0, enc)  # vocab 0: the tokens the file holds
    seed("bad-standalone-truncated.bin", 0, enc[:-1])
    out.update(mltk_corpus())
    return out


def encode_corpus():
    out = {}
    texts = {
        "ok-once.txt": "Once upon a time, there was a little girl named Lily.",
        "ok-spaces.txt": "  leading and    inner   spaces  ",
        "ok-controls.txt": "tab\there\nnew line\r\n\x01\x7f bell\x07",
        "ok-utf8.txt": "Ünïcödé — “quotes”, ñ, 你好 日本語 🙂 \U0010FFFF \u0800 \U00010000",
        "ok-one-char.txt": "x",
        "ok-the.txt": "the the the and and thethe",
        "ok-byte-lookalike.txt": "<0x41> <0xZZ> <0x",
        "ok-empty.txt": "",
        "ok-chatml.txt": "<|im_start|>user\nHi <added>x there<|im_end|>\n<|im_start|>assistant\n<|endoftext|>",
        "ok-nfd.txt": "Cafe\u0301 e\u0301te\u0301 \u1e9b\u0323 \uac00 \u1100\u1161 \u212b",
        "ok-numbers.txt": "12345 1234567 3.14159 100,000 \u0661\u0662\u0663",
        "ok-contractions.txt": "I'm you're HE'LL she'd it's we've THEY'RE don't",
        "ok-code.txt": "def f(x):\n    return x  # comment\n\n\tpass\r\n    \n",
        "ok-aaaa.txt": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaaaaa",
    }
    for name, t in texts.items():
        out[name] = t.encode("utf-8")
    bad = {
        "bad-ff.txt": b"ab\xffcd",
        "bad-lone-continuation.txt": b"a\x80b",
        "bad-overlong-2.txt": b"\xc0\xaf",
        "bad-overlong-3.txt": b"\xe0\x80\xaf",
        "bad-overlong-4.txt": b"\xf0\x80\x80\xaf",
        "bad-surrogate.txt": b"\xed\xa0\x80",
        "bad-past-10ffff.txt": b"\xf4\x90\x80\x80",
        "bad-f5.txt": b"\xf5\x80\x80\x80",
        "bad-truncated-end.txt": b"abc\xe4\xbd",
        "bad-truncated-mid.txt": b"\xe4\xbdabc",
        "bad-five-continuations.txt": b"\xf0\x9f\x99\x82\x82",
    }
    out.update(bad)
    return out


def chat_seed(fmt, add_assistant, source, bos, eos, today, messages):
    fields = [source, bos, eos, today]
    for role, content in messages:
        fields += [role, content]
    return bytes([fmt | (8 if add_assistant else 0)]) + b"\0".join(f.encode("utf-8") for f in fields)


def chat_corpus():
    chatml = ("{% for m in messages %}{% if loop.first and m['role'] != 'system' %}"
              "{{ '<|im_start|>system\\nYou are a helpful \\'assistant\\'.<|im_end|>\\n' }}{% endif %}"
              "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{% endfor %}")
    zephyr = ("{% for m in messages %}{% if m['role'] == 'user' %}{{ '<|user|>\\n' + m['content'] + eos_token }}"
              "{% elif m['role'] == 'assistant' %}{{ '<|assistant|>\\n' + m['content'] + eos_token }}{% endif %}"
              "{% endfor %}")
    llama2 = "{{ bos_token + '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' }} [/INST]"
    llama31 = ('{%- set date_string = "26 Jul 2024" %}<|start_header_id|>system<|end_header_id|>'
               "Cutting Knowledge Date: December 2023 <|eot_id|>{% if add_generation_prompt %}")
    llama32 = ("strftime_now('%d %b %Y') <|start_header_id|> <|end_header_id|> <|eot_id|> "
               "Cutting Knowledge Date: December 2023 add_generation_prompt")
    llama30 = "<|start_header_id|>{{ role }}<|end_header_id|>\n\n{{ content | trim }}<|eot_id|>"
    talk = [("user", "Hi there!"), ("assistant", "  Hello — how can I help? "), ("user", "\tCafé? 日本 🙂\n")]
    seeds = {
        "ok-chatml-detected.bin": chat_seed(0, True, chatml, "", "<|endoftext|>", "01 Dec 2026", talk),
        "ok-chatml-system-first.bin": chat_seed(0, False, chatml, "", "", "", [("system", "Be brief.")] + talk),
        "ok-zephyr.bin": chat_seed(0, True, zephyr, "<s>", "</s>", "", talk),
        "ok-llama2-system.bin": chat_seed(0, False, llama2, "<s>", "</s>", "", [("system", " Sys ")] + talk),
        "ok-llama2-odd-system.bin": chat_seed(3, True, "", "<s>", "</s>", "", [("user", "a"), ("system", "s")]),
        "ok-llama3-0.bin": chat_seed(0, False, llama30, "<|begin_of_text|>", "", "", talk),
        "ok-llama3-1-date-string.bin": chat_seed(0, True, llama31, "<|begin_of_text|>", "", "", talk),
        "ok-llama3-2-today.bin": chat_seed(0, True, llama32, "<|begin_of_text|>", "", "02 Dec 2026",
                                           [("system", "  x  ")] + talk),
        "ok-forced-chatml-no-template.bin": chat_seed(1, True, "", "", "", "", [("user", "")]),
        "ok-empty-contents.bin": chat_seed(2, False, "", "", "", "", [("user", ""), ("assistant", "")]),
        "bad-unknown-template.bin": chat_seed(0, True, "{{ messages }}", "", "", "", talk),
        "bad-format-5.bin": chat_seed(5, True, chatml, "", "", "", talk),
        "bad-role.bin": chat_seed(1, True, "", "", "", "", [("user", "a"), ("tool", "b")]),
        "bad-no-messages.bin": chat_seed(1, True, chatml, "", "", "", []),
        "bad-utf8-content.bin": chat_seed(1, True, "", "", "", "", [("user", "ok")]) + b"\0user\0ab\xffcd",
        "bad-llama2-two-users.bin": chat_seed(3, True, "", "<s>", "</s>", "", [("user", "a"), ("user", "b")]),
        "bad-llama2-assistant-first.bin": chat_seed(3, True, "", "", "", "", [("assistant", "a")]),
    }
    return seeds


# ----------------------------------------------------------------------------------- main

def all_files():
    pieces, scores = encode_tokenizer()
    files = {os.path.join(DATA, "encode_tokenizer.bin"): tokenizer_bin(pieces, scores),
             os.path.join(DATA, "encode_tokenizer.mltk"): encode_mltk()}
    for sub, content in (("mlb", mlb_corpus()), ("tokenizer", tokenizer_corpus(pieces, scores)),
                         ("encode", encode_corpus()), ("chat", chat_corpus())):
        for name, b in content.items():
            files[os.path.join(CORPUS, sub, name)] = b
    return files


def main():
    check = "--check" in sys.argv[1:]
    files = all_files()
    bad = []
    for path, b in sorted(files.items()):
        rel = os.path.relpath(path, HERE)
        if check:
            try:
                with open(path, "rb") as f:
                    if f.read() != b:
                        bad.append("%s differs" % rel)
            except OSError:
                bad.append("%s is missing" % rel)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(b)
    # files in the corpus folders that the script does not write
    for sub in ("mlb", "tokenizer", "encode", "chat"):
        d = os.path.join(CORPUS, sub)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            p = os.path.join(d, name)
            if p not in files:
                if check:
                    bad.append("%s is not written by gen_corpus.py" % os.path.relpath(p, HERE))
                else:
                    os.remove(p)
    if check:
        if bad:
            for line in bad:
                print("gen_corpus.py --check: " + line, file=sys.stderr)
            print("gen_corpus.py --check: run fuzz/gen_corpus.py and commit the result", file=sys.stderr)
            return 1
        print("gen_corpus.py --check: %d files match" % len(files))
    else:
        print("gen_corpus.py: wrote %d files under %s" % (len(files), HERE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
