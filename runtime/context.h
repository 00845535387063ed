// The object behind the opaque ml_ctx of runtime/ml.h.
#pragma once
#include "runtime/forward.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/state.h"
#include "runtime/threads.h"
#include "runtime/tokenizer.h"

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
  ml_ctx *base = nullptr;  // ml_open_sibling: the family's first context, whose pool (and
                           // mapping, viewed by `model`) this one uses; nullptr for ml_open's
  ml::ThreadPool &threads() { return base ? base->pool : pool; }
  const ml::ThreadPool &threads() const { return base ? base->pool : pool; }
};
