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
  gguf/       GGUF models (ggml's docs/gguf.md): small valid llama and qwen2 files (F32, F16, BF16,
              Q8_0, Q4_0 and mixed matrices; shared, byte-identical and separate classifiers;
              SentencePiece 'llama' and byte-level 'gpt2' tokenizers; Llama 3's rope_freqs), and
              one broken file per rule of the reader (truncations, offsets, overflowing dimensions,
              every ggml type id the runtime does not run, absurd array lengths, bad vocabularies)
  chat/       a format byte, then NUL-separated template source, bos, eos, today and the messages'
              role / content pairs (fuzz/fuzz_chat.cc); the templates are short stand-ins holding
              each format's markers, written here
  request/    a flags byte, NUL-terminated Authorization, Origin, method and path, then an HTTP
              request body (fuzz/fuzz_request.cc: ml_server's request layer)
The .mlb writer here is written from docs/mlb-format.md, independently of tools/mlb.py; the GGUF
writer from the GGUF specification, independently of tools/gguf.py.
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
    out["bad-version.mlb"] = put_u32(good, 4, 4)
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
    # broken: one per rule of runtime/text/bpe_tokenizer.cc
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
        "ok-qwen3-forced.bin": chat_seed(5, True, chatml, "", "", "", talk + [("assistant", "<think>\nhm\n</think>\n\nOK")]),
        "bad-format-6.bin": chat_seed(6, True, chatml, "", "", "", talk),
        "bad-role.bin": chat_seed(1, True, "", "", "", "", [("user", "a"), ("tool", "b")]),
        "bad-no-messages.bin": chat_seed(1, True, chatml, "", "", "", []),
        "bad-utf8-content.bin": chat_seed(1, True, "", "", "", "", [("user", "ok")]) + b"\0user\0ab\xffcd",
        "bad-llama2-two-users.bin": chat_seed(3, True, "", "<s>", "</s>", "", [("user", "a"), ("user", "b")]),
        "bad-llama2-assistant-first.bin": chat_seed(3, True, "", "", "", "", [("assistant", "a")]),
    }
    return seeds


# ------------------------------------------------------------------------------ server requests

def request_seed(chat, body, auth="Bearer s3cret", origin="http://allowed.example:8000", method="POST",
                 path="/v1/completions", star=False):
    head = bytes([(1 if chat else 0) | (2 if star else 0)])
    b = body if isinstance(body, bytes) else body.encode("utf-8")
    return head + b"\0".join(x.encode("utf-8") for x in (auth, origin, method, path)) + b"\0" + b


def request_corpus():
    msgs = '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]'
    return {
        "ok-completion.bin": request_seed(False, '{"prompt": "Once upon a time", "max_tokens": 8}'),
        "ok-completion-all-fields.bin": request_seed(False, '{"prompt": ["Once"], "max_tokens": 3, "temperature": 0, '
                                                    '"top_p": 0.5, "seed": 7, "stop": ["\\n", ""], "top_k": 40, '
                                                    '"min_p": 0.05, "repeat_penalty": 1.1, "repeat_last_n": -1, '
                                                    '"presence_penalty": 0.5, "frequency_penalty": -0.5, '
                                                    '"logit_bias": {"13": -100}, "logprobs": 2, "stream": true, '
                                                    '"model": "x", "user": "u"}', auth="bearer   s3cret"),
        "ok-chat.bin": request_seed(True, '{"messages": %s, "stream": true}' % msgs, path="/v1/chat/completions"),
        "ok-chat-parts.bin": request_seed(True, '{"messages": [{"role": "user", "content": [{"type": "text", '
                                          '"text": "a"}, {"text": "b"}]}], "logprobs": true, "top_logprobs": 3, '
                                          '"response_format": {"type": "json_schema", "json_schema": {"schema": '
                                          '{"type": "object"}}}}', origin="*", method="OPTIONS"),
        "ok-star-origin.bin": request_seed(False, '{"prompt": "x"}', origin="HTTPS://Example.COM", star=True,
                                           method="GET", path="/metrics"),
        "ok-page.bin": request_seed(False, '{"prompt": ""}', auth="", origin="null", method="GET", path="/"),
        "bad-malformed.bin": request_seed(False, '{"prompt": '),
        "bad-not-utf8.bin": request_seed(False, b'{"prompt": "\xff"}'),
        "bad-unsupported-field.bin": request_seed(True, '{"messages": %s, "functions": []}' % msgs),
        "bad-temperature.bin": request_seed(False, '{"prompt": "a", "temperature": -1}', auth="Basic s3cret"),
        "bad-top-p-zero.bin": request_seed(False, '{"prompt": "a", "top_p": 0}', origin="http://a.example/"),
        "bad-nul-prompt.bin": request_seed(False, '{"prompt": "a\\u0000b"}', origin="ftp://a.example"),
        "bad-role.bin": request_seed(True, '{"messages": [{"role": "function", "content": "x"}]}', path="/health",
                                     method="GET"),
        "bad-huge-seed.bin": request_seed(False, '{"prompt": "a", "n": 18446744073709551615}', path="/nowhere"),
        "bad-not-object.bin": request_seed(False, '[1, 2]', auth="Bearer s3cret2", path="/v1/models", method="GET"),
        "bad-logit-bias-key.bin": request_seed(False, '{"prompt": "a", "logit_bias": {"-1": 1}}', origin="http://u@a.example"),
        "bad-max-tokens.bin": request_seed(True, '{"messages": %s, "max_tokens": 0}' % msgs, auth="Bearer\ts3cret"),
    }


# ------------------------------------------------------------------------------ GGUF writer
# Written from the GGUF specification (ggml's docs/gguf.md), independently of tools/gguf.py:
#   magic "GGUF", u32 version, u64 n_tensors, u64 n_kv; n_kv entries (string key, u32 value type,
#   value); n_tensors infos (string name, u32 n_dims, u64 dims[n_dims] with dims[0] the contiguous
#   one, u32 ggml type, u64 offset into the data section); padding to general.alignment (32 when
#   absent); the data section. Strings: u64 length, bytes. Arrays: u32 item type, u64 count, items.
# Everything little-endian.

GV = dict(u8=0, i8=1, u16=2, i16=3, u32=4, i32=5, f32=6, bool=7, str=8, arr=9, u64=10, i64=11, f64=12)
_GV_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}

