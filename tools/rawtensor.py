#!/usr/bin/python3
"""A tensor as stored in an input file (GGUF, safetensors), decoded lazily in row chunks.

Shared by tools/gguf.py, tools/hf.py and tools/convert.py. Standard library + numpy only.

`RawTensor` wraps a 2-D uint8 view (rows x bytes per row, usually a slice of a read-only
memmap) with its element type:

  F32, F16, BF16        little-endian floats, widened to float32 exactly
  Q8_0                  GGML blocks of 32: fp16 scale d, 32 int8 q        (34 bytes)
  Q4_0                  GGML blocks of 32: fp16 scale d, 16 bytes nibbles (18 bytes);
                        byte j: element j in the low nibble, j + 16 in the high one, value - 8

`float_chunks()` yields float32 row chunks (the dequantized values d*q for Q8_0/Q4_0, exact in
float32: an fp16 scale has 11 significant bits, q at most 8). `quant_chunks()` yields the
quantized data in .mlb's structure-of-arrays form ((q, d) per chunk, d widened to float32,
exactly), so a GGUF Q8_0/Q4_0 tensor goes into an .mlb file of the same type without being
re-quantized. An optional row permutation (`rows`) selects source rows in another order (the
Hugging Face q/k RoPE permutation); only the selected rows of a chunk are read from the file.
"""
import numpy as np

import mlb

F32, F16, BF16, Q8_0, Q4_0 = "F32", "F16", "BF16", "Q8_0", "Q4_0"
QK = mlb.QK
MLB_TYPE = {Q8_0: mlb.Q8_0, Q4_0: mlb.Q4_0}  # source quant type -> .mlb wtype id

_Q8_BLOCK = np.dtype([("d", "<f2"), ("q", "i1", (QK,))])
_Q4_BLOCK = np.dtype([("d", "<f2"), ("q", "u1", (QK // 2,))])
assert _Q8_BLOCK.itemsize == 34 and _Q4_BLOCK.itemsize == 18

# bytes per element (floats) or per block of 32 (quantized)
FLOAT_SIZE = {F32: 4, F16: 2, BF16: 2}
BLOCK_SIZE = {Q8_0: _Q8_BLOCK.itemsize, Q4_0: _Q4_BLOCK.itemsize}


def row_bytes(type_, cols):
    """Bytes of one row of `cols` elements (cols % 32 == 0 for quantized types)."""
    if type_ in FLOAT_SIZE:
        return cols * FLOAT_SIZE[type_]
    return cols // QK * BLOCK_SIZE[type_]


def widen_bf16(u16):
    """bfloat16 bits (uint16 array) -> float32, exact."""
    return (np.asarray(u16, dtype="<u2").astype("<u4") << 16).view("<f4")


def to_bf16(x):
    """float32 -> bfloat16 bits (uint16), rounded to nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, np.float32).view("<u4").astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def decode_floats(raw, type_, cols):
    """uint8 rows (n, row_bytes) of a float type -> float32 (n, cols)."""
    if type_ == F32:
        return raw.view("<f4").reshape(-1, cols)
    if type_ == F16:
        return raw.view("<f2").reshape(-1, cols).astype(np.float32)
    if type_ == BF16:
        return widen_bf16(raw.view("<u2")).reshape(-1, cols)
    raise ValueError(type_)


def split_blocks(raw, type_, cols):
    """uint8 rows of a quantized type -> (q in .mlb layout, d as float16), both per row."""
    n = raw.shape[0]
    blocks = raw.view(_Q8_BLOCK if type_ == Q8_0 else _Q4_BLOCK).reshape(n, cols // QK)
    q = blocks["q"].reshape(n, cols if type_ == Q8_0 else cols // 2)
    return q, blocks["d"]


def dequantize(raw, type_, cols):
    """uint8 rows of Q8_0/Q4_0 blocks -> float32 (n, cols): d * q (exact)."""
    q, d16 = split_blocks(raw, type_, cols)
    d = d16.astype(np.float32)
    n = q.shape[0]
    if type_ == Q8_0:
        v = q.reshape(n, -1, QK).astype(np.float32)
    else:
        b = q.reshape(n, -1, QK // 2)
        v = np.concatenate([b & 0x0F, b >> 4], axis=-1).astype(np.float32) - np.float32(8)
    v *= d[:, :, None]
    return v.reshape(n, cols)


class RawTensor:
    """One stored tensor. `raw`: uint8 array (rows, row_bytes(type, cols)) or, for 1-D tensors,
    (1, row_bytes); `shape`: (rows, cols) or (n,); `name`: the name in the input file (for
    messages); `rows`: optional source-row index per output row (a permutation)."""

    def __init__(self, raw, type_, shape, name, rows=None, where=""):
        self.raw, self.type, self.shape, self.name = raw, type_, tuple(shape), name
        self.rows, self.where = rows, where

    @property
    def n_rows(self):
        return self.shape[0] if len(self.shape) == 2 else 1

    @property
    def cols(self):
        return self.shape[-1]

    @property
    def quantized(self):
        return self.type in BLOCK_SIZE

    @property
    def nbytes(self):
        return self.n_rows * row_bytes(self.type, self.cols)

    def describe(self):
        return "%s%s (%s, %s)" % (self.where, self.name, self.type, "x".join(map(str, self.shape)))

    def permuted(self, rows):
        """The same tensor with its rows read in the order `rows` (an index array)."""
        base = self.rows
        return RawTensor(self.raw, self.type, self.shape, self.name,
                         np.asarray(rows) if base is None else base[rows], self.where)

    def _raw_chunks(self):
        step = mlb.chunk_rows(self.cols)
        for r in range(0, self.n_rows, step):
            if self.rows is None:
                yield self.raw[r:r + step]
            else:
                yield self.raw[self.rows[r:r + step]]  # reads only these rows

    def float_chunks(self):
        """float32 row chunks (n, cols)."""
        for raw in self._raw_chunks():
            if self.quantized:
                yield dequantize(raw, self.type, self.cols)
            else:
                yield decode_floats(raw, self.type, self.cols)

    def quant_chunks(self):
        """(q, d float32) row chunks in .mlb's layout (Q8_0/Q4_0 only); d widened exactly."""
        if not self.quantized:
            raise ValueError("%s is not quantized" % self.name)
        for raw in self._raw_chunks():
            q, d16 = split_blocks(raw, self.type, self.cols)
            yield q, d16.astype(np.float32)

    def tobytes_equal(self, other):
        """True when both tensors hold the same type, shape and bytes (read in chunks)."""
        if (self.type, self.shape) != (other.type, other.shape) or self.rows is not None \
                or other.rows is not None:
            return False
        step = max(1, (1 << 24) // max(1, self.raw.shape[1]))
        for r in range(0, self.raw.shape[0], step):
            if not np.array_equal(self.raw[r:r + step], other.raw[r:r + step]):
                return False
        return True
