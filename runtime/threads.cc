#include "runtime/threads.h"

#if !defined(_WIN32)
#include <unistd.h>
#endif

#include <chrono>
#include <cstdlib>

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
#if defined(__EMSCRIPTEN__) && !defined(ML_NO_THREADS)
  // The browser module starts its Workers with it, one per core up to 16 (cmake/wasm.cmake,
  // PTHREAD_POOL_SIZE): a thread past them would wait for the event loop of the caller it blocks.
  if (n > 16) return 16;
#endif
  return n >= 1 ? static_cast<int>(n) : 1;
}

namespace {
std::atomic<bool> g_profiling{false};
std::atomic<uint64_t> g_jobs{0}, g_wait_ns{0}, g_stolen{0}, g_job_ns{0}, g_busy_ns{0}, g_solo{0};
std::atomic<ScheduleHook> g_hook{nullptr};
std::atomic<CoresHook> g_cores_hook{nullptr};
}  // namespace

PoolStats pool_stats() {
  return {g_jobs.load(), g_wait_ns.load(), g_stolen.load(), g_job_ns.load(), g_busy_ns.load(), g_solo.load()};
}
void set_pool_profiling(bool on) { g_profiling.store(on); }
void set_schedule_hook(ScheduleHook hook) { g_hook.store(hook); }
void set_cores_hook(CoresHook hook) { g_cores_hook.store(hook); }

#if defined(ML_NO_THREADS)

ThreadPool::~ThreadPool() = default;

ml_status ThreadPool::start(int n_threads) {
  if (n_threads != 1)
    return fail(ML_E_ARG, "this build has no thread support (ML_THREADS=OFF); use 1 thread, not %d", n_threads);
  n_ = 1;
  return ML_OK;
}

void ThreadPool::dispatch(Job job, void *ctx, int) { job(ctx, 0, 1); }

#else

namespace {
inline void cpu_relax() { ml_cpu_relax(); }
// Waiting: spin briefly (decode steps come microseconds apart), then yield the core (on a loaded
// machine the thread we wait for may need it), then, for a worker, sleep on the condition variable.
constexpr int kSpinIterations = 1 << 12;
constexpr int kYieldIterations = 1 << 8;
constexpr int kCallerSpin = 1 << 10;  // the caller at a job's end: ~10-50 µs, then it sleeps
uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
// The solo policy (threads.h): a window of kWindowJobs run_units jobs, below kMinCores the next
// kSoloJobs jobs on the caller.
constexpr int kWindowJobs = 512, kSoloJobs = 8192;
constexpr double kMinCores = 1.5;
template <class Done>
void wait_until(Done done) {
  for (int i = 0; !done(); ++i) {
    if (i < kSpinIterations)
      cpu_relax();
    else
      std::this_thread::yield();
  }
}
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
  static const bool env_profile = [] {
    const char *e = std::getenv("ML_PROFILE");
    if (e && *e && *e != '0') g_profiling.store(true);
    return true;
  }();
  (void)env_profile;
  n_ = n_threads;
  try {
    shares_.reset(new Share[size_t(n_threads)]);
    threads_.reserve(static_cast<size_t>(n_threads - 1));
    for (int t = 1; t < n_threads; ++t) threads_.emplace_back(&ThreadPool::worker, this, t);
  } catch (...) {
    n_ = 1 + static_cast<int>(threads_.size());
    return fail(ML_E_NOMEM, "cannot start %d threads (started %d)", n_threads, n_);
  }
  return ML_OK;
}

// Each thread's static share of [0, units): split_rows with a tile of one unit.
void ThreadPool::share(int units) {
  for (int t = 0; t < n_; ++t) {
    int u0, u1;
    split_rows(units, 1, t, n_, &u0, &u1);
    shares_[size_t(t)].next.store(u0, std::memory_order_relaxed);
    shares_[size_t(t)].end = u1;
  }
}

// The protocol has two handshakes of the store-buffering shape (each side writes its variable,
// then reads the other's; at least one must see the other's write):
//   the end: the last done() decrements remaining_, then reads caller_sleeps_; the caller, going
//     to sleep, sets caller_sleeps_, then reads remaining_. Both missing: nobody wakes the caller.
//   the close: a worker joining counts itself in active_, then reads open_; the caller closes
//     open_, then reads active_. Both missing: a worker runs a job after its caller returned.
// Each write is a read-modify-write (the workers' fetch_add/fetch_sub, the caller's exchange), not
// a seq_cst store. C++ promises the pair with seq_cst stores, and so do x86 (XCHG) and AArch64
// hardware (STLR then LDAR stay in order), but qemu-user 7.2 on an x86 host runs AArch64's STLR
// then LDAR as a plain store and a plain load, which x86 reorders (the store waits in the store
// buffer as the load reads): the caller slept with remaining_ at 0, the worker slept too, and
// ml_tests "batched prefill*" hung under qemu-aarch64. A read-modify-write is a locked instruction
// there, and a full barrier on every target. (ctest threads.pool crosses the end 12000 times.)
void ThreadPool::done(int units) {
  if (remaining_.fetch_sub(units) == units && caller_sleeps_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    done_cv_.notify_one();
  }
}
void ThreadPool::stolen(uint64_t chunks, int units) {
  moved_.fetch_add(uint64_t(units), std::memory_order_relaxed);
  if (g_profiling.load(std::memory_order_relaxed)) g_stolen.fetch_add(chunks, std::memory_order_relaxed);
}

