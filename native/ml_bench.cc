// ml_bench: kernel and model benchmarks of this build (modes kernels, bandwidth, peak, decode,
// prefill, roofline, sample: kUsage below is the one description, printed by --help). Numbers are
// medians of repeated timed runs; --tsv prints machine-readable lines (tools/bench_isas.py).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if !defined(_WIN32) && !defined(__EMSCRIPTEN__)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#define ML_BENCH_LOAD 1
#endif

#include "kernels/binding.h"
#include "kernels/format/f16.h"
#include "native/cli.h"
#include "native/options.h"
#include "runtime/ml.h"
#include "runtime/threads.h"
#include "runtime/sampler.h"
#include "simd/compiler.h"
#include "simd/isa_table.h"
#include "simd/stream_read.h"

// The compute ceiling of each override set with panel kernels (kernels/panel_driver.h,
// driver::peak); only the one this build binds for matmul_q8 must exist at link time.
using ml_peak_fn = int64_t(int kind, int64_t iters, int32_t *sink);
extern "C" {
#define ML_PEAK_DECL(arg, name, ...) ml_peak_fn ml_k_peak_##name;
ML_ISA_TABLE(ML_PEAK_DECL, _)
#undef ML_PEAK_DECL
ml_peak_fn ml_k_peak_hwy;
}

