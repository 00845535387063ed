#!/usr/bin/python3
"""What the outside-checkpoint modules tools/gguf.py and tools/hf.py share (both import this
module; neither imports the other). Standard library + numpy only.

- `rope_rows_from_hf` / `rope_rows_to_hf`: Hugging Face's half-split q/k row order <-> .mlb's
  interleaved RoPE pairs (also llama.cpp's qwen2/qwen3 order); `from_half_split(t, base, ...)`:
  a tensor read in that order put into .mlb's (q/k/v biases and q/k norms widened to float32).
- `describe(source, hp, raw, head_dim, rope)`: a reader's one-line description of its model.
- `outside_name(mlb_name, ...)`: an .mlb tensor name in a checkpoint's naming (GGUF's, HF's).
- `layer_shapes(...)`: the shapes of one layer's tensors, as a reader expects them.
- `hparams_plan(hp)` / `hparams_plan_names(hp)`: the .mlb tensors of a reader's hparams dict,
  in file order.
- `TokenizerUnavailable`, `mltk_for_model(vocab, n)`: a reader's tokenizer that cannot be
  written, and a byte-level vocabulary as MLTK bytes checked against the model's vocabulary.
- `AtomicFile`: a file written under a temporary name and renamed into place on success.
- `float_chunks(arr)`: float32 row chunks of a RawTensor, an array or a list of chunks.
"""
import os
import tempfile

import numpy as np

import mlb
import rawtensor as rt