# ggml type ids: (name, elements per block, bytes per block); None for the removed ids.
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 4: None, 5: None,
              6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
              10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
              14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74),
              18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
              22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
              26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2),
              31: None, 32: None, 33: None, 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 36: None, 37: None,
              38: None, 39: ("MXFP4", 32, 17)}
G_F32, G_F16, G_Q4_0, G_Q8_0, G_BF16 = 0, 1, 2, 8, 30


def g_str(b):
    if isinstance(b, str):
        b = b.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def g_value(vt, v):
    """The bytes of a value of GGUF type vt (arrays: v = (item type, [items]))."""
    if vt == GV["str"]:
        return g_str(v)
    if vt == GV["arr"]:
        it, items = v
        return struct.pack("<IQ", it, len(items)) + b"".join(g_value(it, x) for x in items)
    return struct.pack(_GV_FMT[vt], v)


class Gguf:
    """A GGUF file under construction: metadata and tensors in order; build() lays the data
    section out (each tensor at the next aligned offset unless it names its own)."""

    def __init__(self, version=3):
        self.version = version
        self.kv = []        # (key bytes, raw value bytes with its type)
        self.tensors = []   # dicts: name, dims, type, data, off (None: next aligned)
        self.alignment = 32

    def add(self, key, vt, v):
        if key == "general.alignment":
            self.alignment = v
        self.kv.append([key.encode("utf-8") if isinstance(key, str) else key, struct.pack("<I", vt) + g_value(vt, v)])

    def add_raw(self, key, raw):
        self.kv.append([key.encode("utf-8"), raw])

    def set(self, key, vt, v):
        """Replaces the value of key (kept in place)."""
        for e in self.kv:
            if e[0] == key.encode("utf-8"):
                e[1] = struct.pack("<I", vt) + g_value(vt, v)
                return
        raise KeyError(key)

    def drop(self, key):
        self.kv = [e for e in self.kv if e[0] != key.encode("utf-8")]

    def tensor(self, name, dims, gtype, data, off=None):
        self.tensors.append(dict(name=name, dims=list(dims), type=gtype, data=data, off=off))

    def find(self, name):
        return next(t for t in self.tensors if t["name"] == name)

    def build(self, n_tensors=None, n_kv=None):
        al = self.alignment if isinstance(self.alignment, int) and self.alignment > 0 else 32
        offs, end = [], 0
        for t in self.tensors:
            off = (end + al - 1) // al * al if t["off"] is None else t["off"]
            offs.append(off)
            if t["off"] is None:
                end = off + len(t["data"])
        out = bytearray(b"GGUF" + struct.pack("<IQQ", self.version,
                                              len(self.tensors) if n_tensors is None else n_tensors,
                                              len(self.kv) if n_kv is None else n_kv))
        for k, raw in self.kv:
            out += g_str(k) + raw
        for t, off in zip(self.tensors, offs):
            out += g_str(t["name"]) + struct.pack("<I", len(t["dims"]))
            out += b"".join(struct.pack("<Q", d) for d in t["dims"])
            out += struct.pack("<IQ", t["type"], off)
        out += bytes((len(out) + al - 1) // al * al - len(out))
        base = len(out)
        data = bytearray()
        for t, off in zip(self.tensors, offs):
            if t["off"] is None or off + len(t["data"]) <= len(data):
                need = off + len(t["data"])
                if len(data) < need:
                    data += bytes(need - len(data))
                data[off:off + len(t["data"])] = t["data"]
        out += data
        assert len(out) == base + len(data)
        return bytes(out)


def g_tensor_bytes(gtype, rows, cols, rng):
    """rows x cols elements of ggml type gtype, deterministic (small exact values)."""
    n = rows * cols
    if gtype == G_F32:
        return f32_bytes([rng.uniform(-1) for _ in range(n)])
    if gtype == G_F16:
        return f16_bytes([rng.uniform(-1) for _ in range(n)])
    if gtype == G_BF16:
        return b"".join(struct.pack("<f", rng.uniform(-1))[2:] for _ in range(n))
    if gtype == G_Q8_0:
        return b"".join(f16_bytes([rng.uniform(-8)]) + bytes(rng.randrange(256) for _ in range(32))
                        for _ in range(n // 32))
    if gtype == G_Q4_0:
        return b"".join(f16_bytes([rng.uniform(-6)]) + bytes(rng.randrange(256) for _ in range(16))
                        for _ in range(n // 32))
    _, blk, bb = GGML_TYPES[gtype]
    return bytes(rng.randrange(256) for _ in range(n // blk * bb))


def g_vector_bytes(gtype, n, rng, base=1.0):
    if gtype not in (G_F32, G_F16, G_BF16):
        return g_tensor_bytes(gtype, 1, n, rng)
    vals = [base + rng.uniform(-4) for _ in range(n)]
    if gtype == G_F16:
        return f16_bytes(vals)
    if gtype == G_BF16:
        return b"".join(struct.pack("<f", v)[2:] for v in vals)
    return f32_bytes(vals)


SP = "\u2581"  # SentencePiece's word mark
LLAMA_PIECES = ["<unk>", "<s>", "</s>", SP, SP + "a", SP + "the", "a", "b", "c", "e", "h", "t", SP + "t", "th",
                "he", "<0x0A>"]


def gpt2_str(b):
    """GPT-2's byte-to-unicode spelling of bytes (the inverse of gpt2_bytes)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for x in range(256):
        if x not in bs:
            bs.append(x)
            cs.append(256 + n)
            n += 1
    fwd = dict(zip(bs, cs))
    return "".join(chr(fwd[x]) for x in b)


def gpt2_vocab(n_pad=3):
    """A byte-level vocabulary in GGUF's terms: (token strings, token types, merges), from the MLTK
    corpus' bpe_vocab(): normal tokens spelled in GPT-2's byte table, control and user-defined ones
    as UTF-8, then [PAD<i>] unused tokens (llama.cpp's padding of a larger embedding)."""
    tokens, _, _ = bpe_vocab(absent=False)
    strs, types = [], []
    for kind, b in tokens:
        if kind == 0:
            strs.append(gpt2_str(b))
            types.append(1)
        else:
            strs.append(b.decode("utf-8"))
            types.append(3 if kind == 1 else 4)
    for i in range(n_pad):
        strs.append("[PAD%d]" % (len(strs)))
        types.append(5)
    return strs, types, list(BPE_MERGES)


def g_model(arch="llama", dim=8, n_layers=1, n_heads=2, n_kv=1, hidden=16, vocab=None, ctx=64, mtype=G_F32,
            vtype=G_F32, emb_type=None, out_type=None, classifier="separate", tokenizer="llama", seed=7,
            rope_freqs=False, theta=10000.0, version=3, types=None):
    """A GGUF model of architecture llama or qwen2 with random weights. classifier: 'separate'
    (output.weight), 'none' (shared with the embedding), 'same' (output.weight with the embedding's
    bytes). tokenizer: 'llama', 'gpt2', 'bert' (a model the runtime does not read) or None.
    types: {tensor name: ggml type} overrides."""
    rng = Rng(seed)
    g = Gguf(version)
    g.add("general.architecture", GV["str"], arch)
    g.add("general.name", GV["str"], "fuzz seed")
    a = arch + "."
    g.add(a + "context_length", GV["u32"], ctx)
    g.add(a + "embedding_length", GV["u32"], dim)
    g.add(a + "block_count", GV["u32"], n_layers)
    g.add(a + "feed_forward_length", GV["u32"], hidden)
    g.add(a + "attention.head_count", GV["u32"], n_heads)
    g.add(a + "attention.head_count_kv", GV["u32"], n_kv)
    g.add(a + "attention.layer_norm_rms_epsilon", GV["f32"], 1e-5)
    g.add(a + "rope.freq_base", GV["f32"], theta)
    hd = dim // n_heads
    g.add(a + "rope.dimension_count", GV["u32"], hd)
    if tokenizer == "llama":
        pieces = LLAMA_PIECES[:]
        if vocab is None:
            vocab = len(pieces)
        pieces += ["<extra%d>" % i for i in range(vocab - len(pieces))]
        g.add("tokenizer.ggml.model", GV["str"], "llama")
        g.add("tokenizer.ggml.tokens", GV["arr"], (GV["str"], pieces))
        g.add("tokenizer.ggml.scores", GV["arr"], (GV["f32"], [-float(i) for i in range(vocab)]))
        g.add("tokenizer.ggml.token_type", GV["arr"], (GV["i32"], [2, 3, 3] + [1] * (vocab - 4) + [6]))
        g.add("tokenizer.ggml.bos_token_id", GV["u32"], 1)
        g.add("tokenizer.ggml.eos_token_id", GV["u32"], 2)
        g.add("tokenizer.ggml.unknown_token_id", GV["u32"], 0)
        g.add("tokenizer.ggml.add_bos_token", GV["bool"], 1)
    elif tokenizer == "gpt2":
        strs, ttypes, merges = gpt2_vocab()
        if vocab is None:
            vocab = len(strs)
        g.add("tokenizer.ggml.model", GV["str"], "gpt2")
        g.add("tokenizer.ggml.pre", GV["str"], "qwen2" if arch == "qwen2" else "llama-bpe")
        g.add("tokenizer.ggml.tokens", GV["arr"], (GV["str"], strs))
        g.add("tokenizer.ggml.token_type", GV["arr"], (GV["i32"], ttypes))
        g.add("tokenizer.ggml.merges", GV["arr"], (GV["str"], merges))
        eot = strs.index("<|endoftext|>")
        g.add("tokenizer.ggml.bos_token_id", GV["u32"], eot)
        g.add("tokenizer.ggml.eos_token_id", GV["u32"], strs.index("<|im_end|>"))
        g.add("tokenizer.ggml.padding_token_id", GV["u32"], eot)
        g.add("tokenizer.ggml.add_bos_token", GV["bool"], 0)
        g.add("tokenizer.chat_template", GV["str"],
              "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")
    elif tokenizer == "bert":
        g.add("tokenizer.ggml.model", GV["str"], "bert")
    if vocab is None:
        vocab = 16
    types = dict(types or {})
    kv = n_kv * hd
    perm = arch == "qwen2"

    def mat(name, rows, cols, t=None):
        t = types.get(name, mtype if t is None else t)
        g.tensor(name, [cols, rows], t, g_tensor_bytes(t, rows, cols, rng))

    def vec(name, n, base=1.0):
        t = types.get(name, vtype)
        g.tensor(name, [n], t, g_vector_bytes(t, n, rng, base))

    mat("token_embd.weight", vocab, dim, emb_type)
    for l in range(n_layers):
        b = "blk.%d." % l
        vec(b + "attn_norm.weight", dim)
        mat(b + "attn_q.weight", dim, dim)
        mat(b + "attn_k.weight", kv, dim)
        mat(b + "attn_v.weight", kv, dim)
        if perm:
            vec(b + "attn_q.bias", dim, 0.0)
            vec(b + "attn_k.bias", kv, 0.0)
            vec(b + "attn_v.bias", kv, 0.0)
        mat(b + "attn_output.weight", dim, dim)
        vec(b + "ffn_norm.weight", dim)
        mat(b + "ffn_gate.weight", hidden, dim)
        mat(b + "ffn_down.weight", dim, hidden)
        mat(b + "ffn_up.weight", hidden, dim)
    vec("output_norm.weight", dim)
    if classifier == "separate":
        mat("output.weight", vocab, dim, out_type)
    elif classifier == "same":
        e = g.find("token_embd.weight")
        g.tensor("output.weight", e["dims"], e["type"], e["data"])
    if rope_freqs:  # Llama 3's divisors (defaults: low 1, high 4, original context 8192, factor 8)
        got = []
        L, low, high, factor = 8192.0, 1.0, 4.0, 8.0
        f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
        for i in range(hd // 2):
            freq = f32(1.0 / theta ** (2.0 * i / hd))
            wl = 2 * 3.14159265358979323846 / freq
            if wl < L / high:
                w = 1.0
            elif wl > L / low:
                w = factor
            else:
                s = (L / wl - low) / (high - low)
                w = 1 / ((1 - s) / factor + s)
            got.append(f32(w))
        g.add(a + "rope.scaling.type", GV["str"], "llama3")
        g.tensor("rope_freqs.weight", [hd // 2], G_F32, f32_bytes(got))
    return g


def g_truncations(b, name, cuts):
    return {"bad-truncated-%s-%d.gguf" % (name, c): b[:c] for c in cuts}


def gguf_corpus():
    """fuzz/corpus/gguf/: valid models of each supported type, layout and tokenizer, and one broken
    file per rule of the reader (runtime/gguf.cc, gguf_model.cc, gguf_vocab.cc)."""
    seeds = {}
    qm = dict(dim=32, hidden=32, n_heads=4, n_kv=2)  # quantized matrices: 32-element blocks

    # ---- accepted
    seeds["ok-llama-f32.gguf"] = g_model().build()
    seeds["ok-llama-f16.gguf"] = g_model(mtype=G_F16, vtype=G_F16).build()
    seeds["ok-llama-bf16.gguf"] = g_model(mtype=G_BF16, vtype=G_BF16, n_layers=2).build()
    seeds["ok-llama-q8_0.gguf"] = g_model(mtype=G_Q8_0, **qm).build()
    seeds["ok-llama-q4_0.gguf"] = g_model(mtype=G_Q4_0, classifier="none", **qm).build()
    seeds["ok-llama-q4_0-same-classifier.gguf"] = g_model(mtype=G_Q4_0, classifier="same", **qm).build()
    seeds["ok-llama-mixed.gguf"] = g_model(
        mtype=G_Q4_0, emb_type=G_F16, out_type=G_Q8_0, vtype=G_BF16, n_layers=2, **qm,
        types={"blk.0.attn_v.weight": G_Q8_0, "blk.1.ffn_down.weight": G_F32, "blk.1.attn_q.weight": G_BF16,
               "blk.0.ffn_norm.weight": G_F16}).build()
    g = g_model()  # a SentencePiece piece of 4096 bytes: llama2.c's longest (the ▁ marks become spaces)
    g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], LLAMA_PIECES[:6] + [SP * 4096] + LLAMA_PIECES[7:]))
    seeds["ok-llama-token-4096-bytes.gguf"] = g.build()
    seeds["ok-llama-v2-f32.gguf"] = g_model(version=2).build()
    seeds["ok-llama-gqa-1-row-q8.gguf"] = g_model(mtype=G_Q8_0, dim=32, hidden=32, n_heads=8, n_kv=1,
                                                  types={}).build()
    seeds["ok-llama3-rope-freqs.gguf"] = g_model(dim=16, n_heads=2, n_kv=2, theta=500000.0, rope_freqs=True).build()
    seeds["ok-qwen2-q8_0-gpt2.gguf"] = g_model(arch="qwen2", tokenizer="gpt2", mtype=G_Q8_0, emb_type=G_Q4_0,
                                              out_type=G_F16, **qm).build()
    seeds["ok-qwen2-f16.gguf"] = g_model(arch="qwen2", mtype=G_F16, vtype=G_F16, classifier="none").build()
    seeds["ok-llama-gpt2-q4_0.gguf"] = g_model(tokenizer="gpt2", mtype=G_Q4_0, classifier="none", **qm).build()
    seeds["ok-llama-no-tokenizer.gguf"] = g_model(tokenizer=None).build()
    seeds["ok-llama-bert-tokenizer.gguf"] = g_model(tokenizer="bert").build()
    g = g_model(tokenizer="bert")
    g.set("tokenizer.ggml.model", GV["str"], "be\nrt")  # why there is no tokenizer: still one line
    seeds["ok-llama-tokenizer-model-with-newline.gguf"] = g.build()
    # hidden 1: ffn_gate and ffn_up are 1-row Q4_0 matrices padded to a 16-row panel (the largest
    # expansion: 18 bytes become 16 x 20), ffn_down a 1-column F32 one; a vocabulary of one token
    seeds["ok-llama-hidden-1-q4_0-1-row.gguf"] = g_model(
        mtype=G_Q4_0, dim=32, hidden=1, n_heads=4, n_kv=2, vocab=1, tokenizer=None,
        types={"blk.0.ffn_down.weight": G_F16}).build()
    g = g_model()
    g.add("general.alignment", GV["u32"], 64)
    seeds["ok-llama-alignment-64.gguf"] = g.build()
    g = g_model()
    g.add("general.alignment", GV["u32"], 1)
    seeds["ok-llama-alignment-1.gguf"] = g.build()
    g = g_model()
    g.add("general.tags", GV["arr"], (GV["arr"], [(GV["str"], ["a", "b"]), (GV["u8"], [1, 2, 3])]))
    g.add("general.empty", GV["arr"], (GV["u64"], []))
    seeds["ok-llama-nested-array-two-deep.gguf"] = g.build()

    # tokenizer corner cases the runtime accepts (and whose images must load)
    def tok_ok(name, fn):
        g = g_model(tokenizer="gpt2", mtype=G_Q4_0, classifier="none", **qm)
        strs, ttypes, merges = gpt2_vocab()
        strs, ttypes, merges = fn(strs, ttypes, merges, g)
        g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], strs))
        g.set("tokenizer.ggml.token_type", GV["arr"], (GV["i32"], ttypes))
        g.set("tokenizer.ggml.merges", GV["arr"], (GV["str"], merges))
        seeds["ok-gpt2-%s.gguf" % name] = g.build()

    def two_controls_alike(s, t, m, g):
        s[-4], t[-4], t[-5] = s[-5], 3, 3
        return s, t, m

    def control_as_normal_bytes(s, t, m, g):
        s[-4], t[-4] = "a", 3
        return s, t, m

    def bos_on_padding(s, t, m, g):
        g.set("tokenizer.ggml.bos_token_id", GV["u32"], len(s) - 1)
        g.add("tokenizer.ggml.eom_token_id", GV["u32"], 3)
        return s, t, m

    def unknown_after_bytes(s, t, m, g):
        g.set("tokenizer.ggml.bos_token_id", GV["u32"], 3)
        g.set("tokenizer.ggml.eos_token_id", GV["u32"], 4)
        g.set("tokenizer.ggml.padding_token_id", GV["u32"], 5)
        return s, t[:256] + [2] * (len(t) - 256), []

    tok_ok("two-controls-alike", two_controls_alike)
    tok_ok("control-as-normal-bytes", control_as_normal_bytes)
    tok_ok("bos-on-padding-eom", bos_on_padding)
    tok_ok("unknown-after-bytes-no-merges", unknown_after_bytes)
    tok_ok("merges-repeated", lambda s, t, m, g: (s, t, m + m))
    g = g_model()
    g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], [""] * 16))
    g.set("tokenizer.ggml.scores", GV["arr"], (GV["f32"], [float("nan")] * 16))
    seeds["ok-llama-empty-pieces-nan-scores.gguf"] = g.build()
    g = g_model(vocab=1)
    g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], ["a"]))
    g.set("tokenizer.ggml.scores", GV["arr"], (GV["u8"], [0]))
    g.set("tokenizer.ggml.bos_token_id", GV["u32"], 0)
    g.set("tokenizer.ggml.eos_token_id", GV["u32"], 0)
    seeds["ok-llama-vocab-1-bos-eos-alike.gguf"] = g.build()

    # ---- rejected: the container
    base = g_model()
    ok = base.build()
    seeds.update(g_truncations(ok, "llama-f32", [0, 3, 4, 8, 23, 24, 40, 200, len(ok) // 2, len(ok) - 1]))
    info_end = len(ok) - sum(len(t["data"]) for t in base.tensors)
    seeds.update(g_truncations(ok, "llama-f32-tensor-infos", [info_end - 40]))
    q = g_model(mtype=G_Q4_0, **qm).build()
    seeds.update(g_truncations(q, "llama-q4_0", [len(q) - 100]))
    seeds["bad-magic.gguf"] = b"GGUX" + ok[4:]
    seeds["bad-version-1.gguf"] = ok[:4] + struct.pack("<I", 1) + ok[8:]
    seeds["bad-version-4.gguf"] = ok[:4] + struct.pack("<I", 4) + ok[8:]
    seeds["bad-version-big-endian.gguf"] = ok[:4] + struct.pack(">I", 3) + ok[8:]
    seeds["bad-n-kv-larger-than-file.gguf"] = base.build(n_kv=len(ok))
    seeds["bad-n-kv-2-60.gguf"] = base.build(n_kv=1 << 60)
    seeds["bad-n-tensors-larger-than-file.gguf"] = base.build(n_tensors=len(ok) // 29 + 1)
    seeds["bad-n-tensors-2-63.gguf"] = base.build(n_tensors=1 << 63)
    seeds["bad-n-kv-one-too-many.gguf"] = base.build(n_kv=len(base.kv) + 1)

    def variant(name, edit, **kw):
        g = g_model(**kw)
        edit(g)
        seeds["bad-%s.gguf" % name] = g.build()

    variant("duplicate-key", lambda g: g.add("llama.block_count", GV["u32"], 1))
    variant("value-type-13", lambda g: g.add_raw("general.bad", struct.pack("<I", 13) + bytes(8)))
    variant("value-type-2-32-minus-1", lambda g: g.add_raw("general.bad", struct.pack("<I", 0xFFFFFFFF) + bytes(8)))
    variant("array-item-type-13", lambda g: g.add_raw("general.bad", struct.pack("<IIQ", 9, 13, 1) + bytes(16)))
    variant("nested-arrays-three-deep", lambda g: g.add(
        "general.deep", GV["arr"], (GV["arr"], [(GV["arr"], [(GV["u8"], [1])])])))
    variant("string-array-2-60", lambda g: g.add_raw("general.strs", struct.pack("<IIQ", 9, 8, 1 << 60) + g_str("x")))
    variant("u8-array-2-60", lambda g: g.add_raw("general.nums", struct.pack("<IIQ", 9, 0, 1 << 60) + bytes(8)))
    variant("f64-array-2-61", lambda g: g.add_raw("general.nums", struct.pack("<IIQ", 9, 12, 1 << 61) + bytes(8)))
    variant("array-of-arrays-2-60", lambda g: g.add_raw("general.arrs", struct.pack("<IIQ", 9, 9, 1 << 60) + bytes(12)))
    variant("tokens-array-2-60", lambda g: (g.drop("tokenizer.ggml.tokens"), g.add_raw(
        "tokenizer.ggml.tokens", struct.pack("<IIQ", 9, 8, 1 << 60) + g_str("a"))))
    variant("string-value-2-60", lambda g: g.add_raw("general.s", struct.pack("<IQ", 8, 1 << 60) + b"abc"))
    variant("string-value-past-end", lambda g: g.add_raw("general.s", struct.pack("<IQ", 8, 1 << 20) + b"abc"))
    # the first key's length field rewritten: 2^63, and one past the 64 KiB a key may have
    k = base.build()
    hdr = 24
    seeds["bad-key-length-2-63.gguf"] = k[:hdr] + struct.pack("<Q", 1 << 63) + k[hdr + 8:]
    seeds["bad-key-longer-than-64k.gguf"] = k[:hdr] + struct.pack("<Q", (1 << 16) + 1) + k[hdr + 8:]
    variant("key-with-newline", lambda g: g.add("general.a\nb", GV["u32"], 1) or g.add("general.a\nb", GV["u32"], 2))
    variant("alignment-3", lambda g: g.add("general.alignment", GV["u32"], 3))
    variant("alignment-0", lambda g: g.add("general.alignment", GV["u32"], 0))
    variant("alignment-string", lambda g: g.add("general.alignment", GV["str"], "32"))

    def t_edit(tname, **changes):
        def f(g):
            t = g.find(tname)
            t.update(changes)
        return f

    variant("tensor-offset-past-end", t_edit("output_norm.weight", off=1 << 40))
    variant("tensor-offset-2-64-minus-32", t_edit("output_norm.weight", off=(1 << 64) - 32))
    variant("tensor-offset-one-block-past", lambda g: t_edit(
        "output.weight", off=len(g.build()) // 32 * 32)(g))
    variant("tensors-overlap", lambda g: t_edit("blk.0.ffn_up.weight", off=0)(g))
    variant("tensor-offset-misaligned", lambda g: t_edit("blk.0.attn_norm.weight", off=68)(g))
    variant("tensor-dim-2-31", t_edit("blk.0.attn_q.weight", dims=[8, 1 << 31]))
    variant("tensor-dim-0", t_edit("blk.0.attn_q.weight", dims=[8, 0]))
    variant("tensor-dims-product-over-file", t_edit("blk.0.attn_q.weight", dims=[8, (1 << 31) - 1, (1 << 31) - 1]))
    # ne1·ne2·ne3 = 2^64: a product that wraps to 0 in 64 bits (each dimension below 2^31)
    variant("tensor-dims-product-wraps-2-64", t_edit("blk.0.attn_norm.weight", dims=[8, 1 << 30, 1 << 10, 1 << 24]))
    # 2731 · 161087163 · 83862361 = 2 · 2^64 + 1: rows that wrap to 1 in 64 bits, so the vector has
    # the 8 elements attn_norm wants (each dimension below 2^31, ne1 · ne2 below 2^40)
    variant("tensor-dims-product-wraps-to-shape",
            t_edit("blk.0.attn_norm.weight", dims=[8, 2731, 161087163, 83862361]))
    variant("tensor-n-dims-0", t_edit("blk.0.attn_q.weight", dims=[]))
    variant("tensor-n-dims-5", t_edit("blk.0.attn_q.weight", dims=[8, 8, 1, 1, 1]))
    variant("tensor-name-longer-than-256", t_edit("blk.0.attn_q.weight", name="x" * 257))
    variant("tensor-name-with-newline", lambda g: (t_edit("blk.0.attn_q.weight", name="a\nb")(g),
                                                   g.tensor("a\nb", [8], G_F32, bytes(32))))
    variant("duplicate-tensor-name", lambda g: g.tensor("blk.0.attn_norm.weight", [8], G_F32, bytes(32)))
    variant("type-id-99", t_edit("blk.0.attn_q.weight", type=99))
    variant("type-id-2-32-minus-1", t_edit("blk.0.attn_q.weight", type=0xFFFFFFFF))
    variant("q8_0-columns-not-block", t_edit("blk.0.attn_q.weight", type=G_Q8_0, data=bytes(8 * 34)))
    # every other ggml type, on a matrix of a shape the type can hold (ffn_down, its columns a
    # multiple of the type's block): the ones the runtime takes exactly (Q4_1, Q5_0, Q5_1, Q3_K,
    # Q4_K, Q5_K, Q6_K: any bytes are a block) are accepted, the rest refused at load; the ids ggml
    # removed are refused by the container
    runs = (3, 6, 7, 11, 12, 13, 14)
    for tid in sorted(GGML_TYPES):
        if tid in (G_F32, G_F16, G_BF16, G_Q8_0, G_Q4_0):
            continue
        info = GGML_TYPES[tid]
        name = "type-%d-%s" % (tid, info[0].lower() if info else "removed")
        if info and info[1] == 1:  # I8 ... F64: the F32 model's 8 x 16 ffn_down
            seeds["bad-%s.gguf" % name] = g_model(types={"blk.0.ffn_down.weight": tid}).build()
        elif info:  # 32-element blocks: 32 columns; 256-element blocks: 256
            seeds["%s-%s.gguf" % ("ok" if tid in runs else "bad", name)] = g_model(
                mtype=G_Q4_0, **dict(qm, hidden=info[1]), types={"blk.0.ffn_down.weight": tid}).build()
        else:
            seeds["bad-%s.gguf" % name] = g_model(mtype=G_Q4_0, **dict(qm, hidden=256),
                                                  types={"blk.0.ffn_down.weight": G_Q4_0}).build()
            b = bytearray(seeds["bad-%s.gguf" % name])
            key = g_str("blk.0.ffn_down.weight") + struct.pack("<IQQ", 2, 256, 32)
            at = bytes(b).index(key) + len(key)
            b[at:at + 4] = struct.pack("<I", tid)
            seeds["bad-%s.gguf" % name] = bytes(b)
    seeds["bad-type-28-f64-vector.gguf"] = g_model(types={"output_norm.weight": 28}).build()
    seeds["bad-q8_0-vector.gguf"] = g_model(mtype=G_Q8_0, **dict(qm), types={"output_norm.weight": G_Q8_0}).build()

    # ---- rejected: the model
    variant("arch-gemma", lambda g: g.set("general.architecture", GV["str"], "gemma"))
    variant("arch-qwen3", lambda g: g.set("general.architecture", GV["str"], "qwen3"))
    variant("arch-with-newline", lambda g: g.set("general.architecture", GV["str"], "lla\nma"))
    variant("arch-not-string", lambda g: g.set("general.architecture", GV["u32"], 1))
    variant("missing-architecture", lambda g: g.drop("general.architecture"))
    variant("missing-key-embedding-length", lambda g: g.drop("llama.embedding_length"))
    variant("missing-key-epsilon", lambda g: g.drop("llama.attention.layer_norm_rms_epsilon"))
    variant("block-count-0", lambda g: g.set("llama.block_count", GV["u32"], 0))
    variant("block-count-4096", lambda g: g.set("llama.block_count", GV["u32"], 4096))
    variant("block-count-2-32-minus-1", lambda g: g.set("llama.block_count", GV["u32"], 0xFFFFFFFF))
    variant("block-count-i64-negative", lambda g: g.set("llama.block_count", GV["i64"], -1))
    variant("embedding-length-string", lambda g: g.set("llama.embedding_length", GV["str"], "8"))
    variant("head-count-not-dividing", lambda g: g.set("llama.attention.head_count", GV["u32"], 3))
    variant("head-size-odd", lambda g: (g.set("llama.attention.head_count", GV["u32"], 8),
                                        g.set("llama.attention.head_count_kv", GV["u32"], 8)), dim=8)
    variant("head-count-kv-not-dividing", lambda g: g.set("llama.attention.head_count_kv", GV["u32"], 3),
            n_heads=4, dim=16, n_kv=2)
    variant("epsilon-0", lambda g: g.set("llama.attention.layer_norm_rms_epsilon", GV["f32"], 0.0))
    variant("epsilon-nan", lambda g: g.set("llama.attention.layer_norm_rms_epsilon", GV["f32"], float("nan")))
    variant("freq-base-negative", lambda g: g.set("llama.rope.freq_base", GV["f32"], -1.0))
    variant("rope-dimension-count-differs", lambda g: g.set("llama.rope.dimension_count", GV["u32"], 2))
    variant("rope-scaling-linear", lambda g: g.add("llama.rope.scaling.type", GV["str"], "linear"))
    variant("expert-count", lambda g: g.add("llama.expert_count", GV["u32"], 8))
    variant("qwen2-sliding-window", lambda g: g.add("qwen2.attention.sliding_window", GV["u32"], 64), arch="qwen2")
    variant("vocab-size-differs", lambda g: g.add("llama.vocab_size", GV["u32"], 17))
    variant("wrong-shape", t_edit("blk.0.attn_k.weight", dims=[4, 8]))
    variant("wrong-shape-3d-matrix", t_edit("blk.0.attn_q.weight", dims=[8, 4, 2]))
    variant("wrong-shape-vector", t_edit("blk.0.ffn_norm.weight", dims=[4], data=bytes(16)))
    variant("wrong-shape-embedding-3d", t_edit("token_embd.weight", dims=[8, 8, 2]))
    variant("same-classifier-3d", t_edit("output.weight", dims=[8, 8, 2]), classifier="same")
    variant("missing-tensor", lambda g: g.tensors.remove(g.find("blk.0.ffn_up.weight")))
    variant("missing-tensor-output-norm", lambda g: g.tensors.remove(g.find("output_norm.weight")), classifier="none")
    variant("block-count-2-with-1-layer", lambda g: g.set("llama.block_count", GV["u32"], 2), classifier="none")
    variant("missing-tensor-embedding", lambda g: g.tensors.remove(g.find("token_embd.weight")))
    variant("missing-tensor-qwen2-bias", lambda g: g.tensors.remove(g.find("blk.0.attn_k.bias")), arch="qwen2")
    variant("unknown-tensor", lambda g: g.tensor("blk.0.extra.weight", [8], G_F32, bytes(32)))
    variant("unknown-tensor-q-norm", lambda g: g.tensor("blk.0.attn_q_norm.weight", [4], G_F32, bytes(16)))
    variant("unknown-tensor-layer-1", lambda g: g.tensor("blk.1.attn_norm.weight", [8], G_F32, bytes(32)))
    variant("rope-freqs-not-llama3", lambda g: t_edit("rope_freqs.weight", data=f32_bytes([1.0, 2.0, 3.0, 4.0]))(g),
            dim=16, n_heads=2, n_kv=2, theta=500000.0, rope_freqs=True)
    variant("rope-freqs-wrong-length", lambda g: t_edit("rope_freqs.weight", dims=[2], data=f32_bytes([1.0, 2.0]))(g),
            dim=16, n_heads=2, n_kv=2, theta=500000.0, rope_freqs=True)

    # ---- rejected: the tokenizer
    variant("llama-tokens-scores-differ", lambda g: g.set("tokenizer.ggml.scores", GV["arr"], (GV["f32"], [0.0] * 3)))
    variant("llama-tokens-not-vocab", lambda g: (g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], ["a"] * 15)),
                                                 g.set("tokenizer.ggml.scores", GV["arr"], (GV["f32"], [0.0] * 15))))
    variant("llama-bos-out-of-range", lambda g: g.set("tokenizer.ggml.bos_token_id", GV["u32"], 16))
    variant("llama-tokens-not-strings", lambda g: g.set("tokenizer.ggml.tokens", GV["arr"], (GV["u32"], [0] * 16)))
    variant("llama-token-4097-bytes", lambda g: g.set("tokenizer.ggml.tokens", GV["arr"], (
        GV["str"], LLAMA_PIECES[:6] + ["x" * 4097] + LLAMA_PIECES[7:])))
    variant("llama-tokens-all-empty", lambda g: (
        g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], [""])), g.set("tokenizer.ggml.scores", GV["arr"], (GV["f32"], [0.0])),
        g.drop("tokenizer.ggml.bos_token_id"), g.drop("tokenizer.ggml.eos_token_id")), vocab=1)
    variant("tokenizer-model-not-string", lambda g: g.set("tokenizer.ggml.model", GV["u32"], 1))
    gq = dict(tokenizer="gpt2", mtype=G_Q4_0, classifier="none", **qm)

    def merges_edit(fn):
        def f(g):
            _, _, merges = gpt2_vocab()
            g.set("tokenizer.ggml.merges", GV["arr"], (GV["str"], fn(list(merges))))
        return f

    variant("gpt2-merge-unknown-token", merges_edit(lambda m: m + ["zq \u0120xyz"]), **gq)
    variant("gpt2-merge-unknown-result", merges_edit(lambda m: m + ["q z"]), **gq)
    variant("gpt2-merge-one-token", merges_edit(lambda m: m[:3] + ["th"] + m[3:]), **gq)
    variant("gpt2-merge-three-tokens", merges_edit(lambda m: m + ["t h e"]), **gq)
    variant("gpt2-merge-empty-side", merges_edit(lambda m: m + [" th"]), **gq)
    variant("gpt2-merge-not-byte-level", merges_edit(lambda m: m + ["\u4e00 a"]), **gq)

    def tokens_edit(fn):
        def f(g):
            strs, ttypes, _ = gpt2_vocab()
            strs, ttypes = fn(list(strs), list(ttypes))
            g.set("tokenizer.ggml.tokens", GV["arr"], (GV["str"], strs))
            g.set("tokenizer.ggml.token_type", GV["arr"], (GV["i32"], ttypes))
        return f

    def missing_byte(s, t):
        i = s.index(gpt2_str(b"\x00"))
        s[i] = "[PAD%d]" % i
        t[i] = 5
        return s, t

    def dup_token(s, t):
        s[s.index(gpt2_str(b"z"))] = gpt2_str(b"a")
        return s, t

    def bad_type(s, t):
        t[5] = 7
        return s, t

    def control_empty(s, t):
        s[-4] = ""
        t[-4] = 3
        return s, t

    variant("gpt2-token-missing-byte", tokens_edit(missing_byte), **gq)
    variant("gpt2-duplicate-token", tokens_edit(dup_token), **gq)
    variant("gpt2-token-type-7", tokens_edit(bad_type), **gq)
    variant("gpt2-control-token-empty", tokens_edit(control_empty), **gq)
    variant("gpt2-normal-token-not-byte-level", tokens_edit(lambda s, t: (s[:5] + ["\u4e00"] + s[6:], t)), **gq)
    variant("gpt2-types-count-differs", lambda g: g.set("tokenizer.ggml.token_type", GV["arr"], (GV["i32"], [1] * 10)),
            **gq)
    variant("gpt2-missing-pre", lambda g: g.drop("tokenizer.ggml.pre"), **gq)
    variant("gpt2-unknown-pre", lambda g: g.set("tokenizer.ggml.pre", GV["str"], "deepseek\nllm"), **gq)
    variant("gpt2-eos-out-of-range", lambda g: g.set("tokenizer.ggml.eos_token_id", GV["u32"], 100000), **gq)
    variant("gpt2-add-bos-without-bos", lambda g: (g.drop("tokenizer.ggml.bos_token_id"),
                                                   g.set("tokenizer.ggml.add_bos_token", GV["bool"], 1)), **gq)
    variant("gpt2-more-tokens-than-vocab", lambda g: t_edit("token_embd.weight", dims=[32, 64],
                                                            data=bytes(64 * 18))(g), **gq)
    return seeds


# ----------------------------------------------------------------------------------- main

def all_files():
    pieces, scores = encode_tokenizer()
    files = {os.path.join(DATA, "encode_tokenizer.bin"): tokenizer_bin(pieces, scores),
             os.path.join(DATA, "encode_tokenizer.mltk"): encode_mltk()}
    for sub, content in (("mlb", mlb_corpus()), ("tokenizer", tokenizer_corpus(pieces, scores)),
                         ("encode", encode_corpus()), ("chat", chat_corpus()), ("gguf", gguf_corpus()),
                         ("request", request_corpus())):
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
    for sub in ("mlb", "tokenizer", "encode", "chat", "gguf", "request"):
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