namespace {

using ml::cli::now_ms;

const char kUsage[] =
    "usage: ml_bench kernels [--all-variants] [--quick] [--seconds S] [--pool-mb N] [--tsv]\n"
    "       ml_bench bandwidth [-t N] [--tsv]\n"
    "       ml_bench peak [-t N] [--seconds S] [--tsv]\n"
    "       ml_bench decode MODEL.mlb|.gguf... [-t N[,M...]] [-n TOKENS] [--depth D[,D...]] [--kv-type f32|f16|q8_0]\n"
    "                [--load N] [--profile] [--tsv]\n"
    "       ml_bench prefill MODEL.mlb|.gguf... [-t N[,M...]] [-n TOKENS] [--load N] [--tsv]\n"
    "       ml_bench roofline MODEL.mlb|.gguf... [-t N[,M...]] [-n TOKENS] [--load N] [--profile] [--tsv]\n"
    "       ml_bench sample MODEL.mlb|.gguf... [-t N[,M...]] [-n TOKENS] [--tsv]\n"
    "\n"
    "Benchmarks this build (ISA as in ml_run --version). kernels: every kernel at stories110M and\n"
    "TinyLlama shapes, cache-resident and streaming from DRAM; bandwidth: DRAM read GB/s with 1..N\n"
    "threads; peak: int8 multiply-adds/s with 1..N threads (the dot instruction alone, register-only,\n"
    "and the matmul's block step in L1); decode: tok/s per model and thread count (--depth D,...:\n"
    "after a context of D positions, filled by prefill, for each D; the table gains a depth column,\n"
    "--tsv a last field); prefill: prompt tok/s of one batch of -n tokens and its share of that peak;\n"
    "roofline: bandwidth and decode, plus decode tok/s as a\n"
    "share of the bandwidth ceiling; sample: ml_sample's time (temperature 1, top-p 0.9 and 1.0,\n"
    "on the model's logits, on Zipf-shaped logits like a trained model's, and on flat logits, the\n"
    "worst case), the sampler chain's (llama-server's defaults) and ml_logprobs' (5 top entries),\n"
    "as a share of a decode step. Models: tools/gen_random.py --preset stories15m|stories110m|\n"
    "tinyllama (tools/bench_isas.py and tools/roofline.sh make them).\n";
const char kEpilogue[] =
    "For stable numbers on a shared machine run it alone, pinned, at raised priority (as root):\n"
    "  setsid -w sh -c 'echo -20 > /proc/$$/autogroup; exec nice -n -20 taskset -c 0,1 ml_bench ...'\n";

struct Opts {
  std::string mode;
  std::vector<std::string> models;
  std::vector<int> threads;
  long tokens = 64;
  std::vector<int> depths;  // decode --depth: positions in the KV cache before the timed steps
  int kv_type = 0;          // decode --kv-type (ml_options.kv_type)
  double seconds = 0.25;
  long pool_mb = 512;  // weights streamed by the "dram" rows
  bool all_variants = false, tsv = false, quick = false;  // quick: kernels at the 110M shapes only
  long load = 0;         // --load: busy-loop processes beside the measurements
  bool profile = false;  // --profile: the pool's jobs, waits and moved chunks per decode step
  ml::hub::Options hf;  // --hf ...: a model by name (hub/hub.h)
};

// The median of the n values at v (sorted in place: the middle one).
double median(double *v, size_t n) {
  std::sort(v, v + n);
  return v[n / 2];
}

// Median over 5 runs of the time per call of f(), each run calling it for >= `seconds`.
template <class F>
double time_per_call_ms(double seconds, F f) {
  f();  // warm-up
  double runs[5];
  for (double &r : runs) {
    long calls = 0;
    const double t0 = now_ms();
    double t;
    do {
      f();
      ++calls;
      t = now_ms() - t0;
    } while (t < seconds * 1000.0 / 5.0);
    r = t / double(calls);
  }
  return median(runs, 5);
}

uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint32_t rnd() {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return static_cast<uint32_t>((g_rng * 0x2545F4914F6CDD1Dull) >> 32);
}

// Buffers of 32 MiB or more (the bandwidth probe's, the kernels' DRAM pools) in huge pages where the
// system has them, as the models' weights are (ml_options.map_weights, runtime/model.h): through
// 4 KiB pages the same reads measured 10-20 % slower, a ceiling of the pages, not of the memory.
void *aligned(size_t bytes) {
  void *p = ml::ml_alloc_large(bytes);
  if (p == nullptr) {
    std::fprintf(stderr, "ml_bench: cannot allocate %zu bytes\n", bytes);
    std::exit(ML_E_NOMEM);
  }
  return p;
}

// A pool of `threads` threads for the bandwidth and peak loops; exits with the error if it cannot start.
void start_pool(ml::ThreadPool *pool, int threads) {
  if (pool->start(threads) == ML_OK) return;
  std::fprintf(stderr, "ml_bench: %s\n", ml_last_error());
  std::exit(ML_E_ARG);
}

// ---------------------------------------------------------------- kernels

struct Row {
  std::string kernel, impl, shape, layout, regime;
  double ms, gbs, gops;
};

void print_row(const Opts &o, const Row &r) {
  if (o.tsv)
    std::printf("kernel\t%s\t%s\t%s\t%s\t%s\t%.6f\t%.3f\t%.3f\n", r.kernel.c_str(), r.impl.c_str(), r.shape.c_str(),
                r.layout.c_str(), r.regime.c_str(), r.ms, r.gbs, r.gops);
  else
    std::printf("%-12s %-11s %-26s %-11s %-6s %10.4f %9.2f %9.2f\n", r.kernel.c_str(), r.impl.c_str(), r.shape.c_str(),
                r.layout.c_str(), r.regime.c_str(), r.ms * 1000.0, r.gbs, r.gops);
  std::fflush(stdout);
}

struct MatShape {
  const char *name;
  int rows, cols;
};
const MatShape kMatShapes[] = {
    {"110M wq 768x768", 768, 768},      {"110M w1 2048x768", 2048, 768},   {"110M w2 768x2048", 768, 2048},
    {"TinyLlama wk 256x2048", 256, 2048}, {"TinyLlama w1 5632x2048", 5632, 2048},
    {"TinyLlama w2 2048x5632", 2048, 5632},
};

// A weight layout's short name (docs/mlb-format.md), as convert.py's --layout spells it.
const char *layout_label(int layout) {
  return layout == ML_LAYOUT_PANEL16_F16 ? "panel16-f16" : layout == ML_LAYOUT_PANEL16 ? "panel16" : "rows";
}

// Quantized matvec: cache-resident (the 768x768 matrix reused) and streaming (rotating copies).
template <class Fn>
void bench_qmatvec(const Opts &o, const char *kernel, const char *impl, Fn *fn, ml_type type) {
  const size_t pool_q = size_t(o.pool_mb) << 20;  // streaming pool of quant bytes
  static uint8_t *qpool = nullptr;
  static float *dpool = nullptr;
  static uint16_t *dhpool = nullptr;  // the same scales as binary16 (layout 2)
  if (!qpool) {
    qpool = static_cast<uint8_t *>(aligned(pool_q));
    for (size_t i = 0; i < pool_q; i += 4) {
      const uint32_t r = rnd();
      std::memcpy(qpool + i, &r, 4);
    }
    for (size_t i = 0; i < pool_q; ++i)  // Q8 quants stay in [-127, 127]
      if (qpool[i] == 0x80) qpool[i] = 0x81;
    // One scale per 32 weights: 32 quant bytes for Q8_0 but 16 for Q4_0, so size for Q4_0.
    const size_t nd = pool_q / (ML_QK / 2);
    dpool = static_cast<float *>(aligned(nd * sizeof(float)));
    for (size_t i = 0; i < nd; ++i) dpool[i] = 0.001f * float(1 + i % 7);
    dhpool = static_cast<uint16_t *>(aligned(nd * sizeof(uint16_t)));
    for (size_t i = 0; i < nd; ++i) dhpool[i] = ml::f16_from_f32(dpool[i]);
  }
  for (const MatShape &s : kMatShapes) {
    if (o.quick && std::strncmp(s.name, "110M", 4) != 0) continue;
    const size_t qbytes = type == ML_TYPE_Q4_0 ? size_t(s.rows) * s.cols / 2 : size_t(s.rows) * s.cols;
    const size_t nd = size_t(s.rows) * (s.cols / ML_QK), dbytes = nd * sizeof(float);
    std::vector<int8_t> xq(static_cast<size_t>(s.cols));
    std::vector<float> xd(static_cast<size_t>(s.cols / ML_QK), 0.01f), y(static_cast<size_t>(s.rows));
    for (int8_t &v : xq) v = int8_t(int(rnd() % 255) - 127);
    std::vector<int32_t> xs(static_cast<size_t>(s.cols / ML_QK));
    ml_block_sums_q8(xs.data(), xq.data(), s.cols);
    ml_qact x{xq.data(), xd.data(), xs.data(), s.cols};
    // Any bytes are valid weights, and every shape has a multiple of 16 rows: the same pool serves
    // as row-major blocks (layout 0) and as 16-row panels (layout 1, and 2 with the scales as halves).
    for (int layout = ML_LAYOUT_ROWS; layout <= ML_LAYOUT_PANEL16_F16; ++layout)
      for (int streaming = 0; streaming <= 1; ++streaming) {
        if (!streaming && s.rows * s.cols > 768 * 2048) continue;  // cache-resident: the small shapes
        const size_t copies = streaming ? pool_q / qbytes : 1;  // >= 2: --pool-mb >= 32
        size_t i = 0;
        const double ms = time_per_call_ms(o.seconds, [&] {
          const size_t c = i++ % copies;
          const bool half = layout == ML_LAYOUT_PANEL16_F16;
          ml_qtensor W{qpool + c * qbytes, half ? nullptr : dpool + c * nd, s.rows, s.cols, uint8_t(type),
                       uint8_t(layout), half ? dhpool + c * nd : nullptr, nullptr, nullptr};
          fn(y.data(), &W, &x, 0, s.rows);
        });
        const size_t bytes = qbytes + (layout == ML_LAYOUT_PANEL16_F16 ? dbytes / 2 : dbytes);
        print_row(o, {kernel, impl, s.name, layout_label(layout), streaming ? "dram" : "cache", ms,
                      double(bytes) / ms / 1e6, 2.0 * s.rows * s.cols / ms / 1e6});
      }
  }
}

template <class Fn>
void bench_matvec_f32(const Opts &o, const char *impl, Fn *fn) {
  const int rows = 768, cols = 768;
  std::vector<float> w(static_cast<size_t>(rows) * cols), x(static_cast<size_t>(cols)), y(static_cast<size_t>(rows));
  for (float &v : w) v = float(int(rnd() % 200) - 100) * 0.01f;
  for (float &v : x) v = float(int(rnd() % 200) - 100) * 0.01f;
  ml_qtensor W{w.data(), nullptr, rows, cols, ML_TYPE_F32, 0, nullptr, nullptr, nullptr};
  const double ms = time_per_call_ms(o.seconds, [&] { fn(y.data(), &W, x.data(), 0, rows); });
  print_row(o, {"matvec_f32", impl, "110M wq 768x768", "rows", "cache", ms, double(w.size()) * 4 / ms / 1e6,
                2.0 * rows * cols / ms / 1e6});
}

// f(impl, fn) for every compiled variant of kernel Kn with --all-variants, else for the bound one.
template <class Kn, class F>
void each_impl(const Opts &o, F f) {
  if (o.all_variants)
    ml::for_each_variant<Kn>(f);
  else
    f(ml::impl_name(ml::BuildKernels::template impl_of<Kn>()), ml::BuildKernels::template fn_of<Kn>());
}

// Vector kernels at the sizes a decode step uses them.
template <class Kn, class Call>
void bench_vec(const Opts &o, const char *shape, double bytes, double ops, Call call) {
  each_impl<Kn>(o, [&](const char *impl, typename Kn::fn *fn) {
    const double ms = time_per_call_ms(o.seconds, [&] { call(fn); });
    print_row(o, {Kn::name, impl, shape, "-", "cache", ms, bytes / ms / 1e6, ops / ms / 1e6});
  });
}

int run_kernels(const Opts &o) {
  if (!o.tsv) {
    std::printf("ml_bench kernels: %s build (Highway target %s); %s\n", ml_build_isa(), ml_hwy_target(),
                o.all_variants ? "every compiled variant" : "the bound implementations");
    std::printf("%-12s %-11s %-26s %-11s %-6s %10s %9s %9s\n", "kernel", "impl", "shape", "layout", "regime", "us/call",
                "GB/s", "GOPS");
  }
  auto mv = [&](auto kn, ml_type t) {
    using Kn = decltype(kn);
    each_impl<Kn>(o, [&](const char *impl, typename Kn::fn *fn) { bench_qmatvec(o, Kn::name, impl, fn, t); });
  };
  mv(ml::kn_matvec_q8{}, ML_TYPE_Q8_0);
  mv(ml::kn_matvec_q4{}, ML_TYPE_Q4_0);
  each_impl<ml::kn_matvec_f32>(o, [&](const char *impl, ml::kn_matvec_f32::fn *fn) { bench_matvec_f32(o, impl, fn); });

  const int H = 5632, D = 2048, HD = 64;
  std::vector<float> a(static_cast<size_t>(H)), b(static_cast<size_t>(H)), c(static_cast<size_t>(H)), vocab(32000);
  for (float &v : a) v = float(int(rnd() % 200) - 100) * 0.02f;
  for (float &v : b) v = float(int(rnd() % 200) - 100) * 0.02f;
  for (float &v : vocab) v = float(int(rnd() % 200) - 100) * 0.05f;
  std::vector<int8_t> q8(static_cast<size_t>(H));
  std::vector<float> d8(static_cast<size_t>(H / ML_QK));
  std::vector<int32_t> s8(static_cast<size_t>(H / ML_QK));
  ml_qact qa{q8.data(), d8.data(), s8.data(), 0};
  bench_vec<ml::kn_quantize_q8>(o, "TinyLlama hidden 5632", 4.0 * H, 3.0 * H, [&](auto *fn) { fn(&qa, a.data(), H); });
  bench_vec<ml::kn_rmsnorm>(o, "TinyLlama dim 2048", 8.0 * D, 4.0 * D,
                            [&](auto *fn) { fn(c.data(), a.data(), b.data(), D, 1e-5f); });
  bench_vec<ml::kn_softmax>(o, "vocab 32000", 4.0 * 32000, 20.0 * 32000, [&](auto *fn) {
    std::memcpy(c.data(), a.data(), 4 * 1024);  // keep inputs bounded: softmax of the same values
    fn(vocab.data(), 32000);
  });
  bench_vec<ml::kn_rope>(o, "TinyLlama 32/4 heads x 64", 4.0 * (32 + 4) * HD * 2, 6.0 * (32 + 4) * HD / 2,
                         [&](auto *fn) { fn(c.data(), c.data() + 32 * HD, a.data(), b.data(), HD, 32, 4); });
  bench_vec<ml::kn_silu_mul>(o, "TinyLlama hidden 5632", 8.0 * H, 20.0 * H, [&](auto *fn) {
    std::memcpy(c.data(), a.data(), sizeof(float) * H);
    fn(c.data(), b.data(), H);
  });
  bench_vec<ml::kn_add>(o, "TinyLlama dim 2048", 8.0 * D, 1.0 * D, [&](auto *fn) { fn(c.data(), b.data(), D); });
  bench_vec<ml::kn_dot_f32>(o, "head_dim 64", 8.0 * HD, 2.0 * HD, [&](auto *fn) {
    volatile float s = fn(a.data(), b.data(), HD);
    (void)s;
  });
  bench_vec<ml::kn_axpy_f32>(o, "head_dim 64", 8.0 * HD, 2.0 * HD, [&](auto *fn) { fn(c.data(), 0.5f, a.data(), HD); });
  const int R = 32;  // attention: one block of positions of a kv head (runtime/state.h kKvBlock)
  bench_vec<ml::kn_dot_f32_cols>(o, "32 positions x head_dim 64", 4.0 * (R + 1) * HD, 2.0 * R * HD, [&](auto *fn) {
    fn(c.data(), a.data(), b.data(), size_t(R), R, HD, 8.0f);
  });
  bench_vec<ml::kn_axpy_f32_rows>(o, "32 rows x head_dim 64", 4.0 * (R + 2) * HD, 2.0 * R * HD, [&](auto *fn) {
    fn(c.data(), vocab.data(), a.data(), size_t(HD), R, HD);
  });
  bench_vec<ml::kn_exp_f32>(o, "vocab 32000", 4.0 * 32000, 15.0 * 32000, [&](auto *fn) {
    fn(vocab.data() + 16000, vocab.data(), 16000);
  });
  return 0;
}

// ---------------------------------------------------------------- bandwidth

// DRAM read GB/s with `threads` threads (median of 5 passes over 1 GiB, each thread its own part),
// printed as the bandwidth mode's line.
double measure_bandwidth(const Opts &o, int threads) {
  static uint8_t *buf = nullptr;
  const size_t n = size_t(1) << 30;
  if (!buf) {
    buf = static_cast<uint8_t *>(aligned(n));
    for (size_t i = 0; i < n; i += 4096) std::memset(buf + i, int(i >> 12), 4096);
  }
  ml::ThreadPool pool;
  start_pool(&pool, threads);
  volatile uint64_t sink = 0;
  const double ms = time_per_call_ms(std::max(o.seconds, 0.5), [&] {
    pool.run([&](int tid, int nth) {
      const size_t part = (n / size_t(nth)) & ~size_t(63);
      sink = sink + ml::stream_read_sum(buf + part * size_t(tid), part);
    });
  });
  const double gbs = double(n) / ms / 1e6;
  if (o.tsv)
    std::printf("bandwidth\t%d\t%.2f\n", threads, gbs);
  else
    std::printf("DRAM read bandwidth, %d thread%s: %.1f GB/s\n", threads, threads == 1 ? "" : "s", gbs);
  std::fflush(stdout);
  return gbs;
}

int run_bandwidth(const Opts &o) {
  const int max_t = o.threads.empty() ? ml::online_cpus() : o.threads.back();
  for (int t = 1; t <= max_t; ++t) measure_bandwidth(o, t);
  return 0;
}

// ---------------------------------------------------------------- peak

// The scalar build's ceiling: 16 chains of int8 products into int32, both kinds alike.
[[maybe_unused]] int64_t scalar_peak(int, int64_t iters, int32_t *sink) {  // unused where the set has its own peak
  int32_t acc[16];
  const int32_t w = 3 + *sink % 8;
  for (int k = 0; k < 16; ++k) acc[k] = k + 1;
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 16; ++k) acc[k] += w * int32_t(int8_t(acc[k]));
  int32_t s = 0;
  for (int k = 0; k < 16; ++k) s ^= acc[k];
  *sink = s;
  return iters * 16;
}

