// Tool calls: JSON serialization as the templates' tojson, the forced call's schema, reply parsing
// (structured/tools.h).
#include "structured/tools.h"

#include <cstring>

namespace ml::tools {

namespace {

bool llama(ml_chat_format f) { return f == ML_CHAT_LLAMA3; }

// A number as Python's repr writes it: nlohmann's shortest digits are the same, but it switches to
// an exponent one decade earlier (1e+15 where Python writes 1000000000000000.0).
std::string number(const ojson &v) {
  std::string t = v.dump();
  const size_t e = t.find("e+15");
  if (!v.is_number_float() || e == std::string::npos) return t;
  const bool neg = t[0] == '-';
  std::string digits;
  for (size_t i = neg; i < e; ++i)
    if (t[i] != '.') digits.push_back(t[i]);
  digits.resize(16, '0');  // d.ddd x 10^15: 16 digits before the point
  return (neg ? "-" : "") + digits + ".0";
}

// json.dumps: ", " and ": " on one line; with an indent, each member on its own line ("," at its end).
void write(const ojson &v, int indent, int depth, std::string *o) {
  const bool obj = v.is_object();
  if (!obj && !v.is_array()) {
    *o += v.is_number() ? number(v) : v.dump(-1, ' ', false);  // strings as json.dumps(ensure_ascii=False)
    return;
  }
  if (v.empty()) {
    *o += obj ? "{}" : "[]";
    return;
  }
  const std::string in = indent < 0 ? "" : "\n" + std::string(size_t(indent) * size_t(depth + 1), ' ');
  *o += obj ? '{' : '[';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    *o += first ? in : (indent < 0 ? ", " : "," + in);
    first = false;
    if (obj) *o += ojson(it.key()).dump(-1, ' ', false) + ": ";
    write(it.value(), indent, depth + 1, o);
  }
  if (indent >= 0) *o += "\n" + std::string(size_t(indent) * size_t(depth), ' ');
  *o += obj ? '}' : ']';
}

std::string trim(const std::string &s) {
  const char *ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// {"name": N, "arguments"|"parameters": {...}} -> Call; the arguments may also arrive as a JSON
// string holding the object.
bool call_of(const std::string &text, ml_chat_format f, Call *c) {
  const ojson j = ojson::parse(text, nullptr, false);
  if (!j.is_object()) return false;
  auto n = j.find("name");
  auto a = j.find(llama(f) ? "parameters" : "arguments");
  if (a == j.end()) a = j.find(llama(f) ? "arguments" : "parameters");
  if (n == j.end() || !n->is_string() || n->get<std::string>().empty() || a == j.end()) return false;
  ojson args = *a;
  if (args.is_string()) args = ojson::parse(args.get<std::string>(), nullptr, false);
  if (!args.is_object()) return false;
  *c = Call{n->get<std::string>(), args};
  return true;
}

}  // namespace

std::string tojson(const ojson &v, int indent) {
  std::string o;
  write(v, indent, 0, &o);
  return o;
}

ChatTools chat_tools(ml_chat_format f, bool on, const ojson &tools, const std::vector<std::vector<Call>> &calls) {
  ChatTools t;
  t.on = on;
  if (on)
    for (const ojson &tool : tools) t.tools.push_back(tojson(tool, llama(f) ? 4 : -1));
  for (const auto &list : calls) {
    t.calls.emplace_back();
    for (const Call &c : list) t.calls.back().emplace_back(c.name, tojson(c.arguments));
  }
  return t;
}

std::string tool_content(ml_chat_format f, const std::string &content) {
  return llama(f) ? tojson(ojson(content)) : content;
}

std::string call_prefix(ml_chat_format f) { return llama(f) ? "" : "<tool_call>\n"; }

std::string call_schema(ml_chat_format f, const ojson &tools, const std::string &only, std::string *error) {
  ojson any = ojson::array();
  for (const ojson &tool : tools) {
    const ojson &fn = tool["function"];
    const std::string name = fn["name"].get<std::string>();
    if (!only.empty() && name != only) continue;
    ojson params = fn.contains("parameters") ? fn["parameters"]
                                             : ojson{{"type", "object"}, {"properties", ojson::object()},
                                                     {"additionalProperties", false}};
    any.push_back(ojson{{"type", "object"},
                        {"properties", {{"name", {{"const", name}}}, {llama(f) ? "parameters" : "arguments", params}}},
                        {"required", {"name", llama(f) ? "parameters" : "arguments"}},
                        {"additionalProperties", false}});
  }
  if (any.empty()) {
    *error = "names no function of 'tools'";
    return "";
  }
  return (any.size() == 1 ? any[0] : ojson{{"anyOf", any}}).dump();
}

bool parse_reply(ml_chat_format f, const std::string &text, std::string *content, std::vector<Call> *calls) {
  calls->clear();
  *content = text;
  if (llama(f)) {
    Call c;
    if (!call_of(trim(text), f, &c)) return false;
    calls->push_back(c);
    content->clear();
    return true;
  }
  static const char kOpen[] = "<tool_call>", kClose[] = "</tool_call>";
  std::string rest;
  size_t at = 0;
  for (size_t open; (open = text.find(kOpen, at)) != std::string::npos;) {
    rest += text.substr(at, open - at);
    const size_t body = open + std::strlen(kOpen);
    size_t close = text.find(kClose, body);
    Call c;
    if (!call_of(trim(text.substr(body, close == std::string::npos ? std::string::npos : close - body)), f, &c)) {
      calls->clear();
      return false;  // a malformed block: the reply is content as the model wrote it
    }
    calls->push_back(c);
    at = close == std::string::npos ? text.size() : close + std::strlen(kClose);
  }
  if (calls->empty()) return false;
  *content = trim(rest + text.substr(at));
  return true;
}

namespace {

bool plain_name(const ojson *n) {  // written raw into the templates' call lines
  return n && n->is_string() && !n->get<std::string>().empty() &&
         n->get<std::string>().find_first_of("\"\\") == std::string::npos;
}
const ojson *member(const ojson &o, const char *key) { return o.is_object() && o.contains(key) ? &o[key] : nullptr; }

}  // namespace

std::string check_tools(const ojson &tools) {
  if (!tools.is_array()) return "'tools' must be an array";
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "'tools[" + std::to_string(i) + "]";
    const ojson *type = member(tools[i], "type"), *fn = member(tools[i], "function");
    if (!type || *type != "function") return at + ".type' must be \"function\"";
    if (!fn || !fn->is_object()) return at + ".function' must be an object";
    if (!plain_name(member(*fn, "name"))) return at + ".function.name' must be a non-empty string without quotes or backslashes";
    const ojson *params = member(*fn, "parameters");
    if (params && !params->is_object()) return at + ".function.parameters' must be a JSON schema (an object)";
  }
  return "";
}

