// A persistent worker pool with a barrier. run(f) calls f(tid, n) once on each of the n threads
// (the caller is thread 0) and returns when all have finished: one fork-join per call, no
// allocation. Workers spin briefly for the next job (decode steps come fast), then sleep.
// Built without threads (ML_THREADS=OFF, e.g. WebAssembly) it runs f(0, 1) inline.
//
// Work split helper: split_rows() gives each thread a contiguous range whose boundaries are
// multiples of the kernel row tile, so results do not depend on the thread count.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "runtime/base.h"
#include "runtime/ml.h"

#if !defined(ML_NO_THREADS)
#include <condition_variable>
#include <mutex>
#endif

namespace ml {

class ThreadPool : NonCopyable {
 public:
  ~ThreadPool();

  ml_status start(int n_threads);  // n_threads >= 1, including the caller
  int size() const { return n_; }

  template <class F>
  void run(F &&f) {
    if (n_ == 1) {
      f(0, 1);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    dispatch([](void *ctx, int tid, int n) { (*static_cast<Fn *>(ctx))(tid, n); }, const_cast<void *>(static_cast<const void *>(&f)));
  }

 private:
  using Job = void (*)(void *, int, int);
  void dispatch(Job job, void *ctx);
  void worker(int tid);

  int n_ = 1;
#if !defined(ML_NO_THREADS)
  std::vector<std::thread> threads_;
  Job job_ = nullptr;
  void *ctx_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
#endif
};

// Rows [r0, r1) of `rows` for thread tid of n, boundaries on multiples of `tile`.
inline void split_rows(int rows, int tile, int tid, int n, int *r0, int *r1) {
  const int tiles = (rows + tile - 1) / tile;
  const int t0 = static_cast<int>(int64_t(tiles) * tid / n), t1 = static_cast<int>(int64_t(tiles) * (tid + 1) / n);
  *r0 = t0 * tile < rows ? t0 * tile : rows;
  *r1 = t1 * tile < rows ? t1 * tile : rows;
}

int online_cpus();

}  // namespace ml