constexpr ml::ImplId kPeakImpl = ml::BuildKernels::impl_matmul_q8;

ml_peak_fn *peak_fn() {
#define ML_PEAK_PICK(arg, name, ...)                                                           \
  if constexpr (kPeakImpl == static_cast<int>(ml::Isa::name) && kPeakImpl != static_cast<int>(ml::Isa::scalar)) \
    return &ml_k_peak_##name;                                                                    \
  else
  ML_ISA_TABLE(ML_PEAK_PICK, _)
#undef ML_PEAK_PICK
  if constexpr (kPeakImpl == ml::kHwy) return &ml_k_peak_hwy; else return &scalar_peak;
}

// G int8 multiply-adds/s of `threads` threads running peak kind `kind` (0: the dot instruction
// alone, 1: the driver's block step) side by side; 0 if the set has no kind 0 loop.
double measure_peak(int kind, int threads, double seconds) {
  ml_peak_fn *fn = peak_fn();
  int32_t probe = 0;
  if (fn(kind, 1, &probe) == 0) return 0.0;
  int64_t iters = 1024;  // grow until one call takes >= 10 ms
  for (;;) {
    const double t0 = now_ms();
    fn(kind, iters, &probe);
    if (now_ms() - t0 >= 10.0 || iters >= (int64_t(1) << 40)) break;
    iters *= 2;
  }
  ml::ThreadPool pool;
  start_pool(&pool, threads);
  std::vector<int32_t> sinks(static_cast<size_t>(threads) * 16, 0);  // a cache line apart
  int64_t macs = 0;
  const double ms = time_per_call_ms(seconds, [&] {
    pool.run([&](int tid, int) {
      const int64_t n = fn(kind, iters, &sinks[size_t(tid) * 16]);
      if (tid == 0) macs = n;
    });
  });
  return double(macs) * threads / ms / 1e6;
}

