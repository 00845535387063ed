#!/usr/bin/python3
"""Write a random-weight .mlb file of any Llama shape (docs/mlb-format.md).

    gen_random.py OUTPUT [--preset NAME] [--dim 256] [--hidden 768] [--layers 2] [--heads 8]
                  [--kv-heads 4] [--vocab 512] [--seq 256] [--wtype f32|q8_0|q4_0]
                  [--layout rows|panel16|panel16-f16] [--f16-scales] [--seed 0]
                  [--shared-classifier | --no-shared-classifier] [--rope-theta 10000]
                  [--norm-eps 1e-5] [--arch llama|qwen2] [--qkv-bias] [--rope-scaling llama3
                  --rope-factor F --rope-low-freq-factor L --rope-high-freq-factor H
                  --rope-original-max-seq N] [--n-tokens N] [--head-size N] [--qk-norm] [-v | -q]

Presets: llama2.c's stories*, tinyllama, and the issue-14 shapes smollm2-135m, smollm2-360m,
qwen2.5-0.5b (q/k/v biases, 151665 tokens of 151936 rows), llama3.2-1b (llama3 RoPE scaling
32/1/4/8192), qwen3-0.6b (head_dim 128 with dim 1024 and 16 heads, per-head q/k RMSNorm), each
with its model's rope_theta and norm_eps and context 2048; qwen2-tiny, llama3-tiny and
qwen3-tiny are small shapes with the same features, for tests. The q/k/v biases and llama3
scaling need .mlb version 2, an explicit head size and the q/k norm version 3 (written only
then).

Deterministic: tensor i of the file is drawn from its own numpy Generator,
PCG64(SeedSequence(seed).spawn(n)[i]), in fixed row chunks, as float32. The float weights
depend only on the seed and the shape, never on --wtype, so the f32 file and the q8_0/q4_0
files of one seed differ only by quantization (and --layout rows / panel16 only by byte order).
--layout defaults to panel16 (.mlb layout 1, 16-row panels) for q8_0 and q4_0 and to rows
(layout 0) for f32, as in convert.py; panel16-f16 (layout 2) is layout 1 with binary16 block
scales, each scale rounded to binary16 after the quants were computed. --f16-scales rounds the
scales the same way in layouts 0 and 1 but keeps them float32 (q8_0/q4_0 only), so the layout-1
file with --f16-scales and the layout-2 file of one seed hold the same values.
Matrices ~ N(0, 1/fan_in) (std 1/sqrt(cols)), norm weights ~ 1 + N(0, 0.05^2), q/k/v biases
~ N(0, 0.5^2), q/k norm weights (Qwen3) ~ 1 + N(0, 0.5^2) (as uneven as real ones, so a wrong
order of their entries shows). hidden_dim is zero-padded to a multiple of 32 exactly as convert.py does (the
padding is zeros, not random).
"""
import sys

sys.dont_write_bytecode = True  # keep tools/ free of __pycache__

import math
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np  # noqa: E402
except ImportError:
    sys.stderr.write("gen_random.py: numpy is not available to %s; run it with /usr/bin/python3 "
                     "(Debian's python3-numpy)\n" % sys.executable)
    sys.exit(1)
import mlb  # noqa: E402
import convert  # noqa: E402

PROG = "gen_random.py"
NORM_STD = 0.05

PRESETS = {  # dim, hidden, layers, heads, kv_heads, vocab, seq, shared
    "default": (256, 768, 2, 8, 4, 512, 256, True),
    "stories260k": (64, 172, 5, 8, 4, 512, 512, True),
    "stories15m": (288, 768, 6, 6, 6, 32000, 256, True),
    "stories42m": (512, 1376, 8, 8, 8, 32000, 1024, True),
    "stories110m": (768, 2048, 12, 12, 12, 32000, 1024, True),
    "tinyllama": (2048, 5632, 22, 32, 4, 32000, 2048, False),
    # the table (config.json of each model); context 2048 like tinyllama (--seq for more)
    "smollm2-135m": (576, 1536, 30, 9, 3, 49152, 2048, True),
    "smollm2-360m": (960, 2560, 32, 15, 5, 49152, 2048, True),
    "qwen2.5-0.5b": (896, 4864, 24, 14, 2, 151936, 2048, True),
    "llama3.2-1b": (2048, 8192, 16, 32, 8, 128256, 2048, True),
    "qwen3-0.6b": (1024, 3072, 28, 16, 8, 151936, 2048, True),
    # small test shapes with the same features (verify/make_fixtures.py, verify/hf_forward.py)
    "qwen2-tiny": (256, 704, 2, 4, 1, 544, 64, True),
    "llama3-tiny": (256, 768, 2, 8, 2, 512, 64, True),
    # head_dim 24 != dim / heads = 16: q_dim 96 (a multiple of 32, so Q8_0/Q4_0 store wo),
    # kv_dim 48; a Q8_0 KV cache pads each 24-element row to a 32-element block
    "qwen3-tiny": (64, 192, 2, 4, 2, 384, 64, True),
}
_KEYS = ("dim", "hidden", "layers", "heads", "kv_heads", "vocab", "seq", "shared")

