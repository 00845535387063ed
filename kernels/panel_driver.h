// THE quantized-panel driver: the one loop of every SIMD matvec_q8/q4 and matmul_q8/q4 on 16-row
// panels (layouts 1 and 2, docs/mlb-format.md), for every ISA family. No intrinsics here: an ISA
// supplies two small parts and the macro at the bottom turns them into the four kernels of the ABI.
//
// A 64-byte unit of a panel holds the same 4 weights of 16 rows, so a vector lane is a row: one
// block's int32 sums for the panel's 16 rows come from 8 (Q8) or 4 (Q4) units without any
// horizontal reduction, and the float part runs 16 rows wide.
//
//   struct Width {                          // the float part: 16 rows of float accumulators
//     static constexpr int kTokens;         // tokens per weight load in matmul (register budget)
//     struct Sums;                          // 16 exact int32 block sums, one per row
//     struct Acc;                           // 16 float partial sums, one per row (a sized type:
//                                           // SVE/RVV keep them in NEON registers or a float[16])
//     static Acc zero();
//     static Acc fold(Acc a, const Sums &s, const float *d, float dx);  // a + (float(s)·d)·dx,
//                                           // two roundings, never an FMA; d: the 16 row scales
//     static Acc add(Acc a, const Acc &b);
//     static void store(float *y, const Acc &a, int lo, int hi);       // y[lo, hi) of the panel
//   };
//   struct Int {                            // the integer part: load/unpack and the dot instruction
//     using Sums = Width::Sums;
//     struct X; template <bool Q4> static X prep(const int8_t *xb, int32_t s);  // one block of x
//                                           // (32 quants) and its sum Σx, as dot() wants it
//     struct Wq8; static Wq8 load_q8(const int8_t *units);    // a block's 8 units (512 bytes)
//     struct Wq4; static Wq4 load_q4(const uint8_t *units);   // a block's 4 units (256 bytes)
//     static Sums dot(const Wq8 &, const X &);  static Sums dot(const Wq4 &, const X &);
//     template <int T> static void dots(const Wq &, const X *xs, Sums *out);  // optional: T tokens,
//                                           // the weights' load/unpack shared (HasDots)
//     static constexpr int kTokens;         // optional: overrides the Width's (TokensOf)
//     static constexpr bool kOwnPackedLoop; // optional: x read from the pack in a loop of its own
//   };
//
// A block of weights is loaded (and offset or unpacked) once and used for T tokens (matmul; matvec
// is T = 1), and a matmul runs each panel for a whole chunk of tokens before the next panel, so a
// prompt of m tokens reads the weights from DRAM once per chunk (panel_matmul). x is prepared
// (Int::prep) once per chunk into a pack that every panel reads, not once per panel (pack_group). Each block step
// prefetches the units and scales kPrefetchBytes of units ahead (simd/prefetch.h: 16 Q8 or 32 Q4
// blocks; the next panel's when the panel ends, past the tensor a harmless hint): where the
// hardware prefetchers alone keep too few lines in flight, decode is bound by that (docs/bench.md).
// Layout 2 stores the 16 scales of a block as binary16: the block step widens them (widen16, exact:
// every half is a float) into the 16 floats fold() reads, so both layouts run the same fold.
// Float order (kernels/kernels.h), per row and token: t_b = (float(sumi_b) · dw_b) · dx_b into
// partial b mod 4, then (p0 + p1) + (p2 + p3) — the scalar reference's bits, for every T, every
// row range and every ISA. Row tails: a range [r0, r1) computes whole panels and stores only its
// rows (Width::store); the caller splits on multiples of 16 (kernels/kernels.h).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#if defined(_WIN32)
#include <pthread.h>  // winpthreads (the mingw-w64 posix toolchain): pack_buffer's per-thread holder
#endif

#include "kernels/format/f16.h"
#include "kernels/kernels.h"
#include "simd/prefetch.h"