struct Peak {
  double dot, step;  // G MAC/s; dot 0 where the set has no instruction-only loop
  double best() const { return dot > 0.0 ? dot : step; }
};

Peak measure_peaks(int threads, double seconds) { return {measure_peak(0, threads, seconds), measure_peak(1, threads, seconds)}; }

int run_peak(const Opts &o) {
  const int max_t = o.threads.empty() ? ml::online_cpus() : o.threads.back();
  if (!o.tsv) {
    std::printf("ml_bench peak: %s build, panel set %s; G int8 multiply-adds/s\n", ml_build_isa(), ml::impl_name(kPeakImpl));
    std::printf("%7s %16s %16s\n", "threads", "dot instruction", "block step");
  }
  for (int t = 1; t <= max_t; ++t) {
    const Peak p = measure_peaks(t, o.seconds);
    if (o.tsv)
      std::printf("peak\t%s\t%d\t%.2f\t%.2f\n", ml::impl_name(kPeakImpl), t, p.dot, p.step);
    else if (p.dot > 0.0)
      std::printf("%7d %16.1f %16.1f\n", t, p.dot, p.step);
    else
      std::printf("%7d %16s %16.1f\n", t, "-", p.step);
    std::fflush(stdout);
  }
  return 0;
}

// ---------------------------------------------------------------- decode