def rope_rows_from_hf(n_heads, head_dim):
    """Source (HF) row of each interleaved output row."""
    return np.arange(n_heads * head_dim).reshape(n_heads, 2, head_dim // 2) \
        .transpose(0, 2, 1).reshape(-1)


def rope_rows_to_hf(n_heads, head_dim):
    """Source (interleaved) row of each HF output row: the inverse of rope_rows_from_hf."""
    return np.arange(n_heads * head_dim).reshape(n_heads, head_dim // 2, 2) \
        .transpose(0, 2, 1).reshape(-1)


def from_half_split(t, base, n_heads, n_kv, head_dim):
    """Tensor t (a RawTensor) of .mlb base name `base`, read from a checkpoint in Hugging Face's
    half-split RoPE order, in .mlb's: wq/wk rows permuted (a lazy row selection), bq/bk/bv and
    q_norm/k_norm widened to float32 (exactly; .mlb stores them so) and bq/bk's entries and
    q_norm/k_norm's (one head's) permuted like the rows; any other tensor as it is."""
    if base in ("wq", "wk"):
        return t.permuted(rope_rows_from_hf(n_heads if base == "wq" else n_kv, head_dim))
    if base in ("q_norm", "k_norm"):
        t = np.concatenate(list(t.float_chunks())).reshape(-1).astype(np.float32)
        return t[rope_rows_from_hf(1, head_dim)].reshape(1, -1)
    if base in ("bq", "bk", "bv"):
        t = np.concatenate(list(t.float_chunks())).reshape(-1).astype(np.float32)
        if base != "bv":
            t = t[rope_rows_from_hf(n_heads if base == "bq" else n_kv, head_dim)]
        return t.reshape(1, -1)
    return t


def describe(source, hp, raw, head_dim, rope):
    """"SOURCE: dim .., hidden .., ..., context .., TYPES, EXTRAS" for a reader of hparams hp
    whose tensors are raw (the types of its RawTensor matrices); rope: its llama3 fields or {}."""
    types = sorted({t.type for t in raw.values()
                    if isinstance(t, rt.RawTensor) and len(t.shape) == 2})
    extras = ["q/k/v biases"] if hp.get("qkv_bias") else []
    if hp.get("qk_norm"):
        extras.append("head_dim %d, q/k norm" % head_dim)
    if rope:
        extras.append("llama3 RoPE scaling x%g" % rope["rope_factor"])
    if hp.get("n_tokens"):
        extras.append("%d tokens" % hp["n_tokens"])
    return ("%s: dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d%s, context %d, %s%s"
            % (source, hp["dim"], hp["hidden_dim"], hp["n_layers"], hp["n_heads"],
               hp["n_kv_heads"], hp["vocab"],
               "" if hp["shared_classifier"] else " (separate classifier)", hp["max_seq"],
               "/".join(types), "".join(", " + e for e in extras)))


def outside_name(mlb_name, layer_prefix, layer_names, bias_names, qk_norm_names, global_names):
    """The name of .mlb tensor mlb_name in a checkpoint that names layer tensors
    "<layer_prefix><layer>.<name>.weight" (".bias" for bias_names), <name> from the tables
    {outside name: .mlb base name}, and the others as global_names ({outside name: .mlb name})."""
    if mlb_name.startswith("layers."):
        _, layer, base = mlb_name.split(".")
        if base in bias_names.values():
            inv = {v: k for k, v in bias_names.items()}
            return "%s%s.%s.bias" % (layer_prefix, layer, inv[base])
        inv = {v: k for k, v in dict(layer_names, **qk_norm_names).items()}
        return "%s%s.%s.weight" % (layer_prefix, layer, inv[base])
    return {v: k for k, v in global_names.items()}[mlb_name]


def layer_shapes(dim, hidden, n_heads, n_kv, head_dim, biases, qk_norm):
    """{.mlb base name: shape} of one layer's tensors, in .mlb's order (q/k/v biases if biases,
    Qwen3's q/k norm weights if qk_norm)."""
    kv_dim, q_dim = n_kv * head_dim, n_heads * head_dim
    per_layer = {"attn_norm": (dim,), "wq": (q_dim, dim), "wk": (kv_dim, dim),
                 "wv": (kv_dim, dim), "wo": (dim, q_dim), "ffn_norm": (dim,),
                 "w1": (hidden, dim), "w2": (dim, hidden), "w3": (hidden, dim)}
    if biases:
        per_layer.update(bq=(q_dim,), bk=(kv_dim,), bv=(kv_dim,))
    if qk_norm:
        per_layer.update(q_norm=(head_dim,), k_norm=(head_dim,))
    return per_layer


def hparams_plan(hp):
    """The tensors (mlb.TensorSpec) of hparams hp in .mlb order, with the unpadded hidden_dim."""
    return mlb.tensor_plan(mlb.Header(hp["dim"], hp["n_layers"], hp["n_heads"], hp["n_kv_heads"],
                                      hp["hidden_dim"], hp["vocab"], hp["max_seq"], 10000.0, 1e-5,
                                      mlb.F32, hp["shared_classifier"],
                                      qkv_bias=hp.get("qkv_bias", 0),
                                      head_size=hp.get("head_size", 0), qk_norm=hp.get("qk_norm", 0)))


def hparams_plan_names(hp):
    return [s.name for s in hparams_plan(hp)]


class TokenizerUnavailable(Exception):
    """The input has no tokenizer that can be written (the reason)."""


def mltk_for_model(v, vocab):
    if vocab is not None and len(v.tokens) > vocab:
        raise TokenizerUnavailable("the tokenizer has %d tokens but the model's vocabulary is %d"
                                   % (len(v.tokens), vocab))
    return v.to_mltk()


class AtomicFile:
    """A file written under a temporary name in the target's folder, renamed on success."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        d = os.path.dirname(os.path.abspath(self.path))
        fd, self.tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(self.path) + ".",
                                        suffix=".tmp")
        self.f = os.fdopen(fd, "wb", buffering=1 << 20)
        return self.f

    def __exit__(self, exc_type, exc, tb):
        try:
            self.f.close()
            if exc_type is None:
                os.chmod(self.tmp, 0o644)
                os.replace(self.tmp, self.path)
                return False
        except BaseException:
            self._unlink()
            raise
        self._unlink()
        return False

    def _unlink(self):
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def float_chunks(arr):
    if isinstance(arr, rt.RawTensor):
        return arr.float_chunks()
    if isinstance(arr, np.ndarray):
        a = arr.reshape(1, -1) if arr.ndim == 1 else arr
        return [a]
    return arr
