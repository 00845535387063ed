// The forward pass, llama2.c's forward() step by step, with quantized matrices, GQA and a batch of
// tokens (prompt prefill; decoding is a batch of one). Every step is per token except the matrix
// products, which take all tokens at once so each weight block is read once for several tokens
// (matmul kernels). Row-parallel steps share out row tiles (multiples of the kernels' row tile; a thread done early
// takes tiles left in a busy thread's share, ThreadPool::run_units) and
// attention is split by (token, kv head, set of its query heads): each query head's scores,
// softmax and weighted sum run in one fixed order whatever the split, so results are
// bit-identical for every thread count and batch size. The query heads that share a kv head (GQA)
// are evaluated together, so each K/V row is read — and for an F16 cache converted, for a Q8_0
// cache scored as one matmul and dequantized — once for all of them.
// Joins per step: one job per layer for q/k/v (their tiles together), wo, w1/w3 (with silu) and w2,
// attention a fifth above kParallelBytes of K/V, then the classifier (Qwen2.5-0.5B decode: 97, 121
// from position 64).
// Each needs the whole vector the job before wrote (q/k/v and w1/w3 through an RMS norm): merging
// two would split dot products and change the bits. Only attention needs less (its kv head's rows),
// and at decode depths below the threshold it runs on the caller without a job of its own.
#include "runtime/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "kernels/binding.h"
#include "kernels/format/f16.h"
#include "kernels/format/panel.h"
#include "kernels/mutants.h"
#include "runtime/ml.h"
#include "simd/prefetch.h"

