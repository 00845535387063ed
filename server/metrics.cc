// GET /metrics (server/metrics.h: Metrics).
#include "metrics.h"

#include <cstdio>

namespace ml::server {

void Metrics::response(int status) {
  std::lock_guard<std::mutex> lk(mu_);
  ++responses_[status];
}

void Metrics::job_finished(const Job &j) {
  std::lock_guard<std::mutex> lk(mu_);
  ++jobs_;
  prompt_tokens_ += uint64_t(j.n_evaluated);
  cached_tokens_ += uint64_t(j.n_cached);
  generated_tokens_ += uint64_t(j.n_generated);
  if (j.done && j.t_done > 0) {
    prompt_ms_ += j.t_prompt_done - j.t_queued;
    generation_ms_ += j.t_done - j.t_prompt_done;
  }
}

std::string Metrics::render(const std::vector<Scheduler::SlotView> &slots, size_t queued, int n_ctx) {
  std::string out;
  auto family = [&](const char *name, const char *type, const char *help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto sample = [&](const std::string &name, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.17g\n", v);
    out += name + buf;
  };
  int busy = 0;
  long kv = 0;
  for (const auto &s : slots) busy += s.busy ? 1 : 0, kv += s.n_past;
  std::lock_guard<std::mutex> lk(mu_);
  family("ml_requests_total", "counter", "HTTP responses sent, by status code");
  for (const auto &r : responses_) sample("ml_requests_total{status=\"" + std::to_string(r.first) + "\"}", double(r.second));
  family("ml_completions_total", "counter", "completion requests finished or cancelled");
  sample("ml_completions_total", double(jobs_));
  family("ml_prompt_tokens_total", "counter", "prompt tokens evaluated (not counting those reused from a slot's KV cache)");
  sample("ml_prompt_tokens_total", double(prompt_tokens_));
  family("ml_prompt_tokens_cached_total", "counter", "prompt tokens reused from a slot's KV cache");
  sample("ml_prompt_tokens_cached_total", double(cached_tokens_));
  family("ml_generated_tokens_total", "counter", "tokens generated");
  sample("ml_generated_tokens_total", double(generated_tokens_));
  family("ml_prompt_seconds_total", "counter", "time from queued to prompt evaluated, summed over finished requests");
  sample("ml_prompt_seconds_total", prompt_ms_ / 1000);
  family("ml_generation_seconds_total", "counter", "time from prompt evaluated to done, summed over finished requests");
  sample("ml_generation_seconds_total", generation_ms_ / 1000);
  family("ml_prompt_tokens_per_second", "gauge", "average prompt throughput: prompt tokens / prompt seconds of finished requests");
  sample("ml_prompt_tokens_per_second", prompt_ms_ > 0 ? double(prompt_tokens_) * 1000 / prompt_ms_ : 0);
  family("ml_generated_tokens_per_second", "gauge", "average generation throughput per request: generated tokens / generation seconds");
  sample("ml_generated_tokens_per_second", generation_ms_ > 0 ? double(generated_tokens_) * 1000 / generation_ms_ : 0);
  family("ml_requests_queued", "gauge", "requests waiting for a slot");
  sample("ml_requests_queued", double(queued));
  family("ml_slots", "gauge", "slots by state");
  sample("ml_slots{state=\"busy\"}", busy);
  sample("ml_slots{state=\"idle\"}", double(slots.size()) - busy);
  family("ml_kv_cache_tokens", "gauge", "KV cache positions in use over all slots");
  sample("ml_kv_cache_tokens", double(kv));
  family("ml_kv_cache_usage_ratio", "gauge", "KV cache positions in use / positions of all slots");
  sample("ml_kv_cache_usage_ratio", slots.empty() || n_ctx <= 0 ? 0 : double(kv) / (double(slots.size()) * n_ctx));
  return out;
}

}  // namespace ml::server