# .mlb version-2 features and RoPE/norm constants of the presets (RandomReader keywords).
_LLAMA3_ROPE = dict(rope_scaling="llama3", rope_factor=32.0, rope_low_freq_factor=1.0,
                    rope_high_freq_factor=4.0, rope_original_max_seq=8192)
PRESET_EXTRAS = {
    "smollm2-135m": dict(rope_theta=100000.0, norm_eps=1e-5),
    "smollm2-360m": dict(rope_theta=100000.0, norm_eps=1e-5),
    "qwen2.5-0.5b": dict(arch="qwen2", qkv_bias=True, rope_theta=1e6, norm_eps=1e-6,
                         n_tokens=151665),
    "llama3.2-1b": dict(rope_theta=500000.0, norm_eps=1e-5, **_LLAMA3_ROPE),
    # Qwen3-0.6B's config.json: head_dim 128 (dim / heads = 64), q/k norm, no biases, theta 1e6,
    # eps 1e-6, tied embeddings; its context (40960) cut to 2048 like the other presets
    "qwen3-0.6b": dict(arch="qwen3", head_size=128, qk_norm=True, rope_theta=1e6, norm_eps=1e-6),
    "qwen3-tiny": dict(arch="qwen3", head_size=24, qk_norm=True, rope_theta=1e6, norm_eps=1e-6),
    "qwen2-tiny": dict(arch="qwen2", qkv_bias=True, rope_theta=1e6, norm_eps=1e-6, n_tokens=500),
    # original context 64 (not 8192) so that all three frequency bands of the scaling occur within
    # a short test (head_dim 32: wavelengths 6.3, 14, 32, 74, ...: kept, kept, blended, divided)
    "llama3-tiny": dict(rope_theta=500000.0, norm_eps=1e-5,
                        **dict(_LLAMA3_ROPE, rope_original_max_seq=64)),
}
BIAS_STD = 0.5  # q/k/v biases ~ N(0, 0.5^2): as large as a fair share of q, k, v themselves
QK_NORM_STD = 0.5  # Qwen3's q/k norm weights ~ 1 + N(0, 0.5^2)


def preset_args(name):
    """RandomReader keywords (shape and features) of a preset."""
    args = dict(zip(_KEYS, PRESETS[name]))
    args.update(PRESET_EXTRAS.get(name, {}))
    return args


