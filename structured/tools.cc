// Tool calls: JSON serialization as the templates' tojson, the forced call's schema, reply parsing
// (structured/tools.h).
#include "structured/tools.h"

#include <cstring>

namespace ml::tools {

namespace {

bool llama(ml_chat_format f) { return f == ML_CHAT_LLAMA3; }

void compact(const ojson &v, std::string *o) {
  if (v.is_object()) {
    *o += '{';
    bool first = true;
    for (const auto &kv : v.items()) {
      if (!first) *o += ", ";
      first = false;
      *o += ojson(kv.key()).dump(-1, ' ', false);
      *o += ": ";
      compact(kv.value(), o);
    }
    *o += '}';
  } else if (v.is_array()) {
    *o += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) *o += ", ";
      compact(v[i], o);
    }
    *o += ']';
  } else {
    *o += v.dump(-1, ' ', false);  // scalars: strings escaped as json.dumps(ensure_ascii=False) does
  }
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
  if (indent >= 0) return v.dump(indent, ' ', false);  // "," at line ends, ": " after keys: as Python's
  std::string o;
  compact(v, &o);
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

}  // namespace ml::tools
