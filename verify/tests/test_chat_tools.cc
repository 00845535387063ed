// Tool calls in chat templates (issue 34 item 4), structured/tools.h + runtime/text/chat.h:
//   [chat_tools]        every rendering of verify/data/chat_tools_expected.json (Python jinja2 on the
//                       real Qwen2.5, Qwen3, Llama 3.1 and 3.2 templates, verify/chat_tools_jinja2.py)
//                       equals ml::chat_render with ml::tools::chat_tools, byte for byte; the
//                       template's refusals are ML_E_ARG;
//   [chat_tools_parse]  replies parsed back into calls (tool_choice auto) on crafted texts, and the
//                       forced call's schema.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/text/chat.h"
#include "structured/tools.h"
#include "verify/tests/common.h"

namespace {

using ml::tools::ojson;

ml_chat_format format_of(const std::string &name) {
  if (name == "qwen2.5") return ML_CHAT_CHATML;
  if (name == "qwen3") return ML_CHAT_QWEN3;
  return ML_CHAT_LLAMA3;
}

}  // namespace

TEST_CASE("tool calls render as jinja2 renders the real templates", "[chat_tools]") {
  const ojson templates = ojson::parse(test::read_file(test::env_path("ML_SOURCE", "verify/data/chat_templates.json")));
  const ojson cases = ojson::parse(test::read_file(test::env_path("ML_SOURCE", "verify/data/chat_tools_cases.json")));
  const ojson rows = ojson::parse(test::read_file(test::env_path("ML_SOURCE", "verify/data/chat_tools_expected.json")))["rows"];
  int compared = 0, refused = 0;
  for (const ojson &row : rows) {
    const std::string tname = row["template"], cname = row["case"];
    const ojson &t = templates["templates"][tname];
    const ml_chat_format f = format_of(tname);
    ml::ChatTemplateVars vars;
    vars.source = t["source"];
    vars.bos = t["bos"];
    vars.eos = t["eos"];
    vars.today = templates["today"];
    const ojson *conv = nullptr;
    for (const ojson &c : cases["cases"])
      if (c["name"] == cname) conv = &c;
    REQUIRE(conv != nullptr);
    // The request as ml_server reads it: roles, contents (a tool result as the format writes it),
    // each message's calls with the arguments string parsed.
    std::vector<std::string> roles, contents;
    std::vector<std::vector<ml::tools::Call>> calls;
    for (const ojson &m : (*conv)["messages"]) {
      roles.push_back(m["role"]);
      const std::string content = m["content"].is_string() ? m["content"].get<std::string>() : "";
      contents.push_back(roles.back() == "tool" ? ml::tools::tool_content(f, content) : content);
      calls.emplace_back();
      if (m.contains("tool_calls"))
        for (const ojson &c : m["tool_calls"])
          calls.back().push_back({c["function"]["name"], ojson::parse(c["function"]["arguments"].get<std::string>())});
    }
    std::vector<ml_chat_message> msgs;
    for (size_t i = 0; i < roles.size(); ++i) msgs.push_back({roles[i].c_str(), contents[i].c_str()});
    const bool on = conv->value("tools", false);
    const ml::ChatTools ct = ml::tools::chat_tools(f, on, cases["tools"], calls);
    std::string out;
    const int gen = row["gen"];
    INFO(tname << " / " << cname << " / gen " << gen);
    const ml_status s = ml::chat_render(f, vars, msgs.data(), int(msgs.size()), gen ? ML_CHAT_ASSISTANT : 0, &out, &ct);
    if (row.contains("error")) {
      CHECK(s == ML_E_ARG);
      ++refused;
    } else {
      REQUIRE(s == ML_OK);
      CHECK(out == row["want"].get<std::string>());
      ++compared;
    }
  }
  CHECK(compared >= 50);
  CHECK(refused >= 8);
}

