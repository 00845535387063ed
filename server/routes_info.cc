// /metrics, /slots, /props, /tokenize, /detokenize and the page (server/routes.h).
#include "routes.h"

#include <nlohmann/json.hpp>

#include "runtime/text/unicode.h"

namespace ml::server {

using nlohmann::json;

namespace {
const unsigned char kPage[] = {
#include "server_page.inc"  // server/page.html's bytes (server/CMakeLists.txt)
};

std::string dump(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

template <class F>
httplib::Server::Handler guarded(F f) {
  return [f](const httplib::Request &req, httplib::Response &res) {
    try {
      f(req, res);
    } catch (const HttpError &e) {
      send_error(res, e.status, e.message, e.type.empty() ? nullptr : e.type.c_str());
    }
  };
}
}  // namespace

nlohmann::ordered_json object_body(const httplib::Request &req) {
  const char *type = "invalid_request_error";
  size_t bad_at = 0;
  if (!ml::unicode::valid_utf8(req.body.data(), req.body.size(), &bad_at))
    throw HttpError{400, "the request body is not valid UTF-8 (byte " + std::to_string(bad_at) + ")", type};
  nlohmann::ordered_json b;
  try {
    b = nlohmann::ordered_json::parse(req.body);
  } catch (const json::exception &e) {
    throw HttpError{400, std::string("malformed JSON: ") + e.what(), type};
  }
  if (!b.is_object()) throw HttpError{400, "the request body must be a JSON object", type};
  return b;
}

void send_error(httplib::Response &res, int status, const std::string &message, const char *type) {
  if (!type)
    type = status == 401 ? "authentication_error"
         : status == 403 ? "permission_error"
         : status == 404 ? "not_found_error"
         : status == 405 ? "not_supported_error"
         : status == 503 ? "unavailable_error"
         : status >= 500 ? "server_error"
                         : "invalid_request_error";
  res.status = status;
  res.set_content(dump(json{{"error", {{"message", message}, {"type", type}, {"code", status}}}}), "application/json");
}

void add_info_routes(httplib::Server &svr, Scheduler &sched, Metrics &metrics, const std::string &model_name,
                     const std::string &model_path, int n_slots) {
  svr.Get("/", [](const httplib::Request &, httplib::Response &res) {
    res.set_header("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'");
    res.set_content(reinterpret_cast<const char *>(kPage), sizeof kPage, "text/html; charset=utf-8");
  });
  svr.Get("/metrics", [&sched, &metrics](const httplib::Request &, httplib::Response &res) {
    size_t queued = 0;
    const std::vector<Scheduler::SlotView> slots = sched.slot_views(&queued);
    res.set_content(metrics.render(slots, queued, sched.info.max_seq), "text/plain; version=0.0.4");
  });
  svr.Get("/slots", [&sched](const httplib::Request &, httplib::Response &res) {
    json a = json::array();
    for (const auto &s : sched.slot_views())
      a.push_back({{"id", s.id}, {"n_ctx", sched.info.max_seq}, {"is_processing", s.busy}, {"n_past", s.n_past},
                   {"n_prompt_tokens", s.n_prompt}, {"n_decoded", s.n_decoded}});
    res.set_content(dump(a), "application/json");
  });
  svr.Get("/props", [&sched, model_name, model_path, n_slots](const httplib::Request &, httplib::Response &res) {
    const ml_model_info &i = sched.info;
    const int f = sched.chat_format();
    const json p = {
        {"model_path", model_path},
        {"model", model_name},
        {"total_slots", n_slots},
        {"n_ctx", i.max_seq},
        {"n_vocab", i.vocab},
        {"arch", i.arch},
        {"isa", i.isa},
        {"kv_type", ml_kv_type_name(i.kv_type)},
        {"chat_template", f ? ml_chat_format_name(ml_chat_format(f)) : ""},
        {"build_info", std::string("legacy-ml ") + ML_SERVER_VERSION + ", " + i.isa + " build, " + ML_SERVER_COMPILER},
        {"default_generation_settings", {{"n_ctx", i.max_seq}, {"temperature", 0.8}, {"top_p", 0.95}, {"top_k", 0},
                                         {"min_p", 0.0}, {"repeat_penalty", 1.0}, {"repeat_last_n", 64},
                                         {"n_predict", -1}}}};
    res.set_content(dump(p), "application/json");
  });
  svr.Post("/tokenize", guarded([&sched](const httplib::Request &req, httplib::Response &res) {
    const auto b = object_body(req);
    if (!b.contains("content") || !b["content"].is_string()) throw HttpError{400, "'content' must be a string", ""};
    bool add_special = false, with_pieces = false;
    for (const char *k : {"add_special", "with_pieces"}) {
      if (!b.contains(k)) continue;
      if (!b[k].is_boolean()) throw HttpError{400, std::string("'") + k + "' must be true or false", ""};
      (k[0] == 'a' ? add_special : with_pieces) = b[k].get<bool>();
    }
    json toks = json::array();
    int prev = -1;
    for (int id : sched.tokenize(b["content"].get<std::string>(), add_special)) {
      if (with_pieces)
        toks.push_back({{"id", id}, {"piece", sched.detokenize({long(id)}, prev)}});
      else
        toks.push_back(id);
      prev = id;
    }
    res.set_content(dump(json{{"tokens", toks}}), "application/json");
  }));
  svr.Post("/detokenize", guarded([&sched](const httplib::Request &req, httplib::Response &res) {
    const auto b = object_body(req);
    if (!b.contains("tokens") || !b["tokens"].is_array()) throw HttpError{400, "'tokens' must be an array of token ids", ""};
    std::vector<long> ids;
    for (size_t i = 0; i < b["tokens"].size(); ++i) {
      const auto &t = b["tokens"][i];
      if (!t.is_number_integer()) throw HttpError{400, "'tokens[" + std::to_string(i) + "]' must be an integer", ""};
      ids.push_back(t.get<long>());
    }
    res.set_content(dump(json{{"content", sched.detokenize(ids)}}), "application/json");
  }));
}

}  // namespace ml::server
