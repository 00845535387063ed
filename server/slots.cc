// What ml_server shows of its scheduler (server/scheduler.h: slot_views, tokenize, detokenize),
// apart from scheduling itself.
#include <string>

#include "scheduler.h"

namespace ml::server {

std::vector<Scheduler::SlotView> Scheduler::slot_views(size_t *queued) {
  std::lock_guard<std::mutex> lk(mu);
  if (queued) *queued = queue_.size();
  std::vector<SlotView> v;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot &s = slots_[i];
    SlotView w;
    w.id = int(i);
    if (s.job) {  // the scheduler thread steps this session: its counts come from the job (under mu)
      const Job &j = *s.job;
      w.busy = true;
      w.n_prompt = int(j.prompt.size());
      w.n_decoded = j.n_generated;
      w.n_past = j.n_cached + j.n_evaluated + j.n_generated;
    } else {  // nothing evaluates an idle slot's session; it is given a job only under mu
      w.n_past = ml_session_n_past(s.session);
    }
    v.push_back(w);
  }
  return v;
}

std::vector<int> Scheduler::tokenize(const std::string &text, bool add_special) {
  if (text.find('\0') != std::string::npos)
    throw HttpError{400, "'content' holds a NUL character", "invalid_request_error"};
  std::lock_guard<std::mutex> lk(tok_mu_);
  std::vector<int> ids(ml_encode_bound(base_, text.size()) + 1);
  int n = 0;
  if (ml_encode_ex(base_, text.c_str(), ML_ENCODE_SPECIAL | (add_special ? ML_ENCODE_BOS : 0), ids.data(),
                   int(ids.size()), &n) != ML_OK)
    throw HttpError{400, std::string("'content': ") + ml_last_error(), "invalid_request_error"};
  ids.resize(size_t(n));
  return ids;
}

std::string Scheduler::detokenize(const std::vector<long> &ids, int prev) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= info.vocab)
      throw HttpError{400, "'tokens[" + std::to_string(i) + "]': " + std::to_string(ids[i]) +
                               " is not a token id (0.." + std::to_string(info.vocab - 1) + ")",
                      "invalid_request_error"};
    // As ml_tokenize --decode: a llama2.c BOS starting the text is not part of it (ml_decode's is "\n<s>\n").
    if (!(i == 0 && prev < 0 && tok_.kind == 0 && ids[0] == tok_.bos_id)) out += ml_decode(base_, prev, int(ids[i]));
    prev = int(ids[i]);
  }
  return out;
}

}  // namespace ml::server
