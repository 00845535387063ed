#!/usr/bin/python3
"""The .mlb model file (docs/mlb-format.md): header, tensor plan, quantizers, writer, reader.

Shared by tools/convert.py, tools/gen_random.py and tools/tests. Standard library + numpy only.

- `Header`: the 256-byte header (pack/unpack/validate).
- `tensor_plan(header)`: the tensors of a file, in file order, with shapes and types.
- `quantize_q8_0`, `quantize_q4_0` (+ `dequantize_*`): bit-exact twins of
  kernels/scalar/quantize.cc, vectorised over blocks, all arithmetic in IEEE float32.
- `pack_panels` / `unpack_panels`: row-major blocks (layout 0) <-> 16-row panels (layouts 1
  and 2; layout 2 is layout 1 with binary16 scales).
- `round_scales_f16`: block scales rounded to binary16 values (layout 2, and the writer's
  `f16_scales` option for layouts 0 and 1).
- `MlbWriter`: streams a file tensor by tensor (a tensor may arrive as row chunks, or as
  `Prequantized` blocks copied without re-quantizing) into a temporary file next to the output
  and renames it into place only when complete. Tensors arrive row-major in every layout; with
  layouts 1 and 2 the writer packs them into panels 16 rows at a time.
- `MlbFile` / `read_mlb`: validates a file and exposes every array as a numpy memmap view;
  `Tensor.unpack()` gives a quantized tensor's row-major (layout 0) q and d in any layout, d
  always float32 (layout 2's binary16 scales widened exactly).

Errors meant for a user are `MlbError` (one line, no traceback needed); `ShapeError` is the
subclass for "this model cannot be stored with this type" (CLI exit code 2).
"""
import math
import os
import struct
import sys
import tempfile
import time

import numpy as np

from errors import OneLineError  # noqa: E402 (tools/ is on sys.path for every tool)

MAGIC = b"MLB1"
VERSION = 3           # the newest version this module reads and writes
VERSIONS = (1, 2, 3)  # a file is written as version 1 unless it uses a version-2 (or 3) field
HEADER_SIZE = 256
ALIGN = 64
QK = 32  # elements per quantization block

F32, Q4_0, Q8_0 = 0, 2, 8  # GGML's type ids
WTYPES = {"f32": F32, "q8_0": Q8_0, "q4_0": Q4_0}
WTYPE_NAMES = {v: k for k, v in WTYPES.items()}

LAYOUT_ROWS, LAYOUT_PANEL16, LAYOUT_PANEL16_F16 = 0, 1, 2  # header field `layout`
LAYOUTS = {"rows": LAYOUT_ROWS, "panel16": LAYOUT_PANEL16, "panel16-f16": LAYOUT_PANEL16_F16}
LAYOUT_NAMES = {v: k for k, v in LAYOUTS.items()}
PANEL_LAYOUTS = (LAYOUT_PANEL16, LAYOUT_PANEL16_F16)  # quantized tensors in 16-row panels
PANEL = 16  # rows per panel (layouts 1 and 2)
F16_SCALE_LIMIT = 65520.0  # |d| >= this rounds to an infinite binary16 (the largest half: 65504)

# magic, version, dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq,
# rope_theta, norm_eps, wtype, shared_classifier, layout (56 bytes, version 1); then, version 2:
# arch, qkv_bias, rope_scaling, rope_factor, rope_low_freq_factor, rope_high_freq_factor,
# rope_original_max_seq, n_tokens (88 bytes); then, version 3: head_size, qk_norm (96 bytes);
# then reserved zero bytes.
_HEADER_STRUCT = struct.Struct("<4s8I2f3I3I3f2I2I")
_V1_SIZE = 56
_V2_SIZE = 88
_RESERVED = HEADER_SIZE - _HEADER_STRUCT.size
assert _RESERVED == 160

ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3 = 0, 1, 2  # header field `arch` (version 2; qwen3: version 3)
ARCHS = {"llama": ARCH_LLAMA, "qwen2": ARCH_QWEN2, "qwen3": ARCH_QWEN3}
ARCH_NAMES = {v: k for k, v in ARCHS.items()}
ROPE_NONE, ROPE_LLAMA3 = 0, 1  # header field `rope_scaling` (version 2)
ROPE_SCALINGS = {"none": ROPE_NONE, "llama3": ROPE_LLAMA3}
V2_FIELDS = ("arch", "qkv_bias", "rope_scaling", "rope_factor", "rope_low_freq_factor",
              "rope_high_freq_factor", "rope_original_max_seq", "n_tokens")
V3_FIELDS = ("head_size", "qk_norm")  # version 3: explicit head size, Qwen3's per-head q/k RMSNorm
_ROPE_PARAMS = ("rope_factor", "rope_low_freq_factor", "rope_high_freq_factor",
                "rope_original_max_seq")

_F32 = np.dtype("<f4")
_F16 = np.dtype("<f2")


class MlbError(OneLineError):
    """A one-line error for the user (bad input, bad file, I/O failure): tools/errors.py."""


class ShapeError(MlbError):
    """The model's shape cannot be stored with the requested type."""
    exit_code = 2


def align_up(n, a=ALIGN):
    return (n + a - 1) // a * a


def pad_to(n, multiple=QK):
    """n rounded up to a multiple (the hidden_dim padding rule)."""
    return (n + multiple - 1) // multiple * multiple


# ----------------------------------------------------------------------------------- header

