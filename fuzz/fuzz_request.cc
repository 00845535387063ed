// Fuzz target: ml_server's request layer on arbitrary bytes — what a client controls before the
// model is touched: the JSON body of a completion or chat completion (server/request.h: UTF-8
// check and JSON parse as the handler does them, then parse_request), the Authorization header
// against the API key, the Origin header against --cors-origin values, and the method and path
// against the route table (server/http_policy.h).
//
// Input: byte 0 = flags (bit 0: a chat request; bit 1: "*" is added as a --cors-origin value
// instead of the Origin field), then four NUL-terminated fields: Authorization, Origin (also tried as a
// --cors-origin value), method, path; the rest (NULs included) is the body.
// Accepted (ok-* seeds) = parse_request returned a Request. Properties:
//   - parse_request returns or throws HttpError 400 with a one-line, non-empty message; nothing
//     else escapes (a json::exception would be a 400 "bad request" with nlohmann's text);
//   - an accepted request holds what its contract promises: temperature in [0, 100], top_p in
//     (0, 1], max_tokens -1 or in [1, 2^30], the sampler fields in their ranges, logit_bias in
//     [-100, 100], top_logprobs in [0, 20], no empty stop string, a chat has as many roles as
//     contents, at least one, each role system/user/assistant/tool, and neither the prompt nor any
//     content holds a NUL;
//   - bearer_matches(auth, key) is exactly: "bearer" in any case, one or more spaces, the key;
//   - Cors::add accepts a value only as * or http[s]://HOST[:PORT] without path, query, user or
//     blanks, and then allows exactly that origin lowercased; allows() is true only for a listed
//     origin (with "*": any origin but "" and "null");
//   - find_route gives the route of that method and path, path_known exactly when some route has
//     the path, and no key needed only for GET /health and GET /.
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.h"
#include "runtime/text/unicode.h"
#include "server/http_policy.h"
#include "server/request.h"

