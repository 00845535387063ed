// ml_server's requests (server/request.cc): the JSON body of POST /v1/completions or
// /v1/chat/completions -> a plain Request, every field validated; errors are HttpError 400s naming
// the field as the request spells it. Nothing here touches the model: the prompt is tokenized, and
// max_tokens checked against the context, when the scheduler makes the job (server/scheduler.cc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ml::server {

struct HttpError {
  int status;
  std::string message, type;
};

struct Request {
  bool chat = false, stream = false;
  float temperature = 0.8f, top_p = 0.95f;  // llama-server's defaults
  bool has_seed = false;                    // else a fresh seed per request
  uint64_t seed = 1;
  std::vector<std::string> stop;            // stop strings (no empty ones)
  long max_tokens = -1;                     // -1: until the context is full
  std::vector<std::string> roles, contents; // chat: the messages
  std::string prompt;                       // completion: the prompt text
};

// Throws HttpError (400) for a body that is not a valid request.
Request parse_request(const nlohmann::json &body, bool chat);

}  // namespace ml::server
