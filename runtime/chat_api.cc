// The chat C API of runtime/ml.h (ml_chat_detect, ml_chat_render, ml_chat_encode, ml_chat_stop_ids,
// ml_chat_format_name, ml_chat_parse_name) over a context: its tokenizer's template, BOS/EOS texts and
// the stop ids of each format. The rendering itself is text-only: runtime/text/chat.h.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "kernels/mutants.h"
#include "runtime/context.h"
#include "runtime/error.h"
#include "runtime/text/chat.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/unicode.h"

namespace ml {

namespace {

const char kChoices[] = "--chat-template chatml|zephyr|llama2|llama3|qwen3";

// The id of the special/added token whose text is `s`, or -1 (byte-level tokenizers).
int special_id(const BpeTokenizer &b, const char *s) {
  for (int id = 0; id < b.n_tokens(); ++id) {
    const int k = b.kind(id);
    if (k != BpeTokenizer::kSpecial && k != BpeTokenizer::kAdded) continue;
    size_t len = 0;
    const char *t = b.decode(id, &len);
    if (len == std::strlen(s) && std::memcmp(t, s, len) == 0) return id;
  }
  return -1;
}

ChatTemplateVars vars_of(const ml_ctx *ctx) {
  ChatTemplateVars v;
  v.today = chat_today();
  const Tokenizer &t = ctx->tokenizer;
  if (t.kind() == Tokenizer::kByteLevel) {
    const BpeTokenizer &b = t.bpe();
    v.source = b.chat_template();
    if (b.bos_id() >= 0) v.bos = b.decode(b.bos_id());
    if (b.eos_id() >= 0) v.eos = b.decode(b.eos_id());
  } else {
    v.bos = "<s>";
    v.eos = "</s>";
  }
  return v;
}

void fill_stops(ml_ctx *ctx) {
  const Tokenizer &t = ctx->tokenizer;
  const bool bl = t.kind() == Tokenizer::kByteLevel;
  for (int f = 1; f <= 5; ++f) {
    std::vector<int> &ids = ctx->chat_stops[f];
    auto need = [&](const char *text, int id) {
      if (id >= 0) {
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        return true;
      }
      if (ctx->chat_status[f] == ML_OK) {
        ctx->chat_status[f] = ML_E_FORMAT;
        ctx->chat_errors[f] = std::string("the tokenizer has no ") + text + " token, which the " +
                              ml_chat_format_name(ml_chat_format(f)) + " chat format needs";
      }
      return false;
    };
    if (bl) {
      const BpeTokenizer &b = t.bpe();
      switch (f) {
        case ML_CHAT_CHATML:
        case ML_CHAT_QWEN3:
          need("<|im_start|>", special_id(b, "<|im_start|>"));
          ids.clear();  // <|im_start|> must exist but does not end a turn
          if (!ML_MUTANT("chat_stop_chatml")) need("<|im_end|>", special_id(b, "<|im_end|>"));  // mutant: left out
          break;
        case ML_CHAT_ZEPHYR:
        case ML_CHAT_LLAMA2:
          need("EOS (</s>)", b.eos_id());
          break;
        case ML_CHAT_LLAMA3: {
          need("<|start_header_id|>", special_id(b, "<|start_header_id|>"));
          need("<|end_header_id|>", special_id(b, "<|end_header_id|>"));
          ids.clear();
          if (!ML_MUTANT("chat_stop_llama3")) need("<|eot_id|>", special_id(b, "<|eot_id|>"));  // mutant: left out
          break;
        }
      }
      for (int id : b.stop_ids())
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    } else {
      // llama2.c tokenizer.bin: only <s> (1) and </s> (2) are special; the ChatML and Llama 3
      // markers would be plain text.
      if (f == ML_CHAT_CHATML || f == ML_CHAT_QWEN3) need("<|im_end|>", -1);
      if (f == ML_CHAT_LLAMA3) need("<|eot_id|>", -1);
      if (f == ML_CHAT_ZEPHYR || f == ML_CHAT_LLAMA2) need("</s>", t.n_tokens() > 2 ? 2 : -1);
    }
  }
}

}  // namespace

}  // namespace ml

using namespace ml;

extern "C" const char *ml_chat_format_name(ml_chat_format f) {
  switch (f) {
    case ML_CHAT_CHATML: return "chatml";
    case ML_CHAT_ZEPHYR: return "zephyr";
    case ML_CHAT_LLAMA2: return "llama2";
    case ML_CHAT_LLAMA3: return "llama3";
    case ML_CHAT_QWEN3: return "qwen3";
    case ML_CHAT_UNKNOWN: break;
  }
  return "unknown";
}

extern "C" ml_status ml_chat_parse_name(const char *name, ml_chat_format *format) {
  if (!format) return fail(ML_E_ARG, "ml_chat_parse_name: format is NULL");
  for (int f = 1; f <= 5; ++f)
    if (name && std::strcmp(name, ml_chat_format_name(ml_chat_format(f))) == 0) {
      *format = ml_chat_format(f);
      return ML_OK;
    }
  return fail(ML_E_ARG, "chat template \"%.40s\" is not one of %s", name ? name : "(null)", kChoices + 16);
}

