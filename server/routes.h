// ml_server's routes beside the completions (server/routes_info.cc): GET /metrics, /slots, /props,
// POST /tokenize, /detokenize (llama-server's shapes), GET / (the chat page, server/page.html
// compiled in), and the OpenAI-style JSON error every route answers with.
#pragma once
#include <string>

#include <httplib.h>

#include "metrics.h"
#include "scheduler.h"

namespace ml::server {

// An OpenAI-style error: {"error": {"message", "type", "code"}}; type from the status when null.
void send_error(httplib::Response &res, int status, const std::string &message, const char *type = nullptr);

struct InfoRoutes {
  Scheduler &sched;
  Metrics &metrics;
  std::string model_name, model_path;
  int n_slots = 1;
};
void add_info_routes(httplib::Server &svr, const InfoRoutes &r);

}  // namespace ml::server