namespace ml::driver {

// x as the Int's dot wants it (PrepX, from Int::prep), and a pack of them: the blocks of a group of
// G tokens (t, .., t+G-1) as nb × G entries, block-major ([b·G + i]), groups one after another,
// G = the driver's T; prepared once per matmul chunk (or matvec) instead of once per panel. Only
// where preparing is work (kPackX): x prepared is more than its 32 quants (x86 below 512 bits: 8
// broadcasts; SSE2 and WASM: widened to int16 too). Where it is a pointer or the quants
// (avx512vnni, ARM, Highway, RVV) a pack would only add a load: 5-10 % slower on avx512vnni.
template <class Int, bool Q4>
using PrepX = decltype(Int::template prep<Q4>(nullptr, 0));
template <class Int, bool Q4>
constexpr bool kPackX = sizeof(PrepX<Int, Q4>) > ML_QK;

// An Int may bring its own loop over a matmul's T tokens, for a dot whose weights cost work per use
// (the x86 dots below 512 bits offset them, NEON unpacks them): dots<T>(w, xs, sums) sets sums[t]
// to dot(w, xs[t]) for t < T — the same exact integers, the weight work done once for the T tokens.
template <class Int, class = void>
struct HasDots : std::false_type {};
template <class Int>
struct HasDots<Int, decltype(void(Int::template dots<1>(Int::load_q8(nullptr),
                                                        static_cast<const PrepX<Int, false> *>(nullptr),
                                                        static_cast<typename Int::Sums *>(nullptr))))>
    : std::true_type {};

// Tokens per weight load in matmul: the Width's kTokens (its register budget), or the Int's own
// where it declares one (SSE2: 1, kernels/x86/sse2/matvec.cc says why).
template <class Width, class Int, class = void>
struct TokensOf : std::integral_constant<int, Width::kTokens> {};
template <class Width, class Int>
struct TokensOf<Width, Int, std::void_t<decltype(Int::kTokens)>> : std::integral_constant<int, Int::kTokens> {};

// This thread's pack memory, at least `bytes` of it (64-byte aligned), kept for the next call and
// freed when the thread ends; nullptr when it cannot be had (or above pack_limit, the tests' way
// to run the fallback): the driver then prepares x where it is used, the same bits.
inline size_t pack_limit = SIZE_MAX;
struct PackBuffer {
  void *p = nullptr;
  size_t n = 0;
  ~PackBuffer() { ::operator delete(p, std::align_val_t(64)); }
};
#if defined(_WIN32)
// mingw-w64 keeps thread_local objects in emutls blocks that a winpthreads key destructor frees, and
// runs a thread_local's destructor from another key's: the storage can be gone before ~PackBuffer
// reads it (ml_tests.exe crashed in _aligned_free at a worker's exit under Wine: win-sse2 e2e.batch,
// 1 run in 7). Here the buffer lives on the heap and a key's value points to it: the key's
// destructor gets the pointer itself as its argument. nullptr when no holder can be had.
inline PackBuffer *this_thread_pack() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, [](void *b) { delete static_cast<PackBuffer *>(b); });
    return k;
  }();
  PackBuffer *b = static_cast<PackBuffer *>(pthread_getspecific(key));
  if (!b) {
    b = new (std::nothrow) PackBuffer;
    if (b && pthread_setspecific(key, b) != 0) {
      delete b;
      b = nullptr;
    }
  }
  return b;
}
#else
inline PackBuffer *this_thread_pack() {
  thread_local PackBuffer buf;
  return &buf;
}
#endif
inline void *pack_buffer(size_t bytes) {
  if (bytes > pack_limit) return nullptr;
  PackBuffer *buf = this_thread_pack();
  if (!buf) return nullptr;
  if (bytes > buf->n) {
    ::operator delete(buf->p, std::align_val_t(64));
    buf->p = ::operator new(bytes, std::align_val_t(64), std::nothrow);
    buf->n = buf->p ? bytes : 0;
  }
  return buf->p;
}