TEST_CASE("tools need a template that defines them; the tool role needs tools", "[chat_tools]") {
  ml::ChatTemplateVars plain;  // built-in ChatML (no source): no tool format
  const ml_chat_message m[] = {{"user", "q"}, {"tool", "r"}};
  ml::ChatTools ct;
  std::string out;
  CHECK(ml::chat_render(ML_CHAT_CHATML, plain, m, 2, 1, &out, &ct) == ML_E_ARG);
  CHECK(ml::chat_render(ML_CHAT_ZEPHYR, plain, m, 1, 1, &out, &ct) == ML_E_ARG);
  CHECK(ml::chat_render(ML_CHAT_QWEN3, plain, m, 2, 1, &out, nullptr) == ML_E_ARG);  // "tool" without tools
  REQUIRE(ml::chat_render(ML_CHAT_QWEN3, plain, m, 2, 1, &out, &ct) == ML_OK);
  CHECK(out == "<|im_start|>user\nq<|im_end|>\n<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n"
               "<|im_start|>assistant\n");
}

TEST_CASE("tojson is json.dumps(ensure_ascii=False)", "[chat_tools_parse]") {
  const ojson v = ojson::parse(R"({"z": [1, 2.5, -0.0, 1e-07, true, null, {}], "a": "é\u0001\"\\/\n", "m": {"k": []}})");
  CHECK(ml::tools::tojson(v) == "{\"z\": [1, 2.5, -0.0, 1e-07, true, null, {}], \"a\": \"é\\u0001\\\"\\\\/\\n\", \"m\": {\"k\": []}}");
  CHECK(ml::tools::tojson(ojson::parse(R"({"a": [1, {}], "b": {}})"), 2) == "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": {}\n}");
  // numbers as Python's repr: fixed notation up to 1e16, where nlohmann's own dump switches at 1e15
  CHECK(ml::tools::tojson(ojson::parse("[1e15, -2.5e15, 9.999999999999998e15, 1e16, 1.5e-5, 1E2, 12345678901234567890]")) ==
        "[1000000000000000.0, -2500000000000000.0, 9999999999999998.0, 1e+16, 1.5e-05, 100.0, 12345678901234567890]");
  CHECK(ml::tools::tojson(ojson::parse(R"({"a": {"b": [1e15]}})"), 4) == "{\n    \"a\": {\n        \"b\": [\n            1000000000000000.0\n        ]\n    }\n}");
  CHECK(ml::tools::tool_content(ML_CHAT_LLAMA3, "a\"b\n") == "\"a\\\"b\\n\"");
  CHECK(ml::tools::tool_content(ML_CHAT_QWEN3, "a\"b\n") == "a\"b\n");
}

TEST_CASE("replies parse back into tool calls (tool_choice auto)", "[chat_tools_parse]") {
  std::string content;
  std::vector<ml::tools::Call> calls;
  SECTION("qwen: two calls and text around them") {
    REQUIRE(ml::tools::parse_reply(ML_CHAT_QWEN3,
                                   "<think>\nhm\n</think>\n\nLet me look.\n<tool_call>\n{\"name\": \"get_weather\", "
                                   "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": "
                                   "{\"b\": 1, \"a\": 2}, \"name\": \"add\"}\n</tool_call>",
                                   &content, &calls));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].name == "get_weather");
    CHECK(calls[0].arguments.dump() == "{\"city\":\"Oslo\"}");
    CHECK(calls[1].name == "add");
    CHECK(calls[1].arguments.dump() == "{\"b\":1,\"a\":2}");  // key order kept
    CHECK(content == "<think>\nhm\n</think>\n\nLet me look.");
  }
  SECTION("qwen: the forced call, ended right after its JSON (no closing tag)") {
    REQUIRE(ml::tools::parse_reply(ML_CHAT_CHATML, "<tool_call>\n{\"name\":\"now\",\"arguments\":{}}", &content, &calls));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "now");
    CHECK(content.empty());
  }
  SECTION("qwen: arguments given as a JSON string") {
    REQUIRE(ml::tools::parse_reply(ML_CHAT_CHATML, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>",
                                   &content, &calls));
    CHECK(calls[0].arguments.dump() == "{\"x\":1}");
  }
  SECTION("qwen: malformed or absent calls leave the reply as content") {
    for (const char *t : {"plain text", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>",
                          "<tool_call>{\"name\": \"f\"}</tool_call>", "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",
                          "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", "<tool_call>[]</tool_call>"}) {
      INFO(t);
      CHECK_FALSE(ml::tools::parse_reply(ML_CHAT_QWEN3, t, &content, &calls));
      CHECK(calls.empty());
      CHECK(content == t);
    }
  }
  SECTION("llama 3.1+: the whole reply is one call with parameters") {
    REQUIRE(ml::tools::parse_reply(ML_CHAT_LLAMA3, " {\"name\": \"add\", \"parameters\": {\"a\": 1}}\n", &content, &calls));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "add");
    CHECK(calls[0].arguments.dump() == "{\"a\":1}");
    CHECK(content.empty());
    CHECK_FALSE(ml::tools::parse_reply(ML_CHAT_LLAMA3, "Sure: {\"name\": \"add\", \"parameters\": {}}", &content, &calls));
    CHECK_FALSE(ml::tools::parse_reply(ML_CHAT_LLAMA3, "{\"a\": 1}", &content, &calls));
  }
}

