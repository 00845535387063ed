// Fuzz target: the chat formats (runtime/text/chat.h) on arbitrary bytes — the template source a
// tokenizer file carries (untrusted: detection by markers, the ChatML default system prompt taken
// out of a Jinja string literal with its escapes, Llama 3.1's date_string), the bos/eos texts,
// and the messages, roles included.
//
// Input: byte 0 = the format (bits 0-2: 0 = chat_detect_source of the template, 1-5 the formats,
// 6-7 outside the enum) and add_assistant (bit 3); then NUL-separated fields: template source,
// bos, eos, today, then role and content of each message (at most 32; a missing content is "").
// Accepted (ok-* seeds) = chat_render returned ML_OK. Properties:
//   - chat_detect_source gives a value of the enum, and a format only when the template holds
//     that format's markers;
//   - chatml_default_system, when it finds a prompt: non-empty, without <|im_end|>, valid UTF-8
//     when the template is;
//   - chat_render refuses (ML_E_ARG, one line) exactly: no message, a role other than system /
//     user / assistant, content that is not valid UTF-8 (RFC 3629 validator, fuzz_common.h), a
//     format outside chatml..qwen3, and for llama2 roles that do not alternate user / assistant
//     after one optional system message;
//   - what it renders holds every message's content in order (chatml and zephyr verbatim,
//     llama3 and llama2's user/assistant turns after the first stripped of ASCII whitespace, qwen3's
//     user turns verbatim: its assistant turns lose their <think> reasoning by design), and
//     is valid UTF-8 when every input is.
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime/text/chat.h"

namespace {

constexpr int kMaxMessages = 32;

bool utf8(const std::string &s) {
  return mlfuzz::rfc3629_valid(reinterpret_cast<const unsigned char *>(s.data()), s.size());
}

bool has(const std::string &s, const char *needle) { return s.find(needle) != std::string::npos; }

std::string strip_ascii(const std::string &s) {  // Python's str.strip() on ASCII whitespace
  const char *ws = " \t\n\r\v\f";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Each of `parts` found in `out` after the previous one.
bool in_order(const std::string &out, const std::vector<std::string> &parts) {
  size_t at = 0;
  for (const std::string &p : parts) {
    const size_t f = out.find(p, at);
    if (f == std::string::npos) return false;
    at = f + p.size();
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlfuzz::g_accepted = -1;
  if (size < 1) return 0;
  const int fmt = data[0] & 7;
  const bool add_assistant = (data[0] & 8) != 0;
  std::vector<std::string> fields(1);
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0)
      fields.emplace_back();
    else
      fields.back().push_back(char(data[i]));
  }
  fields.resize(std::max<size_t>(fields.size(), 4));
  ml::ChatTemplateVars vars;
  vars.source = fields[0], vars.bos = fields[1], vars.eos = fields[2], vars.today = fields[3];

  // Detection and the ChatML default system prompt.
  const ml_chat_format detected = ml::chat_detect_source(vars.source);
  ML_FUZZ_CHECK(detected >= ML_CHAT_UNKNOWN && detected <= ML_CHAT_QWEN3, "detected format outside the enum");
  const std::string &src = vars.source;
  if (detected == ML_CHAT_CHATML) ML_FUZZ_CHECK(has(src, "<|im_start|>") && has(src, "<|im_end|>"), "chatml");
  if (detected == ML_CHAT_QWEN3)
    ML_FUZZ_CHECK(has(src, "<|im_start|>") && has(src, "<|im_end|>") && has(src, "<think>") && has(src, "</think>"),
                  "qwen3");
  if (detected == ML_CHAT_ZEPHYR) ML_FUZZ_CHECK(has(src, "<|user|>") && has(src, "<|assistant|>"), "zephyr");
  if (detected == ML_CHAT_LLAMA2) ML_FUZZ_CHECK(has(src, "[INST]") && has(src, "<<SYS>>"), "llama2");
  if (detected == ML_CHAT_LLAMA3)
    ML_FUZZ_CHECK(has(src, "<|start_header_id|>") && has(src, "<|end_header_id|>") && has(src, "<|eot_id|>"),
                  "llama3");
  std::string def;
  if (ml::chatml_default_system(src, &def)) {
    ML_FUZZ_CHECK(!def.empty(), "an empty default system prompt");
    ML_FUZZ_CHECK(!has(def, "<|im_end|>"), def.c_str());
    if (utf8(src)) ML_FUZZ_CHECK(utf8(def), "the default system prompt of a valid template is not UTF-8");
  }

  // Messages: role and content pairs from field 4 on.
  std::vector<ml_chat_message> msgs;
  for (size_t i = 4; i < fields.size() && int(msgs.size()) < kMaxMessages; i += 2) {
    if (i + 1 >= fields.size()) fields.emplace_back();
    msgs.push_back({fields[i].c_str(), fields[i + 1].c_str()});
  }
  const ml_chat_format f = fmt == 0 ? detected : ml_chat_format(fmt);
  std::string out;
  const ml_status st = ml::chat_render(f, vars, msgs.empty() ? nullptr : msgs.data(), int(msgs.size()),
                                       add_assistant, &out);
  mlfuzz::g_accepted = st == ML_OK;

  // What must be refused, restated from the contract.
  bool refuse = msgs.empty() || f < ML_CHAT_CHATML || f > ML_CHAT_QWEN3;
  bool all_utf8 = utf8(vars.source) && utf8(vars.bos) && utf8(vars.eos) && utf8(vars.today);
  for (const ml_chat_message &m : msgs) {
    const std::string r = m.role;
    if (r != "system" && r != "user" && r != "assistant") refuse = true;
    if (!utf8(m.content)) refuse = true;
  }
  if (!refuse && f == ML_CHAT_LLAMA2) {
    const size_t first = std::string(msgs[0].role) == "system" ? 1 : 0;
    for (size_t i = first; i < msgs.size(); ++i)
      if ((std::string(msgs[i].role) == "user") != ((i - first) % 2 == 0)) refuse = true;
  }
  if (refuse) {
    ML_FUZZ_CHECK(st == ML_E_ARG, "chat_render accepted what the contract refuses");
    mlfuzz::check_error_line(st);
    return 0;
  }
  ML_FUZZ_CHECK(st == ML_OK, ml_last_error());
  std::vector<std::string> parts;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string c = msgs[i].content;
    if (f == ML_CHAT_CHATML || f == ML_CHAT_ZEPHYR)
      parts.push_back(c);
    else if (f == ML_CHAT_LLAMA3)
      parts.push_back(strip_ascii(c));
    else if (f == ML_CHAT_QWEN3) {
      if (std::string(msgs[i].role) == "user") parts.push_back(c);
    }
    else if (i >= 2 && std::string(msgs[i].role) != "system")  // llama2: the first turns merge with <<SYS>>
      parts.push_back(strip_ascii(c));
  }
  ML_FUZZ_CHECK(in_order(out, parts), "a message's content is missing from the rendered text");
  if (all_utf8) ML_FUZZ_CHECK(utf8(out), "rendered text of valid UTF-8 inputs is not valid UTF-8");
  return 0;
}
