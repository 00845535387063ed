// Chat prompt formats (runtime/text/chat.h, ml_chat_* of runtime/ml.h):
//  - ml::chat_render against verify/data/chat_expected.txt: what a real Jinja engine
//    (@huggingface/jinja, verify/chat_oracle.js) renders for the real templates of Qwen2.5,
//    SmolLM2, generic ChatML, TinyLlama-Chat (Zephyr), Llama 2 chat and Llama 3 Instruct, and
//    Python's jinja2 for Qwen3's (<think> reasoning kept only after the last user query;
//    enable_thinking = false), over conversations with and without a system message, multi-turn,
//    UTF-8, whitespace to trim, <think> blocks, with and without add_generation_prompt; byte for
//    byte, and the template's refusals as ML_E_ARG;
//  - detection by markers, including templates it must refuse (Mistral, Phi-3.5, Gemma 2);
//  - named edge cases: bad roles, invalid UTF-8, no messages, a default system prompt's escapes;
//  - the C API's names and buffer rules on a context with a llama2.c tokenizer (no template).
// ml_run --chat end to end (KV cache kept across turns, stop ids, a full context): verify/tests/test_chat.py.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "runtime/text/chat.h"
#include "verify/tests/common.h"

namespace {

std::string unesc(const std::string &s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      o.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    o.push_back(c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c);
  }
  return o;
}

struct Case {
  int gen = 0;  // 0, 1 (add_generation_prompt), 2 (and enable_thinking = false)
  std::string name;
  std::vector<std::pair<std::string, std::string>> msgs;
  bool error = false;
  std::string want;
};
struct Template {
  std::string name, format;
  ml::ChatTemplateVars vars;
  std::vector<Case> cases;
};

std::vector<Template> load_expected() {
  std::ifstream f(test::env_path("ML_SOURCE", "verify/data/chat_expected.txt"), std::ios::binary);
  REQUIRE(f.good());
  std::vector<Template> t;
  std::string line, today;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "today") {
      today = unesc(rest);
    } else if (key == "template") {
      t.emplace_back();
      t.back().vars.today = today;
      const size_t s2 = rest.find(' ');
      t.back().name = rest.substr(0, s2);
      t.back().format = rest.substr(s2 + 1);
    } else if (key == "vars") {
      const size_t s2 = rest.find(' ');
      const std::string b = rest.substr(0, s2), e = rest.substr(s2 + 1);
      t.back().vars.bos = b == "-" ? "" : unesc(b);
      t.back().vars.eos = e == "-" ? "" : unesc(e);
    } else if (key == "source") {
      t.back().vars.source = unesc(rest);
    } else if (key == "case") {
      Case c;
      c.gen = rest[0] - '0';
      REQUIRE((c.gen >= 0 && c.gen <= 2));
      c.name = rest.substr(rest.find(' ', 2) + 1);
      t.back().cases.push_back(c);
    } else if (key == "msg") {
      const size_t s2 = rest.find(' ');
      t.back().cases.back().msgs.emplace_back(rest.substr(0, s2), unesc(rest.substr(s2 + 1)));
    } else if (key == "want") {
      t.back().cases.back().want = unesc(rest);
    } else if (key == "error") {
      t.back().cases.back().error = true;
    } else if (key == "note") {  // the expected text is jinja2's where the JS engine differs
    } else {
      FAIL("chat_expected.txt: unknown record " << key);
    }
  }
  return t;
}

std::vector<ml_chat_message> as_messages(const std::vector<std::pair<std::string, std::string>> &m) {
  std::vector<ml_chat_message> out;
  for (const auto &p : m) out.push_back({p.first.c_str(), p.second.c_str()});
  return out;
}

}  // namespace

