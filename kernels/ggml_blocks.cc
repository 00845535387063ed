// ggml's block types, exact dequantization: the contract and the layouts are in ggml_blocks.h.
// Plain C++ on bytes (no struct overlays: GGUF blocks of 18 or 110 bytes are not aligned), one
// function per type, each float operation the one ggml performs, in its order.
#include "kernels/ggml_blocks.h"

#include <cstring>

#include "kernels/format/f16.h"

namespace ml {
namespace {

constexpr int kQK = 32;

inline float half_at(const uint8_t *p) { return f32_from_f16(uint16_t(p[0] | p[1] << 8)); }

// Q4_0: d f16, qs[16]; qs[j] = element j (low nibble) | element j + 16 (high nibble); x = float(q - 8)*d.
void deq_q4_0(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 18, y += kQK) {
    const float d = half_at(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      const int x0 = (qs[j] & 0x0F) - 8, x1 = (qs[j] >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + kQK / 2] = static_cast<float>(x1) * d;
    }
  }
}

// Q4_1: d f16, m f16, qs[16] (as Q4_0); x = float(q)*d + m.
void deq_q4_1(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 20, y += kQK) {
    const float d = half_at(b), m = half_at(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < kQK / 2; ++j) {
      const int x0 = qs[j] & 0x0F, x1 = qs[j] >> 4;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + kQK / 2] = static_cast<float>(x1) * d + m;
    }
  }
}

inline uint32_t u32_at(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Q5_0 / Q5_1: d f16, [m f16,] qh (u32), qs[16]; bit e of qh is bit 4 of element e's q;
// Q5_0: x = float(q - 16)*d; Q5_1: x = float(q)*d + m.
template <bool kMin>
void deq_q5(const uint8_t *b, float *y, int64_t nb) {
  const int bytes = kMin ? 24 : 22;
  for (int64_t i = 0; i < nb; ++i, b += bytes, y += kQK) {
    const float d = half_at(b);
    const float m = kMin ? half_at(b + 2) : 0.0f;
    const uint8_t *p = b + (kMin ? 4 : 2);
    const uint32_t qh = u32_at(p);
    const uint8_t *qs = p + 4;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = int((qh >> j) & 1u) << 4, h1 = int((qh >> (j + 16)) & 1u) << 4;
      const int x0 = (qs[j] & 0x0F) | h0, x1 = (qs[j] >> 4) | h1;
      if (kMin) {
        y[j] = static_cast<float>(x0) * d + m;
        y[j + kQK / 2] = static_cast<float>(x1) * d + m;
      } else {
        y[j] = static_cast<float>(x0 - 16) * d;
        y[j + kQK / 2] = static_cast<float>(x1 - 16) * d;
      }
    }
  }
}

// Q8_0: d f16, qs[32] int8; x = float(q)*d.
void deq_q8_0(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 34, y += kQK) {
    const float d = half_at(b);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
  }
}

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

// Q3_K: hmask[32], qs[64], scales[12], d f16. 6-bit scale of sub-block s: bits 0-3 =
// (scales[s % 8] >> 4*(s / 8)) & 15, bits 4-5 = (scales[8 + s % 4] >> 2*(s / 4)) & 3. Element
// 128h + 32j + 16k + l: q = ((qs[32h + 16k + l] >> 2j) & 3) - (bit 4h + j of hmask[16k + l] ? 0 : 4),
// s = 8h + 2j + k; x = (d*float(sc_s - 32))*float(q).
void deq_q3_k(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 110) {
    const uint8_t *hm = b, *q = b + 32, *sb = b + 96;
    const float d = half_at(b + 108);
    int sc[16];
    for (int s = 0; s < 16; ++s)
      sc[s] = (((sb[s % 8] >> (4 * (s / 8))) & 0xF) | (((sb[8 + s % 4] >> (2 * (s / 4))) & 3) << 4)) - 32;
    int s = 0;
    unsigned bit = 1;
    for (int h = 0; h < 2; ++h, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, bit <<= 1) {
        for (int k = 0; k < 2; ++k, ++s) {
          const float dl = d * static_cast<float>(sc[s]);
          for (int l = 0; l < 16; ++l) {
            const int v = ((q[16 * k + l] >> shift) & 3) - ((hm[16 * k + l] & bit) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

// Q4_K / Q5_K sub-block s (< 8) 6-bit scale and min from scales[12]: s < 4: sc = scales[s] & 63,
// m = scales[s + 4] & 63; s >= 4: sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4,
// m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4.
inline void scale_min_k4(int s, const uint8_t *q, int *sc, int *m) {
  if (s < 4) {
    *sc = q[s] & 63;
    *m = q[s + 4] & 63;
  } else {
    *sc = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
    *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

// Q4_K: d f16, dmin f16, scales[12], qs[128]; Q5_K: the same with qh[32] before qs. Element
// 64c + l (c < 4, l < 32): low nibble of qs[32c + l], sub-block 2c; 64c + 32 + l: its high nibble,
// sub-block 2c + 1; Q5_K: + 16 when bit s of qh[l] is set (s the sub-block);
// x = (d*float(sc_s))*float(q) - dmin*float(m_s).
template <bool kFive>
void deq_q4_q5_k(const uint8_t *b, float *y, int64_t nb) {
  const int bytes = kFive ? 176 : 144;
  for (int64_t i = 0; i < nb; ++i, b += bytes) {
    const float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + (kFive ? 48 : 16);
    for (int c = 0; c < 4; ++c, qs += 32) {
      int sc, m;
      scale_min_k4(2 * c, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      scale_min_k4(2 * c + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const int q = (qs[l] & 0xF) + (kFive && (qh[l] >> (2 * c) & 1) ? 16 : 0);
        *y++ = d1 * static_cast<float>(q) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int q = (qs[l] >> 4) + (kFive && (qh[l] >> (2 * c + 1) & 1) ? 16 : 0);
        *y++ = d2 * static_cast<float>(q) - m2;
      }
    }
  }
}

// Q6_K: ql[128], qh[64], scales[16] int8, d f16. Element 128h + 32g + l (h < 2, g < 4, l < 32):
// low 4 bits = nibble g / 2 (0 low, 1 high) of ql[64h + 32(g % 2) + l], high 2 bits =
// (qh[32h + l] >> 2g) & 3, q = that - 32, sub-block (128h + 32g + l) / 16;
// x = (d*float(sc_s))*float(q).
void deq_q6_k(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 210) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
    const float d = half_at(b + 208);
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32, sc += 8, y += 128) {
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace

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
    case GgmlBlockType::Q4_0: deq_q4_0(b, out, nb); break;
    case GgmlBlockType::Q4_1: deq_q4_1(b, out, nb); break;
    case GgmlBlockType::Q5_0: deq_q5<false>(b, out, nb); break;
    case GgmlBlockType::Q5_1: deq_q5<true>(b, out, nb); break;
    case GgmlBlockType::Q8_0: deq_q8_0(b, out, nb); break;
    case GgmlBlockType::Q2_K: deq_q2_k(b, out, nb); break;
    case GgmlBlockType::Q3_K: deq_q3_k(b, out, nb); break;
    case GgmlBlockType::Q4_K: deq_q4_q5_k<false>(b, out, nb); break;
    case GgmlBlockType::Q5_K: deq_q4_q5_k<true>(b, out, nb); break;
    case GgmlBlockType::Q6_K: deq_q6_k(b, out, nb); break;
  }
}

}  // namespace ml