// Pack tokens [t, t + G) of X into pack (nb × G entries, [b·G + i]).
template <class Int, bool Q4>
inline void pack_group(PrepX<Int, Q4> *pack, const ml_qact *X, int t, int G, int nb) {
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < G; ++i)
      new (pack + size_t(b) * G + i) PrepX<Int, Q4>(Int::template prep<Q4>(X[t + i].q + b * ML_QK, X[t + i].s[b]));
}

// m: y_r = y_r + M_r with M_r = sum4 over blocks of the offsets' terms (kernels/kernels.h), for
// the rows [lo, hi) of panel p and one token, right after the panel's products (its scales still in
// cache), 16 rows at a time on the compiler's generic vectors (element-wise IEEE operations: the
// same bits on every ISA and in the scalar reference's per-row loop; plain arrays elsewhere).
#if defined(__GNUC__) || defined(__clang__)
typedef float Rows16 __attribute__((vector_size(64)));
#else
struct Rows16 {
  float v[16];
  float &operator[](int i) { return v[i]; }
  float operator[](int i) const { return v[i]; }
  friend Rows16 operator+(Rows16 a, const Rows16 &b) { for (int i = 0; i < 16; ++i) a.v[i] = a.v[i] + b.v[i]; return a; }
  friend Rows16 operator*(Rows16 a, const Rows16 &b) { for (int i = 0; i < 16; ++i) a.v[i] = a.v[i] * b.v[i]; return a; }
};
#endif
inline Rows16 rows16(float s) {
#if defined(__GNUC__) || defined(__clang__)
  return s - Rows16{};  // the scalar operand is broadcast; s − (+0) is s, −0 included (s + 0 is not)
#else
  Rows16 v;
  for (int i = 0; i < 16; ++i) v[i] = s;
  return v;
#endif
}
inline Rows16 rows16(const float *p) {
  Rows16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <bool Q4>
inline void offsets_panel(float *y, const ml_qtensor *W, const ml_qact &x, int p, int lo, int hi) {
  const int nb = W->cols / ML_QK, row0 = p * ML_PANEL_ROWS;
  const size_t d0 = size_t(p) * nb * ML_PANEL_ROWS;
  // Block b's terms into the partial b mod 4 (acc, a register: the loop below is unrolled by 4).
  const auto term = [&](int b, Rows16 acc) {
    const size_t di = d0 + size_t(b) * ML_PANEL_ROWS;
    const Rows16 sx = rows16(float(x.s[b])), dx = rows16(x.d[b]);
    if (Q4) acc = acc + (sx * (rows16(8.0f) * rows16(W->d + di))) * dx;
    return acc + (sx * rows16(W->m + di)) * dx;
  };
  Rows16 a0 = rows16(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int b = 0;
  for (; b + 4 <= nb; b += 4) a0 = term(b, a0), a1 = term(b + 1, a1), a2 = term(b + 2, a2), a3 = term(b + 3, a3);
  if (b < nb) a0 = term(b, a0);
  if (b + 1 < nb) a1 = term(b + 1, a1);
  if (b + 2 < nb) a2 = term(b + 2, a2);
  const Rows16 total = (a0 + a1) + (a2 + a3);
  for (int r = lo; r < hi; ++r) y[r] = y[r] + total[r - row0];
}

// step(b, k) for the blocks b = 0 .. nb-1 in order, k = b mod 4 a constant of each call
// (std::integral_constant), so the partial sum a step adds into can stay in a register (indexed at
// run time it lives in memory: a store and a reload every block).
template <class Step>
inline void blocks_by_four(int nb, Step &&step) {
  int b = 0;
  for (; b + 4 <= nb; b += 4) {
    step(b, std::integral_constant<int, 0>());
    step(b + 1, std::integral_constant<int, 1>());
    step(b + 2, std::integral_constant<int, 2>());
    step(b + 3, std::integral_constant<int, 3>());
  }
  if (b < nb) step(b, std::integral_constant<int, 0>());
  if (b + 1 < nb) step(b + 1, std::integral_constant<int, 1>());
  if (b + 2 < nb) step(b + 2, std::integral_constant<int, 2>());
}

// Rows [r0, r1) of the tokens t0 .. t0+T-1 of Y[t·ldy + r] = W · X[t], their x from px (their
// group's pack) or, when px is null, prepared per block; kPacked: px is known not null. kPf:
// prefetch the weights kPrefetchBytes ahead (they come from DRAM: matvec, and a matmul's first
// pass over a panel; the later passes find the panel in L2 and skip the hints). kH: layout 2.
template <class Width, class Int, bool Q4, bool kH, int T, bool kPf, bool kPacked>
inline void panel_tokens_from(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X,
                              const PrepX<Int, Q4> *px, int t0, int r0, int r1) {
  constexpr size_t kUnits = Q4 ? 4 : 8;
  const int nb = W->cols / ML_QK;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    const uint8_t *units = q + size_t(p) * nb * kUnits * 64;
    const size_t d0 = size_t(p) * nb * ML_PANEL_ROWS;  // the panel's first scale
    typename Width::Acc acc[T][4];
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < 4; ++k) acc[t][k] = Width::zero();
    // Block b into partial k = b mod 4 (blocks_by_four).
    const auto step = [&](int b, auto k) {
      const uint8_t *ub = units + size_t(b) * kUnits * 64;
      const size_t di = d0 + size_t(b) * ML_PANEL_ROWS, ahead = kPrefetchBytes / (kUnits * 64) * ML_PANEL_ROWS;
      if constexpr (kPf) {
        for (size_t l = 0; l < kUnits; ++l) ml::prefetch(ub + kPrefetchBytes + l * 64);
        if constexpr (kH)  // the scales of that block
          ml::prefetch(W->dh + di + ahead);
        else
          ml::prefetch(W->d + di + ahead);
      }
      alignas(64) float dw[ML_PANEL_ROWS];  // layout 2: the block's scales widened (W->d is null)
      if constexpr (kH) widen16(dw, W->dh + di);
      const float *db = kH ? dw : W->d + di;
      const auto w = [&] {
        if constexpr (Q4)
          return Int::load_q4(ub);
        else
          return Int::load_q8(reinterpret_cast<const int8_t *>(ub));
      }();
      PrepX<Int, Q4> local[T];  // x prepared here when there is no pack
      const PrepX<Int, Q4> *xs = local;
      if (kPacked || (kPackX<Int, Q4> && px))
        xs = px + size_t(b) * T;
      else
        for (int t = 0; t < T; ++t) local[t] = Int::template prep<Q4>(X[t0 + t].q + b * ML_QK, X[t0 + t].s[b]);
      if constexpr (HasDots<Int>::value) {  // the Int's own loop over the T tokens
        typename Width::Sums s[T];
        Int::template dots<T>(w, xs, s);
        for (int t = 0; t < T; ++t)
          acc[t][decltype(k)::value] = Width::fold(acc[t][decltype(k)::value], s[t], db, X[t0 + t].d[b]);
      } else {  // each token's sums folded at once: T of them live would spill (avx512vnni: 32 zmm)
        for (int t = 0; t < T; ++t)
          acc[t][decltype(k)::value] =
              Width::fold(acc[t][decltype(k)::value], Int::dot(w, xs[t]), db, X[t0 + t].d[b]);
      }
    };
    blocks_by_four(nb, step);
    const int row0 = p * ML_PANEL_ROWS, lo = r0 > row0 ? r0 : row0;
    const int hi = r1 < row0 + ML_PANEL_ROWS ? r1 : row0 + ML_PANEL_ROWS;
    for (int t = 0; t < T; ++t)
      Width::store(Y + size_t(t0 + t) * ldy + row0,
                   Width::add(Width::add(acc[t][0], acc[t][1]), Width::add(acc[t][2], acc[t][3])), lo - row0,
                   hi - row0);
    if (W->m)  // GGUF blocks with offsets (Q4_1, Q4_K, Q5_1, Q5_K)
      for (int t = 0; t < T; ++t) offsets_panel<Q4>(Y + size_t(t0 + t) * ldy, W, X[t0 + t], p, lo, hi);
  }
}