namespace ml {

namespace {

// Rows per thread split: kernels work on 4 rows at a time, on 16-row panels in layout 1
// (kernels/kernels.h); boundaries on these multiples keep results independent of the thread count.
inline int row_tile(const ml_qtensor &W) { return W.layout != ML_LAYOUT_ROWS ? ML_PANEL_ROWS : 4; }

// The input of a matrix product for n tokens: float rows (stride floats apart) and, for quantized
// weights, their Q8_0 forms.
struct Input {
  const float *f;
  size_t stride;
  const ml_qact *q;
  int n;
};

// The activations a product reads are quantized when one of its matrices is (a GGUF may mix
// quantized and float matrices: llama.cpp keeps a matrix whose K is not a multiple of 32 in F16).
inline bool any_quantized(std::initializer_list<const ml_qtensor *> ws) {
  for (const ml_qtensor *w : ws)
    if (w->type != ML_TYPE_F32) return true;
  return false;
}

template <class K>
Input prepare(State &s, const float *x, size_t stride, int n, int k, bool quantize) {
  if (quantize)
    for (int t = 0; t < n; ++t) K::quantize_q8(&s.xq[t], x + size_t(t) * stride, k);
  return {x, stride, s.xq, n};
}

// Y[t·ldy + r] = W[r] · in_t for rows [r0, r1) and every token.
template <class K>
void matmul_rows(float *Y, size_t ldy, const ml_qtensor &W, const Input &in, int r0, int r1) {
  if (r0 >= r1) return;
  switch (W.type) {
    case ML_TYPE_Q8_0:
      K::matmul_q8(Y, ldy, &W, in.q, in.n, r0, r1);
      break;
    case ML_TYPE_Q4_0:
      K::matmul_q4(Y, ldy, &W, in.q, in.n, r0, r1);
      break;
    default:
      for (int t = 0; t < in.n; ++t) K::matvec_f32(Y + size_t(t) * ldy, &W, in.f + size_t(t) * in.stride, r0, r1);
      break;
  }
}

// Bytes a step reads (a matrix product's weights, attention's K and V): below kParallelBytes it runs
// on the calling thread alone — waking the pool costs more than the work (stories15M's 288x288
// matrices) — above it on every thread. Results do not depend on the choice (rows and heads are
// computed identically either way). Attention's threshold was 1 MiB; at 64 KiB (SmolLM2-360M decode:
// from position 26) 2-thread decode gained 4 % on SmolLM2-360M and TinyLlama, Qwen2.5-0.5B level.
constexpr uint64_t kParallelBytes = 64 * 1024;
uint64_t weight_bytes(const ml_qtensor &W) { return tensor_bytes(W); }

// A job of `units` independent units, f(tid, u0, u1) per claimed range (ThreadPool::run_units:
// static shares claimed in shrinking chunks, leftovers taken by threads done early), or
// f(0, 0, units) on the calling thread below the threshold.
template <class F>
void parallel(ThreadPool &pool, uint64_t work_bytes, int units, F &&f) {
  if (work_bytes < kParallelBytes || pool.size() == 1)
    f(0, 0, units);
  else
    pool.run_units(units, 1, f);
}

// Y_i = W_i · in for matrices sharing one input, as one job whose units are their row tiles
// (W_0's, then W_1's, ...).
struct Product {
  float *Y;
  size_t ldy;
  const ml_qtensor *W;
};
inline int tiles(const ml_qtensor &W) { return (W.rows + row_tile(W) - 1) / row_tile(W); }

template <class K>
void products(ThreadPool &pool, const Input &in, std::initializer_list<Product> ps) {
  int units = 0;
  uint64_t bytes = 0;
  for (const Product &p : ps) units += tiles(*p.W), bytes += weight_bytes(*p.W);
  parallel(pool, bytes * uint64_t(in.n), units, [&](int, int u0, int u1) {
    int base = 0;
    for (const Product &p : ps) {
      const int a = std::max(u0 - base, 0), b = std::min(u1 - base, tiles(*p.W)), t = row_tile(*p.W);
      if (a < b) matmul_rows<K>(p.Y, p.ldy, *p.W, in, a * t, std::min(b * t, p.W->rows));
      base += tiles(*p.W);
    }
  });
}

// One layer's K and V caches, F32 or F16, kv-head-major: (n_kv_heads, kv_seq, head_dim) elements
// (kv_seq = max_seq rounded up to kKvBlock), so one kv head's positions are one contiguous stream.
// V holds each position's row (element i of position p at [p·hd + i]); K holds blocks of kKvBlock
// positions, element-major inside a block (element i of position p at [(p − p % B)·hd + i·B + p % B],
// B = kKvBlock), the layout dot_f32_cols reads: a vector of K holds one element of consecutive
// positions.
inline size_t k_at(int p, int i, int hd) {
  return size_t(p - p % kKvBlock) * size_t(hd) + size_t(i) * kKvBlock + size_t(p % kKvBlock);
}

struct KvCache {
  const float *f;     // F32 cache, or nullptr
  const uint16_t *h;  // F16 cache
  // V rows [p0, p0 + nb) of the kv head starting at element `off`, as nb·hd floats: in place (F32)
  // or converted exactly into buf (F16; nb <= kKvBlock).
  const float *v_rows(int p0, int nb, size_t off, float *buf, int hd) const {
    if (f) return f + off + size_t(p0) * hd;
    kv_load_f16(buf, h + off + size_t(p0) * hd, nb * hd);
    return buf;
  }
  // The K block of positions [p0, p0 + nb) (p0 a multiple of kKvBlock), element-major with rows
  // kKvBlock floats apart: in place (F32) or converted exactly into buf (F16; the positions not yet
  // written of a partial block are not read).
  const float *k_block(int p0, int nb, size_t off, float *buf, int hd) const {
    const size_t at = off + size_t(p0) * hd;
    if (f) return f + at;
    if (nb == kKvBlock) {
      kv_load_f16(buf, h + at, kKvBlock * hd);
    } else {
      for (int i = 0; i < hd; ++i) kv_load_f16(buf + size_t(i) * kKvBlock, h + at + size_t(i) * kKvBlock, nb);
    }
    return buf;
  }
};

// Attention of query heads head(j), j in [j0, j1), which share kv head offset `off`, over
// positions [0, len): per head, att_p = (q · k_p) / √hd (p in order), softmax, out = Σ_p att_p · v_p
// (p in order, from zero). Blocks of kKvBlock positions: each K or V block is converted (F16) once
// for all the heads, and dot_f32_cols / axpy_f32_rows give the bits of one position at a time.
// att: (j1 - j0, S) scratch; buf: (kKvBlock, hd) for an F16 cache, else nullptr.
template <class K, class Head>
void attend(const KvCache &kc, const KvCache &vc, size_t off, int len, int hd, float sqrt_hd, const float *q, float *out,
            Head head, int j0, int j1, float *att, size_t S, float *buf) {
  for (int p0 = 0; p0 < len; p0 += kKvBlock) {
    const int nb = std::min(kKvBlock, len - p0);
    const float *kt = kc.k_block(p0, nb, off, buf, hd);
    for (int j = j0; j < j1; ++j) {
      float *a = att + size_t(j - j0) * S + size_t(p0);
      K::dot_f32_cols(a, q + size_t(head(j)) * hd, kt, size_t(kKvBlock), nb, hd, sqrt_hd);
    }
  }
  for (int j = j0; j < j1; ++j) {
    K::softmax(att + size_t(j - j0) * S, len);
    std::memset(out + size_t(head(j)) * hd, 0, sizeof(float) * size_t(hd));
  }
  for (int p0 = 0; p0 < len; p0 += kKvBlock) {
    const int nb = std::min(kKvBlock, len - p0);
    const float *v = vc.v_rows(p0, nb, off, buf, hd);
    for (int j = j0; j < j1; ++j)
      K::axpy_f32_rows(out + size_t(head(j)) * hd, att + size_t(j - j0) * S + size_t(p0), v, size_t(hd), nb, hd);
  }
}

// One layer's Q8_0 cache (State: key_cache8 ...), from the layer's first kv head: kv head g's K
// matrix (its kv_seq rows in 16-row panels) and V rows start at element g·kv_seq·hdq, their scales
// at g·kv_seq·hdq/32.
struct Q8Cache {
  int8_t *k, *v;
  float *kd, *vd;
  size_t KS;  // kv_seq
  int hdq;    // elements per cached row (head_dim rounded up to a block)
  size_t at(int g) const { return size_t(g) * KS * size_t(hdq); }
  // Row p of kv head g from the F32 rows kx and vx (hd elements each): each zero-padded to hdq in
  // pad and quantized by the build's quantize_q8 into xq (scratch for hdq elements); K scattered
  // into the panels (kernels/format/panel.h), V stored as row-major blocks.
  template <class K>
  void store(int g, int p, const float *kx, const float *vx, int hd, float *pad, ml_qact *xq) const {
    const int nb = hdq / ML_QK;
    std::memcpy(pad, kx, sizeof(float) * size_t(hd));
    std::fill(pad + hd, pad + hdq, 0.0f);
    K::quantize_q8(xq, pad, hdq);
    for (int i = 0; i < hdq; ++i) k[at(g) + panel::q8_offset(nb, p, i)] = xq->q[i];
    for (int b = 0; b < nb; ++b) kd[at(g) / ML_QK + panel::d_index(nb, p, b)] = xq->d[b];
    std::memcpy(pad, vx, sizeof(float) * size_t(hd));
    K::quantize_q8(xq, pad, hdq);
    std::memcpy(v + at(g) + size_t(p) * hdq, xq->q, size_t(hdq));
    std::memcpy(vd + (at(g) + size_t(p) * hdq) / ML_QK, xq->d, sizeof(float) * size_t(nb));
  }
};

// attend with a Q8_0 cache (kv head g, positions [0, len), query heads head(j), j in [j0, j1)):
//   s_p = k̃_p · quant(q/√hd): each query head divided by √hd (IEEE, per element), zero-padded to
//   hdq and quantized like an activation; the scores of all positions are the matmul kernel's
//   over g's K panels with the group's query heads as its tokens (integer block sums, the kernels'
//   one float order), so each K block is read once for the whole group;
//   softmax; out = Σ_p att_p · ṽ_p (p in order, from zero), each V block dequantized (exactly) once
//   for all the heads.
// att: (j1 - j0, S) scratch; buf: (kKvBlock, hdq); xq: j1 - j0 activations of hdq; qf: hdq floats.
template <class K, class Head>
void attend_q8(const Q8Cache &kc, int g, int len, int hd, float sqrt_hd, const float *q, float *out, Head head, int j0,
               int j1, float *att, size_t S, float *buf, ml_qact *xq, float *qf) {
  const int hdq = kc.hdq;
  for (int j = j0; j < j1; ++j) {
    const float *qh = q + size_t(head(j)) * hd;
    for (int i = 0; i < hd; ++i) qf[i] = qh[i] / sqrt_hd;
    std::fill(qf + hd, qf + hdq, 0.0f);
    K::quantize_q8(&xq[j - j0], qf, hdq);
  }
  const ml_qtensor kt{kc.k + kc.at(g), kc.kd + kc.at(g) / ML_QK, len, hdq, ML_TYPE_Q8_0, ML_LAYOUT_PANEL16,
                      nullptr, nullptr, nullptr};
  K::matmul_q8(att, S, &kt, xq, j1 - j0, 0, len);
  for (int j = j0; j < j1; ++j) {
    K::softmax(att + size_t(j - j0) * S, len);
    std::memset(out + size_t(head(j)) * hd, 0, sizeof(float) * size_t(hd));
  }
  for (int p0 = 0; p0 < len; p0 += kKvBlock) {
    const int nb = std::min(kKvBlock, len - p0);
    const size_t at = kc.at(g) + size_t(p0) * hdq;
    for (size_t b = 0; b < size_t(kKvBlock) * hdq; b += 64) prefetch(kc.v + at + size_t(kKvBlock) * hdq + b);  // the next block
    K::dequantize_q8(buf, kc.v + at, kc.vd + at / ML_QK, nb * hdq);
    for (int j = j0; j < j1; ++j)
      K::axpy_f32_rows(out + size_t(head(j)) * hd, att + size_t(j - j0) * S + size_t(p0), buf, size_t(hdq), nb, hd);
  }
}

// Layer l's K/V cache of one state (each type's views only where its arrays exist): KS positions
// per kv head, the layer's first element `at` of the F32 / F16 arrays.
struct LayerKv {
  size_t KS, at;
  KvCache k, v;  // F32 or F16
  Q8Cache q8;    // Q8_0
};
LayerKv layer_kv(const State &r, const Config &c, int l) {
  const size_t KS = size_t(r.kv_seq), at = size_t(l) * KS * size_t(c.kv_dim());
  const bool f16 = r.kv_type == ML_KV_F16, q8 = r.kv_type == ML_KV_Q8_0, f32 = !f16 && !q8;
  const size_t at8 = q8 ? size_t(l) * KS * size_t(c.n_kv_heads) * size_t(r.kv_hdq) : 0;  // Q8_0: the layer's rows
  return {KS, at, {f32 ? r.key_cache + at : nullptr, f16 ? r.key_cache16 + at : nullptr},
          {f32 ? r.value_cache + at : nullptr, f16 ? r.value_cache16 + at : nullptr},
          {r.key_cache8 + at8, r.value_cache8 + at8, r.key_scale8 + at8 / ML_QK, r.value_scale8 + at8 / ML_QK, KS, r.kv_hdq}};
}

}  // namespace

template <class K>
void forward(const Model &m, State &s, ThreadPool &pool, const int *tokens, int n, int pos, bool all_logits,
             const Rows *rows) {
  const Config &c = m.cfg;
  // q_dim = n_heads·head_dim: dim, unless the model states its head size (Qwen3: head_dim need not be dim / n_heads)
  const int dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hd = c.head_dim(), hidden = c.hidden_dim;
  const size_t S = size_t(s.max_seq), half = size_t(hd / 2), D = size_t(dim), H = size_t(hidden);
  const size_t Q = size_t(q_dim), XB = std::max(D, Q);  // strides of q and of xb (normed input or attention output)
  const bool f16 = s.kv_type == ML_KV_F16, q8 = s.kv_type == ML_KV_Q8_0;
  // token t: its position and the state whose KV cache it extends and reads (one sequence: pos + t in s)
  auto at = [&](int t) { return rows ? rows->pos[t] : pos + t; };
  auto kv = [&](int t) -> State & { return rows ? *rows->kv[t] : s; };

  // x[t] = tok_emb[token t]                                                 (n, dim)
  for (int t = 0; t < n; ++t) ml_dequantize_row(s.x + t * D, &m.tok_emb, tokens[t]);

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights &w = m.layers[size_t(l)];
    float *k = s.kv_new;                              // (n, kv_dim) the new K rows, before they go to the cache
    float *v = s.kv_new + size_t(s.batch) * kv_dim;   // (n, kv_dim) the new V rows

    // xb = rmsnorm(x) · attn_norm                                           (n, dim)
    for (int t = 0; t < n; ++t) K::rmsnorm(s.xb + t * XB, s.x + t * D, w.attn_norm, dim, c.norm_eps);
    // q = Wq·xb (n, q_dim), k = Wk·xb, v = Wv·xb (n, kv_dim) into the cache
    const Input xb_in = prepare<K>(s, s.xb, XB, n, dim, any_quantized({&w.wq, &w.wk, &w.wv}));
    products<K>(pool, xb_in, {{s.q, Q, &w.wq}, {k, size_t(kv_dim), &w.wk}, {v, size_t(kv_dim), &w.wv}});
    // q += bq, k += bk, v += bv (Qwen2's biases; before RoPE)              (n, q_dim) (n, kv_dim)
    if (c.qkv_bias)
      for (int t = 0; t < n; ++t) {
        K::add(s.q + t * Q, w.bq, q_dim);
        if (!ML_MUTANT("qkv_bias")) K::add(k + size_t(t) * kv_dim, w.bk, kv_dim);  // mutant: bk skipped
        K::add(v + size_t(t) * kv_dim, w.bv, kv_dim);
      }
    // q_h = rmsnorm(q_h) · q_norm, k_g = rmsnorm(k_g) · k_norm per head (Qwen3; before RoPE)   (hd) each
    if (c.qk_norm)
      for (int t = 0; t < n; ++t) {
        for (int h = 0; h < c.n_heads; ++h) {
          float *qh = s.q + t * Q + size_t(h) * hd;
          K::rmsnorm(qh, qh, w.q_norm, hd, c.norm_eps);
        }
        if (!ML_MUTANT("qk_norm"))  // mutant: k not normed
          for (int g = 0; g < c.n_kv_heads; ++g) {
            float *kg = k + size_t(t) * kv_dim + size_t(g) * hd;
            K::rmsnorm(kg, kg, w.k_norm, hd, c.norm_eps);
          }
      }
    // rotate q and k by position
    for (int t = 0; t < n; ++t)
      K::rope(s.q + t * Q, k + size_t(t) * kv_dim, s.rope_cos + size_t(at(t)) * half,
              s.rope_sin + size_t(at(t)) * half, hd, c.n_heads, c.n_kv_heads);

    // cache[l][g][at(t)] = k_t, v_t of kv head g in token t's cache (K element-major in its block,
    // k_at): copied (F32), rounded to nearest even (F16) or quantized (Q8_0, Q8Cache::store)
    for (int t = 0; t < n; ++t) {
      State &r = kv(t);
      const LayerKv lk = layer_kv(r, c, l);
      for (int g = 0; g < c.n_kv_heads; ++g) {
        const size_t head_kv = lk.at + size_t(g) * lk.KS * hd, from = size_t(t) * kv_dim + size_t(g) * hd;
        const size_t v_at = head_kv + size_t(at(t)) * hd;
        if (q8) {
          lk.q8.store<K>(g, at(t), k + from, v + from, hd, s.att_qf, &s.att_x[0]);
        } else if (f16) {
          for (int i = 0; i < hd; ++i) r.key_cache16[head_kv + k_at(at(t), i, hd)] = f16_from_f32(k[from + size_t(i)]);
          kv_store_f16(r.value_cache16 + v_at, v + from, hd);
        } else {
          for (int i = 0; i < hd; ++i) r.key_cache[head_kv + k_at(at(t), i, hd)] = k[from + size_t(i)];
          std::memcpy(r.value_cache + v_at, v + from, sizeof(float) * size_t(hd));
        }
      }
    }

    // attention, per token t and head h (kv head g = h / kv_mul), causal:
    //   xb_th = Σ_{p ≤ at(t)} softmax(q_th · k_p / √hd)_p · v_p
    // work units: (t, g, part): `parts` sets of g's query heads, enough units for every thread
    const float sqrt_hd = std::sqrt(float(ML_MUTANT("att_scale") ? dim : hd));  // mutant: sqrt(dim)
    const int G = c.n_kv_heads, M = c.kv_mul();
    const bool gqa_mutant = ML_MUTANT("gqa_head");  // mutant: kv head h % n_kv (heads g, g+G, ...)
    const uint64_t row_bytes = q8 ? uint64_t(s.kv_hdq) + uint64_t(s.kv_hdq) / ML_QK * 4 : uint64_t(hd) * (f16 ? 2 : 4);
    int last = 0;  // the last position any token reads
    for (int t = 0; t < n; ++t) last = std::max(last, at(t));
    const uint64_t kv_bytes = uint64_t(n) * G * uint64_t(last + 1) * 2 * row_bytes;
    // parts: 1 (each kv head's rows read by one thread) when the (t, g) units spread evenly,
    // else every query head its own unit
    const int nth = pool.size(), parts = n * G >= 4 * nth || (n * G) % nth == 0 ? 1 : M;
    parallel(pool, kv_bytes, n * G * parts, [&](int tid, int u0, int u1) {
      float *att = s.att + size_t(tid) * size_t(M) * S;            // (M, max_seq) scratch
      float *buf = f16 || q8 ? s.kv_row + size_t(tid) * kKvBlock * size_t(q8 ? s.kv_hdq : hd) : nullptr;  // converted rows
      for (int u = u0; u < u1; ++u) {
        const int t = u / (G * parts), g = (u / parts) % G, part = u % parts;
        const int len = at(t) + (ML_MUTANT("kv_pos") && at(t) > 0 ? 0 : 1);  // mutant: one position short
        const LayerKv lk = layer_kv(kv(t), c, l);
        auto head = [&](int j) { return gqa_mutant ? g + j * G : g * M + j; };
        const int j0 = M * part / parts, j1 = M * (part + 1) / parts;
        if (q8)
          attend_q8<K>(lk.q8, g, len, hd, sqrt_hd, s.q + t * Q, s.xb + t * XB, head, j0, j1, att, S, buf,
                       s.att_x + size_t(tid) * M, s.att_qf + size_t(tid) * size_t(s.kv_hdq));
        else
          attend<K>(lk.k, lk.v, size_t(g) * lk.KS * hd, len, hd, sqrt_hd, s.q + t * Q, s.xb + t * XB, head, j0, j1, att,
                    S, buf);
      }
    });

    // x += Wo · xb                                            (n, q_dim) -> (n, dim)
    const Input att_in = prepare<K>(s, s.xb, XB, n, q_dim, any_quantized({&w.wo}));
    products<K>(pool, att_in, {{s.xb2, D, &w.wo}});
    for (int t = 0; t < n; ++t) K::add(s.x + t * D, s.xb2 + t * D, dim);

    // xb = rmsnorm(x) · ffn_norm                                            (n, dim)
    for (int t = 0; t < n; ++t) K::rmsnorm(s.xb + t * XB, s.x + t * D, w.ffn_norm, dim, c.norm_eps);
    // hb = silu(W1·xb) · (W3·xb)                                            (n, hidden)
    const Input ffn_in = prepare<K>(s, s.xb, XB, n, dim, any_quantized({&w.w1, &w.w3}));
    const int ffn_tile = row_tile(w.w1);
    parallel(pool, 2 * weight_bytes(w.w1) * uint64_t(n), tiles(w.w1), [&](int, int u0, int u1) {
      const int r0 = u0 * ffn_tile, r1 = std::min(u1 * ffn_tile, hidden);
      matmul_rows<K>(s.hb, H, w.w1, ffn_in, r0, r1);
      matmul_rows<K>(s.hb2, H, w.w3, ffn_in, r0, r1);
      if (r1 > r0)
        for (int t = 0; t < n; ++t) K::silu_mul(s.hb + t * H + r0, s.hb2 + t * H + r0, r1 - r0);
    });
    // x += W2 · hb                                                          (n, dim)
    const Input hb_in = prepare<K>(s, s.hb, H, n, hidden, any_quantized({&w.w2}));
    products<K>(pool, hb_in, {{s.xb2, D, &w.w2}});
    for (int t = 0; t < n; ++t) K::add(s.x + t * D, s.xb2 + t * D, dim);
    if (ML_MUTANT("ffn_residual")) std::memcpy(s.x, s.xb2, sizeof(float) * D * size_t(n));  // mutant: x = W2·hb
  }

  // logits = Wcls · (rmsnorm(x) · final_norm), for every token or the last  (n or 1, vocab)
  const int t0 = all_logits ? 0 : n - 1, nl = n - t0;
  for (int t = t0; t < n; ++t) K::rmsnorm(s.x + t * D, s.x + t * D, m.final_norm, dim, c.norm_eps);
  const Input cls_in = prepare<K>(s, s.x + t0 * D, D, nl, dim, any_quantized({&m.wcls}));
  products<K>(pool, cls_in, {{s.logits, size_t(c.vocab), &m.wcls}});
}

ForwardFn forward_build() { return &forward<BuildKernels>; }
ForwardFn forward_reference() { return &forward<ScalarKernels>; }

}  // namespace ml