bool ThreadPool::solo() {
  if (solo_left_ == 0) return false;
  if (--solo_left_ == 0) after_solo_ = true;
  if (g_profiling.load(std::memory_order_relaxed)) g_solo.fetch_add(1, std::memory_order_relaxed);
  return true;
}
void ThreadPool::measure(int units) {
  win_units_ += uint64_t(units);
  win_moved_ += moved_.exchange(0, std::memory_order_relaxed);
  if (++window_jobs_ < kWindowJobs) return;
  // Units a thread ran out of another's share, a fraction m of all: with the pool's n threads on n
  // cores about none move; with all of them taking turns on one core, the one running takes the
  // others' shares, (n - 1) / n of the units. n (1 - m) reads as the cores the threads had.
  const CoresHook hook = g_cores_hook.load();
  const double cores = hook ? hook() : n_ * (1.0 - double(win_moved_) / double(win_units_ ? win_units_ : 1));
  // Two low windows in a row (a quiet machine's windows read 1.8-2.0 cores, with a rare lone dip:
  // a page fault, another program's moment), or one right after a solo period (still busy).
  const bool low = cores < kMinCores;
  low_windows_ = low ? low_windows_ + 1 : 0;
  if (low && (after_solo_ || low_windows_ >= 2)) {
    solo_left_ = kSoloJobs;
    low_windows_ = 0;
  }
  after_solo_ = false;
  window_jobs_ = 0;
  win_units_ = win_moved_ = 0;
}

// units < 0: every thread runs the job (run); else the job claims units (run_units) and the
// caller returns once all are done, whether or not every worker has joined. A worker joins by
// counting itself in active_ and then checking the job is still open; the caller closes the job
// and then waits for active_ to drain (the close, above done()), so no worker touches a job's
// context after run_units returns.
void ThreadPool::dispatch(Job job, void *ctx, int units) {
  const bool prof = g_profiling.load(std::memory_order_relaxed);
  const uint64_t start = prof ? now_ns() : 0;
  job_.store(job, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  every_.store(units < 0, std::memory_order_relaxed);
  remaining_.store(units < 0 ? n_ - 1 : units, std::memory_order_relaxed);
  uint64_t g;
  {
    // The generation bump is published under the lock so a worker about to sleep cannot miss it,
    // and after open_: a worker that sees generation g must also see the job open, or it skips a
    // `run` job without counting itself done and the caller waits forever (seen: gguf.types hung).
    std::lock_guard<std::mutex> lock(mu_);
    g = generation_.load(std::memory_order_relaxed) + 1;
    open_.store(g);
    generation_.store(g, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
  if (ScheduleHook h = g_hook.load(std::memory_order_acquire)) h(0);
  job(ctx, 0, n_);
  const uint64_t t0 = prof ? now_ns() : 0;
  // The caller spins briefly, then sleeps: a thread still in a chunk may have lost its core to
  // another process, and a core left idle lets the kernel move that thread onto it, where a
  // spinning or yielding caller would keep the core and wait out the other process's time slice.
  for (int i = 0; remaining_.load(std::memory_order_acquire) > 0; ++i) {
    if (i < kCallerSpin) {
      cpu_relax();
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeps_.exchange(true);  // not a store: the end, above done()
    done_cv_.wait(lock, [&] { return remaining_.load() <= 0; });
    caller_sleeps_.store(false);
    break;
  }
  open_.exchange(0);  // not a store: the close, above done()
  wait_until([&] { return active_.load() == 0; });
  if (units >= 0) measure(units);
  if (prof) {
    const uint64_t end = now_ns();
    g_wait_ns.fetch_add(end - t0, std::memory_order_relaxed);
    g_job_ns.fetch_add(end - start, std::memory_order_relaxed);
    g_jobs.fetch_add(1, std::memory_order_relaxed);
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
    active_.fetch_add(1);
    if (open_.load() == g) {
      if (ScheduleHook h = g_hook.load(std::memory_order_acquire)) h(tid);
      const uint64_t t0 = g_profiling.load(std::memory_order_relaxed) ? now_ns() : 0;
      job_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), tid, n_);
      if (t0) g_busy_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      if (every_.load(std::memory_order_relaxed)) done(1);
    }
    active_.fetch_sub(1);
  }
}

#endif

}  // namespace ml