// The same. An Int may ask (kOwnPackedLoop = true) for one token's x read from the pack to be a
// loop of its own (kPacked): in the loop that may read either, GCC copied the pack's entries to
// the local array every block — sse2 Q4 decode: 16 loads and 16 stores a block, its own loop
// 10-15 % faster. Not the default: SSE4.1's loop read in place was 7-11 % slower at decode and
// 20-35 % slower in 2-token prompts (tried).
template <class Int, class = void>
struct OwnPackedLoop : std::false_type {};
template <class Int>
struct OwnPackedLoop<Int, std::void_t<decltype(Int::kOwnPackedLoop)>> : std::bool_constant<Int::kOwnPackedLoop> {};
template <class Width, class Int, bool Q4, bool kH, int T, bool kPf = true>
inline void panel_tokens(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, const PrepX<Int, Q4> *px,
                         int t0, int r0, int r1) {
  constexpr bool kOwn = T == 1 && kPackX<Int, Q4> && OwnPackedLoop<Int>::value;
  if (kOwn && px)
    panel_tokens_from<Width, Int, Q4, kH, T, kPf, kOwn>(Y, ldy, W, X, px, t0, r0, r1);
  else
    panel_tokens_from<Width, Int, Q4, kH, T, kPf, false>(Y, ldy, W, X, px, t0, r0, r1);
}

