// ml_server's decisions about a request before any handler runs (server/http_policy.cc), free of
// cpp-httplib so that the fuzz target (fuzz/fuzz_request.cc) reaches them: the route table (which
// paths exist, which need the API key), the Authorization check, and CORS (--cors-origin).
#pragma once
#include <string>
#include <vector>

namespace ml::server {

// The routes ml_server answers. Open routes need no API key even when one is set: GET /health (a
// probe, as llama-server's) and GET / (the chat page, which then asks for the key); every other
// route, /metrics /slots /props /tokenize /detokenize included, needs it.
struct Route {
  const char *method, *path;
  bool open;
};
extern const Route kRoutes[];
extern const int kNumRoutes;
// The route for method + path; nullptr when there is none. *path_known: some route has this path
// (another method: a 405 rather than a 404).
const Route *find_route(const std::string &method, const std::string &path, bool *path_known);

// Whether an Authorization header value carries `key`: the scheme "Bearer" (case-insensitive, as
// RFC 7235 says of every auth-scheme, so "bearer KEY" passes as well), one or more spaces, then
// exactly the key, compared in full and in constant time (a prefix, the key plus a suffix, another
// case or an empty credential is refused). `key` is never empty (main refuses an empty key).
bool bearer_matches(const std::string &auth, const std::string &key);

// Origins allowed to call the server from a browser (--cors-origin, repeatable; "*": any).
// Without any, no Access-Control-* header is sent and browsers refuse cross-origin calls.
struct Cors {
  std::vector<std::string> origins;
  bool any = false;
  // Adds one --cors-origin value: "*" or scheme://host[:port] as a browser sends it in Origin
  // (http or https, no path, no trailing slash; kept lowercased, as browsers serialize an
  // origin); returns why a value is refused, else nullptr.
  const char *add(const char *origin);
  bool enabled() const { return any || !origins.empty(); }
  // Whether a request's Origin header value is allowed: byte for byte one of the origins, or any
  // origin but "null" (a sandboxed or file: page) and "" with "*".
  bool allows(const std::string &origin) const;
};

// The preflight's answer headers (Access-Control-Allow-*), as name/value pairs.
std::vector<std::pair<std::string, std::string>> preflight_headers(const std::string &origin);

}  // namespace ml::server
