// ml_server's requests (server/request.cc): the JSON body of POST /v1/completions or
// /v1/chat/completions -> a plain Request, every field validated; errors are HttpError 400s naming
// the field as the request spells it. Nothing here touches the model: the prompt is tokenized, and
// max_tokens checked against the context, when the scheduler makes the job (server/scheduler.cc).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/ml.h"
#include "structured/tools.h"

namespace ml::server {

struct HttpError {
  int status;
  std::string message, type;
};

struct Request {
  bool chat = false, stream = false;
  // The sampler chain (ml_sampling, runtime/sampler.h): llama-server's temperature 0.8 and top_p 0.95,
  // the other stages neutral; the logit bias arrays are the job's (server/scheduler.cc).
  ml_sampling sampling{0.8f, 0.95f, 1, 0, 0.0f, 1.0f, 64, 0.0f, 0.0f, 0, nullptr, nullptr};
  bool has_seed = false;  // sampling.seed is the request's; else a fresh seed per request
  std::vector<std::pair<long, float>> logit_bias;  // token id, bias (the id checked against the vocabulary later)
  bool logprobs = false;  // chat: "logprobs": true; completions: "logprobs": N (then top_logprobs = N)
  int top_logprobs = 0;   // 0..20 (completions: 0..5)
  bool json = false;        // response_format json_object or json_schema: a JSON-schema constraint
  std::string json_schema;  // json_schema's schema as JSON text; "" with json: any JSON object
  std::vector<std::string> stop;            // stop strings (no empty ones)
  long max_tokens = -1;                     // -1: until the context is full
  std::vector<std::string> roles, contents; // chat: the messages (roles system, user, assistant, tool)
  // Tool calls (structured/tools.h): the request's `tools` (key order kept), tool_choice "auto" |
  // "none" | "required" | "function" (then tool_name), and per message its assistant tool_calls with
  // the arguments parsed (a JSON object).
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  std::string tool_choice, tool_name;
  std::vector<std::vector<ml::tools::Call>> calls;
  bool uses_tools() const;  // tools, tool calls or tool messages: the template's tool format renders
  std::string prompt;                       // completion: the prompt text
};

// Fields accepted and ignored on purpose, each with its reason (the help text prints them).
extern const char kIgnoredFields[];

// Throws HttpError (400) for a body that is not a valid request, or that has a field the server does
// not implement (`unsupported field "tools"`) and kIgnoredFields does not list.
Request parse_request(const nlohmann::ordered_json &body, bool chat);

}  // namespace ml::server