// Batched, blocked for the caches: the tokens go in chunks whose activations fit in L2 (kXBytes of
// quants or of their pack, the larger); for each chunk x is packed once (pack_group, kPackX), then each
// panel of [r0, r1) is read from DRAM once (by its first group of kT tokens, TokensOf) and from L2
// by the chunk's other groups, then the leftover tokens one at a time. So a prompt of m tokens
// streams the weights ⌈m / chunk⌉ times, not m / kT times, and prepares x once per chunk.
template <class Width, class Int, bool Q4, bool kH>
inline void panel_matmul(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
  using XP = PrepX<Int, Q4>;
  constexpr int kT = TokensOf<Width, Int>::value;
  constexpr size_t kXBytes = 256 * 1024;
  const int nb = W->cols / ML_QK;
  const size_t token_bytes = std::max(size_t(W->cols), sizeof(XP) * size_t(nb));
  const int chunk = std::min(m, kT * std::max(1, int(kXBytes / token_bytes / kT)));
  XP *pack = kPackX<Int, Q4> ? static_cast<XP *>(pack_buffer(sizeof(XP) * size_t(nb) * size_t(chunk))) : nullptr;
  for (int c0 = 0; c0 < m; c0 += chunk) {
    const int c1 = std::min(m, c0 + chunk);
    const auto group = [&](int t) { return pack ? pack + size_t(t - c0) * nb : nullptr; };
    for (int t = c0; pack && t < c1; t += t + kT <= c1 ? kT : 1)
      pack_group<Int, Q4>(group(t), X, t, t + kT <= c1 ? kT : 1, nb);
    for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
      const int lo = std::max(r0, p * ML_PANEL_ROWS), hi = std::min(r1, (p + 1) * ML_PANEL_ROWS);
      int t = c0;
      if (t + kT <= c1) {
        panel_tokens<Width, Int, Q4, kH, kT, true>(Y, ldy, W, X, group(t), t, lo, hi);
        for (t += kT; t + kT <= c1; t += kT)
          panel_tokens<Width, Int, Q4, kH, kT, false>(Y, ldy, W, X, group(t), t, lo, hi);
      }
      for (; t < c1; ++t) panel_tokens<Width, Int, Q4, kH, 1>(Y, ldy, W, X, group(t), t, lo, hi);
    }
  }
}

// One token: x packed once for all the panels of [r0, r1) when there are several (and kPackX).
template <class Width, class Int, bool Q4, bool kH>
inline void panel_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  using XP = PrepX<Int, Q4>;
  const int nb = W->cols / ML_QK;
  XP *pack = kPackX<Int, Q4> && r1 - r0 > ML_PANEL_ROWS ? static_cast<XP *>(pack_buffer(sizeof(XP) * size_t(nb)))
                                                        : nullptr;
  if (pack) pack_group<Int, Q4>(pack, x, 0, 1, nb);
  panel_tokens<Width, Int, Q4, kH, 1>(y, 0, W, x, pack, 0, r0, r1);
}