struct Decode {
  double tok_s;
  double jobs, wait_us, stolen, solo;  // per step, with --profile
  double step_us, job_us, busy_us;  // per step: mean step time, caller inside jobs, other threads in units
  ml_model_info info;
};

// --mmap: the models' weights read through their file mappings (ml_options.map_weights), for every
// model a mode opens.
bool g_map_weights = false;

// Opens a model for a measurement (no tokenizer): NULL, with the error on stderr, if it fails.
ml_ctx *open_model(const std::string &path, int threads, int max_seq, int batch, ml_model_info *info, int kv_type = 0) {
  ml_options opt;
  ml_options_init(&opt);
  opt.kv_type = kv_type;
  opt.map_weights = g_map_weights;
  opt.n_threads = threads;
  opt.max_seq = max_seq;
  opt.batch = batch;
  ml_ctx *ctx = nullptr;
  if (ml_open(&ctx, path.c_str(), nullptr, &opt) != ML_OK) {
    std::fprintf(stderr, "ml_bench: %s\n", ml_last_error());
    return nullptr;
  }
  ml_get_info(ctx, info);
  return ctx;
}

// Decode tok/s: feed BOS and 7 tokens (depth < 0), or fill `depth` positions by prefill, then
// `tokens` greedy steps from there (median of 3 passes; each pass rewinds to the same position).
bool measure_decode(const std::string &path, int threads, int tokens, int depth, int kv_type, Decode *out) {
  const int start = depth < 0 ? 8 : depth;
  ml_ctx *ctx = open_model(path, threads, start + tokens + 16, 0, &out->info, kv_type);
  if (!ctx) return false;
  if (start + tokens > out->info.max_seq) {
    std::fprintf(stderr, "ml_bench: depth %d + %d tokens is past the context of %d positions (tools/gen_random.py "
                 "--seq makes a longer one)\n", start, tokens, out->info.max_seq);
    ml_close(ctx);
    return false;
  }
  const float *logits = nullptr;
  std::vector<int> fill(static_cast<size_t>(std::max(start, 1)));
  for (int p = 0; p < start; ++p) fill[size_t(p)] = p == 0 ? 1 : (p * 7919) % out->info.vocab;
  for (int p = 0; p < start; p += out->info.batch) {
    const int n = std::min(out->info.batch, start - p);
    if (ml_eval_batch(ctx, fill.data() + p, n, p, 0, &logits) != ML_OK) {
      std::fprintf(stderr, "ml_bench: %s\n", ml_last_error());
      ml_close(ctx);
      return false;
    }
  }
  const ml::PoolStats p0 = ml::pool_stats();
  double runs[3], total_ms = 0;
  for (double &r : runs) {
    int tok = start == 0 ? 1 : (start * 7919) % out->info.vocab, pos = start;
    const double t0 = now_ms();
    for (int i = 0; i < tokens; ++i, ++pos) {
      if (i > 0) tok = ml::argmax(logits, out->info.vocab);
      ml_eval(ctx, tok, pos, &logits);
    }
    total_ms += now_ms() - t0;
    r = tokens / (now_ms() - t0) * 1000.0;
  }
  out->tok_s = median(runs, 3);
  const ml::PoolStats p1 = ml::pool_stats();
  const double steps = 3.0 * tokens;
  out->jobs = double(p1.jobs - p0.jobs) / steps;
  out->wait_us = double(p1.wait_ns - p0.wait_ns) / 1e3 / steps;
  out->stolen = double(p1.stolen - p0.stolen) / steps;
  out->solo = double(p1.solo - p0.solo) / steps;
  out->step_us = total_ms * 1e3 / steps;
  out->job_us = double(p1.job_ns - p0.job_ns) / 1e3 / steps;
  out->busy_us = double(p1.busy_ns - p0.busy_ns) / 1e3 / steps;
  ml_close(ctx);
  return true;
}

// --load N: N child processes spinning until the destructor ends them. Each its own session (and
// so its own autogroup on Linux, like a program started elsewhere), ordinary priority inherited,
// no pinning.
class Load {
 public:
  bool start(long n) {
#if defined(ML_BENCH_LOAD)
    for (long i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid < 0) {
        std::fprintf(stderr, "ml_bench: --load: cannot start busy process %ld of %ld\n", i + 1, n);
        return false;
      }
      if (pid == 0) {
        setsid();
        for (volatile unsigned long spin = 0;; spin = spin + 1) {
        }
      }
      pids_.push_back(pid);
    }
    return true;
#else
    if (n > 0) std::fprintf(stderr, "ml_bench: --load needs fork (POSIX); this build has none\n");
    return n == 0;
#endif
  }
  ~Load() {
#if defined(ML_BENCH_LOAD)
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
#endif
  }

 private:
#if defined(ML_BENCH_LOAD)
  std::vector<pid_t> pids_;
#endif
};

// Prompt tok/s: one ml_eval_batch of `tokens` tokens from position 0 (median of 3).
bool measure_prefill(const std::string &path, int threads, int tokens, Decode *out) {
  ml_ctx *ctx = open_model(path, threads, tokens, tokens, &out->info);
  if (!ctx) return false;
  std::vector<int> prompt(static_cast<size_t>(tokens));
  for (int t = 0; t < tokens; ++t) prompt[size_t(t)] = t == 0 ? 1 : (t * 7919) % out->info.vocab;
  double runs[3];
  for (double &r : runs) {
    const float *logits = nullptr;
    const double t0 = now_ms();
    ml_eval_batch(ctx, prompt.data(), tokens, 0, 0, &logits);
    r = tokens / (now_ms() - t0) * 1000.0;
  }
  out->tok_s = median(runs, 3);
  ml_close(ctx);
  return true;
}