extern "C" ml_status ml_chat_detect(const ml_ctx *ctx, ml_chat_format *format) {
  if (!ctx || !format) return fail(ML_E_ARG, "ml_chat_detect: NULL argument");
  if (!ctx->has_tokenizer) return fail(ML_E_ARG, "ml_chat_detect: the context was opened without a tokenizer");
  *format = ML_CHAT_UNKNOWN;
  const Tokenizer &t = ctx->tokenizer;
  if (t.kind() != Tokenizer::kByteLevel)
    return fail(ML_E_FORMAT, "the tokenizer (llama2.c tokenizer.bin) has no chat template: pass %s", kChoices);
  const std::string &src = t.bpe().chat_template();
  if (src.empty()) return fail(ML_E_FORMAT, "the tokenizer has no chat template: pass %s", kChoices);
  const ml_chat_format f = chat_detect_source(src);
  if (f == ML_CHAT_UNKNOWN)
    return fail(ML_E_FORMAT, "the tokenizer's chat template (%zu bytes) is not one this build knows: pass %s",
                src.size(), kChoices);
  *format = f;
  return ML_OK;
}

ml_status ml::chat_render_ctx(const ml_ctx *ctx, ml_chat_format format, const ml_chat_message *messages, int n,
                              int add, const ChatTools *tools, std::string *text) {
  if (!ctx || !text) return fail(ML_E_ARG, "ml_chat_render: NULL argument");
  if (!ctx->has_tokenizer) return fail(ML_E_ARG, "ml_chat_render: the context was opened without a tokenizer");
  if (format < ML_CHAT_CHATML || format > ML_CHAT_QWEN3)
    return fail(ML_E_ARG, "ml_chat_render: format %d is not one of %s", int(format), kChoices + 16);
  try {
    return chat_render(format, vars_of(ctx), messages, n, add, text, tools);
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "ml_chat_render: out of memory");
  }
}

extern "C" ml_status ml_chat_render(const ml_ctx *ctx, ml_chat_format format, const ml_chat_message *messages,
                                    int n, int add_assistant, char *out, size_t cap, size_t *len) {
  if (!ctx || !len || (!out && cap != 0)) return fail(ML_E_ARG, "ml_chat_render: NULL argument");
  std::string text;
  if (const ml_status s = chat_render_ctx(ctx, format, messages, n, add_assistant, nullptr, &text)) return s;
  *len = text.size();
  if (cap < text.size() + 1) {
    if (out == nullptr && cap == 0) return ML_OK;  // a size query
    return fail(ML_E_ARG, "ml_chat_render: the rendered text needs %zu bytes with its NUL, cap is %zu",
                text.size() + 1, cap);
  }
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return ML_OK;
}

extern "C" ml_status ml_chat_encode(ml_ctx *ctx, const char *text, int *tokens, int max_tokens, int *n_tokens) {
  if (!ctx || !text || !n_tokens || (!tokens && max_tokens != 0)) return fail(ML_E_ARG, "ml_chat_encode: NULL argument");
  if (!ctx->has_tokenizer) return fail(ML_E_ARG, "ml_chat_encode: the context was opened without a tokenizer");
  if (ctx->tokenizer.kind() == Tokenizer::kByteLevel)
    return ml_encode_ex(ctx, text, ML_ENCODE_SPECIAL, tokens, max_tokens, n_tokens);
  size_t bad = 0;
  if (!unicode::valid_utf8(text, std::strlen(text), &bad)) return fail(ML_E_ARG, "ml_chat_encode: text is not valid UTF-8 (byte %zu)", bad);
  // llama2.c: split at <s> / </s>; each piece encoded alone (dummy prefix), no BOS of its own.
  try {
    std::vector<int> ids, piece_ids;
    if (std::strncmp(text, "<s>", 3) != 0) ids.push_back(1);
    const char *p = text;
    std::string piece;
    auto flush = [&]() -> ml_status {
      if (piece.empty()) return ML_OK;
      piece_ids.resize(ctx->tokenizer.max_tokens(piece.size()));
      int m = 0;
      if (const ml_status s = ctx->tokenizer.encode(piece.c_str(), false, false, piece_ids.data(),
                                                    int(piece_ids.size()), &m))
        return s;
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.begin() + m);
      piece.clear();
      return ML_OK;
    };
    while (*p) {
      const bool bos = std::strncmp(p, "<s>", 3) == 0, eos = std::strncmp(p, "</s>", 4) == 0;
      if (bos || eos) {
        if (const ml_status s = flush()) return s;
        ids.push_back(bos ? 1 : 2);
        p += bos ? 3 : 4;
      } else {
        piece.push_back(*p++);
      }
    }
    if (const ml_status s = flush()) return s;
    *n_tokens = int(ids.size());
    if (int(ids.size()) > max_tokens)  // also the size query (tokens NULL, max_tokens 0), as ml_encode_ex
      return fail(ML_E_ARG, "ml_chat_encode: %zu tokens do not fit in %d", ids.size(), max_tokens);
    std::copy(ids.begin(), ids.end(), tokens);
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "ml_chat_encode: out of memory");
  }
  return ML_OK;
}

extern "C" ml_status ml_chat_stop_ids(const ml_ctx *ctx, ml_chat_format format, const int **ids, int *n) {
  if (!ctx || !ids || !n) return fail(ML_E_ARG, "ml_chat_stop_ids: NULL argument");
  if (!ctx->has_tokenizer) return fail(ML_E_ARG, "ml_chat_stop_ids: the context was opened without a tokenizer");
  if (format < ML_CHAT_CHATML || format > ML_CHAT_QWEN3)
    return fail(ML_E_ARG, "ml_chat_stop_ids: format %d is not one of %s", int(format), kChoices + 16);
  ml_ctx *c = const_cast<ml_ctx *>(ctx);  // the lists are filled once, under call_once
  try {
    std::call_once(c->chat_once, fill_stops, c);
  } catch (...) {
    return fail(ML_E_NOMEM, "ml_chat_stop_ids: out of memory");
  }
  if (c->chat_status[format] != ML_OK) return fail(c->chat_status[format], "%s", c->chat_errors[format].c_str());
  *ids = c->chat_stops[format].data();
  *n = int(c->chat_stops[format].size());
  return ML_OK;
}
