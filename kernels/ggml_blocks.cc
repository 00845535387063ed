// ggml's block types: each block decoded to integers and per-32 scales/offsets (ggml_decode_block,
// what the GGUF reader transcodes into panels), and exact dequantization from them: the contract
// and the layouts are in ggml_blocks.h. Plain C++ on bytes (no struct overlays: GGUF blocks of 18
// or 110 bytes are not aligned), each float operation the one ggml performs, in its order.
#include "kernels/ggml_blocks.h"

#include <cstring>

#include "kernels/mutants.h"

#include "kernels/format/f16.h"

namespace ml {
namespace {

constexpr int kQK = 32;

inline float half_at(const uint8_t *p) { return f32_from_f16(uint16_t(p[0] | p[1] << 8)); }

// Q2_K: scales[16] (sc | m << 4), qs[64], d f16, dmin f16. Element 128h + 32j + 16k + l (h < 2,
// j < 4, k < 2, l < 16): q = (qs[32h + 16k + l] >> 2j) & 3, sub-block s = 8h + 2j + k;
// x = (d*float(sc_s))*float(q) - dmin*float(m_s).
void deq_q2_k(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 84) {
    const uint8_t *scales = b, *q = b + 16;
    const float d = half_at(b + 80), dmin = half_at(b + 82);
    int s = 0;
    for (int h = 0; h < 2; ++h, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int k = 0; k < 2; ++k, ++s) {
          const float dl = d * static_cast<float>(scales[s] & 0xF);
          const float ml = dmin * static_cast<float>(scales[s] >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[16 * k + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// The types ggml_decode_block knows: element 32k + l = a[k]·q + c[k] (a2[k] for l >= 16 where the
// type has a second scale; Q4_0: a[k]·(q − 8)), the same products and sum as ggml's.
void deq_decoded(uint32_t type, const uint8_t *b, float *y, int64_t nb, int elems, int bytes) {
  using T = GgmlBlockType;
  const T t = T(type);
  const bool halves = t == T::Q3_K || t == T::Q6_K;
  const bool offsets = t == T::Q4_1 || t == T::Q5_1 || t == T::Q4_K || t == T::Q5_K;
  const int sub = t == T::Q4_0 ? 8 : 0;
  int q[256];
  float a[8], a2[8], c[8];
  for (int64_t i = 0; i < nb; ++i, b += bytes, y += elems) {
    ggml_decode_block(type, b, q, a, a2, c);
    for (int e = 0; e < elems; ++e) {
      const int k = e / 32;
      const float x = (halves && e % 32 >= 16 ? a2[k] : a[k]) * float(q[e] - sub);
      y[e] = offsets ? x + c[k] : x;
    }
  }
}

}  // namespace

bool ggml_decode_block(uint32_t type, const uint8_t *b, int *q, float *a, float *a2, float *c) {
  switch (GgmlBlockType(type)) {
    case GgmlBlockType::Q8_0:
      a[0] = half_at(b);
      for (int j = 0; j < 32; ++j) q[j] = int8_t(b[2 + j]);
      return true;
    case GgmlBlockType::Q4_0:
    case GgmlBlockType::Q4_1: {  // d, [m,] qs[16]: byte j = element j (low nibble) | element j + 16 (high)
      const uint8_t *qs = b + (GgmlBlockType(type) == GgmlBlockType::Q4_1 ? 4 : 2);
      a[0] = half_at(b);
      if (GgmlBlockType(type) == GgmlBlockType::Q4_1) c[0] = half_at(b + 2);
      for (int j = 0; j < 16; ++j) q[j] = qs[j] & 0xF, q[j + 16] = qs[j] >> 4;
      return true;
    }
    case GgmlBlockType::Q5_0:
    case GgmlBlockType::Q5_1: {  // d, [m,] qh (bit e: bit 4 of element e), qs[16] as Q4
      const bool m = GgmlBlockType(type) == GgmlBlockType::Q5_1;
      const uint8_t *p = b + (m ? 4 : 2), *qs = p + 4;
      const uint32_t qh = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      a[0] = half_at(b);
      if (m) c[0] = half_at(b + 2);
      for (int j = 0; j < 16; ++j) {
        q[j] = ((qs[j] & 0xF) | int((qh >> j) & 1u) << 4) - (m ? 0 : 16);
        q[j + 16] = ((qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4) - (m ? 0 : 16);
      }
      return true;
    }
    case GgmlBlockType::Q4_K:
    case GgmlBlockType::Q5_K: {  // d, dmin, scales[12], [qh[32],] qs[128]: x = (d·sc)·q − dmin·m per 32
      const bool five = GgmlBlockType(type) == GgmlBlockType::Q5_K;
      const float d = half_at(b), dmin = half_at(b + 2);
      const uint8_t *sc = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
      for (int k = 0; k < 8; ++k) {
        int s, m;
        if (k < 4) {
          s = sc[k] & 63, m = sc[k + 4] & 63;
        } else {
          s = (sc[k + 4] & 0xF) | (sc[k - 4] >> 6) << 4;
          m = (sc[k + 4] >> 4) | (sc[k] >> 6) << 4;
        }
        a[k] = d * float(s);
        c[k] = ML_MUTANT("gguf_kq_min_sign") ? dmin * float(m) : -(dmin * float(m));  // mutant: the min added
        const uint8_t *src = qs + 32 * (k / 2);
        for (int l = 0; l < 32; ++l)
          q[32 * k + l] = (k % 2 ? src[l] >> 4 : src[l] & 0xF) + (five && (qh[l] >> k & 1) ? 16 : 0);
      }
      return true;
    }
    case GgmlBlockType::Q6_K: {  // ql[128], qh[64], scales[16] int8, d: x = (d·sc)·(q − 32) per 16
      const uint8_t *ql = b, *qh = b + 128;
      const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
      const float d = half_at(b + 208);
      for (int h = 0; h < 2; ++h)
        for (int g = 0; g < 4; ++g) {
          const int k = 4 * h + g;
          a[k] = d * float(sc[8 * h + 2 * g]);
          a2[k] = d * float(sc[8 * h + 2 * g + (ML_MUTANT("gguf_q6k_half") ? 0 : 1)]);  // mutant: one scale per 32
          for (int l = 0; l < 32; ++l) {
            const uint8_t lo = ql[64 * h + 32 * (g % 2) + l];
            q[32 * k + l] = ((g < 2 ? lo & 0xF : lo >> 4) | ((qh[32 * h + l] >> (2 * g)) & 3) << 4) - 32;
          }
        }
      return true;
    }
    case GgmlBlockType::Q3_K: {  // hmask[32], qs[64], scales[12] (6-bit, − 32), d: x = (d·sc)·q per 16
      const uint8_t *hm = b, *qs = b + 32, *sb = b + 96;
      const float d = half_at(b + 108);
      int sc[16];
      for (int s = 0; s < 16; ++s)
        sc[s] = (((sb[s % 8] >> (4 * (s / 8))) & 0xF) | (((sb[8 + s % 4] >> (2 * (s / 4))) & 3) << 4)) - 32;
      for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j) {
          const int k = 4 * h + j;
          a[k] = d * float(sc[8 * h + 2 * j]);
          a2[k] = d * float(sc[8 * h + 2 * j + 1]);
          for (int l = 0; l < 32; ++l)
            q[32 * k + l] = ((qs[32 * h + l] >> (2 * j)) & 3) - ((hm[l] >> (4 * h + j) & 1) ? 0 : 4);
        }
      return true;
    }
    default:
      return false;
  }
}

const GgmlBlockInfo *ggml_block_info(uint32_t type) {
  for (const GgmlBlockInfo &t : kGgmlBlockTypes)
    if (uint32_t(t.type) == type) return &t;
  return nullptr;
}

bool ggml_type_known(uint32_t type) { return ggml_block_info(type) != nullptr; }

int64_t ggml_row_bytes(uint32_t type, int64_t n) {
  const GgmlBlockInfo *t = ggml_block_info(type);
  if (!t || n < 0 || n % t->block_elems) return -1;
  return n / t->block_elems * t->block_bytes;
}

void ggml_dequantize_row(uint32_t type, const void *blocks, float *out, int64_t n) {
  const GgmlBlockInfo *t = ggml_block_info(type);
  if (!t || n <= 0 || n % t->block_elems) return;
  const uint8_t *b = static_cast<const uint8_t *>(blocks);
  const int64_t nb = n / t->block_elems;
  switch (t->type) {
    case GgmlBlockType::F32:
      std::memcpy(out, b, size_t(n) * 4);
      break;
    case GgmlBlockType::F16:
      for (int64_t i = 0; i < n; ++i) out[i] = half_at(b + 2 * i);
      break;
    case GgmlBlockType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t bits = (uint32_t(b[2 * i]) | uint32_t(b[2 * i + 1]) << 8) << 16;
        std::memcpy(out + i, &bits, 4);
      }
      break;
    case GgmlBlockType::Q2_K: deq_q2_k(b, out, nb); break;
    default: deq_decoded(type, b, out, nb, t->block_elems, t->block_bytes); break;
  }
}

}  // namespace ml
