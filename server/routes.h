// ml_server's routes beside the completions (server/routes_info.cc): GET /metrics, /slots, /props,
// POST /tokenize, /detokenize (llama-server's shapes), GET / (the chat page, server/page.html
// compiled in), and the OpenAI-style JSON error every route answers with; the counters behind
// GET /metrics (server/metrics.h, server/metrics.cc).
#pragma once
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "metrics.h"
#include "scheduler.h"

namespace ml::server {

// A POST body as a JSON object, its key order kept; HttpError 400 when it is not UTF-8, not JSON or
// not an object.
nlohmann::ordered_json object_body(const httplib::Request &req);

// An OpenAI-style error: {"error": {"message", "type", "code"}}; type from the status when null.
void send_error(httplib::Response &res, int status, const std::string &message, const char *type = nullptr);

void add_info_routes(httplib::Server &svr, Scheduler &sched, Metrics &metrics, const std::string &model_name,
                     const std::string &model_path, int n_slots);

}  // namespace ml::server