// GGUF's other block types taken exactly (kernels/kernels.h: ml_qtensor m and d2, layout 1 only).
//
// d2 (Q8): each block's elements 0..15 and 16..31 have their own scale. x is prepared twice per
// block, once with its elements 16..31 zero and once with 0..15 zero (and each half's own sum Σx),
// so the Int's dot gives the two halves' exact sums and the Width folds each with its 16 scales:
// the ISA's own two parts, no new instruction, the reference's order (twice the dot work). The
// halves of x are made once per call for all the panels (in the pack buffer), the weights
// prefetched as in panel_tokens_from, each block into its partial b mod 4 held in registers.
struct HalfX {
  alignas(64) int8_t lo[ML_QK];
  int8_t hi[ML_QK];
  int32_t slo, shi;
};
inline void half_x(HalfX *h, const int8_t *xb) {
  h->slo = h->shi = 0;
  for (int j = 0; j < ML_QK / 2; ++j) {
    h->lo[j] = xb[j], h->lo[j + ML_QK / 2] = 0, h->slo += xb[j];
    h->hi[j] = 0, h->hi[j + ML_QK / 2] = xb[j + ML_QK / 2], h->shi += xb[j + ML_QK / 2];
  }
}

template <class Width, class Int>
inline void panel_halves(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  HalfX *halves = static_cast<HalfX *>(pack_buffer(sizeof(HalfX) * size_t(nb) * size_t(m)));
  if (halves)
    for (int t = 0; t < m; ++t)
      for (int b = 0; b < nb; ++b) half_x(halves + size_t(t) * nb + b, X[t].q + size_t(b) * ML_QK);
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    const int row0 = p * ML_PANEL_ROWS, lo = std::max(r0, row0), hi = std::min(r1, row0 + ML_PANEL_ROWS);
    const uint8_t *units = q + size_t(p) * nb * 8 * 64;
    const size_t d0 = size_t(p) * nb * ML_PANEL_ROWS;
    for (int t = 0; t < m; ++t) {
      typename Width::Acc acc[4] = {Width::zero(), Width::zero(), Width::zero(), Width::zero()};
      const auto step = [&](int b, auto k) {
        const uint8_t *ub = units + size_t(b) * 8 * 64;
        const size_t di = d0 + size_t(b) * ML_PANEL_ROWS, ahead = kPrefetchBytes / (8 * 64) * ML_PANEL_ROWS;
        if (t == 0) {  // the first token streams the panel from DRAM, the others find it in cache
          for (size_t l = 0; l < 8; ++l) ml::prefetch(ub + kPrefetchBytes + l * 64);
          ml::prefetch(W->d + di + ahead);
          ml::prefetch(W->d2 + di + ahead);
        }
        HalfX local;
        const HalfX *h = halves ? halves + size_t(t) * nb + b : (half_x(&local, X[t].q + size_t(b) * ML_QK), &local);
        const auto w = Int::load_q8(reinterpret_cast<const int8_t *>(ub));
        const float dx = X[t].d[b];
        auto &a = acc[decltype(k)::value];
        a = Width::fold(a, Int::dot(w, Int::template prep<false>(h->lo, h->slo)), W->d + di, dx);
        a = Width::fold(a, Int::dot(w, Int::template prep<false>(h->hi, h->shi)), W->d2 + di, dx);
      };
      blocks_by_four(nb, step);
      Width::store(Y + size_t(t) * ldy + row0, Width::add(Width::add(acc[0], acc[1]), Width::add(acc[2], acc[3])),
                   lo - row0, hi - row0);
      if (W->m) offsets_panel<false>(Y + size_t(t) * ldy, W, X[t], p, lo, hi);
    }
  }
}

