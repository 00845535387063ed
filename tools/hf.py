#!/usr/bin/python3
"""Hugging Face Llama checkpoints (config.json + safetensors) for tools/convert.py.

Standard library + numpy only (no torch, no safetensors package); tensor data is
memory-mapped and read a row chunk at a time, so a model larger than RAM converts.

- `SafetensorsFile`: parses a .safetensors file (u64 header length, JSON header with dtype,
  shape and data_offsets of every tensor, then the data) and hands out `rawtensor.RawTensor`s.
- `HfReader`: a convert.py reader for a folder with config.json and model.safetensors, or
  model.safetensors.index.json and its shards; F32, F16 and BF16 tensors.
- `write_hf`: write a model as such a folder (tools/export.py, tests).
- `HfReader.tokenizer_bin()`: the folder's byte-level BPE `tokenizer.json` as MLTK (tools/mltk.py).

Hugging Face's Llama conversion (transformers' convert_llama_weights_to_hf) permutes the rows of
q_proj/k_proj within each head from the interleaved RoPE pairs (2i, 2i+1) of Meta's and
llama2.c's checkpoints into a half-split order (i, i + head_dim/2). .mlb uses the interleaved
order, so the reader reads HF row  h*hd + p*hd/2 + i  into row  h*hd + 2i + p  (p = 0, 1).
"""
import json
import math
import os
import struct

import numpy as np

import bpe_import
import mltk
import mlb
import rawtensor as rt
from checkpoint import (AtomicFile, TokenizerUnavailable, describe, float_chunks, from_half_split,
                        hparams_plan, layer_shapes, mltk_for_model, outside_name,
                        rope_rows_to_hf)

DTYPES = {"F32": rt.F32, "F16": rt.F16, "BF16": rt.BF16}
KNOWN_DTYPES = ("F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL",
                "F8_E4M3", "F8_E5M2")
MAX_HEADER = 100 * 1000 * 1000


class HfError(mlb.MlbError):
    pass


# ------------------------------------------------------------------------------ safetensors