std::string parse_tool_choice(const ojson &v, const ojson &tools, std::string *choice, std::string *name) {
  const char kForms[] = "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (v.is_string()) {
    *choice = v.get<std::string>();
    if (*choice != "auto" && *choice != "none" && *choice != "required") return kForms;
  } else {
    const ojson *type = member(v, "type"), *fn = member(v, "function");
    const ojson *n = fn ? member(*fn, "name") : nullptr;
    if (!type || *type != "function" || !n || !n->is_string()) return kForms;
    *choice = "function";
    *name = n->get<std::string>();
  }
  if (tools.empty()) return "'tool_choice' needs 'tools'";
  std::string error;
  if (*choice == "function" && call_schema(ML_CHAT_CHATML, tools, *name, &error).empty())
    return "'tool_choice.function.name' \"" + *name + "\" " + error;
  return "";
}

std::string parse_calls(const ojson &tool_calls, const std::string &at, std::vector<Call> *out) {
  if (!tool_calls.is_array()) return at + "' must be an array";
  for (size_t k = 0; k < tool_calls.size(); ++k) {
    const std::string cat = at + "[" + std::to_string(k) + "].function";
    const ojson *fn = member(tool_calls[k], "function");
    if (!fn || !fn->is_object()) return cat + "' must be an object";
    const ojson *name = member(*fn, "name"), *args = member(*fn, "arguments");
    if (!plain_name(name)) return cat + ".name' must be a non-empty string without quotes or backslashes";
    // The templates write the arguments as an object (tojson): the string is parsed, as llama-server does.
    const ojson a = args && args->is_string() ? ojson::parse(args->get<std::string>(), nullptr, false) : ojson();
    if (!a.is_object()) return cat + ".arguments' must be a string holding a JSON object";
    out->push_back({name->get<std::string>(), a});
  }
  return "";
}

nlohmann::json reply_message(ml_chat_format f, const std::string &text, const std::string &id, std::string *finish) {
  using nlohmann::json;
  json m = {{"role", "assistant"}, {"content", text}};
  std::string content;
  std::vector<Call> calls;
  if (f == ML_CHAT_UNKNOWN || !parse_reply(f, text, &content, &calls)) return m;
  json list = json::array();
  for (size_t k = 0; k < calls.size(); ++k)
    list.push_back({{"id", "call_" + id + "_" + std::to_string(k)},
                    {"type", "function"},
                    {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments.dump()}}}});
  m["content"] = content.empty() ? json(nullptr) : json(content);
  m["tool_calls"] = list;
  if (*finish == "stop") *finish = "tool_calls";
  return m;
}

nlohmann::json reply_delta(const nlohmann::json &message) {
  nlohmann::json d = nlohmann::json::object();
  if (!message["content"].is_null()) d["content"] = message["content"];
  if (message.contains("tool_calls")) {
    nlohmann::json list = message["tool_calls"];
    for (size_t k = 0; k < list.size(); ++k) list[k]["index"] = k;
    d["tool_calls"] = list;
  }
  return d;
}

}  // namespace ml::tools