// Layout 1 or 2, by W->layout; layout 1 with d2 and m too.
template <class Width, class Int, bool Q4>
inline void panels_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (!Q4 && W->d2)
    panel_halves<Width, Int>(y, 0, W, x, 1, r0, r1);
  else if (W->layout == ML_LAYOUT_PANEL16_F16)
    panel_matvec<Width, Int, Q4, true>(y, W, x, r0, r1);
  else
    panel_matvec<Width, Int, Q4, false>(y, W, x, r0, r1);
}
template <class Width, class Int, bool Q4>
inline void panels_matmul(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
  if (!Q4 && W->d2)
    panel_halves<Width, Int>(Y, ldy, W, X, m, r0, r1);
  else if (W->layout == ML_LAYOUT_PANEL16_F16)
    panel_matmul<Width, Int, Q4, true>(Y, ldy, W, X, m, r0, r1);
  else
    panel_matmul<Width, Int, Q4, false>(Y, ldy, W, X, m, r0, r1);
}

// A Width of four 4-row registers (128-bit families: NEON, WASM SIMD128). The family supplies
// only its 4-lane part Q: types I (int32 x4) and F (float x4), kTokens, and
//   zero(), fold(F p, I s, const float *d4, float dx) = p + (float(s)·d4)·dx, add(F, F),
//   store(float *y4, F v, int lo, int hi): lanes i of v with lo <= i < hi into y4[i].
template <class Q>
struct Quads {
  static constexpr int kTokens = Q::kTokens;
  struct Sums {
    typename Q::I v[4];  // rows 4k .. 4k+3 in v[k]
  };
  struct Acc {
    typename Q::F v[4];
  };
  static Acc zero() { return {{Q::zero(), Q::zero(), Q::zero(), Q::zero()}}; }
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {
    for (int k = 0; k < 4; ++k) a.v[k] = Q::fold(a.v[k], s.v[k], d + 4 * k, dx);
    return a;
  }
  static Acc add(Acc a, const Acc &b) {
    for (int k = 0; k < 4; ++k) a.v[k] = Q::add(a.v[k], b.v[k]);
    return a;
  }
  static void store(float *y, const Acc &a, int lo, int hi) {
    for (int k = 0; k < 4; ++k) Q::store(y + 4 * k, a.v[k], lo - 4 * k, hi - 4 * k);
  }
};

// The compute ceiling of a set (ml_bench peak), two loops on data that never leaves registers / L1:
//   kind 0, the dot instruction alone: Int::peak_dots(iters, sink) where the Int has one (a
//     register-only chain of the family's multiply-add instruction, its own operands as inputs so
//     nothing is loop-invariant); returns the int8 multiply-adds done, or 0 if the Int has none;
//   kind 1, the driver's block step: Int::dot of 4 weight blocks held as load_q8 holds them against
//     x blocks prepared from a 1 KiB L1 ring (a new address every step: nothing to hoist), folded
//     into the 4 partial sums as the kernels do (Width::fold) — what the matmul can reach at best.
// `sink` receives a value of the results so that no work is dead.
template <class Int, class = void>
struct HasPeakDots {
  static constexpr bool value = false;
};
template <class Int>
struct HasPeakDots<Int, decltype(void(Int::peak_dots(int64_t(0), static_cast<int32_t *>(nullptr))))> {
  static constexpr bool value = true;
};

