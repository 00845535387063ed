#!/usr/bin/python3
"""GGUF (llama.cpp's model file, versions 2 and 3, little-endian) for tools/convert.py.

Standard library + numpy only; tensor data is memory-mapped, never read whole.

- `GgufFile`: parses the header, the typed metadata and the tensor directory.
- `GgufReader`: a convert.py reader for architectures `llama` and `qwen2` with F32, F16, BF16, Q8_0 and Q4_0
  tensors (`rawtensor.RawTensor`s, so Q8_0/Q4_0 blocks can be copied into .mlb unchanged).
- `llama2c_tokenizer(meta, vocab)`: the tokenizer in the metadata as llama2.c's tokenizer.bin.
- `gpt2_tokenizer(meta, vocab, where)`: a `gpt2` (byte-level BPE) tokenizer as an MLTK file
  (tools/mltk.py, docs/tokenizer-format.md).
- `GgufWriter` / `write_gguf`: write a model as GGUF (tools/export.py, tests), in the types read
  here and also Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (tools/ggml_quants.py's simple
  encoder: test fixtures such as a Q4_K_M-like model; the C++ runtime reads those, not this module).

Facts used (GGUF spec, ggml-org/ggml docs/gguf.md; llama.cpp's llama tensor names):
  header   "GGUF", u32 version, u64 tensor count, u64 metadata count (v1 had u32 counts)
  metadata u64-length UTF-8 key, u32 value type, value; arrays: u32 item type, u64 count, items
  tensors  name, u32 n_dims, u64 ne[n_dims] (ne[0] = the contiguous dimension, i.e. columns),
           u32 ggml type, u64 offset into the data section
  data     starts at the next multiple of general.alignment (default 32) after the directory
llama.cpp's converter stores llama's attn_q/attn_k rows in the interleaved-pair RoPE order
(it undoes Hugging Face's half-split permutation), which is .mlb's order: no permutation here.
For qwen2 it does not (llama.cpp runs qwen2 with NeoX-style RoPE), so qwen2's attn_q/attn_k rows
and biases are in HF's half-split order and are permuted here. Llama 3's RoPE scaling is stored by
llama.cpp only as the tensor rope_freqs.weight (one divisor per frequency), no metadata.
"""
import math
import mmap
import os
import struct

import numpy as np

import bpe_import
import mltk
import ggml_quants
import mlb
import rawtensor as rt
from checkpoint import (AtomicFile, TokenizerUnavailable, describe, float_chunks, from_half_split,
                        hparams_plan, hparams_plan_names, layer_shapes, mltk_for_model,
                        outside_name, rope_rows_to_hf)

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# metadata value types
(T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64,
 T_F64) = range(13)
_SCALAR = {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i", T_F32: "f",
           T_BOOL: "B", T_U64: "Q", T_I64: "q", T_F64: "d"}
_NUMPY = {T_U8: "u1", T_I8: "i1", T_U16: "<u2", T_I16: "<i2", T_U32: "<u4", T_I32: "<i4",
          T_F32: "<f4", T_BOOL: "u1", T_U64: "<u8", T_I64: "<i8", T_F64: "<f8"}
_INT_TYPES = (T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_U64, T_I64)
_FLOAT_TYPES = (T_F32, T_F64)

# ggml tensor types (ids from ggml.h): every type GgufWriter writes (named as rawtensor and
# ggml_quants name them: "Q8_0", "Q4_K", ...); GgufFile.raw_tensor / GgufReader read only READ_TYPES
READ_TYPES = (rt.F32, rt.F16, rt.Q4_0, rt.Q8_0, rt.BF16)
GGML_IDS = {name: t.id for name, t in ggml_quants.TYPES.items()}
GGML_TYPES = {GGML_IDS[t]: t for t in READ_TYPES}
GGML_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
              9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
              16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
              22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
              29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0"}


def ggml_name(t):
    return GGML_NAMES.get(t, "type %d" % t)


class GgufError(mlb.MlbError):
    pass


class TensorInfo:
    __slots__ = ("name", "dims", "ggml_type", "offset")

    def __init__(self, name, dims, ggml_type, offset):
        self.name, self.dims, self.ggml_type, self.offset = name, dims, ggml_type, offset

    @property
    def shape(self):
        """numpy-order shape: (rows, cols) for a matrix (GGUF lists ne[0] = cols first)."""
        return tuple(reversed(self.dims))

    @property
    def type_name(self):
        return ggml_name(self.ggml_type)

    def nbytes(self):
        """Data size, or None for a type whose block size is not known here (ggml_quants.TYPES
        lists the known ones; raw_tensor reads fewer)."""
        t = ggml_quants.BY_ID.get(self.ggml_type)
        if t is None:
            return None
        n = math.prod(self.dims)  # exact: numpy's int64 product wraps for hostile dims
        return n // t.block_elems * t.block_bytes


# ------------------------------------------------------------------------------------ parse

class _Cursor:
    def __init__(self, buf, size, path):
        self.buf, self.size, self.path, self.pos = buf, size, path, 0
        self.what = "the header"

    def need(self, n):
        if n < 0 or self.pos + n > self.size:
            raise GgufError("%s: truncated GGUF: %s runs past the end of the file (%d bytes)"
                            % (self.path, self.what, self.size))

    def unpack(self, fmt):
        s = struct.Struct("<" + fmt)
        self.need(s.size)
        v = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return v

    def string_bytes(self):
        (n,) = self.unpack("Q")
        self.need(n)
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def string(self):
        return self.string_bytes().decode("utf-8", "replace")

    def value(self, t, depth=0):
        if t in _SCALAR:
            v = self.unpack(_SCALAR[t])[0]
            return bool(v) if t == T_BOOL else v
        if t == T_STRING:
            return self.string()
        if t == T_ARRAY:
            et, n = self.unpack("IQ")
            if et in _NUMPY:
                itemsize = np.dtype(_NUMPY[et]).itemsize
                self.need(n * itemsize)
                a = np.frombuffer(self.buf, _NUMPY[et], n, self.pos).copy()
                self.pos += n * itemsize
                return a
            if et == T_STRING:  # arrays of strings stay bytes (token pieces)
                self.need(8 * n)
                return [self.string_bytes() for _ in range(n)]
            if et == T_ARRAY and depth < 4:
                self.need(12 * n)
                return [self.value(T_ARRAY, depth + 1) for _ in range(n)]
            raise GgufError("%s: %s: unknown array item type %d" % (self.path, self.what, et))
        raise GgufError("%s: %s: unknown metadata value type %d" % (self.path, self.what, t))