class RandomReader:
    """A reader (convert.py's interface) producing seeded random weights."""

    def __init__(self, dim, hidden, layers, heads, kv_heads, vocab, seq, shared=True, seed=0,
                 rope_theta=10000.0, norm_eps=1e-5, arch="llama", qkv_bias=False,
                 rope_scaling="none", rope_factor=0.0, rope_low_freq_factor=0.0,
                 rope_high_freq_factor=0.0, rope_original_max_seq=0, n_tokens=0, head_size=0,
                 qk_norm=False):
        if not isinstance(seed, int) or seed < 0:
            raise mlb.MlbError("seed %r: must be a non-negative integer" % (seed,))
        if arch not in mlb.ARCHS:
            raise mlb.MlbError("arch %r: one of %s" % (arch, ", ".join(mlb.ARCHS)))
        if rope_scaling not in mlb.ROPE_SCALINGS:
            raise mlb.MlbError("rope scaling %r: one of %s" % (rope_scaling, ", ".join(mlb.ROPE_SCALINGS)))
        self.seed = seed
        v2 = dict(arch=mlb.ARCHS[arch], qkv_bias=1 if qkv_bias else 0,
                  rope_scaling=mlb.ROPE_SCALINGS[rope_scaling], rope_factor=rope_factor,
                  rope_low_freq_factor=rope_low_freq_factor,
                  rope_high_freq_factor=rope_high_freq_factor,
                  rope_original_max_seq=rope_original_max_seq, n_tokens=n_tokens,
                  head_size=head_size or 0, qk_norm=1 if qk_norm else 0)
        self.hparams = dict(dim=dim, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads,
                            hidden_dim=hidden, vocab=vocab, max_seq=seq, rope_theta=rope_theta,
                            norm_eps=norm_eps, shared_classifier=1 if shared else 0, **v2)
        extras = [arch] if arch != "llama" else []
        if qkv_bias:
            extras.append("q/k/v biases")
        if rope_scaling != "none":
            extras.append("%s RoPE scaling x%g" % (rope_scaling, rope_factor))
        if n_tokens:
            extras.append("%d tokens" % n_tokens)
        if head_size:
            extras.append("head_dim %d" % head_size)
        if qk_norm:
            extras.append("q/k norm")
        self.description = ("random seed %d: dim %d, hidden %d, layers %d, heads %d, kv heads %d, "
                            "vocab %d%s, seq %d%s" % (seed, dim, hidden, layers, heads, kv_heads,
                                                      vocab, "" if shared else " (separate classifier)",
                                                      seq, "".join(", " + e for e in extras)))
        # the unpadded plan (names and source shapes); F32 so no multiple-of-32 rule applies here
        h = mlb.Header(dim, layers, heads, kv_heads, hidden, vocab, seq, rope_theta, norm_eps,
                       mlb.F32, self.hparams["shared_classifier"], **v2)
        h.validate()
        self.plan = mlb.tensor_plan(h)

    def tensor_chunks(self, index):
        """Row chunks of tensor `index` of the plan (float32)."""
        spec = self.plan[index]
        child = np.random.SeedSequence(self.seed).spawn(len(self.plan))[index]
        rng = np.random.Generator(np.random.PCG64(child))
        if spec.base in mlb.BIAS_TENSORS:  # q/k/v biases
            v = rng.standard_normal(spec.shape, dtype=np.float32)
            v *= np.float32(BIAS_STD)
            yield v.reshape(1, -1)
            return
        if len(spec.shape) == 1:  # norm weights
            v = rng.standard_normal(spec.shape, dtype=np.float32)
            v *= np.float32(QK_NORM_STD if spec.base in mlb.QK_NORM_TENSORS else NORM_STD)
            v += np.float32(1)
            yield v.reshape(1, -1)
            return
        rows, cols = spec.shape
        std = np.float32(1.0 / math.sqrt(cols))
        step = mlb.chunk_rows(cols)
        for r in range(0, rows, step):
            c = rng.standard_normal((min(step, rows - r), cols), dtype=np.float32)
            c *= std
            yield c

    def tensor(self, name):
        """A whole tensor (source shape, before hidden padding), for tests."""
        for i, spec in enumerate(self.plan):
            if spec.name == name:
                return np.concatenate(list(self.tensor_chunks(i))).reshape(spec.shape)
        raise KeyError(name)

    def tensors(self):
        for i, spec in enumerate(self.plan):
            yield spec.name, self.tensor_chunks(i)

    def close(self):
        pass


def generate(output, wtype="f32", seed=0, progress=None, layout=None, f16_scales=False, **shape):
    """Write a random .mlb; shape: keys of _KEYS (defaults: the "default" preset); layout:
    "rows" (0), "panel16" (1, quantized wtype only), "panel16-f16" (2: panels with binary16
    scales, quantized wtype only) or None (the default: panel16 for q8_0/q4_0, rows for f32);
    f16_scales: round every block scale to binary16 while storing float32 (layouts 0 and 1;
    layout 2 implies it)."""
    args = preset_args("default")
    args.update(shape)
    wtype, layout = convert.resolve_types(wtype, layout, f16_scales)
    reader = RandomReader(seed=seed, **args)
    if progress is None:
        progress = mlb.file_size(convert.header_for(reader.hparams, mlb.F32)) > \
            convert.PROGRESS_THRESHOLD
    if progress:
        sys.stderr.write("%s: %s -> %s%s\n" % (PROG, reader.description, mlb.WTYPE_NAMES[wtype],
                                               convert.panels_note(layout, f16_scales)))
    return convert.write_mlb(reader, output, wtype, progress, PROG, layout=layout,
                             f16_scales=f16_scales)


