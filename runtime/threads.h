// A persistent worker pool with a barrier. run(f) calls f(tid, n) once on each of the n threads
// (the caller is thread 0) and returns when all have finished: one fork-join per call, no
// allocation. Workers spin briefly for the next job (decode steps come fast), then sleep.
// Built without threads (ML_THREADS=OFF, e.g. WebAssembly) it runs f(0, 1) inline.
//
// Work split: RowChunks hands out chunks of rows, cut on multiples of the kernel row tile, to
// whichever thread asks first, so results do not depend on the thread count or on which thread
// computes which rows.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "runtime/ml.h"

#if !defined(ML_NO_THREADS)
#include <condition_variable>
#include <mutex>
#endif

namespace ml {

class ThreadPool {
 public:
  ThreadPool() = default;
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;
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

// Rows [0, rows) in chunks of whole tiles, about `per_thread` chunks for each of n threads, taken
// first come first served: a thread slowed by a neighbour (a shared machine's vCPU, a busy sibling
// hyperthread) takes fewer chunks instead of holding the others at the barrier. With n = 1 the
// whole range is one chunk. Shared by the threads of one ThreadPool::run call.
class RowChunks {
 public:
  RowChunks(int rows, int tile, int n, int per_thread = 8) : rows_(rows) {
    const int tiles = (rows + tile - 1) / tile, want = n > 1 ? n * per_thread : 1;
    chunk_ = ((tiles + want - 1) / want) * tile;
    if (chunk_ < tile) chunk_ = tile;
  }
  bool next(int *r0, int *r1) {
    const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
    if (c * chunk_ >= rows_) return false;
    *r0 = static_cast<int>(c * chunk_);
    *r1 = rows_ - *r0 < chunk_ ? rows_ : *r0 + chunk_;
    return true;
  }

 private:
  int rows_, chunk_;
  std::atomic<int> next_{0};
};

int online_cpus();

}  // namespace ml