const char *type_name(int t) { return t == 8 ? "Q8_0" : t == 2 ? "Q4_0" : "F32"; }

// A model's shape as the tables print it: dim/hidden/layers/heads/kv.
std::string shape_of(const ml_model_info &i) {
  return std::to_string(i.dim) + "/" + std::to_string(i.hidden_dim) + "/" + std::to_string(i.n_layers) + "/" +
         std::to_string(i.n_heads) + "/" + std::to_string(i.n_kv_heads);
}

// The modes that measure models (decode, prefill, roofline, sample): false, with the error on
// stderr, without a model; else the thread counts, -t's or by default 1 and (with all_cpus) every CPU.
bool model_mode(const Opts &o, bool all_cpus, std::vector<int> *threads) {
  if (o.models.empty()) {
    std::fprintf(stderr, "ml_bench: %s needs at least one MODEL.mlb (ml_bench --help)\n", o.mode.c_str());
    return false;
  }
  *threads = o.threads;
  if (threads->empty()) {
    threads->push_back(1);
    if (all_cpus && ml::online_cpus() > 1) threads->push_back(ml::online_cpus());
  }
  return true;
}

// Matrix multiply-adds of a prompt of n tokens: every layer's seven matrices for each token, the
// classifier for the last (ml_eval_batch without all_logits). Attention is not counted.
double prompt_macs(const ml_model_info &i, int n) {
  const double dim = i.dim, qd = double(i.head_dim) * i.n_heads, kv = double(i.head_dim) * i.n_kv_heads;
  const double hid = i.hidden_dim;
  const double layer = qd * dim * 2 + 2 * kv * dim + 3 * hid * dim;  // wq wo, wk wv, w1 w3 w2
  return layer * i.n_layers * n + double(i.vocab) * dim;
}

int run_prefill(const Opts &o) {
  std::vector<int> threads;
  if (!model_mode(o, true, &threads)) return ML_E_ARG;
  std::vector<Peak> peaks;
  for (int t : threads) peaks.push_back(measure_peaks(t, o.seconds));
  if (!o.tsv)
    std::printf("%-28s %-5s %-11s %3s %6s %12s %9s %8s %8s %9s\n", "model (dim/hidden/layers/heads/kv)", "type",
                "layout",
                "thr", "tokens", "prompt tok/s", "G MAC/s", "% peak", "% step", "MB/token");
  for (const std::string &m : o.models)
    for (size_t ti = 0; ti < threads.size(); ++ti) {
      const int t = threads[ti];
      Decode d;
      if (!measure_prefill(m, t, o.tokens, &d)) return ML_E_IO;
      const std::string shape = shape_of(d.info);
      const double gmacs = prompt_macs(d.info, o.tokens) / (o.tokens / d.tok_s) / 1e9;
      const double pk = 100.0 * gmacs / peaks[ti].best(), ps = 100.0 * gmacs / peaks[ti].step;
      const double mb = double(d.info.weight_bytes) / 1e6;
      if (o.tsv)
        std::printf("prefill\t%s\t%s\t%s\t%d\t%d\t%.2f\t%.2f\t%.1f\t%.1f\t%.3f\n", m.c_str(), shape.c_str(),
                    type_name(d.info.wtype), t, int(o.tokens), d.tok_s, gmacs, pk, ps, mb);
      else
        std::printf("%-28s %-5s %-11s %3d %6d %12.1f %9.1f %7.1f%% %7.1f%% %9.1f\n", shape.c_str(), type_name(d.info.wtype),
                    layout_label(d.info.layout), t, int(o.tokens), d.tok_s, gmacs, pk, ps, mb);
      std::fflush(stdout);
    }
  return 0;
}

// Sampling against decoding: `tokens` steps, each ml_eval timed, then ml_sample on its logits with
// temperature 1 and top-p 0.9 and with top-p 1 (multinomial), each timed; the next token is the
// top-p draw. Then top-p 0.9 on Zipf-shaped logits (p ~ rank^-1.5 over a shuffled vocabulary: a
// nucleus of some 60 tokens among thousands of candidates, like a trained model's distribution) and
// on flat logits (all equal: every entry is a candidate and the nucleus holds 90 % of the
// vocabulary). Then the sampler chain as llama-server's defaults set it (ml_sample_chain: top_k 40,
// top_p 0.95, min_p 0.05, temperature 0.8, repeat_penalty 1.1 over the last 64 tokens), and
// ml_logprobs with 5 top entries, on each step's logits. Medians over the steps.
struct SampleCost {
  double step_ms, ms[6];  // ms: top-p, multinomial, zipf, flat, chain, logprobs (the table's order)
  ml_model_info info;
};

