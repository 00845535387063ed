// The C API of structured/ml_structured.h over the engine of structured/json_schema.h.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/error.h"
#include "structured/json_schema.h"
#include "structured/ml_structured.h"

struct ml_json_vocab {
  ml::JsonVocab vocab;
};

struct ml_json_constraint {
  ml::JsonSchema schema;
  ml::JsonConstraint constraint;
  std::vector<uint8_t> mask;
  ml_constraint api{};
};

namespace {

template <class F>
ml_status guarded(const char *what, F f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return ml::fail(ML_E_NOMEM, "%s: out of memory", what);
  }
}

void mask_of(void *user, unsigned char *allowed, int vocab) {
  auto *c = static_cast<ml_json_constraint *>(user);
  c->constraint.allowed(&c->mask);
  const size_t n = std::min(c->mask.size(), size_t(vocab));
  std::memcpy(allowed, c->mask.data(), n);
}
void accept_of(void *user, int token) { static_cast<ml_json_constraint *>(user)->constraint.accept(token); }
int state_of(void *user) {
  const auto *c = static_cast<const ml_json_constraint *>(user);
  return c->constraint.finished() ? 2 : c->constraint.complete() ? 1 : 0;
}

}  // namespace

extern "C" ml_status ml_json_vocab_new(const ml_ctx *ctx, ml_json_vocab **out) {
  if (out) *out = nullptr;
  if (!ctx || !out) return ml::fail(ML_E_ARG, "ml_json_vocab_new: NULL argument");
  const ml_ctx *text = ctx->base ? ctx->base : ctx;
  if (!text->has_tokenizer) return ml::fail(ML_E_ARG, "structured output needs the model's tokenizer");
  return guarded("ml_json_vocab_new", [&] {
    ml::TokenBytes bytes;
    if (const ml_status st = ml::token_bytes_of(text->tokenizer, &bytes)) return st;
    auto *v = new ml_json_vocab();
    std::string err;
    if (v->vocab.init(bytes, &err) != ML_OK) {
      delete v;
      return ml::fail(ML_E_ARG, "structured output: %s", err.c_str());
    }
    *out = v;
    return ML_OK;
  });
}

extern "C" void ml_json_vocab_free(ml_json_vocab *v) { delete v; }

extern "C" ml_status ml_json_constraint_new(const ml_json_vocab *v, const char *schema, size_t n,
                                            ml_json_constraint **out) {
  if (out) *out = nullptr;
  if (!v || !out || (!schema && n)) return ml::fail(ML_E_ARG, "ml_json_constraint_new: NULL argument");
  static const char kAnyObject[] = "{\"type\":\"object\"}";
  if (!schema) schema = kAnyObject, n = sizeof kAnyObject - 1;
  return guarded("ml_json_constraint_new", [&] {
    auto *c = new ml_json_constraint();
    std::string err;
    if (ml::JsonSchema::compile(schema, n, &c->schema, &err) != ML_OK ||
        c->constraint.init(c->schema, v->vocab) != ML_OK) {
      delete c;
      return err.empty() ? ML_E_ARG : ml::fail(ML_E_ARG, "%s", err.c_str());
    }
    c->api = {c, mask_of, accept_of, state_of};
    *out = c;
    return ML_OK;
  });
}

extern "C" const ml_constraint *ml_json_constraint_get(ml_json_constraint *c) { return c ? &c->api : nullptr; }
extern "C" void ml_json_constraint_reset(ml_json_constraint *c) {
  if (c) c->constraint.reset();
}
extern "C" void ml_json_constraint_free(ml_json_constraint *c) { delete c; }
