// Request parsing (server/request.h): JSON body -> Request, every field validated.
#include "request.h"

#include <algorithm>

#include "kernels/mutants.h"  // ML_MUTANT: false unless the mutation audit's build (tools/mutants.sh)

namespace ml::server {

using json = nlohmann::ordered_json;  // the key order of tools and arguments is the prompt's

const char kIgnoredFields[] =
    "  model                the one loaded model serves every request\n"
    "  user, metadata       end-user ids and tags: nothing is logged or stored to attach them to\n"
    "  store                nothing is stored\n"
    "  service_tier         one tier\n"
    "  parallel_tool_calls  the reply's calls are parsed as the model writes them (Qwen: any number;\n"
    "                       Llama 3.1+: one); a forced call (tool_choice required or named) is one\n"
    "  stream_options       the last streamed chunk always carries \"usage\"\n";

namespace {
// The fields parse_request reads; anything else in kIgnoredFields is skipped, the rest refused.
const char *const kFields[] = {"prompt", "messages", "stream", "n", "temperature", "top_p", "seed", "stop",
                               "max_tokens", "max_completion_tokens", "top_k", "min_p", "repeat_penalty",
                               "repeat_last_n", "presence_penalty", "frequency_penalty", "logit_bias",
                               "logprobs", "top_logprobs", "response_format", "tools", "tool_choice"};
const char *const kIgnored[] = {"model", "user", "metadata", "store", "service_tier", "parallel_tool_calls",
                                "stream_options"};
bool listed(const std::string &k, const char *const *b, const char *const *e) {
  return std::find_if(b, e, [&](const char *f) { return k == f; }) != e;
}
}  // namespace

bool Request::uses_tools() const {
  if (!tools.empty()) return true;
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i] == "tool" || !calls[i].empty()) return true;
  return false;
}

