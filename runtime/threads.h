// A persistent worker pool. run(f) calls f(tid, n) once on each of the n threads (the caller is
// thread 0) and returns when all have finished. run_units(units, f) shares [0, units) among the
// threads with work that moves to free threads: each thread owns a static share (the same units
// every call, for cache affinity) which it takes from its front in chunks; a thread done with its
// share takes the chunks still unclaimed in the other shares, so a thread whose core is busy
// elsewhere holds the step up by at most the chunk it is in. Chunks shrink toward a share's end
// (each claim a quarter of what is left): the threads of a quiet machine finish a job within a
// small chunk of each other, where equal chunks left one waiting out the other's last (TinyLlama's
// w1/w3 chunks were 1.6 MB of weights, ~80 us). Workers spin briefly for the next
// job (decode steps come fast), then yield, then sleep; the caller, waiting for a job's last
// chunks, spins briefly, then sleeps (so the kernel may run the thread it waits for on its core).
// A worker that arrives after a job's units are all done skips it. Built without threads
// (ML_THREADS=OFF, e.g. WebAssembly) everything runs inline on the caller.
//
// Solo when the threads do not run in parallel: on a busy machine the pool's threads may share one
// core (Linux autogroup gives a busy program's session one of two cores, ours the other), and
// a second thread then adds wake-ups and hand-offs but no CPU. It shows in where the units run:
// threads that run side by side each finish their own share, while threads that take turns on a
// core leave theirs to the one running (n threads: (n - 1) / n of the units move). So run_units
// counts, over a window of 512 jobs, the units a thread ran out of another's share, a fraction m,
// and reads n (1 - m) as the cores its threads had: under 1.5 means no parallelism. Two such
// windows in a row (a quiet machine's rare dip is one), or one right after a solo period, send the
// next 8192 run_units jobs to the caller alone (f(0, 0, units): no dispatch, no wake-up; the
// workers go to sleep), then the pool dispatches again and the next window, a probe, decides anew.
// Results do not change: each unit is the same kernel call whichever thread runs it. run() always
// dispatches (every thread must run f). Nothing here reads a clock, so the policy is the same on
// every platform with threads (POSIX, Windows, Emscripten's Workers).
//
// Work split helper: split_rows() gives each thread a contiguous range whose boundaries are
// multiples of the kernel row tile, so results do not depend on the thread count.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
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

