// ggml's block types as GGUF files store them, and their exact dequantization (scalar reference).
//
// Contract: ggml_dequantize_row(type, blocks, out, n) writes out[0..n) = the value ggml's
// dequantize_row_* (llama.cpp ggml/src/ggml-quants.c) gives for the first n elements of `blocks`,
// bit for bit: the same float operations in ggml's order, plain IEEE float32 (the project compiles
// with -ffp-contract=off; ggml's products are exact in float32 anyway, so even a fused build of
// ggml agrees). n must be a multiple of the type's block elements (ggml_row_bytes < 0 otherwise);
// blocks need no alignment; reads ggml_row_bytes(type, n) bytes; an unknown type writes nothing.
// Binary16 fields widen exactly (f32_from_f16, kernels/format/f16.h: a NaN half becomes a quiet
// NaN with its payload, as F16C's vcvtph2ps and ggml's own conversion do); F32 and BF16 elements
// are bit copies (a BF16 is the top half of its F32), so even signalling NaNs pass unchanged.
//
// Block layouts (bytes, little-endian; fields in order; QK_K = 256; f16 = IEEE binary16):
//
//   type  id  elems bytes  fields                                     element value
//   F32    0     1     4   f32                                        x
//   F16    1     1     2   f16                                        x
//   BF16  30     1     2   bf16                                       x
//   Q4_0   2    32    18   d f16, qs[16]                              float(q - 8) * d
//   Q4_1   3    32    20   d f16, m f16, qs[16]                       float(q) * d + m
//   Q5_0   6    32    22   d f16, qh[4], qs[16]                       float(q - 16) * d
//   Q5_1   7    32    24   d f16, m f16, qh[4], qs[16]                float(q) * d + m
//   Q8_0   8    32    34   d f16, qs[32] int8                         float(q) * d
//   Q2_K  10   256    84   scales[16], qs[64], d f16, dmin f16        (d*sc)*q - dmin*m   (4-bit sc, m)
//   Q3_K  11   256   110   hmask[32], qs[64], scales[12], d f16       (d*(sc - 32))*q     (6-bit sc)
//   Q4_K  12   256   144   d f16, dmin f16, scales[12], qs[128]       (d*sc)*q - dmin*m   (6-bit sc, m)
//   Q5_K  13   256   176   d f16, dmin f16, scales[12], qh[32], qs[128]   the same, 5-bit q
//   Q6_K  14   256   210   ql[128], qh[64], scales[16] int8, d f16    (d*sc)*(q - 32)
//
// Where each element's bits sit (q nibbles, high bits, the 6-bit scale packing) is spelled out
// next to each case in ggml_blocks.cc and in tools/ggml_quants.py's module doc (its NumPy twin).
// Test: verify/tests/test_ggml_blocks.cc (tag [ggml_blocks], ctest quant.ggml_blocks) compares
// this with tools/ggml_quants.py bit for bit on random blocks of every type (a fixture file that
// verify/make_fixtures.py writes); the NumPy dequantizer was checked against llama.cpp's own
// dequantize_row_* by hand (tools/tests/test_ggml_quants.py's doc says how).
#pragma once
#include <cstdint>

namespace ml {

// ggml's type ids (ggml.h's enum ggml_type) for the types GGUF weights come in here (named
// "Block" apart from runtime/gguf.h's GgmlType, the container's table of every ggml id).
enum class GgmlBlockType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, BF16 = 30,
};

struct GgmlBlockInfo {
  GgmlBlockType type;
  const char *name;     // ggml's name: "Q4_K"
  int32_t block_elems;  // elements per block (1 for the float types)
  int32_t block_bytes;  // bytes per block
};

// The table: every type this file reads, in id order.
inline constexpr GgmlBlockInfo kGgmlBlockTypes[] = {
    {GgmlBlockType::F32, "F32", 1, 4},       {GgmlBlockType::F16, "F16", 1, 2},
    {GgmlBlockType::Q4_0, "Q4_0", 32, 18},   {GgmlBlockType::Q4_1, "Q4_1", 32, 20},
    {GgmlBlockType::Q5_0, "Q5_0", 32, 22},   {GgmlBlockType::Q5_1, "Q5_1", 32, 24},
    {GgmlBlockType::Q8_0, "Q8_0", 32, 34},   {GgmlBlockType::Q2_K, "Q2_K", 256, 84},
    {GgmlBlockType::Q3_K, "Q3_K", 256, 110}, {GgmlBlockType::Q4_K, "Q4_K", 256, 144},
    {GgmlBlockType::Q5_K, "Q5_K", 256, 176}, {GgmlBlockType::Q6_K, "Q6_K", 256, 210},
    {GgmlBlockType::BF16, "BF16", 1, 2},
};

// The table's row of a type id, or nullptr for one this file does not read.
const GgmlBlockInfo *ggml_block_info(uint32_t type);
bool ggml_type_known(uint32_t type);
// Bytes of n elements of a type; -1 for an unknown type, n < 0 or n not a multiple of the block.
int64_t ggml_row_bytes(uint32_t type, int64_t n);
// ggml's dequantized values (see the contract above).
void ggml_dequantize_row(uint32_t type, const void *blocks, float *out, int64_t n);
// One block (32 or 256 elements) of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K or Q6_K as the
// integers q[] (Q4_0, Q4_1, Q4_K: nibbles 0..15; the others signed) and, per 32 elements k, the
// scale a[k], the scale a2[k] of elements 16..31 (Q3_K, Q6_K only; left as it is otherwise) and the
// offset c[k] (Q4_1, Q5_1, Q4_K, Q5_K only): ggml's value of element 32k + l is a·q + c (Q4_0:
// a·(q − 8)), the same product and sum. Each scale and offset is a binary16 times a small integer,
// exact in float32. The runtime's GGUF reader transcodes with it (runtime/gguf_model.cc). False
// (nothing written) for another type.
bool ggml_decode_block(uint32_t type, const uint8_t *b, int *q, float *a, float *a2, float *c);

}  // namespace ml
