#!/usr/bin/python3
"""Writes the test models CTest's fixtures provide (run by CTest, see cmake/Tests.cmake).

  make_fixtures.py stories260K MODELS SHARED   stories260K.bin -> stories260K_{f32,q8_0,q4_0}.mlb and
                                               stories260K_{q8_0,q4_0}_panel16.mlb
  make_fixtures.py random MODELS               gen_random: random_gqa_{f32,q8_0,q4_0}.mlb (dim 256,
                                               8 heads / 2 kv heads), their 16-row-panel twins
                                               (*_panel16.mlb) and binary16-scale twins
                                               (*_f16s_panel16.mlb: layout 1, scales rounded to
                                               binary16; *_panel16f16.mlb: layout 2, the same
                                               values), random_odd_* (panels with padding
                                               rows), random_shared_f32.mlb (shared
                                               classifier, for verify/ref_forward.py),
                                               {qwen2,llama3}_tiny_{f32,q8_0,q4_0}.mlb
                                               (+ _panel16 twins; .mlb version 2),
                                               qwen3_tiny_* (the same; .mlb version 3: head_dim 24
                                               != dim / heads, q/k norm), tiny_q8_0.mlb
                                               and ggml_blocks.bin (tools/ggml_quants.py: blocks of
                                               every ggml type with NumPy's dequantized values)
Exits 77 (CTest: skipped) with a loud message when the shared folder is absent.

The files are the same bytes in every preset (pure Python), so a matrix writes them once: each kind's
set is kept in a cache folder ($ML_FIXTURE_CACHE, default build/fixture-cache at the source root; "off"
writes every time), named by the SHA-256 of what decides the bytes (this file, tools/*.py, the input
model, the Python and NumPy versions), and copied from there when present. Under the mutation
audit's ML_PY_MUTANT the cache is not used.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable


def run(*args):
    r = subprocess.run([PY, *args])
    if r.returncode != 0:
        sys.exit("make_fixtures.py: command failed (%d): %s" % (r.returncode, " ".join(args)))


def cache_key(kind, inputs):
    """The SHA-256 of everything that decides the fixture bytes."""
    h = hashlib.sha256(("%s\0%s\0" % (kind, sys.version)).encode())
    try:
        import numpy
        h.update(numpy.__version__.encode())
    except ImportError:
        pass
    tools = os.path.join(SRC, "tools")
    files = [os.path.abspath(__file__)] + sorted(os.path.join(tools, f) for f in os.listdir(tools) if f.endswith(".py"))
    for f in files + list(inputs):
        with open(f, "rb") as fh:
            h.update(os.path.basename(f).encode() + b"\0" + hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:24]


def write_cached(kind, models, write, inputs=()):
    """write(folder) makes the files; they come from the cache folder when it holds this key."""
    cache = os.environ.get("ML_FIXTURE_CACHE", os.path.join(SRC, "build", "fixture-cache"))
    if cache == "off" or os.environ.get("ML_PY_MUTANT"):  # a mutated tools/*.py writes other bytes
        write(models)
        return
    entry = os.path.join(cache, "%s-%s" % (kind, cache_key(kind, inputs)))
    manifest = os.path.join(entry, "FILES")
    if not os.path.isfile(manifest):
        os.makedirs(cache, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=kind + "-", dir=cache)
        write(tmp)
        names = sorted(os.listdir(tmp))
        with open(os.path.join(tmp, "FILES"), "w") as fh:
            fh.write("".join(n + "\n" for n in names))
        try:
            os.rename(tmp, entry)  # atomic: a preset running beside this one sees all or nothing
        except OSError:  # another preset got there first: same bytes
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("make_fixtures.py: %s fixtures from %s" % (kind, entry))
    with open(manifest) as fh:
        names = fh.read().split()
    for n in names:
        shutil.copyfile(os.path.join(entry, n), os.path.join(models, n))


def main():
    kind, models = sys.argv[1], sys.argv[2]
    os.makedirs(models, exist_ok=True)
    if kind == "stories260K":
        src = os.path.join(sys.argv[3], "models", "stories260K", "stories260K.bin")
        if not os.path.exists(src):
            print("\n*** SKIPPED: %s is absent; tests on the real model cannot run (README.md, Tests).\n" % src,
                  file=sys.stderr)
            sys.exit(77)
        write_cached(kind, models, lambda out: write_stories(src, out), inputs=[src])
    elif kind == "random":
        write_cached(kind, models, write_random)
    else:
        sys.exit("make_fixtures.py: unknown kind %r" % kind)


def write_stories(src, models):
    for w in ("f32", "q8_0", "q4_0"):
        run(os.path.join(SRC, "tools", "convert.py"), src, os.path.join(models, "stories260K_%s.mlb" % w),
            "--wtype", w, "--layout", "rows", "-q")
    for w in ("q8_0", "q4_0"):  # layout 1: the same weights in 16-row panels
        run(os.path.join(SRC, "tools", "convert.py"), src, os.path.join(models, "stories260K_%s_panel16.mlb" % w),
            "--wtype", w, "--layout", "panel16", "-q")


def write_random(models):
    gen = os.path.join(SRC, "tools", "gen_random.py")
    gqa = ["--dim", "256", "--hidden", "768", "--layers", "2", "--heads", "8", "--kv-heads", "2", "--vocab", "512",
           "--seq", "128", "--seed", "7", "--no-shared-classifier"]
    for w in ("f32", "q8_0", "q4_0"):
        run(gen, os.path.join(models, "random_gqa_%s.mlb" % w), *gqa, "--wtype", w, "--layout", "rows", "-q")
    # Layout 1 twins (same seed and shape) and an odd shape whose last panels need padding rows
    # (kv_dim 32 + vocab 500 → 512 rows stored).
    odd = ["--dim", "256", "--hidden", "736", "--layers", "2", "--heads", "8", "--kv-heads", "1", "--vocab", "500",
           "--seq", "128", "--seed", "11", "--no-shared-classifier"]
    for w in ("q8_0", "q4_0"):
        run(gen, os.path.join(models, "random_gqa_%s_panel16.mlb" % w), *gqa, "--wtype", w, "--layout", "panel16", "-q")
        run(gen, os.path.join(models, "random_odd_%s.mlb" % w), *odd, "--wtype", w, "--layout", "rows", "-q")
        run(gen, os.path.join(models, "random_odd_%s_panel16.mlb" % w), *odd, "--wtype", w, "--layout", "panel16", "-q")
    # Layout 2 (binary16 scales) and the layout-1 file with the same values (--f16-scales), which
    # must give the same logits bit for bit: Q8_0 on the GQA shape, Q4_0 on the odd one (padding rows).
    for name, shape, w in (("random_gqa_q8_0", gqa, "q8_0"), ("random_odd_q4_0", odd, "q4_0")):
        run(gen, os.path.join(models, name + "_f16s_panel16.mlb"), *shape, "--wtype", w, "--layout", "panel16",
            "--f16-scales", "-q")
        run(gen, os.path.join(models, name + "_panel16f16.mlb"), *shape, "--wtype", w, "--layout", "panel16-f16", "-q")
    run(gen, os.path.join(models, "random_gqa_q4_0_panel16f16.mlb"), *gqa, "--wtype", "q4_0", "--layout", "panel16-f16",
        "-q")
    # For the float64 NumPy forward (verify/ref_forward.py): F32 with a shared classifier, 3 layers,
    # GQA 8/4 with head_dim 16, hidden 200 (padded to 224), a non-default RoPE theta, and an eps
    # (1e-3) large enough that a forward without it is visibly wrong.
    run(gen, os.path.join(models, "random_shared_f32.mlb"), "--dim", "128", "--hidden", "200", "--layers", "3",
        "--heads", "8", "--kv-heads", "4", "--vocab", "300", "--seq", "64", "--seed", "5", "--shared-classifier",
        "--rope-theta", "1000", "--norm-eps", "1e-3", "--wtype", "f32", "--layout", "rows", "-q")
    # .mlb version 2: Qwen2 (q/k/v biases, n_tokens < vocab) and Llama 3 (llama3 RoPE scaling)
    # shapes; F32 for verify/hf_forward.py, Q8_0/Q4_0 in both layouts for the bit-identity tests.
    # .mlb version 3: Qwen3 (head_dim 24 with dim 64 and 4 heads, per-head q/k RMSNorm).
    for preset, stem in (("qwen2-tiny", "qwen2_tiny"), ("llama3-tiny", "llama3_tiny"),
                         ("qwen3-tiny", "qwen3_tiny")):
        run(gen, os.path.join(models, stem + "_f32.mlb"), "--preset", preset, "--seed", "5", "-q")
        for w in ("q8_0", "q4_0"):
            for lay, suffix in (("rows", ""), ("panel16", "_panel16")):
                run(gen, os.path.join(models, "%s_%s%s.mlb" % (stem, w, suffix)), "--preset", preset,
                    "--seed", "5", "--wtype", w, "--layout", lay, "-q")
    run(gen, os.path.join(models, "tiny_q8_0.mlb"), "--dim", "64", "--hidden", "64", "--layers", "1", "--heads",
        "4", "--kv-heads", "2", "--vocab", "64", "--seq", "16", "--seed", "3", "--wtype", "q8_0", "--layout", "rows",
        "-q")
    run(os.path.join(SRC, "tools", "ggml_quants.py"), "fixture", os.path.join(models, "ggml_blocks.bin"))
    # GGUFs of every other block type the runtime takes (verify/tests/test_gguf_types.cc): a
    # random model with K multiples of 256, one file per type, and a Q4_K_M-like mix
    kq = os.path.join(models, "kq_src.mlb")
    run(gen, kq, "--dim", "256", "--hidden", "512", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--vocab",
        "80", "--seq", "16", "--seed", "13", "--no-shared-classifier", "-q")
    export = os.path.join(SRC, "tools", "export.py")
    for t in ("q4_1", "q5_0", "q5_1", "q3_k", "q4_k", "q5_k", "q6_k"):
        run(export, kq, os.path.join(models, "kq_%s.gguf" % t), "--format", "gguf", "--dtype", t)
    run(export, kq, os.path.join(models, "kq_mix.gguf"), "--format", "gguf", "--dtype", "q4_k",
        "--tensor-type", "output.weight=q6_k", "--tensor-type", "blk.0.ffn_down.weight=q6_k",
        "--tensor-type", "blk.0.attn_v.weight=q5_0", "--tensor-type", "token_embd.weight=q8_0")
    # GGUFs of the other architectures for the streamed conversion (verify/tests/test_open_memory.cc):
    # qwen2 (biases; q/k rows permuted), qwen3 (q/k norms), llama3 (rope_freqs.weight) with its
    # classifier stored twice (the same bytes: found equal after streaming)
    run(export, os.path.join(models, "qwen2_tiny_f32.mlb"), os.path.join(models, "stream_qwen2.gguf"), "--format",
        "gguf", "--dtype", "q8_0")
    run(export, os.path.join(models, "qwen3_tiny_f32.mlb"), os.path.join(models, "stream_qwen3.gguf"), "--format",
        "gguf", "--dtype", "q4_0")
    run(export, os.path.join(models, "llama3_tiny_f32.mlb"), os.path.join(models, "stream_llama3.gguf"), "--format",
        "gguf", "--dtype", "f16", "--untie")


if __name__ == "__main__":
    main()
