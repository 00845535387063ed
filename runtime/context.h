// The object behind the opaque ml_ctx of runtime/ml.h.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "runtime/forward.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/state.h"
#include "runtime/threads.h"
#include "runtime/text/tokenizer.h"

struct ml_ctx {
  ml::Model model;
  ml::Tokenizer tokenizer;
  bool has_tokenizer = false;
  ml::Arena arena;
  ml::State state;
  ml::ThreadPool pool;
  ml::Sampler sampler;
  ml::ForwardFn forward = nullptr;
  bool reference = false;
  int n_past = 0;  // positions whose K/V are in the cache
  std::once_flag chat_once;             // runtime/chat_api.cc: ml_chat_stop_ids fills chat_stops once
  std::vector<int> chat_stops[6];       // per ml_chat_format: end-of-turn ids + the tokenizer's stop ids
  ml_status chat_status[6] = {};        // why a format does not fit the tokenizer (message in chat_errors)
  std::string chat_errors[6];
  ml_ctx *base = nullptr;  // ml_open_sibling: the family's first context, whose pool (and
                           // mapping, viewed by `model`) this one uses; nullptr for ml_open's
  ml::ThreadPool &threads() { return base ? base->pool : pool; }
  const ml::ThreadPool &threads() const { return base ? base->pool : pool; }
};
