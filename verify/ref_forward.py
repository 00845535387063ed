#!/usr/bin/python3
"""A float64 NumPy forward pass of the Llama family, written from the model's equations (not from
runtime/forward.cc), and the check that ml_run's F32 logits agree with it.

  ref_forward.py logits MODEL.mlb --token-ids "1 5 9" [--out FILE]
      Feeds the ids at positions 0, 1, ... and prints (or writes, float64 LE [positions][vocab])
      the logits of every position.
  ref_forward.py check [--positions 24] [--tol 1e-4] MODEL.mlb... -- [EMULATOR...] ML_RUN
      For each F32 model: ml_run --logits over `positions` teacher-forced ids, once with the
      build's kernels and once with --reference (the scalar kernels); both must be within `tol`
      (max |ml_run - numpy| over every logit) of this forward. Then the check proves it can fail:
      the same forward with rope_theta halved, with RoPE rotating the other way, without eps
      (models with norm_eps >= 1e-4), and with the kv heads of wk/wv rotated (a wrong GQA head
      mapping) must each differ from ml_run by more than 10 * tol.

The model (docs/mlb-format.md; Llama 2 paper, RoFormer, GLU variants paper):
  x = tok_emb[token]
  per layer:  h = rmsnorm(x, attn_norm)                 rmsnorm(v, w) = v / sqrt(mean(v^2) + eps) * w
              q = wq h (+ bq), k = wk h (+ bk), v = wv h (+ bv)   biases: Qwen2 only, see HOOKS
              q, k = rope(q, pos), rope(k, pos)         per head, pairs (2i, 2i+1) rotate by
                                                        pos * freq_i, freq_i = theta^(-2i/head_dim)
              head h attends with kv head h // (n_heads / n_kv_heads) (GQA):
              a_h = softmax_t(q_h . k_t / sqrt(head_dim)) . v_t over t = 0..pos
              x = x + wo concat(a_h)
              h = rmsnorm(x, ffn_norm)
              x = x + w2 (silu(w1 h) * (w3 h))           silu(z) = z / (1 + e^-z)
  logits = W rmsnorm(x, final_norm), W = tok_emb (shared classifier) or wcls

HOOKS for the next architectures (not implemented; each raises until it is):
  - q/k/v biases (Qwen2): Weights.layers[l] carries "bq", "bk", "bv" (None today; `project`
    adds them when present). The .mlb loader sets them from the file once the format has them.
  - RoPE frequency scaling (Llama 3 `llama3`): Config.rope_scaling (None today) is applied to
    the base frequencies in `rope_frequencies`; add the rule to ROPE_SCALINGS.
Quantized .mlb files load too (weights dequantized to their stored values), but `check` takes F32
models only: the runtime also quantizes activations for Q8_0/Q4_0 models.
Runs under /usr/bin/python3 (numpy; docs/toolchain.md). Exit status: 0 pass, 1 fail, 77 skipped.
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import mlb  # noqa: E402  tools/mlb.py: the .mlb reader


# ------------------------------------------------------------------------------ the model

class Config:
    """Hyperparameters. `rope_scaling` and `qkv_bias` are the hooks for Llama 3 and Qwen2."""

    def __init__(self, dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq, rope_theta, norm_eps,
                 shared_classifier, rope_scaling=None, qkv_bias=False):
        if dim % n_heads or n_heads % n_kv_heads or (dim // n_heads) % 2:
            raise ValueError("dim %d, %d heads, %d kv heads: not a Llama shape" % (dim, n_heads, n_kv_heads))
        self.dim, self.n_layers, self.n_heads, self.n_kv_heads = dim, n_layers, n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.hidden_dim, self.vocab, self.max_seq = hidden_dim, vocab, max_seq
        self.rope_theta, self.norm_eps = float(rope_theta), float(norm_eps)
        self.shared_classifier = bool(shared_classifier)
        self.rope_scaling = rope_scaling
        self.qkv_bias = qkv_bias

    def replace(self, **changes):
        """A copy with some fields changed (e.g. replace(rope_theta=500000.0))."""
        a = {k: getattr(self, k) for k in ("dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "vocab", "max_seq",
                                           "rope_theta", "norm_eps", "shared_classifier", "rope_scaling", "qkv_bias")}
        a.update(changes)
        return Config(**a)


class Weights:
    """float64 arrays: tok_emb (vocab, dim); layers[l] = dict of attn_norm, wq (dim, dim), wk and wv
    (kv_dim, dim), wo (dim, dim), ffn_norm, w1 and w3 (hidden, dim), w2 (dim, hidden), and bq, bk, bv
    (None unless the architecture has biases); final_norm; wcls (vocab, dim) or None (shared)."""

    def __init__(self, tok_emb, layers, final_norm, wcls=None):
        self.tok_emb, self.layers, self.final_norm, self.wcls = tok_emb, layers, final_norm, wcls

    def classifier(self, cfg):
        return self.tok_emb if cfg.shared_classifier else self.wcls


def rmsnorm(v, w, eps):
    return v / np.sqrt(np.mean(v * v) + eps) * w


def silu(z):
    return z / (1.0 + np.exp(-z))


def softmax(s):
    e = np.exp(s - np.max(s))
    return e / np.sum(e)


def project(w, x, bias=None):
    """w x (+ bias): the one place a q/k/v bias enters."""
    y = w @ x
    return y if bias is None else y + bias


# RoPE frequency scalings by name: f(freqs, cfg, params) -> scaled freqs. None = Llama 2's plain rule.
ROPE_SCALINGS = {}


def rope_frequencies(cfg):
    """(head_dim / 2,) float64: freq_i = theta^(-2i / head_dim), then cfg.rope_scaling's rule."""
    i = np.arange(cfg.head_dim // 2, dtype=np.float64)
    freqs = cfg.rope_theta ** (-2.0 * i / cfg.head_dim)
    if cfg.rope_scaling is None:
        return freqs
    kind = cfg.rope_scaling.get("type")
    if kind not in ROPE_SCALINGS:
        raise NotImplementedError("RoPE scaling %r is not implemented in ref_forward.py" % kind)
    return ROPE_SCALINGS[kind](freqs, cfg, cfg.rope_scaling)


def rope(x, pos, freqs):
    """x (heads, head_dim): in each head, the pair (x[2i], x[2i+1]) is rotated by the angle
    pos * freqs[i] (llama2.c's interleaved convention, the order .mlb stores wq/wk rows in)."""
    a, b = x[:, 0::2], x[:, 1::2]
    c, s = np.cos(pos * freqs), np.sin(pos * freqs)
    out = np.empty_like(x)
    out[:, 0::2] = a * c - b * s
    out[:, 1::2] = a * s + b * c
    return out


class Forward:
    """One sequence: step(token, pos) feeds a token at the next position and returns the logits
    (vocab,) float64. Keys and values of earlier positions are kept (after RoPE, for keys)."""

    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w
        self.freqs = rope_frequencies(cfg)
        self.keys = [[] for _ in range(cfg.n_layers)]    # [layer][pos] (n_kv_heads, head_dim)
        self.values = [[] for _ in range(cfg.n_layers)]

    def step(self, token, pos):
        cfg, w = self.cfg, self.w
        if pos != len(self.keys[0]):
            raise ValueError("position %d fed after %d positions" % (pos, len(self.keys[0])))
        hd, group = cfg.head_dim, cfg.n_heads // cfg.n_kv_heads
        x = w.tok_emb[token].copy()  # (dim,)
        for l, L in enumerate(w.layers):
            h = rmsnorm(x, L["attn_norm"], cfg.norm_eps)
            q = project(L["wq"], h, L.get("bq")).reshape(cfg.n_heads, hd)
            k = project(L["wk"], h, L.get("bk")).reshape(cfg.n_kv_heads, hd)
            v = project(L["wv"], h, L.get("bv")).reshape(cfg.n_kv_heads, hd)
            q, k = rope(q, pos, self.freqs), rope(k, pos, self.freqs)
            self.keys[l].append(k)
            self.values[l].append(v)
            K = np.stack(self.keys[l])    # (pos + 1, n_kv_heads, head_dim)
            V = np.stack(self.values[l])
            att = np.empty((cfg.n_heads, hd))
            for head in range(cfg.n_heads):
                kv = head // group
                p = softmax(K[:, kv, :] @ q[head] / np.sqrt(hd))  # (pos + 1,)
                att[head] = p @ V[:, kv, :]
            x = x + L["wo"] @ att.reshape(-1)
            h = rmsnorm(x, L["ffn_norm"], cfg.norm_eps)
            x = x + L["w2"] @ (silu(L["w1"] @ h) * (L["w3"] @ h))
        return w.classifier(cfg) @ rmsnorm(x, w.final_norm, cfg.norm_eps)


def logits(cfg, w, ids):
    """(len(ids), vocab) float64: ids fed at positions 0, 1, ..."""
    f = Forward(cfg, w)
    return np.stack([f.step(t, p) for p, t in enumerate(ids)])


# ------------------------------------------------------------------------------ .mlb input

def load_mlb(path):
    """(Config, Weights) of an .mlb file, weights as float64 (quantized ones dequantized)."""
    f = mlb.MlbFile(path)
    h = f.header

    def get(name):
        return np.asarray(f[name].dequantize(), dtype=np.float64).reshape(f[name].spec.shape)

    cfg = Config(h.dim, h.n_layers, h.n_heads, h.n_kv_heads, h.hidden_dim, h.vocab, h.max_seq, h.rope_theta,
                 h.norm_eps, h.shared_classifier)
    layers = []
    for l in range(h.n_layers):
        L = {b: get("layers.%d.%s" % (l, b)) for b in mlb.LAYER_TENSORS}
        L.update(bq=None, bk=None, bv=None)  # .mlb version 1 has no biases (hook: Qwen2)
        layers.append(L)
    w = Weights(get("tok_emb"), layers, get("final_norm"), None if h.shared_classifier else get("wcls"))
    f.close()
    return cfg, w, h.wtype


# ------------------------------------------------------------------------------ check

def test_ids(vocab, n):
    """BOS, then a fixed pseudo-random walk over ids 2..vocab-1 (no BOS later: ml_run would stop)."""
    ids, s = [1], 12345
    for _ in range(n - 1):
        s = (s * 1103515245 + 12345) % (1 << 31)
        ids.append(2 + s % (vocab - 2))
    return ids


def check(models, cmd, positions, tol):
    from logits_compare import MlRun  # noqa: E402  (no numpy needed there)

    run = MlRun(cmd)
    failures = []
    for path in models:
        if not os.path.exists(path):
            failures.append("%s: missing (fixtures)" % path)
            continue
        cfg, w, wtype = load_mlb(path)
        name = os.path.basename(path)
        if wtype != mlb.F32:
            failures.append("%s: not an F32 model" % name)
            continue
        n = min(positions, cfg.max_seq)
        ids = test_ids(cfg.vocab, n)
        want = logits(cfg, w, ids)
        scale = float(np.max(np.abs(want)))
        for mode, extra in (("build kernels", []), ("scalar reference", ["--reference"])):
            got = run.logits(path, cfg.vocab, ids, extra)
            if isinstance(got, str):
                failures.append("%s (%s): %s" % (name, mode, got))
                continue
            if got.shape != want.shape:
                failures.append("%s (%s): %s logits, expected %s" % (name, mode, got.shape, want.shape))
                continue
            diff = np.abs(got.astype(np.float64) - want)
            p, i = np.unravel_index(int(np.argmax(diff)), diff.shape)
            worst = float(diff[p, i])
            print("%s, %s: max |ml_run - numpy float64| = %.3g over %d positions x %d logits "
                  "(max |logit| %.3g; tolerance %g)" % (name, mode, worst, n, cfg.vocab, scale, tol))
            if not worst <= tol:
                failures.append("%s (%s): max diff %.3g > %g at position %d, logit %d: %.9g vs numpy %.9g"
                                % (name, mode, worst, tol, p, i, float(got[p, i]), float(want[p, i])))
            if mode != "build kernels":
                continue
            # The check must be able to fail: wrong forwards, each far outside the tolerance.
            wrong = {"rope_theta halved": logits(cfg.replace(rope_theta=cfg.rope_theta * 0.5), w, ids)}
            f = Forward(cfg, w)
            f.freqs = -f.freqs  # the rotation's sin sign flipped
            wrong["RoPE rotating the other way"] = np.stack([f.step(t, p) for p, t in enumerate(ids)])
            if cfg.norm_eps >= 1e-4:  # random_shared_f32's 1e-3; 1e-5 moves these logits by ~1e-4 only
                wrong["no eps in rmsnorm"] = logits(cfg.replace(norm_eps=0.0), w, ids)
            if cfg.n_kv_heads > 1:
                swapped = [dict(L) for L in w.layers]
                hd = cfg.head_dim
                order = np.roll(np.arange(cfg.n_kv_heads), 1)
                for L in swapped:
                    for m in ("wk", "wv"):
                        L[m] = L[m].reshape(cfg.n_kv_heads, hd, cfg.dim)[order].reshape(-1, cfg.dim)
                wrong["kv heads permuted"] = logits(cfg, Weights(w.tok_emb, swapped, w.final_norm, w.wcls), ids)
            for what, bad in wrong.items():
                d = float(np.max(np.abs(got.astype(np.float64) - bad)))
                print("  self-test, numpy forward with %s: max diff %.3g (must exceed %g)" % (what, d, 10 * tol))
                if not d > 10 * tol:
                    failures.append("%s: a numpy forward with %s is within %.3g of ml_run: the check cannot "
                                    "tell" % (name, what, d))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("every model within %g of the float64 forward" % tol)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a1 = sub.add_parser("logits")
    a1.add_argument("model")
    a1.add_argument("--token-ids", required=True)
    a1.add_argument("--out")
    a2 = sub.add_parser("check")
    a2.add_argument("--positions", type=int, default=24)
    a2.add_argument("--tol", type=float, default=1e-4)
    a2.add_argument("args", nargs="+", help="MODEL.mlb... -- [EMULATOR...] ML_RUN")
    a = ap.parse_args()
    if a.what == "logits":
        cfg, w, _ = load_mlb(a.model)
        out = logits(cfg, w, [int(t) for t in a.token_ids.replace(",", " ").split()])
        if a.out:
            out.astype("<f8").tofile(a.out)
        else:
            np.savetxt(sys.stdout, out, fmt="%.9g")
        return 0
    # argparse drops the first "--"; the models are the .mlb arguments before the command.
    args = a.args
    models = [x for x in args if x.endswith(".mlb")]
    cmd = args[len(models):]
    if not models or not cmd or args[:len(models)] != models:
        ap.error("check: MODEL.mlb... -- [EMULATOR...] ML_RUN")
    return check(models, cmd, a.positions, a.tol)


if __name__ == "__main__":
    sys.exit(main())
