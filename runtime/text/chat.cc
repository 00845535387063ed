// Chat prompt formats: detection by markers and rendering as the real templates render
// (runtime/text/chat.h). The C API over a context (stop ids, encoding): runtime/chat_api.cc.
#include "runtime/text/chat.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

#include "kernels/mutants.h"
#include "runtime/error.h"
#include "runtime/text/unicode.h"

namespace ml {

namespace {

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

// The tools block Qwen2.5's and Qwen3's templates write into the system turn (after the system text).
const char kQwenToolsHead[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
    "function signatures within <tools></tools> XML tags:\n<tools>";
const char kQwenToolsTail[] =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

std::string qwen_tools_block(const ChatTools &t) {
  std::string o = kQwenToolsHead;
  for (const std::string &tool : t.tools) o += "\n" + tool;
  return o + kQwenToolsTail;
}

// A message's tool calls (ChatTools::calls), none without tools.
const std::vector<std::pair<std::string, std::string>> &calls_of(const ChatTools *t, int i) {
  static const std::vector<std::pair<std::string, std::string>> kNone;
  return t && i < int(t->calls.size()) ? t->calls[size_t(i)] : kNone;
}

// Qwen's tool-call line: <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
std::string qwen_call(const std::pair<std::string, std::string> &c) {
  return "<tool_call>\n{\"name\": \"" + c.first + "\", \"arguments\": " + c.second + "}\n</tool_call>";
}

// Qwen's tool results: consecutive tool messages share one user turn of <tool_response> blocks.
void qwen_tool_result(const ml_chat_message *m, int n, int i, std::string *o) {
  if (i == 0 || std::strcmp(m[i - 1].role, "tool") != 0) *o += "<|im_start|>user";
  *o += std::string("\n<tool_response>\n") + m[i].content + "\n</tool_response>";
  if (i == n - 1 || std::strcmp(m[i + 1].role, "tool") != 0) *o += "<|im_end|>\n";
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
//   with tools: <|im_start|>system\n + (the first system message + "\n\n") + the tools block;
//   an assistant message's tool calls follow its content, "\n" before each but a first one with no
//   content; tool messages: qwen_tool_result.
void render_qwen3(const ChatTemplateVars &v, const ml_chat_message *m, int n, int add, const ChatTools *t,
                  std::string *out) {
  std::string &o = *out;
  const bool system_first = std::strcmp(m[0].role, "system") == 0;
  if (t && t->on)
    o += std::string("<|im_start|>system\n") + (system_first ? std::string(m[0].content) + "\n\n" : "") +
         qwen_tools_block(*t);
  else if (system_first)
    o += std::string("<|im_start|>system\n") + m[0].content + "<|im_end|>\n";
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
      const auto &calls = calls_of(t, i);
      for (size_t k = 0; k < calls.size(); ++k) o += (k > 0 || !content.empty() ? "\n" : "") + qwen_call(calls[k]);
      o += "<|im_end|>\n";
    } else if (role == "tool") {
      qwen_tool_result(m, n, i, &o);
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

bool chat_tools_supported(ml_chat_format f, const std::string &source) {
  if (f == ML_CHAT_QWEN3) return true;
  if (f == ML_CHAT_CHATML) return has(source, "<tool_call>") && has(source, "<tools>");
  if (f == ML_CHAT_LLAMA3) return has(source, kKnowledge) && has(source, "Environment: ipython");
  return false;
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
                      int add, std::string *out, const ChatTools *tools) {
  const bool add_assistant = (add & ML_CHAT_ASSISTANT) != 0;
  out->clear();
  if (n < 1 || m == nullptr) return fail(ML_E_ARG, "chat: no messages to render");
  if (tools && !chat_tools_supported(f, v.source))
    return fail(ML_E_ARG, "chat: the %s chat template defines no tool calls", ml_chat_format_name(f));
  for (int i = 0; i < n; ++i) {
    const char *r = m[i].role;
    if (!r || (std::strcmp(r, "system") && std::strcmp(r, "user") && std::strcmp(r, "assistant") &&
               (!tools || std::strcmp(r, "tool"))))
      return fail(ML_E_ARG, "chat message %d: role %s is not system, user%s or assistant", i,
                  r ? shown(r).c_str() : "NULL", tools ? ", tool" : "");
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
      const bool has_def = !is(0, "system") && chatml_default_system(v.source, &def);
      if (tools && tools->on) {  // Qwen2.5: the system text (or the default) and the tools block
        o += "<|im_start|>system\n" + (is(0, "system") ? std::string(m[0].content) : def) + "\n\n" +
             qwen_tools_block(*tools);
      } else if (has_def) {
        o += "<|im_start|>system\n" + def + "<|im_end|>\n";
      }
      for (int i = 0; i < n; ++i) {
        const auto &calls = calls_of(tools, i);
        if (i == 0 && is(0, "system") && tools && tools->on) continue;  // written in the tools block
        if (is(i, "tool")) {
          qwen_tool_result(m, n, i, &o);
        } else if (is(i, "assistant") && !calls.empty()) {  // Qwen2.5: "\n" + content only when non-empty
          o += "<|im_start|>assistant" + (*m[i].content ? "\n" + std::string(m[i].content) : std::string());
          for (const auto &c : calls) o += "\n" + qwen_call(c);
          o += "<|im_end|>\n";
        } else {
          o += "<|im_start|>" + role(i) + "\n" + m[i].content + "<|im_end|>\n";
        }
      }
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
        const bool on = tools && tools->on;
        o += v.bos + "<|start_header_id|>system<|end_header_id|>\n\n" + (on ? "Environment: ipython\n" : "") +
             kKnowledge + "\nToday Date: " + date + "\n\n" + system + "<|eot_id|>";
        if (on) {  // tools_in_user_message (the default): the tools go before the first message's text
          if (first >= n)
            return fail(ML_E_ARG, "chat: Llama 3.1+ puts the tools in the first user message, and there is none");
          o += "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a "
               "JSON for a function call with its proper arguments that best answers the given prompt.\n\n"
               "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and "
               "its value}.Do not use variables.\n\n";
          for (const std::string &t : tools->tools) o += t + "\n\n";
          o += strip(m[first].content) + "<|eot_id|>";
          ++first;
        }
      }
      for (int i = first; i < n; ++i) {
        const auto &calls = calls_of(tools, i);
        if (is(i, "tool")) {  // the content as the caller serialized it (tojson)
          o += std::string("<|start_header_id|>ipython<|end_header_id|>\n\n") + m[i].content + "<|eot_id|>";
          continue;
        }
        if (!calls.empty()) {
          if (calls.size() != 1)
            return fail(ML_E_ARG, "chat message %d: Llama 3.1+ takes one tool call per message, not %zu", i,
                        calls.size());
          o += "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"" + calls[0].first +
               "\", \"parameters\": " + calls[0].second + "}<|eot_id|>";
          continue;
        }
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
      render_qwen3(v, m, n, add, tools, &o);
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

}  // namespace ml