TEST_CASE("chat: templates render byte for byte as the Jinja engine renders them", "[chat]") {
  const std::vector<Template> all = load_expected();
  int rendered = 0, refused = 0, detected = 0;
  std::map<std::string, int> per_format;
  for (const Template &t : all) {
    INFO("template " << t.name);
    const ml_chat_format f = ml::chat_detect_source(t.vars.source);
    CHECK(std::string(ml_chat_format_name(f)) == t.format);
    ++detected;
    if (t.format == "unknown") continue;
    for (const Case &c : t.cases) {
      INFO("conversation \"" << c.name << "\", add_generation_prompt " << c.gen);
      const std::vector<ml_chat_message> m = as_messages(c.msgs);
      std::string out;
      const int add = c.gen == 0 ? 0 : c.gen == 1 ? ML_CHAT_ASSISTANT : ML_CHAT_ASSISTANT | ML_CHAT_NO_THINKING;
      const ml_status s = ml::chat_render(f, t.vars, m.data(), int(m.size()), add, &out);
      if (c.error) {
        CHECK(s == ML_E_ARG);
        ++refused;
      } else {
        REQUIRE(s == ML_OK);
        CHECK(out == c.want);
        ++rendered;
        ++per_format[t.format];
      }
    }
  }
  // Every format was compared, and the file is the one described (a truncated file fails here).
  CHECK(per_format.size() == 5);
  CHECK(rendered >= 280);
  CHECK(per_format["qwen3"] == 3 * 14);  // every conversation, add_generation_prompt 0, 1, 2
  CHECK(refused >= 2);  // llama2: two users in a row
  CHECK(detected >= 12);
  CHECK(per_format["llama3"] >= 4 * 22);  // 3.0 (both revisions), 3.1 and 3.2
}

TEST_CASE("chat: detection by markers", "[chat]") {
  CHECK(ml::chat_detect_source("") == ML_CHAT_UNKNOWN);
  CHECK(ml::chat_detect_source("{{ messages }}") == ML_CHAT_UNKNOWN);
  CHECK(ml::chat_detect_source("<|im_start|> without its end") == ML_CHAT_UNKNOWN);
  CHECK(ml::chat_detect_source("'<|im_start|>' ... '<|im_end|>'") == ML_CHAT_CHATML);
  CHECK(ml::chat_detect_source("<|user|> <|assistant|> eos_token") == ML_CHAT_ZEPHYR);
  CHECK(ml::chat_detect_source("<|user|> <|assistant|> <|end|>") == ML_CHAT_UNKNOWN);  // Phi-3
  CHECK(ml::chat_detect_source("[INST] <<SYS>>") == ML_CHAT_LLAMA2);
  CHECK(ml::chat_detect_source("[INST] [/INST]") == ML_CHAT_UNKNOWN);  // Mistral
  CHECK(ml::chat_detect_source("<|start_header_id|><|end_header_id|><|eot_id|>") == ML_CHAT_LLAMA3);
  // Qwen3: ChatML markers and its <think> handling; <think> alone (QwQ, R1 distills) stays ChatML.
  CHECK(ml::chat_detect_source("<|im_start|> <|im_end|> <think> </think> reasoning_content last_query_index") ==
        ML_CHAT_QWEN3);
  CHECK(ml::chat_detect_source("<|im_start|> <|im_end|> <think> </think>") == ML_CHAT_CHATML);
  CHECK(std::string(ml_chat_format_name(ML_CHAT_QWEN3)) == "qwen3");
  ml_chat_format q = ML_CHAT_UNKNOWN;
  CHECK((ml_chat_parse_name("qwen3", &q) == ML_OK && q == ML_CHAT_QWEN3));
  CHECK(ml::chat_detect_source("<|start_header_id|><|end_header_id|><|eot_id|>Cutting Knowledge Date: December 2023") ==
        ML_CHAT_LLAMA3);
  CHECK(ml::chat_detect_source("<|start_header_id|><|end_header_id|><|eot_id|>Cutting Knowledge Date: May 2031") ==
        ML_CHAT_UNKNOWN);  // a dated block we do not know
}

TEST_CASE("chat: ChatML default system prompt from the template text", "[chat]") {
  std::string s;
  CHECK(ml::chatml_default_system("{{ '<|im_start|>system\\nBe \\'brief\\'.\\tOK<|im_end|>\\n' }}", &s));
  CHECK(s == "Be 'brief'.\tOK");
  CHECK(ml::chatml_default_system("{{ \"<|im_start|>system\\nDouble<|im_end|>\" }}", &s));
  CHECK(s == "Double");
  // the block opened in one literal and written in another (Qwen2.5's tools branch): not a default
  CHECK_FALSE(ml::chatml_default_system("{{- '<|im_start|>system\\n' }}{{ 'x<|im_end|>' }}", &s));
  CHECK_FALSE(ml::chatml_default_system("{{ '<|im_start|>system\\n<|im_end|>' }}", &s));  // empty
  CHECK_FALSE(ml::chatml_default_system("{{ '<|im_start|>system\\n\\u00e9<|im_end|>' }}", &s));  // unmodelled escape
  CHECK_FALSE(ml::chatml_default_system("<|im_start|>system\\nno quote<|im_end|>", &s));
}