template <class Width, class Int>
inline int64_t peak(int kind, int64_t iters, int32_t *sink) {
  if (kind == 0) {
    if constexpr (HasPeakDots<Int>::value)
      return Int::peak_dots(iters, sink);
    else
      return 0;
  }
  constexpr int kRing = 32, kW = 4;  // x blocks in the ring; weight blocks reused by every step
  alignas(64) int8_t w8[kW * 8 * 64], xr[kRing * ML_QK];
  for (int i = 0; i < kW * 8 * 64; ++i) w8[i] = int8_t((i * 37 + int(*sink)) % 127);
  for (int i = 0; i < kRing * ML_QK; ++i) xr[i] = int8_t((i * 53) % 127 - 63);
  float d[ML_PANEL_ROWS];
  for (int i = 0; i < ML_PANEL_ROWS; ++i) d[i] = 1.0f / float(i + 1);
  const auto w0 = Int::load_q8(w8), w1 = Int::load_q8(w8 + 512), w2 = Int::load_q8(w8 + 1024),
             w3 = Int::load_q8(w8 + 1536);
  typename Width::Acc acc[4] = {Width::zero(), Width::zero(), Width::zero(), Width::zero()};
  for (int64_t i = 0; i < iters; ++i) {
    const int8_t *xb = xr + (i % kRing) * ML_QK;
    const auto x = Int::template prep<false>(xb, int32_t(i));
    acc[0] = Width::fold(acc[0], Int::dot(w0, x), d, 0.5f);
    acc[1] = Width::fold(acc[1], Int::dot(w1, x), d, 0.5f);
    acc[2] = Width::fold(acc[2], Int::dot(w2, x), d, 0.5f);
    acc[3] = Width::fold(acc[3], Int::dot(w3, x), d, 0.5f);
  }
  float out[ML_PANEL_ROWS];
  Width::store(out, Width::add(Width::add(acc[0], acc[1]), Width::add(acc[2], acc[3])), 0, ML_PANEL_ROWS);
  uint32_t h = 0;
  for (float v : out) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h ^= bits;
  }
  *sink = int32_t(h);
  return iters * kW * ML_PANEL_ROWS * ML_QK;
}

// Layout 0 (rows) has no weight reuse across tokens worth a kernel: matmul is the ISA's row matvec
// once per token.
template <class RowsMatvec>
inline void rows_matmul(RowsMatvec matvec, float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                        int r1) {
  for (int t = 0; t < m; ++t) matvec(Y + size_t(t) * ldy, W, &X[t], r0, r1);
}

}  // namespace ml::driver

// The four ABI kernels of override set `set` (kernels/kernel_table.h): layouts 1 and 2 through the
// driver with (Width, Int), layout 0 through the set's own row matvecs rows_q8 / rows_q4 (functions with
// the matvec signature). Plus ml_k_peak_<set>, the set's compute ceiling (driver::peak; used by
// ml_bench peak, not a kernel of the table).
#define ML_PANEL_KERNELS(set, Width, Int, rows_q8, rows_q4)                                                        \
  extern "C" void ml_k_matvec_q8_##set(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {         \
    if (W->layout != ML_LAYOUT_ROWS) return ml::driver::panels_matvec<Width, Int, false>(y, W, x, r0, r1);         \
    rows_q8(y, W, x, r0, r1);                                                                                      \
  }                                                                                                                \
  extern "C" void ml_k_matvec_q4_##set(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {         \
    if (W->layout != ML_LAYOUT_ROWS) return ml::driver::panels_matvec<Width, Int, true>(y, W, x, r0, r1);          \
    rows_q4(y, W, x, r0, r1);                                                                                      \
  }                                                                                                                \
  extern "C" void ml_k_matmul_q8_##set(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, \
                                       int r1) {                                                                   \
    if (W->layout != ML_LAYOUT_ROWS) return ml::driver::panels_matmul<Width, Int, false>(Y, ldy, W, X, m, r0, r1); \
    ml::driver::rows_matmul(rows_q8, Y, ldy, W, X, m, r0, r1);                                                     \
  }                                                                                                                \
  extern "C" void ml_k_matmul_q4_##set(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, \
                                       int r1) {                                                                   \
    if (W->layout != ML_LAYOUT_ROWS) return ml::driver::panels_matmul<Width, Int, true>(Y, ldy, W, X, m, r0, r1); \
    ml::driver::rows_matmul(rows_q4, Y, ldy, W, X, m, r0, r1);                                                     \
  }                                                                                                                \
  extern "C" int64_t ml_k_peak_##set(int kind, int64_t iters, int32_t *sink) {                                     \
    return ml::driver::peak<Width, Int>(kind, iters, sink);                                                       \
  }
