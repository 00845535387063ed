// The reply of a chat job that was offered tools (Job::tool_format), as OpenAI's API returns it: the
// text parsed for tool calls (structured/tools.h: parse_reply) into "tool_calls" ({id, type
// "function", function {name, arguments: a JSON string}}) with finish_reason "tool_calls"; a reply
// holding no well-formed call is plain "content". With "stream": true such a reply is held back and
// sent as one delta when it is complete (a call cannot be told from text before then).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "scheduler.h"

namespace ml::server {

// {"role": "assistant", "content": ..., "tool_calls": [...]} of the finished job j (call ids
// "call_<id>_<k>"); *finish (the job's) becomes "tool_calls" when there are calls. Call with
// Scheduler::mu held (it reads j.text).
nlohmann::json assistant_message(const Job &j, const std::string &id, std::string *finish);

// The one streamed delta of that message: its content, or its tool_calls each with "index".
nlohmann::json assistant_delta(const nlohmann::json &message);

}  // namespace ml::server
