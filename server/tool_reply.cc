// Tool-call replies (server/tool_reply.h).
#include "tool_reply.h"

#include <vector>

#include "structured/tools.h"

namespace ml::server {

using nlohmann::json;

json assistant_message(const Job &j, const std::string &id, std::string *finish) {
  json m = {{"role", "assistant"}, {"content", j.reply_prefix + j.text}};
  if (!j.tool_format) return m;
  std::string content;
  std::vector<ml::tools::Call> calls;
  if (!ml::tools::parse_reply(ml_chat_format(j.tool_format), j.reply_prefix + j.text, &content, &calls)) return m;
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

json assistant_delta(const json &message) {
  json d = json::object();
  if (!message["content"].is_null()) d["content"] = message["content"];
  if (message.contains("tool_calls")) {
    json list = message["tool_calls"];
    for (size_t k = 0; k < list.size(); ++k) list[k]["index"] = k;
    d["tool_calls"] = list;
  }
  return d;
}

}  // namespace ml::server
