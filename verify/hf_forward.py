#!/usr/bin/python3
"""A float64 NumPy forward pass written from Hugging Face transformers' modeling equations for
Qwen2 (`modeling_qwen2.py`), Qwen3 (`modeling_qwen3.py`: an explicit `head_dim`, per-head RMSNorm of
q and k before RoPE) and Llama / Llama 3 (`modeling_llama.py`), as an outside formulation
to check runtime/forward.cc against. It is NOT a port of forward.cc: it works on the weights in
Hugging Face's layout (q/k rows and biases in HF's half-split RoPE order, recovered from the
.mlb's interleaved order, Qwen3's q_norm/k_norm weights likewise), uses `rotate_half` RoPE with cos/sin of the duplicated frequencies,
repeats k/v heads for GQA (`repeat_kv`), a causal mask on a full attention matrix, and the rope
frequencies of `_compute_default_rope_parameters` / `_compute_llama3_parameters`.

    hf_forward.py MODEL.mlb --token-ids "1 5 9 ..." [--out logits.f64]    (prints a summary)

As a module: `load_hf(path)` -> HfModel (float64 HF-layout weights and config), `forward(model,
ids)` -> logits (len(ids), vocab), `rope_inv_freq(config)`. Quantized .mlb tensors are
dequantized (their values, exactly); the forward is float64 throughout.
"""
import argparse
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import numpy as np  # noqa: E402
import mlb  # noqa: E402  (the file format only)


class HfModel:
    """config: dict with HF config.json names; weights: dict with HF state_dict names."""

    def __init__(self, config, weights):
        self.config, self.weights = config, weights


def interleaved_to_half_split(w, n_heads):
    """Rows (or entries) of a q/k projection from the .mlb's interleaved RoPE order -- pairs
    (2j, 2j+1) of a head rotate together -- to HF's half-split order -- (j, j + head_dim/2) rotate
    together. Within a head, HF row p*half + j holds the .mlb's row 2j + p."""
    rows = w.shape[0]
    half = rows // n_heads // 2
    rest = w.shape[1:]
    return w.reshape((n_heads, half, 2) + rest).swapaxes(1, 2).reshape((rows,) + rest)


def load_hf(path):
    f = mlb.MlbFile(path)
    h = f.header
    t = {name: np.asarray(x.dequantize(), dtype=np.float64) for name, x in f.tensors.items()}
    f.close()
    config = {
        "model_type": mlb.ARCH_NAMES[h.arch],
        "hidden_size": h.dim, "intermediate_size": h.hidden_dim, "num_hidden_layers": h.n_layers,
        "num_attention_heads": h.n_heads, "num_key_value_heads": h.n_kv_heads,
        "vocab_size": h.vocab, "rms_norm_eps": float(np.float32(h.norm_eps)),
        "rope_theta": float(np.float32(h.rope_theta)), "tie_word_embeddings": bool(h.shared_classifier),
        "rope_scaling": None,
    }
    if h.head_size:
        config["head_dim"] = h.head_size
    if h.rope_scaling == mlb.ROPE_LLAMA3:
        config["rope_scaling"] = {"rope_type": "llama3", "factor": h.rope_factor,
                                  "low_freq_factor": h.rope_low_freq_factor,
                                  "high_freq_factor": h.rope_high_freq_factor,
                                  "original_max_position_embeddings": h.rope_original_max_seq}
    nh, nkv = h.n_heads, h.n_kv_heads
    if h.qk_norm:  # one head's entries: the same within-head permutation as the q/k rows
        config["model_type"] = "qwen3"
    w = {"model.embed_tokens.weight": t["tok_emb"], "model.norm.weight": t["final_norm"],
         "lm_head.weight": t["tok_emb"] if h.shared_classifier else t["wcls"]}
    for i in range(h.n_layers):
        L, p = "layers.%d." % i, "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = t[L + "attn_norm"]
        w[p + "self_attn.q_proj.weight"] = interleaved_to_half_split(t[L + "wq"], nh)
        w[p + "self_attn.k_proj.weight"] = interleaved_to_half_split(t[L + "wk"], nkv)
        w[p + "self_attn.v_proj.weight"] = t[L + "wv"]
        if h.qkv_bias:
            w[p + "self_attn.q_proj.bias"] = interleaved_to_half_split(t[L + "bq"], nh)
            w[p + "self_attn.k_proj.bias"] = interleaved_to_half_split(t[L + "bk"], nkv)
            w[p + "self_attn.v_proj.bias"] = t[L + "bv"]
        if h.qk_norm:
            w[p + "self_attn.q_norm.weight"] = interleaved_to_half_split(t[L + "q_norm"], 1)
            w[p + "self_attn.k_norm.weight"] = interleaved_to_half_split(t[L + "k_norm"], 1)
        w[p + "self_attn.o_proj.weight"] = t[L + "wo"]
        w[p + "post_attention_layernorm.weight"] = t[L + "ffn_norm"]
        w[p + "mlp.gate_proj.weight"] = t[L + "w1"]
        w[p + "mlp.down_proj.weight"] = t[L + "w2"]
        w[p + "mlp.up_proj.weight"] = t[L + "w3"]
    return HfModel(config, w)