// Counters of every pool in the process, kept while profiling is on (ML_PROFILE=1 in the
// environment at the first pool start, or set_pool_profiling): jobs run, nanoseconds the caller
// spent waiting at the end of jobs for other threads, chunks taken from another thread's share,
// nanoseconds the caller spent inside jobs (dispatch to return: its own units and the wait) and
// nanoseconds the other threads spent running a job's units (summed over them). Per step,
// step − job_ns is the caller's work between jobs, during which the other threads idle. solo:
// run_units jobs the caller ran alone, the threads measured not running in parallel (not in jobs).
struct PoolStats {
  uint64_t jobs, wait_ns, stolen, job_ns, busy_ns, solo;
};
PoolStats pool_stats();
void set_pool_profiling(bool on);
// Tests: a hook each thread calls (with its tid) as it enters a job, before claiming work, so a
// test can delay one thread and force uneven schedules. nullptr: none.
using ScheduleHook = void (*)(int tid);
void set_schedule_hook(ScheduleHook hook);
// Tests: replaces the cores measured over each window (the solo policy above; any platform), so a
// test can report "no parallelism" or its return. nullptr: measure.
using CoresHook = double (*)();
void set_cores_hook(CoresHook hook);

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
    dispatch([](void *ctx, int tid, int n) { (*static_cast<Fn *>(ctx))(tid, n); }, const_cast<void *>(static_cast<const void *>(&f)), -1);
  }

  // f(tid, u0, u1) for disjoint ranges covering [0, units), each once, on any thread (tid: the
  // thread running it, for per-thread scratch). Each claim takes a quarter of what is left in the
  // share it claims from, at least `chunk` units (>= 1).
  template <class F>
  void run_units(int units, int chunk, F &&f) {
    if (units <= 0) return;
#if defined(ML_NO_THREADS)
    (void)chunk;
    f(0, 0, units);
#else
    if (n_ == 1 || solo()) {
      f(0, 0, units);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    struct Ctx {
      ThreadPool *pool;
      Fn *f;
      int chunk;
    } ctx{this, &f, chunk < 1 ? 1 : chunk};
    share(units);
    dispatch([](void *c, int tid, int) {
      Ctx &x = *static_cast<Ctx *>(c);
      x.pool->claim(tid, x.chunk, [&](int u0, int u1) { (*x.f)(tid, u0, u1); });
    }, &ctx, units);
#endif
  }

 private:
  using Job = void (*)(void *, int, int);
  void dispatch(Job job, void *ctx, int units);
  void worker(int tid);
  void share(int units);
  // Thread tid's share, then the others' leftovers, chunk units at a time.
  template <class G>
  void claim(int tid, int chunk, G &&g);
  void done(int units);
  void stolen(uint64_t chunks, int units);  // units run out of another thread's share
  bool solo();  // this run_units job runs on the caller alone (the solo policy above)
  void measure(int units);  // a run_units job's end: the window's units and moved units

  int n_ = 1;
#if !defined(ML_NO_THREADS)
  static constexpr int kGuide = 4;  // a claim: 1 / kGuide of its share's units left
  struct alignas(64) Share {
    std::atomic<int> next{0};  // the first unclaimed unit
    int end = 0;
  };
  std::unique_ptr<Share[]> shares_;
  std::vector<std::thread> threads_;
  std::atomic<Job> job_{nullptr};
  std::atomic<void *> ctx_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> open_{0};     // the generation of the job workers may still join, 0: none
  alignas(64) std::atomic<int> active_{0};     // workers inside the open job
  alignas(64) std::atomic<int> remaining_{0};  // units (run_units) or workers (run) not yet done
  std::atomic<bool> every_{false};  // run: each worker counts itself done in remaining_
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> caller_sleeps_{false};  // the caller waits on done_cv_ for remaining_ to reach 0
  std::atomic<uint64_t> moved_{0};          // the job's units run out of another thread's share
  // The caller's alone: the window's jobs, units and moved units, jobs left solo.
  uint64_t win_units_ = 0, win_moved_ = 0;
  int window_jobs_ = 0, solo_left_ = 0, low_windows_ = 0;
  bool after_solo_ = false;  // the window after a solo period: one low window sends it back
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
#endif
};

#if !defined(ML_NO_THREADS)
template <class G>
void ThreadPool::claim(int tid, int chunk, G &&g) {
  uint64_t taken = 0;
  int moved = 0, ran = 0;
  for (int i = 0; i < n_; ++i) {
    Share &s = shares_[size_t((tid + i) % n_)];
    for (int u = s.next.load(std::memory_order_relaxed); u < s.end;) {
      // a quarter of what is left, at least chunk: claims shrink toward the share's end
      const int left = s.end - u, e = u + std::min(left, std::max(chunk, left / kGuide));
      if (!s.next.compare_exchange_weak(u, e, std::memory_order_relaxed)) continue;  // u: the new front
      g(u, e);
      ran += e - u;
      if (i > 0) {
        ++taken;
        moved += e - u;
      }
      u = s.next.load(std::memory_order_relaxed);
    }
  }
  if (taken) stolen(taken, moved);
  if (ran) done(ran);  // once, not per claim: remaining_'s line bounced between the cores at every one
}
#endif

// Rows [r0, r1) of `rows` for thread tid of n, boundaries on multiples of `tile`.
inline void split_rows(int rows, int tile, int tid, int n, int *r0, int *r1) {
  const int tiles = (rows + tile - 1) / tile;
  const int t0 = static_cast<int>(int64_t(tiles) * tid / n), t1 = static_cast<int>(int64_t(tiles) * (tid + 1) / n);
  *r0 = t0 * tile < rows ? t0 * tile : rows;
  *r1 = t1 * tile < rows ? t1 * tile : rows;
}

int online_cpus();

}  // namespace ml