TEST_CASE("the forced call's schema", "[chat_tools_parse]") {
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                                       {"type": "function", "function": {"name": "g"}}])");
  std::string err;
  CHECK(ml::tools::call_schema(ML_CHAT_QWEN3, tools, "f", &err) ==
        R"({"type":"object","properties":{"name":{"const":"f"},"arguments":{"type":"object"}},"required":["name","arguments"],"additionalProperties":false})");
  CHECK(ml::tools::call_schema(ML_CHAT_LLAMA3, tools, "g", &err) ==
        R"({"type":"object","properties":{"name":{"const":"g"},"parameters":{"type":"object","properties":{},"additionalProperties":false}},"required":["name","parameters"],"additionalProperties":false})");
  CHECK(ojson::parse(ml::tools::call_schema(ML_CHAT_CHATML, tools, "", &err))["anyOf"].size() == 2);
  CHECK(ml::tools::call_schema(ML_CHAT_CHATML, tools, "h", &err).empty());
  CHECK(err == "names no function of 'tools'");
  CHECK(ml::tools::call_prefix(ML_CHAT_CHATML) == "<tool_call>\n");
  CHECK(ml::tools::call_prefix(ML_CHAT_LLAMA3).empty());
}

TEST_CASE("the reply as OpenAI's message: tool_calls and finish_reason", "[chat_tools_parse]") {
  std::string finish = "stop";
  nlohmann::json m = ml::tools::reply_message(ML_CHAT_QWEN3, "ok <tool_call>{\"name\": \"f\", \"arguments\": {\"x\": [1]}}</tool_call>",
                                              "chatcmpl-3", &finish);
  CHECK(finish == "tool_calls");
  CHECK(m["content"] == "ok");
  REQUIRE(m["tool_calls"].size() == 1);
  CHECK(m["tool_calls"][0] == nlohmann::json::parse(
                                  R"({"id": "call_chatcmpl-3_0", "type": "function", "function": {"name": "f", "arguments": "{\"x\":[1]}"}})"));
  const nlohmann::json d = ml::tools::reply_delta(m);
  CHECK(d["content"] == "ok");
  CHECK(d["tool_calls"][0]["index"] == 0);
  finish = "length";  // a call cut short by max_tokens: the text, as generated
  m = ml::tools::reply_message(ML_CHAT_QWEN3, "<tool_call>{\"name\": \"f\", \"argu", "x", &finish);
  CHECK(finish == "length");
  CHECK(m == nlohmann::json{{"role", "assistant"}, {"content", "<tool_call>{\"name\": \"f\", \"argu"}});
  finish = "stop";  // no tools offered: never parsed
  m = ml::tools::reply_message(ML_CHAT_UNKNOWN, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", "x", &finish);
  CHECK(finish == "stop");
  CHECK_FALSE(m.contains("tool_calls"));
  CHECK(ml::tools::reply_delta(m) == nlohmann::json{{"content", "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"}});
}