def main(argv=None):
    ap = convert.OneLineParser(prog=PROG, description="Write a random-weight .mlb file.")
    ap.add_argument("output", help="the .mlb file to write (replaced atomically)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="default",
                    help="start from a known shape (explicit options override it)")
    ap.add_argument("--dim", type=int)
    ap.add_argument("--hidden", type=int, help="FFN hidden size (zero-padded to a multiple of 32)")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--seq", type=int, help="max_seq")
    ap.add_argument("--shared-classifier", "--shared", dest="shared", action="store_true",
                    default=None, help="classifier = tok_emb (default of the presets but tinyllama)")
    ap.add_argument("--no-shared-classifier", "--no-shared", dest="shared", action="store_false",
                    help="store a separate wcls")
    ap.add_argument("--wtype", default="f32", type=str.lower, choices=list(mlb.WTYPES))
    ap.add_argument("--layout", default=None, type=str.lower, choices=list(mlb.LAYOUTS),
                    help="panel16: quantized tensors in 16-row panels (layout 1; the default for "
                    "q8_0 and q4_0: every build's fast path); panel16-f16: the same panels with "
                    "binary16 block scales (layout 2); rows: row-major blocks (layout 0; the "
                    "default and the only one for f32)")
    ap.add_argument("--f16-scales", action="store_true",
                    help="round every block scale to a binary16 value but store it as float32 "
                    "(layouts rows and panel16; q8_0/q4_0 only): the values of --layout "
                    "panel16-f16, which implies it")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rope-theta", type=float, help="default 10000 (the presets: the model's)")
    ap.add_argument("--norm-eps", type=float, help="default 1e-5 (the presets: the model's)")
    ap.add_argument("--arch", choices=sorted(mlb.ARCHS), help="architecture named in the header "
                    "(.mlb version 2; default llama)")
    ap.add_argument("--qkv-bias", dest="qkv_bias", action="store_true", default=None,
                    help="q/k/v biases (Qwen2)")
    ap.add_argument("--no-qkv-bias", dest="qkv_bias", action="store_false")
    ap.add_argument("--rope-scaling", choices=sorted(mlb.ROPE_SCALINGS),
                    help="llama3: Llama 3's RoPE frequency scaling (with the --rope-* values)")
    ap.add_argument("--rope-factor", type=float)
    ap.add_argument("--rope-low-freq-factor", type=float)
    ap.add_argument("--rope-high-freq-factor", type=float)
    ap.add_argument("--rope-original-max-seq", type=int)
    ap.add_argument("--n-tokens", type=int, help="tokenizer size when smaller than the vocab")
    ap.add_argument("--head-size", type=int, help="head_dim when it is not dim / heads (Qwen3; "
                    ".mlb version 3)")
    ap.add_argument("--qk-norm", dest="qk_norm", action="store_true", default=None,
                    help="per-head RMSNorm of q and k before RoPE (Qwen3; .mlb version 3)")
    ap.add_argument("--no-qk-norm", dest="qk_norm", action="store_false")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="store_true", help="always show progress")
    g.add_argument("-q", "--quiet", action="store_true", help="never show progress")
    a = ap.parse_args(argv)
    shape = preset_args(a.preset)
    for k in _KEYS + _OPTIONAL:
        if getattr(a, k) is not None:
            shape[k] = getattr(a, k)
    progress = True if a.verbose else (False if a.quiet else None)
    return convert.run_cli(PROG, lambda: generate(a.output, a.wtype, a.seed, progress,
                                                  layout=a.layout, f16_scales=a.f16_scales,
                                                  **shape))


_OPTIONAL = ("rope_theta", "norm_eps", "arch", "qkv_bias", "rope_scaling", "rope_factor",
             "rope_low_freq_factor", "rope_high_freq_factor", "rope_original_max_seq", "n_tokens",
             "head_size", "qk_norm")


if __name__ == "__main__":
    sys.exit(main())