class GgufFile:
    """A parsed GGUF file: `version`, `metadata` {key: value}, `value_types` {key: type},
    `tensors` {name: TensorInfo} in file order, `data_offset`, `alignment`, `size`.

    Metadata values: Python ints/floats/bools/str for scalars, numpy arrays for numeric arrays,
    lists of bytes for string arrays."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                self.size = os.fstat(f.fileno()).st_size
                if self.size < 24:
                    raise GgufError("%s: %d bytes, too short for a GGUF header" % (path, self.size))
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise GgufError("cannot read %s: %s" % (path, e.strerror or e))
        try:
            self._parse(_Cursor(buf, self.size, path))
        finally:
            buf.close()
        self._mm = None

    def _parse(self, c):
        magic, version = c.unpack("4sI")
        if magic != MAGIC:
            raise GgufError("%s: not a GGUF file (magic %r)" % (self.path, magic))
        if version not in (2, 3):
            if version & 0xFFFF == 0 and version >> 16:
                raise GgufError("%s: big-endian GGUF is not supported" % self.path)
            raise GgufError("%s: GGUF version %d is not supported (versions 2 and 3 are)"
                            % (self.path, version))
        self.version = version
        n_tensors, n_kv = c.unpack("QQ")
        if n_kv > self.size // 13 or n_tensors > self.size // 24:
            raise GgufError("%s: truncated or corrupt GGUF: the header lists %d tensors and %d "
                            "metadata keys, more than %d bytes can hold"
                            % (self.path, n_tensors, n_kv, self.size))
        self.metadata, self.value_types = {}, {}
        for i in range(n_kv):
            c.what = "metadata key %d" % i
            key = c.string()
            c.what = "metadata %s" % key
            (t,) = c.unpack("I")
            self.metadata[key] = c.value(t)
            self.value_types[key] = t
        self.alignment = DEFAULT_ALIGNMENT
        if "general.alignment" in self.metadata:
            a = self.metadata["general.alignment"]
            if self.value_types["general.alignment"] not in _INT_TYPES or a < 1 or a > 1 << 20:
                raise GgufError("%s: general.alignment = %r is not a valid alignment"
                                % (self.path, a))
            self.alignment = int(a)
        self.tensors = {}
        for i in range(n_tensors):
            c.what = "tensor info %d" % i
            name = c.string()
            c.what = "tensor info %s" % name
            (nd,) = c.unpack("I")
            if not 1 <= nd <= 4:
                raise GgufError("%s: tensor %s has %d dimensions" % (self.path, name, nd))
            dims = c.unpack("%dQ" % nd)
            ggml_type, offset = c.unpack("IQ")
            if name in self.tensors:
                raise GgufError("%s: tensor %s appears twice" % (self.path, name))
            self.tensors[name] = TensorInfo(name, dims, ggml_type, offset)
        self.data_offset = mlb.align_up(c.pos, self.alignment)
        for ti in self.tensors.values():
            n = ti.nbytes()
            if n is not None and self.data_offset + ti.offset + n > self.size:
                raise GgufError("%s: tensor %s (%s, %s) runs past the end of the file (truncated?)"
                                % (self.path, ti.name, ti.type_name,
                                   "x".join(map(str, ti.shape))))

    def _data(self):
        if self._mm is None:
            try:
                self._mm = np.memmap(self.path, dtype=np.uint8, mode="r")
            except OSError as e:
                raise GgufError("cannot read %s: %s" % (self.path, e.strerror or e))
        return self._mm

    def raw_tensor(self, name):
        """The tensor as a RawTensor (a view of the mapped file). Raises GgufError naming the
        tensor and its type when the type cannot be read."""
        ti = self.tensors[name]
        t = GGML_TYPES.get(ti.ggml_type)
        if t is None:
            raise GgufError("%s: tensor %s has type %s, which is not supported (F32, F16, BF16, "
                            "Q8_0 and Q4_0 are)" % (self.path, name, ti.type_name))
        shape = ti.shape
        if len(shape) > 2 and any(d != 1 for d in shape[:-2]):
            raise GgufError("%s: tensor %s has shape %s; a matrix or vector is expected"
                            % (self.path, name, "x".join(map(str, shape))))
        shape = shape[-2:] if len(shape) >= 2 else shape
        if any(d >= 1 << 31 for d in shape):
            raise GgufError("%s: tensor %s has shape %s, larger than any model this converter "
                            "reads (a dimension of 2^31 or more)"
                            % (self.path, name, "x".join(map(str, shape))))
        cols = shape[-1]
        if t in rt.BLOCK_SIZE and cols % rt.QK:
            raise GgufError("%s: tensor %s (%s) has %d columns, not a multiple of 32"
                            % (self.path, name, ti.type_name, cols))
        rows = shape[0] if len(shape) == 2 else 1
        start = self.data_offset + ti.offset
        rb = rt.row_bytes(t, cols)
        raw = self._data()[start:start + rows * rb].reshape(rows, rb)
        return rt.RawTensor(raw, t, shape, name)

    def close(self):
        self._mm = None


# ----------------------------------------------------------------------------------- reader

LAYER_NAMES = {"attn_norm": "attn_norm", "attn_q": "wq", "attn_k": "wk", "attn_v": "wv",
               "attn_output": "wo", "ffn_norm": "ffn_norm", "ffn_gate": "w1", "ffn_down": "w2",
               "ffn_up": "w3"}
GLOBAL_NAMES = {"token_embd": "tok_emb", "output_norm": "final_norm", "output": "wcls"}
BIAS_NAMES = {"attn_q": "bq", "attn_k": "bk", "attn_v": "bv"}
QK_NORM_NAMES = {"attn_q_norm": "q_norm", "attn_k_norm": "k_norm"}  # qwen3 (weights)
ROPE_FREQS = "rope_freqs.weight"
# Llama 3's RoPE scaling: llama.cpp's converter stores only the resulting per-frequency divisors
# (tensor rope_freqs.weight, head_dim/2 float32s) and no metadata; the exporter also writes the
# four parameters under these keys of its own (llama.cpp ignores unknown keys).
LLAMA3_KEYS = (("mlb.rope.llama3.factor", "rope_factor"),
               ("mlb.rope.llama3.low_freq_factor", "rope_low_freq_factor"),
               ("mlb.rope.llama3.high_freq_factor", "rope_high_freq_factor"),
               ("mlb.rope.llama3.original_context_length", "rope_original_max_seq"))
# the parameters of every released Llama 3.1/3.2 model but the factor (8 for 3.1, 32 for 3.2)
LLAMA3_DEFAULTS = dict(rope_low_freq_factor=1.0, rope_high_freq_factor=4.0,
                       rope_original_max_seq=8192)


def llama3_rope_factors(head_dim, theta, p):
    """rope_freqs.weight of llama3 scaling parameters p (the .mlb field names): the divisor of
    each frequency, as llama.cpp's converter computes it (float64, stored as float32)."""
    out = []
    L, lo, hi, factor = (p["rope_original_max_seq"], p["rope_low_freq_factor"],
                         p["rope_high_freq_factor"], p["rope_factor"])
    for i in range(head_dim // 2):
        freq = float(np.float32(1.0 / theta ** (2 * i / head_dim)))
        wavelen = 2 * math.pi / freq
        if wavelen < L / hi:
            out.append(1.0)
        elif wavelen > L / lo:
            out.append(factor)
        else:
            smooth = (L / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float32)


def gguf_name(mlb_name):
    """.mlb tensor name -> GGUF tensor name."""
    return outside_name(mlb_name, "blk.", LAYER_NAMES, BIAS_NAMES, QK_NORM_NAMES,
                        {k + ".weight": v for k, v in GLOBAL_NAMES.items()})


class GgufReader:
    """convert.py reader for a GGUF file of architecture llama (Llama 1-3, SmolLM2; Llama 3's
    rope_freqs.weight), qwen2 (q/k/v biases; q/k rows and biases in Hugging Face's half-split
    RoPE order, which llama.cpp's qwen2 conversion keeps: permuted here) or qwen3 (head size
    qwen3.attention.key_length, per-head attn_q_norm/attn_k_norm weights; q/k rows and the norm
    weights in Hugging Face's order as for qwen2: permuted here)."""

    kind = "GGUF"

    def __init__(self, path):
        self.path = path
        self.g = g = GgufFile(path)
        self.notes = []
        md = g.metadata
        arch = md.get("general.architecture")
        if arch is None:
            raise GgufError("%s: missing metadata key general.architecture" % path)
        if not isinstance(arch, str):
            raise GgufError("%s: metadata general.architecture is not a string" % path)
        if arch == "qwen3moe":
            raise GgufError("%s: general.architecture = '%s': mixture-of-experts models are not "
                            "supported" % (path, arch))
        if arch not in ("llama", "qwen2", "qwen3"):
            raise GgufError("%s: architecture '%s' is not supported (general.architecture: "
                            "llama, qwen2 or qwen3)" % (path, arch))
        qwen2, qwen3 = arch == "qwen2", arch == "qwen3"
        half_split = qwen2 or qwen3  # llama.cpp keeps HF's q/k row order (NEOX RoPE)

        def key(name, default=None, kind="int"):
            k = arch + "." + name
            if k not in md:
                if default is None:
                    raise GgufError("%s: missing metadata key %s" % (path, k))
                return default
            v, t = md[k], g.value_types[k]
            ok = t in _INT_TYPES if kind == "int" else t in _INT_TYPES + _FLOAT_TYPES
            if not ok:
                raise GgufError("%s: metadata %s = %r: expected a single %s"
                                % (path, k, v if t != T_ARRAY else "[array]",
                                   "integer" if kind == "int" else "number"))
            return int(v) if kind == "int" else float(v)

        dim = key("embedding_length")
        n_layers = key("block_count")
        n_heads = key("attention.head_count")
        n_kv = key("attention.head_count_kv", n_heads)
        hidden = key("feed_forward_length")
        max_seq = key("context_length")
        eps = key("attention.layer_norm_rms_epsilon", kind="float")
        theta = key("rope.freq_base", 10000.0, kind="float")
        for k, v in (("embedding_length", dim), ("block_count", n_layers),
                     ("attention.head_count", n_heads), ("attention.head_count_kv", n_kv),
                     ("feed_forward_length", hidden), ("context_length", max_seq)):
            if not 1 <= v < 1 << 31:
                raise GgufError("%s: metadata %s.%s = %d is out of range" % (path, arch, k, v))
        if qwen3 and arch + ".attention.key_length" in md:
            head_dim = key("attention.key_length")  # need not be embedding_length / head_count
            if not 2 <= head_dim < 1 << 20 or head_dim % 2:
                raise GgufError("%s: metadata %s.attention.key_length = %d: the head size must be "
                                "even and in [2, 2^20)" % (path, arch, head_dim))
            what = "attention.key_length"
        else:
            if dim % n_heads:
                raise GgufError("%s: %s.attention.head_count = %d does not divide "
                                "%s.embedding_length = %d" % (path, arch, n_heads, arch, dim))
            head_dim = dim // n_heads
            what = "embedding_length / head_count"
        for k in ("rope.dimension_count", "attention.key_length", "attention.value_length"):
            v = key(k, head_dim)
            if v != head_dim:
                raise GgufError("%s: metadata %s.%s = %d differs from the head size %d "
                                "(%s); not supported" % (path, arch, k, v, head_dim, what))
        # .mlb head_size: 0 when it is dim / n_heads (the file then reads as before)
        head_size = 0 if dim % n_heads == 0 and head_dim == dim // n_heads else head_dim
        scaling = md.get(arch + ".rope.scaling.type")
        if scaling == "llama3" and arch == "llama" and ROPE_FREQS in g.tensors:
            scaling = None  # named as well as given by rope_freqs.weight (read below)
        if scaling not in (None, "none"):
            raise GgufError("%s: metadata %s.rope.scaling.type = '%s': RoPE scaling is not "
                            "supported (only Llama 3's, given by rope_freqs.weight)"
                            % (path, arch, scaling))
        for k in ("attention.sliding_window",):
            if qwen2 and md.get(arch + "." + k):
                # llama.cpp's qwen2 conversion does not write it; a file that does asks for it
                raise GgufError("%s: metadata %s.%s = %r: sliding-window attention is not "
                                "supported" % (path, arch, k, md[arch + "." + k]))
        if key("expert_count", 0) > 0:
            raise GgufError("%s: metadata %s.expert_count = %d: mixture-of-experts models are "
                            "not supported" % (path, arch, key("expert_count", 0)))

        # the tensors: every one must be known, present, readable and of the right shape
        names = {}
        for gname in g.tensors:
            parts = gname.split(".")
            mname = None
            if gname == ROPE_FREQS and not qwen2:
                continue  # Llama 3's RoPE scaling: read below
            if len(parts) == 2 and parts[1] == "weight" and parts[0] in GLOBAL_NAMES:
                mname = GLOBAL_NAMES[parts[0]]
            elif (len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit()
                  and parts[3] == "weight" and parts[2] in LAYER_NAMES
                  and int(parts[1]) < n_layers):
                mname = "layers.%d.%s" % (int(parts[1]), LAYER_NAMES[parts[2]])
            elif (qwen2 and len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit()
                  and parts[3] == "bias" and parts[2] in BIAS_NAMES
                  and int(parts[1]) < n_layers):
                mname = "layers.%d.%s" % (int(parts[1]), BIAS_NAMES[parts[2]])
            elif (qwen3 and len(parts) == 4 and parts[0] == "blk" and parts[1].isdigit()
                  and parts[3] == "weight" and parts[2] in QK_NORM_NAMES
                  and int(parts[1]) < n_layers):
                mname = "layers.%d.%s" % (int(parts[1]), QK_NORM_NAMES[parts[2]])
            if mname is None:
                hint = (" (Qwen3's q/k norm; architecture qwen3 has it)"
                        if parts[-2:-1] in (["attn_q_norm"], ["attn_k_norm"]) else "")
                raise GgufError("%s: tensor %s (%s) is not part of the %s architecture this "
                                "converter supports%s"
                                % (path, gname, g.tensors[gname].type_name, arch, hint))
            names[mname] = gname
        self._names = names
        if "tok_emb" not in names:
            raise GgufError("%s: missing tensor token_embd.weight" % path)
        vocab = g.tensors[names["tok_emb"]].shape[0]
        per_layer = layer_shapes(dim, hidden, n_heads, n_kv, head_dim, qwen2, qwen3)

        def expect():  # generated, not listed: llama.block_count may say 2^31 - 1
            yield "tok_emb", (vocab, dim)
            yield "final_norm", (dim,)
            yield "wcls", (vocab, dim)
            for layer in range(n_layers):
                for base, shape in per_layer.items():
                    yield "layers.%d.%s" % (layer, base), shape

        self.raw = {}
        for mname, shape in expect():
            if mname not in names:
                if mname == "wcls":
                    continue
                raise GgufError("%s: missing tensor %s" % (path, gguf_name(mname)))
            t = g.raw_tensor(names[mname])
            got = t.shape if len(shape) == 2 else (math.prod(t.shape),)
            if got != shape:
                raise GgufError("%s: tensor %s (%s) has shape %s, expected %s from the metadata"
                                % (path, t.name, t.type, "x".join(map(str, t.shape)),
                                   "x".join(map(str, shape))))
            if len(shape) == 1:
                t = rt.RawTensor(t.raw.reshape(1, -1), t.type, shape, t.name)
            t.where = path + ": "
            base = mname.rsplit(".", 1)[-1]
            if half_split or base not in ("wq", "wk"):  # llama's wq/wk are interleaved already
                t = from_half_split(t, base, n_heads, n_kv, head_dim)
            self.raw[mname] = t
        rope = self._llama3_rope(head_dim, theta) if ROPE_FREQS in g.tensors else {}
        shared = 1
        if "wcls" in self.raw:
            if self.raw["wcls"].tobytes_equal(self.raw["tok_emb"]):
                self.notes.append("output.weight is identical to token_embd.weight: stored as "
                                  "a shared classifier")
                del self.raw["wcls"]
            else:
                shared = 0
        meta_vocab = md.get("llama.vocab_size")
        if isinstance(meta_vocab, int) and meta_vocab != vocab:
            raise GgufError("%s: metadata llama.vocab_size = %d but token_embd.weight has %d rows"
                            % (path, meta_vocab, vocab))
        self.hparams = dict(dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv,
                            hidden_dim=hidden, vocab=vocab, max_seq=max_seq, rope_theta=theta,
                            norm_eps=eps, shared_classifier=shared, arch=mlb.ARCHS[arch],
                            qkv_bias=1 if qwen2 else 0, **rope)
        if qwen3:
            self.hparams.update(head_size=head_size, qk_norm=1)
        n_tokens = self._gpt2_tokens()
        if n_tokens and n_tokens < vocab:
            self.hparams["n_tokens"] = n_tokens
        self.description = describe("GGUF v%d %s" % (g.version, arch), self.hparams, self.raw,
                                     head_dim, rope)
        self.source_types = {k: t.type for k, t in self.raw.items()
                             if isinstance(t, rt.RawTensor)}
        self.input_bytes = g.size

    def _llama3_rope(self, head_dim, theta):
        """The llama3 scaling fields from rope_freqs.weight: the parameters from the exporter's
        mlb.rope.llama3.* keys, else Llama 3.1/3.2's (low 1, high 4, original context 8192, the
        factor the largest divisor); either way the tensor must equal what they give."""
        g, md, path = self.g, self.g.metadata, self.path
        t = g.raw_tensor(ROPE_FREQS)
        if t.shape not in ((head_dim // 2,), (1, head_dim // 2)):
            raise GgufError("%s: tensor %s has shape %s, expected %d (head_dim / 2)"
                            % (path, ROPE_FREQS, "x".join(map(str, t.shape)), head_dim // 2))
        got = np.concatenate(list(t.float_chunks())).reshape(-1).astype(np.float64)
        if not np.all(np.isfinite(got)) or not np.all(got >= 1):
            raise GgufError("%s: tensor %s: RoPE frequency divisors must be finite and >= 1"
                            % (path, ROPE_FREQS))
        ours = [k for k, _ in LLAMA3_KEYS if k in md]
        if ours:
            p = {}
            for k, f in LLAMA3_KEYS:
                if k not in md or g.value_types[k] not in _INT_TYPES + _FLOAT_TYPES:
                    raise GgufError("%s: metadata %s: missing or not a number" % (path, k))
                p[f] = int(md[k]) if f == "rope_original_max_seq" else float(md[k])
            if p["rope_original_max_seq"] < 1 or not 0 < p["rope_low_freq_factor"] < \
                    p["rope_high_freq_factor"] or not p["rope_factor"] > 0:
                raise GgufError("%s: metadata mlb.rope.llama3.*: invalid llama3 RoPE scaling %r"
                                % (path, p))
        else:
            p = dict(LLAMA3_DEFAULTS, rope_factor=float(np.float32(got.max())))
            ctx = md.get("llama.rope.scaling.original_context_length")
            if isinstance(ctx, int) and ctx > 0:
                p["rope_original_max_seq"] = ctx
        want = llama3_rope_factors(head_dim, theta, p).astype(np.float64)
        if not np.allclose(got, want, rtol=1e-5, atol=0):
            raise GgufError("%s: tensor %s: RoPE frequency divisors that are not Llama 3's scaling "
                            "(factor %g, low_freq_factor %g, high_freq_factor %g, original context "
                            "%d); not supported" % (path, ROPE_FREQS, p["rope_factor"],
                                                   p["rope_low_freq_factor"],
                                                   p["rope_high_freq_factor"],
                                                   p["rope_original_max_seq"]))
        if not ours:
            self.notes.append("%s: Llama 3 RoPE scaling with factor %g, low_freq_factor %g, "
                              "high_freq_factor %g, original context %d (Llama 3.1/3.2's; the "
                              "divisors match)" % (ROPE_FREQS, p["rope_factor"],
                                                   p["rope_low_freq_factor"],
                                                   p["rope_high_freq_factor"],
                                                   p["rope_original_max_seq"]))
        return dict(p, rope_scaling=mlb.ROPE_LLAMA3)

    def _gpt2_tokens(self):
        """Tokens of a 'gpt2' tokenizer in the metadata (llama.cpp's [PAD<i>] rows left out), 0
        when there is none or it cannot be read (tokenizer_bin reports why)."""
        md = self.g.metadata
        if not (isinstance(md.get("tokenizer.ggml.model"), str)
                and md["tokenizer.ggml.model"] == "gpt2"):
            return 0
        try:
            return len(bpe_import.from_gguf_metadata(md, self.path).tokens)
        except mltk.BpeError:
            return 0

    def tensors(self):
        for spec in hparams_plan_names(self.hparams):
            yield spec, self.raw[spec]

    def tokenizer_bin(self):
        """llama2.c tokenizer.bin bytes (a 'llama' tokenizer) or MLTK bytes (a 'gpt2' one), or
        raise TokenizerUnavailable."""
        if isinstance(self.g.metadata.get("tokenizer.ggml.model"), str) and \
                self.g.metadata["tokenizer.ggml.model"] == "gpt2":
            return gpt2_tokenizer(self.g.metadata, self.hparams["vocab"], self.path)
        return llama2c_tokenizer(self.g.metadata, self.hparams["vocab"], self.notes)

    def close(self):
        self.g.close()
        self.raw = {}


# -------------------------------------------------------------------------------- tokenizer

SPACE_MARK = "\u2581".encode("utf-8")  # SentencePiece's ▁


def llama2c_tokenizer(md, vocab, notes=None):
    """The GGUF tokenizer as llama2.c's tokenizer.bin (what llama2.c's tokenizer.py writes from
    the SentencePiece model): u32 max token length, then per token f32 score, u32 length, bytes;
    ▁ becomes a space, the BOS piece is written as "\\n<s>\\n" and EOS as "\\n</s>\\n"."""
    model = md.get("tokenizer.ggml.model")
    if model is None:
        raise TokenizerUnavailable("the GGUF has no tokenizer (missing metadata key "
                                   "tokenizer.ggml.model)")
    if not isinstance(model, str) or model != "llama":
        raise TokenizerUnavailable("tokenizer.ggml.model is '%s'; only 'llama' (SentencePiece, "
                                   "written as a llama2.c tokenizer.bin) and 'gpt2' (byte-level "
                                   "BPE, written as MLTK) tokenizers are supported" % model)
    for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores"):
        if k not in md:
            raise TokenizerUnavailable("missing metadata key %s" % k)
    tokens, scores = md["tokenizer.ggml.tokens"], md["tokenizer.ggml.scores"]
    if not isinstance(tokens, list) or not isinstance(scores, np.ndarray):
        raise TokenizerUnavailable("tokenizer.ggml.tokens / .scores are not arrays of strings / "
                                   "numbers")
    if len(tokens) != len(scores):
        raise TokenizerUnavailable("tokenizer.ggml.tokens has %d entries, tokenizer.ggml.scores %d"
                                   % (len(tokens), len(scores)))
    if len(tokens) != vocab:
        raise TokenizerUnavailable("the tokenizer has %d tokens but the model's vocabulary is %d"
                                   % (len(tokens), vocab))
    scores = scores.astype("<f4")  # no-op for the float32 arrays GGUF writers use
    bos = md.get("tokenizer.ggml.bos_token_id")
    eos = md.get("tokenizer.ggml.eos_token_id")
    pieces = []
    for i, t in enumerate(tokens):
        if i == bos:
            t = b"\n<s>\n"
        elif i == eos:
            t = b"\n</s>\n"
        else:
            t = t.replace(SPACE_MARK, b" ")
        pieces.append(t)
    max_len = max(len(p) for p in pieces)
    out = [struct.pack("<I", max_len)]
    sb = scores.tobytes()
    for i, p in enumerate(pieces):
        out.append(sb[4 * i:4 * i + 4])
        out.append(struct.pack("<I", len(p)))
        out.append(p)
    if notes is not None:
        if bos != 1 or len(tokens) < 259 or tokens[3] != b"<0x00>" or tokens[258] != b"<0xFF>":
            notes.append("the tokenizer's BOS id is %s and its byte tokens are not ids 3..258; "
                         "ml_run's encoder assumes llama2.c's layout (BOS 1, <0x00>..<0xFF> at "
                         "3..258)" % ("missing" if bos is None else bos))
    return b"".join(out)


def gpt2_tokenizer(md, vocab, where):
    """The GGUF's 'gpt2' tokenizer as MLTK bytes (tools/mltk.py), or raise TokenizerUnavailable.
    vocab: the model's vocabulary (rows of token_embd), which must hold every token id."""
    try:
        v = bpe_import.from_gguf_metadata(md, where)
    except mltk.BpeError as e:
        raise TokenizerUnavailable(str(e))
    return mltk_for_model(v, vocab)


def read_llama2c_tokenizer(path):
    """(max_token_length, [(score float32, bytes)]) of a llama2.c tokenizer.bin."""
    with open(path, "rb") as f:
        b = f.read()
    (mtl,) = struct.unpack_from("<i", b)
    off, out = 4, []
    while off < len(b):
        if off + 8 > len(b):
            raise mlb.MlbError("%s: truncated llama2.c tokenizer" % path)
        s, n = struct.unpack_from("<fi", b, off)
        off += 8
        if n < 0 or off + n > len(b):
            raise mlb.MlbError("%s: truncated llama2.c tokenizer" % path)
        out.append((b[off - 8:off - 4], b[off:off + n]))
        off += n
    return mtl, out


def byte_level_vocab(path):
    """mltk.Vocab of an MLTK file, a tokenizer.json, GPT-2's encoder.json or a folder; None for
    anything else (a llama2.c tokenizer.bin)."""
    if os.path.isdir(path):
        return bpe_import.from_hf_folder(path)
    if mltk.is_mltk(path):
        with open(path, "rb") as f:
            return mltk.read_mltk(f.read(), path)
    if os.path.basename(path) == "encoder.json":
        return bpe_import.from_gpt2_files(path, os.path.join(os.path.dirname(path), "vocab.bpe"))
    if path.endswith(".json"):
        return bpe_import.from_tokenizer_json(path)
    return None


def gpt2_tokenizer_metadata(v):
    """GGUF metadata [(key, type, value)] of a mltk.Vocab, as llama.cpp's converter writes a
    'gpt2' tokenizer (the inverse of gpt2_tokenizer)."""
    types = {"tokenizer.ggml.tokens": (T_ARRAY, T_STRING), "tokenizer.ggml.merges": (T_ARRAY, T_STRING),
             "tokenizer.ggml.token_type": (T_ARRAY, T_I32), "tokenizer.ggml.add_bos_token": T_BOOL}
    out = []
    for k, val in bpe_import.gguf_metadata(v):
        t = types.get(k, T_STRING if isinstance(val, str) else T_U32)
        if k == "tokenizer.ggml.token_type":
            val = np.array(val, "<i4")
        out.append((k, t, val))
    return out


def gguf_tokenizer_metadata(path):
    """GGUF tokenizer metadata [(key, type, value)] from a tokenizer file: a byte-level BPE one
    (MLTK, tokenizer.json, encoder.json) as 'gpt2' metadata; a llama2.c tokenizer.bin as 'llama'
    metadata, the inverse of llama2c_tokenizer for SentencePiece vocabularies (space -> ▁,
    "\\n<s>\\n" -> "<s>")."""
    v = byte_level_vocab(path)
    if v is not None:
        return gpt2_tokenizer_metadata(v)
    _, toks = read_llama2c_tokenizer(path)
    pieces, types = [], []
    bos = eos = None
    for i, (_, p) in enumerate(toks):
        if p == b"\n<s>\n":
            bos, p, tt = i, b"<s>", 3
        elif p == b"\n</s>\n":
            eos, p, tt = i, b"</s>", 3
        elif p == b"<unk>":
            tt = 2
        elif len(p) == 6 and p.startswith(b"<0x") and p.endswith(b">"):
            tt = 6
        else:
            p, tt = p.replace(b" ", SPACE_MARK), 1
        pieces.append(p)
        types.append(tt)
    scores = np.frombuffer(b"".join(s for s, _ in toks), "<f4")
    md = [("tokenizer.ggml.model", T_STRING, "llama"),
          ("tokenizer.ggml.tokens", (T_ARRAY, T_STRING), pieces),
          ("tokenizer.ggml.scores", (T_ARRAY, T_F32), scores),
          ("tokenizer.ggml.token_type", (T_ARRAY, T_I32), np.array(types, "<i4"))]
    if bos is not None:
        md.append(("tokenizer.ggml.bos_token_id", T_U32, bos))
    if eos is not None:
        md.append(("tokenizer.ggml.eos_token_id", T_U32, eos))
    md.append(("tokenizer.ggml.unknown_token_id", T_U32, 0))
    return md


# ----------------------------------------------------------------------------------- writer

def _pack_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _pack_value(t, v):
    if isinstance(t, tuple):  # (T_ARRAY, item type)
        _, et = t
        head = struct.pack("<IQ", et, len(v))
        if et == T_STRING:
            return head + b"".join(_pack_string(x) for x in v)
        return head + np.asarray(v, _NUMPY[et]).tobytes()
    if t == T_STRING:
        return _pack_string(v)
    return struct.pack("<" + _SCALAR[t], v)


def tensor_row_bytes(type_, cols):
    """Bytes of one row of a tensor GgufWriter writes (cols a multiple of the type's block)."""
    if type_ in rt.FLOAT_SIZE or type_ in rt.BLOCK_SIZE:
        return rt.row_bytes(type_, cols)
    return ggml_quants.row_bytes(type_, cols)


def encode_tensor_rows(chunk, type_):
    """float32 row chunk -> bytes of GGUF type type_ (Q8_0/Q4_0 quantized with .mlb's rules,
    scales rounded to fp16; the other block types by tools/ggml_quants.py's encoder, row by row
    in order, which is one run of blocks since every row is whole blocks)."""
    chunk = np.ascontiguousarray(chunk, np.float32)
    if type_ not in READ_TYPES:
        cols = chunk.shape[-1]
        if cols % ggml_quants.type_of(type_).block_elems:
            raise mlb.MlbError("a row of %d values cannot be %s (blocks of %d)"
                               % (cols, type_, ggml_quants.type_of(type_).block_elems))
        return ggml_quants.quantize(chunk, type_)
    if type_ == rt.F32:
        return chunk.astype("<f4").tobytes()
    if type_ == rt.F16:
        return chunk.astype("<f2").tobytes()
    if type_ == rt.BF16:
        return rt.to_bf16(chunk).tobytes()
    n, cols = chunk.shape
    if type_ == rt.Q8_0:
        q, d = mlb.quantize_q8_0(chunk)
        blocks = np.empty((n, cols // rt.QK), rt._Q8_BLOCK)
        blocks["q"] = q.reshape(n, -1, rt.QK)
    else:
        q, d = mlb.quantize_q4_0(chunk)
        blocks = np.empty((n, cols // rt.QK), rt._Q4_BLOCK)
        blocks["q"] = q.reshape(n, -1, rt.QK // 2)
    blocks["d"] = d.astype("<f2")
    return blocks.tobytes()


class GgufWriter:
    """Write a GGUF file: metadata, then tensors whose shapes and types are declared up front
    and whose data arrives later, in declaration order, as float32 row chunks. Written to a
    temporary name and renamed when complete."""

    def __init__(self, path, version=3, alignment=DEFAULT_ALIGNMENT):
        self.path, self.version, self.alignment = path, version, alignment
        self.kv, self.infos = [], []

    def add(self, key, type_, value):
        self.kv.append((key, type_, value))

    def add_tensor(self, name, type_, shape):
        """type_: a name of GGML_IDS ("F32", "Q8_0", "Q4_K", ...)."""
        if type_ not in GGML_IDS:
            raise mlb.MlbError("tensor %s: GGUF type %r cannot be written (%s can)"
                               % (name, type_, ", ".join(GGML_IDS)))
        self.infos.append((name, type_, tuple(shape)))

    def write(self, chunks_of):
        """chunks_of(name) -> iterable of float32 row chunks of that tensor."""
        head = [struct.pack("<4sIQQ", MAGIC, self.version, len(self.infos), len(self.kv))]
        for k, t, v in self.kv:
            head.append(_pack_string(k))
            head.append(struct.pack("<I", T_ARRAY if isinstance(t, tuple) else t))
            head.append(_pack_value(t, v))
        off, sizes = 0, []
        for name, t, shape in self.infos:
            head.append(_pack_string(name))
            head.append(struct.pack("<I", len(shape)))
            head.append(struct.pack("<%dQ" % len(shape), *reversed(shape)))
            head.append(struct.pack("<IQ", GGML_IDS[t], off))
            rows = shape[0] if len(shape) == 2 else 1
            n = rows * tensor_row_bytes(t, shape[-1])
            sizes.append(n)
            off = mlb.align_up(off + n, self.alignment)
        head = b"".join(head)
        with AtomicFile(self.path) as f:
            f.write(head)
            f.write(bytes(mlb.align_up(len(head), self.alignment) - len(head)))
            for (name, t, shape), n in zip(self.infos, sizes):
                written = 0
                for chunk in chunks_of(name):
                    b = encode_tensor_rows(np.asarray(chunk).reshape(-1, shape[-1]), t)
                    f.write(b)
                    written += len(b)
                if written != n:
                    raise mlb.MlbError("internal: tensor %s: wrote %d bytes, expected %d"
                                       % (name, written, n))
                f.write(bytes(mlb.align_up(n, self.alignment) - n))


def write_gguf(reader, path, ftype=rt.F32, version=3, tokenizer=None, untie=False,
               alignment=DEFAULT_ALIGNMENT, name="legacy-ml export", tensor_types=None):
    """Write a convert.py reader's model as a GGUF llama, qwen2 or qwen3 model (qwen2: q/k rows and
    biases in HF's order; qwen3: q/k rows and q/k norm weights in HF's order, the head size as
    qwen3.attention.key_length/value_length, as llama.cpp's converter writes them; llama3 RoPE
    scaling: rope_freqs.weight + mlb.rope.llama3.* keys). Matrices get type ftype (F32,
    F16, BF16, Q8_0, Q4_0, or for test fixtures another of GGML_IDS: Q4_K, Q6_K, ...; a matrix
    whose columns are not a multiple of the type's block falls back to F16), norms F32.
    tensor_types: {GGUF tensor name: type} overriding ftype (e.g. {"output.weight": "Q6_K"} with
    ftype "Q4_K", as llama.cpp's Q4_K_M files mix them). tokenizer: a tokenizer to embed (a llama2.c tokenizer.bin,
    or a byte-level BPE one: MLTK, tokenizer.json, encoder.json). untie: store
    output.weight even for a shared classifier (a copy of token_embd.weight)."""
    hp = reader.hparams
    arch = mlb.ARCH_NAMES[hp.get("arch", mlb.ARCH_LLAMA)]
    if bool(hp.get("qkv_bias")) != (arch == "qwen2"):
        raise mlb.MlbError("a %s model %s q/k/v biases cannot be written as GGUF (GGUF llama has "
                           "none, qwen2 always has them)"
                           % (arch, "with" if hp.get("qkv_bias") else "without"))
    if bool(hp.get("qk_norm")) != (arch == "qwen3"):
        raise mlb.MlbError("a %s model %s q/k norm cannot be written as GGUF (only qwen3 has it, "
                           "always)" % (arch, "with" if hp.get("qk_norm") else "without"))
    if hp.get("head_size") and arch != "qwen3":
        raise mlb.MlbError("a head size other than dim / heads is written for GGUF qwen3 only, "
                           "not %s" % arch)
    llama3 = hp.get("rope_scaling") == mlb.ROPE_LLAMA3
    if llama3 and arch != "llama":
        raise mlb.MlbError("llama3 RoPE scaling is written for GGUF llama only, not %s" % arch)
    hd = hp.get("head_size") or hp["dim"] // hp["n_heads"]
    w = GgufWriter(path, version, alignment)
    w.add("general.architecture", T_STRING, arch)
    w.add("general.name", T_STRING, name)
    if alignment != DEFAULT_ALIGNMENT:
        w.add("general.alignment", T_U32, alignment)
    # llama.cpp's converter: rope.dimension_count for llama; attention.key_length/value_length
    # for qwen3 (config.json's head_dim)
    head_keys = ((("attention.key_length", hd), ("attention.value_length", hd)) if arch == "qwen3"
                 else (("rope.dimension_count", hd),))
    for k, v in (("context_length", hp["max_seq"]), ("embedding_length", hp["dim"]),
                 ("block_count", hp["n_layers"]), ("feed_forward_length", hp["hidden_dim"]),
                 *head_keys,
                 ("attention.head_count", hp["n_heads"]),
                 ("attention.head_count_kv", hp["n_kv_heads"])):
        w.add(arch + "." + k, T_U32, v)
    w.add(arch + ".attention.layer_norm_rms_epsilon", T_F32, hp["norm_eps"])
    w.add(arch + ".rope.freq_base", T_F32, hp["rope_theta"])
    if llama3:
        for k, f in LLAMA3_KEYS:
            w.add(k, T_U32 if f == "rope_original_max_seq" else T_F32, hp[f])
    if tokenizer:
        for k, t, v in gguf_tokenizer_metadata(tokenizer):
            w.add(k, t, v)
        _pad_tokens(w, hp["vocab"])
    shapes = {spec.name: spec.shape for spec in hparams_plan(hp)}
    out = list(shapes)
    if untie and hp["shared_classifier"]:
        out.append("wcls")
        shapes["wcls"] = shapes["tok_emb"]
    if llama3:  # llama.cpp's converter writes it first
        w.add_tensor(ROPE_FREQS, rt.F32, (hd // 2,))
    tensor_types = dict(tensor_types or {})
    for n in out:
        shape = shapes[n]
        t = rt.F32 if len(shape) == 1 else tensor_types.pop(gguf_name(n), ftype)
        if shape[-1] % ggml_quants.type_of(t).block_elems:
            t = rt.F16
        w.add_tensor(gguf_name(n), t, shape)
    if tensor_types:
        raise mlb.MlbError("tensor_types names tensors the model does not write as matrices: %s"
                           % ", ".join(sorted(tensor_types)))
    cache = {}
    it = reader.tensors()

    def chunks_of(gname):
        if gname == ROPE_FREQS:
            return [llama3_rope_factors(hd, float(np.float32(hp["rope_theta"])), hp).reshape(1, -1)]
        want = [n for n in out if gguf_name(n) == gname][0]
        if want == "wcls" and hp["shared_classifier"]:
            return cache["tok_emb"]
        name, arr = next(it)
        if name != want:
            raise mlb.MlbError("internal: reader gave %s, expected %s" % (name, want))
        chunks = float_chunks(arr)
        base = name.rsplit(".", 1)[-1]
        if arch in ("qwen2", "qwen3") and base in ("wq", "wk", "bq", "bk", "q_norm", "k_norm"):
            # interleaved -> half-split
            rows = rope_rows_to_hf(1 if base in ("q_norm", "k_norm") else
                                    hp["n_heads"] if base in ("wq", "bq") else hp["n_kv_heads"], hd)
            if base in ("bq", "bk", "q_norm", "k_norm"):
                full = np.concatenate([np.asarray(c).reshape(-1) for c in chunks])
                chunks = [full[rows].reshape(1, -1)]
            else:
                full = np.concatenate([np.asarray(c).reshape(-1, hp["dim"]) for c in chunks])
                chunks = [full[rows]]
        if untie and name == "tok_emb":
            chunks = cache["tok_emb"] = list(chunks)
        return chunks

    w.write(chunks_of)


def _pad_tokens(w, vocab):
    """Pad a 'gpt2' token list to the model's vocabulary with unused [PAD<i>] tokens, as
    llama.cpp's converter does (llama.cpp needs one token per embedding row); readers leave
    trailing ones out again, so the tokenizer size (.mlb n_tokens) survives the round trip."""
    kv = {k: i for i, (k, _, _) in enumerate(w.kv)}
    if "tokenizer.ggml.merges" not in kv or "tokenizer.ggml.tokens" not in kv:
        return
    k, t, toks = w.kv[kv["tokenizer.ggml.tokens"]]
    n = len(toks)
    if n >= vocab:
        return
    w.kv[kv["tokenizer.ggml.tokens"]] = (k, t, list(toks) + ["[PAD%d]" % i for i in range(n, vocab)])
    k, t, types = w.kv[kv["tokenizer.ggml.token_type"]]
    w.kv[kv["tokenizer.ggml.token_type"]] = (k, t, np.concatenate(
        [np.asarray(types, "<i4"), np.full(vocab - n, bpe_import.GT_UNUSED, "<i4")]))
