// The forward pass, llama2.c's forward() step by step, with quantized matrices and GQA.
// Row-parallel steps run on the thread pool with row ranges on multiples of the kernels' row tile, and
// attention is split by head, so the result is bit-identical for every thread count.
#include "runtime/forward.h"

#include <cmath>
#include <cstring>

#include "kernels/binding.h"

namespace ml {

namespace {

// Rows per thread split: kernels work on 4 rows at a time, on 16-row panels in layout 1
// (kernels/kernels.h); boundaries on these multiples keep results independent of the thread count.
inline int row_tile(const ml_qtensor &W) { return W.layout == ML_LAYOUT_PANEL16 ? ML_PANEL_ROWS : 4; }

// A matvec input: the float vector and, for quantized weights, its Q8_0 form.
struct Input {
  const float *f;
  const ml_qact *q;
};

template <class K>
Input prepare(State &s, const float *x, int n, ml_type wtype) {
  if (wtype == ML_TYPE_F32) return {x, nullptr};
  K::quantize_q8(&s.xq, x, n);
  return {x, &s.xq};
}

// y[r0:r1] = W[r0:r1] · in
template <class K>
inline void matvec_rows(float *y, const ml_qtensor &W, Input in, int r0, int r1) {
  if (r0 >= r1) return;
  switch (W.type) {
    case ML_TYPE_Q8_0: K::matvec_q8(y, &W, in.q, r0, r1); break;
    case ML_TYPE_Q4_0: K::matvec_q4(y, &W, in.q, r0, r1); break;
    default: K::matvec_f32(y, &W, in.f, r0, r1); break;
  }
}

// This thread's share of y = W · in.
template <class K>
inline void matvec_share(float *y, const ml_qtensor &W, Input in, int tid, int nth) {
  int r0, r1;
  split_rows(W.rows, row_tile(W), tid, nth, &r0, &r1);
  matvec_rows<K>(y, W, in, r0, r1);
}

}  // namespace

template <class K>
void forward(const Model &m, State &s, ThreadPool &pool, int token, int pos) {
  const Config &c = m.cfg;
  const int dim = c.dim, kv_dim = c.kv_dim(), hd = c.head_dim(), hidden = c.hidden_dim;
  const int S = s.max_seq, half = hd / 2;
  const ml_type wt = c.wtype;

  // x = tok_emb[token]                                                      (dim)
  ml_dequantize_row(s.x, &m.tok_emb, token);

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights &w = m.layers[size_t(l)];
    float *k_cache = s.key_cache + size_t(l) * S * kv_dim;    // (max_seq, kv_dim) of this layer
    float *v_cache = s.value_cache + size_t(l) * S * kv_dim;  // (max_seq, kv_dim)
    float *k = k_cache + size_t(pos) * kv_dim;                // (kv_dim) written in place
    float *v = v_cache + size_t(pos) * kv_dim;                // (kv_dim)

    // xb = rmsnorm(x) · attn_norm                                           (dim)
    K::rmsnorm(s.xb, s.x, w.attn_norm, dim, c.norm_eps);
    // q = Wq·xb (dim), k = Wk·xb, v = Wv·xb (kv_dim each)
    const Input xb_in = prepare<K>(s, s.xb, dim, wt);
    pool.run([&](int tid, int nth) {
      matvec_share<K>(s.q, w.wq, xb_in, tid, nth);
      matvec_share<K>(k, w.wk, xb_in, tid, nth);
      matvec_share<K>(v, w.wv, xb_in, tid, nth);
    });
    // rotate q and k by position
    K::rope(s.q, k, s.rope_cos + size_t(pos) * half, s.rope_sin + size_t(pos) * half, hd, c.n_heads,
            c.n_kv_heads);

    // attention, per head h (kv head h / kv_mul):  xb_h = Σ_t softmax(q_h·k_t / √hd)_t · v_t
    const float sqrt_hd = std::sqrt(float(hd));
    pool.run([&](int tid, int nth) {
      for (int h = tid; h < c.n_heads; h += nth) {
        const float *q_h = s.q + size_t(h) * hd;                     // (hd)
        float *att = s.att + size_t(h) * S;                          // (pos + 1)
        const size_t kv_off = size_t(h / c.kv_mul()) * hd;
        for (int t = 0; t <= pos; ++t)
          att[t] = K::dot_f32(q_h, k_cache + size_t(t) * kv_dim + kv_off, hd) / sqrt_hd;
        K::softmax(att, pos + 1);
        float *out = s.xb + size_t(h) * hd;                          // (hd)
        std::memset(out, 0, sizeof(float) * size_t(hd));
        for (int t = 0; t <= pos; ++t) K::axpy_f32(out, att[t], v_cache + size_t(t) * kv_dim + kv_off, hd);
      }
    });

    // x += Wo · xb                                                          (dim)
    const Input att_in = prepare<K>(s, s.xb, dim, wt);
    pool.run([&](int tid, int nth) { matvec_share<K>(s.xb2, w.wo, att_in, tid, nth); });
    K::add(s.x, s.xb2, dim);

    // xb = rmsnorm(x) · ffn_norm                                            (dim)
    K::rmsnorm(s.xb, s.x, w.ffn_norm, dim, c.norm_eps);
    // hb = silu(W1·xb) · (W3·xb)                                            (hidden)
    const Input ffn_in = prepare<K>(s, s.xb, dim, wt);
    pool.run([&](int tid, int nth) {
      int r0, r1;
      split_rows(hidden, row_tile(w.w1), tid, nth, &r0, &r1);
      matvec_rows<K>(s.hb, w.w1, ffn_in, r0, r1);
      matvec_rows<K>(s.hb2, w.w3, ffn_in, r0, r1);
      if (r1 > r0) K::silu_mul(s.hb + r0, s.hb2 + r0, r1 - r0);
    });
    // x += W2 · hb                                                          (dim)
    const Input hb_in = prepare<K>(s, s.hb, hidden, wt);
    pool.run([&](int tid, int nth) { matvec_share<K>(s.xb2, w.w2, hb_in, tid, nth); });
    K::add(s.x, s.xb2, dim);
  }

  // logits = Wcls · (rmsnorm(x) · final_norm)                               (vocab)
  K::rmsnorm(s.x, s.x, m.final_norm, dim, c.norm_eps);
  const Input cls_in = prepare<K>(s, s.x, dim, wt);
  pool.run([&](int tid, int nth) { matvec_share<K>(s.logits, m.wcls, cls_in, tid, nth); });
}

ForwardFn forward_build() { return &forward<BuildKernels>; }
ForwardFn forward_reference() { return &forward<ScalarKernels>; }

}  // namespace ml