bool measure_sample(const std::string &path, int threads, int tokens, SampleCost *out) {
  ml_ctx *ctx = open_model(path, threads, tokens + 16, 0, &out->info);
  if (!ctx) return false;
  const int vocab = out->info.vocab;
  std::vector<double> step, topp, mult, flat, chain, lp;
  const float *logits = nullptr;
  int tok = 1, pos = 0;
  std::vector<int> history;
  for (; pos < 8; ++pos) ml_eval(ctx, tok = (pos * 7919) % vocab, pos, &logits), history.push_back(tok);
  std::vector<float> copy(static_cast<size_t>(vocab));
  ml_sampling chain_cfg;
  ml_sampling_default(&chain_cfg);
  chain_cfg.top_k = 40;
  chain_cfg.top_p = 0.95f;
  chain_cfg.min_p = 0.05f;
  chain_cfg.temperature = 0.8f;
  chain_cfg.repeat_penalty = 1.1f;
  ml_logprob top[5];
  const auto timed = [](std::vector<double> *ms, auto f) {  // f's time appended to *ms
    const double t0 = now_ms();
    f();
    ms->push_back(now_ms() - t0);
  };
  for (int i = 0; i < tokens; ++i, ++pos) {
    timed(&step, [&] { ml_eval(ctx, tok, pos, &logits); });
    std::memcpy(copy.data(), logits, copy.size() * sizeof(float));
    ml_sampler_set(ctx, 1.0f, 1.0f, 1000 + uint64_t(i));
    timed(&mult, [&] { ml_sample(ctx, copy.data(), &tok); });
    ml_sampler_set(ctx, 1.0f, 0.9f, 1000 + uint64_t(i));
    timed(&topp, [&] { ml_sample(ctx, copy.data(), &tok); });
    chain_cfg.seed = 1000 + uint64_t(i);
    ml_sampler_configure(ctx, &chain_cfg);
    int chain_tok;
    timed(&chain, [&] { ml_sample_chain(ctx, copy.data(), history.data(), int(history.size()), &chain_tok); });
    float chosen;
    timed(&lp, [&] { ml_logprobs(ctx, copy.data(), history.data(), int(history.size()), chain_tok, 5, top, &chosen); });
    history.push_back(tok);
  }
  std::vector<double> zipf;
  uint32_t lcg = 1;
  for (int i = 0; i < vocab; ++i) copy[size_t(i)] = -1.5f * std::log(1.0f + float(i));
  for (int i = vocab - 1; i > 0; --i) {  // shuffle: the likely tokens anywhere in the vocabulary
    lcg = lcg * 1664525u + 1013904223u;
    std::swap(copy[size_t(i)], copy[(lcg >> 8) % uint32_t(i + 1)]);
  }
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> &v = pass == 0 ? zipf : flat;
    if (pass == 1) std::fill(copy.begin(), copy.end(), 0.0f);
    for (int i = 0; i < std::min(tokens, 16); ++i) {
      ml_sampler_set(ctx, 1.0f, 0.9f, 1000 + uint64_t(i));
      int t;
      timed(&v, [&] { ml_sample(ctx, copy.data(), &t); });
    }
  }
  out->step_ms = median(step.data(), step.size());
  int k = 0;
  for (std::vector<double> *v : {&topp, &mult, &zipf, &flat, &chain, &lp}) out->ms[k++] = median(v->data(), v->size());
  ml_close(ctx);
  return true;
}

int run_sample(const Opts &o) {
  std::vector<int> threads;
  if (!model_mode(o, false, &threads)) return ML_E_ARG;
  if (!o.tsv) {
    std::printf("%-28s %-5s %7s %3s %9s", "model (dim/hidden/layers/heads/kv)", "type", "vocab", "thr", "step ms");
    for (const char *h : {"top-p ms", "multi ms", "zipf ms", "flat ms", "chain ms", "logprob ms"})
      std::printf(" %10s %7s", h, "% step");
    std::printf("\n");
  }
  for (const std::string &m : o.models)
    for (int t : threads) {
      SampleCost c;
      if (!measure_sample(m, t, o.tokens, &c)) return ML_E_IO;
      const std::string shape = shape_of(c.info);
      const double s = c.step_ms;
      if (o.tsv)
        std::printf("sample\t%s\t%s\t%s\t%d\t%d\t%.4f", m.c_str(), shape.c_str(), type_name(c.info.wtype), c.info.vocab, t,
                    s);
      else
        std::printf("%-28s %-5s %7d %3d %9.2f", shape.c_str(), type_name(c.info.wtype), c.info.vocab, t, s);
      for (double ms : c.ms)
        if (o.tsv)
          std::printf("\t%.4f", ms);
        else
          std::printf(" %10.3f %6.1f%%", ms, 100.0 * ms / s);
      std::printf("\n");
      std::fflush(stdout);
    }
  return 0;
}

