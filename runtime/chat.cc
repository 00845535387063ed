// Chat prompt formats: detection by markers, rendering as the real templates render, the
// end-of-turn ids, and the encoding of rendered text (runtime/chat.h, runtime/ml.h ml_chat_*).
#include "runtime/chat.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

#include "kernels/mutants.h"
#include "runtime/context.h"
#include "runtime/error.h"
#include "runtime/tokenizer.h"
#include "runtime/unicode.h"

namespace ml {

namespace {

const char kChoices[] = "--chat-template chatml|zephyr|llama2|llama3|qwen3";
const char kKnowledge[] = "Cutting Knowledge Date: December 2023";

bool has(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

// Whitespace as Jinja's trim / Python's str.strip() see it, for ASCII (the only whitespace the
// formats' own text holds; other Unicode spaces in a message are kept).
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string strip(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Jinja string-literal escapes, as Python's and @huggingface/jinja's lexers read them.
bool unescape(const std::string &lit, std::string *out) {
  out->clear();
  for (size_t i = 0; i < lit.size(); ++i) {
    if (lit[i] != '\\') {
      out->push_back(lit[i]);
      continue;
    }
    if (++i >= lit.size()) return false;
    switch (lit[i]) {
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case '\\': out->push_back('\\'); break;
      case '\'': out->push_back('\''); break;
      case '"': out->push_back('"'); break;
      default: return false;  // an escape we do not model: no default prompt rather than a wrong one
    }
  }
  return true;
}

// An untrusted string as an error shows it: quoted, printable ASCII as is, other bytes as \xNN,
// at most 32 bytes (then ...), so that the message stays one line of text.
std::string shown(const char *s) {
  std::string o = "\"";
  size_t i = 0;
  for (; s[i] && i < 32; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      o.push_back(char(c));
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02X", c);
      o += b;
    }
  }
  if (s[i]) o += "...";
  return o + "\"";
}

// Python's str.lstrip / rstrip / strip of one character, and the parts of split(sep) the Qwen3
// template takes: [0] (before the first sep) and [-1] (after the last).
std::string lstrip_c(const std::string &s, char c) {
  size_t b = 0;
  while (b < s.size() && s[b] == c) ++b;
  return s.substr(b);
}
std::string rstrip_c(const std::string &s, char c) {
  size_t e = s.size();
  while (e > 0 && s[e - 1] == c) --e;
  return s.substr(0, e);
}
std::string before_first(const std::string &s, const char *sep) {
  const size_t at = s.find(sep);
  return at == std::string::npos ? s : s.substr(0, at);
}
std::string after_last(const std::string &s, const char *sep) {
  const size_t at = s.rfind(sep);
  return at == std::string::npos ? s : s.substr(at + std::strlen(sep));
}
bool starts_with(const std::string &s, const char *p) { return s.compare(0, std::strlen(p), p) == 0; }
bool ends_with(const std::string &s, const char *p) {
  const size_t k = std::strlen(p);
  return s.size() >= k && s.compare(s.size() - k, k, p) == 0;
}

// Qwen3's template (verify/data/chat_templates.json "qwen3") for system/user/assistant messages with
// string contents, step by step as it reads:
//   a system message first: <|im_start|>system\nCONTENT<|im_end|>\n (no default one);
//   last_query_index: the last user message that is not "<tool_response>...</tool_response>" (else n-1);
//   user, and system after the first: <|im_start|>ROLE\nCONTENT<|im_end|>\n;
//   assistant: with "</think>" in the content, reasoning = content.split('</think>')[0].rstrip('\n')
//     .split('<think>')[-1].lstrip('\n') and content = content.split('</think>')[-1].lstrip('\n');
//     after the last query, when it is the last message or has reasoning:
//     <|im_start|>assistant\n<think>\nREASONING.strip('\n')\n</think>\n\nCONTENT.lstrip('\n')<|im_end|>\n,
//     else <|im_start|>assistant\nCONTENT<|im_end|>\n;
//   add_generation_prompt: <|im_start|>assistant\n, and "<think>\n\n</think>\n\n" with
//     enable_thinking = false (when the template has that switch).
void render_qwen3(const ChatTemplateVars &v, const ml_chat_message *m, int n, int add, std::string *out) {
  std::string &o = *out;
  const bool system_first = std::strcmp(m[0].role, "system") == 0;
  if (system_first) o += std::string("<|im_start|>system\n") + m[0].content + "<|im_end|>\n";
  int last_query = n - 1;
  for (int i = n - 1; i >= 0; --i) {
    const std::string c = m[i].content;
    if (std::strcmp(m[i].role, "user") == 0 && !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (int i = 0; i < n; ++i) {
    const std::string role = m[i].role;
    std::string content = m[i].content;
    if (role == "user" || (role == "system" && i > 0)) {
      o += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
    } else if (role == "assistant") {
      std::string reasoning;
      if (content.find("</think>") != std::string::npos) {
        reasoning = lstrip_c(after_last(rstrip_c(before_first(content, "</think>"), '\n'), "<think>"), '\n');
        content = lstrip_c(after_last(content, "</think>"), '\n');
      }
      if (i > last_query && (i == n - 1 || !reasoning.empty()))
        o += "<|im_start|>assistant\n<think>\n" + rstrip_c(lstrip_c(reasoning, '\n'), '\n') + "\n</think>\n\n" +
             lstrip_c(content, '\n');
      else
        o += "<|im_start|>assistant\n" + content;
      o += "<|im_end|>\n";
    }
  }
  if (add & ML_CHAT_ASSISTANT) {
    o += "<|im_start|>assistant\n";
    // the switch as the template has it (Qwen3 2504's; Qwen3-2507's templates have none), and in the
    // built-in form (no template: --chat-template qwen3)
    if ((add & ML_CHAT_NO_THINKING) && (v.source.empty() || has(v.source, "enable_thinking")))
      o += "<think>\n\n</think>\n\n";
  }
}

}  // namespace

ml_chat_format chat_detect_source(const std::string &t) {
  if (t.empty()) return ML_CHAT_UNKNOWN;
  // Qwen3: ChatML with its <think> handling (reasoning_content, the last user query's index).
  if (has(t, "<|im_start|>") && has(t, "<|im_end|>") && has(t, "<think>") && has(t, "</think>") &&
      has(t, "reasoning_content") && has(t, "last_query_index"))
    return ML_CHAT_QWEN3;
  if (has(t, "<|im_start|>") && has(t, "<|im_end|>")) return ML_CHAT_CHATML;
  // Llama 3.0, and 3.1+ with their dated system block (another knowledge date: not one we know).
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>") && has(t, "<|eot_id|>") &&
      (!has(t, "Cutting Knowledge Date") || has(t, kKnowledge)))
    return ML_CHAT_LLAMA3;
  // Zephyr; Phi-3 shares <|user|>/<|assistant|> but ends turns with <|end|>.
  if (has(t, "<|user|>") && has(t, "<|assistant|>") && !has(t, "<|end|>")) return ML_CHAT_ZEPHYR;
  // Llama 2 chat; Mistral's [INST] templates have no <<SYS>> block and differ.
  if (has(t, "[INST]") && has(t, "<<SYS>>")) return ML_CHAT_LLAMA2;
  return ML_CHAT_UNKNOWN;
}

bool chatml_default_system(const std::string &t, std::string *text) {
  // A string literal '<|im_start|>system\nTEXT<|im_end|>...' (the \n written as an escape): the
  // first such literal with TEXT inside it (Qwen2.5's tools branch opens the block in one literal
  // and writes the text in another: not this form).
  static const char kOpen[] = "<|im_start|>system\\n";
  for (size_t at = t.find(kOpen); at != std::string::npos; at = t.find(kOpen, at + 1)) {
    if (at == 0) continue;
    const char quote = t[at - 1];
    if (quote != '\'' && quote != '"') continue;
    const size_t body = at + sizeof kOpen - 1;
    size_t end = body;
    while (end < t.size() && t[end] != quote) end += t[end] == '\\' ? 2 : 1;
    if (end >= t.size()) continue;
    const size_t close = t.find("<|im_end|>", body);
    if (close == std::string::npos || close > end || close == body) continue;
    std::string s;
    if (!unescape(t.substr(body, close - body), &s)) continue;
    *text = s;
    return true;
  }
  return false;
}

ml_status chat_render(ml_chat_format f, const ChatTemplateVars &v, const ml_chat_message *m, int n,
                      int add, std::string *out) {
  const bool add_assistant = (add & ML_CHAT_ASSISTANT) != 0;
  out->clear();
  if (n < 1 || m == nullptr) return fail(ML_E_ARG, "chat: no messages to render");
  for (int i = 0; i < n; ++i) {
    const char *r = m[i].role;
    if (!r || (std::strcmp(r, "system") && std::strcmp(r, "user") && std::strcmp(r, "assistant")))
      return fail(ML_E_ARG, "chat message %d: role %s is not system, user or assistant", i,
                  r ? shown(r).c_str() : "NULL");
    if (!m[i].content) return fail(ML_E_ARG, "chat message %d: content is NULL", i);
    size_t bad = 0;
    if (!unicode::valid_utf8(m[i].content, std::strlen(m[i].content), &bad))
      return fail(ML_E_ARG, "chat message %d: content is not valid UTF-8 (byte %zu)", i, bad);
  }
  auto role = [&](int i) { return std::string(m[i].role); };
  auto is = [&](int i, const char *r) { return std::strcmp(m[i].role, r) == 0; };
  std::string &o = *out;
  switch (f) {
    case ML_CHAT_CHATML: {
      // Generic ChatML writes every message alike; Qwen2.5 / SmolLM2 first write their default
      // system prompt when the conversation does not start with a system message.
      std::string def;
      if (!is(0, "system") && chatml_default_system(v.source, &def))
        o += "<|im_start|>system\n" + def + "<|im_end|>\n";
      for (int i = 0; i < n; ++i) o += "<|im_start|>" + role(i) + "\n" + m[i].content + "<|im_end|>\n";
      if (add_assistant) o += "<|im_start|>assistant\n";
      return ML_OK;
    }
    case ML_CHAT_ZEPHYR:
      for (int i = 0; i < n; ++i)  // mutant: the EOS after each message dropped
        o += "<|" + role(i) + "|>\n" + m[i].content + (ML_MUTANT("chat_zephyr_eos") ? std::string() : v.eos) + "\n";
      if (add_assistant) o += "<|assistant|>\n";
      return ML_OK;
    case ML_CHAT_LLAMA2: {
      int first = 0;
      std::string system;
      bool has_system = false;
      if (is(0, "system")) {
        first = 1;
        system = m[0].content;
        has_system = true;
      }
      for (int i = first; i < n; ++i) {
        const int k = i - first;  // loop.index0
        if (is(i, "user") != (k % 2 == 0))
          return fail(ML_E_ARG, "chat message %d (%s): the llama2 format needs user and assistant messages to "
                      "alternate, starting with user (after one optional system message)", i, m[i].role);
        std::string content = m[i].content;
        if (k == 0 && has_system) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
        if (is(i, "user"))
          o += v.bos + "[INST] " + strip(content) + " [/INST]";
        else if (is(i, "assistant"))
          o += " " + strip(content) + " " + v.eos;
        // a system message at an odd place passes the template's check and writes nothing
      }
      return ML_OK;
    }
    case ML_CHAT_LLAMA3: {
      int first = 0;
      const bool dated = has(v.source, kKnowledge);
      if (dated) {  // Llama 3.1+: the system block is always written
        std::string date = v.today;
        if (!has(v.source, "strftime_now")) {  // 3.1: the template's own default date_string
          static const char kSet[] = "set date_string = \"";
          const size_t at = v.source.find(kSet);
          const size_t end = at == std::string::npos ? at : v.source.find('"', at + sizeof kSet - 1);
          if (end != std::string::npos) date = v.source.substr(at + sizeof kSet - 1, end - (at + sizeof kSet - 1));
        }
        std::string system;
        if (is(0, "system")) {
          system = strip(m[0].content);
          first = 1;
        }
        o += v.bos + "<|start_header_id|>system<|end_header_id|>\n\n" + kKnowledge + "\nToday Date: " + date + "\n\n" +
             system + "<|eot_id|>";
      }
      for (int i = first; i < n; ++i) {
        std::string c = "<|start_header_id|>" + role(i) + "<|end_header_id|>\n\n" + strip(m[i].content) + "<|eot_id|>";
        if (i == 0 && !dated) c = v.bos + c;
        o += c;
      }
      // The first Meta-Llama-3-8B-Instruct template wrote the header unconditionally.
      const bool always = !v.source.empty() && !has(v.source, "add_generation_prompt");
      if (add_assistant || always) o += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return ML_OK;
    }
    case ML_CHAT_QWEN3:
      render_qwen3(v, m, n, add, &o);
      return ML_OK;
    case ML_CHAT_UNKNOWN:
      break;
  }
  return fail(ML_E_ARG, "chat format %d is not one of chatml, zephyr, llama2, llama3, qwen3", int(f));
}

std::string chat_today() {
  static const char *const kMonth[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
#if defined(_WIN32)
  if (const std::tm *p = std::gmtime(&now)) tm = *p;  // thread-local storage in Microsoft's C runtime
#else
  gmtime_r(&now, &tm);
#endif
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d %s %04d", tm.tm_mday, kMonth[tm.tm_mon % 12], tm.tm_year + 1900);
  return buf;
}

namespace {

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

extern "C" ml_status ml_chat_render(const ml_ctx *ctx, ml_chat_format format, const ml_chat_message *messages,
                                    int n, int add_assistant, char *out, size_t cap, size_t *len) {
  if (!ctx || !len || (!out && cap != 0)) return fail(ML_E_ARG, "ml_chat_render: NULL argument");
  if (!ctx->has_tokenizer) return fail(ML_E_ARG, "ml_chat_render: the context was opened without a tokenizer");
  if (format < ML_CHAT_CHATML || format > ML_CHAT_QWEN3)
    return fail(ML_E_ARG, "ml_chat_render: format %d is not one of %s", int(format), kChoices + 16);
  std::string text;
  try {
    const ChatTemplateVars v = vars_of(ctx);
    if (const ml_status s = chat_render(format, v, messages, n, add_assistant, &text)) return s;
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "ml_chat_render: out of memory");
  }
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