_U32_FIELDS = ("dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "vocab", "max_seq")


class Header:
    """The fixed header. Field names follow docs/mlb-format.md."""

    FIELDS = _U32_FIELDS + ("rope_theta", "norm_eps", "wtype", "shared_classifier",
                            "layout") + V2_FIELDS + V3_FIELDS

    def __init__(self, dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq,
                 rope_theta=10000.0, norm_eps=1e-5, wtype=F32, shared_classifier=1, layout=0,
                 version=None, arch=ARCH_LLAMA, qkv_bias=0, rope_scaling=ROPE_NONE,
                 rope_factor=0.0, rope_low_freq_factor=0.0, rope_high_freq_factor=0.0,
                 rope_original_max_seq=0, n_tokens=0, head_size=0, qk_norm=0):
        self.dim, self.n_layers, self.n_heads, self.n_kv_heads = dim, n_layers, n_heads, n_kv_heads
        self.hidden_dim, self.vocab, self.max_seq = hidden_dim, vocab, max_seq
        self.rope_theta, self.norm_eps = float(rope_theta), float(norm_eps)
        self.wtype, self.shared_classifier, self.layout = wtype, shared_classifier, layout
        self.arch, self.qkv_bias, self.rope_scaling = arch, qkv_bias, rope_scaling
        self.rope_factor, self.rope_low_freq_factor = float(rope_factor), float(rope_low_freq_factor)
        self.rope_high_freq_factor = float(rope_high_freq_factor)
        self.rope_original_max_seq, self.n_tokens = rope_original_max_seq, n_tokens
        self.head_size, self.qk_norm = head_size, qk_norm
        # version 1 unless a version-2 field is used (3 for a version-3 one), so older files are
        # rewritten byte-identical
        if version is None:
            version = 3 if self.uses_v3() else 2 if self.uses_v2() else 1
        self.version = version

    def uses_v2(self):
        return any(getattr(self, f) for f in V2_FIELDS)

    def uses_v3(self):
        return any(getattr(self, f) for f in V3_FIELDS) or self.arch == ARCH_QWEN3

    @property
    def head_dim(self):
        """head_size when the header states one (version 3), else dim / n_heads."""
        return self.head_size if self.head_size else self.dim // self.n_heads

    @property
    def q_dim(self):
        """Rows of wq, columns of wo: n_heads * head_dim (dim unless head_size says otherwise)."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self):
        return self.n_kv_heads * self.head_dim

    def as_dict(self):
        return {f: getattr(self, f) for f in ("version",) + self.FIELDS}

    def __eq__(self, other):
        return isinstance(other, Header) and self.as_dict() == other.as_dict()

    def __repr__(self):
        return "Header(%s)" % ", ".join("%s=%r" % kv for kv in self.as_dict().items())

    def validate(self):
        """Raise MlbError/ShapeError naming the first field that breaks a loader rule."""
        if self.version not in VERSIONS:
            raise MlbError("version %r: only versions %s are known"
                           % (self.version, ", ".join(map(str, VERSIONS))))
        if self.version == 1 and self.uses_v2():
            raise MlbError("version 1 header with version-2 fields (%s) set"
                           % ", ".join(f for f in V2_FIELDS if getattr(self, f)))
        if self.version < 3 and self.uses_v3():
            raise MlbError("version %d header with version-3 fields (%s) set"
                           % (self.version, ", ".join(
                               [f for f in V3_FIELDS if getattr(self, f)]
                               + (["arch = 2 (qwen3)"] if self.arch == ARCH_QWEN3 else []))))
        for f in _U32_FIELDS:
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or not 1 <= v <= 0xFFFFFFFF:
                raise ShapeError("%s = %r: must be an integer in [1, 2^32)" % (f, v))
        if self.wtype not in WTYPE_NAMES:
            raise MlbError("wtype = %r: must be 0 (f32), 8 (q8_0) or 2 (q4_0)" % (self.wtype,))
        if self.shared_classifier not in (0, 1):
            raise MlbError("shared_classifier = %r: must be 0 or 1" % (self.shared_classifier,))
        if self.layout not in LAYOUT_NAMES:
            raise MlbError("layout = %r: must be 0 (row-major blocks), 1 (16-row panels) or 2 "
                           "(16-row panels, binary16 scales)" % (self.layout,))
        if self.layout in PANEL_LAYOUTS and self.wtype == F32:
            raise ShapeError("layout %d (%s) needs a quantized wtype (q8_0 or q4_0), not f32"
                             % (self.layout, LAYOUT_NAMES[self.layout]))
        for f in ("rope_theta", "norm_eps"):
            v = getattr(self, f)
            with np.errstate(over="ignore"):
                v32 = float(np.float32(v))  # the value as stored
            if not (math.isfinite(v32) and v32 > 0):
                raise MlbError("%s = %r: must be finite and > 0 as a float32" % (f, v))
        if self.dim % 2:
            raise ShapeError("dim = %d: must be even" % self.dim)
        hs = self.head_size
        if not isinstance(hs, (int, np.integer)) or not 0 <= hs <= 0xFFFFFFFF:
            raise ShapeError("head_size = %r: must be an integer in [0, 2^32) (0 = dim / n_heads)"
                             % (hs,))
        if hs == 0 and self.dim % self.n_heads:
            raise ShapeError("n_heads = %d does not divide dim = %d" % (self.n_heads, self.dim))
        if self.head_dim % 2:
            raise ShapeError("head_dim = %s = %d: must be even"
                             % ("head_size" if hs else "dim / n_heads", self.head_dim))
        if self.qk_norm not in (0, 1):
            raise MlbError("qk_norm = %r: must be 0 or 1" % (self.qk_norm,))
        if self.n_heads % self.n_kv_heads:
            raise ShapeError("n_kv_heads = %d does not divide n_heads = %d"
                             % (self.n_kv_heads, self.n_heads))
        if self.arch not in ARCH_NAMES:
            raise MlbError("arch = %r: must be 0 (llama), 1 (qwen2) or 2 (qwen3)" % (self.arch,))
        if self.qkv_bias not in (0, 1):
            raise MlbError("qkv_bias = %r: must be 0 or 1" % (self.qkv_bias,))
        if self.rope_scaling == ROPE_NONE:
            for f in _ROPE_PARAMS:
                if getattr(self, f):
                    raise MlbError("%s = %r: must be 0 when rope_scaling = 0" % (f, getattr(self, f)))
        elif self.rope_scaling == ROPE_LLAMA3:
            for f in _ROPE_PARAMS[:3]:
                v32 = float(np.float32(getattr(self, f)))
                if not (math.isfinite(v32) and v32 > 0):
                    raise MlbError("%s = %r: must be finite and > 0 as a float32"
                                   % (f, getattr(self, f)))
            if not np.float32(self.rope_low_freq_factor) < np.float32(self.rope_high_freq_factor):
                raise MlbError("rope_low_freq_factor = %r must be < rope_high_freq_factor = %r"
                               % (self.rope_low_freq_factor, self.rope_high_freq_factor))
            v = self.rope_original_max_seq
            if not isinstance(v, (int, np.integer)) or not 1 <= v <= 0xFFFFFFFF:
                raise MlbError("rope_original_max_seq = %r: must be an integer in [1, 2^32)" % (v,))
        else:
            raise MlbError("rope_scaling = %r: must be 0 (none) or 1 (llama3)" % (self.rope_scaling,))
        if not isinstance(self.n_tokens, (int, np.integer)) or not 0 <= self.n_tokens <= self.vocab:
            raise ShapeError("n_tokens = %r: must be in [0, vocab = %d] (0 = vocab)"
                             % (self.n_tokens, self.vocab))
        if self.wtype != F32:  # dim and hidden_dim multiples of 32, reported by tensor
            check_quantizable(tensor_plan(self))
        return self

    def pack(self):
        self.validate()
        return _HEADER_STRUCT.pack(
            MAGIC, self.version, *(int(getattr(self, f)) for f in _U32_FIELDS),
            self.rope_theta, self.norm_eps, self.wtype, self.shared_classifier,
            self.layout, self.arch, self.qkv_bias, self.rope_scaling, self.rope_factor,
            self.rope_low_freq_factor, self.rope_high_freq_factor, self.rope_original_max_seq,
            self.n_tokens, self.head_size, self.qk_norm) + bytes(_RESERVED)

    @classmethod
    def unpack(cls, buf):
        """Parse (and validate) 256 header bytes."""
        if len(buf) < HEADER_SIZE:
            raise MlbError("file is %d bytes, shorter than the %d-byte header"
                           % (len(buf), HEADER_SIZE))
        (magic, version, dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq,
         rope_theta, norm_eps, wtype, shared, layout, *v23) = _HEADER_STRUCT.unpack_from(buf)
        if magic != MAGIC:
            raise MlbError("magic %r: not an .mlb file (expected %r)" % (magic, MAGIC))
        if version not in VERSIONS:
            raise MlbError("version %r: only versions %s are known"
                           % (version, ", ".join(map(str, VERSIONS))))
        first = {1: _V1_SIZE, 2: _V2_SIZE}.get(version, _HEADER_STRUCT.size)
        if any(buf[first:HEADER_SIZE]):
            raise MlbError("reserved header bytes %d..255 are not all zero" % first)
        v2, v3 = v23[:len(V2_FIELDS)], v23[len(V2_FIELDS):]
        if version == 1:
            v2 = [0] * len(V2_FIELDS)
        if version < 3:
            v3 = [0] * len(V3_FIELDS)
        h = cls(dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq, rope_theta,
                norm_eps, wtype, shared, layout, version, **dict(zip(V2_FIELDS, v2)),
                **dict(zip(V3_FIELDS, v3)))
        return h.validate()


# ------------------------------------------------------------------------------ tensor plan

class TensorSpec:
    """One tensor of the file: name ("tok_emb", "layers.3.wq", ...), base name, layer, shape,
    type, and the file's layout (0 rows, 1 panels, 2 panels with binary16 scales; F32 tensors
    are row-major in all three)."""
    __slots__ = ("name", "base", "layer", "shape", "type", "layout")

    def __init__(self, base, layer, shape, type_, layout=LAYOUT_ROWS):
        self.base, self.layer, self.shape, self.type = base, layer, tuple(shape), type_
        self.layout = layout
        self.name = base if layer is None else "layers.%d.%s" % (layer, base)

    @property
    def paneled(self):
        """True when the tensor is stored in 16-row panels (layout 1 or 2, quantized)."""
        return self.layout in PANEL_LAYOUTS and self.type != F32

    @property
    def scale_dtype(self):
        """dtype of the `d` array of a quantized tensor: binary16 in layout 2, else float32."""
        return _F16 if self.layout == LAYOUT_PANEL16_F16 else _F32

    @property
    def panels(self):
        """P = ceil(rows / 16) (layouts 1 and 2)."""
        return -(-self.rows // PANEL)

    @property
    def rows(self):
        return self.shape[0] if len(self.shape) == 2 else 1

    @property
    def cols(self):
        return self.shape[-1]

    def describe(self):
        """Human form used in messages: 'wq (layer 0)'."""
        return self.base if self.layer is None else "%s (layer %d)" % (self.base, self.layer)

    def arrays(self):
        """[(array name, numpy dtype, shape, nbytes)] in file order. Layout 1 and 2 (paneled)
        shapes: q (P, nb, 8, 16, 4) int8 for Q8_0 / (P, nb, 4, 16, 4) uint8 for Q4_0, d
        (P, nb, 16): [panel, block, 4-byte unit, row in panel, byte] and [panel, block, row in
        panel]; d is float32 in layout 1, binary16 ('<f2', half the bytes) in layout 2."""
        r, c = self.rows, self.cols
        if self.type == F32:
            return [("data", _F32, self.shape, r * c * 4)]
        nb = c // QK
        if self.paneled:
            P = self.panels
            units = panel_units(self.type)
            q = ("q", np.dtype("i1") if self.type == Q8_0 else np.dtype("u1"),
                 (P, nb, units, PANEL, 4), P * nb * units * PANEL * 4)
            ds = self.scale_dtype
            return [q, ("d", ds, (P, nb, PANEL), P * nb * PANEL * ds.itemsize)]
        if self.type == Q8_0:
            q = ("q", np.dtype("i1"), (r, c), r * c)
        else:
            q = ("q", np.dtype("u1"), (r, c // 2), r * c // 2)
        return [q, ("d", _F32, (r, nb), r * nb * 4)]

    def nbytes(self):
        return sum(a[3] for a in self.arrays())

    def __repr__(self):
        return "TensorSpec(%s, %s, %s)" % (self.name, self.shape, WTYPE_NAMES.get(self.type))


LAYER_TENSORS = ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w1", "w2", "w3")
BIAS_TENSORS = ("bq", "bk", "bv")  # F32, right after wv when qkv_bias = 1 (version 2)
QK_NORM_TENSORS = ("q_norm", "k_norm")  # F32 (head_dim), after wv and the biases when qk_norm = 1 (version 3)


def layer_tensors(h):
    """The per-layer tensor names of a file with header h, in file order."""
    i = LAYER_TENSORS.index("wv") + 1
    extra = (BIAS_TENSORS if getattr(h, "qkv_bias", 0) else ()) + \
        (QK_NORM_TENSORS if getattr(h, "qk_norm", 0) else ())
    return LAYER_TENSORS[:i] + extra + LAYER_TENSORS[i:]


def tensor_plan(h):
    """Every tensor of a file with header h, in file order."""
    D, H, KV, wt, lay = h.dim, h.hidden_dim, h.kv_dim, h.wtype, h.layout
    Q, HD = h.q_dim, h.head_dim
    shapes = {"attn_norm": ((D,), F32), "wq": ((Q, D), wt), "wk": ((KV, D), wt),
              "wv": ((KV, D), wt), "wo": ((D, Q), wt), "ffn_norm": ((D,), F32),
              "w1": ((H, D), wt), "w2": ((D, H), wt), "w3": ((H, D), wt),
              "bq": ((Q,), F32), "bk": ((KV,), F32), "bv": ((KV,), F32),
              "q_norm": ((HD,), F32), "k_norm": ((HD,), F32)}
    plan = [TensorSpec("tok_emb", None, (h.vocab, D), wt, lay)]
    for layer in range(h.n_layers):
        for base in layer_tensors(h):
            shape, t = shapes[base]
            plan.append(TensorSpec(base, layer, shape, t, lay))
    plan.append(TensorSpec("final_norm", None, (D,), F32, lay))
    if not h.shared_classifier:
        plan.append(TensorSpec("wcls", None, (h.vocab, D), wt, lay))
    return plan


def check_quantizable(plan):
    """ShapeError naming the first quantized tensor whose K (cols) is not a multiple of 32."""
    for spec in plan:
        if spec.type != F32 and spec.cols % QK:
            raise ShapeError("tensor %s (shape %s) has %d columns; %s needs a multiple of %d"
                             % (spec.describe(), "x".join(map(str, spec.shape)), spec.cols,
                                WTYPE_NAMES[spec.type], QK))


def layout(h):
    """[(spec, [(array name, offset, nbytes, dtype, shape)])] and the exact file size."""
    pos, out = HEADER_SIZE, []
    for spec in tensor_plan(h):
        arrs = []
        for name, dt, shape, nbytes in spec.arrays():
            pos = align_up(pos)
            arrs.append((name, pos, nbytes, dt, shape))
            pos += nbytes
        out.append((spec, arrs))
    return out, pos


def file_size(h):
    return layout(h)[1]


# ------------------------------------------------------------------------------- quantizers
#
# Exact float32 semantics: every operation below is one numpy ufunc on float32 operands, which
# rounds once per operation like the C++ reference built with -ffp-contract=off (no FMA).
# Blocks whose max |x| is below TINY = 2^-100 are zero blocks (d = +0, q8 0, nibble 8), so the
# inverse scale is always finite (docs/mlb-format.md).

_ZERO, _HALF, _127, _ONE = np.float32(0), np.float32(0.5), np.float32(127), np.float32(1)
TINY = np.float32(2.0 ** -100)  # blocks with max |x| below this quantize to zero (docs/mlb-format.md)
_M8, _8_5, _15 = np.float32(-8), np.float32(8.5), np.float32(15)


def _blocks(x):
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError("quantizers take float32 arrays, got %s" % x.dtype)
    if x.shape[-1] % QK:
        raise ValueError("last dimension %d is not a multiple of %d" % (x.shape[-1], QK))
    return x.reshape(-1, QK)


def quantize_q8_0(x):
    """x float32 (..., K), K % 32 == 0 → (q int8 (..., K), d float32 (..., K/32)).

    Blocks with amax < 2^-100 (TINY) are zero blocks: d = 0, q = 0 (docs/mlb-format.md)."""
    lead = np.shape(x)[:-1]
    xb = _blocks(x)
    amax = np.max(np.abs(xb), axis=1) if len(xb) else np.zeros(0, np.float32)
    live = amax >= TINY
    d = np.where(live, amax / _127, _ZERO).astype(np.float32)
    inv = np.zeros_like(amax)
    np.divide(_127, amax, out=inv, where=live)
    v = xb * inv[:, None]
    v += np.copysign(_HALF, xb)
    np.trunc(v, out=v)
    np.clip(v, -_127, _127, out=v)
    v[~live] = 0
    q = v.astype(np.int8)
    return q.reshape(lead + (-1,)), d.reshape(lead + (-1,))


def quantize_q4_0(x):
    """x float32 (..., K) → (q uint8 (..., K/2), d float32 (..., K/32)).

    Block b of a row is bytes 16b..16b+15; byte j = q[j] | q[j+16] << 4 (value = nibble - 8).
    Blocks with max |x| < 2^-100 (TINY) are zero blocks: d = +0, every nibble 8."""
    lead = np.shape(x)[:-1]
    xb = _blocks(x)
    ax = np.abs(xb)
    idx = np.argmax(ax, axis=1) if len(xb) else np.zeros(0, np.intp)  # first largest |x|
    rows = np.arange(len(xb))
    m = xb[rows, idx]
    live = ax[rows, idx] >= TINY
    d = np.where(live, m / _M8, _ZERO).astype(np.float32)
    inv = np.zeros_like(d)
    np.divide(_ONE, d, out=inv, where=live)
    v = xb * inv[:, None]
    v += _8_5
    np.trunc(v, out=v)
    np.clip(v, _ZERO, _15, out=v)
    v[~live] = 8
    n = v.astype(np.uint8)
    packed = n[:, :QK // 2] | (n[:, QK // 2:] << 4)
    return packed.reshape(lead + (-1,)), d.reshape(lead + (-1,))


def dequantize_q8_0(q, d):
    q = np.asarray(q)
    v = q.reshape(q.shape[:-1] + (-1, QK)).astype(np.float32) * np.asarray(d)[..., None]
    return v.reshape(q.shape)


def dequantize_q4_0(q, d):
    q = np.asarray(q)
    b = q.reshape(q.shape[:-1] + (-1, QK // 2))
    n = np.concatenate([b & 0x0F, b >> 4], axis=-1).astype(np.int8) - np.int8(8)
    v = n.astype(np.float32) * np.asarray(d)[..., None]
    return v.reshape(q.shape[:-1] + (q.shape[-1] * 2,))


QUANTIZERS = {Q8_0: quantize_q8_0, Q4_0: quantize_q4_0}


# ------------------------------------------------------------- layouts 1 and 2: 16-row panels
#
# docs/mlb-format.md, "Layout 1". Panel p holds rows 16p..16p+15; within it, block b is a run of
# 64-byte units, each holding the same 4 quant bytes of the 16 rows (4 bytes per row):
#   Q8_0: 8 units; unit k, row i, byte t = quant of column 32b + 4k + t
#   Q4_0: 4 units; unit j, row i, byte t = nibbles of columns 32b + 4j + t (low), + 16 (high),
#         i.e. byte 4j + t of the row's layout-0 block, so both types are the same transpose of
#         the row's block bytes taken 4 at a time;
# and the 16 scales of block b of the panel are consecutive in d. Layout 2 ("Layout 2" in the
# doc) is the same arrays in the same order with every scale a binary16 instead of a float32.

def panel_units(type_):
    """64-byte units per block of a panel: the block's quant bytes per row / 4."""
    return (QK if type_ == Q8_0 else QK // 2) // 4


def zero_block_rows(type_, n, cols):
    """n rows of zero blocks in row-major (layout 0) form: q 0 (Q8_0) / every nibble 8 (Q4_0),
    d +0 -- what the quantizers give for zeros, and the padding rows of a layout-1/2 panel."""
    if type_ == Q8_0:
        q = np.zeros((n, cols), np.int8)
    else:
        q = np.full((n, cols // 2), 0x88, np.uint8)
    return q, np.zeros((n, cols // QK), np.float32)


def pack_panels(q, d, type_):
    """Row-major blocks of n rows (q int8 (n, cols) for Q8_0 / uint8 (n, cols/2) for Q4_0,
    d float32 (n, cols/32)) -> layout-1 arrays of P = ceil(n/16) panels: q (P, nb, units, 16, 4),
    d float32 (P, nb, 16), C-contiguous (their bytes are the file's bytes; for layout 2 the
    writer stores d as binary16, d having been rounded by round_scales_f16 first). Rows past n
    in the last panel are zero blocks (Q8 quants 0, Q4 nibbles 8, scales +0)."""
    q, d = np.asarray(q), np.asarray(d, dtype=_F32)
    n, nb = d.shape
    units = panel_units(type_)
    if q.shape != (n, nb * units * 4):
        raise ValueError("q of shape %s does not fit d of shape %s" % (q.shape, d.shape))
    extra = -n % PANEL
    if extra:
        zq, zd = zero_block_rows(type_, extra, nb * QK)
        q = np.concatenate([q, zq.view(q.dtype)])
        d = np.concatenate([d, zd])
    P = (n + extra) // PANEL
    qp = q.reshape(P, PANEL, nb, units, 4).transpose(0, 2, 3, 1, 4)
    dp = d.reshape(P, PANEL, nb).transpose(0, 2, 1)
    return np.ascontiguousarray(qp), np.ascontiguousarray(dp)


def unpack_panels(qp, dp, rows):
    """Inverse of pack_panels: layout-1 or layout-2 arrays (q (P, nb, units, 16, 4), d (P, nb,
    16) float32 or binary16) -> the row-major q and float32 d of the first `rows` rows (new
    arrays; the padding rows are dropped; binary16 scales widened to the float32 each one is,
    exactly)."""
    qp, dp = np.asarray(qp), np.asarray(dp)
    P, nb, units = qp.shape[:3]
    q = qp.transpose(0, 3, 1, 2, 4).reshape(P * PANEL, nb * units * 4)[:rows]
    d = dp.transpose(0, 2, 1).reshape(P * PANEL, nb)[:rows]
    return np.ascontiguousarray(q), np.ascontiguousarray(d, dtype=_F32)


def round_scales_f16(d, what="scales"):
    """Float32 block scales rounded to binary16 values (round to nearest even), returned as
    float32 (every binary16 is a float32, so storing the result as '<f2' is exact): layout 2's
    scales, and the writer's f16_scales option in layouts 0 and 1. MlbError naming `what` when a
    scale's magnitude rounds to infinity (|d| >= 65520); magnitudes at or below 2^-25 become 0
    (keeping the sign), those below 2^-14 binary16 subnormals."""
    d = np.asarray(d, dtype=_F32)
    with np.errstate(over="ignore"):
        h = d.astype(np.float16)
    bad = ~np.isfinite(h) & np.isfinite(d)
    if bad.any():
        big = np.abs(d[bad]).max()
        raise MlbError("%s: block scale %.7g is too large for a binary16 scale (|d| >= %g rounds "
                       "to infinity); write float32 scales instead (layout panel16 or rows, "
                       "without f16 scales)" % (what, big, F16_SCALE_LIMIT))
    return h.astype(_F32)


# ---------------------------------------------------------------------------------- writer

CHUNK_ELEMENTS = 1 << 20  # rows are processed in chunks of about this many elements


def chunk_rows(cols):
    return max(1, CHUNK_ELEMENTS // max(1, cols))


def iter_chunks(data, spec):
    """Row chunks (2-D float32 arrays) of `data`: an array of spec.shape or an iterable of chunks."""
    if isinstance(data, np.ndarray):
        arr = data.reshape(spec.rows, -1) if data.ndim == 1 else data
        step = chunk_rows(arr.shape[-1] if arr.ndim == 2 else 1)
        for r in range(0, arr.shape[0], step):
            yield arr[r:r + step]
    else:
        for chunk in data:
            chunk = np.asarray(chunk)
            yield chunk.reshape(1, -1) if chunk.ndim == 1 else chunk


class Progress:
    """Per-tensor progress on stderr: a line each (an updating line on a terminal)."""

    def __init__(self, prog, total_bytes, n_tensors, enabled=True, stream=None):
        self.prog, self.total, self.n = prog, total_bytes, n_tensors
        self.enabled, self.stream = enabled, stream or sys.stderr
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = self.last = time.monotonic()
        self.open_line = False  # a terminal line without its newline yet

    def update(self, index, spec, done, tensor_done):
        if not self.enabled:
            return
        now = time.monotonic()
        if not tensor_done and (not self.tty or now - self.last < 0.2):
            return
        self.last = now
        mb = 1024.0 * 1024.0
        line = "%s: [%*d/%d] %-20s %-11s %-4s %9.1f / %.1f MB" % (
            self.prog, len(str(self.n)), index + 1, self.n, spec.name,
            "x".join(map(str, spec.shape)), WTYPE_NAMES[spec.type], done / mb, self.total / mb)
        if self.tty:
            self.open_line = not (index + 1 == self.n and tensor_done)
            self.stream.write("\r" + line + "\033[K" + ("" if self.open_line else "\n"))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def end_line(self):
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False

    def finish(self, path):
        if self.enabled:
            dt = time.monotonic() - self.t0
            self.stream.write("%s: wrote %s (%d bytes) in %.1f s, %.1f MB/s\n"
                              % (self.prog, path, self.total, dt,
                                 self.total / 1e6 / dt if dt > 0 else float("inf")))
            self.stream.flush()


class Prequantized:
    """Tensor data already quantized in the .mlb layout, written as it is (no re-quantizing).

    `type`: Q8_0 or Q4_0; `chunks`: iterable of (q, d) row chunks, q int8 (n, cols) for Q8_0 or
    uint8 (n, cols/2) for Q4_0 (layout 0's row-major byte order, whatever the file's layout: the
    writer packs panels for layouts 1 and 2), d float32 (n, cols/32) (rounded to binary16 by the
    writer in layout 2: exact for GGUF's scales, which are binary16); `source`: where the data
    comes from, for messages."""

    def __init__(self, type_, chunks, source=""):
        self.type, self.chunks, self.source = type_, chunks, source


class MlbWriter:
    """Stream an .mlb file tensor by tensor.

        with MlbWriter(path, header) as w:
            for name, array in tensors:       # in tensor_plan(header) order
                w.write_tensor(name, array)   # array or iterable of row chunks, float32-convertible

    Writes to a temporary file in the output's directory; on a clean exit it checks every tensor
    was written and the size is exact, then renames it to `path`. On any exception (including
    KeyboardInterrupt) the temporary file is removed and `path` is left untouched.

    f16_scales: round every block scale to a binary16 value (round_scales_f16, after the quants
    were computed from the float32 scale) while storing float32 in layouts 0 and 1; layout 2
    always does (and stores the halves), so a layout-1 file written with f16_scales and the
    layout-2 file of the same data hold the same values.
    """

    def __init__(self, path, header, progress=None, f16_scales=False):
        header.validate()
        self.path, self.header = os.fspath(path), header
        self.f16_scales = bool(f16_scales) or header.layout == LAYOUT_PANEL16_F16
        self.plan = tensor_plan(header)
        self._layout, self.total = layout(header)
        self.progress = progress
        self.index = 0
        self.pos = 0
        self._f = None
        self._tmp = None

    # -- file handling
    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.abort()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False

    def open(self):
        if os.path.isdir(self.path):
            raise MlbError("%s: output is a directory" % self.path)
        d = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, self._tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(self.path) + ".",
                                             suffix=".tmp")
        except OSError as e:
            raise MlbError("cannot create a file in %s: %s" % (d, e.strerror or e))
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
            self._f = os.fdopen(fd, "wb", buffering=1 << 20)
        except BaseException:
            os.close(fd)
            self._remove_tmp()
            raise
        self._write(self.header.pack())

    def abort(self):
        if self.progress:
            self.progress.end_line()
        if self._f is not None:
            try:
                self._f.close()
            except OSError:
                pass
            self._f = None
        self._remove_tmp()

    def _remove_tmp(self):
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def close(self):
        if self._f is None:
            return
        try:
            if self.index != len(self.plan):
                raise MlbError("internal: %d of %d tensors written (next: %s)"
                               % (self.index, len(self.plan), self.plan[self.index].name))
            if self.pos != self.total:
                raise MlbError("internal: wrote %d bytes, expected %d" % (self.pos, self.total))
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
            self._f = None
            os.replace(self._tmp, self.path)
            self._tmp = None
        except OSError as e:
            self.abort()
            raise MlbError("cannot write %s: %s" % (self.path, e.strerror or e))
        except BaseException:
            self.abort()
            raise
        if self.progress:
            self.progress.finish(self.path)

    def _write(self, b):
        try:
            self._f.write(b)
        except OSError as e:
            raise MlbError("cannot write %s: %s" % (self.path, e.strerror or e))
        self.pos += len(memoryview(b).cast("B"))

    def _align(self):
        n = align_up(self.pos) - self.pos
        if n:
            self._write(bytes(n))

    # -- tensors
    def next_spec(self):
        return self.plan[self.index] if self.index < len(self.plan) else None

    def write_tensor(self, name, data):
        """Write the next tensor: float32-convertible data (array or row chunks) that is
        quantized here, or a Prequantized object whose blocks are copied as they are. Either
        comes row-major; in a layout-1 or layout-2 file the quantized rows are packed into
        16-row panels (buffering at most 15 rows between chunks; the last panel is padded).
        With f16 scales (layout 2 or f16_scales) each scale is rounded to binary16 after the
        quants were computed; MlbError naming the tensor if one overflows."""
        spec = self.next_spec()
        if spec is None:
            raise MlbError("internal: extra tensor %s after the last one" % name)
        if name != spec.name:
            raise MlbError("internal: expected tensor %s, got %s" % (spec.name, name))
        if isinstance(data, Prequantized):
            chunks = self._prequantized_chunks(spec, data)
        else:
            chunks = self._float_chunks(spec, data)
            if spec.type == F32:
                for chunk in chunks:
                    self._write(chunk)
                    self._progress(spec)
                return self._finish_tensor(spec, [])
            chunks = (QUANTIZERS[spec.type](c) for c in chunks)
        if self.f16_scales:
            what = "tensor %s" % spec.describe()
            chunks = ((q, round_scales_f16(d, what)) for q, d in chunks)
        if spec.paneled:
            self._write_panels(spec, chunks)
        else:
            ds = []
            for q, d in chunks:
                self._write(np.ascontiguousarray(q))
                ds.append(d)
                self._progress(spec)
            self._finish_tensor(spec, ds)

    def _progress(self, spec):
        if self.progress:
            self.progress.update(self.index, spec, self.pos, False)

    def _count_rows(self, spec, rows, n, first):
        """Running row count after a chunk of n rows; aligns the file before the first one."""
        rows += n
        if rows > spec.rows:
            raise MlbError("tensor %s: more than %d rows" % (spec.describe(), spec.rows))
        if first:
            self._align()
        return rows

    def _end_rows(self, spec, rows):
        if rows != spec.rows:
            raise MlbError("tensor %s: got %d rows, expected %d" % (spec.describe(), rows, spec.rows))

    def _float_chunks(self, spec, data):
        """Checked float32 row chunks of the data for `spec`."""
        rows = 0
        for chunk in iter_chunks(data, spec):
            if chunk.ndim != 2 or chunk.shape[1] != spec.cols:
                raise MlbError("tensor %s: chunk of shape %s does not fit shape %s"
                               % (spec.describe(), chunk.shape, spec.shape))
            chunk = np.ascontiguousarray(chunk, dtype=_F32)
            if not np.isfinite(chunk).all():
                raise MlbError("tensor %s contains NaN or infinite values" % spec.describe())
            rows = self._count_rows(spec, rows, chunk.shape[0], rows == 0)
            yield chunk
        self._end_rows(spec, rows)

    def _prequantized_chunks(self, spec, data):
        """Checked row-major (q, d) chunks of Prequantized data for `spec`."""
        if data.type != spec.type or spec.type == F32:
            raise MlbError("internal: tensor %s is %s, the data is quantized as %s"
                           % (spec.describe(), WTYPE_NAMES[spec.type],
                              WTYPE_NAMES.get(data.type, data.type)))
        qcols = spec.cols if spec.type == Q8_0 else spec.cols // 2
        qdtype = np.dtype("i1") if spec.type == Q8_0 else np.dtype("u1")
        rows = 0
        for q, d in data.chunks:
            q, d = np.asarray(q), np.asarray(d)
            if q.ndim != 2 or q.shape[1] != qcols or d.shape != (q.shape[0], spec.cols // QK):
                raise MlbError("tensor %s: quantized chunk of shapes %s, %s does not fit shape %s"
                               % (spec.describe(), q.shape, d.shape, spec.shape))
            d = np.ascontiguousarray(d, dtype=_F32)
            if not np.isfinite(d).all():
                raise MlbError("tensor %s: %sa block scale is NaN or infinite"
                               % (spec.describe(), data.source + ": " if data.source else ""))
            rows = self._count_rows(spec, rows, q.shape[0], rows == 0)
            yield q.view(qdtype), d
        self._end_rows(spec, rows)

    def _write_panels(self, spec, chunks):
        """Row-major (q, d) chunks -> whole panels; the < 16 rows left after a chunk wait for the
        next one, the last panel is padded with zero-block rows."""
        ds, carry = [], None
        for q, d in chunks:
            if carry is not None:
                q, d = np.concatenate([carry[0], q]), np.concatenate([carry[1], d])
            full = q.shape[0] // PANEL * PANEL
            if full:
                qp, dp = pack_panels(q[:full], d[:full], spec.type)
                self._write(qp)
                ds.append(dp)
            carry = (q[full:].copy(), d[full:].copy()) if full < q.shape[0] else None
            self._progress(spec)
        if carry is not None:
            qp, dp = pack_panels(carry[0], carry[1], spec.type)
            self._write(qp)
            ds.append(dp)
        self._finish_tensor(spec, ds)

    def _finish_tensor(self, spec, ds):
        """Write the scales of a quantized tensor (float32, or binary16 in layout 2: exact, the
        scales were rounded to binary16 values before), check where it ended, move to the
        next."""
        if spec.type != F32:
            self._align()
            for d in ds:
                self._write(np.ascontiguousarray(d, dtype=spec.scale_dtype))
        _, arrs = self._layout[self.index]
        if self.pos != arrs[-1][1] + arrs[-1][2]:
            raise MlbError("internal: tensor %s ends at %d, expected %d"
                           % (spec.name, self.pos, arrs[-1][1] + arrs[-1][2]))
        self.index += 1
        if self.progress:
            self.progress.update(self.index - 1, spec, self.pos, True)


# ---------------------------------------------------------------------------------- reader

class Tensor:
    """A tensor of an open file: spec plus memmap views (`data` for F32, `q` and `d` otherwise,
    in the file's layout: shapes and dtypes as in TensorSpec.arrays(), so `d` is binary16 in
    layout 2). `unpack()` gives row-major q and float32 d in any layout, `dequantize()` the
    float32 values."""

    def __init__(self, spec, arrays, offsets):
        self.spec = spec
        self.arrays = arrays      # {"data": ...} or {"q": ..., "d": ...}
        self.offsets = offsets    # {"data": file offset, ...}

    def __getattr__(self, k):
        try:
            return self.__dict__["arrays"][k]
        except KeyError:
            raise AttributeError(k)

    def unpack(self):
        """(q, d) of a quantized tensor in layout 0's row-major form -- q int8 (rows, cols) for
        Q8_0 / uint8 (rows, cols/2) for Q4_0, d float32 (rows, cols/32) -- whatever the file's
        layout: the memmap views for layout 0, new arrays without the padding rows for layouts
        1 and 2 (layout 2's binary16 scales widened to float32, exactly)."""
        if self.spec.type == F32:
            raise ValueError("tensor %s is f32, not quantized" % self.spec.name)
        q, d = self.arrays["q"], self.arrays["d"]
        if self.spec.paneled:
            return unpack_panels(q, d, self.spec.rows)
        return q, d

    def dequantize(self):
        t = self.spec.type
        if t == F32:
            return np.array(self.arrays["data"], dtype=np.float32)
        f = dequantize_q8_0 if t == Q8_0 else dequantize_q4_0
        return f(*self.unpack()).reshape(self.spec.shape)

    def check_panel_padding(self):
        """MlbError unless the padding rows of a layout-1/2 tensor's last panel are zero blocks
        (Q8 quants 0, Q4 nibbles 8, scales 0)."""
        spec = self.spec
        if not spec.paneled:
            return
        real = spec.rows - (spec.panels - 1) * PANEL  # rows of the last panel that are real
        if real == PANEL:
            return
        fill = 0 if spec.type == Q8_0 else 0x88
        if (self.arrays["q"][-1, :, :, real:, :].view(np.uint8) != fill).any():
            raise MlbError("tensor %s: padding rows %d..%d of the last panel have quants that are "
                           "not %s" % (spec.name, spec.rows, spec.panels * PANEL - 1,
                                       "0" if spec.type == Q8_0 else "nibble 8"))
        if self.arrays["d"][-1, :, real:].any():  # +0 as written; -0 is accepted as 0
            raise MlbError("tensor %s: padding rows %d..%d of the last panel have non-zero scales"
                           % (spec.name, spec.rows, spec.panels * PANEL - 1))


class MlbFile:
    """Open and validate an .mlb file: magic, header rules, exact size, zero padding (pad bytes
    between arrays and, in layouts 1 and 2, the padding rows of each last panel).

    `header` is a Header, `tensors` maps tensor names to Tensor objects in file order,
    `layout` lists (spec, arrays) as in layout()."""

    def __init__(self, path, check_padding=True):
        self.path = os.fspath(path)
        try:
            size = os.path.getsize(self.path)
            with open(self.path, "rb") as f:
                head = f.read(HEADER_SIZE)
        except OSError as e:
            raise MlbError("cannot read %s: %s" % (self.path, e.strerror or e))
        self.header = Header.unpack(head)
        self.layout, expect = layout(self.header)
        if size != expect:
            raise MlbError("file size %d does not match the %d bytes the header implies"
                           % (size, expect))
        self.size = size
        self._mm = np.memmap(self.path, dtype=np.uint8, mode="r")
        self.tensors = {}
        prev_end = HEADER_SIZE
        for spec, arrs in self.layout:
            views, offs = {}, {}
            for name, off, nbytes, dt, shape in arrs:
                if off % ALIGN:
                    raise MlbError("internal: %s.%s not aligned" % (spec.name, name))
                if check_padding and self._mm[prev_end:off].any():
                    raise MlbError("non-zero pad bytes before %s.%s (offset %d)"
                                   % (spec.name, name, off))
                views[name] = self._mm[off:off + nbytes].view(dt).reshape(shape)
                offs[name] = off
                prev_end = off + nbytes
            t = self.tensors[spec.name] = Tensor(spec, views, offs)
            if check_padding:
                t.check_panel_padding()

    def __getitem__(self, name):
        return self.tensors[name]

    def __iter__(self):
        return iter(self.tensors.values())

    def close(self):
        """Drop the views (the mapping goes away with the last reference to them)."""
        self.tensors = {}
        self._mm = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()
        return False


def read_mlb(path, check_padding=True):
    """(header, {name: Tensor}) of a validated file. Tensor.unpack() / dequantize() give float32
    scales in every layout (layout 2's binary16 widened); Tensor.d is the file's own array."""
    f = MlbFile(path, check_padding)
    return f.header, f.tensors


# ---------------------------------------------------------------------------- CLI helpers

def format_bytes(n):
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.1f %s" % (n, unit))
        n /= 1024.0
