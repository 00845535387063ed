// ml_server's counters behind GET /metrics (server/metrics.cc; the route itself: server/routes_info.cc).
// A header of its own, free of cpp-httplib and of routes.h: metrics.cc needs only the scheduler's
// Job and SlotView, and in the builds that compile the whole header-only httplib.h (ML_PORTABLE,
// Windows) parsing it cost metrics.cc most of its compile time.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "scheduler.h"

namespace ml::server {

// ml_server's counters for GET /metrics, in the Prometheus text exposition
// format 0.0.4. Counters since start: HTTP responses by status (every route, counted when the
// response has been written, so a scrape is counted in the next one), and per finished completion
// request its prompt tokens (evaluated, and reused from a slot's KV cache), generated tokens and
// the prompt and generation times; from these the average rates. Gauges at the scrape: queue
// length, busy and idle slots, KV cache positions in use (idle slots keep theirs for prefix reuse).
// llama-server's names start with "llamacpp:"; ours with "ml_" (docs in README's server section).
class Metrics {
 public:
  void response(int status);
  // A completion request left its handler: its job's counts (read under the scheduler's mu,
  // which the caller holds). A cancelled job counts the tokens it got; times only when done.
  void job_finished(const Job &j);
  std::string render(const std::vector<Scheduler::SlotView> &slots, size_t queued, int n_ctx);

 private:
  std::mutex mu_;
  std::map<int, uint64_t> responses_;
  uint64_t jobs_ = 0, prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  double prompt_ms_ = 0, generation_ms_ = 0;
};

}  // namespace ml::server
