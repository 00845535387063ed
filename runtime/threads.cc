#include "runtime/threads.h"

#if !defined(_WIN32)
#include <unistd.h>
#endif

#include "runtime/error.h"
#include "simd/compiler.h"

namespace ml {

// POSIX (and Emscripten): sysconf. Windows: std::thread::hardware_concurrency, the active
// processor count (mingw-w64's winpthreads, MSVC's runtime); 0 when unknown.
int online_cpus() {
#if defined(_WIN32)
  const long n = static_cast<long>(std::thread::hardware_concurrency());
#else
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  return n >= 1 ? static_cast<int>(n) : 1;
}

#if defined(ML_NO_THREADS)

ThreadPool::~ThreadPool() = default;

ml_status ThreadPool::start(int n_threads) {
  if (n_threads != 1)
    return fail(ML_E_ARG, "this build has no thread support (ML_THREADS=OFF); use 1 thread, not %d", n_threads);
  n_ = 1;
  return ML_OK;
}

void ThreadPool::dispatch(Job job, void *ctx) { job(ctx, 0, 1); }

#else

namespace {
inline void cpu_relax() { ml_cpu_relax(); }
// Waiting: spin briefly (decode steps come microseconds apart), then yield the core (on a loaded
// machine the thread we wait for may need it), then, for a worker, sleep on the condition variable.
constexpr int kSpinIterations = 1 << 12;
constexpr int kYieldIterations = 1 << 8;
}  // namespace

ThreadPool::~ThreadPool() {
  if (threads_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  for (std::thread &t : threads_) t.join();
}

ml_status ThreadPool::start(int n_threads) {
  if (n_threads < 1) return fail(ML_E_ARG, "thread count %d must be at least 1", n_threads);
  n_ = n_threads;
  try {
    threads_.reserve(static_cast<size_t>(n_threads - 1));
    for (int t = 1; t < n_threads; ++t) threads_.emplace_back(&ThreadPool::worker, this, t);
  } catch (...) {
    n_ = 1 + static_cast<int>(threads_.size());
    return fail(ML_E_NOMEM, "cannot start %d threads (started %d)", n_threads, n_);
  }
  return ML_OK;
}

void ThreadPool::dispatch(Job job, void *ctx) {
  job_ = job;
  ctx_ = ctx;
  pending_.store(n_ - 1, std::memory_order_relaxed);
  {
    // The generation bump is published under the lock so a worker about to sleep cannot miss it.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
  job(ctx, 0, n_);
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kSpinIterations)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::worker(int tid) {
  uint64_t seen = 0;
  while (true) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < kSpinIterations + kYieldIterations; ++i) {
      if (i < kSpinIterations)
        cpu_relax();
      else
        std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_acq_rel);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_acq_rel);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    job_(ctx_, tid, n_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

#endif

}  // namespace ml