class SafetensorsFile:
    """`tensors` {name: (dtype, shape, begin, end)} with offsets into the data section."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                self.size = os.fstat(f.fileno()).st_size
                head = f.read(8)
                if len(head) < 8:
                    raise HfError("%s: %d bytes, too short for a safetensors file"
                                  % (path, self.size))
                (n,) = struct.unpack("<Q", head)
                if n < 2 or n > MAX_HEADER or 8 + n > self.size:
                    raise HfError("%s: not a safetensors file (header length %d, file %d bytes)"
                                  % (path, n, self.size))
                text = f.read(n)
        except FileNotFoundError:
            raise HfError("%s: no such file" % path)
        except OSError as e:
            raise HfError("cannot read %s: %s" % (path, e.strerror or e))
        try:
            header = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise HfError("%s: not a safetensors file (bad JSON header: %s)" % (path, e))
        if not isinstance(header, dict):
            raise HfError("%s: not a safetensors file (header is not a JSON object)" % path)
        self.data_offset = 8 + n
        self.metadata = header.pop("__metadata__", None)
        self.tensors = {}
        data_size = self.size - self.data_offset
        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        for name, info in header.items():
            try:
                dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
                ok = (isinstance(dtype, str) and isinstance(shape, list) and all(map(is_int, shape))
                      and isinstance(offsets, list) and len(offsets) == 2 and all(map(is_int, offsets)))
            except (KeyError, TypeError, IndexError):
                ok = False
            if not ok:
                raise HfError("%s: tensor %s: malformed header entry (dtype a string, shape a list "
                              "of integers, data_offsets two integers)" % (path, name))
            begin, end = offsets
            if not 0 <= begin <= end <= data_size or any(s < 0 for s in shape):
                raise HfError("%s: tensor %s: data offsets [%d, %d) outside the %d data bytes "
                              "(truncated?)" % (path, name, begin, end, data_size))
            if dtype in DTYPES:
                need = math.prod(shape) * rt.FLOAT_SIZE[DTYPES[dtype]]  # exact, never wraps
                if end - begin != need:
                    raise HfError("%s: tensor %s: %d data bytes for %s %s (%d expected)"
                                  % (path, name, end - begin, dtype, shape, need))
            self.tensors[name] = (dtype, tuple(shape), begin, end)
        self._mm = None

    def raw_tensor(self, name):
        dtype, shape, begin, end = self.tensors[name]
        if dtype not in DTYPES:
            raise HfError("%s: tensor %s has dtype %s, which is not supported (F32, F16 and BF16 "
                          "are)" % (self.path, name, dtype))
        if self._mm is None:
            try:
                self._mm = np.memmap(self.path, dtype=np.uint8, mode="r")
            except OSError as e:
                raise HfError("cannot read %s: %s" % (self.path, e.strerror or e))
        t = DTYPES[dtype]
        if len(shape) not in (1, 2):
            raise HfError("%s: tensor %s has shape %s; a matrix or vector is expected"
                          % (self.path, name, list(shape)))
        rows = shape[0] if len(shape) == 2 else 1
        raw = self._mm[self.data_offset + begin:self.data_offset + end].reshape(
            rows, rt.row_bytes(t, shape[-1]))
        return rt.RawTensor(raw, t, shape, name, where=os.path.basename(self.path) + ": ")

    def close(self):
        self._mm = None


# ----------------------------------------------------------------------------------- reader

LAYER_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "wq",
               "self_attn.k_proj": "wk", "self_attn.v_proj": "wv", "self_attn.o_proj": "wo",
               "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "w1",
               "mlp.down_proj": "w2", "mlp.up_proj": "w3"}
BIAS_NAMES = {"self_attn.q_proj": "bq", "self_attn.k_proj": "bk", "self_attn.v_proj": "bv"}
QK_NORM_NAMES = {"self_attn.q_norm": "q_norm", "self_attn.k_norm": "k_norm"}  # Qwen3 (weights)
GLOBAL_NAMES = {"model.embed_tokens.weight": "tok_emb", "model.norm.weight": "final_norm",
                "lm_head.weight": "wcls"}
ARCH_CLASSES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
ARCH_TITLES = {"llama": "Llama", "qwen2": "Qwen2", "qwen3": "Qwen3"}


def hf_name(mlb_name):
    """.mlb tensor name -> Hugging Face tensor name."""
    return outside_name(mlb_name, "model.layers.", LAYER_NAMES, BIAS_NAMES, QK_NORM_NAMES,
                        GLOBAL_NAMES)


def llama3_rope(rs, where):
    """The .mlb version-2 fields of a config's rope_scaling (None or {} = none); HfError naming
    the key for anything but rope_type 'llama3'."""
    if rs in (None, {}):
        return {}
    if not isinstance(rs, dict):
        raise HfError("%s: rope_scaling = %s: expected an object or null" % (where, json.dumps(rs)))
    rt_ = rs.get("rope_type", rs.get("type"))
    if rt_ in (None, "default") and not any(k in rs for k in ("factor",)):
        return {}
    if rt_ != "llama3":
        raise HfError("%s: rope_scaling = %s: rope_type %s is not supported (only 'llama3' "
                      "RoPE scaling is)" % (where, json.dumps(rs), json.dumps(rt_)))
    out = {"rope_scaling": mlb.ROPE_LLAMA3}
    for k, f, kind in (("factor", "rope_factor", float), ("low_freq_factor", "rope_low_freq_factor", float),
                       ("high_freq_factor", "rope_high_freq_factor", float),
                       ("original_max_position_embeddings", "rope_original_max_seq", int)):
        v = rs.get(k)
        if kind is int and isinstance(v, float) and v.is_integer() and 1 <= v < 2 ** 32:
            v = int(v)  # 8192.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (kind is int and not isinstance(v, int)) or not (v > 0 and math.isfinite(v)) or \
                (kind is int and v >= 2 ** 32):
            raise HfError("%s: rope_scaling.%s = %s: expected a positive %s"
                          % (where, k, json.dumps(v), "integer" if kind is int else "number"))
        out[f] = kind(v)
    if not out["rope_low_freq_factor"] < out["rope_high_freq_factor"]:
        raise HfError("%s: rope_scaling.low_freq_factor = %r must be < high_freq_factor = %r"
                      % (where, out["rope_low_freq_factor"], out["rope_high_freq_factor"]))
    return out


def mlb_name(name, n_layers, biases=False, qk_norm=False):
    """.mlb name of an HF tensor name, None for an unknown one (q/k/v biases only if biases,
    Qwen3's q_norm/k_norm only if qk_norm)."""
    if name in GLOBAL_NAMES:
        return GLOBAL_NAMES[name]
    p = name.split(".")
    if len(p) >= 5 and p[0] == "model" and p[1] == "layers" and p[2].isdigit() \
            and int(p[2]) < n_layers:
        names = (dict(LAYER_NAMES, **QK_NORM_NAMES) if qk_norm else LAYER_NAMES) \
            if p[-1] == "weight" else (BIAS_NAMES if p[-1] == "bias" and biases else {})
        mid = ".".join(p[3:-1])
        return "layers.%d.%s" % (int(p[2]), names[mid]) if mid in names else None
    return None


def find_model(path):
    """(folder, [safetensors files], weight_map or None) for a folder or a file inside one."""
    if os.path.isdir(path):
        folder, chosen = path, None
    else:
        folder, chosen = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
        if not chosen.endswith(".safetensors"):
            chosen = None  # config.json or the index: the folder is meant
    index = os.path.join(folder, "model.safetensors.index.json")
    single = os.path.join(folder, "model.safetensors")
    if chosen is not None and not (chosen.startswith("model-") and os.path.isfile(index)):
        return folder, [os.path.join(folder, chosen)], None  # one safetensors file
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                wm = json.load(f)["weight_map"]
            if not isinstance(wm, dict):
                raise TypeError
        except (ValueError, KeyError, TypeError) as e:
            raise HfError("%s: not a safetensors index (%s)" % (index, e))
        except OSError as e:
            raise HfError("cannot read %s: %s" % (index, e.strerror or e))
        files = []
        for fname in wm.values():
            if not isinstance(fname, str) or not fname:
                raise HfError("%s: not a safetensors index (weight_map value %r is not a file name)"
                              % (index, fname))
            if os.path.basename(fname) != fname:
                raise HfError("%s: shard name %r is not a file name in the folder" % (index, fname))
            p = os.path.join(folder, fname)
            if p not in files:
                files.append(p)
        return folder, files, wm
    if os.path.isfile(single):
        return folder, [single], None
    extra = ""
    if os.path.isfile(os.path.join(folder, "pytorch_model.bin")) or \
            os.path.isfile(os.path.join(folder, "pytorch_model.bin.index.json")):
        extra = " (PyTorch .bin checkpoints are not supported; only safetensors)"
    raise HfError("%s: no model.safetensors or model.safetensors.index.json (a Hugging Face "
                  "model folder needs one)%s" % (folder, extra))


class HfReader:
    """convert.py reader for a Hugging Face LlamaForCausalLM (Llama 1-3, SmolLM2, TinyLlama),
    Qwen2ForCausalLM (Qwen2, Qwen2.5) or Qwen3ForCausalLM (Qwen3: config.json head_dim, per-head
    q_norm/k_norm, no biases) checkpoint."""

    kind = "Hugging Face"

    def __init__(self, path):
        self.path = path
        folder, files, weight_map = find_model(path)
        self.folder = folder
        cfg_path = os.path.join(folder, "config.json")
        try:
            with open(cfg_path, encoding="utf-8") as f:
                cfg = json.load(f)
        except FileNotFoundError:
            raise HfError("%s: no config.json (a Hugging Face model folder needs one)" % folder)
        except ValueError as e:
            raise HfError("%s: invalid JSON: %s" % (cfg_path, e))
        except OSError as e:
            raise HfError("cannot read %s: %s" % (cfg_path, e.strerror or e))
        if not isinstance(cfg, dict):
            raise HfError("%s: not a JSON object" % cfg_path)
        self.config = cfg
        mt, archs = cfg.get("model_type"), cfg.get("architectures") or []
        if mt == "qwen3_moe":
            raise HfError("%s: model_type = %r: mixture-of-experts models are not supported"
                          % (cfg_path, mt))
        if not isinstance(mt, str) or mt not in ARCH_CLASSES:
            raise HfError("%s: architecture %s (model_type %r) is not supported (model_type "
                          "'llama', 'qwen2' or 'qwen3')"
                          % (cfg_path, "/".join(map(str, archs)) or "?", mt))
        self.arch = mt

        def key(k, default=None, kind=int):
            if k not in cfg or cfg[k] is None:
                if default is None:
                    raise HfError("%s: missing key %s" % (cfg_path, k))
                return default
            v = cfg[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                    (kind is int and not isinstance(v, int)):
                raise HfError("%s: %s = %r: expected %s" % (cfg_path, k, v,
                                                           "an integer" if kind is int else "a number"))
            if kind is int and not 1 <= v < 1 << 31:
                raise HfError("%s: %s = %d is out of range" % (cfg_path, k, v))
            return kind(v)

        dim = key("hidden_size")
        n_layers = key("num_hidden_layers")
        n_heads = key("num_attention_heads")
        n_kv = key("num_key_value_heads", n_heads)
        hidden = key("intermediate_size")
        vocab = key("vocab_size")
        max_seq = key("max_position_embeddings")
        eps = key("rms_norm_eps", kind=float)
        theta = key("rope_theta", 10000.0, kind=float)
        qwen3 = mt == "qwen3"
        if qwen3 and cfg.get("head_dim") is not None:
            head_dim = key("head_dim")  # Qwen3: need not be hidden_size / num_attention_heads
            if head_dim % 2:
                raise HfError("%s: head_dim = %d must be even (RoPE rotates pairs)" % (cfg_path, head_dim))
        else:
            if dim % n_heads:
                raise HfError("%s: num_attention_heads = %d does not divide hidden_size = %d"
                              % (cfg_path, n_heads, dim))
            head_dim = dim // n_heads
            if cfg.get("head_dim") not in (None, head_dim):
                raise HfError("%s: head_dim = %r differs from hidden_size / num_attention_heads = "
                              "%d; not supported for model_type %r (Qwen3's is)"
                              % (cfg_path, cfg["head_dim"], head_dim, mt))
        # .mlb head_size: 0 when it is dim / n_heads (the file then reads as before)
        head_size = 0 if dim % n_heads == 0 and head_dim == dim // n_heads else head_dim
        rope = llama3_rope(cfg.get("rope_scaling"), cfg_path)
        if cfg.get("use_sliding_window"):
            raise HfError("%s: use_sliding_window = true: sliding-window attention is not "
                          "supported" % cfg_path)
        for k in ("attention_bias", "mlp_bias"):
            if cfg.get(k):
                raise HfError("%s: %s = true: bias terms are not supported%s"
                              % (cfg_path, k, " (Qwen2's q/k/v biases are)" if mt == "llama" else ""))
        biases = mt == "qwen2"
        if cfg.get("hidden_act", "silu") != "silu":
            raise HfError("%s: hidden_act = %r: only silu is supported" % (cfg_path, cfg["hidden_act"]))
        tie = cfg.get("tie_word_embeddings", False)

        self.files = [SafetensorsFile(p) for p in files]
        where = {}
        for sf in self.files:
            for name in sf.tensors:
                if name in where:
                    raise HfError("tensor %s is stored twice (%s and %s)"
                                  % (name, where[name].path, sf.path))
                where[name] = sf
        if weight_map is not None:
            for name, fname in weight_map.items():
                if name not in where:
                    raise HfError("%s: missing tensor %s (listed in model.safetensors.index.json)"
                                  % (os.path.join(folder, fname), name))
        self.notes = []
        found = {}
        for name in where:
            m = mlb_name(name, n_layers, biases, qwen3)
            if m is None:
                if name.endswith("rotary_emb.inv_freq"):
                    continue  # a buffer older exports saved; recomputed from rope_theta
                dtype = where[name].tensors[name][0]
                hint = (" (Qwen3's q/k norm; model_type 'qwen3' has it)"
                        if name.endswith(("q_norm.weight", "k_norm.weight")) else "")
                raise HfError("%s: tensor %s (%s) is not part of the %s architecture this "
                              "converter supports%s" % (where[name].path, name, dtype,
                                                        ARCH_TITLES[mt], hint))
            found[m] = name
        per_layer = layer_shapes(dim, hidden, n_heads, n_kv, head_dim, biases, qwen3)

        def expect():  # generated, not listed: num_hidden_layers may say 2^31 - 1
            yield "tok_emb", (vocab, dim)
            for layer in range(n_layers):
                for base, shape in per_layer.items():
                    yield "layers.%d.%s" % (layer, base), shape
            yield "final_norm", (dim,)
            yield "wcls", (vocab, dim)

        self.raw = {}
        for m, shape in expect():
            if m not in found:
                if m == "wcls" and tie is not False:
                    continue
                if m == "wcls":
                    raise HfError("%s: missing tensor lm_head.weight (tie_word_embeddings is false)"
                                  % folder)
                raise HfError("%s: missing tensor %s" % (folder, hf_name(m)))
            if m == "wcls" and tie:
                continue  # tied: the classifier is the embedding
            name = found[m]
            t = where[name].raw_tensor(name)
            if t.shape != shape:
                raise HfError("%s: tensor %s (%s) has shape %s, expected %s from config.json"
                              % (where[name].path, name, t.type, "x".join(map(str, t.shape)),
                                 "x".join(map(str, shape))))
            if len(shape) == 1:
                t = rt.RawTensor(t.raw.reshape(1, -1), t.type, shape, t.name, where=t.where)
            self.raw[m] = from_half_split(t, m.rsplit(".", 1)[-1], n_heads, n_kv, head_dim)
        shared = 0 if "wcls" in self.raw else 1
        if not shared and self.raw["wcls"].tobytes_equal(self.raw["tok_emb"]):
            self.notes.append("lm_head.weight is identical to model.embed_tokens.weight: stored "
                              "as a shared classifier")
            del self.raw["wcls"]
            shared = 1
        self.hparams = dict(dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv,
                            hidden_dim=hidden, vocab=vocab, max_seq=max_seq, rope_theta=theta,
                            norm_eps=eps, shared_classifier=shared,
                            arch=mlb.ARCHS[mt], qkv_bias=1 if biases else 0, **rope)
        if qwen3:
            self.hparams.update(head_size=head_size, qk_norm=1)
        self._vocab_obj, self._tok_error = None, None
        n_tokens = self._tokenizer_size()
        if n_tokens and n_tokens < vocab:
            self.hparams["n_tokens"] = n_tokens
        self.description = describe("Hugging Face %s (%d file%s)" % (
            ARCH_TITLES[mt], len(self.files), "" if len(self.files) == 1 else "s"),
            self.hparams, self.raw, head_dim, rope)
        self.source_types = {k: t.type for k, t in self.raw.items()
                             if isinstance(t, rt.RawTensor)}
        self.input_bytes = sum(sf.size for sf in self.files)

    def tensors(self):
        for spec in hparams_plan(self.hparams):
            yield spec.name, self.raw[spec.name]

    def _tokenizer_size(self):
        """Tokens of the folder's tokenizer (0 when it has none or it cannot be read; the error
        is reported by tokenizer_bin)."""
        if not any(os.path.isfile(os.path.join(self.folder, f))
                   for f in ("tokenizer.json", "encoder.json")):
            return 0
        try:
            self._vocab_obj = bpe_import.from_hf_folder(self.folder)
        except mltk.BpeError as e:
            self._tok_error = str(e)
            return 0
        return len(self._vocab_obj.tokens)

    def tokenizer_bin(self):
        """MLTK bytes of the folder's tokenizer.json (or GPT-2's encoder.json + vocab.bpe); None
        when the folder has neither; TokenizerUnavailable when it cannot be represented."""
        if self._tok_error is not None:
            raise TokenizerUnavailable(self._tok_error)
        if self._vocab_obj is None:
            return None
        return mltk_for_model(self._vocab_obj, self.hparams["vocab"])

    def close(self):
        for sf in self.files:
            sf.close()
        self.raw = {}


# ----------------------------------------------------------------------------------- writer

def _st_bytes(chunk, dtype):
    chunk = np.ascontiguousarray(chunk, np.float32)
    if dtype == "F32":
        return chunk.astype("<f4").tobytes()
    if dtype == "F16":
        return chunk.astype("<f2").tobytes()
    return rt.to_bf16(chunk).tobytes()


def write_hf(reader, folder, dtype="F32", shards=1, untie=False, tie=None, vocab=None):
    """Write a convert.py reader's model as a Hugging Face Llama, Qwen2 or Qwen3 folder (config.json and
    model.safetensors, or `shards` files plus model.safetensors.index.json), in dtype F32, F16
    or BF16, with q_proj/k_proj rows permuted into HF's order. A shared classifier is written as
    tie_word_embeddings = true without lm_head.weight, unless untie (then lm_head.weight is a
    copy and tie_word_embeddings false). vocab: the mltk.Vocab written beside it as tokenizer.json,
    whose BOS/EOS ids config.json then names (absent when it has none; else 1 and 2, llama2.c's).
    Each file is written under a temporary name first."""
    hp = reader.hparams
    D, nh, nkv = hp["dim"], hp["n_heads"], hp["n_kv_heads"]
    hd = hp.get("head_size") or D // nh
    shared = bool(hp["shared_classifier"])
    write_tied = shared and not untie
    arch = mlb.ARCH_NAMES[hp.get("arch", mlb.ARCH_LLAMA)]
    if bool(hp.get("qkv_bias")) != (arch == "qwen2"):
        raise HfError("a %s model %s q/k/v biases cannot be written as a Hugging Face folder "
                      "(Llama has none, Qwen2 always has them)"
                      % (arch, "with" if hp.get("qkv_bias") else "without"))
    cfg = {"architectures": [ARCH_CLASSES[arch]], "model_type": arch, "hidden_act": "silu",
           "hidden_size": D, "intermediate_size": hp["hidden_dim"],
           "num_hidden_layers": hp["n_layers"], "num_attention_heads": nh,
           "num_key_value_heads": nkv, "vocab_size": hp["vocab"],
           "max_position_embeddings": hp["max_seq"],
           "rms_norm_eps": float(np.float32(hp["norm_eps"])),
           "rope_theta": float(hp["rope_theta"]), "rope_scaling": None,
           "tie_word_embeddings": write_tied if tie is None else tie,
           "bos_token_id": 1, "eos_token_id": 2,
           "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]}
    if vocab is not None:
        for k, i in (("bos_token_id", vocab.bos), ("eos_token_id", vocab.eos)):
            if i >= 0:
                cfg[k] = i
            else:
                del cfg[k]
    if bool(hp.get("qk_norm")) != (arch == "qwen3"):
        raise HfError("a %s model %s q/k norm cannot be written as a Hugging Face folder (only "
                      "Qwen3 has it, always)" % (arch, "with" if hp.get("qk_norm") else "without"))
    if arch == "qwen3":
        cfg.update(head_dim=hd, attention_bias=False)
    if arch in ("qwen2", "qwen3"):
        cfg.update(use_sliding_window=False, sliding_window=None)
    if hp.get("rope_scaling") == mlb.ROPE_LLAMA3:
        f32 = lambda v: float(np.float32(v))  # noqa: E731  (the values the header stores)
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": f32(hp["rope_factor"]),
                               "low_freq_factor": f32(hp["rope_low_freq_factor"]),
                               "high_freq_factor": f32(hp["rope_high_freq_factor"]),
                               "original_max_position_embeddings": int(hp["rope_original_max_seq"])}
    os.makedirs(folder, exist_ok=True)
    # gather tensors (names, shapes) in the reader's order
    plan = [(spec.name, spec.shape) for spec in hparams_plan(hp)]
    if shared and untie:
        plan.append(("wcls", plan[0][1]))
    size = {"F32": 4, "F16": 2, "BF16": 2}[dtype]
    nbytes = [int(np.prod(s)) * size for _, s in plan]
    total = sum(nbytes)
    # split into shards of about equal size, in order
    groups, cur, acc = [], [], 0
    for i, nb in enumerate(nbytes):
        cur.append(i)
        acc += nb
        if acc >= total * (len(groups) + 1) / shards and len(groups) < shards - 1:
            groups.append(cur)
            cur = []
    groups.append(cur)
    groups = [g for g in groups if g]
    names = (["model.safetensors"] if len(groups) == 1 else
             ["model-%05d-of-%05d.safetensors" % (k + 1, len(groups)) for k in range(len(groups))])
    it = reader.tensors()
    emb = []
    weight_map = {}
    for g, fname in zip(groups, names):
        header, off = {}, 0
        for i in g:
            n, s = plan[i]
            header[hf_name(n)] = {"dtype": dtype, "shape": list(s),
                                  "data_offsets": [off, off + nbytes[i]]}
            weight_map[hf_name(n)] = fname
            off += nbytes[i]
        header["__metadata__"] = {"format": "pt"}
        text = json.dumps(header, separators=(",", ":")).encode("utf-8")
        text += b" " * (-(8 + len(text)) % 8)
        with AtomicFile(os.path.join(folder, fname)) as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for i in g:
                n, s = plan[i]
                if n == "wcls" and shared:
                    chunks = emb
                else:
                    name, arr = next(it)
                    assert name == n, (name, n)
                    chunks = list(float_chunks(arr)) if (n == "tok_emb" and untie) \
                        else float_chunks(arr)
                    if n == "tok_emb" and untie:
                        emb = chunks
                rows = None
                if n.endswith((".wq", ".bq")):
                    rows = rope_rows_to_hf(nh, hd)
                elif n.endswith((".wk", ".bk")):
                    rows = rope_rows_to_hf(nkv, hd)
                elif n.endswith((".q_norm", ".k_norm")):
                    rows = rope_rows_to_hf(1, hd)
                if rows is not None and len(s) == 1:  # a bias: permute its entries
                    full = np.concatenate([np.asarray(c).reshape(-1) for c in chunks])
                    chunks = [full[rows]]
                elif rows is not None:
                    full = np.concatenate([np.asarray(c).reshape(-1, s[-1]) for c in chunks])
                    chunks = [full[rows]]
                w = 0
                for c in chunks:
                    b = _st_bytes(np.asarray(c).reshape(-1, s[-1]), dtype)
                    f.write(b)
                    w += len(b)
                assert w == nbytes[i], (n, w, nbytes[i])
    if len(groups) > 1:
        idx = {"metadata": {"total_size": total}, "weight_map": weight_map}
        with AtomicFile(os.path.join(folder, "model.safetensors.index.json")) as f:
            f.write(json.dumps(idx, indent=2).encode("utf-8"))
    with AtomicFile(os.path.join(folder, "config.json")) as f:
        f.write(json.dumps(cfg, indent=2).encode("utf-8"))