def head_dim(config):
    """config.head_dim when given (Qwen3), else hidden_size / num_attention_heads."""
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def rope_inv_freq(config):
    """inv_freq (head_dim/2,): base^(-arange(0, d, 2)/d), then `llama3` scaling when configured."""
    d = head_dim(config)
    inv_freq = 1.0 / (config["rope_theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d))
    rs = config.get("rope_scaling")
    if not rs:
        return inv_freq
    if rs["rope_type"] != "llama3":
        raise ValueError("rope_type %r" % rs["rope_type"])
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low
    high_freq_wavelen = old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    # wavelen < high_freq_wavelen: unchanged; wavelen > low_freq_wavelen: divided by factor
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    # in between: a smooth interpolation of the two
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(is_medium, smoothed, inv_freq_llama)


def rms_norm(x, weight, eps):
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return weight * (x / np.sqrt(variance + eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return np.concatenate((-x2, x1), axis=-1)


def silu(x):
    return x / (1.0 + np.exp(-x))


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def forward(model, ids, inv_freq=None):
    """Logits (seq, vocab) of token ids at positions 0..seq-1 (one causal sequence)."""
    c, w = model.config, model.weights
    D, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd, eps = head_dim(c), c["rms_norm_eps"]
    S = len(ids)
    if inv_freq is None:
        inv_freq = rope_inv_freq(c)
    pos = np.arange(S, dtype=np.float64)
    freqs = np.outer(pos, inv_freq)                  # (S, hd/2)
    emb = np.concatenate((freqs, freqs), axis=-1)    # (S, hd)
    cos, sin = np.cos(emb)[None], np.sin(emb)[None]  # (1, S, hd), broadcast over heads
    mask = np.triu(np.full((S, S), -np.inf), k=1)    # causal

    x = w["model.embed_tokens.weight"][np.asarray(ids)]  # (S, D)
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(h, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias"))
        k = linear(h, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias"))
        v = linear(h, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias"))
        q = q.reshape(S, nh, hd)
        k = k.reshape(S, nkv, hd)
        if p + "self_attn.q_norm.weight" in w:         # Qwen3: RMSNorm over each head's hd entries
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
        if p + "self_attn.k_norm.weight" in w:
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q.transpose(1, 0, 2)                       # (nh, S, hd)
        k = k.transpose(1, 0, 2)                       # (nkv, S, hd)
        v = v.reshape(S, nkv, hd).transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin             # apply_rotary_pos_emb
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, nh // nkv, axis=0)            # repeat_kv
        v = np.repeat(v, nh // nkv, axis=0)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        attn = (probs @ v).transpose(1, 0, 2).reshape(S, nh * hd)
        x = x + linear(attn, w[p + "self_attn.o_proj.weight"])
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        mlp = linear(silu(linear(h, w[p + "mlp.gate_proj.weight"])) * linear(h, w[p + "mlp.up_proj.weight"]),
                     w[p + "mlp.down_proj.weight"])
        x = x + mlp
    x = rms_norm(x, w["model.norm.weight"], eps)
    if "lm_head.weight" not in w and c.get("tie_word_embeddings"):  # tied: the embedding is the classifier
        return linear(x, w["model.embed_tokens.weight"])
    return linear(x, w["lm_head.weight"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--token-ids", required=True)
    ap.add_argument("--out", help="write the float64 logits, raw little-endian [positions][vocab]")
    a = ap.parse_args(argv)
    ids = [int(t) for t in a.token_ids.replace(",", " ").split()]
    logits = forward(load_hf(a.model), ids)
    if a.out:
        logits.astype("<f8").tofile(a.out)
    print("%d positions, vocab %d, max |logit| %.3f, argmax of the last: %d"
          % (logits.shape[0], logits.shape[1], np.abs(logits).max(), int(np.argmax(logits[-1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
