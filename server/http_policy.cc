// Before the handlers (server/http_policy.h): routes, the API key check, CORS.
#include "http_policy.h"

#include <algorithm>
#include <cstring>

#include "kernels/mutants.h"  // ML_MUTANT: false unless the mutation audit's build (tools/mutants.sh)

namespace ml::server {

const Route kRoutes[] = {
    {"POST", "/v1/completions", false},     {"POST", "/completions", false},
    {"POST", "/v1/chat/completions", false}, {"POST", "/chat/completions", false},
    {"GET", "/v1/models", false},           {"GET", "/models", false},
    {"GET", "/health", true},               {"GET", "/", true},
    {"GET", "/metrics", false},             {"GET", "/slots", false},
    {"GET", "/props", false},               {"POST", "/tokenize", false},
    {"POST", "/detokenize", false},
};
const int kNumRoutes = int(sizeof kRoutes / sizeof kRoutes[0]);

const Route *find_route(const std::string &method, const std::string &path, bool *path_known) {
  *path_known = false;
  for (const Route &r : kRoutes) {
    if (path != r.path) continue;
    *path_known = true;
    if (method == r.method) return &r;
  }
  return nullptr;
}

namespace {
// Whether a and b are the same bytes, in a time that depends only on their lengths (never on where
// they first differ), so that a client cannot find the key a byte at a time from response times.
bool constant_time_equal(const std::string &a, const std::string &b) {
  // Every byte of the longer string is visited; the result depends on all of them and the lengths.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= unsigned(x ^ y);
  }
  return diff == 0;
}
}  // namespace

bool bearer_matches(const std::string &auth, const std::string &key) {
  static const char kScheme[] = "bearer";
  const size_t n = sizeof kScheme - 1;
  bool scheme = auth.size() > n && auth[n] == ' ';
  for (size_t i = 0; scheme && i < n; ++i) scheme = (auth[i] | 0x20) == kScheme[i];
  // mutant: the scheme not checked (the text after the first space taken as the key)
  size_t at = ML_MUTANT("server_key_scheme") ? auth.find(' ') : scheme ? n : std::string::npos;
  if (at == std::string::npos) return false;
  while (at < auth.size() && auth[at] == ' ') ++at;
  const std::string given = auth.substr(at);
  // mutant: only as many bytes of the key as the client sent are compared (a prefix passes)
  return constant_time_equal(given, ML_MUTANT("server_key_prefix") ? key.substr(0, given.size()) : key);
}

const char *Cors::add(const char *origin) {
  std::string o = origin;
  if (o == "*") return any = true, nullptr;
  std::transform(o.begin(), o.end(), o.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? char(c | 0x20) : c; });
  const size_t sep = o.find("://");
  const std::string scheme = sep == std::string::npos ? "" : o.substr(0, sep);
  if (scheme != "http" && scheme != "https")
    return "must be * or an origin as a browser sends it: http://HOST[:PORT] or https://HOST[:PORT]";
  const std::string rest = o.substr(sep + 3);
  if (rest.empty() || rest.find_first_of("/?#@ \t") != std::string::npos)
    return "must be an origin without a path, query or user (http://HOST[:PORT], no trailing slash)";
  origins.push_back(o);
  return nullptr;
}

bool Cors::allows(const std::string &origin) const {
  if (origin.empty()) return false;
  // mutant: any origin allowed
  if (ML_MUTANT("server_cors_any")) return true;
  if (any) return origin != "null";
  return std::find(origins.begin(), origins.end(), origin) != origins.end();
}

std::vector<std::pair<std::string, std::string>> preflight_headers(const std::string &origin) {
  // Authorization is named: the "*" of Access-Control-Allow-Headers never covers it (Fetch).
  return {{"Access-Control-Allow-Origin", origin},
          {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
          {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
          {"Access-Control-Max-Age", "600"}};
}

}  // namespace ml::server