TEST_CASE("chat: edge cases of rendering", "[chat]") {
  ml::ChatTemplateVars v;
  v.bos = "<s>";
  v.eos = "</s>";
  std::string out;
  const ml_chat_message ok[] = {{"user", "hi"}};
  SECTION("no messages") { CHECK(ml::chat_render(ML_CHAT_CHATML, v, ok, 0, true, &out) == ML_E_ARG); }
  SECTION("unknown role, NULL role, NULL content") {
    const ml_chat_message bad[] = {{"tool", "x"}};
    CHECK(ml::chat_render(ML_CHAT_CHATML, v, bad, 1, true, &out) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("\"tool\"") != std::string::npos);
    const ml_chat_message null_role[] = {{nullptr, "x"}};
    CHECK(ml::chat_render(ML_CHAT_ZEPHYR, v, null_role, 1, true, &out) == ML_E_ARG);
    const ml_chat_message null_content[] = {{"user", nullptr}};
    CHECK(ml::chat_render(ML_CHAT_LLAMA3, v, null_content, 1, true, &out) == ML_E_ARG);
  }
  SECTION("invalid UTF-8: a stray continuation byte, a surrogate, a truncated character") {
    for (const char *s : {"a\x80", "\xed\xa0\x80", "\xe4\xb8"}) {
      const ml_chat_message m[] = {{"user", s}};
      CHECK(ml::chat_render(ML_CHAT_CHATML, v, m, 1, true, &out) == ML_E_ARG);
    }
  }
  SECTION("format UNKNOWN") { CHECK(ml::chat_render(ML_CHAT_UNKNOWN, v, ok, 1, true, &out) == ML_E_ARG); }
  SECTION("qwen3: enable_thinking = false only with the assistant header and a template that has the switch") {
    const std::string head = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", empty = "<think>\n\n</think>\n\n";
    REQUIRE(ml::chat_render(ML_CHAT_QWEN3, v, ok, 1, ML_CHAT_ASSISTANT | ML_CHAT_NO_THINKING, &out) == ML_OK);
    CHECK(out == head + empty);  // no template: the built-in form has the switch
    REQUIRE(ml::chat_render(ML_CHAT_QWEN3, v, ok, 1, ML_CHAT_NO_THINKING, &out) == ML_OK);
    CHECK(out == "<|im_start|>user\nhi<|im_end|>\n");
    ml::ChatTemplateVars no_switch = v;  // a Qwen3 template without enable_thinking (2507 Instruct)
    no_switch.source = "<|im_start|> <|im_end|> <think> </think> reasoning_content last_query_index";
    REQUIRE(ml::chat_render(ML_CHAT_QWEN3, no_switch, ok, 1, ML_CHAT_ASSISTANT | ML_CHAT_NO_THINKING, &out) == ML_OK);
    CHECK(out == head);
    REQUIRE(ml::chat_render(ML_CHAT_CHATML, v, ok, 1, ML_CHAT_ASSISTANT | ML_CHAT_NO_THINKING, &out) == ML_OK);
    CHECK(out == head);  // other formats ignore it
  }
  SECTION("llama2: an assistant first, and a system message that is not first") {
    const ml_chat_message a[] = {{"assistant", "x"}};
    CHECK(ml::chat_render(ML_CHAT_LLAMA2, v, a, 1, true, &out) == ML_E_ARG);
    const ml_chat_message b[] = {{"user", "a"}, {"system", "b"}};  // index 1: passes, writes nothing
    REQUIRE(ml::chat_render(ML_CHAT_LLAMA2, v, b, 2, true, &out) == ML_OK);
    CHECK(out == "<s>[INST] a [/INST]");
  }
  SECTION("llama3 without a template source: the header only when asked") {
    REQUIRE(ml::chat_render(ML_CHAT_LLAMA3, v, ok, 1, false, &out) == ML_OK);
    CHECK(out == "<s><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>");
  }
}