int run_decode(const Opts &o, bool roofline) {
  std::vector<int> threads;
  if (!model_mode(o, true, &threads)) return ML_E_ARG;
  std::vector<double> bw(static_cast<size_t>(threads.back()) + 1, 0.0);
  if (roofline)
    for (int t : threads) bw[size_t(t)] = measure_bandwidth(o, t);
  const bool by_depth = !o.depths.empty() && !roofline;
  if (!o.tsv) {
    std::printf("%s%-28s %-5s %3s", roofline ? "\n" : "", "model (dim/hidden/layers/heads/kv)", "type", "thr");
    if (by_depth) std::printf(" %6s", "depth");
    std::printf(" %12s %10s", "MB/token", "tok/s");
    if (roofline) std::printf(" %10s %8s", "ceiling", "% roof");
    std::printf("\n");
  }
  const std::vector<int> depths = by_depth ? o.depths : std::vector<int>{-1};
  for (const std::string &m : o.models) {
    for (int depth : depths)
    for (int t : threads) {
      Decode d;
      if (!measure_decode(m, t, o.tokens, depth, o.kv_type, &d)) return ML_E_IO;
      const std::string shape = shape_of(d.info);
      const double mb = double(d.info.weight_bytes) / 1e6;
      const double ceiling = roofline ? bw[size_t(t)] * 1e3 / mb : 0.0;
      if (o.tsv)  // ceiling and % roof 0 but in roofline; --depth: a last field
        std::printf("decode\t%s\t%s\t%s\t%d\t%.3f\t%.2f\t%.2f\t%.1f", m.c_str(), shape.c_str(), type_name(d.info.wtype), t,
                    mb, d.tok_s, ceiling, roofline ? 100.0 * d.tok_s / ceiling : 0.0);
      else
        std::printf("%-28s %-5s %3d", shape.c_str(), type_name(d.info.wtype), t);
      if (by_depth) std::printf(o.tsv ? "\t%d" : " %6d", depth);
      if (!o.tsv) std::printf(" %12.1f %10.1f", mb, d.tok_s);
      if (!o.tsv && roofline) std::printf(" %10.1f %7.0f%%", ceiling, 100.0 * d.tok_s / ceiling);
      std::printf("\n");
      if (o.profile) {
        std::printf("%sprofile: %.0f jobs/step, caller waits %.1f us/step (%.1f %% of the step), %.1f chunks moved/step, "
                    "%.0f jobs/step on the caller alone (no parallelism measured)\n",
                    o.tsv ? "# " : "  ", d.jobs, d.wait_us, d.wait_us * d.tok_s / 1e4, d.stolen, d.solo);
        // each other thread's time (mean step): in units; the rest is idle while the caller works
        // alone between jobs, or inside jobs not in units (waking, waiting, preempted by others)
        const double pct = 100.0 / d.step_us, busy = t > 1 ? d.busy_us / (t - 1) : 0.0;
        if (t > 1)
          std::printf("%s  step %.0f us; caller alone between jobs %.0f us (%.1f %%); each other thread in units "
                      "%.0f us (%.1f %%), inside jobs but not in units %.0f us (%.1f %%)\n",
                      o.tsv ? "# " : "  ", d.step_us, d.step_us - d.job_us, (d.step_us - d.job_us) * pct, busy,
                      busy * pct, d.job_us - busy, (d.job_us - busy) * pct);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

bool parse_list(const char *s, long lo, long hi, std::vector<int> *out) {
  out->clear();
  std::string str(s);
  size_t start = 0;
  while (start <= str.size()) {
    const size_t end = str.find(',', start);
    long v;
    if (!ml::cli::parse_int(str.substr(start, end - start).c_str(), lo, hi, &v)) return false;
    out->push_back(static_cast<int>(v));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::sort(out->begin(), out->end());
  return !out->empty();
}

}  // namespace

extern "C" int ml_main(int argc, char **argv) {
  using namespace ml::cli;
  Opts o;
  bool version = false;
  auto list = [](std::vector<int> *dst, int lo, int hi, const char *why) -> Setter {
    return [=](const char *v) { return parse_list(v, lo, hi, dst) ? nullptr : why; };
  };
  Program p{
      "ml_bench", kUsage,
      {{"-t, --threads", "N[,M...]", "thread counts (default 1,<cpus>)", list(&o.threads, 1, 1024, "needs thread counts like 1 or 1,2")},
       {"-n", "TOKENS", "decode/prefill/roofline/sample: tokens per measurement (default 64)",
        integer(&o.tokens, 1, 100000, "needs a token count >= 1")},
       {"--depth", "D[,D...]", "decode: after a context of D positions", list(&o.depths, 0, 1 << 20, "needs positions like 0 or 0,512,2048")},
       {"--kv-type", "T", "decode: the KV cache's elements, f32 (default), f16 or q8_0 (as ml_run)", kv_type(&o.kv_type)},
       {"--seconds", "S", "time per measurement, in (0, 60] (default 0.25; median of 5)",
        [&o](const char *v) -> const char * {
          float sec;
          if (!parse_float(v, &sec) || !(sec > 0.0f && sec <= 60.0f)) return "needs a number in (0, 60]";
          o.seconds = sec;
          return nullptr;
        }},
       {"--pool-mb", "N", "kernels: MB of weights streamed by the DRAM rows (default 512, >= 32)",
        integer(&o.pool_mb, 32, 1 << 16, "needs a size in MB >= 32")},  // two copies of the largest matrix
       {"--all-variants", nullptr, "kernels: time every compiled variant, not only the bound implementations", flag(&o.all_variants)},
       {"--quick", nullptr, "kernels: the matvecs at the stories110M shapes only (a smoke run: the\nctest under qemu)", flag(&o.quick)},
       {"--load", "N", "decode/prefill/roofline: N busy-loop processes run beside the measurements\n(unpinned, ordinary priority; POSIX)",
        integer(&o.load, 0, 64, "needs a process count in [0, 64]")},
       {"--profile", nullptr, "decode/roofline: the thread pool's jobs, caller wait, moved chunks and solo jobs per step",
        flag(&o.profile)},
       {"--mmap", nullptr, "decode/prefill/roofline/sample: read the weights through the file's mapping\n(ml_run --mmap), not copied into huge pages",
        flag(&g_map_weights)},
       {"--tsv", nullptr, "tab-separated output", flag(&o.tsv)},
       {"--version", nullptr, "print the build's ISA", flag(&version)}},
      [&o](const char *v) -> const char * {
        if (o.mode.empty()) o.mode = v;
        else o.models.push_back(v);
        return nullptr;
      },
      kEpilogue};
  append_rows(&p, hub_options(&o.hf));
  if (const int rc = parse(p, argc, argv); rc >= 0) return rc;
  if (version) {
    std::printf("legacy-ml ml_bench, ISA %s (Highway static target %s)\n", ml_build_isa(), ml_hwy_target());
    return 0;
  }
  if (o.hf.wanted()) {
    if (o.mode == "kernels" || o.mode == "bandwidth" || o.mode == "peak")
      return usage_error(p, "--hf names a model: it needs decode, prefill, roofline or sample, not %s", o.mode.c_str());
    std::string path;
    if (const int s = ml::hub::resolve_model(o.hf, "ml_bench", &path)) return s;
    o.models.push_back(path);
  }
  if (o.profile) ml::set_pool_profiling(true);
  Load load;
  if (o.load > 0 && o.mode != "decode" && o.mode != "prefill" && o.mode != "roofline")
    return usage_error(p, "--load needs decode, prefill or roofline, not %s", o.mode.c_str());
  if (!load.start(o.load)) return ML_E_ARG;
  if (o.mode == "kernels") return run_kernels(o);
  if (o.mode == "bandwidth") return run_bandwidth(o);
  if (o.mode == "peak") return run_peak(o);
  if (o.mode == "decode") return run_decode(o, false);
  if (o.mode == "prefill") return run_prefill(o);
  if (o.mode == "roofline") return run_decode(o, true);
  if (o.mode == "sample") return run_sample(o);
  return o.mode.empty() ? usage_error(p, "no mode given") : usage_error(p, "unknown mode %s", o.mode.c_str());
}