Request parse_request(const json &body, bool chat) {
  auto bad = [](const std::string &m) { return HttpError{400, m, "invalid_request_error"}; };
  if (!body.is_object()) throw bad("the request body must be a JSON object");
  for (const auto &kv : body.items())
    if ((kv.key() == (chat ? "prompt" : "messages") || !listed(kv.key(), std::begin(kFields), std::end(kFields))) &&
        !listed(kv.key(), std::begin(kIgnored), std::end(kIgnored)))
      throw bad("unsupported field \"" + kv.key() + "\"");
  Request r;
  r.chat = chat;
  auto field = [&](const char *name) -> const json * {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json *v = field("stream")) {
    if (!v->is_boolean()) throw bad("'stream' must be a boolean");
    r.stream = v->get<bool>();
  }
  if (const json *v = field("n")) {
    if (!v->is_number_integer()) throw bad("'n' must be an integer");
    if (v->get<int64_t>() != 1) throw bad("only n = 1 is supported");
  }
  if (const json *v = field("temperature")) {
    if (!v->is_number()) throw bad("'temperature' must be a number");
    const double t = v->get<double>();
    if (!(t >= 0.0 && t <= 100.0)) throw bad("'temperature' must be in [0, 100]");
    r.sampling.temperature = float(t);
  }
  if (const json *v = field("top_p")) {
    if (!v->is_number()) throw bad("'top_p' must be a number");
    const double p = v->get<double>();
    if (!((ML_MUTANT("server_top_p") ? p >= 0.0 : p > 0.0) && p <= 1.0)) throw bad("'top_p' must be in (0, 1]");  // mutant: 0 passes
    r.sampling.top_p = float(p);
  }
  if (const json *v = ML_MUTANT("server_seed") ? nullptr : field("seed")) {  // mutant: the request's seed ignored
    if (!v->is_number_integer()) throw bad("'seed' must be an integer");
    r.sampling.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
    r.has_seed = true;
  }
  // A number (or integer) field: its type and range checked, the error naming it.
  auto number = [&](const char *name, const char *range, bool (*ok)(double), float *out) {
    const json *v = field(name);
    if (!v) return;
    if (!v->is_number()) throw bad(std::string("'") + name + "' must be a number");
    if (!ok(v->get<double>())) throw bad(std::string("'") + name + "' must be in " + range);
    *out = float(v->get<double>());
  };
  auto integer = [&](const char *name, const char *range, bool (*ok)(double), int *out) {
    const json *v = field(name);
    if (!v) return;
    if (!v->is_number_integer()) throw bad(std::string("'") + name + "' must be an integer");
    if (!ok(double(v->get<int64_t>()))) throw bad(std::string("'") + name + "' must be " + range);
    *out = int(v->get<int64_t>());
  };
  integer("top_k", "at least 0 (0: off)", [](double x) { return x >= 0 && x <= 1e9; }, &r.sampling.top_k);
  number("min_p", "[0, 1)", [](double x) { return x >= 0 && x < 1; }, &r.sampling.min_p);
  number("repeat_penalty", "(0, 100]", [](double x) { return x > 0 && x <= 100; }, &r.sampling.repeat_penalty);
  integer("repeat_last_n", "at least -1 (-1: all)", [](double x) { return x >= -1 && x <= 1e9; },
          &r.sampling.repeat_last_n);
  number("presence_penalty", "[-2, 2]", [](double x) { return x >= -2 && x <= 2; }, &r.sampling.presence_penalty);
  number("frequency_penalty", "[-2, 2]", [](double x) { return x >= -2 && x <= 2; }, &r.sampling.frequency_penalty);
  if (const json *v = field("logit_bias")) {  // OpenAI's: {"token id": bias in [-100, 100]}
    if (!v->is_object()) throw bad("'logit_bias' must be an object of token id strings to numbers");
    for (const auto &kv : v->items()) {
      const std::string &k = kv.key();
      const std::string at = "'logit_bias[\"" + k + "\"]'";
      if (k.empty() || k.size() > 9 || k.find_first_not_of("0123456789") != std::string::npos)
        throw bad(at + ": the key must be a token id (a non-negative integer)");
      if (!kv.value().is_number()) throw bad(at + " must be a number");
      const double b = kv.value().get<double>();
      if (!(b >= -100 && b <= 100)) throw bad(at + " must be in [-100, 100]");
      r.logit_bias.emplace_back(std::stol(k), float(b));
    }
  }
  if (const json *v = field("logprobs"); v && chat) {  // chat: a boolean, top_logprobs apart
    if (!v->is_boolean()) throw bad("'logprobs' must be a boolean");
    r.logprobs = v->get<bool>();
  } else if (v) {  // completions: the number of top entries, 0..5
    integer("logprobs", "in [0, 5]", [](double x) { return x >= 0 && x <= 5; }, &r.top_logprobs);
    r.logprobs = true;
  }
  if (chat) {
    integer("top_logprobs", "in [0, 20]", [](double x) { return x >= 0 && x <= 20; }, &r.top_logprobs);
    if (r.top_logprobs > 0 && !r.logprobs) throw bad("'top_logprobs' needs \"logprobs\": true");
  }
  if (!chat && field("top_logprobs")) throw bad("unsupported field \"top_logprobs\" (completions take \"logprobs\": N)");
  if (const json *v = field("response_format")) {  // {"type": "text" | "json_object" | "json_schema", ...}
    auto t = v->is_object() ? v->find("type") : v->end();
    if (!v->is_object() || t == v->end() || !t->is_string())
      throw bad("'response_format' must be an object with a string 'type'");
    const std::string type = t->get<std::string>();
    if (type == "json_schema") {
      auto js = v->find("json_schema");
      const json *sc = js != v->end() && js->is_object() && js->contains("schema") ? &(*js)["schema"] : nullptr;
      if (!sc || !(sc->is_object() || sc->is_boolean()))
        throw bad("'response_format.json_schema.schema' must be a JSON schema (an object)");
      r.json_schema = sc->dump();
    } else if (type != "json_object" && type != "text") {
      throw bad("'response_format.type' must be text, json_object or json_schema, not '" + type + "'");
    }
    r.json = type != "text";
  }
  if (const json *v = field("stop")) {
    if (v->is_string()) {
      r.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      for (const json &s : *v) {
        if (!s.is_string()) throw bad("'stop' must be a string or an array of strings");
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      throw bad("'stop' must be a string or an array of strings");
    }
    r.stop.erase(std::remove(r.stop.begin(), r.stop.end(), std::string()), r.stop.end());
  }
  const char *max_name = field("max_tokens") || !field("max_completion_tokens") ? "max_tokens" : "max_completion_tokens";
  if (const json *v = field(max_name)) {
    if (!v->is_number_integer()) throw bad(std::string("'") + max_name + "' must be an integer");
    const int64_t m = v->get<int64_t>();
    if (m < 1) throw bad(std::string("'") + max_name + "' must be at least 1");
    r.max_tokens = m > (1L << 30) ? (1L << 30) : long(m);
  }

  if (!chat && (field("tools") || field("tool_choice")))
    throw bad(std::string("unsupported field \"") + (field("tools") ? "tools" : "tool_choice") + "\" (completions have no tools)");
  if (const json *v = chat ? field("tools") : nullptr) {  // validated in structured/tools.cc, errors naming the field
    if (std::string e = ml::tools::check_tools(*v); !e.empty()) throw bad(e);
    r.tools = *v;
  }
  if (const json *v = chat ? field("tool_choice") : nullptr)
    if (std::string e = ml::tools::parse_tool_choice(*v, r.tools, &r.tool_choice, &r.tool_name); !e.empty()) throw bad(e);
  if (!r.tools.empty() && r.tool_choice.empty()) r.tool_choice = "auto";
  if (!r.tools.empty() && r.tool_choice != "none") {
    if (r.json) throw bad("'response_format' cannot be combined with 'tools' (the reply is a tool call or text)");
    if (r.logprobs && r.stream) throw bad("'logprobs' with 'tools' is not supported when streaming");
  }

  // The prompt text, or the messages.
  if (chat) {
    const json *msgs = field("messages");
    if (!msgs) throw bad("'messages' is required");
    if (!msgs->is_array() || msgs->empty()) throw bad("'messages' must be a non-empty array");
    for (const json &m : *msgs) {
      if (!m.is_object()) throw bad("each message must be an object with 'role' and 'content'");
      auto ro = m.find("role"), c = m.find("content");
      if (ro == m.end() || !ro->is_string()) throw bad("each message needs a string 'role'");
      std::string content;
      if (c == m.end() || c->is_null()) {
        content = "";
      } else if (c->is_string()) {
        content = c->get<std::string>();
      } else if (c->is_array()) {  // content parts: the text ones, joined
        for (const json &part : *c) {
          auto t = part.is_object() ? part.find("text") : part.end();
          if (!part.is_object() || t == part.end() || !t->is_string())
            throw bad("message content parts must be objects with a string 'text'");
          content += t->get<std::string>();
        }
      } else {
        throw bad("a message's 'content' must be a string");
      }
      // The renderer takes C strings: a NUL would silently cut the message there.
      if (content.find('\0') != std::string::npos)
        throw bad("'messages[" + std::to_string(r.roles.size()) + "].content' contains a NUL character");
      const std::string role = ro->get<std::string>();
      const std::string at = "'messages[" + std::to_string(r.roles.size()) + "]";
      if (role != "system" && role != "user" && role != "assistant" && role != "tool")
        throw bad("message role '" + role + "' is not one of system, user, assistant, tool");
      if (role == "tool") {
        auto id = m.find("tool_call_id");
        if (id != m.end() && !id->is_string()) throw bad(at + ".tool_call_id' must be a string");
      }
      r.calls.emplace_back();
      if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
        if (role != "assistant") throw bad(at + ".tool_calls' must be in an assistant message");
        if (std::string e = ml::tools::parse_calls(*tc, at + ".tool_calls", &r.calls.back()); !e.empty()) throw bad(e);
      }
      r.roles.push_back(role);
      r.contents.push_back(content);
    }
  } else {
    const json *p = field("prompt");
    if (!p) throw bad("'prompt' is required");
    if (p->is_string()) {
      r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else {
      throw bad("'prompt' must be a string (or an array of one string)");
    }
    if (r.prompt.find('\0') != std::string::npos) throw bad("the prompt contains a NUL character");
  }
  return r;
}

}  // namespace ml::server