namespace {

using ml::server::HttpError;
using ml::server::Request;

bool in(double x, double lo, double hi) { return x >= lo && x <= hi; }

void check_request(const Request &r, bool chat) {
  const ml_sampling &sp = r.sampling;
  ML_FUZZ_CHECK(in(sp.temperature, 0, 100), "temperature");
  ML_FUZZ_CHECK(sp.top_p > 0 && sp.top_p <= 1, "top_p");
  ML_FUZZ_CHECK(r.max_tokens == -1 || in(double(r.max_tokens), 1, double(1L << 30)), "max_tokens");
  ML_FUZZ_CHECK(sp.top_k >= 0 && sp.min_p >= 0 && sp.min_p < 1 && sp.repeat_penalty > 0 && sp.repeat_penalty <= 100,
                "sampler fields");
  ML_FUZZ_CHECK(sp.repeat_last_n >= -1 && in(sp.presence_penalty, -2, 2) && in(sp.frequency_penalty, -2, 2),
                "penalties");
  for (const auto &b : r.logit_bias) ML_FUZZ_CHECK(b.first >= 0 && in(b.second, -100, 100), "logit_bias");
  ML_FUZZ_CHECK(in(r.top_logprobs, 0, 20), "top_logprobs");
  for (const std::string &s : r.stop) ML_FUZZ_CHECK(!s.empty(), "an empty stop string");
  if (chat) {
    ML_FUZZ_CHECK(!r.roles.empty() && r.roles.size() == r.contents.size(), "messages");
    for (size_t i = 0; i < r.roles.size(); ++i) {
      ML_FUZZ_CHECK(r.roles[i] == "system" || r.roles[i] == "user" || r.roles[i] == "assistant" ||
                        r.roles[i] == "tool", r.roles[i].c_str());
      ML_FUZZ_CHECK(r.contents[i].find('\0') == std::string::npos, "a NUL in a message");
    }
  } else {
    ML_FUZZ_CHECK(r.prompt.find('\0') == std::string::npos, "a NUL in the prompt");
  }
}

bool bearer_oracle(const std::string &auth, const std::string &key) {
  if (auth.size() < 7 || auth[6] != ' ') return false;
  for (size_t i = 0; i < 6; ++i)
    if (char(auth[i] | 0x20) != "bearer"[i]) return false;
  size_t at = 6;
  while (at < auth.size() && auth[at] == ' ') ++at;
  return auth.compare(at, std::string::npos, key) == 0;
}

std::string lower(std::string s) {
  for (char &c : s)
    if (c >= 'A' && c <= 'Z') c = char(c | 0x20);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlfuzz::g_accepted = -1;
  if (size < 1) return 0;
  const bool chat = data[0] & 1, star = data[0] & 2;
  std::string fields[4];
  size_t at = 1;
  for (std::string &f : fields) {
    while (at < size && data[at] != 0) f.push_back(char(data[at++]));
    if (at < size) ++at;
  }
  const std::string body(reinterpret_cast<const char *>(data) + at, size - at);
  const std::string &auth = fields[0], &origin = fields[1], &method = fields[2], &path = fields[3];

  // The body, as the completion handler takes it.
  size_t bad_at = 0;
  if (ml::unicode::valid_utf8(body.data(), body.size(), &bad_at)) {
    nlohmann::json j;
    bool parsed = true;
    try {
      j = nlohmann::json::parse(body);
    } catch (const nlohmann::json::exception &) {
      parsed = false;
    }
    if (parsed) {
      try {
        const Request r = ml::server::parse_request(j, chat);
        check_request(r, chat);
        mlfuzz::g_accepted = 1;
      } catch (const HttpError &e) {
        ML_FUZZ_CHECK(e.status == 400, e.message.c_str());
        ML_FUZZ_CHECK(!e.message.empty() && e.message.find('\n') == std::string::npos, e.message.c_str());
        mlfuzz::g_accepted = 0;
      } catch (const std::exception &e) {
        ML_FUZZ_CHECK(false, e.what());
      }
    } else {
      mlfuzz::g_accepted = 0;
    }
  } else {
    mlfuzz::g_accepted = 0;
  }

  // The API key: a fixed one, and the Origin field's bytes as a key (any non-empty bytes).
  ML_FUZZ_CHECK(ml::server::bearer_matches(auth, "s3cret") == bearer_oracle(auth, "s3cret"), auth.c_str());
  if (!origin.empty())
    ML_FUZZ_CHECK(ml::server::bearer_matches(auth, origin) == bearer_oracle(auth, origin), origin.c_str());

  // CORS.
  ml::server::Cors cors;
  ML_FUZZ_CHECK(cors.add("http://allowed.example:8000") == nullptr, "a valid origin refused");
  ML_FUZZ_CHECK(!cors.allows(origin) || origin == "http://allowed.example:8000", origin.c_str());
  const bool any = star || origin == "*";
  const bool added = (star ? cors.add("*") : cors.add(origin.c_str())) == nullptr;
  if (!any) {
    const std::string o = lower(origin);
    const size_t sep = o.find("://");
    const bool valid = sep != std::string::npos && (o.compare(0, sep, "http") == 0 || o.compare(0, sep, "https") == 0) &&
                       o.size() > sep + 3 && o.find_first_of("/?#@ \t", sep + 3) == std::string::npos;
    ML_FUZZ_CHECK(added == valid, o.c_str());
    if (added) ML_FUZZ_CHECK(cors.allows(o), o.c_str());
    ML_FUZZ_CHECK(cors.allows(path) == (path == "http://allowed.example:8000" || (added && path == o)), path.c_str());
  } else {
    ML_FUZZ_CHECK(cors.allows(path) == (!path.empty() && path != "null"), path.c_str());
  }

  // Routes.
  bool known = false;
  const ml::server::Route *r = ml::server::find_route(method, path, &known);
  bool some = false;
  for (int i = 0; i < ml::server::kNumRoutes; ++i) some |= path == ml::server::kRoutes[i].path;
  ML_FUZZ_CHECK(known == some, path.c_str());
  if (r) {
    ML_FUZZ_CHECK(method == r->method && path == r->path, path.c_str());
    ML_FUZZ_CHECK(r->open == (method == "GET" && (path == "/health" || path == "/")), path.c_str());
  }
  return 0;
}