TEST_CASE("chat: C API names, detection and buffers with a llama2.c tokenizer", "[chat_api]") {
  ml_chat_format f = ML_CHAT_UNKNOWN;
  CHECK(ml_chat_parse_name("llama3", &f) == ML_OK);
  CHECK(f == ML_CHAT_LLAMA3);
  CHECK(ml_chat_parse_name("jinja", &f) == ML_E_ARG);
  CHECK(std::string(ml_last_error()).find("chatml|zephyr|llama2|llama3|qwen3") != std::string::npos);
  CHECK(ml_chat_parse_name(nullptr, &f) == ML_E_ARG);
  CHECK(std::string(ml_chat_format_name(ML_CHAT_ZEPHYR)) == "zephyr");
  // 7: not a format, yet inside the enum's value range (3 bits), so the call itself is defined C++
  CHECK(std::string(ml_chat_format_name(ml_chat_format(7))) == "unknown");

  ml_ctx *ctx = nullptr;
  ml_options o;
  ml_options_init(&o);
  o.n_threads = 1;
  o.max_seq = 16;
  const std::string model = test::models("stories260K_f32.mlb");
  const std::string tok = test::shared("models/stories260K/tok512.bin");
  REQUIRE(ml_open(&ctx, model.c_str(), tok.c_str(), &o) == ML_OK);
  CHECK(ml_chat_detect(ctx, &f) == ML_E_FORMAT);
  CHECK(std::string(ml_last_error()).find("--chat-template chatml|zephyr|llama2|llama3|qwen3") != std::string::npos);
  const int *ids = nullptr;
  int n = 0;
  CHECK(ml_chat_stop_ids(ctx, ML_CHAT_CHATML, &ids, &n) == ML_E_FORMAT);  // no <|im_end|> in tokenizer.bin
  REQUIRE(ml_chat_stop_ids(ctx, ML_CHAT_ZEPHYR, &ids, &n) == ML_OK);
  REQUIRE(n == 1);
  CHECK(ids[0] == 2);
  const ml_chat_message m[] = {{"system", "S"}, {"user", "hi"}};
  size_t len = 0;
  REQUIRE(ml_chat_render(ctx, ML_CHAT_ZEPHYR, m, 2, 1, nullptr, 0, &len) == ML_OK);  // size query
  const std::string want = "<|system|>\nS</s>\n<|user|>\nhi</s>\n<|assistant|>\n";
  CHECK(len == want.size());
  std::vector<char> buf(len + 1);
  CHECK(ml_chat_render(ctx, ML_CHAT_ZEPHYR, m, 2, 1, buf.data(), len, &len) == ML_E_ARG);  // no room for NUL
  REQUIRE(ml_chat_render(ctx, ML_CHAT_ZEPHYR, m, 2, 1, buf.data(), buf.size(), &len) == ML_OK);
  CHECK(std::string(buf.data()) == want);
  // llama2.c encoding: BOS first (the text does not start with <s>), </s> as id 2 between pieces
  std::vector<int> t(ml_encode_bound(ctx, want.size()));
  int nt = 0;
  REQUIRE(ml_chat_encode(ctx, buf.data(), t.data(), int(t.size()), &nt) == ML_OK);
  REQUIRE(nt > 4);
  CHECK(t[0] == 1);
  int eos = 0;
  for (int i = 0; i < nt; ++i) eos += t[size_t(i)] == 2;
  CHECK(eos == 2);
  int nq = 0;
  CHECK(ml_chat_encode(ctx, "<s>[INST] x [/INST]", nullptr, 0, &nq) == ML_E_ARG);  // size query, as ml_encode_ex
  std::vector<int> t2(size_t(nq) + 1);
  REQUIRE(ml_chat_encode(ctx, "<s>[INST] x [/INST]", t2.data(), int(t2.size()), &nq) == ML_OK);
  CHECK(t2[0] == 1);
  CHECK(std::count(t2.begin(), t2.begin() + nq, 1) == 1);  // no second BOS
  ml_close(ctx);
}
